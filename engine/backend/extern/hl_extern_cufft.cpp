#include "hl_extern_cufft.h"
#include "hl_device.h"
#include "hl_extern_fft.h"
#include "hl_extern_view.h"
extern "C" {
#include "hl_error.h"
}
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <cstdio>
#include <cstdlib>

using namespace Halide;

namespace {

/* cufft.h's values (the header is not needed to build) */
enum { CUFFT_SUCCESS = 0, CUFFT_ALLOC_FAILED = 2, CUFFT_C2C = 0x29, CUFFT_Z2Z = 0x69, CUFFT_FORWARD = -1, CUFFT_INVERSE = 1 };

typedef int (*create_fn)(int *);
/* cufftMakePlanMany64: the 64-bit form of cufftPlanMany, so no size or step of a large array
 * needs checking against int */
typedef int (*make_fn)(int, int, long long *, long long *, long long, long long, long long *, long long, long long, int,
                       long long, size_t *);
typedef int (*exec_fn)(int, void *, void *, int);
typedef int (*destroy_fn)(int);

create_fn cufft_create;
make_fn cufft_make;
exec_fn cufft_c2c, cufft_z2z;
destroy_fn cufft_destroy;
bool loaded = false;
std::string loaded_name;

void load() {
  std::string names[] = {
      getenv("HALUA_CUFFT") ? getenv("HALUA_CUFFT") : "",
      "libcufft.so.12", "libcufft.so.11", "libcufft.so",
      "/usr/local/cuda/lib64/libcufft.so.12", "/usr/local/cuda/lib64/libcufft.so.11", "/usr/local/cuda/lib64/libcufft.so",
  };
  for (const std::string &n : names) {
    if (n.empty()) continue;
    void *lib = dlopen(n.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) continue;
    cufft_create = (create_fn)dlsym(lib, "cufftCreate");
    cufft_make = (make_fn)dlsym(lib, "cufftMakePlanMany64");
    cufft_c2c = (exec_fn)dlsym(lib, "cufftExecC2C");
    cufft_z2z = (exec_fn)dlsym(lib, "cufftExecZ2Z");
    cufft_destroy = (destroy_fn)dlsym(lib, "cufftDestroy");
    if (cufft_create && cufft_make && cufft_c2c && cufft_z2z && cufft_destroy) {
      loaded = true;
      loaded_name = n;
      return;
    }
    dlclose(lib);
  }
}

bool load_once() {
  static std::once_flag once;
  std::call_once(once, load);
  return loaded;
}

/* A plan: one shape of calls (hl_cufft_layout's n, steps, distances and batch) and a dtype. */
struct plan_key {
  int64_t n, is, os, batch, id, od;
  bool dbl;
  bool operator==(const plan_key &o) const {
    return n == o.n && is == o.is && os == o.os && batch == o.batch && id == o.id && od == o.od && dbl == o.dbl;
  }
};

int make_plan(const plan_key &k, int *h, size_t *work) {
  int st = cufft_create(h);
  if (st != CUFFT_SUCCESS) return st;
  long long n = k.n, embed = k.n;   /* (a 1-D embedding's extent is never read, but must be given) */
  *work = 0;
  st = cufft_make(*h, 1, &n, &embed, k.is, k.id, &embed, k.os, k.od, k.dbl ? CUFFT_Z2Z : CUFFT_C2C, k.batch, work);
  if (st != CUFFT_SUCCESS) cufft_destroy(*h);
  return st;
}

/* Plans hold device memory (their work areas) and cost a planning each, so a few recent ones
 * are kept: at most kPlans, and at most kWork bytes of work areas besides the newest. The lock
 * is held from finding a plan to the last call on it, since a cuFFT plan must not run on two
 * threads at once (the calls only queue work: it is held briefly). */
const int kPlans = 16;
const size_t kWork = (size_t)1 << 30;
struct cached_plan {
  plan_key key;
  int handle;
  size_t work;
  uint64_t used;
  bool live;
};
cached_plan plans[kPlans];
size_t work_bytes = 0;
uint64_t plan_clock = 0;
std::mutex plan_lock;

void drop(cached_plan &p) {
  cufft_destroy(p.handle);
  work_bytes -= p.work;
  p.live = false;
}

void drop_all() {
  for (cached_plan &p : plans)
    if (p.live) drop(p);
}

/* At exit, before the CUDA runtime inside cuFFT tears down: it registered its own exit work at
 * the first plan, and exit handlers run last registered first. */
void drop_all_at_exit() {
  std::lock_guard<std::mutex> g(plan_lock);
  drop_all();
}

cached_plan *least_recent() {
  cached_plan *lru = nullptr;
  for (cached_plan &p : plans)
    if (p.live && (!lru || p.used < lru->used)) lru = &p;
  return lru;
}

/* the plan for key (plan_lock held): a cuFFT status */
int plan_for(const plan_key &key, int *h) {
  ++plan_clock;
  for (cached_plan &p : plans)
    if (p.live && p.key == key) {
      p.used = plan_clock;
      *h = p.handle;
      return CUFFT_SUCCESS;
    }
  size_t work;
  int st = make_plan(key, h, &work);
  if (st == CUFFT_ALLOC_FAILED && work_bytes > 0) {   /* the cached plans' work areas may be what is missing */
    drop_all();
    st = make_plan(key, h, &work);
  }
  if (st != CUFFT_SUCCESS) return st;
  static bool exit_hook = false;
  if (!exit_hook) exit_hook = atexit(drop_all_at_exit) == 0;
  while (work_bytes > 0 && work_bytes + work > kWork) drop(*least_recent());
  cached_plan *slot = nullptr;
  for (cached_plan &p : plans)
    if (!p.live) {
      slot = &p;
      break;
    }
  if (!slot) {
    slot = least_recent();
    drop(*slot);
  }
  *slot = {key, *h, work, plan_clock, true};
  work_bytes += work;
  return CUFFT_SUCCESS;
}

bool aligned(const hl_array *a, int es) { return hl_array_device_address(a) % (uint64_t)(2 * es) == 0; }

bool view_ok(const hl_array *a, int axis) {
  return hl_cufft_view_ok(a->ndim, a->shape, a->strides, a->offset, axis) && aligned(a, (int)hl_dtype_size(a->dtype));
}

/* every call of layout L from address in to address out (plan_lock held) */
int run_calls(const hl_cufft_layout &L, bool dbl, int inverse, uint64_t in, uint64_t out) {
  plan_key key = {L.n, L.istride, L.ostride, L.batch, L.idist, L.odist, dbl};
  int h, st = plan_for(key, &h);
  if (st != CUFFT_SUCCESS)
    return hl_error("fft: cuFFT could not plan a batch of %lld transforms of %lld values (%s)", (long long)L.batch, (long long)L.n,
                    hl_cufft_status_name(st));
  uint64_t bytes = dbl ? 16 : 8;   /* one complex value */
  int64_t idx[HL_MAX_DIMS] = {0};
  for (;;) {
    int64_t io = 0, oo = 0;
    for (int k = 0; k < L.nloop; k++) io += idx[k] * L.loop_istep[k], oo += idx[k] * L.loop_ostep[k];
    void *pi = (void *)(uintptr_t)(in + (uint64_t)io * bytes), *po = (void *)(uintptr_t)(out + (uint64_t)oo * bytes);
    st = (dbl ? cufft_z2z : cufft_c2c)(h, pi, po, inverse ? CUFFT_INVERSE : CUFFT_FORWARD);
    if (st != CUFFT_SUCCESS) return hl_error("fft: a cuFFT transform failed (%s)", hl_cufft_status_name(st));
    int k = L.nloop - 1;
    while (k >= 0 && ++idx[k] == L.loop_n[k]) idx[k--] = 0;
    if (k < 0) return 0;
  }
}

}  // namespace

