#define _GNU_SOURCE   /* qsort_r */
#include "hl_ir.h"
#include "hl_error.h"
#include "hl_linalg_layout.h"
#include "hl_sym_table.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const hl_prim_info hl_prims[HL_NPRIMS] = {
#define X(e, name, kind, in, out, arity, attrs, stage) {name, HL_K_##kind, HL_IN_##in, HL_OUT_##out, arity, HL_A_##attrs, HL_S_##stage},
#include "hl_prims.def"
#undef X
};

int hl_prim_from_name(const char *name) {
  for (int i = 0; i < HL_NPRIMS; i++)
    if (strcmp(hl_prims[i].name, name) == 0) return i;
  return -1;
}

char *hl_type_text(const hl_type *t, char *buf, size_t n) {
  struct hl_shape_fmt s = hl_shape_str(t->ndim, (const long long *)t->shape);
  snprintf(buf, n, "%s%s", hl_dtype_name(t->dtype), s.s);
  return buf;
}

#define SHAPE(t) (hl_shape_str((t).ndim, (const long long *)(t).shape).s)

static int infer_elemwise(int prim, int nin, const hl_type *in, const hl_attrs *a, hl_type *out) {
  const hl_prim_info *p = &hl_prims[prim];
  for (int k = 1; k < nin; k++) {
    if (in[k].ndim != in[0].ndim || memcmp(in[k].shape, in[0].shape, sizeof(int64_t) * (size_t)in[0].ndim))
      return hl_error("%s: operand shapes %s and %s differ", p->name, SHAPE(in[0]), SHAPE(in[k]));
  }
  int first = prim == HL_P_SELECT ? 1 : 0;
  if (prim == HL_P_SELECT && in[0].dtype != HL_BOOL) return hl_error("where: the condition must be bool");
  for (int k = first + 1; k < nin; k++)
    if (in[k].dtype != in[first].dtype)
      return hl_error("%s: operand dtypes %s and %s differ", p->name, hl_dtype_name(in[first].dtype), hl_dtype_name(in[k].dtype));
  hl_dtype t = in[first].dtype;
  if ((p->in == HL_IN_INT || p->in == HL_IN_BITS) && hl_dtype_is_float(t))
    return hl_error("%s: needs integer%s operands, got %s", p->name, p->in == HL_IN_BITS ? " or bool" : "", hl_dtype_name(t));
  if ((p->in == HL_IN_FLOAT && !hl_dtype_is_float(t)) || ((p->in == HL_IN_NUM || p->in == HL_IN_INT) && t == HL_BOOL) ||
      (p->in == HL_IN_BOOL && t != HL_BOOL))
    return hl_error("%s: operands of dtype %s are not accepted here", p->name, hl_dtype_name(t));
  *out = in[0];
  out->dtype = p->out == HL_OUT_TOBOOL ? HL_BOOL : p->out == HL_OUT_ATTR ? a->dtype : t;
  return 0;
}

static int infer_reduce(int prim, const hl_type *in, const hl_attrs *a, hl_type *out) {
  const char *name = hl_prims[prim].name;
  int64_t mask = a->i[0];
  if (mask >> in->ndim) return hl_error("%s: axis out of range for shape %s", name, SHAPE(*in));
  int arg = prim == HL_P_ARGMAX || prim == HL_P_ARGMIN;
  if (arg && __builtin_popcountll((unsigned long long)mask) != 1) return hl_error("%s: needs exactly one axis", name);
  out->ndim = 0;
  for (int k = 0; k < in->ndim; k++) {
    if (mask >> k & 1) {
      if (in->shape[k] == 0 && (arg || prim == HL_P_MAX || prim == HL_P_MIN))
        return hl_error("%s: zero-size axis %d of shape %s has no %s", name, k + 1, SHAPE(*in), arg ? "index" : "identity");
    } else {
      out->shape[out->ndim++] = in->shape[k];
    }
  }
  switch (hl_prims[prim].out) {
  case HL_OUT_INDEX: out->dtype = HL_INT64; break;
  case HL_OUT_SUMLIKE: out->dtype = in->dtype == HL_BOOL || in->dtype == HL_UINT8 || in->dtype == HL_INT8 ? HL_INT32 : in->dtype; break;
  default: out->dtype = in->dtype;
  }
  return 0;
}

static int infer_matmul(const hl_type *in, hl_type *out) {
  const hl_type *a = &in[0], *b = &in[1];
  if (a->ndim < 2 || a->ndim != b->ndim || a->dtype != b->dtype)
    return hl_error("matmul: operands %s and %s need equal rank >= 2 and dtype", SHAPE(*a), SHAPE(*b));
  int n = a->ndim;
  if (memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)(n - 2)))
    return hl_error("matmul: batch dimensions of %s and %s differ", SHAPE(*a), SHAPE(*b));
  if (a->shape[n - 1] != b->shape[n - 2])
    return hl_error("matmul: inner dimensions of %s and %s differ (%lld vs %lld)", SHAPE(*a), SHAPE(*b),
                    (long long)a->shape[n - 1], (long long)b->shape[n - 2]);
  if (a->dtype == HL_BOOL) return hl_error("matmul: bool operands are not supported; use x:astype(\"int32\")");
  *out = *a;
  out->shape[n - 1] = b->shape[n - 1];
  return 0;
}

/* the decompositions' primitives, in hl_linalg_layout.h's order */
static int decomp_of(int prim) {
  return prim == HL_P_QR ? HL_DECOMP_QR : prim == HL_P_SVD ? HL_DECOMP_SVD : prim == HL_P_EIGH ? HL_DECOMP_EIGH
       : prim == HL_P_SLOGDET ? HL_DECOMP_SLOGDET : -1;
}

/* solve: a [..., n, n], b [..., n, k]; cholesky: a [..., n, n]. One float dtype, equal batches.
 * The decompositions: a [..., m, n] (square for eigh and slogdet) -> [..., packed]. */
