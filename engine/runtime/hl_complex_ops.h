/* Complex arithmetic composed of real primitives on the (re, im) parts (docs/complex.md): traced,
 * recorded and differentiated like any other ops, so gradients follow from view_as_real's and
 * view_as_complex's rules (lua/halua/rules.lua). */
#ifndef HL_COMPLEX_OPS_H
#define HL_COMPLEX_OPS_H
#include "hl_eval.h"

/* whether prim on complex operands is composed here (else it is a primitive's own, or an error) */
int hl_complex_composed(int prim);
/* prim over same-shaped complex operands of one dtype */
int hl_complex_apply(int prim, int nin, const hl_array *const *in, hl_array *out);
/* the matmul primitive's work on complex [..., m, k] and [..., k, n] of one dtype and batch shape:
 * four real products of the parts */
int hl_complex_matmul(const hl_array *a, const hl_array *b, hl_array *out);
/* z ** n for an integer n, |n| < 100 (NumPy's products of squares, then 1 / that for n < 0) */
int hl_complex_int_pow(const hl_array *z, int n, hl_array *out);
#endif
