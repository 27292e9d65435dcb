/* Compilation and the call path. A kernel is a Halide pipeline called through its argv entry
 * point with halide_buffer_t views of the engine's arrays (zero copy): compiled ahead of time
 * into object code of the disk cache (host and CUDA pipelines, hl_aot.cpp) or JIT-compiled (when
 * the disk cache is off or cannot be used). */
#include "hl_backend.h"
#include "hl_aot.h"
#include "hl_lower.h"
#include "hl_device.h"
#include "hl_extern_cublas.h"
#include "hl_extern_cufft.h"
#include "hl_extern_host_copy.h"
#include "hl_extern_matmul.h"
#include "hl_extern_jit.h"
#include "hl_extern_loop.h"
#include "hl_extern_view.h"
#include "hl_export_lib.h"
#include "hl_compile_jobs.h"
#include "hl_host_reads.h"
#include "hl_partition.h"
#include "hl_symbolic.h"
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstring>
#include <unistd.h>
#include <fstream>
#include <memory>
#include <malloc.h>
#include <mutex>
#include <new>
#include <sys/stat.h>
#include <sstream>
extern "C" {
#include "hl_complex.h"
#include "hl_disk.h"
#include "hl_error.h"
#include "hl_interrupt.h"
#include "hl_pool.h"
#include "hl_storage.h"
}

using namespace Halide;

/* one pipeline of a kernel cut into several (hl_partition.h) */
struct hl_kernel_part {
  Internal::JITModule module;
  Internal::JITModule::argv_wrapper entry = nullptr;
  hl_aot_entry aot = nullptr;
};

struct hl_kernel {
  std::atomic<int> refs{1};   /* hl_kernel_retain/release: the cache's entry and each user */
  std::atomic<bool> used{false};   /* an eager memo ran it since the cache last asked (hl_kernel_note_use) */
  size_t bytes = 0;           /* the memory it keeps (hl_kernel_bytes) */
  Pipeline pipeline;
  std::vector<Argument> args;
  Target target;
  bool cuda = false;   /* target has CUDA, asked once (Target::has_feature is a call into Halide) */
  Internal::JITModule module;
  Internal::JITModule::argv_wrapper entry = nullptr;
  hl_aot_entry aot = nullptr;   /* a loaded object's entry point, in place of `entry` */
  void *so = nullptr;           /* its image (hl_aot_load), unloaded with the kernel */
  int nparams = 0, noutputs = 0;
  std::vector<int> param_ranks, output_ranks;
  /* whether hl_kernel_run_flat can run it (every buffer real and rank 1, at most
   * HL_FLAT_MAX_BUFFERS), and its buffers' dtypes and Halide types, found once (set_meta) */
  bool flat = false;
  hl_dtype flat_dtypes[HL_FLAT_MAX_BUFFERS];
  halide_type_t flat_types[HL_FLAT_MAX_BUFFERS];
  double compile_ms = 0;
  /* where compile_ms went: halua's lowering and schedule, Halide's lowering to a module, LLVM
   * (optimisation and code generation: to an object, or the JIT's), linking and loading */
  double phase_ms[4] = {0, 0, 0, 0};
  int jobs = 1;         /* the processes that compiled its parts at once (hl_compile_jobs.h) */
  std::string name;     /* for messages: the primitive or the jitted function */
  std::string symbol;   /* the compiled function's unique name */
  std::string ptx;   /* CUDA pipelines: the device code, for inspection and ptxas checks */
  bool ptx_pending = false;   /* loaded from disk: ptx is made on request (hl_kernel_ptx) */
  /* a program cut into several pipelines: the plan, and each part's code (the fields above
   * that hold one pipeline's code are then unused) */
  std::unique_ptr<hl_plan> plan;
  std::vector<hl_kernel_part> parts;
};

