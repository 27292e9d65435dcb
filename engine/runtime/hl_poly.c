/* Polymorphic programs and their compiled loops (hl_poly.h). */
#include "hl_poly.h"
#include "hl_error.h"
#include "hl_loop.h"
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* the most traces of one fit: base, each symbol moved, all moved */
enum { MAXTR = HL_MAX_SYMS + 2 };

typedef const int64_t (*sizes_t)[HL_MAX_SYMS];

/* not polymorphic, and why: 1 */
__attribute__((format(printf, 3, 4))) static int refused(char *why, size_t nwhy, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  vsnprintf(why, nwhy, fmt, ap);
  va_end(ap);
  return 1;
}

static int generalise_loops(hl_graph *graphs, int ntr, int nsym, sizes_t sizes, char *why, size_t nwhy);

/* The table of sizes of graphs[0..ntr) (pruned, traced at sizes[t]; their loops' numbers are
 * made those of one polymorphic loop per place), whose captures caps[t][0..ncaps[t]) must be one
 * set of constants: in a loop's body (body), its values of the enclosing program are the loop's
 * inputs, which its loop compares. Parameters below nfit may follow the symbols: the arguments,
 * and in a body its captures too. 0 with *out; 1 with why; -1. */
static int fit_graphs(hl_graph *graphs, int ntr, const hl_array *const *caps, const int *ncaps, int body, int nfit,
                      int nsym, sizes_t sizes, const int *param, const int *axis, hl_symbolic **out, char *why,
                      size_t nwhy) {
  for (int t = 1; t < ntr; t++) {
    if (ncaps[t] != ncaps[0])
      return refused(why, nwhy, "the function captures %d constants at one size and %d at another", ncaps[0], ncaps[t]);
    for (int c = 0; c < ncaps[0]; c++) {
      const hl_array *a = &caps[0][c], *b = &caps[t][c];
      if (body && hl_is_abstract(a) && hl_is_abstract(b)) continue;
      if (!hl_same_capture(a, b))
        return refused(why, nwhy, "constant %d that the function captures differs between sizes (an array made from a "
                       "dynamic size as a value: build it from x.shape with hl.full or hl.arange instead)", c + 1);
    }
  }
  int rc = generalise_loops(graphs, ntr, nsym, sizes, why, nwhy);
  if (rc) return rc;
  const hl_graph *gp[MAXTR];
  for (int t = 0; t < ntr; t++) gp[t] = &graphs[t];
  *out = hl_sym_fit(gp, nsym, sizes, param, axis, nfit, why, nwhy);
  if (!*out) return why[0] ? 1 : hl_error("out of memory");
  return 0;
}

/* ---- comparing a polymorphic program with a trace at a call's sizes ---- */

static int loops_match(const hl_loop *p, const hl_loop *r, const int64_t *sym, char *why, size_t nwhy);

/* whether `real` is pg at the symbols' values sym (NULL: pg has fixed sizes), loops included */
static int graphs_match(const hl_graph *pg, const hl_graph *real, const int64_t *sym, char *why, size_t nwhy) {
  int rc = hl_sym_matches(pg, real, sym, why, nwhy);
  for (int i = 0; i < pg->nnodes && rc == 1; i++)
    if (pg->nodes[i].prim == HL_P_LOOP)
      rc = loops_match(hl_loop_get((int)pg->nodes[i].attrs.i[0]), hl_loop_get((int)real->nodes[i].attrs.i[0]), sym, why, nwhy);
  return rc;
}

static int programs_match(const hl_program *p, const hl_program *r, const int64_t *sym, char *why, size_t nwhy) {
  if (p->ncaptures != r->ncaptures || p->nargs != r->nargs) {
    snprintf(why, nwhy, "%s", "a compiled loop's body takes other values at these sizes");
    return 0;
  }
  for (int c = 0; c < p->ncaptures; c++) {
    const hl_array *a = &p->captures[c], *b = &r->captures[c];
    if (!(hl_is_abstract(a) && hl_is_abstract(b)) && !hl_same_capture(a, b)) {
      snprintf(why, nwhy, "at these sizes constant %d that a compiled loop's body captures differs", c + 1);
      return 0;
    }
  }
  return graphs_match(&p->g, &r->g, sym, why, nwhy);
}

/* the same loop but for its number and its made-up sizes: kind, steps, counts, where each
 * captured value comes from, dtypes and ranks */
