/* Shape polymorphism: the affine fit of a program traced at several sizes (hl_symbolic.h). */
#include "hl_symbolic.h"
#include "hl_error.h"
#include "hl_ir.h"
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  const hl_graph *const *g;
  int nsym, ntraces, nargs;
  const int64_t (*sizes)[HL_MAX_SYMS];
  hl_sym_slot *slots;
  int nslots, cap;
  char *why;
  size_t nwhy;
} fitter;

static int refuse(fitter *f, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(f->why, f->nwhy, fmt, ap);
  va_end(ap);
  return -1;
}

static int push(fitter *f, const hl_sym_slot *s) {
  if (f->nslots == f->cap) {
    int cap = f->cap ? 2 * f->cap : 64;
    hl_sym_slot *n = realloc(f->slots, sizeof *n * (size_t)cap);
    if (!n) return refuse(f, "%s", "");
    f->slots = n;
    f->cap = cap;
  }
  f->slots[f->nslots++] = *s;
  return 0;
}

int hl_sym_fit_number(int nsym, const int64_t sizes[][HL_MAX_SYMS], const int64_t *values, hl_sym_slot *out) {
  int64_t c = values[0] * HL_SYM_DEN;
  for (int j = 0; j < nsym; j++) {
    int64_t dv = values[1 + j] - values[0], ds = sizes[1 + j][j] - sizes[0][j];
    if (dv * HL_SYM_DEN % ds) return -1;
    out->a[j] = dv * HL_SYM_DEN / ds;
    c -= out->a[j] * sizes[0][j];
  }
  for (int j = nsym; j < HL_MAX_SYMS; j++) out->a[j] = 0;
  out->c = c;
  for (int t = 1; t < nsym + 2; t++) {
    int64_t want = c;
    for (int j = 0; j < nsym; j++) want += out->a[j] * sizes[t][j];
    if (want != values[t] * HL_SYM_DEN) return -1;
  }
  return 0;
}

/* the number as it is in trace t */
static int64_t int_at(const fitter *f, int t, int node, int field, int index) {
  const hl_node *n = &f->g[t]->nodes[node];
  switch (field) {
  case HL_SYM_SHAPE: return n->type.shape[index];
  case HL_SYM_ATTR_I: return n->attrs.i[index];
  default: return n->attrs.shape[index];
  }
}

static const char *field_text(int field) {
  return field == HL_SYM_SHAPE ? "an extent" : field == HL_SYM_VALUE ? "a constant" : "an attribute";
}

/* Whether the lowering reads this number as an expression (hl_lower.cpp): extents, reshape's,
 * broadcast's and iota's target shapes (the node's own), a slice's starts and steps, a scatter's
 * target length, an inverse real FFT's lane length, constants. */
static int lowerable(fitter *f, int node, int field, int index) {
  const hl_node *n = &f->g[0]->nodes[node];
  /* (a compiled loop's sizes are its results' extents, which the runtime's polymorphic loop
   * computes from the symbols: engine/runtime/hl_poly.c; extern stages such as FFTs and
   * collectives take their operands' extents as expressions) */
  if (n->prim == HL_P_PARAM && field == HL_SYM_SHAPE && n->attrs.i[0] >= f->nargs)
    return refuse(f, "a constant the function captures has a size that follows the dynamic size (make it inside the "
                     "function from x.shape, with hl.zeros, hl.full or hl.arange)");
  switch (field) {
  case HL_SYM_SHAPE: case HL_SYM_ATTR_SHAPE: return 0;
  case HL_SYM_VALUE: return n->prim == HL_P_CONST ? 0 : refuse(f, "%s's value follows the dynamic size", hl_prims[n->prim].name);
  default:
    if (n->prim == HL_P_SLICE) return 0;
    if (n->prim == HL_P_FFT_REAL_INVERSE && index == 1) return 0;   /* (the lanes' length, n) */
    if ((n->prim == HL_P_SCATTER || n->prim == HL_P_SCATTER_ADD) && index == 1) return 0;
    return refuse(f, "%s's attribute %d follows the dynamic size", hl_prims[n->prim].name, index + 1);
  }
}

