#include "hl_device.h"
#include <cpuid.h>
#include <dlfcn.h>
#include <mutex>
#include <string>
#include <cstring>
#include <cstdlib>
extern "C" {
#include "hl_error.h"
}

using namespace Halide;

namespace {

typedef int (*cu_init_fn)(unsigned);
typedef int (*cu_count_fn)(int *);
typedef int (*cu_device_get_fn)(int *, int);
typedef int (*cu_primary_retain_fn)(void **, int);
typedef int (*cu_total_mem_fn)(size_t *, int);

int cuda_count = -1;
size_t cuda_memory = 0;
void *primary_context = nullptr;
std::once_flag probe_once;
thread_local std::string runtime_error;

void probe() {
  cuda_count = 0;
  /* RTLD_GLOBAL: Halide's CUDA runtime looks the driver's symbols up in the process */
  void *lib = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
  if (!lib) return;
  cu_init_fn init = (cu_init_fn)dlsym(lib, "cuInit");
  cu_count_fn count = (cu_count_fn)dlsym(lib, "cuDeviceGetCount");
  cu_device_get_fn device_get = (cu_device_get_fn)dlsym(lib, "cuDeviceGet");
  cu_primary_retain_fn retain = (cu_primary_retain_fn)dlsym(lib, "cuDevicePrimaryCtxRetain");
  int n = 0, dev = 0;
  if (!init || !count || init(0) != 0 || count(&n) != 0 || n < 1) return;
  /* the device's primary context: the one the CUDA runtime (and so cuBLAS) uses too */
  if (!device_get || !retain || device_get(&dev, 0) != 0 || retain(&primary_context, dev) != 0) return;
  cuda_count = n;
  cu_total_mem_fn total = (cu_total_mem_fn)dlsym(lib, "cuDeviceTotalMem_v2");
  size_t bytes = 0;
  if (total && total(&bytes, dev) == 0) cuda_memory = bytes;
}

/* Runtime errors outside a pipeline call (device allocation, copies) are recorded here instead
 * of the runtime's default, which aborts. */
void record_runtime_error(JITUserContext *, const char *msg) { runtime_error = msg; }

int acquire_primary(JITUserContext *, void **ctx, bool) {
  *ctx = primary_context;
  return primary_context ? 0 : -1;
}
int release_primary(JITUserContext *) { return 0; }

}  // namespace

/* Every runtime call gets a context with these handlers: errors are recorded (the default
 * handler aborts), and CUDA work runs in the device's primary context, which cuBLAS shares. */
void hl_device_handlers(JITHandlers &h) {
  h.custom_error = record_runtime_error;
  h.custom_cuda_acquire_context = acquire_primary;
  h.custom_cuda_release_context = release_primary;
}

namespace {

JITUserContext *call_context() {
  static thread_local JITUserContext ctx;
  static thread_local bool ready = false;
  if (!ready) {
    hl_device_handlers(ctx.handlers);
    ready = true;
  }
  return &ctx;
}

std::string take_runtime_error() {
  std::string m = runtime_error;
  runtime_error.clear();
  while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
  return m.empty() ? "no message" : m;
}

/* A 1-D byte view of device memory for the device interface's calls; copies above 2 GiB go in
 * pieces because extents are 32-bit. */
halide_buffer_t byte_buffer(uint64_t device, void *host, size_t nbytes, halide_dimension_t *dim) {
  halide_buffer_t b = halide_buffer_t();
  b.device = device;
  b.device_interface = hl_device_interface(HL_DEVICE_CUDA);
  b.host = (uint8_t *)host;
  b.type = halide_type_t(halide_type_uint, 8);
  b.dimensions = 1;
  *dim = halide_dimension_t(0, (int32_t)nbytes, 1);
  b.dim = dim;
  return b;
}

const size_t kChunk = (size_t)1 << 30;

}  // namespace

/* Halide 14 reads AVX512-BF16 and VNNI as Sapphire Rapids, whose LLVM CPU has AVX512-FP16;
 * CPUs with the first two but not FP16 (AMD Zen 4 and 5) then die on an illegal instruction
 * wherever LLVM picks a half-precision move. Keep the feature only where CPUID confirms FP16. */
static Target host_target(void) {
  /* HL_JIT_TARGET, Halide's own variable, names the CPU to compile for instead (a valid target
   * string, e.g. x86-64-linux-avx-avx2-f16c-fma-sse41): the valgrind test compiles for the CPU
   * valgrind emulates, and warms the disk cache with the same target first */
  const char *forced = getenv("HL_JIT_TARGET");
  if (forced && *forced && Target::validate_target_string(forced)) return Target(forced);
  Target t = get_host_target();
  unsigned a, b, c, d;
  bool fp16 = __get_cpuid_count(7, 0, &a, &b, &c, &d) && (d & (1u << 23));
  if (t.has_feature(Target::AVX512_SapphireRapids) && !fp16) t = t.without_feature(Target::AVX512_SapphireRapids);
  return t;
}