static int same_loop_frame(const hl_loop *a, const hl_loop *b) {
  if (a->kind != b->kind || a->ncarry != b->ncarry || a->nxs != b->nxs || a->nys != b->nys || a->ninputs != b->ninputs ||
      a->nresults != b->nresults || a->body.ncaptures != b->body.ncaptures || a->cond.ncaptures != b->cond.ncaptures ||
      a->body.nargs != b->body.nargs || a->cond.nargs != b->cond.nargs)
    return 0;
  if (a->body.ncaptures && memcmp(a->body_src, b->body_src, sizeof(int) * (size_t)a->body.ncaptures)) return 0;
  if (a->cond.ncaptures && memcmp(a->cond_src, b->cond_src, sizeof(int) * (size_t)a->cond.ncaptures)) return 0;
  for (int k = 0; k < a->ninputs; k++)
    if (a->input_types[k].dtype != b->input_types[k].dtype || a->input_types[k].ndim != b->input_types[k].ndim) return 0;
  for (int k = 0; k < a->nresults; k++)
    if (a->result_types[k].dtype != b->result_types[k].dtype || a->result_types[k].ndim != b->result_types[k].ndim) return 0;
  return 1;
}

/* the values of a program's symbols from those of the program around it */
static const int64_t *inner_symbols(const hl_program *p, const int *map, const int64_t *sym, int64_t *out) {
  if (!p->g.sym) return NULL;
  for (int j = 0; j < p->g.sym->nsym; j++) out[j] = sym[map[j]];
  return out;
}

static int loops_match(const hl_loop *p, const hl_loop *r, const int64_t *sym, char *why, size_t nwhy) {
  if (!p || !r) return hl_error("jit: internal: an unknown compiled loop");
  if (p == r) return 1;
  int64_t lo, hi;
  if (hl_loop_bounds(p, sym, &lo, &hi) || lo != r->lo || hi != r->hi || !same_loop_frame(p, r)) {
    snprintf(why, nwhy, "at these sizes %s is another loop (its steps, its carries or the values it uses)", p->name);
    return 0;
  }
  for (int side = 0; side < 2; side++)
    for (int k = 0; k < (side ? p->nresults : p->ninputs); k++) {
      const hl_type *t = side ? &r->result_types[k] : &r->input_types[k];
      int64_t want[HL_MAX_DIMS];
      if (hl_loop_shape(p, side, k, sym, want) || memcmp(want, t->shape, sizeof(int64_t) * (size_t)t->ndim)) {
        snprintf(why, nwhy, "at these sizes %s %s %d has another shape than the polymorphic program gives it", p->name,
                 side ? "result" : "input", k + 1);
        return 0;
      }
    }
  int64_t bsym[HL_MAX_SYMS];
  int rc = programs_match(&p->body, &r->body, inner_symbols(&p->body, p->body_sym, sym, bsym), why, nwhy);
  if (rc == 1 && p->kind == HL_LOOP_WHILE)
    rc = programs_match(&p->cond, &r->cond, inner_symbols(&p->cond, p->cond_sym, sym, bsym), why, nwhy);
  return rc;
}

/* ---- one polymorphic loop from the loops of the traces ---- */

/* out = a copy of p without its kernel */
static int copy_program(const hl_program *p, hl_program *out) {
  memset(out, 0, sizeof *out);
  if (hl_graph_prune(&p->g, &out->g)) return -1;
  out->nargs = p->nargs;
  if (hl_program_set_captures(out, p->ncaptures, p->captures)) {
    hl_graph_free(&out->g);
    return -1;
  }
  return 0;
}

/* A loop's body (or condition) progs[t] of the traces as one program (kernel NULL: compiled when
 * the loop first runs). The program's symbols that reach it are axes of its own arrays (symbol
 * j' of out is map[j'] of the enclosing program's); one that does not must leave it unchanged. */