namespace {

/* The runtime reports failures here instead of calling abort(). */
struct RunContext : JITUserContext {
  /* the ahead-of-time runtime's handlers are process-wide: a user context that is not one of
   * ours (another Halide library's pipeline in the same process) is left alone */
  static const uint64_t kMagic = 0x68616c7561727563ull;
  uint64_t magic = kMagic;
  std::string message;
};

void record_error(JITUserContext *c, const char *msg) { static_cast<RunContext *>(c)->message += msg; }

/* pipelines' internal buffers come from the engine's scratch memory (hl_storage.c) */
void *scratch_malloc(JITUserContext *, size_t n) { return hl_scratch_alloc(n); }
void scratch_free(JITUserContext *, void *p) { hl_scratch_free(p); }

/* parallel loops go to the engine's pool (hl_pool.c) */
int pool_par_for(JITUserContext *ctx, int (*f)(JITUserContext *, int, uint8_t *), int min, int extent, uint8_t *closure) {
  return hl_pool_par_for(ctx, (hl_task_fn)f, min, extent, closure);
}

int to_buffer(const hl_array *complex_array, int rank, halide_buffer_t *b, halide_dimension_t *dims, const char *what) {
  /* a complex array binds as the float array of its (re, im) pairs, as hl_graph_realify compiled it */
  hl_array pairs;
  const hl_array *a = complex_array;
  if (hl_dtype_is_complex(a->dtype)) {
    hl_complex_as_real(complex_array, &pairs);
    a = &pairs;
  }
  if (a->ndim != rank) return hl_error("%s: internal: rank %d passed where %d was compiled", what, a->ndim, rank);
  new (b) halide_buffer_t();
  if (a->storage->device != HL_DEVICE_CPU) {
    /* device memory: the address of the view's first element; Halide finds no host copy */
    b->device = hl_array_device_address(a);
    b->device_interface = hl_device_interface(a->storage->device);
    /* an empty output of a CUDA pipeline is written on the host (hl_schedule_cuda): nothing is
     * written, but Halide's checks (HALUA_PIPELINE_CHECKS=1) want a host address */
    static uint8_t nothing[64];
    if (hl_shape_size(a->ndim, a->shape) == 0) b->host = nothing;
  } else {
    b->host = (uint8_t *)hl_array_data(a);
  }
  b->type = hl_buffer_type(a->dtype);
  b->dimensions = rank;
  b->dim = dims;
  for (int j = 0; j < rank; j++) {
    int axis = rank - 1 - j;
    int64_t e = a->shape[axis], s = a->strides[axis];
    if (e > INT32_MAX || s > INT32_MAX || s < INT32_MIN)
      return hl_error("%s: axis %d of shape %s is too long for one pipeline (at most 2^31-1 elements per axis)",
                      what, axis + 1, hl_shape_str(a->ndim, (const long long *)a->shape).s);
    /* the stride of a one-element axis is never used; unit keeps stride constraints happy */
    new (&dims[j]) halide_dimension_t(0, (int32_t)e, e == 1 && j == 0 ? 1 : (int32_t)s);
  }
  return 0;
}

/* The graph the backend compiles: g itself, or for a graph with complex values its form over the
 * float arrays of their (re, im) pairs (core/hl_complex.h). Throws what the rewrite reports. */
struct RealGraph {
  hl_graph real;
  const hl_graph *g;
  explicit RealGraph(const hl_graph *g0) : g(g0) {
    hl_graph_init(&real);
    if (!hl_graph_has_complex(g0)) return;
    if (hl_graph_realify(g0, &real)) throw std::runtime_error(hl_error_message());
    g = &real;
  }
  ~RealGraph() { hl_graph_free(&real); }
  RealGraph(const RealGraph &) = delete;
  RealGraph &operator=(const RealGraph &) = delete;
};

/* a pipeline's function in its own image: each is loaded apart (hl_objload.h) and looked up
 * through its own handle, so one name serves them all */
const char *const kAotSymbol = "hl_pipeline";

void set_meta(hl_kernel *k, const hl_graph *g, const char *name) {
  k->name = name;
  hl_aot_describe(k->so, k->name);   /* (HALUA_PERF_MAP=1: its code named for perf) */
  k->nparams = g->nparams;
  k->noutputs = g->noutputs;
  std::vector<const hl_type *> types;   /* the parameters', then the outputs' */
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].prim == HL_P_PARAM) {
      k->param_ranks.push_back(g->nodes[i].type.ndim);
      types.push_back(&g->nodes[i].type);
    }
  for (int j = 0; j < g->noutputs; j++) {
    k->output_ranks.push_back(g->nodes[g->outputs[j]].type.ndim);
    types.push_back(&g->nodes[g->outputs[j]].type);
  }
  k->flat = types.size() <= HL_FLAT_MAX_BUFFERS;
  for (size_t j = 0; j < types.size() && k->flat; j++) {
    k->flat = types[j]->ndim == 1 && !hl_dtype_is_complex(types[j]->dtype);
    k->flat_dtypes[j] = types[j]->dtype;
    k->flat_types[j] = hl_buffer_type(types[j]->dtype);
  }
}


/* Halide's compiler and our lowering keep process-wide state (static Vars, name counters,
 * LLVM's global options), and embedders compile from several threads: one compile at a time.
 * Compiled kernels run concurrently without it. */
std::mutex compiler_lock;

std::atomic<size_t> live_bytes{0};   /* hl_kernel_bytes of every kernel not yet freed */

/* The allocator's bytes in use (glibc; 0 elsewhere, and under the sanitizers, which replace it). */
size_t heap_in_use() {
#if defined(__GLIBC__) && (__GLIBC__ > 2 || __GLIBC_MINOR__ >= 33)
  struct mallinfo2 mi = mallinfo2();
  return mi.uordblks + mi.hblkhd;
#else
  return 0;
#endif
}

/* What a new kernel keeps: the allocations its compile or load left in use (compiles run one at a
 * time, under compiler_lock, so the difference is the kernel's: its JIT module, LLVM's module
 * and Halide's pipeline) and the pages its loaded code maps (hl_aot_bytes). At least 16 KB, where
 * the allocator tells nothing. */
size_t kernel_bytes(size_t heap_before, void *image) {
  size_t heap = heap_in_use(), bytes = heap > heap_before ? heap - heap_before : 0;
  bytes += hl_aot_bytes(image);
  return bytes < 16384 ? 16384 : bytes;
}

}  // namespace

/* Halide's compile-time messages: errors become exceptions as before (the caller reports them
 * under the op's name); warnings about schedules ("outer dim vectorization", "abs of an unsigned
 * type") say nothing a user can act on, so they print only with HALUA_HALIDE_WARNINGS=1. */
struct QuietReporter : CompileTimeErrorReporter {
  void warning(const char *msg) override {
    if (getenv("HALUA_HALIDE_WARNINGS")) fprintf(stderr, "%s", msg);
  }
  void error(const char *msg) override { throw CompileError(msg); }
};