static int fit_int(fitter *f, int node, int field, int index) {
  int64_t v0 = int_at(f, 0, node, field, index);
  int same = 1;
  for (int t = 1; t < f->ntraces; t++) same = same && int_at(f, t, node, field, index) == v0;
  if (same) return 0;
  if (lowerable(f, node, field, index)) return -1;
  hl_sym_slot s = {.node = node, .field = field, .index = index};
  int64_t values[HL_MAX_SYMS + 2];
  for (int t = 0; t < f->ntraces; t++) values[t] = int_at(f, t, node, field, index);
  if (!hl_sym_fit_number(f->nsym, f->sizes, values, &s)) return push(f, &s);
  return refuse(f, "%s of %s (node %d) is not an affine function of the dynamic sizes (a product of two of them, or a "
                   "division that rounds)", field_text(field), hl_prims[f->g[0]->nodes[node].prim].name, node);
}

static int fit_value(fitter *f, int node) {
  double v0 = f->g[0]->nodes[node].attrs.f;
  int same = 1;
  for (int t = 1; t < f->ntraces; t++) {
    double v = f->g[t]->nodes[node].attrs.f;
    same = same && !memcmp(&v, &v0, sizeof v);
  }
  if (same) return 0;
  if (lowerable(f, node, HL_SYM_VALUE, 0)) return -1;
  hl_sym_slot s = {.node = node, .field = HL_SYM_VALUE};
  double c = v0;
  for (int j = 0; j < f->nsym; j++) {
    s.fa[j] = (f->g[1 + j]->nodes[node].attrs.f - v0) / (double)(f->sizes[1 + j][j] - f->sizes[0][j]);
    c -= s.fa[j] * (double)f->sizes[0][j];
  }
  s.fc = c;
  for (int t = 1; t < f->ntraces; t++) {
    double want = c, got = f->g[t]->nodes[node].attrs.f;
    for (int j = 0; j < f->nsym; j++) want += s.fa[j] * (double)f->sizes[t][j];
    if (!(fabs(want - got) <= 1e-9 * fmax(1.0, fabs(got))))
      return refuse(f, "a constant (node %d) is not an affine function of the dynamic sizes (such as 1 / n: divide by the "
                       "size instead)", node);
  }
  return push(f, &s);
}

/* whether b is a's program node for node (operations, inputs, dtypes, ranks; not sizes) */
static int same_ops(const hl_graph *a, const hl_graph *b, const char *where, char *why, size_t nwhy) {
  if (b->nnodes != a->nnodes || b->noutputs != a->noutputs || b->nparams != a->nparams ||
      memcmp(b->outputs, a->outputs, sizeof(int) * (size_t)a->noutputs)) {
    snprintf(why, nwhy, "the function builds another program %s (%d against %d operations)", where, b->nnodes, a->nnodes);
    return 0;
  }
  for (int i = 0; i < a->nnodes; i++) {
    const hl_node *x = &a->nodes[i], *y = &b->nodes[i];
    if (x->prim != y->prim || x->nin != y->nin || x->type.dtype != y->type.dtype || x->type.ndim != y->type.ndim ||
        x->attrs.dtype != y->attrs.dtype || x->attrs.nshape != y->attrs.nshape ||
        (x->nin && memcmp(hl_node_inputs(a, x), hl_node_inputs(b, y), sizeof(int) * (size_t)x->nin))) {
      snprintf(why, nwhy, "the function builds another program %s (operation %d: %s against %s)", where, i + 1,
               hl_prims[x->prim].name, hl_prims[y->prim].name);
      return 0;
    }
  }
  return 1;
}

static int same_structure(fitter *f) {
  for (int t = 1; t < f->ntraces; t++)
    if (!same_ops(f->g[0], f->g[t], "at other sizes", f->why, f->nwhy)) return -1;
  return 0;
}

