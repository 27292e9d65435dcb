#include "hl_eval.h"
#include "hl_backend.h"
#include "hl_cache.h"
#include "hl_device.h"
#include "hl_eager_memo.h"
#include "hl_transpose.h"
#include "hl_error.h"
#include "hl_linalg.h"
#include "hl_sort.h"
#include "hl_fft.h"
#include "hl_extern_cufft.h"
#include "hl_dist.h"
#include "hl_thread_exit.h"
#include "hl_storage.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ---- tracing ---- */

void hl_trace_init(hl_trace *t) { memset(t, 0, sizeof *t); }

static void drop_values(hl_trace *t) {
  for (int k = 0; k < t->cap_values; k++) hl_array_release(&t->values[k]);
  free(t->values);
  t->values = NULL;
  t->cap_values = 0;
}

void hl_trace_close(hl_trace *t) {
  t->closed = 1;
  drop_values(t);
}

void hl_trace_free(hl_trace *t) {
  drop_values(t);
  for (int k = 0; k < t->ncaptures; k++) hl_array_release(&t->captures[k]);
  free(t->captures);
  free(t->capture_param);
  hl_graph_free(&t->g);
  memset(t, 0, sizeof *t);
}

int hl_trace_arg(hl_trace *t, int device, hl_dtype dtype, int ndim, const int64_t *shape, hl_array *out) {
  if (t->g.nparams == 0) t->g.device = device;
  else if (t->g.device != device)
    return hl_error("jit: arguments are on different devices (cpu and cuda); move them with hl.device_put");
  int id = hl_graph_add_param(&t->g, dtype, ndim, shape);
  if (id < 0) return -1;
  memset(out, 0, sizeof *out);
  out->dtype = dtype;
  out->ndim = ndim;
  memcpy(out->shape, shape, sizeof(int64_t) * (size_t)ndim);
  out->graph = &t->g;
  out->node = id;
  return 0;
}

static int same_view(const hl_array *a, const hl_array *b) {
  return a->storage == b->storage && a->offset == b->offset && a->dtype == b->dtype && a->ndim == b->ndim &&
         !memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) &&
         !memcmp(a->strides, b->strides, sizeof(int64_t) * (size_t)a->ndim);
}

/* a tape keeps node `id`'s value (a plain array: no graph reference) */
static int keep_value(hl_trace *t, int id, const hl_array *v) {
  if (id >= t->cap_values) {
    int c = t->cap_values ? 2 * t->cap_values : 64;
    while (c <= id) c *= 2;
    hl_array *nv = realloc(t->values, sizeof(hl_array) * (size_t)c);
    if (!nv) return hl_error("out of memory recording for autodiff");
    memset(nv + t->cap_values, 0, sizeof(hl_array) * (size_t)(c - t->cap_values));
    t->values = nv;
    t->cap_values = c;
  }
  hl_array_copy_ref(&t->values[id], v);
  t->values[id].graph = NULL;
  return 0;
}

/* A concrete array used inside a trace becomes an extra input of the pipeline (on a tape: a
 * node holding its value). `outer`: a value of an enclosing trace (a tracer, or an array recorded
 * on an enclosing tape), captured with its graph reference so that a replay (vmap) records on it. */
static int capture(hl_trace *t, const hl_array *a, int outer) {
  if (t->tape) {
    int id = hl_graph_add_param(&t->g, a->dtype, a->ndim, a->shape);
    return id < 0 || keep_value(t, id, a) ? -1 : id;
  }
  for (int k = 0; k < t->ncaptures; k++) {
    const hl_array *c = &t->captures[k];
    if (outer ? c->graph == a->graph && c->node == a->node : !c->graph && same_view(c, a)) return t->capture_param[k];
  }
  if (t->ncaptures == t->cap_captures) {
    int c = t->cap_captures ? 2 * t->cap_captures : 8;
    hl_array *nc = realloc(t->captures, sizeof(hl_array) * (size_t)c);
    if (nc) t->captures = nc;
    int *np = realloc(t->capture_param, sizeof(int) * (size_t)c);
    if (np) t->capture_param = np;
    if (!nc || !np) return hl_error("out of memory capturing an array");
    t->cap_captures = c;
  }
  int id = hl_graph_add_param(&t->g, a->dtype, a->ndim, a->shape);
  if (id < 0) return -1;
  /* constants the traced code made (on the host, say) move to where the pipeline runs at its
   * first run, so that lowering needs no device */
  hl_array_copy_ref(&t->captures[t->ncaptures], a);
  if (!outer) t->captures[t->ncaptures].graph = NULL;   /* a recorded array of a finished tape: keep the data */
  t->capture_param[t->ncaptures++] = id;
  return id;
}

/* A broadcast view (a stride-0 axis longer than 1) is captured as the data it views and broadcast
 * in the trace: captured whole, the constant had the view's extents (a closed-over array under
 * vmap took the batch size, which then followed a polymorphic program's dynamic size). */
static int capture_plain(hl_trace *t, const hl_array *a) {
  if (t->tape) return capture(t, a, 0);
  hl_array compact = *a;   /* (a view of a's storage: capture takes its own reference) */
  int stretched = 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->strides[d] == 0 && a->shape[d] > 1) {
      compact.shape[d] = 1;
      stretched = 1;
    }
  if (!stretched) return capture(t, a, 0);
  int p = capture(t, &compact, 0);
  if (p < 0) return -1;
  hl_attrs at = {.nshape = a->ndim};
  memcpy(at.shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
  return hl_graph_add(&t->g, HL_P_BROADCAST, 1, &p, &at);
}

static int eager_apply(int prim, int nin, const hl_array *const *in, const hl_attrs *at, hl_array *out);

/* the same view with no graph reference */
static const hl_array *plain(const hl_array *a, hl_array *tmp) {
  if (!a->graph) return a;
  *tmp = *a;
  tmp->graph = NULL;
  return tmp;
}

/* outer is t or one of the traces t is nested in */
static int encloses(const hl_trace *outer, const hl_trace *t) {
  for (; t; t = t->parent)
    if (t == outer) return 1;
  return 0;
}

