#include "hl_complex_funcs.h"
#include "hl_complex_ops.h"
#include "hl_error.h"
#include <math.h>

int hl_complex_func_composed(int prim) {
  switch (prim) {
  case HL_P_POW: case HL_P_SIGN: case HL_P_EXPM1: case HL_P_LOG1P: case HL_P_ASIN: case HL_P_ACOS: case HL_P_ATAN:
    return 1;
  default: return 0;
  }
}

#define OP(p, a, b) hl_cx_op(A, HL_P_##p, a, b)
#define OPN(p, a, v) hl_cx_opn(A, HL_P_##p, a, v)
#define SEL(c, a, b) hl_cx_sel(A, c, a, b)
#define AND(a, b) OP(LOGICAL_AND, a, b)

static hl_cx num(hl_cx_arena *A, const hl_array *like, double re, double im) {
  return (hl_cx){hl_cx_num(A, like, re), hl_cx_num(A, like, im)};
}

static const hl_array *is_zero(hl_cx_arena *A, hl_cx z) { return AND(OPN(EQ, z.re, 0), OPN(EQ, z.im, 0)); }

static hl_cx swap(hl_cx z) { return (hl_cx){z.im, z.re}; }

/* NumPy's a ** b for an array b: 1 where b is 0 (whatever a is); at a = 0, 0 where re b > 0
 * (|0 ** b| = 0 there: NumPy 2's rule; NumPy 1 gave NaN unless b was real) and NaN for any other b; else exp(b log a) (glibc's cpow, which NumPy calls but for integer b,
 * where it multiplies: hl_complex_int_pow does that for a Lua number b). a = 0 takes the log of
 * 1 instead: the select's unused branch must not be -inf, or its zero cotangent would make NaN. */
static hl_cx c_pow(hl_cx_arena *A, hl_cx a, hl_cx b) {
  const hl_array *a0 = is_zero(A, a), *b0 = is_zero(A, b);
  hl_cx one = num(A, a.re, 1, 0);
  hl_cx e = hl_cx_exp(A, hl_cx_mul(A, b, hl_cx_log(A, hl_cx_selz(A, a0, one, a))));
  /* exp(0 log a) is 1 already for finite a != 0, and its derivative in b there is log a */
  const hl_array *fin = AND(OP(ISFINITE, a.re, NULL), OP(ISFINITE, a.im, NULL));
  hl_cx at0 = hl_cx_selz(A, b0, one, hl_cx_selz(A, OPN(GT, b.re, 0), num(A, a.re, 0, 0), num(A, a.re, NAN, NAN)));
  return hl_cx_selz(A, a0, at0, hl_cx_selz(A, AND(b0, OP(LOGICAL_NOT, fin, NULL)), one, e));
}

int hl_complex_int_pow(const hl_array *z, int n, hl_array *out) {
  hl_cx_arena arena = {0}, *A = &arena;
  hl_cx a = hl_cx_parts(A, z), acc = {NULL, NULL}, one = num(A, a.re, 1, 0);
  int rc = -1;
  if (n == 0) {
    rc = hl_cx_make(A, one, out);
  } else {
    /* NumPy's products: the squares a^(2^k) times one another for the bits of |n| */
    unsigned m = (unsigned)(n < 0 ? -n : n);
    for (hl_cx p = a; m; m >>= 1) {
      if (m & 1) acc = acc.re ? hl_cx_mul(A, acc, p) : p;
      if (m > 1) p = hl_cx_mul(A, p, p);
    }
    rc = hl_cx_make(A, n < 0 ? hl_cx_div(A, one, acc) : acc, out);
  }
  hl_cx_drop(A);
  return rc;
}

/* z / |z|, 0 at 0 (NumPy 2's sign; NumPy 1 took the sign of the first non-zero part) */
static hl_cx c_sign(hl_cx_arena *A, hl_cx z) {
  const hl_array *m = hl_cx_abs(A, z), *zero = OPN(EQ, m, 0);
  const hl_array *ms = SEL(zero, hl_cx_num(A, m, 1), m), *z0 = hl_cx_num(A, m, 0);
  /* at 0: 0 / 1 of a 0 that is not z's part, so that the derivative there is 0 */
  return (hl_cx){OP(DIV, SEL(zero, z0, z.re), ms), OP(DIV, SEL(zero, z0, z.im), ms)};
}

/* NumPy's: e^x cos y - 1 = expm1(x) cos y - 2 sin^2(y/2), which keeps the small parts */
static hl_cx c_expm1(hl_cx_arena *A, hl_cx z) {
  const hl_array *s = OP(SIN, OPN(MUL, z.im, 0.5), NULL);
  return (hl_cx){OP(SUB, OP(MUL, OP(EXPM1, z.re, NULL), OP(COS, z.im, NULL)), OPN(MUL, OP(MUL, s, s), 2)),
                 OP(MUL, OP(EXP, z.re, NULL), OP(SIN, z.im, NULL))};
}