Target hl_device_target(int device) {
  Target t = host_target()
                 .with_feature(Target::JIT)
                 .with_feature(Target::UserContext)
                 .with_feature(Target::LargeBuffers);
  /* No StrictFloat here: it forbids fused multiply-adds (half the matmul kernel's speed). NaN and
   * Inf tests do not rest on float rules (hl_lower.cpp tests bit patterns); jitted CPU programs,
   * whose products are that kernel's, make their own values strict (hl_lower_ieee). */
  /* Compile time: the engine has checked every shape, dtype and device before a pipeline runs
   * and allocates its outputs itself, so Halide's own buffer checks and top-level bounds
   * queries are dead weight (about a third of a small pipeline's compile); LLVM's loop passes
   * redo what the schedule already did (vectorising, unrolling). HALUA_PIPELINE_CHECKS=1 keeps
   * Halide's asserts, for debugging the engine. */
  const char *checks = getenv("HALUA_PIPELINE_CHECKS");
  if (!checks || !*checks || !strcmp(checks, "0"))
    t = t.with_feature(Target::NoAsserts).with_feature(Target::NoBoundsQuery);
  t = t.with_feature(Target::DisableLLVMLoopOpt);
  /* Halide 14 knows no sm_90: PTX for sm_80, which the driver compiles for newer GPUs */
  if (device == HL_DEVICE_CUDA) t = t.with_feature(Target::CUDA).with_feature(Target::CUDACapability80);
  return t;
}

const halide_device_interface_t *hl_device_interface(int device) {
  static const halide_device_interface_t *cuda = nullptr;
  static std::once_flag once;
  if (device != HL_DEVICE_CUDA) return nullptr;
  std::call_once(once, [] {
    try {
      cuda = get_device_interface_for_device_api(DeviceAPI::CUDA, hl_device_target(HL_DEVICE_CUDA), "halua");
      /* freed device blocks (arrays', and every pipeline run's own buffers) stay with the runtime
       * for reuse: a cuMemAlloc and cuMemFree per buffer per run cost, and a free waits for the
       * device's queued work (a compiled loop makes its carries anew every step). The runtime
       * keeps the 32 most recent and gives them all back when an allocation fails. */
      if (cuda) Internal::JITSharedRuntime::reuse_device_allocations(true);
    } catch (const std::exception &) {
      cuda = nullptr;
    }
  });
  return cuda;
}

extern "C" int hl_cuda_device_count(void) {
  std::call_once(probe_once, probe);
  return cuda_count;
}

extern "C" size_t hl_cuda_device_memory(void) {
  std::call_once(probe_once, probe);
  return cuda_memory;
}

static int need_cuda(int device, const char *what) {
  if (device != HL_DEVICE_CUDA) return hl_error("%s: unknown device %d", what, device);
  if (hl_cuda_device_count() < 1)
    return hl_error("%s: no CUDA device here (hl.devices() lists what there is)", what);
  if (!hl_device_interface(device)) return hl_error("%s: Halide's CUDA runtime could not be loaded", what);
  return 0;
}

extern "C" int hl_device_alloc(int device, size_t nbytes, void **handle, uint64_t *ptr) {
  if (need_cuda(device, "device_put")) return -1;
  /* rows of at most 1 MiB keep every extent 32-bit (a smaller block is one row of its size) */
  size_t row = nbytes < ((size_t)1 << 20) ? (nbytes ? nbytes : 1) : (size_t)1 << 20, rows = (nbytes + row - 1) / row;
  halide_buffer_t *b = new halide_buffer_t();
  halide_dimension_t *dims = new halide_dimension_t[2];
  dims[0] = halide_dimension_t(0, (int32_t)row, 1);
  dims[1] = halide_dimension_t(0, (int32_t)(rows ? rows : 1), (int32_t)row);
  b->type = halide_type_t(halide_type_uint, 8);
  b->dimensions = 2;
  b->dim = dims;
  const halide_device_interface_t *di = hl_device_interface(device);
  int rc = di->device_malloc(call_context(), b, di);
  if (rc != 0) {
    delete[] dims;
    delete b;
    return hl_error("out of device memory allocating %zu bytes on cuda (%s)", nbytes, take_runtime_error().c_str());
  }
  *handle = b;
  *ptr = b->device;
  return 0;
}

