#include "hl_frontend.h"
#include "hl_complex_ops.h"
#include <math.h>
#include "hl_error.h"
#include "hl_device.h"
#include <string.h>

#define SHAPE(a) (hl_shape_str((a)->ndim, (const long long *)(a)->shape).s)

int hl_op_cast(const hl_array *a, hl_dtype dtype, hl_array *out) {
  hl_attrs at = {.dtype = dtype};
  return hl_apply(HL_P_CAST, 1, &a, &at, out);
}

int hl_op_reshape(const hl_array *a, int ndim, const int64_t *shape, hl_array *out) {
  hl_attrs at = {.nshape = ndim};
  memcpy(at.shape, shape, sizeof(int64_t) * (size_t)ndim);
  return hl_apply(HL_P_RESHAPE, 1, &a, &at, out);
}

/* 0 when the shapes broadcast, -1 when not; records no error */
static int hl_broadcast_shapes_quiet(int n, const hl_array *const *arrays, int *ndim, int64_t *shape) {
  int r = 0;
  for (int k = 0; k < n; k++) r = arrays[k]->ndim > r ? arrays[k]->ndim : r;
  for (int a = 0; a < r; a++) shape[a] = 1;
  for (int k = 0; k < n; k++)
    for (int a = 0; a < arrays[k]->ndim; a++) {
      int64_t *s = &shape[a + r - arrays[k]->ndim], e = arrays[k]->shape[a];
      if (*s == 1) *s = e;
      else if (e != 1 && e != *s) return -1;
    }
  *ndim = r;
  return 0;
}

int hl_broadcast_shapes(const char *op, int n, const hl_array *const *arrays, int *ndim, int64_t *shape) {
  /* operands of one shape, as most are: that shape (the general rule below walks every axis of
   * every operand) */
  int same = n > 0;
  for (int k = 1; k < n && same; k++) same = hl_same_shape(arrays[k], arrays[0]);
  if (same) {
    *ndim = arrays[0]->ndim;
    memcpy(shape, arrays[0]->shape, sizeof(int64_t) * (size_t)arrays[0]->ndim);
    return 0;
  }
  int r = 0;
  for (int k = 0; k < n; k++) r = arrays[k]->ndim > r ? arrays[k]->ndim : r;
  for (int a = 0; a < r; a++) shape[a] = 1;
  for (int k = 0; k < n; k++) {
    const hl_array *x = arrays[k];
    for (int a = 0; a < x->ndim; a++) {
      int64_t *s = &shape[a + r - x->ndim], e = x->shape[a];
      if (*s == 1) *s = e;
      else if (e != 1 && e != *s) {
        /* name the operand that clashes and the first one it clashes with */
        for (int j = 0; j < k; j++) {
          const hl_array *pair[2] = {arrays[j], x};
          int nd;
          int64_t tmp[HL_MAX_DIMS];
          if (hl_broadcast_shapes_quiet(2, pair, &nd, tmp))
            return hl_error("%s: cannot broadcast shapes %s and %s", op, SHAPE(arrays[j]), SHAPE(x));
        }
        return hl_error("%s: cannot broadcast shape %s with the others", op, SHAPE(x));
      }
    }
  }
  *ndim = r;
  return 0;
}

int hl_op_broadcast_to(const hl_array *a, int ndim, const int64_t *shape, hl_array *out) {
  if (a->ndim == ndim && !memcmp(a->shape, shape, sizeof(int64_t) * (size_t)ndim)) {
    hl_array_copy_ref(out, a);
    return 0;
  }
  hl_attrs at = {.nshape = ndim};
  memcpy(at.shape, shape, sizeof(int64_t) * (size_t)ndim);
  return hl_apply(HL_P_BROADCAST, 1, &a, &at, out);
}


static hl_dtype input_rule(int prim, hl_dtype t) {
  if (hl_dtype_is_complex(t)) return t;   /* (the primitive or the composition says whether it can) */
  switch (hl_prims[prim].in) {
  case HL_IN_FLOAT: return hl_dtype_is_float(t) ? t : HL_FLOAT32;
  case HL_IN_NUM:
  case HL_IN_INT: return t == HL_BOOL ? HL_INT32 : t;
  case HL_IN_BOOL: return HL_BOOL;
  default: return t;
  }
}

/* A Lua number as an operand of the lane (below): its value in the arrays' dtype, viewed at
 * their shape with every stride 0, in bytes of its own that nothing retains. */
