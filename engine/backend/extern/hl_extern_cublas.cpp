#include "hl_extern_cublas.h"
#include "hl_extern_matmul.h"
#include "hl_backend.h"
#include "hl_device.h"
#include "hl_extern_view.h"
#include <dlfcn.h>
#include <mutex>
#include <string>

using namespace Halide;

namespace {

typedef int (*create_fn)(void **);
typedef int (*sgemm_fn)(void *, int, int, int, int, int, const float *, const float *, int, const float *, int,
                        const float *, float *, int);
typedef int (*dgemm_fn)(void *, int, int, int, int, int, const double *, const double *, int, const double *, int,
                        const double *, double *, int);

create_fn cublas_create;
sgemm_fn cublas_sgemm;
dgemm_fn cublas_dgemm;
bool loaded = false;

void load() {
  std::string names[] = {
      getenv("HALUA_CUBLAS") ? getenv("HALUA_CUBLAS") : "",
      "libcublas.so.13", "libcublas.so.12", "libcublas.so.11", "libcublas.so",
      "/usr/local/cuda/lib64/libcublas.so.13", "/usr/local/cuda/lib64/libcublas.so.12",
      "/usr/local/cuda/lib64/libcublas.so",
  };
  for (const std::string &n : names) {
    if (n.empty()) continue;
    void *lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    cublas_create = (create_fn)dlsym(lib, "cublasCreate_v2");
    cublas_sgemm = (sgemm_fn)dlsym(lib, "cublasSgemm_v2");
    cublas_dgemm = (dgemm_fn)dlsym(lib, "cublasDgemm_v2");
    if (cublas_create && cublas_sgemm && cublas_dgemm) {
      loaded = true;
      return;
    }
  }
}

void *handle() {
  static thread_local void *h = nullptr;
  if (!h && cublas_create(&h) != 0) h = nullptr;
  return h;
}

const int OP_N = 0, OP_T = 1;

}  // namespace

bool hl_cublas_available() {
  static std::once_flag once;
  std::call_once(once, load);
  return loaded && !getenv("HALUA_NO_CUBLAS");
}

/* A row-major rows x cols matrix with strides s_r (rows) and s_c (columns) as a cuBLAS operand:
 * cuBLAS is column-major, so the matrix is its own transpose there (op N, ld = s_r) when the
 * columns are unit-stride, or a transposed column-major matrix (op T, ld = s_c) when the rows are.
 * Any other layout (a broadcast, a slice with steps in both axes) is false. */
static bool blas_layout(int64_t rows, int64_t cols, int64_t s_r, int64_t s_c, int *op, int *ld) {
  int64_t r1 = rows > 1 ? rows : 1, c1 = cols > 1 ? cols : 1;
  if ((cols <= 1 || s_c == 1) && (rows <= 1 || s_r >= c1)) {
    *op = OP_N;
    *ld = (int)(rows <= 1 ? c1 : s_r);
    return true;
  }
  if ((rows <= 1 || s_r == 1) && (cols <= 1 || s_c >= r1)) {
    *op = OP_T;
    *ld = (int)(cols <= 1 ? r1 : s_c);
    return true;
  }
  return false;
}

extern "C" int hl_cublas_layout_ok(const int64_t *shape, const int64_t *strides, int ndim) {
  if (ndim < 2) return 1;
  int op, ld;
  return blas_layout(shape[ndim - 2], shape[ndim - 1], strides[ndim - 2], strides[ndim - 1], &op, &ld);
}

/* C[.., m, n] = A[.., m, k] B[.., k, n] (Halide's dims: 0 = columns, 1 = rows, then batch).
 * Inputs that are pipeline parameters arrive whole rather than as the region C needs, so each
 * operand's element for C's first coordinates is found from its own mins. */
extern "C" int hl_stage_cublas_matmul(halide_buffer_t *A, halide_buffer_t *B, int K, halide_buffer_t *C) {
  if (hl_matmul_bounds_query(A, B, K, C)) return 0;
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  int r = C->dimensions;
  if (!hl_cublas_available() || !handle()) return hl_stage_failed(-1, "matmul: cuBLAS could not be loaded or initialised");
  int N = C->dim[0].extent, M = C->dim[1].extent;
  if (N == 0 || M == 0 || K == 0) return 0;   /* (K = 0: the pipeline selects zeros instead) */
  if (hl_buffer_to_device(A) || hl_buffer_to_device(B)) return hl_stage_failed(-4, "matmul: copying an operand to cuda failed");
  int opa, lda, opb, ldb, opc, ldc;
  if (!blas_layout(M, K, A->dim[1].stride, A->dim[0].stride, &opa, &lda) ||
      !blas_layout(K, N, B->dim[1].stride, B->dim[0].stride, &opb, &ldb) ||
      !blas_layout(M, N, C->dim[1].stride, C->dim[0].stride, &opc, &ldc) || opc != OP_N)
    return hl_stage_failed(-2, "matmul: internal: an operand layout cuBLAS cannot read");   /* the engine makes such operands contiguous first */
  int64_t base_a = (int64_t)(C->dim[1].min - A->dim[1].min) * A->dim[1].stride - (int64_t)A->dim[0].min * A->dim[0].stride;
  int64_t base_b = (int64_t)(C->dim[0].min - B->dim[0].min) * B->dim[0].stride - (int64_t)B->dim[1].min * B->dim[1].stride;
  int64_t batches = 1;
  for (int d = 2; d < r; d++) batches *= C->dim[d].extent;
  int es = C->type.bits / 8;
  for (int64_t b = 0; b < batches; b++) {
    int64_t oa = base_a, ob = base_b, oc = 0, rest = b;
    for (int d = 2; d < r; d++) {
      int64_t i = rest % C->dim[d].extent;
      rest /= C->dim[d].extent;
      int64_t at = C->dim[d].min + i;
      oa += (at - A->dim[d].min) * A->dim[d].stride;
      ob += (at - B->dim[d].min) * B->dim[d].stride;
      oc += i * C->dim[d].stride;
    }
    uint64_t pa = A->device + oa * es, pb = B->device + ob * es, pc = C->device + oc * es;
    int st;
    /* row-major C = A B is column-major C^T = B^T A^T: B goes first */
    if (C->type.bits == 32) {
      float one = 1, zero = 0;
      st = cublas_sgemm(handle(), opb, opa, N, M, K, &one, (const float *)pb, ldb, (const float *)pa, lda, &zero,
                        (float *)pc, ldc);
    } else {
      double one = 1, zero = 0;
      st = cublas_dgemm(handle(), opb, opa, N, M, K, &one, (const double *)pb, ldb, (const double *)pa, lda, &zero,
                        (double *)pc, ldc);
    }
    if (st != 0) return hl_stage_failed(-3, "matmul: a cuBLAS call failed");
  }
  return 0;
}

Internal::JITModule hl_cublas_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] { m.add_extern_for_export("hl_stage_cublas_matmul", ExternCFunction(&hl_stage_cublas_matmul)); });
  return m;
}