/* The ahead-of-time runtime's handlers: every runtime call passes the run's context (hl_kernel_run) */
void hl_backend_runtime_error(void *uc, const char *msg) {
  RunContext *c = uc ? static_cast<RunContext *>(static_cast<JITUserContext *>(uc)) : nullptr;
  if (c && c->magic == RunContext::kMagic) c->message += msg;
  else fprintf(stderr, "halua: Halide runtime: %s\n", msg);
}
void *hl_backend_runtime_malloc(void *, size_t n) { return hl_scratch_alloc(n); }
void hl_backend_runtime_free(void *, void *p) { hl_scratch_free(p); }
int hl_backend_runtime_par_for(void *uc, int (*f)(void *, int, uint8_t *), int min, int extent, uint8_t *closure) {
  return hl_pool_par_for(uc, (hl_task_fn)f, min, extent, closure);
}

/* Host and CUDA pipelines live in the disk cache, each kind loaded against its runtime (hl_aot.h;
 * a compiled loop's stage names its loop by its slot in the program: hl_eval.h). A CUDA
 * pipeline's lowering also reads whether this process has cuBLAS (for a product) and cuFFT (for
 * a transform): their extern stages, else the host's. Its key says so, so that an entry with a
 * library's stage never loads where the library is missing or switched off, nor one without it
 * where it would serve. */
extern "C" char *hl_kernel_disk_signature(const hl_graph *g) {
  if (g->device != HL_DEVICE_CPU && g->device != HL_DEVICE_CUDA) return nullptr;
  std::lock_guard<std::mutex> guard(compiler_lock);
  static std::string signature[2];   /* the same for the whole process: made once per device */
  std::string &sig = signature[g->device == HL_DEVICE_CUDA];
  try {
    Target t = hl_device_target(g->device);
    std::string why;
    if (!hl_aot_ready(t.without_feature(Target::JIT), why)) return nullptr;   /* (said once there) */
    if (sig.empty()) sig = hl_aot_signature(t);
    std::string key = sig;
    /* (read each time: the variables that switch them off may change; and only for the graphs
     * whose lowering asks, so that a process that never multiplies or transforms on the GPU
     * does not load those libraries) */
    if (g->device == HL_DEVICE_CUDA) {
      bool products = false, transforms = false;
      for (int i = 0; i < g->nnodes; i++) {
        products = products || hl_prims[g->nodes[i].prim].kind == HL_K_MATMUL;
        transforms = transforms || hl_prims[g->nodes[i].prim].kind == HL_K_FFT;
      }
      if (products) key += std::string("|cublas ") + (hl_cublas_available() ? "1" : "0");
      if (transforms) key += std::string("|cufft ") + (hl_cufft_available() ? "1" : "0");
    }
    return strdup(key.c_str());
  } catch (const std::exception &e) {
    return nullptr;
  }
}

/* A CUDA module's device code: the PTX that Halide embeds in its host code */
static std::string module_ptx(const Module &m) {
  for (const Buffer<> &b : m.buffers())
    if (b.name().find("gpu_source_kernels") != std::string::npos)
      return std::string((const char *)b.data(), strnlen((const char *)b.data(), (size_t)b.size_in_bytes()));
  return std::string();
}

/* g's Halide pipeline, lowered and scheduled for its device, with its arguments */
static Pipeline build_pipeline(const hl_graph *g, const Target &t, std::vector<Argument> &args) {
  hl_lowered L;
  hl_lower_graph(g, L);
  if (g->schedule && g->device == HL_DEVICE_CUDA)
    throw CompileError("schedule \"auto\" (Mullapudi2016) schedules CPU pipelines, not cuda ones");
  if (g->device == HL_DEVICE_CUDA) hl_schedule_cuda(L, t);
  else if (g->schedule) hl_schedule_auto(L, t);
  else hl_schedule_cpu(L, t);
  Pipeline p = hl_pipeline(L, args);
  if (g->device == HL_DEVICE_CUDA) hl_copy_host_reads(p, L.params);
  return p;
}

/* the engine's extern stages, for a JIT module to link against */
static std::vector<Internal::JITModule> jit_deps(int device) {
  std::vector<Internal::JITModule> deps;
  deps.push_back(device == HL_DEVICE_CUDA ? hl_cublas_exports() : hl_cpu_matmul_exports());
  if (device == HL_DEVICE_CUDA) deps.push_back(hl_cufft_exports());
  if (device == HL_DEVICE_CUDA) deps.push_back(hl_host_copy_exports());
  deps.push_back(hl_linalg_exports());
  deps.push_back(hl_sort_exports());
  deps.push_back(hl_loop_exports());
  deps.push_back(hl_transpose_exports());
  deps.push_back(hl_dist_exports());
  return deps;
}

/* part q's function in a kernel's image */
static std::string part_symbol(int q) { return std::string(kAotSymbol) + "_p" + std::to_string(q); }

/* a JIT-compiled function's name: ours alone (a pipeline named after its primitive, "tanh",
 * would collide with libm inside the JIT, and jit names carry paths) */
static std::string jit_symbol() {
  static std::atomic<long> serial{0};
  return "hl_pipeline_" + std::to_string(++serial);
}

/* k without the image it had loaded (a part's code was not there: the JIT takes over) */
static void drop_aot(hl_kernel *k) {
  hl_aot_unload(k->so);
  k->so = nullptr;
  k->aot = nullptr;
  for (hl_kernel_part &part : k->parts) part.aot = nullptr;
}

