#include "hl_complex_ops.h"
#include "hl_error.h"
#include <string.h>

int hl_complex_composed(int prim) {
  switch (prim) {
  case HL_P_MUL: case HL_P_DIV: case HL_P_RECIPROCAL: case HL_P_SQUARE: case HL_P_EXP: case HL_P_LOG:
  case HL_P_SQRT: case HL_P_ABS: case HL_P_EQ: case HL_P_NE: case HL_P_SIN: case HL_P_COS: case HL_P_TAN:
  case HL_P_SINH: case HL_P_COSH: case HL_P_TANH: case HL_P_ISNAN: case HL_P_ISINF: case HL_P_ISFINITE:
    return 1;
  default: return 0;
  }
}

/* A small arena of temporaries, released together. */
typedef struct {
  hl_array v[48];
  int n;
} arena;

/* (the compositions below need at most about 30: room is checked before each op) */
static int full(arena *A, int need) {
  if (A->n + need <= (int)(sizeof A->v / sizeof A->v[0])) return 0;
  hl_error("complex: internal: too many temporaries in one composition");
  return 1;
}

static const hl_array *keep(arena *A, const hl_array *r) {
  A->v[A->n] = *r;
  return &A->v[A->n++];
}

static void drop(arena *A) {
  for (int k = 0; k < A->n; k++) hl_array_release(&A->v[k]);
  A->n = 0;
}

/* Real ops on the parts, straight to the primitives: their operands have one shape and dtype
 * already (the frontend promoted and broadcast the complex operands before composing here), so
 * nothing needs the frontend's rules. NULL after an error (recorded), which every op passes on. */
static const hl_array *op(arena *A, int prim, const hl_array *a, const hl_array *b) {
  if (!a || (hl_prims[prim].arity == 2 && !b) || full(A, 1)) return NULL;
  const hl_array *in[2] = {a, b};
  hl_array r;
  if (hl_apply(prim, b ? 2 : 1, in, NULL, &r)) return NULL;
  return keep(A, &r);
}