static int infer_linalg(int prim, int nin, const hl_type *in, const hl_attrs *at, hl_type *out) {
  const char *name = hl_prims[prim].name;
  const hl_type *a = &in[0];
  int r = a->ndim;
  int what = decomp_of(prim);
  if (what == HL_DECOMP_QR || what == HL_DECOMP_SVD) {   /* rectangular: packed factors */
    if (r < 2) return hl_error("%s: a must be a matrix or a stack of them ([..., m, n]), got shape %s", name, SHAPE(*a));
    if (!hl_dtype_is_float(a->dtype)) return hl_error("%s: operands of dtype %s are not accepted here", name, hl_dtype_name(a->dtype));
    if (at->i[0] < 0 || at->i[0] > 2) return hl_error("%s: internal: mode %lld", name, (long long)at->i[0]);
  } else if (r < 2 || a->shape[r - 1] != a->shape[r - 2])
    return hl_error("%s: a must be a square matrix or a stack of them ([..., n, n]), got shape %s", name, SHAPE(*a));
  if (!hl_dtype_is_float(a->dtype)) return hl_error("%s: operands of dtype %s are not accepted here", name, hl_dtype_name(a->dtype));
  if (prim == HL_P_SOLVE_TRIANGULAR && (at->i[0] < 0 || at->i[0] > 7)) return hl_error("%s: internal: mode %lld", name, (long long)at->i[0]);
  if (what == HL_DECOMP_EIGH && (at->i[0] < 0 || at->i[0] > 3)) return hl_error("%s: internal: mode %lld", name, (long long)at->i[0]);
  if (what == HL_DECOMP_SLOGDET && (at->i[0] < 0 || at->i[0] > 1)) return hl_error("%s: internal: mode %lld", name, (long long)at->i[0]);
  *out = *a;
  if (what >= 0) {
    out->ndim = r - 1;
    out->shape[r - 2] = hl_linalg_layout_of((hl_decomp)what, (int)at->i[0], a->shape[r - 2], a->shape[r - 1]).total;
    out->shape[r - 1] = 0;
    return 0;
  }
  if (nin == 2) {
    const hl_type *b = &in[1];
    if (b->ndim != r || b->dtype != a->dtype || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)(r - 1)))
      return hl_error("%s: b of %s%s does not match a of %s%s (b needs [..., n, k] with a's batch and dtype)", name,
                      hl_dtype_name(b->dtype), SHAPE(*b), hl_dtype_name(a->dtype), SHAPE(*a));
    out->shape[r - 1] = b->shape[r - 1];
  }
  return 0;
}

static int infer_sort(int prim, const hl_type *in, const hl_attrs *a, hl_type *out) {
  if (a->i[0] < 0 || a->i[0] >= in->ndim) return hl_error("%s: axis out of range for shape %s", hl_prims[prim].name, SHAPE(*in));
  *out = *in;
  if (hl_prims[prim].out == HL_OUT_INDEX) out->dtype = HL_INT64;
  return 0;
}

/* Fourier transforms: float pairs S..[2] along an axis of S (fft.real: real values S) */
static int infer_fft(int prim, const hl_type *in, const hl_attrs *a, hl_type *out) {
  const char *name = hl_prims[prim].name;
  if (in->dtype != HL_FLOAT32 && in->dtype != HL_FLOAT64)
    return hl_error("%s: takes float32 or float64 %s, got %s", name, prim == HL_P_FFT_REAL ? "values" : "(re, im) pairs",
                    hl_dtype_name(in->dtype));
  if (prim == HL_P_FFT_REAL_INVERSE) {   /* the pairs of n / 2 + 1 values -> n real values */
    if (in->ndim < 2 || in->shape[in->ndim - 1] != 2)
      return hl_error("%s: the last axis must hold (re, im) pairs (extent 2), got shape %s", name, SHAPE(*in));
    if (a->i[0] < 0 || a->i[0] >= in->ndim - 1) return hl_error("%s: axis out of range for shape %s", name, SHAPE(*in));
    if (a->i[1] < 1) return hl_error("%s: the length must be at least 1, got %lld", name, (long long)a->i[1]);
    if (in->shape[a->i[0]] != a->i[1] / 2 + 1)
      return hl_error("%s: a length of %lld takes %lld values along the axis, got shape %s", name, (long long)a->i[1],
                      (long long)(a->i[1] / 2 + 1), SHAPE(*in));
    *out = *in;
    out->ndim--;
    out->shape[a->i[0]] = a->i[1];
    return 0;
  }
  if (prim == HL_P_FFT_REAL) {   /* real values S -> the pairs of the first n / 2 + 1 results */
    if (a->i[0] < 0 || a->i[0] >= in->ndim) return hl_error("%s: axis out of range for shape %s", name, SHAPE(*in));
    if (in->ndim >= HL_MAX_DIMS) return hl_error("%s: too many dimensions (%d) for the pairs' axis", name, in->ndim);
    if (in->shape[a->i[0]] == 0) return hl_error("%s: the axis has no values (shape %s)", name, SHAPE(*in));
    *out = *in;
    out->shape[a->i[0]] = in->shape[a->i[0]] / 2 + 1;
    out->shape[out->ndim++] = 2;
    return 0;
  }
  if (in->ndim < 2 || in->shape[in->ndim - 1] != 2)
    return hl_error("%s: the last axis must hold (re, im) pairs (extent 2), got shape %s", name, SHAPE(*in));
  if (a->i[0] < 0 || a->i[0] >= in->ndim - 1) return hl_error("%s: axis out of range for shape %s", name, SHAPE(*in));
  *out = *in;
  return 0;
}