/* A form the call's sizes must keep at least `least` (its index), once for each (c, a). */
static void add_form(hl_symbolic *s, int64_t c, const int64_t *a, int least, int why) {
  for (int q = 0; q < s->nforms; q++) {
    hl_sym_slot *fm = &s->forms[q];
    if (fm->c == c && !memcmp(fm->a, a, sizeof fm->a)) {
      if (least > fm->index) fm->index = least;
      return;
    }
  }
  hl_sym_slot *fm = &s->forms[s->nforms++];
  *fm = (hl_sym_slot){.c = c, .index = least, .field = why};
  memcpy(fm->a, a, sizeof fm->a);
}

/* a number of node i as a form (times HL_SYM_DEN): its slot, or its traced value */
static void form_of(const hl_symbolic *s, const hl_graph *g, int node, int field, int index, int64_t *c, int64_t *a) {
  const hl_sym_slot *sl = hl_sym_find(s, node, field, index);
  if (sl) {
    *c = sl->c;
    memcpy(a, sl->a, sizeof(int64_t) * HL_MAX_SYMS);
    return;
  }
  const hl_node *n = &g->nodes[node];
  *c = HL_SYM_DEN * (field == HL_SYM_SHAPE ? n->type.shape[index] : n->attrs.i[index]);
  memset(a, 0, sizeof(int64_t) * HL_MAX_SYMS);
}

static int is_constant(const int64_t *a) {
  for (int j = 0; j < HL_MAX_SYMS; j++)
    if (a[j]) return 0;
  return 1;
}

/* A slice reads in[start + k * step] for k < count: the trace checked that range against its
 * operand at the made-up sizes (hl_ir.c's slice rule), where a bound the function gave as a
 * number (x[{{1, 10}}], x[5], a clamp of halua's own) fits every one of them. The call's sizes
 * must keep it inside too: start and the last index read within 0 .. extent - 1. */
static int slice_bounds(fitter *f, const hl_graph *g, hl_symbolic *s) {
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node *n = &g->nodes[i];
    if (n->prim != HL_P_SLICE) continue;
    int src = hl_node_inputs(g, n)[0];
    for (int k = 0; k < n->type.ndim; k++) {
      int64_t sc, sa[HL_MAX_SYMS], tc, ta[HL_MAX_SYMS], nc, na[HL_MAX_SYMS], ec, ea[HL_MAX_SYMS];
      form_of(s, g, i, HL_SYM_ATTR_I, k, &sc, sa);
      form_of(s, g, i, HL_SYM_ATTR_I, HL_MAX_DIMS + k, &tc, ta);
      form_of(s, g, i, HL_SYM_SHAPE, k, &nc, na);
      form_of(s, g, src, HL_SYM_SHAPE, k, &ec, ea);
      if (is_constant(sa) && is_constant(ta) && is_constant(na) && is_constant(ea)) continue;
      /* last = start + (count - 1) * step: one factor must be a number for it to stay affine */
      int64_t lc, la[HL_MAX_SYMS], m1c = nc - HL_SYM_DEN;
      if (!is_constant(ta) && !is_constant(na))
        return refuse(f, "a slice (node %d) whose step and length both follow the dynamic size", i);
      if (is_constant(ta)) {
        int64_t step = tc / HL_SYM_DEN;
        lc = sc + m1c * step;
        for (int j = 0; j < HL_MAX_SYMS; j++) la[j] = sa[j] + na[j] * step;
      } else {
        int64_t m1 = m1c / HL_SYM_DEN;
        lc = sc + tc * m1;
        for (int j = 0; j < HL_MAX_SYMS; j++) la[j] = sa[j] + ta[j] * m1;
      }
      /* last >= 0, extent - 1 - last >= 0, extent - 1 - start >= 0 (start >= 0: its own form) */
      int64_t rc, ra[HL_MAX_SYMS];
      add_form(s, lc, la, 0, HL_SYM_FORM_SLICE);
      rc = ec - HL_SYM_DEN - lc;
      for (int j = 0; j < HL_MAX_SYMS; j++) ra[j] = ea[j] - la[j];
      add_form(s, rc, ra, 0, HL_SYM_FORM_SLICE);
      rc = ec - HL_SYM_DEN - sc;
      for (int j = 0; j < HL_MAX_SYMS; j++) ra[j] = ea[j] - sa[j];
      add_form(s, rc, ra, 0, HL_SYM_FORM_SLICE);
    }
  }
  return 0;
}