static int trace_apply(hl_trace *t, int prim, int nin, const hl_array *const *in, const hl_attrs *attrs, hl_array *out) {
  const char *name = hl_prims[prim].name;
  if (t->closed) return hl_error("%s: " HL_LEAKED_TRACER, name);
  int ids[64];
  if (nin > 64) return hl_error("%s: too many operands", name);
  for (int k = 0; k < nin; k++) {
    if (in[k]->graph == &t->g) ids[k] = in[k]->node;
    else if (hl_live_trace(in[k]) && encloses((hl_trace *)in[k]->graph, t)) {
      if ((ids[k] = capture(t, in[k], 1)) < 0) return -1;
    } else if (hl_live_trace(in[k]))
      return hl_error("%s: operands come from two different traces (hl.jit tracers of another function, or "
                      "values recorded by hl.grad mixed with hl.jit tracers)", name);
    else if ((ids[k] = capture_plain(t, in[k])) < 0) return -1;
  }
  hl_array value = {0};
  if (t->tape) {
    /* run it now, on the inputs' data */
    hl_array tmp[64];
    /* zeroed: with nin == 0 (hl_trace_source) GCC 12 at -O3 (Release) reports vin as maybe
       uninitialised when passed on, and -Werror stops the build */
    const hl_array *vin[64] = {0};
    for (int k = 0; k < nin; k++) vin[k] = plain(in[k], &tmp[k]);
    if (eager_apply(prim, nin, vin, attrs, &value)) return -1;
  }
  int id = hl_graph_add(&t->g, prim, nin, ids, attrs);
  if (id < 0 || (t->tape && keep_value(t, id, &value))) {
    hl_array_release(&value);
    return -1;
  }
  if (t->tape) {
    *out = value;   /* takes the reference */
  } else {
    const hl_type *ty = &t->g.nodes[id].type;
    memset(out, 0, sizeof *out);
    out->dtype = ty->dtype;
    out->ndim = ty->ndim;
    memcpy(out->shape, ty->shape, sizeof ty->shape);
  }
  out->graph = &t->g;
  out->node = id;
  return 0;
}

int hl_trace_apply(hl_trace *t, int prim, int nin, const hl_array *const *in, const hl_attrs *attrs, hl_array *out) {
  return trace_apply(t, prim, nin, in, attrs, out);
}

int hl_trace_source(hl_trace *t, int prim, const hl_attrs *attrs, hl_array *out) {
  return trace_apply(t, prim, 0, NULL, attrs, out);
}

int hl_trace_variable(hl_trace *t, const hl_array *x, hl_array *out) {
  hl_attrs id = {.dtype = x->dtype};
  const hl_array *in = x;
  hl_array tmp;
  if (x->graph != &t->g) {
    int outer = hl_is_abstract(x) && encloses((hl_trace *)x->graph, t);   /* captured, as in ops */
    if (hl_live_trace(x) && !outer) return hl_error("autodiff: the value comes from another trace");
    if (!outer) in = plain(x, &tmp);
  }
  return trace_apply(t, HL_P_CAST, 1, &in, &id, out);
}

int hl_trace_node_value(hl_trace *t, int node, hl_array *out) {
  if (node < 0 || node >= t->g.nnodes) return hl_error("autodiff: no node %d in the trace", node);
  const hl_type *ty = &t->g.nodes[node].type;
  if (t->tape) {
    if (node >= t->cap_values || !t->values[node].storage) return hl_error("autodiff: the tape no longer holds node %d", node);
    hl_array_copy_ref(out, &t->values[node]);
  } else {
    memset(out, 0, sizeof *out);
    out->dtype = ty->dtype;
    out->ndim = ty->ndim;
    memcpy(out->shape, ty->shape, sizeof ty->shape);
  }
  out->graph = &t->g;
  out->node = node;
  return 0;
}

/* ---- eager kernels ---- */

static _Thread_local hl_graph eager_graph;

/* A thread's eager graph is freed when the thread ends: a host that runs ops on many short-lived
 * threads would otherwise leave each one's behind (a few kB each). */
static _Thread_local hl_thread_exit eager_graph_exit;
static void free_eager_graph(void *g) { hl_graph_free(g); }

static int stride_class(const hl_array *a) {
  /* a one-element innermost axis reaches Halide with unit stride (hl_backend.cpp) */
  if (a->ndim == 0 || a->shape[a->ndim - 1] == 1) return HL_STRIDE_UNIT;
  int64_t s = a->strides[a->ndim - 1];
  return s == 1 ? HL_STRIDE_UNIT : s == 0 ? HL_STRIDE_ZERO : HL_STRIDE_ANY;
}

/* The cached shape-generic kernel of prim over views `in` into the view `out`, retained for the
 * caller: the thread's memo's, else the cache's (compiled or loaded there). */
static struct hl_kernel *eager_kernel(int prim, int nin, const hl_array *const *in, const hl_attrs *attrs, const hl_array *out) {
  int stride[HL_MEMO_MAX_IN];
  for (int k = 0; k < nin && k < HL_MEMO_MAX_IN; k++) stride[k] = stride_class(in[k]);
  hl_eager_sig sig;
  int memo = hl_eager_sig_make(&sig, prim, nin, in, stride, attrs, out) == 0;
  struct hl_kernel *kern = memo ? hl_eager_memo_find(&sig) : NULL;
  if (kern) return kern;
  hl_graph *g = &eager_graph;
  hl_thread_exit_add(&eager_graph_exit, free_eager_graph, g);
  hl_graph_reset(g);
  g->dynamic = 1;
  g->device = hl_array_device(out);
  int ids[64];
  for (int k = 0; k < nin; k++) {
    hl_attrs pa = {.dtype = in[k]->dtype, .nshape = in[k]->ndim};
    pa.i[0] = k;
    pa.i[1] = k < HL_MEMO_MAX_IN ? stride[k] : stride_class(in[k]);   /* (the memo's, when it took them) */
    memcpy(pa.shape, in[k]->shape, sizeof(int64_t) * (size_t)in[k]->ndim);
    if ((ids[k] = hl_graph_add(g, HL_P_PARAM, 0, NULL, &pa)) < 0) return NULL;
    g->nparams++;
  }
  int id = hl_graph_add(g, prim, nin, ids, attrs);
  if (id < 0 || hl_graph_set_outputs(g, 1, &id)) return NULL;
  kern = hl_cache_get(g, hl_prims[prim].name);
  if (!kern) return NULL;
  /* (the result's type is the node's, as the signature assumes) */
  if (memo && g->nodes[id].type.dtype == out->dtype && g->nodes[id].type.ndim == out->ndim) hl_eager_memo_put(&sig, kern);
  return kern;
}

/* Run prim on views `in` into the allocated view `out` through a cached shape-generic kernel. */
static int run_single(int prim, int nin, const hl_array *const *in, const hl_attrs *attrs, hl_array *out) {
  struct hl_kernel *kern = eager_kernel(prim, nin, in, attrs, out);
  if (!kern) return -1;
  int rc = hl_kernel_run(kern, in, &out);
  hl_kernel_release(kern);
  return rc;
}

/* a rank-1 view of the n elements of a, which is contiguous or (broadcast) one value */
static void flat_view(const hl_array *a, int64_t n, int broadcast, hl_array *v) {
  v->dtype = a->dtype;
  v->ndim = 1;
  v->shape[0] = n;
  v->strides[0] = broadcast ? 0 : 1;
  v->offset = a->offset;
  v->storage = a->storage;
  v->graph = NULL;
  v->node = 0;
  v->weak = 0;
}

