#include "hl_complex_ops.h"
#include "hl_complex_funcs.h"
#include "hl_error.h"

int hl_complex_composed(int prim) {
  switch (prim) {
  case HL_P_MUL: case HL_P_DIV: case HL_P_RECIPROCAL: case HL_P_SQUARE: case HL_P_EXP: case HL_P_LOG:
  case HL_P_SQRT: case HL_P_ABS: case HL_P_EQ: case HL_P_NE: case HL_P_SIN: case HL_P_COS: case HL_P_TAN:
  case HL_P_SINH: case HL_P_COSH: case HL_P_TANH: case HL_P_ISNAN: case HL_P_ISINF: case HL_P_ISFINITE:
  case HL_P_LT: case HL_P_LE: case HL_P_GT: case HL_P_GE: case HL_P_MAXIMUM: case HL_P_MINIMUM:
    return 1;
  default: return hl_complex_func_composed(prim);
  }
}

#define OP(p, a, b) hl_cx_op(&A, HL_P_##p, a, b)
#define OPN(p, a, v) hl_cx_opn(&A, HL_P_##p, a, v)
#define SEL(c, a, b) hl_cx_sel(&A, c, a, b)

/* tanh(a + ib) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b); past |a| = 20 that is sign(a) + 0i to
 * working precision, where cosh 2a would overflow to inf / inf. tan z = -i tanh(iz). */
static hl_cx tanh_of(hl_cx_arena *A, hl_cx z, int tan) {
  const hl_array *x = tan ? hl_cx_op(A, HL_P_NEG, z.im, NULL) : z.re, *y = tan ? z.re : z.im;   /* iz = -b + ia */
  const hl_array *x2 = hl_cx_opn(A, HL_P_MUL, x, 2), *y2 = hl_cx_opn(A, HL_P_MUL, y, 2);
  const hl_array *d = hl_cx_op(A, HL_P_ADD, hl_cx_op(A, HL_P_COSH, x2, NULL), hl_cx_op(A, HL_P_COS, y2, NULL));
  const hl_array *far = hl_cx_opn(A, HL_P_GT, hl_cx_op(A, HL_P_ABS, x, NULL), 20);
  const hl_array *re = hl_cx_sel(A, far, hl_cx_op(A, HL_P_SIGN, x, NULL), hl_cx_op(A, HL_P_DIV, hl_cx_op(A, HL_P_SINH, x2, NULL), d));
  const hl_array *im = hl_cx_sel(A, far, hl_cx_opn(A, HL_P_MUL, y, 0), hl_cx_op(A, HL_P_DIV, hl_cx_op(A, HL_P_SIN, y2, NULL), d));
  /* -i (re + i im) = im - i re */
  return tan ? (hl_cx){im, hl_cx_op(A, HL_P_NEG, re, NULL)} : (hl_cx){re, im};
}

/* NumPy's order of complex numbers (its CLT, CLE, CGT, CGE): by real part unless an imaginary part
 * is NaN, then by imaginary part at equal real parts */
static const hl_array *order(hl_cx_arena *A, int prim, hl_cx a, hl_cx b) {
  const hl_array *nan = hl_cx_op(A, HL_P_LOGICAL_OR, hl_cx_op(A, HL_P_ISNAN, a.im, NULL), hl_cx_op(A, HL_P_ISNAN, b.im, NULL));
  int strict = prim == HL_P_LT ? HL_P_LT : prim == HL_P_LE ? HL_P_LT : HL_P_GT;
  const hl_array *by_re = hl_cx_op(A, HL_P_LOGICAL_AND, hl_cx_op(A, strict, a.re, b.re), hl_cx_op(A, HL_P_LOGICAL_NOT, nan, NULL));
  const hl_array *by_im = hl_cx_op(A, HL_P_LOGICAL_AND, hl_cx_op(A, HL_P_EQ, a.re, b.re), hl_cx_op(A, prim, a.im, b.im));
  return hl_cx_op(A, HL_P_LOGICAL_OR, by_re, by_im);
}

/* NumPy's maximum (minimum): a where a has a NaN part or a >= b (a <= b), else b */
static hl_cx extreme(hl_cx_arena *A, int prim, hl_cx a, hl_cx b) {
  const hl_array *nan = hl_cx_op(A, HL_P_LOGICAL_OR, hl_cx_op(A, HL_P_ISNAN, a.re, NULL), hl_cx_op(A, HL_P_ISNAN, a.im, NULL));
  const hl_array *keep = hl_cx_op(A, HL_P_LOGICAL_OR, nan, order(A, prim == HL_P_MAXIMUM ? HL_P_GE : HL_P_LE, a, b));
  return hl_cx_selz(A, keep, a, b);
}

