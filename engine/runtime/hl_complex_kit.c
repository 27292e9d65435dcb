#include "hl_complex_kit.h"
#include "hl_error.h"
#include <math.h>
#include <stdlib.h>
#include <string.h>

void hl_cx_drop(hl_cx_arena *A) {
  for (int k = 0; k < A->n; k++) hl_array_release(&A->block[k / HL_CX_BLOCK][k % HL_CX_BLOCK]);
  for (int b = 0; b < HL_CX_BLOCKS; b++) free(A->block[b]);
  memset(A, 0, sizeof *A);
}

/* a slot for the next temporary, NULL (recorded) when the arena is full */
static hl_array *slot(hl_cx_arena *A) {
  int b = A->n / HL_CX_BLOCK;
  if (b >= HL_CX_BLOCKS) {
    hl_error("complex: internal: too many temporaries in one composition");
    return NULL;
  }
  if (!A->block[b] && !(A->block[b] = malloc(sizeof(hl_array) * HL_CX_BLOCK))) {
    hl_error("complex: out of memory");
    return NULL;
  }
  return &A->block[b][A->n % HL_CX_BLOCK];
}

/* apply prim and keep its result in the arena */
static const hl_array *apply(hl_cx_arena *A, int prim, int nin, const hl_array *const *in, const hl_attrs *at) {
  hl_array *r = slot(A);
  if (!r || hl_apply(prim, nin, in, at, r)) return NULL;
  A->n++;
  return r;
}

const hl_array *hl_cx_op(hl_cx_arena *A, int prim, const hl_array *a, const hl_array *b) {
  if (!a || (hl_prims[prim].arity == 2 && !b)) return NULL;
  const hl_array *in[2] = {a, b};
  return apply(A, prim, b ? 2 : 1, in, NULL);
}

const hl_array *hl_cx_num(hl_cx_arena *A, const hl_array *like, double v) {
  if (!like) return NULL;
  hl_array *c = slot(A);
  if (!c || hl_scalar_like(v, like->dtype, like, c)) return NULL;
  A->n++;
  if (like->ndim == 0) return c;
  hl_attrs at = {.nshape = like->ndim};
  memcpy(at.shape, like->shape, sizeof(int64_t) * (size_t)like->ndim);
  const hl_array *in[1] = {c};
  return apply(A, HL_P_BROADCAST, 1, in, &at);
}

const hl_array *hl_cx_opn(hl_cx_arena *A, int prim, const hl_array *a, double v) {
  return hl_cx_op(A, prim, a, hl_cx_num(A, a, v));
}

const hl_array *hl_cx_sel(hl_cx_arena *A, const hl_array *c, const hl_array *a, const hl_array *b) {
  if (!c || !a || !b) return NULL;
  const hl_array *in[3] = {c, a, b};
  return apply(A, HL_P_SELECT, 3, in, NULL);
}

hl_cx hl_cx_selz(hl_cx_arena *A, const hl_array *c, hl_cx a, hl_cx b) {
  return (hl_cx){hl_cx_sel(A, c, a.re, b.re), hl_cx_sel(A, c, a.im, b.im)};
}

/* atan2(x, -1) is -pi for x = -0 and pi for +0: the one comparison that sees a zero's sign in
 * both modes (Halide folds 1/x < 0 into x < 0) */
const hl_array *hl_cx_signbit(hl_cx_arena *A, const hl_array *x) {
  return hl_cx_opn(A, HL_P_LT, hl_cx_op(A, HL_P_ATAN2, x, hl_cx_num(A, x, -1)), 0);
}

static const hl_array *reshaped(hl_cx_arena *A, const hl_array *a, int ndim, const int64_t *shape) {
  if (!a) return NULL;
  hl_attrs at = {.nshape = ndim};
  memcpy(at.shape, shape, sizeof(int64_t) * (size_t)ndim);
  const hl_array *in[1] = {a};
  return apply(A, HL_P_RESHAPE, 1, in, &at);
}

/* z's real (k = 0) or imaginary (k = 1) part: a slice of its pairs */
static const hl_array *part(hl_cx_arena *A, const hl_array *z, int k) {
  const hl_array *in[1] = {z};
  const hl_array *p = apply(A, HL_P_VIEW_REAL, 1, in, NULL);
  if (!p) return NULL;
  hl_attrs at = {.nshape = p->ndim};
  for (int a = 0; a < p->ndim; a++) {
    at.shape[a] = p->shape[a];
    at.i[HL_MAX_DIMS + a] = 1;
  }
  at.shape[p->ndim - 1] = 1;
  at.i[p->ndim - 1] = k;
  in[0] = p;
  return reshaped(A, apply(A, HL_P_SLICE, 1, in, &at), z->ndim, z->shape);
}