/* Collectives: the shape a rank gets, given the job's size in i[2] (the same on every rank). */
static int infer_dist(int prim, const hl_type *in, const hl_attrs *a, hl_type *out) {
  const char *name = hl_prims[prim].name;
  int64_t size = a->i[2];
  *out = *in;
  if (size < 1) return hl_error("%s: the job's size must be at least 1, got %lld", name, (long long)size);
  if (prim == HL_P_PSUM || prim == HL_P_PMAX || prim == HL_P_PMIN) {
    if (prim == HL_P_PSUM && in->dtype == HL_BOOL) return hl_error("%s: cannot add bool values (cast them to int32)", name);
    if (a->i[1] < -1 || a->i[1] >= size)
      return hl_error("%s: rank %lld is not one of the job's ranks 1..%lld", name, (long long)a->i[1] + 1, (long long)size);
    return 0;
  }
  if (prim == HL_P_BROADCAST_FROM || prim == HL_P_PPERMUTE) {
    int lo = prim == HL_P_PPERMUTE ? -1 : 0;
    for (int k = 0; k < (prim == HL_P_PPERMUTE ? 2 : 1); k++)
      if (a->i[k] < lo || a->i[k] >= size)
        return hl_error("%s: rank %lld is not one of the job's ranks 1..%lld", name, (long long)a->i[k] + 1, (long long)size);
    return 0;
  }
  int naxes = prim == HL_P_ALL_TO_ALL ? 2 : 1;
  for (int k = 0; k < naxes; k++)
    if (a->i[k] < 0 || a->i[k] >= in->ndim)
      return hl_error("%s: axis %lld out of range for shape %s", name, (long long)a->i[k] + 1, SHAPE(*in));
  int64_t ax = a->i[0];
  if (prim == HL_P_ALL_GATHER) {
    out->shape[ax] *= size;
    return 0;
  }
  if (in->shape[ax] % size)
    return hl_error("%s: axis %lld of shape %s does not split into %lld equal blocks (one per rank)", name, (long long)ax + 1,
                    SHAPE(*in), (long long)size);
  out->shape[ax] /= size;
  if (prim == HL_P_ALL_TO_ALL) out->shape[a->i[1]] *= size;
  return 0;
}

static int infer_view(int prim, const hl_type *in, const hl_attrs *a, hl_type *out) {
  *out = *in;
  switch (prim) {
  case HL_P_RESHAPE:
    if (hl_shape_size(a->nshape, a->shape) != hl_shape_size(in->ndim, in->shape))
      return hl_error("reshape: cannot reshape %s (%lld elements) to %s", SHAPE(*in),
                      (long long)hl_shape_size(in->ndim, in->shape), hl_shape_str(a->nshape, (const long long *)a->shape).s);
    out->ndim = a->nshape;
    memcpy(out->shape, a->shape, sizeof a->shape);
    return 0;
  case HL_P_BROADCAST: {
    int off = a->nshape - in->ndim;
    if (off < 0) return hl_error("broadcast_to: cannot broadcast %s to %s", SHAPE(*in), hl_shape_str(a->nshape, (const long long *)a->shape).s);
    for (int k = 0; k < in->ndim; k++)
      if (in->shape[k] != 1 && in->shape[k] != a->shape[k + off])
        return hl_error("broadcast_to: cannot broadcast %s to %s", SHAPE(*in), hl_shape_str(a->nshape, (const long long *)a->shape).s);
    out->ndim = a->nshape;
    memcpy(out->shape, a->shape, sizeof a->shape);
    return 0;
  }
  case HL_P_TRANSPOSE: {
    int seen = 0;
    for (int k = 0; k < in->ndim; k++) {
      int64_t p = a->i[k];
      if (p < 0 || p >= in->ndim || (seen >> p & 1)) return hl_error("transpose: invalid permutation for shape %s", SHAPE(*in));
      seen |= 1 << p;
      out->shape[k] = in->shape[p];
    }
    return 0;
  }
  case HL_P_VIEW_REAL:
    if (!hl_dtype_is_complex(in->dtype)) return hl_error("view_as_real: needs a complex array, got %s", hl_dtype_name(in->dtype));
    if (in->ndim >= HL_MAX_DIMS) return hl_error("view_as_real: %s has no room for the axis of (re, im) pairs (at most %d axes)", SHAPE(*in), HL_MAX_DIMS);
    out->dtype = hl_complex_part(in->dtype);
    out->shape[out->ndim++] = 2;
    return 0;
  case HL_P_VIEW_COMPLEX:
    if (in->dtype != HL_FLOAT32 && in->dtype != HL_FLOAT64)
      return hl_error("view_as_complex: needs a float32 or float64 array, got %s", hl_dtype_name(in->dtype));
    if (in->ndim == 0 || in->shape[in->ndim - 1] != 2)
      return hl_error("view_as_complex: the last axis holds the (re, im) pairs and must have extent 2, got shape %s", SHAPE(*in));
    out->dtype = hl_complex_of(in->dtype);
    out->ndim--;
    return 0;
  case HL_P_SLICE:
    if (a->nshape != in->ndim) return hl_error("slice: %d ranges for shape %s", a->nshape, SHAPE(*in));
    for (int k = 0; k < in->ndim; k++) {
      int64_t n = a->shape[k], s = a->i[k], st = a->i[HL_MAX_DIMS + k];
      if (n < 0 || (n > 0 && (st == 0 || s < 0 || s >= in->shape[k] || s + (n - 1) * st < 0 || s + (n - 1) * st >= in->shape[k])))
        return hl_error("slice: range out of bounds on axis %d of shape %s", k + 1, SHAPE(*in));
      out->shape[k] = n;
    }
    return 0;
  }
  return hl_error("%s: not a view", hl_prims[prim].name);
}

static int infer_concat(int nin, const hl_type *in, const hl_attrs *a, hl_type *out) {
  int ax = (int)a->i[0];
  if (nin < 1) return hl_error("concatenate: needs at least one array");
  if (ax < 0 || ax >= in[0].ndim) return hl_error("concatenate: axis out of range for shape %s", SHAPE(in[0]));
  *out = in[0];
  for (int k = 1; k < nin; k++) {
    int ok = in[k].ndim == in[0].ndim && in[k].dtype == in[0].dtype;
    for (int d = 0; ok && d < in[0].ndim; d++) ok = d == ax || in[k].shape[d] == in[0].shape[d];
    if (!ok) return hl_error("concatenate: shapes %s and %s do not match off axis %d", SHAPE(in[0]), SHAPE(in[k]), ax + 1);
    out->shape[ax] += in[k].shape[ax];
  }
  return 0;
}

const char *hl_scatter_mode_name(int mode) {
  static const char *names[] = {"add", "set", "mul", "min", "max"};
  return mode >= 0 && mode <= HL_SCATTER_MAX ? names[mode] : "?";
}

