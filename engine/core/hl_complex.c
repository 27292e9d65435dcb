#include "hl_complex.h"
#include "hl_error.h"
#include "hl_symbolic.h"
#include <stdlib.h>
#include <string.h>

int hl_graph_has_complex(const hl_graph *g) {
  for (int i = 0; i < g->nnodes; i++)
    if (hl_dtype_is_complex(g->nodes[i].type.dtype)) return 1;
  return 0;
}

static int add1(hl_graph *g, int prim, int x, const hl_attrs *at) { return hl_graph_add(g, prim, 1, &x, at); }

static int reshape(hl_graph *g, int x, int ndim, const int64_t *shape) {
  hl_attrs at = {.nshape = ndim};
  memcpy(at.shape, shape, sizeof(int64_t) * (size_t)ndim);
  return add1(g, HL_P_RESHAPE, x, &at);
}

/* x (real, shape S) followed by zeros as the pairs (x, 0) of shape S..[2] */
static int pairs_with_zero(hl_graph *g, int x) {
  hl_type t = g->nodes[x].type;
  int64_t s[HL_MAX_DIMS + 1];
  memcpy(s, t.shape, sizeof(int64_t) * (size_t)t.ndim);
  s[t.ndim] = 1;
  hl_attrs z = {.dtype = t.dtype, .f = 0};
  int re = reshape(g, x, t.ndim + 1, s);
  int zero = hl_graph_add(g, HL_P_CONST, 0, NULL, &z);
  if (re < 0 || zero < 0) return -1;
  hl_attrs b = {.nshape = t.ndim + 1};
  memcpy(b.shape, s, sizeof(int64_t) * (size_t)(t.ndim + 1));
  int im = add1(g, HL_P_BROADCAST, zero, &b);
  if (im < 0) return -1;
  int both[2] = {re, im};
  hl_attrs c = {0};
  c.i[0] = t.ndim;
  return hl_graph_add(g, HL_P_CONCAT, 2, both, &c);
}

static int realify_node(const hl_graph *g, int i, const int *map, hl_graph *out) {
  const hl_node *n = &g->nodes[i];
  const int *ins = hl_node_inputs(g, n);
  int in[64], cin = 0;
  for (int k = 0; k < n->nin; k++) {
    in[k] = map[ins[k]];
    if (hl_dtype_is_complex(g->nodes[ins[k]].type.dtype)) cin = 1;
  }
  hl_attrs at = n->attrs;
  int nd = n->type.ndim;
  if (!cin && !hl_dtype_is_complex(n->type.dtype)) return hl_graph_add(out, n->prim, n->nin, in, &at);
  switch (n->prim) {
  case HL_P_PARAM: {
    at.dtype = hl_complex_part(at.dtype);
    at.shape[at.nshape++] = 2;
    at.i[1] = 0;   /* the pairs' axis is always dense */
    int id = hl_graph_add(out, HL_P_PARAM, 0, NULL, &at);
    if (id >= 0) out->nparams++;
    return id;
  }
  case HL_P_CONST:
    at.dtype = hl_complex_part(at.dtype);
    {
      int x = hl_graph_add(out, HL_P_CONST, 0, NULL, &at);
      return x < 0 ? -1 : pairs_with_zero(out, x);
    }
  case HL_P_VIEW_REAL:
  case HL_P_VIEW_COMPLEX: return in[0];
  case HL_P_CAST:
    at.dtype = hl_complex_part(at.dtype);
    if (cin) return add1(out, HL_P_CAST, in[0], &at);
    {
      int x = add1(out, HL_P_CAST, in[0], &at);
      return x < 0 ? -1 : pairs_with_zero(out, x);
    }
  case HL_P_SELECT: {
    /* the condition, one per value, covers both halves of its pair */
    int64_t s[HL_MAX_DIMS + 1];
    memcpy(s, n->type.shape, sizeof(int64_t) * (size_t)nd);
    s[nd] = 1;
    int c = reshape(out, in[0], nd + 1, s);
    s[nd] = 2;
    hl_attrs b = {.nshape = nd + 1};
    memcpy(b.shape, s, sizeof(int64_t) * (size_t)(nd + 1));
    if (c < 0 || (in[0] = add1(out, HL_P_BROADCAST, c, &b)) < 0) return -1;
    return hl_graph_add(out, HL_P_SELECT, 3, in, &at);
  }
  case HL_P_RESHAPE:
  case HL_P_BROADCAST: at.shape[at.nshape++] = 2; break;
  case HL_P_TRANSPOSE: at.i[nd] = nd; break;
  case HL_P_SLICE:
    at.shape[at.nshape++] = 2;
    at.i[nd] = 0;
    at.i[HL_MAX_DIMS + nd] = 1;
    break;
  case HL_P_NEG: case HL_P_ADD: case HL_P_SUB: case HL_P_STOP_GRADIENT: case HL_P_SUM: case HL_P_CONCAT:
  case HL_P_GATHER: case HL_P_SCATTER_ADD: case HL_P_SCATTER: break;   /* (scatter: set and add only, hl_ir.c) */
  default:
    return hl_error("%s: internal: no complex form in pipelines", hl_prims[n->prim].name);
  }
  return hl_graph_add(out, n->prim, n->nin, in, &at);
}

