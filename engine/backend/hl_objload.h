/* Relocatable objects (x86-64 ELF, what Halide's Module::compile writes for a host pipeline)
 * loaded into this process without a linker.
 *
 * A pipeline compiled ahead of time had been linked into a shared object by `ld -shared` and
 * opened with dlopen: about 3 ms of every cold compile was starting the linker, and a machine
 * without binutils could keep no pipeline on disk. The objects themselves are small and
 * position-independent: their sections are copied into one mapping, their relocations applied
 * against it, and their calls out (Halide's runtime, libm, the engine's extern stages) resolved in
 * the process's global scope, as dlopen resolved them (the runtime and the engine library are
 * loaded globally first: hl_aot.cpp).
 *
 * An image holds one or more objects (the parts of a cut program, compiled by several processes)
 * in one mapping that shares their symbols: code read and executed, constants and the slots of
 * calls out read-only, data read and written. A call or address that cannot reach its target in
 * 32 bits goes through a slot of the image (a jump through a stored address for code, a stored
 * address for a load through the GOT). Unwinding tables are not registered: nothing unwinds
 * through a pipeline (its calls out return error codes). What the loader does not handle (thread
 * locals, constructors, a relocation it does not know) fails the load with the reason, and the
 * caller compiles the pipeline in memory instead.
 *
 * Halide's runtime loads the same way (once per process, from its object compiled once per
 * machine), so no linker runs at all: its functions are the scope of every pipeline's image. */
#ifndef HL_OBJLOAD_H
#define HL_OBJLOAD_H
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct hl_objimage hl_objimage;

/* Loads n objects (objs[i] of sizes[i] bytes, each starting on 8 bytes: their tables are read in
 * place; read-only to the loader and not kept) as one image. A symbol they call is looked for in
 * the image, then in `scope` (an image loaded before, or NULL: Halide's runtime for a pipeline),
 * then in the library this loader is part of (the engine's) and what it links, then anywhere in
 * the process. NULL with the reason in why (cap bytes) when an object is malformed or
 * asks for what the loader does not do, or a symbol it calls is nowhere. Destructors
 * (.fini_array) are not run: an image lives until it is freed or the process ends. */
hl_objimage *hl_objload(const unsigned char *const *objs, const size_t *sizes, size_t n, const hl_objimage *scope, char *why,
                        size_t cap);

/* A scope of n functions that live elsewhere (names[i] at addrs[i]: code another compiler loaded,
 * such as Halide's JIT runtime), for hl_objload's `scope`; it maps nothing. The first of two
 * equal names stands, as in a search through libraries in order. NULL when out of memory. */
hl_objimage *hl_objload_functions(const char *const *names, void *const *addrs, size_t n);

/* The address of a global symbol the image's objects define, or NULL. */
void *hl_objload_symbol(const hl_objimage *im, const char *name);

/* The bytes the image maps. */
size_t hl_objload_bytes(const hl_objimage *im);

/* Appends the image's functions to perf's map of this process (/tmp/perf-PID.map: where
 * `perf report` looks for the names of code outside any file), each named "label: function";
 * 0, or -1 when the file cannot be written. */
int hl_objload_perf_map(const hl_objimage *im, const char *label);

/* Unmaps the image (nothing may still run its code). NULL is ignored. */
void hl_objload_free(hl_objimage *im);

#ifdef __cplusplus
}
#endif
#endif