/* scatter: the result is the operand's type; the updates are the operand with the axis replaced
 * by the index array's axes, of the operand's dtype */
static int infer_scatter(const hl_type *in, const hl_attrs *a, hl_type *out) {
  const hl_type *x = &in[0], *u = &in[1], *idx = &in[2];
  int ax = (int)a->i[0], mode = (int)a->i[2];
  if (idx->dtype != HL_INT32 && idx->dtype != HL_INT64 && idx->dtype != HL_UINT8 && idx->dtype != HL_INT8)
    return hl_error("scatter: indices must be integers, got %s", hl_dtype_name(idx->dtype));
  if (mode < 0 || mode > HL_SCATTER_MAX) return hl_error("scatter: unknown combine mode %d", mode);
  if (u->dtype != x->dtype)
    return hl_error("scatter: updates of dtype %s for an operand of dtype %s", hl_dtype_name(u->dtype), hl_dtype_name(x->dtype));
  if (x->dtype == HL_BOOL && (mode == HL_SCATTER_ADD || mode == HL_SCATTER_MUL))
    return hl_error("scatter: cannot %s bool values", hl_scatter_mode_name(mode));
  if (ax < 0 || ax >= x->ndim || a->i[1] != x->shape[ax] || u->ndim != x->ndim - 1 + idx->ndim)
    return hl_error("scatter: axis %d and indices %s do not fit operand %s and updates %s", ax + 1, SHAPE(*idx),
                    SHAPE(*x), SHAPE(*u));
  for (int d = 0; d < u->ndim; d++) {
    int64_t want = d < ax ? x->shape[d] : d < ax + idx->ndim ? idx->shape[d - ax] : x->shape[d - idx->ndim + 1];
    if (u->shape[d] != want)
      return hl_error("scatter: updates %s do not match operand %s with indices %s at axis %d", SHAPE(*u), SHAPE(*x),
                      SHAPE(*idx), ax + 1);
  }
  *out = *x;
  return 0;
}

/* gather: x[..., idx[j...], ...] along axis i[0]; scatter_add: the transpose, sums of the
 * values at the axes the indices span into an axis of extent i[1] */
static int infer_indexed(int prim, const hl_type *in, const hl_attrs *a, hl_type *out) {
  if (prim == HL_P_SCATTER) return infer_scatter(in, a, out);
  const hl_type *x = &in[0], *idx = &in[1];
  const char *op = hl_prims[prim].name;
  int ax = (int)a->i[0];
  if (idx->dtype != HL_INT32 && idx->dtype != HL_INT64 && idx->dtype != HL_UINT8 && idx->dtype != HL_INT8)
    return hl_error("%s: indices must be integers, got %s", op, hl_dtype_name(idx->dtype));
  if (prim == HL_P_GATHER) {
    if (ax < 0 || ax >= x->ndim) return hl_error("gather: axis %d out of range for shape %s", ax + 1, SHAPE(*x));
    if (x->ndim - 1 + idx->ndim > HL_MAX_DIMS)
      return hl_error("gather: the result would have %d axes (at most %d)", x->ndim - 1 + idx->ndim, HL_MAX_DIMS);
    if (x->shape[ax] == 0 && hl_shape_size(idx->ndim, idx->shape) > 0)
      return hl_error("gather: cannot take from axis %d of extent 0 in shape %s", ax + 1, SHAPE(*x));
    out->dtype = x->dtype;
    out->ndim = 0;
    for (int d = 0; d < ax; d++) out->shape[out->ndim++] = x->shape[d];
    for (int d = 0; d < idx->ndim; d++) out->shape[out->ndim++] = idx->shape[d];
    for (int d = ax + 1; d < x->ndim; d++) out->shape[out->ndim++] = x->shape[d];
    return 0;
  }
  if (x->dtype == HL_BOOL) return hl_error("scatter_add: cannot add bool values");
  if (ax < 0 || ax + idx->ndim > x->ndim || a->i[1] < 0)
    return hl_error("scatter_add: axis %d and indices %s do not fit values %s", ax + 1, SHAPE(*idx), SHAPE(*x));
  for (int d = 0; d < idx->ndim; d++)
    if (x->shape[ax + d] != idx->shape[d])
      return hl_error("scatter_add: indices %s do not match values %s at axis %d", SHAPE(*idx), SHAPE(*x), ax + 1);
  out->dtype = x->dtype;
  out->ndim = 0;
  for (int d = 0; d < ax; d++) out->shape[out->ndim++] = x->shape[d];
  out->shape[out->ndim++] = a->i[1];
  for (int d = ax + idx->ndim; d < x->ndim; d++) out->shape[out->ndim++] = x->shape[d];
  return 0;
}

int hl_shape_check(const char *op, int ndim, const int64_t *shape) {
  if (ndim < 0 || ndim > HL_MAX_DIMS) return hl_error("%s: rank %d is beyond the %d axes an array can have", op, ndim, HL_MAX_DIMS);
  int64_t n = 1;
  for (int k = 0; k < ndim; k++) {
    if (shape[k] < 0) return hl_error("%s: negative extent %lld in shape %s", op, (long long)shape[k], hl_shape_str(ndim, (const long long *)shape).s);
    if (shape[k] && n > INT64_MAX / 16 / shape[k])
      return hl_error("%s: shape %s has more elements than an array can hold (2^59)", op, hl_shape_str(ndim, (const long long *)shape).s);
    if (shape[k]) n *= shape[k];
  }
  return 0;
}

/* The primitives that take complex values as they are (docs/complex.md): the backend rewrites
 * them into their float arrays of (re, im) pairs (hl_complex.c); the frontend composes the rest
 * of complex arithmetic from these. */
static int complex_ok(int prim) {
  switch (prim) {
  case HL_P_PARAM: case HL_P_CONST: case HL_P_CAST: case HL_P_STOP_GRADIENT: case HL_P_NEG: case HL_P_ADD:
  case HL_P_SUB: case HL_P_SELECT: case HL_P_SUM: case HL_P_RESHAPE: case HL_P_TRANSPOSE: case HL_P_BROADCAST:
  case HL_P_SCATTER_ADD:
  case HL_P_SLICE: case HL_P_CONCAT: case HL_P_GATHER: case HL_P_VIEW_REAL: case HL_P_VIEW_COMPLEX:
    return 1;
  default: return 0;
  }
}