hl_symbolic *hl_sym_fit(const hl_graph *const *graphs, int nsym, const int64_t sizes[][HL_MAX_SYMS], const int *param,
                        const int *axis, int nargs, char *why, size_t nwhy) {
  fitter f = {.g = graphs, .nsym = nsym, .ntraces = nsym + 2, .nargs = nargs, .sizes = sizes, .why = why, .nwhy = nwhy};
  why[0] = 0;
  hl_symbolic *s = NULL;
  const hl_graph *g = graphs[0];
  if (nsym < 1 || nsym > HL_MAX_SYMS) {
    refuse(&f, "%d dynamic sizes (at most %d)", nsym, HL_MAX_SYMS);
    goto fail;
  }
  if (same_structure(&f)) goto fail;
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node *n = &g->nodes[i];
    for (int a = 0; a < n->type.ndim; a++)
      if (fit_int(&f, i, HL_SYM_SHAPE, a)) goto fail;
    int na = hl_attr_count(n->prim, n->type.ndim);
    for (int k = 0; k < na; k++)
      if (fit_int(&f, i, HL_SYM_ATTR_I, k)) goto fail;
    for (int k = 0; k < n->attrs.nshape; k++)
      if (fit_int(&f, i, HL_SYM_ATTR_SHAPE, k)) goto fail;
    if (hl_prims[n->prim].attrs == HL_A_VALUE && fit_value(&f, i)) goto fail;
  }
  /* a parameter's dynamic axis is its symbol itself */
  for (int k = 0; k < f.nslots; k++) {
    const hl_sym_slot *sl = &f.slots[k];
    const hl_node *n = &g->nodes[sl->node];
    if (n->prim != HL_P_PARAM || sl->field != HL_SYM_SHAPE) continue;
    int ok = sl->c == 0, which = -1;
    for (int j = 0; j < nsym; j++) {
      if (sl->a[j] == HL_SYM_DEN && which < 0) which = j;
      else ok = ok && sl->a[j] == 0;
    }
    if (!ok || which < 0) {
      refuse(&f, "axis %d of argument array %d is not one of the dynamic sizes", sl->index + 1, (int)n->attrs.i[0] + 1);
      goto fail;
    }
  }
  s = calloc(1, sizeof *s);
  if (!s || !(s->first = calloc((size_t)g->nnodes + 1, sizeof(int)))) goto oom;
  s->nsym = nsym;
  s->nnodes = g->nnodes;
  for (int j = 0; j < nsym; j++) {
    s->param[j] = param[j];
    s->axis[j] = axis[j];
  }
  s->slots = f.slots;
  s->nslots = f.nslots;
  f.slots = NULL;
  /* room for the sizes' forms and three bounds per slice axis (slice_bounds) */
  int room = s->nslots;
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].prim == HL_P_SLICE) room += 3 * g->nodes[i].type.ndim;
  if (room && !(s->forms = malloc(sizeof *s->forms * (size_t)room))) goto oom;
  for (int k = 0; k < s->nslots; k++) {
    const hl_sym_slot *sl = &s->slots[k];
    if (sl->field == HL_SYM_VALUE) continue;
    add_form(s, sl->c, sl->a, sl->field == HL_SYM_ATTR_I ? 0 : 1, HL_SYM_FORM_SIZE);
  }
  /* (slots were made node by node) */
  for (int k = 0, i = 0; i <= g->nnodes; i++) {
    while (k < s->nslots && s->slots[k].node < i) k++;
    s->first[i] = k;
  }
  if (slice_bounds(&f, g, s)) goto fail;
  if (!(s->watch = malloc(sizeof(int) * (size_t)(g->nnodes ? g->nnodes : 1)))) goto oom;
  for (int i = 0; i < g->nnodes; i++) {
    int prim = g->nodes[i].prim, follows = 0;
    for (int k = s->first[i]; k < s->first[i + 1]; k++) follows = follows || s->slots[k].field == HL_SYM_SHAPE;
    if (prim == HL_P_PARAM || (prim == HL_P_RESHAPE && follows)) s->watch[s->nwatch++] = i;
  }
  return s;