/* Every part's function in k's image, whose first is `first` (parts with one program
 * share the function of the first: hl_plan::same_as): false when one is missing */
static bool all_parts(hl_kernel *k, hl_aot_entry first, size_t n) {
  k->aot = first;
  for (size_t q = 0; q < n; q++) {
    int f = k->plan->same_as[q];
    k->parts[q].aot = f ? hl_aot_symbol(k->so, part_symbol(f)) : first;
    if (!k->parts[q].aot) return false;
  }
  return true;
}

/* The parts of k's plan, compiled: ahead of time into one file at kernel_file (one function per
 * part, linked into one module: one LLVM run, one load), else JIT-compiled one by
 * one. `lap` adds the time since its last call to a phase. */
template <typename Lap>
static void compile_parts(hl_kernel *k, const char *kernel_file, Lap &lap) {
  hl_plan &plan = *k->plan;
  size_t n = plan.parts.size();
  std::vector<Pipeline> pipes(n);
  std::vector<std::vector<Argument>> args(n);
  k->parts.assign(n, hl_kernel_part());
  /* the parts compiled (the first of each program), the costliest first: processes take them in
   * turn (hl_compile_jobs.h) */
  std::vector<int> distinct = plan.distinct_costliest_first();
  Target t = k->target.without_feature(Target::JIT).with_feature(Target::NoRuntime);   /* (ahead of time) */
  int jobs = kernel_file ? hl_compile_jobs(distinct.size()) : 1;
  bool serial_aot = kernel_file != nullptr;
  if (jobs > 1) {
    /* several processes at once (hl_compile_jobs.h): their lowering, Halide and LLVM time is the
     * wall time of the whole compile, noted as LLVM's */
    auto part = [&](size_t d) {
      std::vector<Argument> a;
      Pipeline p = build_pipeline(&plan.parts[distinct[d]].g, k->target, a);
      return p.compile_to_module(a, part_symbol(distinct[d]), t);
    };
    std::vector<std::string> objs;
    bool compiled = hl_compile_parts_in_processes(distinct.size(), jobs, part, kernel_file, objs);
    lap(k->phase_ms[2]);
    if (compiled) {
      double link_ms = 0;
      hl_aot_entry first = hl_aot_load_objects(objs, part_symbol(0), kernel_file, t, &link_ms, &k->so, false);
      for (const std::string &o : objs) unlink(o.c_str());
      lap(k->phase_ms[3]);
      if (first && all_parts(k, first, n)) {
        k->symbol = kAotSymbol;
        k->jobs = jobs;
        return;
      }
      drop_aot(k);   /* (the one-module link below decides whether the disk path works here) */
      unlink(kernel_file);
    }
  }
  if (serial_aot) {
    std::vector<Module> modules;
    for (int q : distinct) {
      pipes[q] = build_pipeline(&plan.parts[q].g, k->target, args[q]);
      lap(k->phase_ms[0]);
      modules.push_back(pipes[q].compile_to_module(args[q], part_symbol((int)q), t));
      lap(k->phase_ms[1]);
    }
    k->symbol = kAotSymbol;
    hl_aot_entry first = hl_aot_compile(link_modules(kAotSymbol, modules), part_symbol(0), kernel_file, &k->phase_ms[2],
                                        &k->phase_ms[3], &k->so);
    if (first && all_parts(k, first, n)) return;
    if (first) drop_aot(k);   /* (a part's function missing) */
    unlink(kernel_file);   /* (said once by hl_aot_compile; the JIT takes over) */
  }
  std::vector<Internal::JITModule> deps = jit_deps(HL_DEVICE_CPU);   /* (only CPU programs are cut) */
  for (size_t q = 0; q < n; q++) {
    if (plan.same_as[q] != (int)q) {   /* (its program's first part, compiled already) */
      k->parts[q] = k->parts[plan.same_as[q]];
      continue;
    }
    if (!pipes[q].defined()) {
      pipes[q] = build_pipeline(&plan.parts[q].g, k->target, args[q]);
      lap(k->phase_ms[0]);
    }
    std::string sym = jit_symbol();
    Module m = pipes[q].compile_to_module(args[q], sym, k->target);
    lap(k->phase_ms[1]);
    k->parts[q].module = Internal::JITModule(m, m.get_function_by_name(sym), deps);
    k->parts[q].entry = k->parts[q].module.argv_function();
    lap(k->phase_ms[2]);
  }
  k->symbol = "";
}

/* k's target for a device, and what the run asks of it on every call */
static void set_target(hl_kernel *k, int device) {
  k->target = hl_device_target(device);
  k->cuda = k->target.has_feature(Target::CUDA);
}

static hl_kernel *hl_kernel_load_real(const hl_graph *g, const char *name, const void *file, size_t size);

extern "C" hl_kernel *hl_kernel_load(const hl_graph *g0, const char *name, const void *file, size_t size) {
  const hl_graph *g = g0;
  hl_graph real;
  hl_graph_init(&real);
  if (hl_graph_has_complex(g0)) {
    if (hl_graph_realify(g0, &real)) return nullptr;
    g = &real;
  }
  hl_kernel *k = hl_kernel_load_real(g, name, file, size);
  hl_graph_free(&real);
  return k;
}