static int check_complex(int prim, int nin, const hl_type *in, const hl_attrs *a) {
  hl_dtype c = HL_BOOL;
  for (int k = 0; k < nin; k++)
    if (hl_dtype_is_complex(in[k].dtype)) c = in[k].dtype;
  int src = hl_prims[prim].kind == HL_K_SOURCE || hl_prims[prim].kind == HL_K_LOOP || prim == HL_P_CAST;
  if (src && hl_dtype_is_complex(a->dtype) && c == HL_BOOL) c = a->dtype;
  if (c == HL_BOOL) return 0;
  /* scatter's set and add act on each part alone; mul, min and max do not */
  int ok = complex_ok(prim) || (prim == HL_P_SCATTER && (a->i[2] == HL_SCATTER_SET || a->i[2] == HL_SCATTER_ADD));
  if (!ok)
    return hl_error("%s: %s is not supported yet (complex arrays have construction, real/imag/conj/abs/angle, "
                    "arithmetic, powers, exp/log/sqrt, trigonometric and hyperbolic functions and their inverses, orderings, matmul, sums, products, shape ops and indexing so far: see docs/complex.md)", hl_prims[prim].name, hl_dtype_name(c));
  if (prim == HL_P_CAST && hl_dtype_is_complex(in[0].dtype) && !hl_dtype_is_complex(a->dtype))
    return hl_error("cast: %s to %s would drop the imaginary part; take hl.real(x) or hl.abs(x) first", hl_dtype_name(in[0].dtype),
                    hl_dtype_name(a->dtype));
  return 0;
}

int hl_infer(int prim, int nin, const hl_type *in, const hl_attrs *a, hl_type *out) {
  const hl_prim_info *p = &hl_prims[prim];
  if (p->arity >= 0 && nin != p->arity) return hl_error("%s: takes %d operands, got %d", p->name, p->arity, nin);
  if (check_complex(prim, nin, in, a)) return -1;
  if ((p->kind == HL_K_SOURCE && prim != HL_P_CONST) || prim == HL_P_RESHAPE || prim == HL_P_BROADCAST) {
    if (hl_shape_check(p->name, a->nshape, a->shape)) return -1;
  }
  memset(out, 0, sizeof *out);
  switch (p->kind) {
  case HL_K_LOOP:
  case HL_K_SOURCE:
    out->dtype = a->dtype;
    out->ndim = prim == HL_P_CONST ? 0 : a->nshape;
    memcpy(out->shape, a->shape, sizeof a->shape);
    if (prim == HL_P_IOTA && (a->i[0] < 0 || a->i[0] >= a->nshape)) return hl_error("iota: axis out of range");
    return 0;
  case HL_K_ELEMWISE: return infer_elemwise(prim, nin, in, a, out);
  case HL_K_REDUCE: return infer_reduce(prim, in, a, out);
  case HL_K_MATMUL: return infer_matmul(in, out);
  case HL_K_VIEW: return infer_view(prim, in, a, out);
  case HL_K_CONCAT: return infer_concat(nin, in, a, out);
  case HL_K_LINALG: return infer_linalg(prim, nin, in, a, out);
  case HL_K_SORT: return infer_sort(prim, in, a, out);
  case HL_K_FFT: return infer_fft(prim, in, a, out);
  case HL_K_INDEXED: return infer_indexed(prim, in, a, out);
  case HL_K_DIST: return infer_dist(prim, in, a, out);
  }
  return -1;
}

/* ---- graphs ---- */

void hl_graph_init(hl_graph *g) { memset(g, 0, sizeof *g); }

void hl_graph_free(hl_graph *g) {
  free(g->nodes);
  free(g->edges);
  free(g->outputs);
  hl_sym_free(g->sym);
  memset(g, 0, sizeof *g);
}

void hl_graph_reset(hl_graph *g) {
  g->nnodes = g->nedges = g->nparams = g->noutputs = 0;
  g->device = 0;
}

static int grow(void **p, int *cap, int need, size_t elem) {
  if (need <= *cap) return 0;
  int c = *cap ? *cap : 16;
  while (c < need) c *= 2;
  void *q = realloc(*p, (size_t)c * elem);
  if (!q) return hl_error("out of memory growing a graph");
  *p = q;
  *cap = c;
  return 0;
}

int hl_graph_add(hl_graph *g, int prim, int nin, const int *inputs, const hl_attrs *attrs) {
  static const hl_attrs none;
  if (!attrs) attrs = &none;
  hl_type in_types[64];
  if (nin > 64) return hl_error("%s: too many operands (%d, at most 64)", hl_prims[prim].name, nin);
  for (int k = 0; k < nin; k++) in_types[k] = g->nodes[inputs[k]].type;
  hl_node n = {.prim = prim, .nin = nin, .in0 = g->nedges, .attrs = *attrs};
  if (hl_infer(prim, nin, in_types, attrs, &n.type)) return -1;
  if (grow((void **)&g->nodes, &g->cap_nodes, g->nnodes + 1, sizeof(hl_node)) ||
      grow((void **)&g->edges, &g->cap_edges, g->nedges + nin, sizeof(int)))
    return -1;
  if (nin > 0) memcpy(g->edges + g->nedges, inputs, sizeof(int) * (size_t)nin);   /* (inputs may be NULL) */
  g->nedges += nin;
  g->nodes[g->nnodes] = n;
  return g->nnodes++;
}

int hl_graph_add_param(hl_graph *g, hl_dtype dtype, int ndim, const int64_t *shape) {
  hl_attrs a = {.dtype = dtype, .nshape = ndim};
  a.i[0] = g->nparams;
  memcpy(a.shape, shape, sizeof(int64_t) * (size_t)ndim);
  int id = hl_graph_add(g, HL_P_PARAM, 0, NULL, &a);
  if (id >= 0) g->nparams++;
  return id;
}