static int all_strides_zero(const hl_array *a) {
  for (int d = 0; d < a->ndim; d++)
    if (a->strides[d] != 0 && a->shape[d] != 1) return 0;
  return 1;
}

int hl_eager_elemwise_lane(int prim, int nin, const hl_array *const *in, hl_array *out) {
  if (nin < 1 || nin > HL_LANE_MAX_IN || hl_prims[prim].kind != HL_K_ELEMWISE || hl_prims[prim].attrs != HL_A_NONE ||
      prim == HL_P_STOP_GRADIENT)
    return 0;
  const hl_array *a = in[0];
  int64_t n = hl_shape_size(a->ndim, a->shape);
  if (n == 0 || n > INT32_MAX) return 0;   /* (the general path says why a run is too long) */
  hl_eager_lane_key key = {.prim = prim, .nin = nin};
  hl_dtype dtypes[HL_LANE_MAX_IN + 1];
  void *data[HL_LANE_MAX_IN + 1];
  for (int k = 0; k < nin; k++) {
    const hl_array *x = in[k];
    if (hl_array_device(x) != HL_DEVICE_CPU) return 0;   /* (operands on two devices: the general path's error) */
    int broadcast = all_strides_zero(x) && n > 1;
    if (!broadcast && !hl_array_is_contiguous(x)) return 0;
    key.dtype[k] = dtypes[k] = x->dtype;
    key.broadcast |= (uint32_t)broadcast << k;
    data[k] = hl_array_data(x);
  }
  hl_dtype dtype;
  struct hl_kernel *kern = hl_eager_lane_find(&key, &dtype);   /* (lent by the lane) */
  if (!kern) {
    hl_type tin[HL_LANE_MAX_IN], ty;
    static const hl_attrs none;
    hl_array v[HL_LANE_MAX_IN + 1];
    const hl_array *vin[HL_LANE_MAX_IN];
    for (int k = 0; k < nin; k++) {
      tin[k] = (hl_type){.dtype = dtypes[k], .ndim = 1, .shape = {n}};
      flat_view(in[k], n, key.broadcast >> k & 1, &v[k]);
      vin[k] = &v[k];
    }
    if (hl_infer(prim, nin, tin, &none, &ty)) return 0;   /* (the general path says why, with the operands' shapes) */
    if (hl_dtype_is_complex(ty.dtype)) return 0;          /* (bound as (re, im) pairs: the general path) */
    dtype = ty.dtype;
    flat_view(&(hl_array){.dtype = dtype}, n, 0, &v[nin]);
    if (!(kern = eager_kernel(prim, nin, vin, NULL, &v[nin]))) return -1;
    hl_eager_lane_put(&key, kern, dtype);
    hl_kernel_release(kern);   /* (the lane's reference keeps it: lent from here on, as a hit's) */
  }
  int rc = hl_array_alloc(out, dtype, a->ndim, a->shape);
  if (!rc) {
    dtypes[nin] = dtype;
    data[nin] = hl_array_data(out);
    if ((rc = hl_kernel_run_flat(kern, n, dtypes, data, key.broadcast))) hl_array_release(out);
  }
  return rc ? -1 : 1;
}

/* Elementwise over same-shaped views: merge axes that are contiguous in every operand (and drop
 * the stride of extent-1 axes), so that most calls become rank-1 kernels over dense memory. */
static int run_elemwise(int prim, int nin, const hl_array *const *in, const hl_attrs *attrs, hl_array *out) {
  if (hl_shape_size(out->ndim, out->shape) == 0) return 0;
  int nops = nin + 1;
  hl_array v[65];
  const hl_array *ops[65];
  for (int k = 0; k < nin; k++) ops[k] = in[k];
  ops[nin] = out;
  int64_t st[65][HL_MAX_DIMS], shp[HL_MAX_DIMS];
  int n = out->ndim, r = 0;
  for (int k = 0; k < nops; k++) {
    for (int a = n - 1; a >= 0; a--) {
      int64_t s = ops[k]->strides[a];
      if (out->shape[a] == 1) s = a == n - 1 ? 1 : st[k][a + 1] * out->shape[a + 1];
      st[k][a] = s;
    }
  }
  int64_t mst[65][HL_MAX_DIMS];
  for (int a = 0; a < n; a++) {
    int merge = r > 0;
    for (int k = 0; merge && k < nops; k++) merge = mst[k][r - 1] == st[k][a] * out->shape[a];
    if (merge) {
      shp[r - 1] *= out->shape[a];
      for (int k = 0; k < nops; k++) mst[k][r - 1] = st[k][a];
    } else {
      shp[r] = out->shape[a];
      for (int k = 0; k < nops; k++) mst[k][r] = st[k][a];
      r++;
    }
  }
  for (int k = 0; k < nops; k++) {
    v[k] = *ops[k];
    v[k].ndim = r;
    memcpy(v[k].shape, shp, sizeof(int64_t) * (size_t)r);
    memcpy(v[k].strides, mst[k], sizeof(int64_t) * (size_t)r);
    ops[k] = &v[k];
  }
  /* a copy that turns a matrix (a transposed view made contiguous): shuffles in cache blocks */
  if (prim == HL_P_CAST && attrs->dtype == in[0]->dtype && !hl_dtype_is_complex(attrs->dtype) && r == 2 && hl_array_device(out) == HL_DEVICE_CPU &&
      mst[1][1] == 1 && mst[0][0] == 1 && mst[0][1] > 1 && mst[1][0] > 0) {
    hl_transpose(hl_array_data(&v[1]), mst[1][0], hl_array_data(&v[0]), mst[0][1], shp[0], shp[1], hl_dtype_size(out->dtype));
    return 0;
  }
  return run_single(prim, nin, ops, attrs, &v[nin]);
}

/* a new contiguous copy of a, on a's device */
static int copy_new(const hl_array *a, hl_array *out) {
  if (hl_array_alloc_on(out, hl_array_device(a), a->dtype, a->ndim, a->shape)) return -1;
  hl_attrs at = {.dtype = a->dtype};
  if (run_elemwise(HL_P_CAST, 1, &a, &at, out)) {
    hl_array_release(out);
    return -1;
  }
  return 0;
}

int hl_contiguous(const hl_array *a, hl_array *out) {
  if (hl_array_is_contiguous(a)) {
    hl_array_copy_ref(out, a);
    return 0;
  }
  return copy_new(a, out);
}

int hl_host_contiguous(const char *op, const hl_array *a, hl_array *out) {
  if (hl_is_leaked(a)) return hl_error("%s: " HL_LEAKED_TRACER, op);
  if (hl_is_abstract(a))
    return hl_error("%s: cannot save a traced value inside hl.jit (return it from the function and save the result)", op);
  hl_array h;
  if (hl_to_device(a, HL_DEVICE_CPU, &h)) return -1;
  if (hl_shape_size(h.ndim, h.shape) == 0 || hl_array_is_contiguous(&h)) {
    *out = h;
    return 0;
  }
  int rc = hl_contiguous(&h, out);
  hl_array_release(&h);
  return rc;
}

