#include "hl_dist.h"
#include "hl_error.h"
#include "hl_ir.h"
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static _Atomic(const hl_dist_transport *) transport;

void hl_dist_set_transport(const hl_dist_transport *t) { atomic_store(&transport, t); }
const hl_dist_transport *hl_dist_get_transport(void) { return atomic_load(&transport); }

/* What a rank says of its operand before a collective: every rank gathers every rank's. */
enum { SIG_PRIM, SIG_DTYPE, SIG_NDIM, SIG_A, SIG_B, SIG_SHAPE, SIG_LEN = SIG_SHAPE + HL_MAX_DIMS };

enum { DESCRIBED = 512 };   /* a name, a dtype and a shape text (hl_shape_fmt: 160) */

static void describe(const int64_t *sig, char buf[DESCRIBED], size_t cap) {
  struct hl_shape_fmt st = hl_shape_str((int)sig[SIG_NDIM], (const long long *)&sig[SIG_SHAPE]);
  snprintf(buf, cap, "%s %s%s", hl_prims[sig[SIG_PRIM]].name, hl_dtype_name((hl_dtype)sig[SIG_DTYPE]), st.s);
}

static int check_agreement(const hl_dist_transport *t, int prim, const hl_array *x, const int64_t *attrs) {
  int64_t mine[SIG_LEN] = {0};
  mine[SIG_PRIM] = prim;
  mine[SIG_DTYPE] = x->dtype;
  mine[SIG_NDIM] = x->ndim;
  /* ppermute's peers differ by rank; the others' attributes must agree */
  mine[SIG_A] = prim == HL_P_PPERMUTE ? 0 : attrs[0];
  mine[SIG_B] = prim == HL_P_PPERMUTE ? 0 : attrs[1];
  memcpy(&mine[SIG_SHAPE], x->shape, sizeof(int64_t) * (size_t)x->ndim);
  int64_t *all = malloc(sizeof mine * (size_t)t->size);
  if (!all) return hl_error("%s: out of memory", hl_prims[prim].name);
  int rc = t->allgather(mine, all, (int64_t)sizeof mine);
  if (rc > 0) rc = hl_error("%s: %s", hl_prims[prim].name, t->error_text(rc));
  for (int r = 0; !rc && r < t->size; r++) {
    const int64_t *other = all + (size_t)r * SIG_LEN;
    if (!memcmp(other, mine, sizeof mine)) continue;
    char a[DESCRIBED], b[DESCRIBED];
    describe(mine, a, sizeof a);
    describe(other, b, sizeof b);
    if (!strcmp(a, b)) {
      const char *what = prim == HL_P_BROADCAST_FROM ? "root" : prim == HL_P_ALL_TO_ALL ? "split and concat axes" : "axis";
      char mine_s[48], other_s[48];
      snprintf(mine_s, sizeof mine_s, prim == HL_P_ALL_TO_ALL ? "%lld, %lld" : "%lld", (long long)mine[SIG_A] + 1, (long long)mine[SIG_B] + 1);
      snprintf(other_s, sizeof other_s, prim == HL_P_ALL_TO_ALL ? "%lld, %lld" : "%lld", (long long)other[SIG_A] + 1,
               (long long)other[SIG_B] + 1);
      rc = hl_error("%s: the ranks disagree on the %s: %s on rank %d, %s on rank %d", hl_prims[prim].name, what, mine_s,
                    t->rank + 1, other_s, r + 1);
    }
    else
      rc = hl_error("%s: the ranks' operands differ: rank %d has %s, rank %d %s (every rank must make the same collective "
                    "calls, in the same order, with the same dtypes and shapes)",
                    hl_prims[prim].name, t->rank + 1, a, r + 1, b);
  }
  free(all);
  return rc;
}

/* Block moves along one axis of a contiguous array [pre, n, post] (n = size * m):
 *  pack:   x[p, r*m + i, q] -> buf[r, p, i, q]      (block r of the axis becomes the r-th slab)
 *  unpack: buf[r, p, i, q] -> x[p, r*m + i, q]       (the inverse) */
static void blocks(char *x, char *buf, int64_t pre, int size, int64_t m, int64_t post, size_t es, int to_buf) {
  size_t row = (size_t)(m * post) * es;
  for (int r = 0; r < size; r++)
    for (int64_t p = 0; p < pre; p++) {
      char *xp = x + ((size_t)(p * size + r) * row);
      char *bp = buf + ((size_t)r * (size_t)pre + (size_t)p) * row;
      if (to_buf) memcpy(bp, xp, row);
      else memcpy(xp, bp, row);
    }
}

static void split_at(const int64_t *shape, int ndim, int axis, int64_t *pre, int64_t *post) {
  *pre = *post = 1;
  for (int d = 0; d < axis; d++) *pre *= shape[d];
  for (int d = axis + 1; d < ndim; d++) *post *= shape[d];
}

/* float16/bfloat16 operands of a reduction are reduced in float32 */
static float *widen(const hl_array *x, int64_t n) {
  float *f = malloc(sizeof(float) * (size_t)(n ? n : 1));
  const uint16_t *h = hl_array_data(x);
  for (int64_t i = 0; f && i < n; i++) f[i] = hl_half_to_float(x->dtype, h[i]);
  return f;
}

static void narrow(const float *f, hl_array *out, int64_t n) {
  uint16_t *h = hl_array_data(out);
  for (int64_t i = 0; i < n; i++) h[i] = hl_half_from_double(out->dtype, f[i]);
}