static hl_kernel *hl_kernel_load_real(const hl_graph *g, const char *name, const void *file, size_t size) {
  auto t0 = std::chrono::steady_clock::now();
  std::lock_guard<std::mutex> guard(compiler_lock);
  size_t heap0 = heap_in_use();
  hl_kernel *k = new hl_kernel;
  set_target(k, g->device);
  k->symbol = kAotSymbol;
  k->ptx_pending = k->cuda;
  try {
    std::unique_ptr<hl_plan> plan(new hl_plan);
    if (hl_plan_make(g, *plan)) k->plan = std::move(plan);
  } catch (const std::exception &e) {
    hl_error("%s: %s", name, e.what());
    delete k;
    return nullptr;
  }
  k->aot = hl_aot_load(file, size, k->plan ? part_symbol(0) : k->symbol, k->target, &k->so);
  for (size_t q = 0; k->aot && k->plan && q < k->plan->parts.size(); q++) {
    k->parts.push_back(hl_kernel_part());
    k->parts[q].aot = hl_aot_symbol(k->so, part_symbol(k->plan->same_as[q]));
    if (!k->parts[q].aot) k->aot = nullptr;   /* (an entry of another plan: compiled again) */
  }
  if (!k->aot) {
    hl_aot_unload(k->so);
    delete k;
    return nullptr;
  }
  set_meta(k, g, name);
  k->bytes = kernel_bytes(heap0, k->so);
  live_bytes += k->bytes;
  k->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return k;
}


extern "C" hl_kernel *hl_kernel_compile(const hl_graph *g0, const char *name, const char *kernel_file) {
  std::lock_guard<std::mutex> guard(compiler_lock);
  static QuietReporter reporter;
  set_custom_compile_time_error_reporter(&reporter);   /* (under the lock: once is enough, twice is harmless) */
  auto t0 = std::chrono::steady_clock::now();
  size_t heap0 = heap_in_use();
  hl_kernel *k = new hl_kernel;
  auto lap = [last = t0](double &into) mutable {
    auto now = std::chrono::steady_clock::now();
    into += std::chrono::duration<double, std::milli>(now - last).count();
    last = now;
  };
  const hl_graph *g = g0;
  try {
    RealGraph rg(g0);
    g = rg.g;
    set_target(k, g->device);
    std::unique_ptr<hl_plan> plan(new hl_plan);
    if (hl_plan_make(g, *plan)) {
      k->plan = std::move(plan);
      compile_parts(k, kernel_file, lap);
    } else {
      k->pipeline = build_pipeline(g, k->target, k->args);
      lap(k->phase_ms[0]);
    }
    if (k->plan) {
      /* (compiled above) */
    } else if (kernel_file) {
      /* ahead of time, into the disk cache's file */
      k->symbol = kAotSymbol;
      Target t = k->target.without_feature(Target::JIT).with_feature(Target::NoRuntime);
      Module m = k->pipeline.compile_to_module(k->args, k->symbol, t);
      lap(k->phase_ms[1]);
      if (k->cuda) k->ptx = module_ptx(m);
      k->aot = hl_aot_compile(m, k->symbol, kernel_file, &k->phase_ms[2], &k->phase_ms[3], &k->so);
      if (!k->aot) unlink(kernel_file);   /* (said once by hl_aot_compile; the JIT takes over) */
      /* the loaded object is all a run needs: the Halide pipeline is let go (hl_kernel_stmt and
       * hl_kernel_asm lower the graph again, as for a kernel loaded from disk) */
      if (k->aot) {
        k->pipeline = Pipeline();
        k->args.clear();
      }
    }
    if (!k->aot && !k->plan) {
      k->symbol = jit_symbol();
      Module m = k->pipeline.compile_to_module(k->args, k->symbol, k->target);
      lap(k->phase_ms[1]);
      if (k->cuda) k->ptx = module_ptx(m);
      k->module = Internal::JITModule(m, m.get_function_by_name(k->symbol), jit_deps(g->device));
      k->entry = k->module.argv_function();
      lap(k->phase_ms[2]);
    }
    set_meta(k, g, name);
    k->bytes = kernel_bytes(heap0, k->so);
    live_bytes += k->bytes;
  } catch (const Halide::Error &e) {
    hl_error("%s: compiling the pipeline failed: %s", name, e.what());
    delete k;
    return nullptr;
  } catch (const std::exception &e) {
    hl_error("%s: compiling the pipeline failed: %s", name, e.what());
    delete k;
    return nullptr;
  }
  k->compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
  return k;
}

/* A kernel cut into parts: each part in turn, on the caller's buffers (the first nparams +
 * noutputs slots, in `bufs`) and the buffers between parts, each allocated before the part that
 * writes it and freed after the last that reads it. Stops at the first failure or interrupt. */
