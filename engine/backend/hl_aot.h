/* Pipelines compiled ahead of time into object code (the disk cache's entries,
 * engine/core/hl_disk.h) and loaded without a linker (hl_objload.h). Host pipelines call one
 * Halide runtime compiled once per machine (itself an entry of the cache, loaded the same way)
 * instead of the JIT runtime that Halide builds in every process (~300 ms). CUDA pipelines (their
 * host code, with the PTX inside) call the JIT's runtime and its CUDA module, which the engine's
 * device buffers belong to (hl_device.cpp) and which a GPU process builds anyway. Calls go through
 * the pipeline's argv entry point, as for JIT kernels.
 *
 * A kernel's file holds its objects one after another: a header ("HLOBJS01", their count), each
 * one's size, then the objects, each starting on 16 bytes; the disk store's trailer follows. */
#ifndef HL_AOT_H
#define HL_AOT_H
#include "Halide.h"
#include <string>
#include <vector>

typedef int (*hl_aot_entry)(void **args);

/* The runtime that pipelines for target t call, ready: for the host, compiled (first use on this
 * machine) or loaded, with the engine's handlers for errors, allocation and parallel loops; for
 * CUDA, the JIT's. False and why when it cannot be had (then kernels for t are JIT-compiled as
 * before). Call with the compiler lock held. */
bool hl_aot_ready(const Halide::Target &t, std::string &why);

/* The engine's handlers for the loaded runtime (hl_backend.cpp, which owns a run's context:
 * the user context every runtime call passes). */
void hl_backend_runtime_error(void *uc, const char *msg);
void *hl_backend_runtime_malloc(void *uc, size_t n);
void hl_backend_runtime_free(void *uc, void *p);
int hl_backend_runtime_par_for(void *uc, int (*f)(void *, int, uint8_t *), int min, int extent, uint8_t *closure);

/* What a disk key holds besides the IR: Halide's library, the target, halua's build and what
 * else the lowering reads (HALUA_FUSED_MATMUL, the core count; a CUDA graph's key adds whether
 * cuBLAS and cuFFT serve the process: hl_kernel_disk_signature). */
std::string hl_aot_signature(const Halide::Target &t);

/* No more ahead-of-time kernels for t's runtime in this process (hl_aot_ready says no, with why). */
void hl_aot_disable(const Halide::Target &t, const char *why);

/* Compiles m (whose function is `symbol`) to an object, written as a kernel's file at kernel_file,
 * and loads it against the runtime of m's target, adding the time LLVM took and the time writing
 * and loading took to *llvm_ms and *link_ms; on a failure, warns and disables ahead-of-time
 * kernels for that runtime in the process. *handle is the image, for hl_aot_unload when the
 * kernel is freed. */
hl_aot_entry hl_aot_compile(const Halide::Module &m, const std::string &symbol, const char *kernel_file, double *llvm_ms,
                            double *link_ms, void **handle);

/* The same from object files already compiled for target t (Module::compile, the NoRuntime
 * target): writes them as one kernel's file at kernel_file and loads them as one image (the
 * objects are the caller's to remove). With disable_on_failure false a failure is the caller's
 * to handle (NULL, nothing said). */
hl_aot_entry hl_aot_load_objects(const std::vector<std::string> &objs, const std::string &symbol, const char *kernel_file,
                                 const Halide::Target &t, double *link_ms, void **handle, bool disable_on_failure = true);

/* Loads a kernel's file (size bytes at file, a disk entry's: read only, not kept) against the
 * runtime of target t; NULL with hl_error when it is not one or has no `symbol`. */
hl_aot_entry hl_aot_load(const void *file, size_t size, const std::string &symbol, const Halide::Target &t, void **handle);
/* Another function of an object hl_aot_load or hl_aot_compile loaded; NULL when it has none. */
hl_aot_entry hl_aot_symbol(void *handle, const std::string &symbol);
/* With HALUA_PERF_MAP=1, names the image's functions for perf ("NAME: function" in
 * /tmp/perf-PID.map, hl_objload_perf_map); nothing otherwise. Call with the compiler lock held. */
void hl_aot_describe(void *handle, const std::string &name);
/* The bytes a loaded image maps (0 for NULL). */
size_t hl_aot_bytes(void *handle);
/* Unloads what hl_aot_load loaded (its code is unmapped: nothing may still run it). */
void hl_aot_unload(void *handle);

#endif