int hl_graph_set_outputs(hl_graph *g, int n, const int *outputs) {
  int *o = realloc(g->outputs, sizeof(int) * (size_t)(n ? n : 1));
  if (!o) return hl_error("out of memory");
  memcpy(o, outputs, sizeof(int) * (size_t)n);
  g->outputs = o;
  g->noutputs = n;
  return 0;
}

int hl_graph_prune(const hl_graph *g, hl_graph *out) {
  char *live = calloc((size_t)g->nnodes + 1, 1);
  int *remap = malloc(sizeof(int) * ((size_t)g->nnodes + 1));
  int *same = malloc(sizeof(int) * ((size_t)g->nnodes + 1));
  if (!live || !remap || !same) {
    free(live);
    free(remap);
    free(same);
    return hl_error("out of memory");
  }
  /* A cast to the dtype a value already has (autodiff's variables are such casts) is the value
   * itself: its uses read the value. Kept, it was a copy wherever it had to be a buffer, as for
   * the matmul kernel's operands: a whole copy of each weight matrix in every gradient step. */
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node *n = &g->nodes[i];
    int src = n->prim == HL_P_CAST ? hl_node_inputs(g, n)[0] : -1;
    same[i] = src >= 0 && g->nodes[src].type.dtype == n->type.dtype ? same[src] : i;
  }
  for (int k = 0; k < g->noutputs; k++) live[same[g->outputs[k]]] = 1;
  for (int i = g->nnodes - 1; i >= 0; i--) {
    const hl_node *n = &g->nodes[i];
    /* params stay: they are the pipeline's signature even when unused */
    if (n->prim == HL_P_PARAM) live[i] = 1;
    if (!live[i]) continue;
    for (int k = 0; k < n->nin; k++) live[same[hl_node_inputs(g, n)[k]]] = 1;
  }
  hl_graph_init(out);
  out->dynamic = g->dynamic;
  out->device = g->device;
  out->schedule = g->schedule;
  int rc = 0;
  for (int i = 0; i < g->nnodes && !rc; i++) {
    if (!live[i]) continue;
    const hl_node *n = &g->nodes[i];
    int ins[64];
    for (int k = 0; k < n->nin; k++) ins[k] = remap[same[hl_node_inputs(g, n)[k]]];
    remap[i] = hl_graph_add(out, n->prim, n->nin, ins, &n->attrs);
    if (remap[i] < 0) rc = -1;
    if (n->prim == HL_P_PARAM) out->nparams++;
  }
  if (!rc) {
    int *outs = malloc(sizeof(int) * (size_t)(g->noutputs ? g->noutputs : 1));
    if (!outs) {
      rc = hl_error("out of memory");
    } else {
      for (int k = 0; k < g->noutputs; k++) outs[k] = remap[same[g->outputs[k]]];
      rc = hl_graph_set_outputs(out, g->noutputs, outs);
      free(outs);
    }
  }
  free(live);
  free(remap);
  free(same);
  return rc;
}

/* ---- canonical key ---- */

static void key_put(hl_key *k, const void *p, size_t n) {
  if (k->len + n > k->cap) {
    size_t c = k->cap ? k->cap * 2 : 256;
    while (c < k->len + n) c *= 2;
    unsigned char *b = realloc(k->bytes, c);
    if (!b) abort();   /* a key is a few hundred bytes: failing here means the process is lost */
    k->bytes = b;
    k->cap = c;
  }
  memcpy(k->bytes + k->len, p, n);
  k->len += n;
}

int hl_attr_count(int prim, int ndim) {
  switch (hl_prims[prim].attrs) {
  case HL_A_AXIS: case HL_A_AXES: case HL_A_MODE: return 1;
  case HL_A_PARAM: case HL_A_LOOP: case HL_A_LANE: return 2;
  case HL_A_PERM: return ndim;
  case HL_A_DIST: case HL_A_SCATTER: return 3;
  case HL_A_SLICE: return 2 * HL_MAX_DIMS;
  case HL_A_NONE: case HL_A_VALUE: return 0;
  }
  return 0;
}

/* the key's bytes with the nodes in `order` (NULL: as they are), inputs and outputs renumbered
 * by `pos` (new position of each node) */
static void put_graph(const hl_graph *g, hl_key *key, const int *order, const int *pos) {
  key->len = 0;
  for (int o = 0; o < g->nnodes; o++) {
    const hl_node *n = &g->nodes[order ? order[o] : o];
    int32_t head[4] = {n->prim, (int32_t)n->type.dtype, n->type.ndim, n->nin};
    key_put(key, head, sizeof head);
    /* eager kernels read extents from their buffers: the key holds ranks only */
    if (!g->dynamic) key_put(key, n->type.shape, sizeof(int64_t) * (size_t)n->type.ndim);
    const int *in = hl_node_inputs(g, n);
    for (int k = 0; k < n->nin; k++) {
      int v = pos ? pos[in[k]] : in[k];
      key_put(key, &v, sizeof v);
    }
    key_put(key, n->attrs.i, sizeof(int64_t) * (size_t)hl_attr_count(n->prim, n->type.ndim));
    if (hl_prims[n->prim].attrs == HL_A_VALUE) key_put(key, &n->attrs.f, sizeof(double));
    /* a polymorphic program: its sizes as functions of the symbols (the traced ones are made-up) */
    const hl_symbolic *sym = g->sym;
    int id = order ? order[o] : o;
    for (int k = sym ? sym->first[id] : 0; sym && k < sym->first[id + 1]; k++) {
      const hl_sym_slot *sl = &sym->slots[k];
      int32_t where[2] = {sl->field, sl->index};
      key_put(key, where, sizeof where);
      key_put(key, &sl->c, sizeof(int64_t) * (1 + HL_MAX_SYMS));
      key_put(key, &sl->fc, sizeof(double) * (1 + HL_MAX_SYMS));
    }
  }
  if (g->sym) {
    key_put(key, &g->sym->nsym, sizeof(int));
    key_put(key, g->sym->param, sizeof(int) * 2 * HL_MAX_SYMS);
  }
  key_put(key, &g->device, sizeof(int));
  key_put(key, &g->schedule, sizeof(int));
  key_put(key, &g->noutputs, sizeof(int));
  for (int k = 0; k < g->noutputs; k++) {
    int v = pos ? pos[g->outputs[k]] : g->outputs[k];
    key_put(key, &v, sizeof v);
  }
  uint64_t h = 1469598103934665603ull;   /* FNV-1a */
  for (size_t i = 0; i < key->len; i++) h = (h ^ key->bytes[i]) * 1099511628211ull;
  key->hash = h;
}

