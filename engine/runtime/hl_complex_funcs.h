/* The complex functions past arithmetic (docs/complex.md): pow, sign, expm1, log1p and the
 * inverse trigonometric functions, composed of real primitives on the parts with the toolkit of
 * hl_complex_kit.h. Branch cuts and special values are NumPy's (C99's). */
#ifndef HL_COMPLEX_FUNCS_H
#define HL_COMPLEX_FUNCS_H
#include "hl_complex_kit.h"

/* whether prim on complex operands is one of these */
int hl_complex_func_composed(int prim);
/* prim of a (and b for pow, a ** b) into out; temporaries in A */
int hl_complex_func(hl_cx_arena *A, int prim, hl_cx a, hl_cx b, hl_array *out);
#endif