static int run_parts(hl_kernel *k, halide_buffer_t *bufs, RunContext *ctx) {
  const hl_plan &plan = *k->plan;
  int fixed = plan.nparams + plan.noutputs, nb = (int)plan.between.size(), nc = (int)plan.constants.size();
  std::vector<halide_buffer_t> between((size_t)nb), constants((size_t)nc);
  std::vector<halide_dimension_t> dims((size_t)nb * HL_MAX_DIMS);
  std::vector<const void *> argv;
  /* the constants its parts read from buffers (hl_plan::constants): 0-d, on the plan's values,
   * which the pipelines only read */
  for (int c = 0; c < nc; c++) {
    constants[c].type = hl_buffer_type(plan.constants[c].dtype);
    constants[c].host = (uint8_t *)const_cast<void *>(static_cast<const void *>(&plan.constants[c].value));
  }
  JITUserContext *pctx = ctx;
  int rc = 0;
  /* a polymorphic program's symbols, read where they come from: the call's arguments */
  int64_t sym[HL_MAX_SYMS] = {0};
  for (int j = 0; j < plan.nsym; j++) {
    const halide_buffer_t &p = bufs[plan.sym_param[j]];
    sym[j] = p.dim[p.dimensions - 1 - plan.sym_axis[j]].extent;
  }
  for (size_t q = 0; q < plan.parts.size() && rc == 0; q++) {
    for (int j = 0; j < nb && rc == 0; j++) {
      if (plan.born[j] != (int)q) continue;
      const hl_type &t = plan.between[j];
      halide_buffer_t &b = between[j];
      b = halide_buffer_t();
      b.type = hl_buffer_type(t.dtype);
      b.dimensions = t.ndim;
      b.dim = &dims[(size_t)j * HL_MAX_DIMS];
      int64_t stride = 1;
      for (int d = 0; d < t.ndim && rc == 0; d++) {   /* row-major: Halide's dim 0 is the last axis */
        int axis = t.ndim - 1 - d;
        int64_t e = t.shape[axis];
        const hl_between_extent &x = plan.between_extents[j][axis];
        if (x.symbolic && (hl_sym_size(&x.form, plan.nsym, sym, &e) || e > INT32_MAX))
          rc = hl_error("%s: internal: a buffer between pipelines has no whole size at these sizes", k->name.c_str());
        b.dim[d] = halide_dimension_t(0, (int32_t)e, (int32_t)stride);
        stride *= e;
      }
      if (rc) break;
      b.host = (uint8_t *)hl_scratch_alloc((size_t)std::max<int64_t>(stride, 1) * b.type.bytes());
      if (!b.host) rc = hl_error("%s: out of memory for a buffer between pipelines", k->name.c_str());
    }
    if (rc) break;
    const hl_part &part = plan.parts[q];
    argv.assign(1, &pctx);
    for (int slot : part.slots)
      argv.push_back(slot < fixed ? &bufs[slot] : slot < fixed + nb ? &between[slot - fixed] : &constants[slot - fixed - nb]);
    const hl_kernel_part &code = k->parts[q];
    rc = code.aot ? code.aot((void **)argv.data()) : code.entry(argv.data());
    if (rc == 0 && (!ctx->message.empty() || hl_interrupted())) rc = -1;
    for (int j = 0; j < nb; j++)
      if (plan.dies[j] == (int)q && between[j].host) {
        hl_scratch_free(between[j].host);
        between[j].host = nullptr;
      }
  }
  for (halide_buffer_t &b : between)   /* (after a failure) */
    if (b.host) hl_scratch_free(b.host);
  return rc;
}

/* k's run on its buffers (bufs: its parameters', then its outputs'; argv: their addresses after
 * a slot for the context), which the callers below make. (Inlined into both: as a call of its
 * own it cost a jitted call 34 instructions more.) */
static inline __attribute__((always_inline)) int run_buffers(hl_kernel *k, halide_buffer_t *bufs, const void **argv) {
  RunContext ctx;
  hl_device_handlers(ctx.handlers);
  ctx.handlers.custom_error = record_error;
  ctx.handlers.custom_do_par_for = pool_par_for;
  ctx.handlers.custom_malloc = scratch_malloc;
  ctx.handlers.custom_free = scratch_free;
  JITUserContext *pctx = &ctx;
  argv[0] = &pctx;
  const hl_runtime_hooks *hooks = hl_backend_hooks();
  if (!hooks) return hl_error("%s: internal: the runtime has not started", k->name.c_str());
  /* a run of its own: its loops run once for it, its extern stages report failures in it (a
   * loop's body runs inside its loop's stage: hl_interrupt.h) */
  hl_run outer;
  hl_run_enter(&outer);
  int rc = k->plan ? run_parts(k, bufs, &ctx) : k->aot ? k->aot((void **)argv) : k->entry(argv);
  if (k->cuda)   /* (only CUDA pipelines copy inputs to the host: hl_host_reads.h) */
    for (int j = 0; j < k->nparams; j++) hl_input_host_copy_release(&bufs[j]);
  /* Ctrl-C while it ran (between parallel tasks, it stopped it): the call fails, its results
   * are not taken (hl_interrupt.h) */
  bool interrupted = hl_interrupted();
  hl_run ended = hl_run_leave(&outer);
  if (ended.kept) hooks->release_kept(ended.id);   /* the results its loops kept for it */
  if (interrupted) return hl_error("interrupted");
  /* the stage's message, or the run's: with Halide's asserts compiled out, a runtime failure
   * (a device allocation, a copy) may leave rc 0 but always reports through record_error */
  if (ended.stage_failed) return -1;
  if (rc != 0 || !ctx.message.empty()) {
    std::string m = ctx.message;
    while (!m.empty() && (m.back() == '\n' || m.back() == ' ')) m.pop_back();
    return hl_error("%s: the pipeline failed (%d): %s", k->name.c_str(), rc, m.c_str());
  }
  return 0;
}