/* A polymorphic program's table of sizes for its real form: node i's numbers go to the node that
 * stands for it (map[i]); the nodes made beside that one (its operand reshaped to pairs, a zero
 * broadcast beside it, a condition widened to both halves) take i's extents on the axes they
 * share with it, as sizes and, for a reshape or broadcast, as its target shape; a constant's value
 * goes to its real part, the first node made for it. The pairs' axis is the number 2. Node i's
 * form is nodes made[i] .. made[i + 1] - 1 of out. */
static hl_symbolic *realify_sym(const hl_graph *g, const hl_graph *out, const int *map, const int *made) {
  const hl_symbolic *s = g->sym;
  hl_symbolic *r = calloc(1, sizeof *r);
  if (!r || !(r->first = calloc((size_t)out->nnodes + 1, sizeof(int)))) goto oom;
  r->nsym = s->nsym;
  memcpy(r->param, s->param, sizeof r->param);
  memcpy(r->axis, s->axis, sizeof r->axis);
  r->nnodes = out->nnodes;
  /* twice: counting, then filling (slots stay in node order) */
  for (int pass = 0; pass < 2; pass++) {
    int n = 0;
    for (int i = 0; i < g->nnodes; i++)
      for (int j = made[i]; j < made[i + 1]; j++) {
        if (pass) r->first[j] = n;
        const hl_node *o = &out->nodes[j];
        for (int k = s->first[i]; k < s->first[i + 1]; k++) {
          hl_sym_slot sl = s->slots[k];
          sl.node = j;
          int take = map[i] == j, also_target = 0;
          if (!take && sl.field == HL_SYM_SHAPE && sl.index < o->type.ndim && sl.index < g->nodes[i].type.ndim) {
            take = 1;
            also_target = o->prim == HL_P_RESHAPE || o->prim == HL_P_BROADCAST;
          }
          if (!take && sl.field == HL_SYM_VALUE && o->prim == HL_P_CONST && j == made[i]) take = 1;
          if (!take) continue;
          if (pass) r->slots[n] = sl;
          n++;
          if (also_target) {
            if (pass) {
              r->slots[n] = sl;
              r->slots[n].field = HL_SYM_ATTR_SHAPE;
            }
            n++;
          }
        }
      }
    if (pass) {
      r->first[out->nnodes] = n;
    } else {
      r->nslots = n;
      if (n && !(r->slots = malloc(sizeof *r->slots * (size_t)n))) goto oom;
    }
  }
  return r;
oom:
  hl_sym_free(r);
  hl_error("out of memory");
  return NULL;
}

int hl_graph_realify(const hl_graph *g, hl_graph *out) {
  hl_graph_init(out);
  out->dynamic = g->dynamic;
  out->device = g->device;
  out->schedule = g->schedule;
  int *map = malloc(sizeof(int) * ((size_t)g->nnodes + 1));
  int *made = malloc(sizeof(int) * ((size_t)g->nnodes + 1));   /* node i's form starts at out's node made[i] */
  int *outs = malloc(sizeof(int) * ((size_t)g->noutputs + 1));
  if (!map || !made || !outs) {
    free(map);
    free(made);
    free(outs);
    return hl_error("out of memory");
  }
  int rc = 0;
  for (int i = 0; i < g->nnodes && rc == 0; i++) {
    made[i] = out->nnodes;
    if ((map[i] = realify_node(g, i, map, out)) < 0) rc = -1;
    /* (a real PARAM copied as it is counts too) */
    else if (g->nodes[i].prim == HL_P_PARAM && !hl_dtype_is_complex(g->nodes[i].type.dtype)) out->nparams++;
  }
  made[g->nnodes] = out->nnodes;
  for (int k = 0; k < g->noutputs && rc == 0; k++) outs[k] = map[g->outputs[k]];
  if (rc == 0) rc = hl_graph_set_outputs(out, g->noutputs, outs);
  if (rc == 0 && g->sym && !(out->sym = realify_sym(g, out, map, made))) rc = -1;
  free(made);
  free(map);
  free(outs);
  if (rc) hl_graph_free(out);
  return rc;
}
