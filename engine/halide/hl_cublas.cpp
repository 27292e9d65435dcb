#include "hl_cublas.h"
#include "hl_extern_matmul.h"
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

const int OP_N = 0;

}  // namespace

bool hl_cublas_available() {
  static std::once_flag once;
  std::call_once(once, load);
  return loaded && !getenv("HALUA_NO_CUBLAS");
}

extern "C" int halua_cublas_matmul(halide_buffer_t *A, halide_buffer_t *B, int K, halide_buffer_t *C) {
  if (hl_matmul_bounds_query(A, B, K, C)) return 0;
  int r = C->dimensions;
  if (!hl_cublas_available() || !handle()) return -1;
  if (A->dim[0].stride != 1 || B->dim[0].stride != 1 || C->dim[0].stride != 1) return -2;
  int N = C->dim[0].extent, M = C->dim[1].extent;
  if (N == 0 || M == 0) return 0;
  /* row-major C = A B is column-major C^T = B^T A^T: pass B first */
  int lda = A->dim[1].stride > K ? A->dim[1].stride : (K > 0 ? K : 1);
  int ldb = B->dim[1].stride > N ? B->dim[1].stride : N;
  int ldc = C->dim[1].stride > N ? C->dim[1].stride : N;
  if (M == 1) lda = K > 0 ? K : 1;
  if (K <= 1) ldb = N;
  int64_t batches = 1;
  for (int d = 2; d < r; d++) batches *= C->dim[d].extent;
  int es = C->type.bits / 8;
  for (int64_t b = 0; b < batches; b++) {
    int64_t oa = 0, ob = 0, oc = 0, rest = b;
    for (int d = 2; d < r; d++) {
      int64_t i = rest % C->dim[d].extent;
      rest /= C->dim[d].extent;
      oa += i * A->dim[d].stride;
      ob += i * B->dim[d].stride;
      oc += i * C->dim[d].stride;
    }
    uint64_t pa = A->device + oa * es, pb = B->device + ob * es, pc = C->device + oc * es;
    int st;
    if (C->type.bits == 32) {
      float one = 1, zero = 0;
      st = cublas_sgemm(handle(), OP_N, OP_N, N, M, K, &one, (const float *)pb, ldb, (const float *)pa, lda, &zero,
                        (float *)pc, ldc);
    } else {
      double one = 1, zero = 0;
      st = cublas_dgemm(handle(), OP_N, OP_N, N, M, K, &one, (const double *)pb, ldb, (const double *)pa, lda, &zero,
                        (double *)pc, ldc);
    }
    if (st != 0) return -3;
  }
  return 0;
}

Internal::JITModule hl_cublas_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] { m.add_extern_for_export("halua_cublas_matmul", ExternCFunction(&halua_cublas_matmul)); });
  return m;
}
