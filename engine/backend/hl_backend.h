/* The Halide backend behind a C ABI: compile a graph into a kernel, run it on arrays.
 * Nothing here throws or aborts: failures return NULL/-1 after hl_error(). */
#ifndef HL_BACKEND_H
#define HL_BACKEND_H
#ifdef __cplusplus
extern "C" {
#endif
#include "hl_hooks.h"
#include "hl_ir.h"

typedef struct hl_kernel hl_kernel;


/* Compile a pruned graph for its device. In a dynamic graph the PARAM attribute i[1] tells
 * the innermost stride of that input: 0 unit stride, 1 broadcast (stride 0), 2 any. With
 * kernel_file, ahead of time into object code there (a temporary file of the disk cache), which
 * is then loaded; otherwise JIT. */
hl_kernel *hl_kernel_compile(const hl_graph *g, const char *name, const char *kernel_file);
/* What the disk cache's key for g holds besides its IR (Halide's library, the target, halua's
 * build), to free; NULL when g's pipeline cannot live on disk (a CUDA pipeline, one with
 * compiled loops, or no usable cache directory or runtime: then warned once). */
char *hl_kernel_disk_signature(const hl_graph *g);
/* The kernel for g from a kernel's file (a disk cache entry's bytes, size of them: read only). */
hl_kernel *hl_kernel_load(const hl_graph *g, const char *name, const void *file, size_t size);
/* Run with one array per PARAM and one contiguous, allocated array per output. */
int hl_kernel_run(hl_kernel *k, const hl_array *const *inputs, hl_array *const *outputs);
/* The same for a kernel whose parameters and outputs are all rank 1 and real (at most
 * HL_FLAT_MAX_BUFFERS of them), of count elements each, on the host: data holds each one's first
 * element (the parameters', then the outputs'), dtypes their dtypes, and bit j of broadcast says that buffer j is one value read at every
 * index. What an eager elementwise op runs (hl_eval.c): no views to make and read back. */
enum { HL_FLAT_MAX_BUFFERS = 8 };
int hl_kernel_run_flat(hl_kernel *k, int64_t count, const hl_dtype *dtypes, void *const *data, unsigned broadcast);
double hl_kernel_compile_ms(const hl_kernel *k);
/* Where a compile's time went, in ms: halua's lowering and schedule, Halide's lowering, LLVM
 * (optimising and generating code), linking and loading (ahead-of-time kernels). */
void hl_kernel_compile_phases(const hl_kernel *k, double ms[4]);
/* The pipelines a kernel was cut into (hl_partition.h; 1 when whole), in *distinct how many of
 * them are distinct programs (each compiled once), and in *jobs the processes that compiled them
 * at once (hl_compile_jobs.h; 1: this one, one after another). */
int hl_kernel_compile_parts(const hl_kernel *k, int *jobs, int *distinct);
/* Halide's lowered loop nest as text (caller frees), or NULL + hl_error; g is the kernel's
 * graph (lowered again for a kernel loaded from the disk cache). */
char *hl_kernel_stmt(hl_kernel *k, const hl_graph *g);
/* The host assembly, the same way. */
char *hl_kernel_asm(hl_kernel *k, const hl_graph *g);
/* A CUDA kernel's device code (PTX), "" for host kernels; g as for hl_kernel_stmt (a kernel
 * loaded from the disk cache lowers it again, once: the same kernels, though the numbers in their
 * names may differ from the loaded code's). NULL + hl_error when that fails. */
const char *hl_kernel_ptx(hl_kernel *k, const hl_graph *g);
/* Kernels are shared (the cache's entry, programs, a running eager op): each holder retains
 * one reference and releases it; the last release frees the kernel and its code. A new kernel
 * holds one reference. */
void hl_kernel_retain(hl_kernel *k);
void hl_kernel_release(hl_kernel *k);
/* Marks k used (by an eager op that found it in its memo, not through the cache), and reads and
 * clears the mark: the cache's eviction gives a marked kernel a second chance (hl_cache.c). */
void hl_kernel_note_use(hl_kernel *k);
int hl_kernel_take_use(hl_kernel *k);
/* The memory the kernel keeps, in bytes (measured when it was made): the cache's bound counts it. */
size_t hl_kernel_bytes(const hl_kernel *k);
/* The bytes of every kernel not yet freed: cached, or held by programs only. */
size_t hl_kernel_live_bytes(void);

/* hl.export's library (see engine/runtime/hl_export.h) for g, a CPU graph whose PARAMs are its
 * arguments and then `ncaptures` constants given here (contiguous, on the host). */
int hl_kernel_export(const hl_graph *g, int ncaptures, const hl_array *captures, const char *dir, const char *name);

/* Whether cuBLAS reads this view in place (hl_cublas.cpp); the engine copies the others. */
int hl_cublas_layout_ok(const int64_t *shape, const int64_t *strides, int ndim);

enum { HL_STRIDE_UNIT = 0, HL_STRIDE_ZERO = 1, HL_STRIDE_ANY = 2 };

#ifdef __cplusplus
}
#endif
#endif