static void broadcast_strides(const hl_array *in, int ndim, const int64_t *shape, int64_t *strides) {
  int off = ndim - in->ndim;
  for (int a = 0; a < ndim; a++) {
    int ia = a - off;
    strides[a] = ia < 0 || (in->shape[ia] == 1 && shape[a] != 1) ? 0 : in->strides[ia];
  }
}

void hl_broadcast_view(const hl_array *a, int ndim, const int64_t *shape, hl_array *out) {
  hl_array_copy_ref(out, a);
  broadcast_strides(a, ndim, shape, out->strides);
  out->ndim = ndim;
  memcpy(out->shape, shape, sizeof(int64_t) * (size_t)ndim);
}

static int eager_view(int prim, const hl_array *in, const hl_attrs *at, const hl_type *ty, hl_array *out) {
  if (prim == HL_P_VIEW_REAL) {
    hl_array_copy_ref(out, in);
    hl_complex_as_real(in, out);
    return 0;
  }
  if (prim == HL_P_VIEW_COMPLEX) {
    /* pairs that lie as a complex array's do (adjacent, at an even element): a view; else a copy */
    int ok = in->strides[in->ndim - 1] == 1 && in->offset % 2 == 0;
    for (int a = 0; ok && a < in->ndim - 1; a++) ok = in->strides[a] % 2 == 0;
    if (ok) hl_array_copy_ref(out, in);
    else if (copy_new(in, out)) return -1;
    for (int a = 0; a < ty->ndim; a++) out->strides[a] /= 2;
    out->offset /= 2;
    out->dtype = ty->dtype;
    out->ndim = ty->ndim;
    return 0;
  }
  if (prim == HL_P_RESHAPE) {
    if (hl_contiguous(in, out)) return -1;
    out->ndim = ty->ndim;
    int64_t n = 1;
    for (int a = ty->ndim - 1; a >= 0; a--) {
      out->shape[a] = ty->shape[a];
      out->strides[a] = n;
      n *= ty->shape[a];
    }
    return 0;
  }
  hl_array_copy_ref(out, in);
  out->ndim = ty->ndim;
  memcpy(out->shape, ty->shape, sizeof ty->shape);
  switch (prim) {
  case HL_P_TRANSPOSE:
    for (int a = 0; a < ty->ndim; a++) out->strides[a] = in->strides[at->i[a]];
    break;
  case HL_P_BROADCAST:
    broadcast_strides(in, ty->ndim, ty->shape, out->strides);
    break;
  case HL_P_SLICE:
    for (int a = 0; a < ty->ndim; a++) {
      if (ty->shape[a] > 0) out->offset += at->i[a] * in->strides[a];
      out->strides[a] = in->strides[a] * at->i[HL_MAX_DIMS + a];
    }
    break;
  }
  return 0;
}

static int eager_concat(int nin, const hl_array *const *in, const hl_attrs *at, const hl_type *ty, hl_array *out) {
  if (hl_array_alloc_on(out, hl_array_device(in[0]), ty->dtype, ty->ndim, ty->shape)) return -1;
  int ax = (int)at->i[0];
  int64_t start = 0;
  hl_attrs cast = {.dtype = ty->dtype};
  for (int k = 0; k < nin; k++) {
    hl_array part = *out;
    part.shape[ax] = in[k]->shape[ax];
    part.offset = start * out->strides[ax];
    start += in[k]->shape[ax];
    if (run_elemwise(HL_P_CAST, 1, &in[k], &cast, &part)) {
      hl_array_release(out);
      return -1;
    }
  }
  return 0;
}

/* a unit-stride copy of `a` when its rows are not (vector loads on the CPU, cuBLAS on CUDA) */
static int unit_rows(const hl_array *a, hl_array *tmp, const hl_array **use) {
  *use = a;
  if (stride_class(a) == HL_STRIDE_UNIT) return 0;
  if (copy_new(a, tmp)) return -1;
  *use = tmp;
  return 1;
}

/* a contiguous copy of `a` when cuBLAS cannot read it in place (a broadcast, steps in both axes) */
static int blas_ready(const hl_array *a, hl_array *tmp, const hl_array **use) {
  *use = a;
  if (hl_cublas_layout_ok(a->shape, a->strides, a->ndim)) return 0;
  if (copy_new(a, tmp)) return -1;
  *use = tmp;
  return 1;
}

/* The product of a and b into the allocated out through the cached kernel, each operand first
 * made readable by it. On the CPU both operands' rows are made unit-stride: the kernel packs a
 * panel of B, but reads A in place, one element of each of a tile's six rows per step of k, and
 * a transposed A (a step of k a whole row apart, 1 KiB to 4 KiB) missed the cache at every step:
 * h.T @ g with h 256x1024 took twice as long as copying h.T and multiplying the copy. */
static int matmul_run(const hl_array *a, const hl_array *b, hl_array *out) {
  int cuda = hl_array_device(a) == HL_DEVICE_CUDA;
  hl_array ta, tb;
  const hl_array *ops[2];
  int own_a = cuda ? blas_ready(a, &ta, &ops[0]) : unit_rows(a, &ta, &ops[0]);
  int own_b = own_a < 0 ? -1 : cuda ? blas_ready(b, &tb, &ops[1]) : unit_rows(b, &tb, &ops[1]);
  int rc = own_a < 0 || own_b < 0 ? -1 : run_single(HL_P_MATMUL, 2, ops, NULL, out);
  if (own_a > 0) hl_array_release(&ta);
  if (own_b > 0) hl_array_release(&tb);
  return rc;
}

int hl_matmul_into(const hl_array *a, const hl_array *b, hl_array *out) {
  if (hl_shape_size(out->ndim, out->shape) == 0) return 0;
  return matmul_run(a, b, out);
}

static int eager_matmul(const hl_array *const *in, const hl_type *ty, hl_array *out) {
  if (hl_array_alloc_on(out, hl_array_device(in[0]), ty->dtype, ty->ndim, ty->shape)) return -1;
  if (hl_shape_size(ty->ndim, ty->shape) == 0) return 0;
  if (!matmul_run(in[0], in[1], out)) return 0;
  hl_array_release(out);
  return -1;
}

static int eager_apply(int prim, int nin, const hl_array *const *in, const hl_attrs *at, hl_array *out);

/* Host work (LAPACK, sorting, FFT) straight from the operands' views, with no pipeline: a singular
 * matrix is an error here, which a pipeline could not raise part way. CUDA operands go to the
 * host and the result comes back: there is no device code for these (but cuFFT for the complex
 * FFT, where it loads), and the copies cost less than the work. */