static int fit_program(const hl_program *const *progs, int ntr, int nsym, sizes_t sizes, const char *name,
                       hl_program *out, int *map, char *why, size_t nwhy) {
  const hl_graph *b0 = &progs[0]->g;
  int J[HL_MAX_SYMS], pj[HL_MAX_SYMS], aj[HL_MAX_SYMS], nj = 0;
  char inner[300];
  for (int j = 0; j < nsym; j++) {
    int found = 0;
    for (int i = 0; i < b0->nnodes && !found; i++) {
      const hl_node *pn = &b0->nodes[i];
      if (pn->prim != HL_P_PARAM) continue;
      for (int d = 0; d < pn->type.ndim && !found; d++) {
        int all = 1;
        for (int t = 0; t < ntr && all; t++) {
          const hl_graph *b = &progs[t]->g;
          all = i < b->nnodes && b->nodes[i].prim == HL_P_PARAM && b->nodes[i].type.ndim == pn->type.ndim &&
                b->nodes[i].type.shape[d] == sizes[t][j];
        }
        if (all) {
          J[nj] = j, pj[nj] = (int)pn->attrs.i[0], aj[nj] = d;
          nj++;
          found = 1;
        }
      }
    }
    if (found) continue;
    /* (symbol j moved in trace 1 + j) */
    int rc = programs_match(progs[0], progs[1 + j], NULL, inner, sizeof inner);
    if (rc < 0) return -1;
    if (!rc)
      return refused(why, nwhy, "the body of %s follows a dynamic size other than as an axis of its carries, scanned "
                     "rows or the values it uses (a carry of 2 * b elements, say)", name);
  }
  if (!nj) {
    int rc = programs_match(progs[0], progs[ntr - 1], NULL, inner, sizeof inner);
    if (rc <= 0) return rc < 0 ? -1 : refused(why, nwhy, "the body of %s differs between sizes", name);
    return copy_program(progs[0], out) ? -1 : 0;
  }
  /* the body's traces: base, each of its symbols moved, all moved */
  int sel[MAXTR], btr = nj + 2;
  sel[0] = 0;
  for (int q = 0; q < nj; q++) sel[1 + q] = 1 + J[q];
  sel[nj + 1] = ntr - 1;
  hl_graph graphs[MAXTR];
  const hl_array *caps[MAXTR];
  int ncaps[MAXTR];
  int64_t bsizes[MAXTR][HL_MAX_SYMS];
  for (int t = 0; t < btr; t++) hl_graph_init(&graphs[t]);
  int rc = 0;
  for (int t = 0; t < btr && !rc; t++) {
    const hl_program *p = progs[sel[t]];
    rc = hl_graph_prune(&p->g, &graphs[t]);
    caps[t] = p->captures;
    ncaps[t] = p->ncaptures;
    for (int q = 0; q < nj; q++) bsizes[t][q] = sizes[sel[t]][J[q]];
  }
  hl_symbolic *sym = NULL;
  if (!rc) rc = fit_graphs(graphs, btr, caps, ncaps, 1, b0->nparams, nj, (sizes_t)bsizes, pj, aj, &sym, inner, sizeof inner);
  if (rc == 1) refused(why, nwhy, "the body of %s is not one program for every size: %s", name, inner);
  if (!rc) {
    memset(out, 0, sizeof *out);
    out->g = graphs[0];
    hl_graph_init(&graphs[0]);
    out->g.sym = sym;
    out->nargs = progs[0]->nargs;
    if (hl_program_set_captures(out, progs[0]->ncaptures, progs[0]->captures)) {
      hl_program_free(out);
      rc = -1;
    } else {
      for (int q = 0; q < nj; q++) map[q] = J[q];
    }
  }
  for (int t = 0; t < btr; t++) hl_graph_free(&graphs[t]);
  return rc;
}

/* the extents of a loop's inputs (results: 1) as forms of the symbols */
static int fit_extents(const hl_loop *const *l, int ntr, int nsym, sizes_t sizes, int results, hl_sym_slot **out,
                       char *why, size_t nwhy) {
  int n = results ? l[0]->nresults : l[0]->ninputs;
  *out = calloc((size_t)(n ? n : 1) * HL_MAX_DIMS, sizeof **out);
  if (!*out) return hl_error("out of memory");
  for (int k = 0; k < n; k++) {
    const hl_type *t0 = results ? &l[0]->result_types[k] : &l[0]->input_types[k];
    for (int d = 0; d < t0->ndim; d++) {
      int64_t values[MAXTR];
      for (int t = 0; t < ntr; t++) values[t] = (results ? l[t]->result_types : l[t]->input_types)[k].shape[d];
      if (hl_sym_fit_number(nsym, sizes, values, &(*out)[k * HL_MAX_DIMS + d]))
        return refused(why, nwhy, "axis %d of %s's %s %d is not an affine function of the dynamic sizes", d + 1, l[0]->name,
                       results ? "result" : "input", k + 1);
    }
  }
  return 0;
}

static int *copy_ints(const int *a, int n) {
  int *c = calloc((size_t)(n ? n : 1), sizeof *c);
  if (c && n) memcpy(c, a, sizeof *c * (size_t)n);
  return c;
}