oom:
  snprintf(why, nwhy, "%s", "");
fail:
  free(f.slots);
  if (s) hl_sym_free(s);
  return NULL;
}


/* node i's place in the remapped graph (no map: the same) */
#define MAP(i) (node_map ? node_map[i] : (i))
hl_symbolic *hl_sym_remap(const hl_symbolic *s, int nnodes, const int *node_map, const int *param_map, int keep_checks) {
  hl_symbolic *r = calloc(1, sizeof *r);
  if (!r) goto oom;
  r->nsym = s->nsym;
  for (int j = 0; j < s->nsym; j++) {
    r->param[j] = param_map ? param_map[s->param[j]] : s->param[j];
    r->axis[j] = s->axis[j];
  }
  r->nnodes = nnodes;
  if (!(r->first = calloc((size_t)nnodes + 1, sizeof *r->first))) goto oom;
  for (int i = 0; i < s->nnodes; i++)   /* counted at first[new + 1], then summed up */
    if (MAP(i) >= 0) r->first[MAP(i) + 1] += s->first[i + 1] - s->first[i];
  for (int i = 0; i < nnodes; i++) r->first[i + 1] += r->first[i];
  r->nslots = r->first[nnodes];
  if (r->nslots && !(r->slots = malloc(sizeof *r->slots * (size_t)r->nslots))) goto oom;
  for (int i = 0; i < s->nnodes; i++) {
    int to = MAP(i);
    if (to < 0) continue;
    for (int k = s->first[i], at = r->first[to]; k < s->first[i + 1]; k++, at++) {
      r->slots[at] = s->slots[k];
      r->slots[at].node = to;
    }
  }
  if (keep_checks) {
    if (s->nforms && !(r->forms = malloc(sizeof *r->forms * (size_t)s->nforms))) goto oom;
    if (s->nforms) memcpy(r->forms, s->forms, sizeof *r->forms * (size_t)s->nforms);   /* (forms name no node) */
    r->nforms = s->nforms;
    if (s->nwatch && !(r->watch = malloc(sizeof *r->watch * (size_t)s->nwatch))) goto oom;
    for (int w = 0; w < s->nwatch; w++)
      if (MAP(s->watch[w]) >= 0) r->watch[r->nwatch++] = MAP(s->watch[w]);
  }
  return r;
oom:
  hl_sym_free(r);
  hl_error("out of memory");
  return NULL;
}

#undef MAP

const hl_sym_slot *hl_sym_find(const hl_symbolic *s, int node, int field, int index) {
  if (!s || node < 0 || node >= s->nnodes) return NULL;
  for (int k = s->first[node]; k < s->first[node + 1]; k++)
    if (s->slots[k].field == field && s->slots[k].index == index) return &s->slots[k];
  return NULL;
}

int hl_sym_size(const hl_sym_slot *slot, int nsym, const int64_t *sym, int64_t *out) {
  /* (sizes below 2^53 and coefficients of a few hundred: no overflow in 64 bits) */
  int64_t v = slot->c;
  for (int j = 0; j < nsym; j++) v += slot->a[j] * sym[j];
  if (v < 0 || v % HL_SYM_DEN) return -1;
  *out = v / HL_SYM_DEN;
  return 0;
}