static int eager_host(int prim, int nin, const hl_array *const *in, const hl_attrs *at, const hl_type *ty, hl_array *out) {
  int dev = hl_array_device(in[0]);
  if (dev == HL_DEVICE_CUDA && (prim == HL_P_FFT_FORWARD || prim == HL_P_FFT_BACKWARD) && hl_cufft_available()) {
    /* (the complex transforms have device code: cuFFT, on the operand where it is; fft.real
     * has no R2C call yet) */
    if (hl_array_alloc_on(out, dev, ty->dtype, ty->ndim, ty->shape)) return -1;
    if (!hl_cufft_into(in[0], (int)at->i[0], prim == HL_P_FFT_BACKWARD, out)) return 0;
    hl_array_release(out);
    return -1;
  }
  if (dev != HL_DEVICE_CPU) {
    hl_array host[2], host_out;
    const hl_array *hin[2];
    int nh = 0, rc = 0;
    while (nh < nin && !(rc = hl_to_device(in[nh], HL_DEVICE_CPU, &host[nh]))) {
      hin[nh] = &host[nh];
      nh++;
    }
    if (!rc) rc = eager_apply(prim, nin, hin, at, &host_out);
    for (int k = 0; k < nh; k++) hl_array_release(&host[k]);
    if (rc) return -1;
    rc = hl_to_device(&host_out, dev, out);
    hl_array_release(&host_out);
    return rc;
  }
  if (hl_array_alloc(out, ty->dtype, ty->ndim, ty->shape)) return -1;
  int rc;
  switch (prim) {
  case HL_P_SOLVE: rc = hl_linalg_solve_into(in[0], in[1], out, 0, HL_LINALG_RAISE); break;
  case HL_P_SOLVE_TRIANGULAR: rc = hl_linalg_solve_triangular_into(in[0], in[1], (int)at->i[0], out, 0, HL_LINALG_RAISE); break;
  case HL_P_CHOLESKY: rc = hl_linalg_cholesky_into(in[0], out, 0, 0, HL_LINALG_RAISE); break;
  case HL_P_QR: rc = hl_linalg_decomp_into(HL_DECOMP_QR, (int)at->i[0], in[0], out, 0, HL_LINALG_RAISE); break;
  case HL_P_SVD: rc = hl_linalg_decomp_into(HL_DECOMP_SVD, (int)at->i[0], in[0], out, 0, HL_LINALG_RAISE); break;
  case HL_P_EIGH: rc = hl_linalg_decomp_into(HL_DECOMP_EIGH, (int)at->i[0], in[0], out, 0, HL_LINALG_RAISE); break;
  case HL_P_SLOGDET: rc = hl_linalg_decomp_into(HL_DECOMP_SLOGDET, (int)at->i[0], in[0], out, 0, HL_LINALG_RAISE); break;
  case HL_P_SORT:
  case HL_P_ARGSORT: rc = hl_sort_into(in[0], (int)at->i[0], prim == HL_P_ARGSORT, out, 0); break;
  case HL_P_FFT_FORWARD:
  case HL_P_FFT_BACKWARD: rc = hl_fft_into(in[0], (int)at->i[0], prim == HL_P_FFT_BACKWARD, out, 0, 0); break;
  case HL_P_FFT_REAL: rc = hl_fft_real_into(in[0], (int)at->i[0], out, 0, 0); break;
  case HL_P_FFT_REAL_INVERSE: rc = hl_fft_real_inverse_into(in[0], (int)at->i[0], at->i[1], out, 0); break;
  default: rc = hl_dist_into(prim, in[0], at->i, out); break;
  }
  if (rc) hl_array_release(out);
  return rc;
}

static int eager_apply(int prim, int nin, const hl_array *const *in, const hl_attrs *at, hl_array *out) {
  static const hl_attrs none;
  if (!at) at = &none;
  hl_type tin[64], ty;
  if (nin > 64) return hl_error("%s: too many operands", hl_prims[prim].name);
  for (int k = 0; k < nin; k++) {
    tin[k].dtype = in[k]->dtype;
    tin[k].ndim = in[k]->ndim;
    memcpy(tin[k].shape, in[k]->shape, sizeof tin[k].shape);
  }
  if (hl_infer(prim, nin, nin ? tin : NULL, at, &ty)) return -1;
  int dev = nin ? hl_array_device(in[0]) : HL_DEVICE_CPU;
  for (int k = 1; k < nin; k++)
    if (hl_array_device(in[k]) != dev)
      return hl_error("%s: operands are on different devices (%s and %s); move one with hl.device_put(x, device)",
                      hl_prims[prim].name, dev ? "cuda" : "cpu", dev ? "cpu" : "cuda");
  switch (hl_prims[prim].kind) {
  case HL_K_LOOP: return hl_error("loop: not an eager operation");
  case HL_K_VIEW: return eager_view(prim, in[0], at, &ty, out);
  case HL_K_CONCAT: return eager_concat(nin, in, at, &ty, out);
  case HL_K_MATMUL: return eager_matmul(in, &ty, out);
  case HL_K_LINALG:
  case HL_K_SORT:
  case HL_K_FFT:
  case HL_K_DIST: return eager_host(prim, nin, in, at, &ty, out);
  case HL_K_SOURCE:
    if (prim == HL_P_PARAM) return hl_error("param: not an eager operation");
    if (hl_array_alloc(out, ty.dtype, ty.ndim, ty.shape)) return -1;
    if (prim == HL_P_CONST) {
      hl_array_set(out, 0, at->f);
      return 0;
    }
    break;
  case HL_K_ELEMWISE:
    if ((prim == HL_P_CAST && at->dtype == in[0]->dtype) || prim == HL_P_STOP_GRADIENT) {
      hl_array_copy_ref(out, in[0]);   /* arrays are immutable: no copy needed */
      return 0;
    }
    if (hl_array_alloc_on(out, dev, ty.dtype, ty.ndim, ty.shape)) return -1;
    if (run_elemwise(prim, nin, in, at, out)) {
      hl_array_release(out);
      return -1;
    }
    return 0;
  case HL_K_INDEXED:
    if (hl_array_alloc_on(out, dev, ty.dtype, ty.ndim, ty.shape)) return -1;
    break;
  case HL_K_REDUCE:
    if (dev != HL_DEVICE_CPU && hl_shape_size(in[0]->ndim, in[0]->shape) == 0) {
      /* a reduction of nothing on the GPU: its split into partial sums would allocate zero
       * bytes of device memory, which Halide's CUDA runtime aborts on; the host computes the
       * identity instead */
      hl_array host_in, host_out;
      if (hl_to_device(in[0], HL_DEVICE_CPU, &host_in)) return -1;
      const hl_array *hin[1] = {&host_in};
      int rc = eager_apply(prim, 1, hin, at, &host_out);
      hl_array_release(&host_in);
      if (rc) return -1;
      rc = hl_to_device(&host_out, dev, out);
      hl_array_release(&host_out);
      return rc;
    }
    if (hl_array_alloc_on(out, dev, ty.dtype, ty.ndim, ty.shape)) return -1;
    break;
  }
  if (hl_shape_size(ty.ndim, ty.shape) == 0) return 0;
  if (run_single(prim, nin, in, at, out)) {
    hl_array_release(out);
    return -1;
  }
  return 0;
}