/* The loops ids[0..ntr) of the traces as one polymorphic loop: its number in *id. */
static int generalise_loop(const int *ids, int ntr, int nsym, sizes_t sizes, int *id, char *why, size_t nwhy) {
  const hl_loop *l[MAXTR] = {0};
  for (int t = 0; t < ntr; t++)
    if (!(l[t] = hl_loop_get(ids[t]))) return hl_error("jit: internal: an unknown compiled loop");
  const hl_loop *a = l[0];
  for (int t = 1; t < ntr; t++)
    if (!same_loop_frame(a, l[t])) return refused(why, nwhy, "%s is another loop at other sizes", a->name);
  /* the bounds (a scan over a dynamic axis has as many steps) */
  hl_sym_slot bounds[2] = {{0}};
  for (int side = 0; side < 2; side++) {
    int64_t values[MAXTR];
    for (int t = 0; t < ntr; t++) values[t] = (side ? l[t]->hi : l[t]->lo) + HL_LOOP_BOUND_SHIFT;
    if (hl_sym_fit_number(nsym, sizes, values, &bounds[side]))
      return refused(why, nwhy, "the number of steps of %s is not an affine function of the dynamic sizes", a->name);
  }
  hl_loop *n = hl_loop_new();
  if (!n) return -1;
  n->kind = a->kind;
  memcpy(n->name, a->name, sizeof n->name);
  n->lo = a->lo;
  n->hi = a->hi;
  n->ncarry = a->ncarry;
  n->nxs = a->nxs;
  n->nys = a->nys;
  n->ninputs = a->ninputs;
  n->nresults = a->nresults;
  n->nsym = nsym;
  n->lo_form = bounds[0];
  n->hi_form = bounds[1];
  int rc = 0;
  n->input_types = calloc((size_t)a->ninputs + 1, sizeof(hl_type));
  n->result_types = calloc((size_t)a->nresults + 1, sizeof(hl_type));
  n->body_src = copy_ints(a->body_src, a->body.ncaptures);
  n->cond_src = a->kind == HL_LOOP_WHILE ? copy_ints(a->cond_src, a->cond.ncaptures) : NULL;
  if (!n->input_types || !n->result_types || !n->body_src || (a->kind == HL_LOOP_WHILE && !n->cond_src)) {
    rc = hl_error("out of memory");
    goto fail;
  }
  memcpy(n->input_types, a->input_types, sizeof(hl_type) * (size_t)a->ninputs);
  memcpy(n->result_types, a->result_types, sizeof(hl_type) * (size_t)a->nresults);
  if ((rc = fit_extents(l, ntr, nsym, sizes, 0, &n->input_forms, why, nwhy)) ||
      (rc = fit_extents(l, ntr, nsym, sizes, 1, &n->result_forms, why, nwhy)))
    goto fail;
  const hl_program *progs[MAXTR];
  for (int t = 0; t < ntr; t++) progs[t] = &l[t]->body;
  if ((rc = fit_program(progs, ntr, nsym, sizes, a->name, &n->body, n->body_sym, why, nwhy))) goto fail;
  if (a->kind == HL_LOOP_WHILE) {
    for (int t = 0; t < ntr; t++) progs[t] = &l[t]->cond;
    if ((rc = fit_program(progs, ntr, nsym, sizes, a->name, &n->cond, n->cond_sym, why, nwhy))) goto fail;
  }
  *id = hl_loop_register(n);
  return *id < 0 ? -1 : 0;
fail:
  hl_loop_discard(n);
  return rc;
}

/* Each compiled loop of the graphs (one at each place of every trace, with results at several
 * places) becomes one polymorphic loop, whose number the graphs then hold. (Loops live until the
 * process ends, as the traces' own do: those made for a fit that is then refused stay unused.) */
static int generalise_loops(hl_graph *graphs, int ntr, int nsym, sizes_t sizes, char *why, size_t nwhy) {
  const hl_graph *g0 = &graphs[0];
  int (*done)[MAXTR + 1] = NULL, ndone = 0, rc = 0;   /* the traces' numbers of a loop, then its new one */
  for (int i = 0; i < g0->nnodes && !rc; i++) {
    if (g0->nodes[i].prim != HL_P_LOOP) continue;
    int ids[MAXTR], nid = -1;
    for (int t = 0; t < ntr && !rc; t++) {
      if (i >= graphs[t].nnodes || graphs[t].nodes[i].prim != HL_P_LOOP)
        rc = refused(why, nwhy, "the function builds another program at other sizes (a compiled loop at operation %d at "
                     "one size only)", i + 1);
      else
        ids[t] = (int)graphs[t].nodes[i].attrs.i[0];
    }
    if (rc) break;
    for (int q = 0; q < ndone && nid < 0; q++)
      if (!memcmp(done[q], ids, sizeof(int) * (size_t)ntr)) nid = done[q][MAXTR];
    if (nid < 0) {
      if (!done && !(done = malloc(sizeof *done * (size_t)g0->nnodes))) {
        rc = hl_error("out of memory");
        break;
      }
      if ((rc = generalise_loop(ids, ntr, nsym, sizes, &nid, why, nwhy))) break;
      memcpy(done[ndone], ids, sizeof(int) * (size_t)ntr);
      done[ndone++][MAXTR] = nid;
    }
    for (int t = 0; t < ntr; t++) graphs[t].nodes[i].attrs.i[0] = nid;
  }
  free(done);
  return rc;
}