hl_cx hl_cx_parts(hl_cx_arena *A, const hl_array *z) { return (hl_cx){part(A, z, 0), part(A, z, 1)}; }

int hl_cx_make(hl_cx_arena *A, hl_cx z, hl_array *out) {
  if (!z.re || !z.im) return -1;
  int nd = z.re->ndim;
  if (nd >= HL_MAX_DIMS) return hl_error("complex: shape has no room for the (re, im) axis");
  int64_t s[HL_MAX_DIMS];
  memcpy(s, z.re->shape, sizeof(int64_t) * (size_t)nd);
  s[nd] = 1;
  const hl_array *both[2] = {reshaped(A, z.re, nd + 1, s), reshaped(A, z.im, nd + 1, s)};
  if (!both[0] || !both[1]) return -1;
  hl_attrs at = {0};
  at.i[0] = nd;
  const hl_array *c = apply(A, HL_P_CONCAT, 2, both, &at);
  if (!c) return -1;
  return hl_apply(HL_P_VIEW_COMPLEX, 1, &c, NULL, out);
}

int hl_cx_done(const hl_array *r, hl_array *out) {
  if (!r) return -1;
  hl_array_copy_ref(out, r);
  return 0;
}

/* ---------------------------------------------------------------- complex functions */

#define OP(p, a, b) hl_cx_op(A, HL_P_##p, a, b)
#define OPN(p, a, v) hl_cx_opn(A, HL_P_##p, a, v)
#define SEL(c, a, b) hl_cx_sel(A, c, a, b)

hl_cx hl_cx_add(hl_cx_arena *A, hl_cx a, hl_cx b) { return (hl_cx){OP(ADD, a.re, b.re), OP(ADD, a.im, b.im)}; }

hl_cx hl_cx_mul(hl_cx_arena *A, hl_cx a, hl_cx b) {
  return (hl_cx){OP(SUB, OP(MUL, a.re, b.re), OP(MUL, a.im, b.im)), OP(ADD, OP(MUL, a.re, b.im), OP(MUL, a.im, b.re))};
}

hl_cx hl_cx_div(hl_cx_arena *A, hl_cx a, hl_cx b) {
  /* with p the larger part of b and q the other, r = q / p has |r| <= 1 and nothing overflows
   * or underflows that the quotient does not; the two cases of Smith's algorithm differ in which
   * parts of a meet r and in the sign of the imaginary part */
  const hl_array *big = OP(GE, OP(ABS, b.re, NULL), OP(ABS, b.im, NULL));
  const hl_array *p = SEL(big, b.re, b.im), *q = SEL(big, b.im, b.re);
  const hl_array *r = OP(DIV, q, SEL(OPN(EQ, p, 0), hl_cx_num(A, p, 1), p));   /* 0 where b is 0 */
  const hl_array *scl = OP(RECIPROCAL, OP(ADD, p, OP(MUL, q, r)), NULL);       /* inf where b is 0 */
  const hl_array *x = SEL(big, a.re, a.im), *y = SEL(big, a.im, a.re);
  const hl_array *im = OP(MUL, OP(SUB, y, OP(MUL, x, r)), scl);
  return (hl_cx){OP(MUL, OP(ADD, x, OP(MUL, y, r)), scl), SEL(big, im, OP(NEG, im, NULL))};
}

const hl_array *hl_cx_abs(hl_cx_arena *A, hl_cx z) {
  if (!z.re) return NULL;
  int f32 = z.re->dtype == HL_FLOAT32;
  /* h = (|re| + |im|) / 2 never overflows and is NaN where a part is. |z| is s sqrt((re/s)^2 +
   * (im/s)^2) with s = 1 where h lies well inside the range whose squares are normal numbers
   * (exactly sqrt(re^2 + im^2) there: correctly rounded mostly, 5 for 3 + 4i), else s = h. One
   * root and two divisions for every element (a select computes both of its branches). s drops
   * out of the derivative: the expression is |z| for any s > 0. */
  const hl_array *h = OP(ADD, OPN(MUL, OP(ABS, z.re, NULL), 0.5), OPN(MUL, OP(ABS, z.im, NULL), 0.5));
  const hl_array *plain = OP(LOGICAL_AND, OPN(GT, h, f32 ? 1e-18 : 1e-150), OPN(LT, h, f32 ? 1e18 : 1e150));
  const hl_array *one = hl_cx_num(A, h, 1), *zero = OPN(EQ, h, 0);
  const hl_array *sc = SEL(OP(LOGICAL_OR, plain, zero), one, h);
  const hl_array *xs = OP(DIV, z.re, sc), *ys = OP(DIV, z.im, sc);
  /* (at 0 the root of 1, and h itself as the result: 0, with derivative 0 rather than NaN) */
  const hl_array *r = OP(MUL, sc, OP(SQRT, SEL(zero, one, OP(ADD, OP(MUL, xs, xs), OP(MUL, ys, ys))), NULL));
  const hl_array *inf = OP(LOGICAL_OR, OP(ISINF, z.re, NULL), OP(ISINF, z.im, NULL));
  return SEL(zero, h, SEL(inf, hl_cx_num(A, h, INFINITY), r));
}

