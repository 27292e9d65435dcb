/* Polymorphic programs (hl.jit's dynamic_axes; engine/core/hl_symbolic.h has the affine fit):
 * one program built from traces of a function at made-up sizes, and the checks that a call's
 * sizes are ones it serves.
 *
 * A compiled loop records a loop of its own in each trace (engine/runtime/hl_loop.h). The loops
 * at one place in the traces become one polymorphic loop: its inputs' and results' extents
 * affine forms of the program's symbols, its body (and condition) fitted the same way, with the
 * symbols that reach it as axes of its own arrays (a carry of b rows, a value of the enclosing
 * program). */
#ifndef HL_POLY_H
#define HL_POLY_H
#include "hl_eval.h"

/* A polymorphic program from traces[0..nsym+1] of one function at the symbols' sizes[t] (base,
 * each symbol moved, all moved), outputs[t] their results; symbol j is argument array param[j]'s
 * numpy axis axis[j]. 0 when built; 1 when the function is not polymorphic at these sizes (the
 * reason in why; p untouched); -1 + hl_error. */
int hl_program_build_symbolic(hl_trace *const *traces, const hl_array *const *const *outputs, int nout, int nsym,
                              const int64_t sizes[][HL_MAX_SYMS], const int *param, const int *axis, const char *name,
                              hl_program *p, char *why, size_t nwhy);
/* Whether p serves these arguments' shapes: 1; 0 for a polymorphic program called at sizes it does
 * not serve (a size of 0, one divided by 2 at an odd size, a slice reaching outside), with why;
 * -1 + hl_error. */
int hl_program_serves(const hl_program *p, int nargs, const hl_array *const *args, char *why, size_t nwhy);
/* Whether the polymorphic program p is what t (the function traced at these arguments' own sizes,
 * outputs its results) compiles to, its compiled loops included: 1; 0 with why (then t is
 * compiled for these sizes instead); -1 + hl_error. */
int hl_program_matches(const hl_program *p, hl_trace *t, int nout, const hl_array *const *outputs, int nargs,
                       const hl_array *const *args, char *why, size_t nwhy);
#endif