/* ---- the entry points ---- */

int hl_program_build_symbolic(hl_trace *const *traces, const hl_array *const *const *outputs, int nout, int nsym,
                              const int64_t sizes[][HL_MAX_SYMS], const int *param, const int *axis, const char *name,
                              hl_program *p, char *why, size_t nwhy) {
  int ntr = nsym + 2, rc = -1;
  if (nsym < 1 || nsym > HL_MAX_SYMS) return hl_error("jit: %d dynamic sizes (at most %d)", nsym, HL_MAX_SYMS);
  if (nout > HL_MAX_PROGRAM_ARRAYS) return hl_error("jit: too many outputs (%d, at most %d)", nout, HL_MAX_PROGRAM_ARRAYS);
  why[0] = 0;
  hl_graph graphs[MAXTR];
  const hl_array *caps[MAXTR];
  int ncaps[MAXTR];
  for (int t = 0; t < ntr; t++) hl_graph_init(&graphs[t]);
  for (int t = 0; t < ntr; t++) {
    if (hl_trace_prune(traces[t], nout, outputs[t], &graphs[t])) goto done;
    caps[t] = traces[t]->captures;
    ncaps[t] = traces[t]->ncaptures;
  }
  int nargs = traces[0]->g.nparams - traces[0]->ncaptures;
  hl_symbolic *sym;
  if ((rc = fit_graphs(graphs, ntr, caps, ncaps, 0, nargs, nsym, sizes, param, axis, &sym, why, nwhy))) goto done;
  memset(p, 0, sizeof *p);
  p->g = graphs[0];
  hl_graph_init(&graphs[0]);
  p->g.sym = sym;
  p->nargs = nargs;
  if ((rc = hl_program_set_captures(p, ncaps[0], caps[0])) || (rc = hl_program_compile(p, name))) hl_program_free(p);
done:
  for (int t = 0; t < ntr; t++) hl_graph_free(&graphs[t]);
  return rc;
}

int hl_program_serves(const hl_program *p, int nargs, const hl_array *const *args, char *why, size_t nwhy) {
  if (!p->g.sym) return 1;
  if (nargs != p->nargs) return hl_error("jit: %d arguments for a program of %d", nargs, p->nargs);
  int64_t sym[HL_MAX_SYMS];
  int bound = hl_program_bind_symbols(p, nargs, args, sym, why, nwhy);
  return bound < 0 ? -1 : !bound;
}

int hl_program_matches(const hl_program *p, hl_trace *t, int nout, const hl_array *const *outputs, int nargs,
                       const hl_array *const *args, char *why, size_t nwhy) {
  if (!p->g.sym) return 1;
  if (nargs != p->nargs) return hl_error("jit: %d arguments for a program of %d", nargs, p->nargs);
  int64_t sym[HL_MAX_SYMS];
  char unserved[200];
  int bound = hl_program_bind_symbols(p, nargs, args, sym, unserved, sizeof unserved);
  if (bound < 0) return -1;
  if (bound) {
    snprintf(why, nwhy, "the program does not serve these sizes: %s", unserved);
    return 0;
  }
  if (t->ncaptures != p->ncaptures) {
    snprintf(why, nwhy, "at these sizes the function captures %d constants, not %d", t->ncaptures, p->ncaptures);
    return 0;
  }
  for (int c = 0; c < p->ncaptures; c++)
    if (!hl_same_capture(&p->captures[c], &t->captures[c])) {
      snprintf(why, nwhy, "at these sizes constant %d that the function captures differs", c + 1);
      return 0;
    }
  hl_graph real;
  hl_graph_init(&real);
  int rc = hl_trace_prune(t, nout, outputs, &real) ? -1 : graphs_match(&p->g, &real, sym, why, nwhy);
  hl_graph_free(&real);
  return rc;
}