typedef struct {
  hl_array view;
  hl_storage storage;
  _Alignas(64) unsigned char bytes[64];   /* (zero past the value: vector tails may read on) */
} number_operand;

/* Whether the operands are host arrays outside any trace, of one shape and one dtype that the
 * primitive takes as it is, and numbers that leave that dtype as it is (then in[] holds the
 * arrays and views of the numbers, made in nums[]): most eager arithmetic, which then needs no
 * promotion, casts, number arrays or broadcasting, only the lane's own checks. The general path
 * below gives such operands the same kernel and values, at twice the engine's instructions. */
static int plain_operands(int prim, int nin, const hl_operand *ops, const hl_array **in, number_operand *nums) {
  const hl_array *a = NULL;
  for (int k = 0; k < nin && !a; k++) a = ops[k].array;
  if (prim == HL_P_SELECT || !a || hl_dtype_is_complex(a->dtype) || input_rule(prim, a->dtype) != a->dtype) return 0;
  for (int k = 0; k < nin; k++) {
    const hl_array *x = ops[k].array;
    if (x) {
      if (x->graph || !x->storage || x->storage->device != HL_DEVICE_CPU || x->dtype != a->dtype || !hl_same_shape(x, a))
        return 0;
      in[k] = x;
      continue;
    }
    if (ops[k].is_bool || hl_dtype_promote_weak(a->dtype, ops[k].number) != a->dtype) return 0;
    number_operand *c = &nums[k];
    memset(c->bytes, 0, sizeof c->bytes);
    c->storage = (hl_storage){.refcount = 1, .data = c->bytes, .nbytes = hl_dtype_size(a->dtype), .borrowed = 1};
    c->view = (hl_array){.dtype = a->dtype, .storage = &c->storage};
    hl_array_set(&c->view, 0, ops[k].number);   /* (as hl_eager_scalar converts it; rank 0 until set) */
    /* the arrays' shape, strides 0 (not hl_broadcast_view, which takes a reference that nothing
     * here would release: a locked instruction per number) */
    c->view.ndim = a->ndim;
    memcpy(c->view.shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
    in[k] = &c->view;
  }
  return 1;
}

int hl_op_elemwise(int prim, int nin, const hl_operand *ops, const hl_attrs *attrs, hl_array *out) {
  enum { MAXO = 4 };
  const char *name = hl_prims[prim].name;
  if (nin > MAXO) return hl_error("%s: too many operands", name);
  const hl_array *plain[MAXO] = {0};
  number_operand nums[MAXO];
  if (!attrs && plain_operands(prim, nin, ops, plain, nums)) {
    int rc = hl_eager_elemwise_lane(prim, nin, plain, out);
    if (rc) return rc < 0 ? -1 : 0;
  }
  int first = prim == HL_P_SELECT ? 1 : 0;   /* where's condition takes no part in promotion */
  /* the dtype all value operands share: arrays promote; Lua numbers are weak */
  int have = 0;
  hl_dtype t = HL_BOOL;
  const hl_array *like = NULL;   /* a tracer, else any array: scalars go to its trace or device */
  for (int k = 0; k < nin; k++) {
    if (ops[k].array && hl_is_leaked(ops[k].array)) return hl_error("%s: " HL_LEAKED_TRACER, name);
    if (ops[k].array && (!like || ops[k].array->graph)) like = ops[k].array;
    if (k < first || !ops[k].array) continue;
    t = have ? hl_dtype_promote(t, ops[k].array->dtype) : ops[k].array->dtype;
    have = 1;
  }
  for (int k = first; k < nin; k++) {
    if (ops[k].array) continue;
    if (ops[k].is_bool) t = have ? t : HL_BOOL;
    else t = have ? hl_dtype_promote_weak(t, ops[k].number) : HL_FLOAT32;
    if (!ops[k].is_bool) have = 1;
  }
  hl_dtype want = input_rule(prim, t);
  /* host arrays that no trace records (`like` is a traced operand wherever there is one):
   * numbers and broadcasts need no op of their own (a complex number's composed ops are left the
   * general way) */
  int plain_host = like && !like->graph && hl_array_device(like) == HL_DEVICE_CPU && !hl_dtype_is_complex(want);
  hl_array tmp[3 * MAXO];
  int ntmp = 0, rc = -1;
  const hl_array *in[MAXO];
  for (int k = 0; k < nin; k++) {
    hl_dtype tk = k < first ? HL_BOOL : want;
    if (!ops[k].array) {
      double v = ops[k].is_bool ? (ops[k].number != 0) : ops[k].number;
      if (plain_host ? hl_eager_scalar(v, tk, k, &tmp[ntmp]) : hl_scalar_like(v, tk, like, &tmp[ntmp])) goto done;
      in[k] = &tmp[ntmp++];
    } else if (ops[k].array->dtype != tk) {
      if (hl_op_cast(ops[k].array, tk, &tmp[ntmp])) goto done;
      in[k] = &tmp[ntmp++];
    } else {
      in[k] = ops[k].array;
    }
  }
  int ndim = 0, same = 1;
  int64_t shape[HL_MAX_DIMS];
  for (int k = 1; k < nin && same; k++) same = hl_same_shape(in[k], in[0]);
  if (!same && hl_broadcast_shapes(name, nin, in, &ndim, shape)) goto done;
  for (int k = 0; k < nin && !same; k++) {
    if (in[k]->ndim == ndim && !memcmp(in[k]->shape, shape, sizeof(int64_t) * (size_t)ndim)) continue;
    /* a concrete operand meeting a tracer joins its trace at its own shape and is broadcast
     * there: broadcast first, the trace captured the broadcast view, at the tracer's shape (a
     * polymorphic program's constant then followed the dynamic size: hl.jit's dynamic_axes) */
    if (like && hl_is_abstract(like) && !in[k]->graph) {
      if (hl_trace_variable((hl_trace *)like->graph, in[k], &tmp[ntmp])) goto done;
      in[k] = &tmp[ntmp++];
    }
    if (plain_host) hl_broadcast_view(in[k], ndim, shape, &tmp[ntmp]);
    else if (hl_op_broadcast_to(in[k], ndim, shape, &tmp[ntmp])) goto done;
    in[k] = &tmp[ntmp++];
  }
  if (hl_dtype_is_complex(want) && prim == HL_P_POW && !ops[1].array && fabs(ops[1].number) < 100 &&
      ops[1].number == (int)ops[1].number)
    rc = hl_complex_int_pow(in[0], (int)ops[1].number, out);   /* z ^ 3: products, as NumPy's (and JAX's integer_pow) */
  else if (hl_dtype_is_complex(want) && hl_complex_composed(prim))
    rc = hl_complex_apply(prim, nin, in, out);
  else if (plain_host && !attrs && (rc = hl_eager_elemwise_lane(prim, nin, in, out)) != 0)
    rc = rc < 0 ? -1 : 0;
  else
    rc = hl_apply(prim, nin, in, attrs, out);
done:
  for (int k = 0; k < ntmp; k++) hl_array_release(&tmp[k]);
  return rc;
}
/* *a as dtype t: itself when it has it, else a cast into tmp[*ntmp] (the caller releases tmp) */
static int cast_to(const hl_array **a, hl_dtype t, hl_array *tmp, int *ntmp) {
  if ((*a)->dtype == t) return 0;
  if (hl_op_cast(*a, t, &tmp[*ntmp])) return -1;
  *a = &tmp[(*ntmp)++];
  return 0;
}


int hl_op_matmul(const hl_array *a, const hl_array *b, hl_array *out) {
  if (a->ndim == 0 || b->ndim == 0)
    return hl_error("matmul: operands must have at least one dimension, got %s and %s (use * for scalars)", SHAPE(a), SHAPE(b));
  hl_array tmp[8];
  int ntmp = 0, rc = -1;
  const hl_array *x = a, *y = b;
  int64_t shape[HL_MAX_DIMS];
  /* 1-D operands gain an axis (a row for the left, a column for the right) dropped at the end */
  if (a->ndim == 1) {
    int64_t s[2] = {1, a->shape[0]};
    if (hl_op_reshape(a, 2, s, &tmp[ntmp])) goto done;
    x = &tmp[ntmp++];
  }
  if (b->ndim == 1) {
    int64_t s[2] = {b->shape[0], 1};
    if (hl_op_reshape(b, 2, s, &tmp[ntmp])) goto done;
    y = &tmp[ntmp++];
  }
  if (x->shape[x->ndim - 1] != y->shape[y->ndim - 2]) {
    hl_error("matmul: inner dimensions of %s and %s differ (%lld vs %lld)", SHAPE(a), SHAPE(b),
             (long long)x->shape[x->ndim - 1], (long long)y->shape[y->ndim - 2]);
    goto done;
  }
  hl_dtype t = hl_dtype_promote(a->dtype, b->dtype);
  /* bool @ bool is bool, as NumPy's (an or of ands): counted in int32, then tested for non-zero */
  int boolean = t == HL_BOOL;
  if (boolean) t = HL_INT32;
  if (cast_to(&x, t, tmp, &ntmp) || cast_to(&y, t, tmp, &ntmp)) goto done;
  /* batch dimensions broadcast */
  {
    hl_array bx = *x, by = *y;
    bx.ndim -= 2;
    by.ndim -= 2;
    const hl_array *bb[2] = {&bx, &by};
    int nb;
    if (hl_broadcast_shapes("matmul", 2, bb, &nb, shape)) {
      hl_error("matmul: batch dimensions of %s and %s do not broadcast", SHAPE(a), SHAPE(b));
      goto done;
    }
    int64_t sx[HL_MAX_DIMS], sy[HL_MAX_DIMS];
    if (nb + 2 > HL_MAX_DIMS) {
      hl_error("matmul: too many dimensions");
      goto done;
    }
    memcpy(sx, shape, sizeof(int64_t) * (size_t)nb);
    memcpy(sy, shape, sizeof(int64_t) * (size_t)nb);
    sx[nb] = x->shape[x->ndim - 2];
    sx[nb + 1] = x->shape[x->ndim - 1];
    sy[nb] = y->shape[y->ndim - 2];
    sy[nb + 1] = y->shape[y->ndim - 1];
    if (hl_op_broadcast_to(x, nb + 2, sx, &tmp[ntmp])) goto done;
    x = &tmp[ntmp++];
    if (hl_op_broadcast_to(y, nb + 2, sy, &tmp[ntmp])) goto done;
    y = &tmp[ntmp++];
    hl_array r;
    const hl_array *in[2] = {x, y};
    if (hl_dtype_is_complex(t) ? hl_complex_matmul(x, y, &r) : hl_apply(HL_P_MATMUL, 2, in, NULL, &r)) goto done;
    hl_array shaped;
    if (a->ndim == 1 || b->ndim == 1) {
      int64_t os[HL_MAX_DIMS];
      int on = 0;
      for (int d = 0; d < nb; d++) os[on++] = shape[d];
      if (a->ndim != 1) os[on++] = r.shape[nb];
      if (b->ndim != 1) os[on++] = r.shape[nb + 1];
      rc = hl_op_reshape(&r, on, os, &shaped);
      hl_array_release(&r);
    } else {
      shaped = r;
      rc = 0;
    }
    if (!rc && boolean) {
      rc = hl_op_cast(&shaped, HL_BOOL, out);
      hl_array_release(&shaped);
    } else if (!rc) {
      *out = shaped;
    }
  }
done:
  for (int k = 0; k < ntmp; k++) hl_array_release(&tmp[k]);
  return rc;
}

/* a float dtype for LAPACK: the FLOAT input rule (ints and bool become float32; complex stays, for
 * the primitive to say it is not supported yet) */
static hl_dtype linalg_dtype(hl_dtype t) { return hl_dtype_is_float(t) || hl_dtype_is_complex(t) ? t : HL_FLOAT32; }

static int square_stack(const char *op, const hl_array *a) {
  if (a->ndim < 2 || a->shape[a->ndim - 1] != a->shape[a->ndim - 2])
    return hl_error("%s: a must be a square matrix or a stack of them ([..., n, n]), got shape %s", op, SHAPE(a));
  return 0;
}

/* solve and solve_triangular: b's vector form, promotion, batch broadcasting */
static int solve_like(int prim, const hl_attrs *at, const hl_array *a, const hl_array *b, hl_array *out) {
  const char *op = hl_prims[prim].name;
  if (square_stack(op, a)) return -1;
  if (b->ndim == 0) return hl_error("%s: b must be a vector or matrix (or a stack of them), got shape []", op);
  int64_t n = a->shape[a->ndim - 1];
  int vec = b->ndim == 1 || b->ndim == a->ndim - 1;
  if (b->shape[b->ndim - (vec ? 1 : 2)] != n)
    return hl_error("%s: b of shape %s does not match a of shape %s (b needs [..., %lld] or [..., %lld, k])", op, SHAPE(b),
                    SHAPE(a), (long long)n, (long long)n);
  hl_array tmp[6];
  int ntmp = 0, rc = -1;
  const hl_array *x = a, *y = b;
  if (vec) {
    /* a stack of vectors is a stack of one-column matrices */
    int64_t s[HL_MAX_DIMS];
    if (b->ndim + 1 > HL_MAX_DIMS) return hl_error("%s: too many dimensions", op);
    memcpy(s, b->shape, sizeof(int64_t) * (size_t)b->ndim);
    s[b->ndim] = 1;
    if (hl_op_reshape(b, b->ndim + 1, s, &tmp[ntmp])) goto done;
    y = &tmp[ntmp++];
  }
  hl_dtype t = linalg_dtype(hl_dtype_promote(a->dtype, b->dtype));
  if (cast_to(&x, t, tmp, &ntmp) || cast_to(&y, t, tmp, &ntmp)) goto done;
  {
    /* batch dimensions broadcast, as matmul's do */
    hl_array bx = *x, by = *y;
    bx.ndim -= 2;
    by.ndim -= 2;
    const hl_array *bb[2] = {&bx, &by};
    int nb;
    int64_t shape[HL_MAX_DIMS], sx[HL_MAX_DIMS], sy[HL_MAX_DIMS];
    if (hl_broadcast_shapes(op, 2, bb, &nb, shape)) {
      hl_error("%s: batch dimensions of a %s and b %s do not broadcast", op, SHAPE(a), SHAPE(b));
      goto done;
    }
    memcpy(sx, shape, sizeof(int64_t) * (size_t)nb);
    memcpy(sy, shape, sizeof(int64_t) * (size_t)nb);
    sx[nb] = sx[nb + 1] = n;
    sy[nb] = n;
    sy[nb + 1] = y->shape[y->ndim - 1];
    if (hl_op_broadcast_to(x, nb + 2, sx, &tmp[ntmp])) goto done;
    x = &tmp[ntmp++];
    if (hl_op_broadcast_to(y, nb + 2, sy, &tmp[ntmp])) goto done;
    y = &tmp[ntmp++];
    const hl_array *in[2] = {x, y};
    if (!vec) {
      rc = hl_apply(prim, 2, in, at, out);
    } else {
      hl_array r;
      if (hl_apply(prim, 2, in, at, &r)) goto done;
      shape[nb] = n;
      rc = hl_op_reshape(&r, nb + 1, shape, out);
      hl_array_release(&r);
    }
  }
done:
  for (int k = 0; k < ntmp; k++) hl_array_release(&tmp[k]);
  return rc;
}

int hl_op_solve(const hl_array *a, const hl_array *b, hl_array *out) { return solve_like(HL_P_SOLVE, NULL, a, b, out); }

int hl_op_solve_triangular(const hl_array *a, const hl_array *b, int mode, hl_array *out) {
  hl_attrs at = {0};
  at.i[0] = mode;
  return solve_like(HL_P_SOLVE_TRIANGULAR, &at, a, b, out);
}

int hl_op_linalg_decomp(int prim, const hl_array *a, int mode, hl_array *out) {
  const char *op = hl_prims[prim].name;
  if (prim != HL_P_QR && prim != HL_P_SVD && square_stack(op, a)) return -1;
  if (a->ndim < 2) return hl_error("%s: a must be a matrix or a stack of them ([..., m, n]), got shape %s", op, SHAPE(a));
  hl_attrs at = {0};
  at.i[0] = mode;
  hl_dtype t = linalg_dtype(a->dtype);
  if (a->dtype == t) return hl_apply(prim, 1, &a, &at, out);
  hl_array c;
  if (hl_op_cast(a, t, &c)) return -1;
  const hl_array *in[1] = {&c};
  int rc = hl_apply(prim, 1, in, &at, out);
  hl_array_release(&c);
  return rc;
}

int hl_op_cholesky(const hl_array *a, hl_array *out) {
  if (square_stack("linalg.cholesky", a)) return -1;
  hl_dtype t = linalg_dtype(a->dtype);
  if (a->dtype == t) return hl_apply(HL_P_CHOLESKY, 1, &a, NULL, out);
  hl_array c;
  if (hl_op_cast(a, t, &c)) return -1;
  const hl_array *in[1] = {&c};
  int rc = hl_apply(HL_P_CHOLESKY, 1, in, NULL, out);
  hl_array_release(&c);
  return rc;
}