extern "C" void hl_device_free(int device, void *handle) {
  halide_buffer_t *b = (halide_buffer_t *)handle;
  if (!b) return;
  const halide_device_interface_t *di = hl_device_interface(device);
  if (di) di->device_free(call_context(), b);
  delete[] b->dim;
  delete b;
}

/* host <-> device copies in pieces of at most 1 GiB (extents are 32-bit) */
static int copy_bytes(int device, uint64_t dev, void *host, size_t nbytes, bool to_device) {
  if (need_cuda(device, "device_put")) return -1;
  for (size_t off = 0; off < nbytes; off += kChunk) {
    size_t n = nbytes - off < kChunk ? nbytes - off : kChunk;
    halide_dimension_t dim;
    halide_buffer_t b = byte_buffer(dev + off, (char *)host + off, n, &dim);
    const halide_device_interface_t *di = b.device_interface;
    int rc;
    if (to_device) {
      b.set_host_dirty(true);
      rc = di->copy_to_device(call_context(), &b, di);
    } else {
      b.set_device_dirty(true);
      rc = di->copy_to_host(call_context(), &b);
    }
    if (rc)
      return hl_error("device_put: copying %zu bytes %s cuda failed: %s", nbytes, to_device ? "to" : "from",
                      take_runtime_error().c_str());
  }
  return 0;
}

int hl_buffer_to_device(halide_buffer_t *b) {
  if (b->device && !b->host_dirty()) return 0;
  if (!b->host) return -1;
  const halide_device_interface_t *di = b->device_interface ? b->device_interface : hl_device_interface(HL_DEVICE_CUDA);
  if (!di) return -1;
  if (!b->device) b->set_host_dirty(true);   /* (a fresh allocation is filled only from a dirty host) */
  return di->copy_to_device(call_context(), b, di);
}

extern "C" int hl_device_copy_to_device(int device, uint64_t dst, const void *src, size_t nbytes) {
  return copy_bytes(device, dst, const_cast<void *>(src), nbytes, true);
}

extern "C" int hl_device_copy_to_host(int device, void *dst, uint64_t src, size_t nbytes) {
  return copy_bytes(device, src, dst, nbytes, false);
}

/* device to device through the runtime's buffer_copy, which merges the axes that are contiguous
 * in both views and copies the rest in strided pieces, queued after the kernels before it */
extern "C" int hl_device_copy_view(int device, uint64_t dst, const int64_t *dst_strides, uint64_t src,
                                   const int64_t *src_strides, int ndim, const int64_t *shape, size_t elem_size) {
  if (need_cuda(device, "copy")) return -1;
  int64_t n = 1;
  for (int d = 0; d < ndim; d++) n *= shape[d];
  if (n == 0) return 0;
  halide_dimension_t dd[16], sd[16];
  halide_buffer_t bd = halide_buffer_t(), bs = halide_buffer_t();
  const halide_device_interface_t *di = hl_device_interface(device);
  for (halide_buffer_t *b : {&bd, &bs}) {
    b->type = halide_type_t(halide_type_uint, (uint8_t)(8 * elem_size));
    b->dimensions = ndim;
    b->device_interface = di;
  }
  bd.device = dst;
  bs.device = src;
  bd.dim = dd;
  bs.dim = sd;
  for (int d = 0; d < ndim; d++) {   /* Halide's order: innermost first */
    int64_t e = shape[ndim - 1 - d], t = dst_strides[ndim - 1 - d], f = src_strides[ndim - 1 - d];
    if (e > INT32_MAX || t > INT32_MAX || t < INT32_MIN || f > INT32_MAX || f < INT32_MIN)
      return hl_error("copy: a view with an axis or a step past 2^31-1 elements cannot be copied on the device");
    dd[d] = halide_dimension_t(0, (int32_t)e, (int32_t)t);
    sd[d] = halide_dimension_t(0, (int32_t)e, (int32_t)f);
  }
  if (di->buffer_copy(call_context(), &bs, di, &bd) != 0)
    return hl_error("copy: a copy within cuda memory failed: %s", take_runtime_error().c_str());
  return 0;
}

extern "C" int hl_device_sync(int device) {
  if (device == HL_DEVICE_CPU) return 0;
  if (need_cuda(device, "sync")) return -1;
  /* a small device-to-host copy waits for the work queued before it */
  static void *handle = nullptr;
  static uint64_t ptr = 0;
  static std::mutex lock;
  {
    std::lock_guard<std::mutex> g(lock);
    if (!handle && hl_device_alloc(device, 64, &handle, &ptr)) return -1;
  }
  char scratch[8];
  return hl_device_copy_to_host(device, scratch, ptr, sizeof scratch);
}