static _Thread_local hl_trace *record_floor;

void hl_trace_set_floor(hl_trace *t) { record_floor = t; }

int hl_apply(int prim, int nin, const hl_array *const *in, const hl_attrs *attrs, hl_array *out) {
  /* the innermost trace among the operands' records the op (outer tracers are captured) */
  hl_trace *t = NULL;
  for (int k = 0; k < nin; k++) {
    hl_trace *tk = hl_live_trace(in[k]);
    if (tk && (!t || encloses(t, tk))) t = tk;
  }
  if (t && record_floor && t != record_floor && !record_floor->closed && encloses(t, record_floor)) t = record_floor;
  if (t) return trace_apply(t, prim, nin, in, attrs, out);
  /* recorded arrays of a finished tape are plain data: results never point at a graph */
  hl_array tmp[64];
  const hl_array *vin[64];
  if (nin > 64) return hl_error("%s: too many operands", hl_prims[prim].name);
  for (int k = 0; k < nin; k++) vin[k] = plain(in[k], &tmp[k]);
  return eager_apply(prim, nin, vin, attrs, out);
}

/* ---- constants ---- */

int hl_scalar_like(double v, hl_dtype t, const hl_array *like, hl_array *out) {
  hl_attrs at = {.dtype = t, .f = v};
  if (like && hl_is_abstract(like)) {
    /* record the constant into the same trace (a tape records the concrete one when used) */
    hl_trace *tr = (hl_trace *)like->graph;
    int id = hl_graph_add(&tr->g, HL_P_CONST, 0, NULL, &at);
    if (id < 0) return -1;
    memset(out, 0, sizeof *out);
    out->dtype = t;
    out->graph = like->graph;
    out->node = id;
    return 0;
  }
  if (!like || hl_array_device(like) == 0) return hl_apply(HL_P_CONST, 0, NULL, &at, out);
  hl_array host;
  if (hl_apply(HL_P_CONST, 0, NULL, &at, &host)) return -1;
  int rc = hl_to_device(&host, hl_array_device(like), out);
  hl_array_release(&host);
  return rc;
}

/* A Lua number in an eager op (x * 0.999) was a new 0-d array each time: a block allocated,
 * written and freed by the collector later, and two more trips through hl_apply. The thread keeps
 * one block per operand position instead and writes the number into it when it alone holds the
 * block; a block that something still holds (an op that kept a reference) is left to it, since
 * arrays never change, and a new one takes its place. */
enum { SCALAR_SLOTS = 4 };
static _Thread_local hl_storage *scalar_blocks[SCALAR_SLOTS];
static _Thread_local hl_thread_exit scalar_blocks_exit;
static void free_scalar_blocks(void *p) {
  hl_storage **blocks = p;
  for (int k = 0; k < SCALAR_SLOTS; k++) {
    hl_storage_release(blocks[k]);
    blocks[k] = NULL;
  }
}

int hl_eager_scalar(double v, hl_dtype t, int slot, hl_array *out) {
  if (slot < 0 || slot >= SCALAR_SLOTS) return hl_scalar_like(v, t, NULL, out);
  hl_storage **b = &scalar_blocks[slot];
  if (*b && __atomic_load_n(&(*b)->refcount, __ATOMIC_ACQUIRE) != 1) {
    hl_storage_release(*b);
    *b = NULL;
  }
  if (!*b) {
    if (!(*b = hl_storage_new(16))) return -1;   /* (the widest element, complex128) */
    hl_thread_exit_add(&scalar_blocks_exit, free_scalar_blocks, scalar_blocks);
  }
  memset(out, 0, sizeof *out);
  out->dtype = t;
  out->storage = *b;
  hl_array_set(out, 0, v);
  hl_storage_retain(*b);
  return 0;
}

/* ---- programs ---- */

/* Calls with few arrays use the stack; programs of more (up to HL_MAX_PROGRAM_ARRAYS) the heap. */
enum { ONSTACK = 16 };

int hl_trace_prune(hl_trace *t, int nout, const hl_array *const *outputs, hl_graph *out) {
  int *ids = malloc(sizeof *ids * (size_t)(nout ? nout : 1));
  if (!ids) return hl_error("out of memory");
  for (int k = 0; k < nout; k++) {
    if (outputs[k]->graph != &t->g) {
      free(ids);
      return hl_error("jit: output %d is not a value of this trace", k + 1);
    }
    ids[k] = outputs[k]->node;
  }
  int rc = hl_graph_set_outputs(&t->g, nout, ids) || hl_graph_prune(&t->g, out) ? -1 : 0;
  free(ids);
  return rc;
}

int hl_program_set_captures(hl_program *p, int n, const hl_array *captures) {
  p->captures = calloc((size_t)(n ? n : 1), sizeof(hl_array));
  if (!p->captures) return hl_error("out of memory");
  p->ncaptures = n;
  for (int k = 0; k < n; k++) hl_array_copy_ref(&p->captures[k], &captures[k]);
  return 0;
}

int hl_program_prepare(hl_trace *t, int nout, const hl_array *const *outputs, hl_program *p) {
  memset(p, 0, sizeof *p);
  if (nout > HL_MAX_PROGRAM_ARRAYS) return hl_error("jit: too many outputs (%d, at most %d)", nout, HL_MAX_PROGRAM_ARRAYS);
  if (hl_trace_prune(t, nout, outputs, &p->g)) return -1;
  p->nargs = t->g.nparams - t->ncaptures;
  if (hl_program_set_captures(p, t->ncaptures, t->captures)) {
    hl_graph_free(&p->g);
    return -1;
  }
  return 0;
}

/* p's graph as its kernel is compiled from: its loops named by slots (p->loop_ids), the table of
 * sizes copied along; 1 when it has no loops (p->g itself is compiled) */
static int numbered_graph(hl_program *p, hl_graph *out) {
  int has_loop = 0;
  for (int i = 0; i < p->g.nnodes && !has_loop; i++) has_loop = p->g.nodes[i].prim == HL_P_LOOP;
  if (!has_loop) return 1;
  free(p->loop_ids);
  p->loop_ids = NULL;
  p->nloops = 0;
  if (hl_graph_number_loops(&p->g, out, &p->loop_ids, &p->nloops)) return -1;
  if (!p->g.sym || (out->sym = hl_sym_remap(p->g.sym, p->g.nnodes, NULL, NULL, 1))) return 0;
  hl_graph_free(out);
  return -1;
}