void hl_graph_key(const hl_graph *g, hl_key *key) { put_graph(g, key, NULL, NULL); }

static int by_param_index(const void *a, const void *b, void *g) {
  const hl_node *x = &((const hl_graph *)g)->nodes[*(const int *)a], *y = &((const hl_graph *)g)->nodes[*(const int *)b];
  return (x->attrs.i[0] > y->attrs.i[0]) - (x->attrs.i[0] < y->attrs.i[0]);
}

/* The canonical order of g's nodes into order (pos: each node's place in it): parameters by
 * index, then each output's inputs depth first, in output and input order, each node after its
 * inputs; then the nodes no output reads, as they come. -1 + hl_error when out of memory. */
static int canonical_order(const hl_graph *g, int *order, int *pos) {
  int n = g->nnodes;
  int *stack = malloc(sizeof(int) * 2 * (size_t)(n ? n : 1));
  if (!stack) return hl_error("out of memory");
  int count = 0;
  for (int i = 0; i < n; i++) {
    pos[i] = -1;
    if (g->nodes[i].prim == HL_P_PARAM) order[count++] = i;
  }
  qsort_r(order, (size_t)count, sizeof(int), by_param_index, (void *)g);
  for (int k = 0; k < count; k++) pos[order[k]] = k;
  for (int k = 0; k < g->noutputs; k++) {
    int top = 0;
    if (pos[g->outputs[k]] == -1) {
      stack[0] = g->outputs[k];
      stack[1] = 0;
      top = 1;
    }
    while (top > 0) {
      int v = stack[2 * (top - 1)], next = stack[2 * (top - 1) + 1];
      const hl_node *nd = &g->nodes[v];
      if (next < nd->nin) {
        stack[2 * (top - 1) + 1]++;
        int u = hl_node_inputs(g, nd)[next];
        if (pos[u] == -1) {
          pos[u] = -2;   /* on the stack */
          stack[2 * top] = u;
          stack[2 * top + 1] = 0;
          top++;
        }
      } else {
        pos[v] = count;
        order[count++] = v;
        top--;
      }
    }
  }
  for (int i = 0; i < n; i++)
    if (pos[i] == -1) {
      pos[i] = count;
      order[count++] = i;
    }
  free(stack);
  return 0;
}

int hl_graph_canonical_key(const hl_graph *g, hl_key *key) {
  int n = g->nnodes;
  int *order = malloc(sizeof(int) * (size_t)(n ? n : 1)), *pos = malloc(sizeof(int) * (size_t)(n ? n : 1));
  if (!order || !pos || canonical_order(g, order, pos)) {
    free(order);
    free(pos);
    return order && pos ? -1 : hl_error("out of memory");
  }
  put_graph(g, key, order, pos);
  int32_t dyn = g->dynamic;
  key_put(key, &dyn, sizeof dyn);
  free(order);
  free(pos);
  return 0;
}

int hl_graph_distinct_loop(const hl_graph *g, int i) {
  if (g->nodes[i].prim != HL_P_LOOP) return -1;
  int64_t id = g->nodes[i].attrs.i[0];
  for (int j = 0; j < i; j++)
    if (g->nodes[j].prim == HL_P_LOOP && g->nodes[j].attrs.i[0] == id) return -1;
  return (int)id;
}

int hl_graph_number_loops(const hl_graph *g, hl_graph *out, int **ids, int *nids) {
  int n = g->nnodes;
  hl_graph_init(out);
  *ids = NULL;
  *nids = 0;
  int *order = malloc(sizeof(int) * (size_t)(n ? n : 1)), *pos = malloc(sizeof(int) * (size_t)(n ? n : 1));
  int rc = !order || !pos ? hl_error("out of memory") : canonical_order(g, order, pos);
  out->nodes = rc ? NULL : malloc(sizeof *out->nodes * (size_t)(n ? n : 1));
  out->edges = rc ? NULL : malloc(sizeof *out->edges * (size_t)(g->nedges ? g->nedges : 1));
  out->outputs = rc ? NULL : malloc(sizeof *out->outputs * (size_t)(g->noutputs ? g->noutputs : 1));
  if (!rc && (!out->nodes || !out->edges || !out->outputs)) rc = hl_error("out of memory");
  if (!rc) {
    memcpy(out->nodes, g->nodes, sizeof *out->nodes * (size_t)n);
    if (g->nedges) memcpy(out->edges, g->edges, sizeof *out->edges * (size_t)g->nedges);
    if (g->noutputs) memcpy(out->outputs, g->outputs, sizeof *out->outputs * (size_t)g->noutputs);
    out->nnodes = out->cap_nodes = n;
    out->nedges = out->cap_edges = g->nedges;
    out->noutputs = g->noutputs;
    out->nparams = g->nparams;
    out->dynamic = g->dynamic;
    out->device = g->device;
    out->schedule = g->schedule;
    /* each loop's slot: its place among the loops, in the canonical order of their results */
    for (int o = 0; o < n && !rc; o++) {
      const hl_node *nd = &g->nodes[order[o]];
      if (nd->prim != HL_P_LOOP) continue;
      int k = 0;
      while (k < *nids && (*ids)[k] != (int)nd->attrs.i[0]) k++;
      if (k == *nids) {
        int *grown = realloc(*ids, sizeof(int) * (size_t)(k + 1));
        if (!grown) {
          rc = hl_error("out of memory");
          break;
        }
        *ids = grown;
        (*ids)[(*nids)++] = (int)nd->attrs.i[0];
      }
      out->nodes[order[o]].attrs.i[0] = k;
    }
  }
  if (rc) {
    hl_graph_free(out);
    free(*ids);
    *ids = NULL;
    *nids = 0;
  }
  free(order);
  free(pos);
  return rc;
}