hl_cx hl_cx_exp(hl_cx_arena *A, hl_cx z) {
  const hl_array *e = OP(EXP, z.re, NULL);
  return (hl_cx){OP(MUL, e, OP(COS, z.im, NULL)), OP(MUL, e, OP(SIN, z.im, NULL))};
}

/* Where |z| could overflow (parts near the dtype's largest), z / 4 (exact) for functions that can
 * take it and undo it: *big says where */
static hl_cx quartered(hl_cx_arena *A, hl_cx z, const hl_array **big) {
  const hl_array *h = OP(ADD, OPN(MUL, OP(ABS, z.re, NULL), 0.5), OPN(MUL, OP(ABS, z.im, NULL), 0.5));
  *big = OPN(GT, h, z.re && z.re->dtype == HL_FLOAT32 ? 1e37 : 1e307);
  return hl_cx_selz(A, *big, (hl_cx){OPN(MUL, z.re, 0.25), OPN(MUL, z.im, 0.25)}, z);
}

/* log|z| + i arg z: log|z / 4| + log 4 near overflow */
hl_cx hl_cx_log(hl_cx_arena *A, hl_cx z) {
  const hl_array *big;
  const hl_array *m = hl_cx_abs(A, quartered(A, z, &big));
  const hl_array *shift = SEL(big, hl_cx_num(A, m, 2 * M_LN2), hl_cx_num(A, m, 0));
  return (hl_cx){OP(ADD, OP(LOG, m, NULL), shift), OP(ATAN2, z.im, z.re)};
}

hl_cx hl_cx_sqrt(hl_cx_arena *A, hl_cx z0) {
  /* the principal root, with no cancellation: t = sqrt((|z| + |re|) / 2) and h = im / 2t; the
   * root is t + i h where re >= 0, else |h| + i t with im's sign; 0 at 0. Near overflow, twice
   * the root of z / 4. */
  const hl_array *big;
  hl_cx z = quartered(A, z0, &big);
  const hl_array *m = hl_cx_abs(A, z);
  const hl_array *t = OP(SQRT, OP(ADD, OPN(MUL, m, 0.5), OPN(MUL, OP(ABS, z.re, NULL), 0.5)), NULL);
  const hl_array *tz = SEL(OPN(EQ, t, 0), hl_cx_num(A, t, 1), t);
  const hl_array *h = OP(DIV, z.im, OPN(MUL, tz, 2));
  const hl_array *right = OPN(GE, z.re, 0);
  hl_cx r = {SEL(right, t, OP(ABS, h, NULL)), SEL(right, h, SEL(hl_cx_signbit(A, z.im), OP(NEG, t, NULL), t))};
  return hl_cx_selz(A, big, (hl_cx){OPN(MUL, r.re, 2), OPN(MUL, r.im, 2)}, r);
}

const hl_array *hl_cx_asinh_real(hl_cx_arena *A, const hl_array *t) {
  if (!t) return NULL;
  /* log1p(a + a^2 / (1 + sqrt(1 + a^2))) for a = |t| up to a bound past which a^2 would lose
   * the 1 (and later overflow), and log(2a) beyond it (off by 1/4a^2, under the dtype's
   * precision there) */
  const hl_array *a = OP(ABS, t, NULL);
  const hl_array *big = OPN(GT, a, t->dtype == HL_FLOAT32 ? 1e4 : 1e8);
  const hl_array *s = SEL(big, hl_cx_num(A, a, 0), a), *b = SEL(big, a, hl_cx_num(A, a, 1));
  const hl_array *s2 = OP(MUL, s, s);
  const hl_array *small = OP(LOG1P, OP(ADD, s, OP(DIV, s2, OPN(ADD, OP(SQRT, OPN(ADD, s2, 1), NULL), 1))), NULL);
  const hl_array *r = SEL(big, OPN(ADD, OP(LOG, b, NULL), M_LN2), small);
  return SEL(OPN(LT, t, 0), OP(NEG, r, NULL), r);
}