extern "C" int hl_kernel_run(hl_kernel *k, const hl_array *const *inputs, hl_array *const *outputs) {
  enum { ONSTACK = 8 };
  int nb = k->nparams + k->noutputs;
  /* as many buffer descriptors as this call passes, and not constructed here: their constructors
   * zero them (128 of each had zeroed 23 kB per call, a quarter of an eager op's time; the 8 x 8
   * dimension records on the stack, 1 kB, were still 2% of one), and to_buffer constructs each
   * one the call uses */
  alignas(halide_buffer_t) unsigned char small_bufs[sizeof(halide_buffer_t) * ONSTACK];
  alignas(halide_dimension_t) unsigned char small_dims[sizeof(halide_dimension_t) * ONSTACK * HL_MAX_DIMS];
  const void *small_argv[ONSTACK + 1];
  std::vector<halide_buffer_t> big_bufs;
  std::vector<halide_dimension_t> big_dims;
  std::vector<const void *> big_argv;
  halide_buffer_t *bufs = reinterpret_cast<halide_buffer_t *>(small_bufs);
  halide_dimension_t *dims = reinterpret_cast<halide_dimension_t *>(small_dims);
  const void **argv = small_argv;
  if (nb > ONSTACK) {
    big_bufs.resize((size_t)nb);
    big_dims.resize((size_t)nb * HL_MAX_DIMS);
    big_argv.resize((size_t)nb + 1);
    bufs = big_bufs.data();
    dims = big_dims.data();
    argv = big_argv.data();
  }
  for (int j = 0; j < nb; j++) {
    bool in = j < k->nparams;
    const hl_array *a = in ? inputs[j] : outputs[j - k->nparams];
    int rank = in ? k->param_ranks[j] : k->output_ranks[j - k->nparams];
    if (to_buffer(a, rank, &bufs[j], dims + (size_t)j * HL_MAX_DIMS, k->name.c_str())) return -1;
    argv[j + 1] = &bufs[j];
  }
  return run_buffers(k, bufs, argv);
}

extern "C" int hl_kernel_run_flat(hl_kernel *k, int64_t count, const hl_dtype *dtypes, void *const *data, unsigned broadcast) {
  enum { MAX = HL_FLAT_MAX_BUFFERS };
  int nb = k->nparams + k->noutputs;
  if (!k->flat || count > INT32_MAX || k->cuda)
    return hl_error("%s: internal: a flat run of %d buffers of %lld elements", k->name.c_str(), nb, (long long)count);
  /* (constructed one by one below, as hl_kernel_run's) */
  alignas(halide_buffer_t) unsigned char buf_bytes[sizeof(halide_buffer_t) * MAX];
  alignas(halide_dimension_t) unsigned char dim_bytes[sizeof(halide_dimension_t) * MAX];
  const void *argv[MAX + 1];
  halide_buffer_t *bufs = reinterpret_cast<halide_buffer_t *>(buf_bytes);
  halide_dimension_t *dims = reinterpret_cast<halide_dimension_t *>(dim_bytes);
  for (int j = 0; j < nb; j++) {
    if (dtypes[j] != k->flat_dtypes[j])
      return hl_error("%s: internal: a flat run passes %s for %s", k->name.c_str(), hl_dtype_name(dtypes[j]),
                      hl_dtype_name(k->flat_dtypes[j]));
    halide_buffer_t *b = new (&bufs[j]) halide_buffer_t();
    b->host = static_cast<uint8_t *>(data[j]);
    b->type = k->flat_types[j];
    b->dimensions = 1;
    /* (a one-element run's stride is unit, as to_buffer gives it) */
    b->dim = new (&dims[j]) halide_dimension_t(0, (int32_t)count, (broadcast >> j & 1) && count > 1 ? 0 : 1);
    argv[j + 1] = b;
  }
  return run_buffers(k, bufs, argv);
}

extern "C" int hl_kernel_export(const hl_graph *g, int ncaptures, const hl_array *captures, const char *dir, const char *name) {
  /* complex values inside are realified as for a compile; the library's interface is real arrays
   * (a captured complex constant is embedded as the bytes of its (re, im) pairs, which is what its
   * realified parameter reads) */
  int nargs = g->nparams - ncaptures;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].prim == HL_P_PARAM && g->nodes[i].attrs.i[0] < nargs && hl_dtype_is_complex(g->nodes[i].type.dtype))
      return hl_error("export: complex arguments are not supported yet in exported libraries (docs/complex.md); export a "
                      "function of their hl.real and hl.imag parts");
  for (int k = 0; k < g->noutputs; k++)
    if (hl_dtype_is_complex(g->nodes[g->outputs[k]].type.dtype))
      return hl_error("export: complex results are not supported yet in exported libraries (docs/complex.md); return "
                      "their hl.real and hl.imag parts");
  try {
    RealGraph rg(g);
    std::lock_guard<std::mutex> guard(compiler_lock);
    static QuietReporter reporter;
    set_custom_compile_time_error_reporter(&reporter);
    return hl_export_library(rg.g, ncaptures, captures, dir, name);
  } catch (const std::exception &e) {
    return hl_error("export: %s", e.what());
  }
}

extern "C" double hl_kernel_compile_ms(const hl_kernel *k) { return k->compile_ms; }

extern "C" int hl_kernel_compile_parts(const hl_kernel *k, int *jobs, int *distinct) {
  *jobs = k->jobs;
  *distinct = k->plan ? (int)k->plan->distinct().size() : 1;
  return k->plan ? (int)k->plan->parts.size() : 1;
}

