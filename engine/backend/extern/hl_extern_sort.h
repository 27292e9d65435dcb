/* Sorting as a Halide extern stage of CPU pipelines: hl_stage_sort(X, dim, n, arg, Out) sorts each
 * lane of X along Halide dimension `dim` (of extent n) with engine/host/hl_sort.c and writes the
 * values (arg = 0) or their 0-based int64 positions (arg = 1). */
#ifndef HL_EXTERN_SORT_H
#define HL_EXTERN_SORT_H
#include <HalideRuntime.h>

extern "C" int hl_stage_sort(halide_buffer_t *X, int dim, int n, int arg, halide_buffer_t *out);
#endif
