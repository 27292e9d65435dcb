/* The toolkit complex compositions are written with (hl_complex_ops.c, hl_complex_funcs.c): real
 * primitives applied to the (re, im) parts of complex operands through hl_apply, so the results
 * trace, record on tapes, differentiate and batch like any ops. Temporaries live in an arena that
 * is released together. Every helper passes on NULL operands (an error is recorded already) as
 * NULL, so a composition is written as nested calls and checked once at the end.
 *
 * Where a composition selects between branches, each branch's operands are made safe for the
 * elements it does not serve (a divisor of 1, a log of 1): a select sends a zero cotangent to the
 * unused branch, and 0 times an infinite partial derivative would still be NaN. */
#ifndef HL_COMPLEX_KIT_H
#define HL_COMPLEX_KIT_H
#include "hl_eval.h"

enum { HL_CX_BLOCK = 64, HL_CX_BLOCKS = 16 };

typedef struct {
  hl_array *block[HL_CX_BLOCKS];   /* blocks of HL_CX_BLOCK temporaries: pointers stay valid */
  int n;
} hl_cx_arena;

/* a complex value as its two real parts (same shape and real dtype) */
typedef struct {
  const hl_array *re, *im;
} hl_cx;

void hl_cx_drop(hl_cx_arena *A);
/* prim(a) or prim(a, b) on real arrays of one shape and dtype */
const hl_array *hl_cx_op(hl_cx_arena *A, int prim, const hl_array *a, const hl_array *b);
/* prim(a, v): v a number of a's dtype, broadcast to a's shape */
const hl_array *hl_cx_opn(hl_cx_arena *A, int prim, const hl_array *a, double v);
/* the number v as an array like a (a's dtype and shape) */
const hl_array *hl_cx_num(hl_cx_arena *A, const hl_array *like, double v);
/* where(c, a, b) */
const hl_array *hl_cx_sel(hl_cx_arena *A, const hl_array *c, const hl_array *a, const hl_array *b);
hl_cx hl_cx_selz(hl_cx_arena *A, const hl_array *c, hl_cx a, hl_cx b);
/* whether x's sign bit is set: true for -0 and -inf too, as C's signbit (branch cuts follow it) */
const hl_array *hl_cx_signbit(hl_cx_arena *A, const hl_array *x);
/* the parts of the complex array z; the complex array re + i im into out (0, or -1 after an error) */
hl_cx hl_cx_parts(hl_cx_arena *A, const hl_array *z);
int hl_cx_make(hl_cx_arena *A, hl_cx z, hl_array *out);
/* r (a real result) into out */
int hl_cx_done(const hl_array *r, hl_array *out);

/* complex functions on parts */
hl_cx hl_cx_add(hl_cx_arena *A, hl_cx a, hl_cx b);
hl_cx hl_cx_mul(hl_cx_arena *A, hl_cx a, hl_cx b);
/* Smith's algorithm (NumPy's), with NumPy's a / 0: the parts of a times inf */
hl_cx hl_cx_div(hl_cx_arena *A, hl_cx a, hl_cx b);
/* |z| without overflow or underflow of the squares (as hypot); inf where a part is inf */
const hl_array *hl_cx_abs(hl_cx_arena *A, hl_cx z);
hl_cx hl_cx_exp(hl_cx_arena *A, hl_cx z);
/* principal branches, the cut on the negative real axis taking the side of im's sign bit */
hl_cx hl_cx_log(hl_cx_arena *A, hl_cx z);
hl_cx hl_cx_sqrt(hl_cx_arena *A, hl_cx z);
/* the real asinh, accurate near 0 and without overflow for large |t| */
const hl_array *hl_cx_asinh_real(hl_cx_arena *A, const hl_array *t);
#endif
