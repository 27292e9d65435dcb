/* Sorting along one axis on the host: a stable merge sort of each lane (NumPy's kind="stable"),
 * NaN after everything else as in NumPy. Eager sort/argsort call it directly; jit pipelines call
 * it from an extern stage (engine/backend/extern/hl_extern_sort.cpp), as they do LAPACK: a sorting
 * network written in Halide compiled for minutes. */
#ifndef HL_SORT_H
#define HL_SORT_H
#include "hl_array.h"

/* x any dtype, out: x's shape except along `axis` (0-based), where it holds positions
 * start .. start+m-1 of each sorted lane: the values (arg = 0, out of x's dtype) or their 0-based
 * indices in x (arg = 1, out int64). Strided host views. -1 + hl_error on failure. */
int hl_sort_into(const hl_array *x, int axis, int arg, hl_array *out, int64_t start);
#endif
