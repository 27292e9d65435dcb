/* hl.export: a traced function as a standalone C library (NAME.h, libNAME.a, libNAME.so) that
 * needs no Lua, LLVM or Halide compiler to run. The trace's concrete captures are embedded in the
 * library as constant data; its arguments and outputs are plain contiguous row-major arrays. */
#ifndef HL_EXPORT_H
#define HL_EXPORT_H
#include "hl_eval.h"

/* Writes the library for t's graph pruned to `outputs` (tracers of t) into dir (created if
 * missing), replacing the three files of an earlier export of `name` only once all three are
 * made. name must be a C identifier. 0, or -1 with hl_error. */
int hl_export_trace(hl_trace *t, int nout, const hl_array *const *outputs, const char *dir, const char *name);
#endif