extern "C" void hl_kernel_compile_phases(const hl_kernel *k, double ms[4]) {
  for (int i = 0; i < 4; i++) ms[i] = k->phase_ms[i];
}

/* k's Halide pipeline, which a kernel loaded from the disk cache lacks: g (its graph) is lowered
 * again for it, once. One pipeline only (not a cut program's). Call with the compiler lock held;
 * throws what the lowering reports. */
static void ensure_pipeline(hl_kernel *k, const hl_graph *g) {
  if (k->pipeline.defined()) return;
  RealGraph rg(g);
  k->pipeline = build_pipeline(rg.g, k->target, k->args);
}

/* Halide's lowered loop nest (stmt) or the host assembly (asm), through a temporary file. A
 * kernel loaded from the disk cache has no Halide pipeline: g is lowered again for it. */
static char *kernel_text(hl_kernel *k, const hl_graph *g, bool assembly) {
  char path[] = "/tmp/halua-text-XXXXXX";
  int fd = mkstemp(path);
  if (fd < 0) {
    hl_error("lower: cannot create a temporary file");
    return nullptr;
  }
  close(fd);
  std::string text;
  try {
    std::lock_guard<std::mutex> guard(compiler_lock);
    Target t = k->target.without_feature(Target::JIT);
    if (k->plan) {
      /* each part's, in turn; a part with an earlier part's program (its constants read from
       * buffers) runs that part's code, so it names it instead of lowering it again: a long
       * unrolled program would otherwise be lowered once per round */
      for (size_t q = 0; q < k->plan->parts.size(); q++) {
        std::string head = "# pipeline " + std::to_string(q + 1) + " of " + std::to_string(k->plan->parts.size()) + "\n";
        int same = k->plan->same_as[q];
        if (same != (int)q) {
          text += head + "(the program of pipeline " + std::to_string(same + 1) + ", compiled once)\n";
          continue;
        }
        std::vector<Argument> args;
        Pipeline p = build_pipeline(&k->plan->parts[q].g, k->target, args);
        if (assembly) p.compile_to_assembly(path, args, part_symbol((int)q), t);
        else p.compile_to_lowered_stmt(path, args, Halide::Text, t);
        std::ifstream f(path);
        std::stringstream ss;
        ss << f.rdbuf();
        text += head + ss.str();
      }
    }
    if (!k->plan) ensure_pipeline(k, g);
    if (!k->plan) {
      if (assembly) k->pipeline.compile_to_assembly(path, k->args, k->symbol, t);
      else k->pipeline.compile_to_lowered_stmt(path, k->args, Halide::Text, t);
      std::ifstream f(path);
      std::stringstream ss;
      ss << f.rdbuf();
      text = ss.str();
    }
  } catch (const std::exception &e) {
    remove(path);
    hl_error("lower: printing the pipeline failed: %s", e.what());
    return nullptr;
  }
  remove(path);
  /* a CUDA module's stmt prints its PTX buffer with the terminating NUL: drop it, or the text
   * would end there */
  text.erase(std::remove(text.begin(), text.end(), '\0'), text.end());
  return strdup(text.c_str());
}

extern "C" char *hl_kernel_stmt(hl_kernel *k, const hl_graph *g) { return kernel_text(k, g, false); }
extern "C" char *hl_kernel_asm(hl_kernel *k, const hl_graph *g) { return kernel_text(k, g, true); }

extern "C" const char *hl_kernel_ptx(hl_kernel *k, const hl_graph *g) {
  if (!k->cuda) return "";
  std::lock_guard<std::mutex> guard(compiler_lock);   /* (kernels are shared between threads) */
  if (!k->ptx_pending) return k->ptx.c_str();
  /* loaded from the disk cache, whose entry holds the PTX inside the host code: made from the
   * pipeline lowered again (the same kernels; their names' numbers may differ) */
  try {
    ensure_pipeline(k, g);
    k->ptx = module_ptx(k->pipeline.compile_to_module(k->args, k->symbol, k->target.without_feature(Target::JIT)));
    k->ptx_pending = false;
  } catch (const std::exception &e) {
    hl_error("lower: the pipeline's PTX could not be made again: %s", e.what());
    return nullptr;
  }
  return k->ptx.c_str();
}

extern "C" void hl_kernel_retain(hl_kernel *k) { k->refs.fetch_add(1, std::memory_order_relaxed); }
/* (a load first: a hot kernel's line stays shared between the threads running it) */
extern "C" void hl_kernel_note_use(hl_kernel *k) {
  if (!k->used.load(std::memory_order_relaxed)) k->used.store(true, std::memory_order_relaxed);
}
extern "C" int hl_kernel_take_use(hl_kernel *k) { return k->used.exchange(false, std::memory_order_relaxed); }

extern "C" void hl_kernel_release(hl_kernel *k) {
  if (!k || k->refs.fetch_sub(1, std::memory_order_acq_rel) != 1) return;
  std::lock_guard<std::mutex> guard(compiler_lock);   /* JIT modules release LLVM state */
  void *so = k->so;
  live_bytes -= k->bytes;
  delete k;
  hl_aot_unload(so);
}

extern "C" size_t hl_kernel_bytes(const hl_kernel *k) { return k->bytes; }

extern "C" size_t hl_kernel_live_bytes(void) { return live_bytes.load(std::memory_order_relaxed); }