int hl_sym_bind(const hl_graph *g, const int64_t *const *shapes, const int *ndims, int64_t *sym, char *why, size_t nwhy) {
  const hl_symbolic *s = g->sym;
  for (int w = 0; w < s->nwatch; w++) {
    const hl_node *n = &g->nodes[s->watch[w]];
    int p = (int)n->attrs.i[0];
    if (n->prim == HL_P_PARAM && ndims[p] != n->type.ndim) {
      snprintf(why, nwhy, "argument array %d has rank %d where the program takes rank %d", p + 1, ndims[p], n->type.ndim);
      return -1;
    }
  }
  for (int j = 0; j < s->nsym; j++) sym[j] = shapes[s->param[j]][s->axis[j]];
  for (int q = 0; q < s->nforms; q++) {
    int64_t v = -1;
    if (hl_sym_size(&s->forms[q], s->nsym, sym, &v) || v < s->forms[q].index) {
      if (s->forms[q].field == HL_SYM_FORM_SLICE)
        snprintf(why, nwhy, "%s", "at these sizes a slice (an index or range given as a number, or one halua computed) "
                                  "reads outside its operand");
      else
        snprintf(why, nwhy, "at these sizes one of its sizes is %s", v < 0 ? "negative or fractional" : v == 0 ? "0" : "fractional");
      return -1;
    }
  }
  for (int w = 0; w < s->nwatch; w++) {
    int i = s->watch[w];
    const hl_node *n = &g->nodes[i];
    if (n->prim != HL_P_PARAM) continue;
    int p = (int)n->attrs.i[0];
    for (int a = 0; a < n->type.ndim; a++) {
      const hl_sym_slot *sl = hl_sym_find(s, i, HL_SYM_SHAPE, a);
      int64_t want = n->type.shape[a];
      if (sl && hl_sym_size(sl, s->nsym, sym, &want)) want = -1;
      if (shapes[p][a] != want) {
        snprintf(why, nwhy, "axis %d of argument array %d has %lld elements where the program needs %lld", a + 1, p + 1,
                 (long long)shapes[p][a], (long long)want);
        return -1;
      }
    }
  }
  return 0;
}

int hl_sym_matches(const hl_graph *g, const hl_graph *real, const int64_t *sym, char *why, size_t nwhy) {
  const hl_symbolic *s = g->sym;
  if (!same_ops(g, real, "at these sizes", why, nwhy)) return 0;
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node *n = &g->nodes[i], *r = &real->nodes[i];
    int counts[3] = {n->type.ndim, hl_attr_count(n->prim, n->type.ndim), n->attrs.nshape};
    for (int field = HL_SYM_SHAPE; field <= HL_SYM_ATTR_SHAPE; field++)
      for (int k = 0; k < counts[field]; k++) {
        const int64_t *mine = field == HL_SYM_SHAPE ? n->type.shape : field == HL_SYM_ATTR_I ? n->attrs.i : n->attrs.shape;
        const int64_t *theirs = field == HL_SYM_SHAPE ? r->type.shape : field == HL_SYM_ATTR_I ? r->attrs.i : r->attrs.shape;
        /* (a loop's number is this process's: the runtime compares the loops themselves) */
        if (field == HL_SYM_ATTR_I && k == 0 && hl_prims[n->prim].attrs == HL_A_LOOP) continue;
        const hl_sym_slot *sl = hl_sym_find(s, i, field, k);
        int64_t want = mine[k];
        if (sl && hl_sym_size(sl, s->nsym, sym, &want)) want = -1;
        if (want != theirs[k]) {
          snprintf(why, nwhy, "at these sizes %s of %s (operation %d) is %lld, not the %lld the polymorphic program has there "
                   "(a size checked or clamped inside the function)", field_text(field), hl_prims[n->prim].name, i + 1,
                   (long long)theirs[k], (long long)want);
          return 0;
        }
      }
    if (hl_prims[n->prim].attrs == HL_A_VALUE) {
      const hl_sym_slot *sl = hl_sym_find(s, i, HL_SYM_VALUE, 0);
      double want = n->attrs.f, got = r->attrs.f;
      if (sl) {
        want = sl->fc;
        for (int j = 0; j < s->nsym; j++) want += sl->fa[j] * (double)sym[j];
      }
      int same = sl ? fabs(want - got) <= 1e-9 * fmax(1.0, fabs(got)) : !memcmp(&want, &got, sizeof want);
      if (!same) {
        snprintf(why, nwhy, "at these sizes a constant (operation %d) is %.17g, not the %.17g of the polymorphic program", i + 1,
                 got, want);
        return 0;
      }
    }
  }
  return 1;
}