int hl_complex_apply(int prim, int nin, const hl_array *const *in, hl_array *out) {
  hl_cx_arena A = {0};
  hl_cx a = hl_cx_parts(&A, in[0]), b = {NULL, NULL};
  if (nin == 2) b = hl_cx_parts(&A, in[1]);
  int rc = -1;
  switch (prim) {
  case HL_P_MUL: rc = hl_cx_make(&A, hl_cx_mul(&A, a, b), out); break;
  case HL_P_SQUARE:
    rc = hl_cx_make(&A, (hl_cx){OP(SUB, OP(MUL, a.re, a.re), OP(MUL, a.im, a.im)), OPN(MUL, OP(MUL, a.re, a.im), 2)}, out);
    break;
  case HL_P_DIV: rc = hl_cx_make(&A, hl_cx_div(&A, a, b), out); break;
  case HL_P_RECIPROCAL:
    rc = hl_cx_make(&A, hl_cx_div(&A, (hl_cx){hl_cx_num(&A, a.re, 1), hl_cx_num(&A, a.re, 0)}, a), out);
    break;
  case HL_P_EXP: rc = hl_cx_make(&A, hl_cx_exp(&A, a), out); break;
  case HL_P_ABS: rc = hl_cx_done(hl_cx_abs(&A, a), out); break;
  case HL_P_LOG: rc = hl_cx_make(&A, hl_cx_log(&A, a), out); break;
  case HL_P_SQRT: rc = hl_cx_make(&A, hl_cx_sqrt(&A, a), out); break;
  case HL_P_SIN:   /* sin a cosh b + i cos a sinh b */
    rc = hl_cx_make(&A, (hl_cx){OP(MUL, OP(SIN, a.re, NULL), OP(COSH, a.im, NULL)), OP(MUL, OP(COS, a.re, NULL), OP(SINH, a.im, NULL))}, out);
    break;
  case HL_P_COS:   /* cos a cosh b - i sin a sinh b */
    rc = hl_cx_make(&A, (hl_cx){OP(MUL, OP(COS, a.re, NULL), OP(COSH, a.im, NULL)),
                                OP(NEG, OP(MUL, OP(SIN, a.re, NULL), OP(SINH, a.im, NULL)), NULL)}, out);
    break;
  case HL_P_SINH:   /* sinh a cos b + i cosh a sin b */
    rc = hl_cx_make(&A, (hl_cx){OP(MUL, OP(SINH, a.re, NULL), OP(COS, a.im, NULL)), OP(MUL, OP(COSH, a.re, NULL), OP(SIN, a.im, NULL))}, out);
    break;
  case HL_P_COSH:   /* cosh a cos b + i sinh a sin b */
    rc = hl_cx_make(&A, (hl_cx){OP(MUL, OP(COSH, a.re, NULL), OP(COS, a.im, NULL)), OP(MUL, OP(SINH, a.re, NULL), OP(SIN, a.im, NULL))}, out);
    break;
  case HL_P_TANH:
  case HL_P_TAN: rc = hl_cx_make(&A, tanh_of(&A, a, prim == HL_P_TAN), out); break;
  case HL_P_ISNAN: rc = hl_cx_done(OP(LOGICAL_OR, OP(ISNAN, a.re, NULL), OP(ISNAN, a.im, NULL)), out); break;
  case HL_P_ISINF: rc = hl_cx_done(OP(LOGICAL_OR, OP(ISINF, a.re, NULL), OP(ISINF, a.im, NULL)), out); break;
  case HL_P_ISFINITE: rc = hl_cx_done(OP(LOGICAL_AND, OP(ISFINITE, a.re, NULL), OP(ISFINITE, a.im, NULL)), out); break;
  case HL_P_EQ: rc = hl_cx_done(OP(LOGICAL_AND, OP(EQ, a.re, b.re), OP(EQ, a.im, b.im)), out); break;
  case HL_P_NE: rc = hl_cx_done(OP(LOGICAL_OR, OP(NE, a.re, b.re), OP(NE, a.im, b.im)), out); break;
  case HL_P_LT: case HL_P_LE: case HL_P_GT: case HL_P_GE: rc = hl_cx_done(order(&A, prim, a, b), out); break;
  case HL_P_MAXIMUM: case HL_P_MINIMUM: rc = hl_cx_make(&A, extreme(&A, prim, a, b), out); break;
  default: rc = hl_complex_func(&A, prim, a, b, out);
  }
  hl_cx_drop(&A);
  return rc;
}

int hl_complex_matmul(const hl_array *a, const hl_array *b, hl_array *out) {
  hl_cx_arena A = {0};
  hl_cx x = hl_cx_parts(&A, a), y = hl_cx_parts(&A, b);
#define MM(p, q) OP(MATMUL, p, q)
  int rc = hl_cx_make(&A, (hl_cx){OP(SUB, MM(x.re, y.re), MM(x.im, y.im)), OP(ADD, MM(x.re, y.im), MM(x.im, y.re))}, out);
#undef MM
  hl_cx_drop(&A);
  return rc;
}