int hl_program_compile(hl_program *p, const char *name) {
  if (p->kernel) return 0;
  hl_graph numbered;
  int rc = numbered_graph(p, &numbered);
  if (rc < 0) return -1;
  /* a cache miss compiles (and says so when that takes more than a second: hl_cache.c) */
  p->kernel = hl_cache_get(rc ? &p->g : &numbered, name);
  if (!rc) hl_graph_free(&numbered);
  return p->kernel ? 0 : -1;
}

/* the program whose kernel this thread runs (its loop stages ask for their loops by slot) */
static _Thread_local const hl_program *running;

int hl_program_loop_id(int slot) {
  const hl_program *p = running;
  return p && slot >= 0 && slot < p->nloops ? p->loop_ids[slot] : -1;
}

int hl_program_build(hl_trace *t, int nout, const hl_array *const *outputs, const char *name, hl_program *p) {
  if (hl_program_prepare(t, nout, outputs, p)) return -1;
  if (hl_program_compile(p, name)) {
    hl_program_free(p);
    return -1;
  }
  return 0;
}

/* Captures are compared by value: each trace makes its constants anew. A device constant is
 * compared on the host (a trace's constants are small, and compared once per traced size); a
 * copy that fails counts as a difference (the program is then compiled for the size, and its
 * run reports the device's failure). */
int hl_same_capture(const hl_array *a, const hl_array *b) {
  if (a->storage == b->storage && a->offset == b->offset && !memcmp(a->strides, b->strides, sizeof a->strides)) return 1;
  if (a->dtype != b->dtype || a->ndim != b->ndim || memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim)) return 0;
  if (hl_is_abstract(a) || hl_is_abstract(b) || hl_array_device(a) != hl_array_device(b)) return 0;
  hl_array ha, hb, ca, cb;
  int same = 0;
  if (hl_to_device(a, HL_DEVICE_CPU, &ha)) return 0;
  if (hl_to_device(b, HL_DEVICE_CPU, &hb)) goto a_only;
  if (hl_contiguous(&ha, &ca)) goto both;
  if (hl_contiguous(&hb, &cb)) goto ca_too;
  same = !memcmp(hl_array_data(&ca), hl_array_data(&cb), (size_t)hl_shape_size(a->ndim, a->shape) * hl_dtype_size(a->dtype));
  hl_array_release(&cb);
ca_too:
  hl_array_release(&ca);
both:
  hl_array_release(&hb);
a_only:
  hl_array_release(&ha);
  return same;
}

int hl_program_bind_symbols(const hl_program *p, int ngiven, const hl_array *const *given, int64_t *sym, char *why, size_t nwhy) {
  int nin = p->nargs + p->ncaptures;
  const int64_t *small_shapes[ONSTACK] = {0}, **shapes = small_shapes;
  int small_ndims[ONSTACK] = {0}, *ndims = small_ndims;
  if (nin > ONSTACK && (!(shapes = malloc(sizeof *shapes * (size_t)nin)) || !(ndims = malloc(sizeof *ndims * (size_t)nin)))) {
    if (shapes != small_shapes) free(shapes);
    return hl_error("out of memory");
  }
  for (int k = 0; k < nin; k++) {
    const hl_array *a = k < ngiven ? given[k] : &p->captures[k - p->nargs];
    shapes[k] = a->shape;
    ndims[k] = a->ndim;
  }
  int rc = hl_sym_bind(&p->g, shapes, ndims, sym, why, nwhy) ? 1 : 0;
  if (shapes != small_shapes) free(shapes);
  if (ndims != small_ndims) free(ndims);
  return rc;
}

/* A polymorphic program's output shapes for these inputs, after checking that the inputs are
 * sizes it serves (the caller's signature says so; this keeps a wrong call from reading out of
 * bounds) and that its reshapes' flat indices fit the 32 bits they are computed in. */
static int symbolic_shapes(const hl_program *p, int nin, const hl_array *const *in, int64_t (*out)[HL_MAX_DIMS]) {
  const hl_graph *g = &p->g;
  const hl_symbolic *s = g->sym;
  int64_t sym[HL_MAX_SYMS];
  char why[200];
  int bound = hl_program_bind_symbols(p, nin, in, sym, why, sizeof why);
  if (bound) return bound < 0 ? -1 : hl_error("jit: a polymorphic program called with other shapes: %s", why);
  for (int w = 0; w < s->nwatch; w++) {
    int i = s->watch[w];
    const hl_node *n = &g->nodes[i];
    if (n->prim != HL_P_RESHAPE) continue;
    int64_t e, total = 1;
    for (int a = 0; a < n->type.ndim; a++) {
      const hl_sym_slot *sl = hl_sym_find(s, i, HL_SYM_SHAPE, a);
      if (!sl) e = n->type.shape[a];
      else if (hl_sym_size(sl, s->nsym, sym, &e)) return hl_error("jit: these sizes are not ones the program serves");
      total = e && total > INT64_MAX / e ? INT64_MAX : total * e;
    }
    if (total > INT32_MAX)
      return hl_error("jit: a reshape of %lld elements in a program with dynamic_axes (at most 2^31-1; leave those axes "
                      "static for arrays this large)", (long long)total);
  }
  for (int k = 0; k < g->noutputs; k++) {
    int i = g->outputs[k];
    const hl_node *n = &g->nodes[i];
    for (int a = 0; a < n->type.ndim; a++) {
      const hl_sym_slot *sl = hl_sym_find(s, i, HL_SYM_SHAPE, a);
      out[k][a] = n->type.shape[a];
      if (sl && hl_sym_size(sl, s->nsym, sym, &out[k][a]))
        return hl_error("jit: the result's size %d is not a whole number at these sizes", a + 1);
    }
  }
  return 0;
}

int hl_program_place_captures(hl_program *p) {
  for (int c = 0; c < p->ncaptures; c++) {
    /* (a loop body's abstract captures are values of the enclosing pipeline, whose trace may be
     * gone: they are not looked at) */
    if (hl_is_abstract(&p->captures[c]) || hl_array_device(&p->captures[c]) == p->g.device) continue;
    hl_array moved;
    if (hl_to_device(&p->captures[c], p->g.device, &moved)) return -1;
    hl_array_release(&p->captures[c]);
    p->captures[c] = moved;
  }
  return 0;
}