int hl_graph_canonical(const hl_graph *g, hl_graph *out, int *pos_out) {
  int n = g->nnodes;
  hl_graph_init(out);
  out->dynamic = g->dynamic;
  out->device = g->device;
  out->schedule = g->schedule;
  int *order = malloc(sizeof(int) * (size_t)(n ? n : 1)), *pos = malloc(sizeof(int) * (size_t)(n ? n : 1));
  int rc = !order || !pos ? hl_error("out of memory") : canonical_order(g, order, pos);
  for (int o = 0; o < n && !rc; o++) {
    const hl_node *nd = &g->nodes[order[o]];
    int ins[64];
    for (int k = 0; k < nd->nin; k++) ins[k] = pos[hl_node_inputs(g, nd)[k]];
    if (hl_graph_add(out, nd->prim, nd->nin, ins, &nd->attrs) != o) rc = -1;
    if (nd->prim == HL_P_PARAM) out->nparams++;
  }
  int *outs = rc ? NULL : malloc(sizeof(int) * (size_t)(g->noutputs ? g->noutputs : 1));
  if (!rc && !outs) rc = hl_error("out of memory");
  if (!rc) {
    for (int k = 0; k < g->noutputs; k++) outs[k] = pos[g->outputs[k]];
    rc = hl_graph_set_outputs(out, g->noutputs, outs);
  }
  free(outs);
  if (!rc && pos_out) memcpy(pos_out, pos, sizeof(int) * (size_t)n);
  free(order);
  free(pos);
  if (rc) hl_graph_free(out);
  return rc;
}

void hl_key_free(hl_key *key) {
  free(key->bytes);
  memset(key, 0, sizeof *key);
}

/* ---- text ---- */

typedef struct { char *s; size_t len, cap; } strbuf;

static void sb_printf(strbuf *b, const char *fmt, ...) HL_PRINTF(2, 3);
static void sb_printf(strbuf *b, const char *fmt, ...) {
  for (;;) {
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(b->s ? b->s + b->len : NULL, b->s ? b->cap - b->len : 0, fmt, ap);
    va_end(ap);
    if (n < 0) return;
    if (b->s && b->len + (size_t)n < b->cap) {
      b->len += (size_t)n;
      return;
    }
    size_t c = b->cap ? b->cap * 2 : 1024;
    while (c < b->len + (size_t)n + 1) c *= 2;
    char *s = realloc(b->s, c);
    if (!s) return;
    b->s = s;
    b->cap = c;
  }
}

static void attr_text(strbuf *b, const hl_node *n) {
  const hl_attrs *a = &n->attrs;
  switch (hl_prims[n->prim].attrs) {
  case HL_A_VALUE: sb_printf(b, " %.17g", a->f); break;
  case HL_A_AXIS: sb_printf(b, " axis=%d", (int)a->i[0] + 1); break;
  case HL_A_SCATTER:
    sb_printf(b, " axis=%d n=%lld", (int)a->i[0] + 1, (long long)a->i[1]);
    if (n->prim == HL_P_SCATTER) sb_printf(b, " mode=%s", hl_scatter_mode_name((int)a->i[2]));
    break;
  case HL_A_MODE: sb_printf(b, " mode=%d", (int)a->i[0]); break;
  case HL_A_LANE: sb_printf(b, " axis=%d n=%lld", (int)a->i[0] + 1, (long long)a->i[1]); break;
  case HL_A_DIST: sb_printf(b, " a=%lld b=%lld size=%lld", (long long)a->i[0] + 1, (long long)a->i[1] + 1, (long long)a->i[2]); break;
  case HL_A_AXES:
    sb_printf(b, " axes={");
    for (int k = 0, first = 1; k < HL_MAX_DIMS; k++)
      if (a->i[0] >> k & 1) {
        sb_printf(b, first ? "%d" : ",%d", k + 1);
        first = 0;
      }
    sb_printf(b, "}");
    break;
  case HL_A_PERM:
    sb_printf(b, " perm={");
    for (int k = 0; k < n->type.ndim; k++) sb_printf(b, k ? ",%d" : "%d", (int)a->i[k] + 1);
    sb_printf(b, "}");
    break;
  case HL_A_SLICE:
    sb_printf(b, " start={");
    for (int k = 0; k < n->type.ndim; k++) sb_printf(b, k ? ",%d" : "%d", (int)a->i[k] + 1);
    sb_printf(b, "} step={");
    for (int k = 0; k < n->type.ndim; k++) sb_printf(b, k ? ",%d" : "%d", (int)a->i[HL_MAX_DIMS + k]);
    sb_printf(b, "}");
    break;
  case HL_A_NONE: case HL_A_PARAM: case HL_A_LOOP: break;   /* (a loop's number is this process's) */
  }
}

char *hl_graph_text(const hl_graph *g) {
  strbuf b = {0};
  char t[200];
  sb_printf(&b, "{ lambda ");
  for (int i = 0, np = 0; i < g->nnodes; i++)
    if (g->nodes[i].prim == HL_P_PARAM) sb_printf(&b, np++ ? ", %%%d:%s" : "%%%d:%s", i, hl_type_text(&g->nodes[i].type, t, sizeof t));
  sb_printf(&b, ". let\n");
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node *n = &g->nodes[i];
    if (n->prim == HL_P_PARAM) continue;
    sb_printf(&b, "    %%%d:%s = %s", i, hl_type_text(&n->type, t, sizeof t), hl_prims[n->prim].name);
    for (int k = 0; k < n->nin; k++) sb_printf(&b, " %%%d", hl_node_inputs(g, n)[k]);
    attr_text(&b, n);
    sb_printf(&b, "\n");
  }
  sb_printf(&b, "  in (");
  for (int k = 0; k < g->noutputs; k++) sb_printf(&b, k ? ", %%%d" : "%%%d", g->outputs[k]);
  sb_printf(&b, ") }");
  return b.s;
}