/* log(1 + z) = log|1 + z| + i atan2(y, 1 + x). Near 0, log|1 + z| = log1p(x (2 + x) + y^2) / 2
 * keeps the small parts that 1 + z would round away (NumPy's log(hypot(1 + x, y)) does not);
 * elsewhere log|1 + z| as log's. */
static hl_cx c_log1p(hl_cx_arena *A, hl_cx z) {
  const hl_array *near = AND(OPN(LT, OP(ABS, z.re, NULL), 0.5), OPN(LT, OP(ABS, z.im, NULL), 0.5));
  const hl_array *zero = hl_cx_num(A, z.re, 0), *x1 = OPN(ADD, z.re, 1);
  const hl_array *xs = SEL(near, z.re, zero), *ys = SEL(near, z.im, zero);
  const hl_array *small = OPN(MUL, OP(LOG1P, OP(ADD, OP(MUL, xs, OPN(ADD, xs, 2)), OP(MUL, ys, ys)), NULL), 0.5);
  const hl_array *large = OP(LOG, hl_cx_abs(A, (hl_cx){SEL(near, hl_cx_num(A, z.re, 1), x1), SEL(near, zero, z.im)}), NULL);
  return (hl_cx){SEL(near, small, large), OP(ATAN2, z.im, x1)};
}

/* Kahan's formulas ("Branch cuts for complex elementary functions", 1987), accurate everywhere
 * and on the right side of each cut by the sign of zero: with s = sqrt(1 - z), t = sqrt(1 + z)
 * (1 - z as (1 - x) - iy, so that -0 stays -0),
 *   asin z = atan2(x, Re(s t)) + i asinh(Im(conj(s) t)),
 *   acos z = 2 atan2(Re s, Re t) + i asinh(Im(conj(t) s)). */
static hl_cx asin_acos(hl_cx_arena *A, hl_cx z, int acos) {
  hl_cx s = hl_cx_sqrt(A, (hl_cx){hl_cx_op(A, HL_P_SUB, hl_cx_num(A, z.re, 1), z.re), OP(NEG, z.im, NULL)});
  hl_cx t = hl_cx_sqrt(A, (hl_cx){OPN(ADD, z.re, 1), z.im});
  if (acos)
    return (hl_cx){OPN(MUL, OP(ATAN2, s.re, t.re), 2), hl_cx_asinh_real(A, OP(SUB, OP(MUL, t.re, s.im), OP(MUL, t.im, s.re)))};
  return (hl_cx){OP(ATAN2, z.re, OP(SUB, OP(MUL, s.re, t.re), OP(MUL, s.im, t.im))),
                 hl_cx_asinh_real(A, OP(SUB, OP(MUL, s.re, t.im), OP(MUL, s.im, t.re)))};
}

/* atanh z = log1p(4x / ((1 - x)^2 + y^2)) / 4 + i atan2(2y, (1 - x)(1 + x) - y^2) / 2 (Kahan's);
 * atan z is swap(atanh(swap z)) with swap(x + iy) = y + ix (C99's identity, as FreeBSD's) */
static hl_cx c_atanh(hl_cx_arena *A, hl_cx z) {
  const hl_array *x1 = hl_cx_op(A, HL_P_SUB, hl_cx_num(A, z.re, 1), z.re), *y2 = OP(MUL, z.im, z.im);
  const hl_array *d = OP(ADD, OP(MUL, x1, x1), y2);
  /* past the squares' range, Re atanh z is Re(1/z) = x / |z|^2 to working precision */
  const hl_array *m = hl_cx_abs(A, z), *far = OPN(GT, m, z.re && z.re->dtype == HL_FLOAT32 ? 1e18 : 1e150);
  const hl_array *ms = SEL(far, m, hl_cx_num(A, m, 1));
  return (hl_cx){SEL(far, OP(DIV, OP(DIV, z.re, ms), ms), OPN(MUL, OP(LOG1P, OP(DIV, OPN(MUL, z.re, 4), d), NULL), 0.25)),
                 OPN(MUL, OP(ATAN2, OPN(MUL, z.im, 2), OP(SUB, OP(MUL, x1, OPN(ADD, z.re, 1)), y2)), 0.5)};
}

int hl_complex_func(hl_cx_arena *A, int prim, hl_cx a, hl_cx b, hl_array *out) {
  switch (prim) {
  case HL_P_POW: return hl_cx_make(A, c_pow(A, a, b), out);
  case HL_P_SIGN: return hl_cx_make(A, c_sign(A, a), out);
  case HL_P_EXPM1: return hl_cx_make(A, c_expm1(A, a), out);
  case HL_P_LOG1P: return hl_cx_make(A, c_log1p(A, a), out);
  case HL_P_ASIN: return hl_cx_make(A, asin_acos(A, a, 0), out);
  case HL_P_ACOS: return hl_cx_make(A, asin_acos(A, a, 1), out);
  case HL_P_ATAN: return hl_cx_make(A, swap(c_atanh(A, swap(a))), out);
  default: return hl_error("%s: internal: no complex composition", hl_prims[prim].name);
  }
}