/* prim(a, v) with v a number of a's dtype, broadcast to a's shape */
static const hl_array *opn(arena *A, int prim, const hl_array *a, double v) {
  if (!a || full(A, 3)) return NULL;
  hl_array c, b, r;
  if (hl_scalar_like(v, a->dtype, a, &c)) return NULL;
  const hl_array *pc = keep(A, &c);
  if (a->ndim > 0) {
    hl_attrs at = {.nshape = a->ndim};
    memcpy(at.shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    if (hl_apply(HL_P_BROADCAST, 1, &pc, &at, &b)) return NULL;
    pc = keep(A, &b);
  }
  const hl_array *in[2] = {a, pc};
  if (hl_apply(prim, 2, in, NULL, &r)) return NULL;
  return keep(A, &r);
}

static const hl_array *sel(arena *A, const hl_array *c, const hl_array *a, const hl_array *b) {
  if (!c || !a || !b || full(A, 1)) return NULL;
  const hl_array *in[3] = {c, a, b};
  hl_array r;
  if (hl_apply(HL_P_SELECT, 3, in, NULL, &r)) return NULL;
  return keep(A, &r);
}

static int reshape(const hl_array *a, int ndim, const int64_t *shape, hl_array *out) {
  hl_attrs at = {.nshape = ndim};
  memcpy(at.shape, shape, sizeof(int64_t) * (size_t)ndim);
  return hl_apply(HL_P_RESHAPE, 1, &a, &at, out);
}

/* z's real (k = 0) or imaginary (k = 1) part: a slice of its pairs */
static const hl_array *part(arena *A, const hl_array *z, int k) {
  if (!z || full(A, 3)) return NULL;
  hl_array pairs, s, r;
  const hl_array *in[1] = {z};
  if (hl_apply(HL_P_VIEW_REAL, 1, in, NULL, &pairs)) return NULL;
  const hl_array *p = keep(A, &pairs);
  hl_attrs at = {.nshape = p->ndim};
  for (int a = 0; a < p->ndim; a++) {
    at.shape[a] = p->shape[a];
    at.i[HL_MAX_DIMS + a] = 1;
  }
  at.shape[p->ndim - 1] = 1;
  at.i[p->ndim - 1] = k;
  in[0] = p;
  if (hl_apply(HL_P_SLICE, 1, in, &at, &s)) return NULL;
  p = keep(A, &s);
  if (reshape(p, z->ndim, z->shape, &r)) return NULL;
  return keep(A, &r);
}

/* the complex array re + i im (same shape and real dtype) into out */
static int make(arena *A, const hl_array *re, const hl_array *im, hl_array *out) {
  if (!re || !im || full(A, 3)) return -1;
  int64_t s[HL_MAX_DIMS];
  int nd = re->ndim;
  if (nd >= HL_MAX_DIMS) return hl_error("complex: shape has no room for the (re, im) axis");
  memcpy(s, re->shape, sizeof(int64_t) * (size_t)nd);
  s[nd] = 1;
  hl_array a, b, c;
  if (reshape(re, nd + 1, s, &a)) return -1;
  const hl_array *pa = keep(A, &a);
  if (reshape(im, nd + 1, s, &b)) return -1;
  const hl_array *pb = keep(A, &b);
  const hl_array *both[2] = {pa, pb};
  hl_attrs at = {0};
  at.i[0] = nd;
  if (hl_apply(HL_P_CONCAT, 2, both, &at, &c)) return -1;
  const hl_array *pc = keep(A, &c);
  return hl_apply(HL_P_VIEW_COMPLEX, 1, &pc, NULL, out);
}

static int done(const hl_array *r, hl_array *out) {
  if (!r) return -1;
  hl_array_copy_ref(out, r);
  return 0;
}

int hl_complex_apply(int prim, int nin, const hl_array *const *in, hl_array *out) {
  arena A = {.n = 0};
  const hl_array *ar = part(&A, in[0], 0), *ai = part(&A, in[0], 1);
  const hl_array *br = NULL, *bi = NULL;
  if (nin == 2) {
    br = part(&A, in[1], 0);
    bi = part(&A, in[1], 1);
  }
  int rc = -1;
  switch (prim) {
  case HL_P_MUL:
    rc = make(&A, op(&A, HL_P_SUB, op(&A, HL_P_MUL, ar, br), op(&A, HL_P_MUL, ai, bi)),
              op(&A, HL_P_ADD, op(&A, HL_P_MUL, ar, bi), op(&A, HL_P_MUL, ai, br)), out);
    break;
  case HL_P_SQUARE:
    rc = make(&A, op(&A, HL_P_SUB, op(&A, HL_P_MUL, ar, ar), op(&A, HL_P_MUL, ai, ai)),
              opn(&A, HL_P_MUL, op(&A, HL_P_MUL, ar, ai), 2), out);
    break;
  case HL_P_DIV: {
    /* (a b*) / |b|^2 */
    const hl_array *d = op(&A, HL_P_ADD, op(&A, HL_P_MUL, br, br), op(&A, HL_P_MUL, bi, bi));
    rc = make(&A, op(&A, HL_P_DIV, op(&A, HL_P_ADD, op(&A, HL_P_MUL, ar, br), op(&A, HL_P_MUL, ai, bi)), d),
              op(&A, HL_P_DIV, op(&A, HL_P_SUB, op(&A, HL_P_MUL, ai, br), op(&A, HL_P_MUL, ar, bi)), d), out);
    break;
  }
  case HL_P_RECIPROCAL: {
    const hl_array *d = op(&A, HL_P_ADD, op(&A, HL_P_MUL, ar, ar), op(&A, HL_P_MUL, ai, ai));
    rc = make(&A, op(&A, HL_P_DIV, ar, d), op(&A, HL_P_DIV, op(&A, HL_P_NEG, ai, NULL), d), out);
    break;
  }
  case HL_P_EXP: {
    const hl_array *e = op(&A, HL_P_EXP, ar, NULL);
    rc = make(&A, op(&A, HL_P_MUL, e, op(&A, HL_P_COS, ai, NULL)), op(&A, HL_P_MUL, e, op(&A, HL_P_SIN, ai, NULL)), out);
    break;
  }
  case HL_P_ABS:
    rc = done(op(&A, HL_P_SQRT, op(&A, HL_P_ADD, op(&A, HL_P_MUL, ar, ar), op(&A, HL_P_MUL, ai, ai)), NULL), out);
    break;
  case HL_P_LOG: {
    /* log|z| + i arg z, the principal branch (arg in (-pi, pi]) */
    const hl_array *m2 = op(&A, HL_P_ADD, op(&A, HL_P_MUL, ar, ar), op(&A, HL_P_MUL, ai, ai));
    rc = make(&A, opn(&A, HL_P_MUL, op(&A, HL_P_LOG, m2, NULL), 0.5), op(&A, HL_P_ATAN2, ai, ar), out);
    break;
  }
  case HL_P_SQRT: {
    /* the principal root, with no cancellation: t = sqrt((|z| + |re|) / 2) and h = im / 2t; the
     * root is t + i h where re >= 0, else |h| + i t sign(im); 0 at 0 */
    const hl_array *m = op(&A, HL_P_SQRT, op(&A, HL_P_ADD, op(&A, HL_P_MUL, ar, ar), op(&A, HL_P_MUL, ai, ai)), NULL);
    const hl_array *t = op(&A, HL_P_SQRT, opn(&A, HL_P_MUL, op(&A, HL_P_ADD, m, op(&A, HL_P_ABS, ar, NULL)), 0.5), NULL);
    const hl_array *tz = sel(&A, opn(&A, HL_P_EQ, t, 0), opn(&A, HL_P_ADD, t, 1), t);
    const hl_array *h = op(&A, HL_P_DIV, ai, opn(&A, HL_P_MUL, tz, 2));
    const hl_array *right = opn(&A, HL_P_GE, ar, 0);
    rc = make(&A, sel(&A, right, t, op(&A, HL_P_ABS, h, NULL)),
              sel(&A, right, h, sel(&A, opn(&A, HL_P_LT, ai, 0), op(&A, HL_P_NEG, t, NULL), t)), out);
    break;
  }
  case HL_P_SIN:   /* sin a cosh b + i cos a sinh b */
    rc = make(&A, op(&A, HL_P_MUL, op(&A, HL_P_SIN, ar, NULL), op(&A, HL_P_COSH, ai, NULL)),
              op(&A, HL_P_MUL, op(&A, HL_P_COS, ar, NULL), op(&A, HL_P_SINH, ai, NULL)), out);
    break;
  case HL_P_COS:   /* cos a cosh b - i sin a sinh b */
    rc = make(&A, op(&A, HL_P_MUL, op(&A, HL_P_COS, ar, NULL), op(&A, HL_P_COSH, ai, NULL)),
              op(&A, HL_P_NEG, op(&A, HL_P_MUL, op(&A, HL_P_SIN, ar, NULL), op(&A, HL_P_SINH, ai, NULL)), NULL), out);
    break;
  case HL_P_SINH:   /* sinh a cos b + i cosh a sin b */
    rc = make(&A, op(&A, HL_P_MUL, op(&A, HL_P_SINH, ar, NULL), op(&A, HL_P_COS, ai, NULL)),
              op(&A, HL_P_MUL, op(&A, HL_P_COSH, ar, NULL), op(&A, HL_P_SIN, ai, NULL)), out);
    break;
  case HL_P_COSH:   /* cosh a cos b + i sinh a sin b */
    rc = make(&A, op(&A, HL_P_MUL, op(&A, HL_P_COSH, ar, NULL), op(&A, HL_P_COS, ai, NULL)),
              op(&A, HL_P_MUL, op(&A, HL_P_SINH, ar, NULL), op(&A, HL_P_SIN, ai, NULL)), out);
    break;
  case HL_P_TANH:
  case HL_P_TAN: {
    /* tanh(a + ib) = (sinh 2a + i sin 2b) / (cosh 2a + cos 2b); past |a| = 20 that is sign(a) + 0i
     * to working precision, where cosh 2a would overflow to inf / inf. tan z = -i tanh(iz). */
    int t = prim == HL_P_TAN;
    const hl_array *x = t ? op(&A, HL_P_NEG, ai, NULL) : ar, *y = t ? ar : ai;   /* iz = -b + ia */
    const hl_array *x2 = opn(&A, HL_P_MUL, x, 2), *y2 = opn(&A, HL_P_MUL, y, 2);
    const hl_array *d = op(&A, HL_P_ADD, op(&A, HL_P_COSH, x2, NULL), op(&A, HL_P_COS, y2, NULL));
    const hl_array *far = opn(&A, HL_P_GT, op(&A, HL_P_ABS, x, NULL), 20);
    const hl_array *re = sel(&A, far, op(&A, HL_P_SIGN, x, NULL), op(&A, HL_P_DIV, op(&A, HL_P_SINH, x2, NULL), d));
    const hl_array *im = sel(&A, far, opn(&A, HL_P_MUL, y, 0), op(&A, HL_P_DIV, op(&A, HL_P_SIN, y2, NULL), d));
    /* -i (re + i im) = im - i re */
    rc = t ? make(&A, im, op(&A, HL_P_NEG, re, NULL), out) : make(&A, re, im, out);
    break;
  }
  case HL_P_ISNAN:
    rc = done(op(&A, HL_P_LOGICAL_OR, op(&A, HL_P_ISNAN, ar, NULL), op(&A, HL_P_ISNAN, ai, NULL)), out);
    break;
  case HL_P_ISINF:
    rc = done(op(&A, HL_P_LOGICAL_OR, op(&A, HL_P_ISINF, ar, NULL), op(&A, HL_P_ISINF, ai, NULL)), out);
    break;
  case HL_P_ISFINITE:
    rc = done(op(&A, HL_P_LOGICAL_AND, op(&A, HL_P_ISFINITE, ar, NULL), op(&A, HL_P_ISFINITE, ai, NULL)), out);
    break;
  case HL_P_EQ:
    rc = done(op(&A, HL_P_LOGICAL_AND, op(&A, HL_P_EQ, ar, br), op(&A, HL_P_EQ, ai, bi)), out);
    break;
  case HL_P_NE:
    rc = done(op(&A, HL_P_LOGICAL_OR, op(&A, HL_P_NE, ar, br), op(&A, HL_P_NE, ai, bi)), out);
    break;
  default: rc = hl_error("%s: internal: no complex composition", hl_prims[prim].name);
  }
  drop(&A);
  return rc;
}

static const hl_array *mm(arena *A, const hl_array *a, const hl_array *b) {
  if (!a || !b || full(A, 1)) return NULL;
  const hl_array *in[2] = {a, b};
  hl_array r;
  if (hl_apply(HL_P_MATMUL, 2, in, NULL, &r)) return NULL;
  return keep(A, &r);
}

int hl_complex_matmul(const hl_array *a, const hl_array *b, hl_array *out) {
  arena A = {.n = 0};
  const hl_array *ar = part(&A, a, 0), *ai = part(&A, a, 1), *br = part(&A, b, 0), *bi = part(&A, b, 1);
  int rc = make(&A, op(&A, HL_P_SUB, mm(&A, ar, br), mm(&A, ai, bi)), op(&A, HL_P_ADD, mm(&A, ar, bi), mm(&A, ai, br)), out);
  drop(&A);
  return rc;
}