static int reduce(const hl_dist_transport *t, int prim, const hl_array *x, hl_array *out, int64_t count, int scatter) {
  hl_dist_reduction op = prim == HL_P_PMAX ? HL_DIST_MAX : prim == HL_P_PMIN ? HL_DIST_MIN : HL_DIST_SUM;
  if (!hl_dtype_is_half(x->dtype))
    return scatter ? t->reduce_scatter(hl_array_data(x), hl_array_data(out), count, x->dtype, op)
                   : t->allreduce(hl_array_data(x), hl_array_data(out), count, x->dtype, op);
  int64_t n = hl_shape_size(x->ndim, x->shape), nout = hl_shape_size(out->ndim, out->shape);
  float *in = widen(x, n), *res = malloc(sizeof(float) * (size_t)(nout ? nout : 1));
  int rc = !in || !res ? hl_error("%s: out of memory", hl_prims[prim].name)
           : scatter   ? t->reduce_scatter(in, res, count, HL_FLOAT32, op)
                       : t->allreduce(in, res, count, HL_FLOAT32, op);
  if (!rc) narrow(res, out, nout);
  free(in);
  free(res);
  return rc;
}

int hl_dist_into(int prim, const hl_array *x_in, const int64_t *attrs, hl_array *out) {
  const char *name = hl_prims[prim].name;
  const hl_dist_transport *t = hl_dist_get_transport();
  if (!t) return hl_error("%s: hl.dist is not started in this process (hl.dist.init())", name);
  if (attrs[2] != t->size)
    return hl_error("%s: traced for a job of %lld ranks, running in one of %d", name, (long long)attrs[2], t->size);
  hl_array tmp;
  const hl_array *x = x_in;
  int own = 0;
  if (!hl_array_is_contiguous(x_in)) {
    if (hl_array_alloc(&tmp, x_in->dtype, x_in->ndim, x_in->shape)) return -1;
    hl_array_copy_elements(&tmp, x_in);
    x = &tmp;
    own = 1;
  }
  int rc = check_agreement(t, prim, x, attrs);
  size_t es = hl_dtype_size(x->dtype);
  int64_t n = hl_shape_size(x->ndim, x->shape), pre, post;
  char *buf = NULL;
  if (rc) goto done;
  switch (prim) {
  case HL_P_PSUM:
  case HL_P_PMAX:
  case HL_P_PMIN:
    rc = reduce(t, prim, x, out, n, 0);
    if (!rc && attrs[1] >= 0 && attrs[1] != t->rank) memset(hl_array_data(out), 0, (size_t)n * es);   /* to one rank */
    break;
  case HL_P_BROADCAST_FROM:
    memcpy(hl_array_data(out), hl_array_data(x), (size_t)n * es);
    rc = t->bcast(hl_array_data(out), (int64_t)((size_t)n * es), (int)attrs[0]);
    break;
  case HL_P_PPERMUTE:
    if (attrs[1] < 0) memset(hl_array_data(out), 0, (size_t)n * es);   /* no rank sends here: zeros, as in JAX */
    rc = t->sendrecv(hl_array_data(x), (int)attrs[0], hl_array_data(out), (int)attrs[1], (int64_t)((size_t)n * es));
    break;
  case HL_P_ALL_GATHER:   /* gathered whole, [size, x...], then each rank's block put in place along the axis */
    split_at(x->shape, x->ndim, (int)attrs[0], &pre, &post);
    if (!(buf = malloc((size_t)n * es * (size_t)t->size + 1))) { rc = hl_error("%s: out of memory", name); break; }
    rc = t->allgather(hl_array_data(x), buf, (int64_t)((size_t)n * es));
    if (!rc) blocks(hl_array_data(out), buf, pre, t->size, x->shape[attrs[0]], post, es, 0);
    break;
  case HL_P_REDUCE_SCATTER: {   /* the axis's blocks made slabs, [size, block], each rank's slab reduced */
    split_at(x->shape, x->ndim, (int)attrs[0], &pre, &post);
    hl_array packed;
    if (hl_array_alloc(&packed, x->dtype, x->ndim, x->shape)) { rc = -1; break; }
    blocks(hl_array_data(x), hl_array_data(&packed), pre, t->size, x->shape[attrs[0]] / t->size, post, es, 1);
    rc = reduce(t, prim, &packed, out, n / t->size, 1);
    hl_array_release(&packed);
    break;
  }
  case HL_P_ALL_TO_ALL: {   /* split axis a's blocks made slabs, exchanged, put in place along axis b */
    int64_t m = x->shape[attrs[0]] / t->size, block[HL_MAX_DIMS], bpre, bpost;
    split_at(x->shape, x->ndim, (int)attrs[0], &pre, &post);
    memcpy(block, x->shape, sizeof block);
    block[attrs[0]] = m;
    split_at(block, x->ndim, (int)attrs[1], &bpre, &bpost);
    if (!(buf = malloc(2 * (size_t)n * es + 1))) { rc = hl_error("%s: out of memory", name); break; }
    blocks(hl_array_data(x), buf, pre, t->size, m, post, es, 1);
    rc = t->alltoall(buf, buf + (size_t)n * es, (int64_t)((size_t)n * es / (size_t)t->size));
    if (!rc) blocks(hl_array_data(out), buf + (size_t)n * es, bpre, t->size, block[attrs[1]], bpost, es, 0);
    break;
  }
  default: rc = hl_error("%s: not a collective", name);
  }
done:
  if (rc > 0) rc = hl_error("%s: %s", name, t->error_text(rc));
  free(buf);
  if (own) hl_array_release(&tmp);
  return rc;
}