int hl_program_run(hl_program *p, int nargs, const hl_array *const *args, hl_array *outs) {
  int nin = nargs + p->ncaptures;
  if (nargs != p->nargs) return hl_error("jit: %d arguments for a program of %d", nargs, p->nargs);
  if (nin > HL_MAX_PROGRAM_ARRAYS) return hl_error("jit: at most %d arrays in", HL_MAX_PROGRAM_ARRAYS);
  if (hl_program_place_captures(p)) return -1;
  /* (zeroed: with no inputs GCC, inlining the callee, takes the array passed unwritten to a const
   * pointer for one read uninitialised) */
  const hl_array *small[ONSTACK] = {NULL}, **in = small;
  if (nin > ONSTACK && !(in = malloc(sizeof *in * (size_t)nin))) return hl_error("out of memory");
  for (int k = 0; k < nin; k++) in[k] = k < nargs ? args[k] : &p->captures[k - nargs];
  int rc = hl_program_run_inputs(p, nin, in, outs);
  if (in != small) free(in);
  return rc;
}

int hl_program_run_inputs(hl_program *p, int nin, const hl_array *const *inputs, hl_array *outs) {
  if (!p->kernel) return hl_error("jit: internal: a program run before it was compiled");
  if (nin != p->nargs + p->ncaptures) return hl_error("jit: %d inputs for a program of %d", nin, p->nargs + p->ncaptures);
  int nouts = p->g.noutputs;
  if (nin > HL_MAX_PROGRAM_ARRAYS || nouts > HL_MAX_PROGRAM_ARRAYS)
    return hl_error("jit: at most %d arrays in and %d out", HL_MAX_PROGRAM_ARRAYS, HL_MAX_PROGRAM_ARRAYS);
  /* contiguous copies of strided inputs, the inputs as passed to the kernel, the outputs */
  hl_array small_tmp[ONSTACK], *tmp = small_tmp;
  const hl_array *small_in[ONSTACK], **in = small_in;
  hl_array *small_outp[ONSTACK], **outp = small_outp;
  int ntmp = 0, rc = -1, nout = 0;
  int64_t (*sym_shapes)[HL_MAX_DIMS] = NULL;   /* a polymorphic program's output shapes */
  if (nin > ONSTACK && (!(tmp = malloc(sizeof *tmp * (size_t)nin)) || !(in = malloc(sizeof *in * (size_t)nin)))) {
    hl_error("out of memory");
    goto done;
  }
  if (nouts > ONSTACK && !(outp = malloc(sizeof *outp * (size_t)nouts))) {
    hl_error("out of memory");
    goto done;
  }
  for (int k = 0; k < nin; k++) {
    const hl_array *a = inputs[k];
    if (hl_array_device(a) != p->g.device) {
      hl_error("jit: argument %d is on %s but the function was traced for %s; move it with hl.device_put", k + 1,
               hl_array_device(a) ? "cuda" : "cpu", p->g.device ? "cuda" : "cpu");
      goto done;
    }
    /* pipelines assume unit stride on the innermost axis; cuBLAS stages need rows it can read */
    if ((a->ndim > 0 && a->shape[a->ndim - 1] > 1 && a->strides[a->ndim - 1] != 1) ||
        (p->g.device == HL_DEVICE_CUDA && !hl_cublas_layout_ok(a->shape, a->strides, a->ndim))) {
      if (hl_contiguous(a, &tmp[ntmp])) goto done;
      a = &tmp[ntmp++];
    }
    in[k] = a;
  }
  if (p->g.sym) {
    if (!(sym_shapes = malloc(sizeof *sym_shapes * (size_t)(nouts ? nouts : 1)))) {
      hl_error("out of memory");
      goto done;
    }
    if (symbolic_shapes(p, nin, in, sym_shapes)) goto done;
  }
  for (; nout < nouts; nout++) {
    const hl_type *ty = &p->g.nodes[p->g.outputs[nout]].type;
    if (hl_array_alloc_on(&outs[nout], p->g.device, ty->dtype, ty->ndim, sym_shapes ? sym_shapes[nout] : ty->shape)) goto done;
    outp[nout] = &outs[nout];
  }
  /* nothing to compute when every output is empty (and a GPU kernel over nothing fails to launch) */
  int64_t work = 0;
  for (int k = 0; k < nout; k++) work += hl_shape_size(outs[k].ndim, outs[k].shape);
  if (work) {
    const hl_program *outer = running;   /* (a loop body's program runs inside its loop's stage) */
    running = p;
    rc = hl_kernel_run(p->kernel, in, outp);
    running = outer;
  } else {
    rc = 0;
  }
done:
  free(sym_shapes);
  for (int k = 0; k < ntmp; k++) hl_array_release(&tmp[k]);
  if (rc)
    for (int k = 0; k < nout; k++) hl_array_release(&outs[k]);
  if (tmp != small_tmp) free(tmp);
  if (in != small_in) free(in);
  if (outp != small_outp) free(outp);
  return rc;
}

void hl_program_free(hl_program *p) {
  if (p->kernel) hl_kernel_release(p->kernel);
  free(p->loop_ids);
  for (int k = 0; k < p->ncaptures; k++) hl_array_release(&p->captures[k]);
  free(p->captures);
  hl_graph_free(&p->g);
  memset(p, 0, sizeof *p);
}

int hl_copy_into(hl_array *dst, const hl_array *src) {
  int dev = hl_array_device(dst);
  if (dev != hl_array_device(src) || dst->dtype != src->dtype || dst->ndim != src->ndim ||
      memcmp(dst->shape, src->shape, sizeof(int64_t) * (size_t)src->ndim))
    return hl_error("copy: internal: the views differ in device, dtype or shape");
  if (dev == HL_DEVICE_CPU) {
    hl_array_copy_elements(dst, src);
    return 0;
  }
  return hl_device_copy_view(dev, hl_array_device_address(dst), dst->strides, hl_array_device_address(src), src->strides,
                             src->ndim, src->shape, hl_dtype_size(src->dtype));
}

int hl_to_device(const hl_array *a, int device, hl_array *out) {
  int from = hl_array_device(a);
  if (from == device || hl_is_abstract(a)) {
    hl_array_copy_ref(out, a);
    return 0;
  }
  hl_array src;
  if (hl_contiguous(a, &src)) return -1;
  if (hl_array_alloc_on(out, device, a->dtype, a->ndim, a->shape)) {
    hl_array_release(&src);
    return -1;
  }
  size_t nbytes = (size_t)hl_shape_size(a->ndim, a->shape) * hl_dtype_size(a->dtype);
  int rc = 0;
  if (nbytes == 0) rc = 0;
  else if (device == HL_DEVICE_CPU) rc = hl_device_copy_to_host(from, out->storage->data, hl_array_device_address(&src), nbytes);
  else if (from == HL_DEVICE_CPU) rc = hl_device_copy_to_device(device, out->storage->device_ptr, hl_array_data(&src), nbytes);
  else rc = hl_error("device_put: copies between two GPUs are not supported");
  hl_array_release(&src);
  if (rc) hl_array_release(out);
  return rc;
}