extern "C" const char *hl_cufft_status_name(int status) {
  static const char *names[] = {"CUFFT_SUCCESS", "CUFFT_INVALID_PLAN", "CUFFT_ALLOC_FAILED", "CUFFT_INVALID_TYPE",
                                "CUFFT_INVALID_VALUE", "CUFFT_INTERNAL_ERROR", "CUFFT_EXEC_FAILED",
                                "CUFFT_SETUP_FAILED", "CUFFT_INVALID_SIZE", "CUFFT_UNALIGNED_DATA",
                                "CUFFT_INCOMPLETE_PARAMETER_LIST", "CUFFT_INVALID_DEVICE", "CUFFT_PARSE_ERROR",
                                "CUFFT_NO_WORKSPACE", "CUFFT_NOT_IMPLEMENTED", "CUFFT_LICENSE_ERROR",
                                "CUFFT_NOT_SUPPORTED", "CUFFT_MISSING_DEPENDENCY", "CUFFT_NVRTC_FAILURE",
                                "CUFFT_NVJITLINK_FAILURE", "CUFFT_NVSHMEM_FAILURE"};
  if (status == -1) return "the library is not loaded";
  if (status >= 0 && status < (int)(sizeof names / sizeof *names)) return names[status];
  return "an unknown cuFFT status";
}

extern "C" int hl_cufft_probe(void) {
  if (!load_once()) return -1;
  int h;
  size_t work;
  int st = make_plan({8, 1, 1, 1, 8, 8, false}, &h, &work);
  if (st == CUFFT_SUCCESS) cufft_destroy(h);
  return st;
}

extern "C" int hl_cufft_available(void) {
  if (getenv("HALUA_NO_CUFFT") || !load_once()) return 0;
  /* without a GPU nothing runs, but CUDA pipelines still lower (their code can be read): with
   * the cuFFT stage, as on a machine with one */
  if (hl_cuda_device_count() < 1) return 1;
  static int status;
  static std::once_flag once;
  std::call_once(once, [] {
    status = hl_cufft_probe();
    if (status != CUFFT_SUCCESS)
      fprintf(stderr, "halua: warning: %s cannot plan a transform (%s); fft on cuda goes through the host\n",
              loaded_name.c_str(), hl_cufft_status_name(status));
  });
  return status == CUFFT_SUCCESS;
}

extern "C" int hl_cufft_into(const hl_array *x, int axis, int inverse, hl_array *out) {
  int r = x->ndim;
  if ((x->dtype != HL_FLOAT32 && x->dtype != HL_FLOAT64) || out->dtype != x->dtype || out->ndim != r ||
      axis < 0 || axis >= r - 1 || hl_array_device(x) != HL_DEVICE_CUDA || hl_array_device(out) != HL_DEVICE_CUDA)
    return hl_error("fft: internal: cuFFT takes float32 or float64 pairs in cuda memory");
  for (int d = 0; d < r; d++)
    if (out->shape[d] != x->shape[d]) return hl_error("fft: internal: cuFFT's output has another shape");
  if (hl_shape_size(r, x->shape) == 0) return 0;
  if (!hl_cufft_available()) return hl_error("fft: cuFFT could not be loaded (or HALUA_NO_CUFFT is set)");
  if (!view_ok(out, axis)) return hl_error("fft: internal: an output view cuFFT cannot write");
  const hl_array *src = x;
  if (!view_ok(x, axis)) {
    /* (a broadcast, a step over single floats, a reversed axis): into out first, then in place */
    if (hl_device_copy_view(HL_DEVICE_CUDA, hl_array_device_address(out), out->strides, hl_array_device_address(x),
                            x->strides, r, x->shape, hl_dtype_size(x->dtype)))
      return -1;
    src = out;
  }
  hl_cufft_layout L;
  hl_cufft_layout_of(r, x->shape, src->strides, out->strides, axis, &L);
  std::lock_guard<std::mutex> g(plan_lock);
  return run_calls(L, x->dtype == HL_FLOAT64, inverse, hl_array_device_address(src), hl_array_device_address(out));
}

/* The region of X the stage reads is hl_stage_fft's (hl_fft_region). The output written straight
 * when it is whole lanes of both parts; otherwise the whole lanes go to a temporary and the region
 * is copied from there. */
extern "C" int hl_stage_cufft(halide_buffer_t *X, int dim, int n, int inverse, halide_buffer_t *out) {
  int r = out->dimensions, min[HL_MAX_DIMS], ext[HL_MAX_DIMS];
  if (dim < 1 || dim >= r || X->dimensions != r || r > HL_MAX_DIMS) return hl_stage_failed(-1, "fft: internal: a bad fft stage");
  hl_fft_region(out, dim, n, min, ext);
  if (X->is_bounds_query() || out->is_bounds_query()) {
    if (X->is_bounds_query())
      for (int d = 0; d < r; d++) X->dim[d].min = min[d], X->dim[d].extent = ext[d];
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  if (!hl_cufft_available())
    return hl_stage_failed(-1, "fft: cuFFT could not be loaded (or HALUA_NO_CUFFT was set after the pipeline was compiled)");
  if (hl_buffer_to_device(X)) return hl_stage_failed(-4, "fft: copying the operand to cuda failed");
  if (!out->device) return hl_stage_failed(-2, "fft: internal: the stage's output has no cuda memory");
  hl_storage sx, so;
  hl_array x, o;
  hl_view_of_region(X, min, ext, &sx, &x);
  sx.data = nullptr, sx.device = HL_DEVICE_CUDA, sx.device_ptr = X->device;
  hl_view_of_buffer_on(HL_DEVICE_CUDA, out, &so, &o);
  int axis = r - 1 - dim, rc;
  if (out->dim[dim].min == 0 && out->dim[dim].extent == n && out->dim[0].min == 0 && out->dim[0].extent == 2) {
    rc = hl_cufft_into(&x, axis, inverse, &o);
  } else {
    hl_array whole;
    rc = hl_array_alloc_on(&whole, HL_DEVICE_CUDA, x.dtype, r, x.shape);
    if (!rc) {
      rc = hl_cufft_into(&x, axis, inverse, &whole);
      hl_array part = whole;
      part.offset += (int64_t)out->dim[dim].min * whole.strides[axis] + (int64_t)out->dim[0].min * whole.strides[r - 1];
      for (int d = 0; d < r; d++) part.shape[d] = o.shape[d];
      if (!rc)
        rc = hl_device_copy_view(HL_DEVICE_CUDA, hl_array_device_address(&o), o.strides, hl_array_device_address(&part),
                                 part.strides, r, o.shape, hl_dtype_size(o.dtype));
      hl_array_release(&whole);
    }
  }
  if (rc) return hl_stage_failed(-1, nullptr);
  out->set_device_dirty(true);
  return 0;
}

Internal::JITModule hl_cufft_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] { m.add_extern_for_export("hl_stage_cufft", ExternCFunction(&hl_stage_cufft)); });
  return m;
}
