/* Compiled loops: the registry and the driver (see hl_loop.h). */
#include "hl_loop.h"
#include "hl_device.h"
#include "hl_error.h"
#include "hl_interrupt.h"
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

static hl_loop **loops;
static int nloops, cap_loops;
static pthread_mutex_t registry = PTHREAD_MUTEX_INITIALIZER;

static void free_loop(hl_loop *l) {
  hl_program_free(&l->body);
  hl_program_free(&l->cond);
  free(l->result_types);
  free(l->input_types);
  free(l->body_src);
  free(l->cond_src);
  free(l->input_forms);
  free(l->result_forms);
  pthread_mutex_destroy(&l->ready_lock);
  free(l);
}

hl_loop *hl_loop_new(void) {
  hl_loop *l = calloc(1, sizeof *l);
  if (!l) {
    hl_error("out of memory");
    return NULL;
  }
  pthread_mutex_init(&l->ready_lock, NULL);
  return l;
}

int hl_loop_bounds(const hl_loop *l, const int64_t *sym, int64_t *lo, int64_t *hi) {
  *lo = l->lo;
  *hi = l->hi;
  if (!l->nsym || !sym) return 0;
  /* (a fori loop's bounds may be negative: the forms hold them shifted by HL_LOOP_BOUND_SHIFT) */
  if (hl_sym_size(&l->lo_form, l->nsym, sym, lo) || hl_sym_size(&l->hi_form, l->nsym, sym, hi)) return -1;
  *lo -= HL_LOOP_BOUND_SHIFT;
  *hi -= HL_LOOP_BOUND_SHIFT;
  return 0;
}

int hl_loop_shape(const hl_loop *l, int result, int k, const int64_t *sym, int64_t *shape) {
  const hl_type *t = result ? &l->result_types[k] : &l->input_types[k];
  const hl_sym_slot *forms = result ? l->result_forms : l->input_forms;
  for (int d = 0; d < t->ndim; d++) {
    shape[d] = t->shape[d];
    if (l->nsym && sym && hl_sym_size(&forms[k * HL_MAX_DIMS + d], l->nsym, sym, &shape[d])) return -1;
  }
  return 0;
}

void hl_loop_discard(hl_loop *l) { free_loop(l); }

/* loops live as long as the compiled pipelines that call them: until the process ends */
static void free_loops(void) {
  for (int k = 0; k < nloops; k++) free_loop(loops[k]);
  free(loops);
  loops = NULL;
  nloops = cap_loops = 0;
}

int hl_loop_register(hl_loop *l) {
  pthread_mutex_lock(&registry);
  if (nloops == cap_loops) {
    int c = cap_loops ? 2 * cap_loops : 16;
    hl_loop **nl = realloc(loops, sizeof *nl * (size_t)c);
    if (!nl) {
      pthread_mutex_unlock(&registry);
      free_loop(l);
      return hl_error("out of memory registering a loop");
    }
    if (!loops) atexit(free_loops);
    loops = nl;
    cap_loops = c;
  }
  loops[nloops] = l;
  int id = nloops++;
  pthread_mutex_unlock(&registry);
  return id;
}

const hl_loop *hl_loop_get(int id) {
  pthread_mutex_lock(&registry);
  const hl_loop *l = id >= 0 && id < nloops ? loops[id] : NULL;
  pthread_mutex_unlock(&registry);
  return l;
}

/* ---- pipeline runs ---- */

static void release_all(hl_array *a, int n) {
  for (int k = 0; k < n; k++) hl_array_release(&a[k]);
}

/* the results of the loops this thread ran in its unfinished pipeline runs (nested runs: a loop
 * body's pipeline may run loops of its own); the list is freed whenever it empties */
typedef struct {
  int id, n;
  uint64_t run;
  hl_array *results;
} kept_results;
static _Thread_local kept_results *kept;
static _Thread_local int nkept, cap_kept;

static int grow_kept(void) {
  int c = cap_kept ? 2 * cap_kept : 8;
  kept_results *nk = realloc(kept, sizeof *nk * (size_t)c);
  if (!nk) return hl_error("out of memory running a loop");
  kept = nk;
  cap_kept = c;
  return 0;
}

void hl_loop_release_kept(uint64_t run) {
  int w = 0;
  for (int k = 0; k < nkept; k++) {
    if (kept[k].run == run) {
      release_all(kept[k].results, kept[k].n);
      free(kept[k].results);
    } else {
      kept[w++] = kept[k];
    }
  }
  nkept = w;
  if (!nkept && kept) {
    free(kept);
    kept = NULL;
    cap_kept = 0;
  }
}

/* a program's inputs: its arguments, then per capture the loop input it reads or its own array */
static int program_inputs(const hl_program *p, const int *src, int nargs, const hl_array *const *args,
                          const hl_array *const *in, const hl_array **all) {
  if (nargs + p->ncaptures > 64) return hl_error("loop: at most 64 arrays in a loop body");
  for (int k = 0; k < nargs; k++) all[k] = args[k];
  for (int c = 0; c < p->ncaptures; c++) all[nargs + c] = src[c] >= 0 ? in[src[c]] : &p->captures[c];
  return 0;
}

/* ---- the driver ----
 * Device-neutral: the body runs on its program's device (the enclosing pipeline's), and every
 * array the driver makes or copies stays there; the host sees only a while loop's predicate. */

/* an owned, contiguous copy of a on its device (inputs are views of the pipeline's buffers) */
static int owned_copy(const hl_array *a, hl_array *out) {
  if (hl_array_alloc_on(out, hl_array_device(a), a->dtype, a->ndim, a->shape)) return -1;
  if (hl_copy_into(out, a)) {
    hl_array_release(out);
    return -1;
  }
  return 0;
}

/* row s of a (a view without its first axis) */
static hl_array row(const hl_array *a, int64_t s) {
  hl_array r = *a;
  r.offset += s * a->strides[0];
  r.ndim = a->ndim - 1;
  memmove(r.shape, a->shape + 1, sizeof(int64_t) * (size_t)r.ndim);
  memmove(r.strides, a->strides + 1, sizeof(int64_t) * (size_t)r.ndim);
  return r;
}

/* fori's index for step s, a 0-d view into *chunk: the values of INDEX_CHUNK steps are written
 * on the host and moved to the device at once, not 4 bytes per step */
enum { INDEX_CHUNK = 1024 };
static int step_index(const hl_loop *l, int64_t lo, int64_t s, int64_t steps, hl_array *chunk, hl_array *out) {
  int64_t k = s % INDEX_CHUNK;
  if (k == 0) {
    int64_t n = steps - s < INDEX_CHUNK ? steps - s : INDEX_CHUNK;
    hl_array host;
    if (hl_array_alloc(&host, HL_INT32, 1, &n)) return -1;
    for (int64_t j = 0; j < n; j++) ((int32_t *)host.storage->data)[j] = (int32_t)(lo + s + j);
    hl_array_release(chunk);
    int rc = hl_to_device(&host, l->body.g.device, chunk);
    hl_array_release(&host);
    if (rc) return -1;
  }
  *out = row(chunk, k);
  return 0;
}

/* a while loop's predicate for the carries: whether to run another step (1, 0), or -1 */
static int predicate(hl_loop *l, const hl_array *carry, const hl_array *const *in) {
  const hl_array *args[64], *all[64];
  hl_array p, on_host;
  for (int j = 0; j < l->ncarry; j++) args[j] = &carry[j];
  if (program_inputs(&l->cond, l->cond_src, l->ncarry, args, in, all) ||
      hl_program_run_inputs(&l->cond, l->ncarry + l->cond.ncaptures, all, &p))
    return -1;
  int rc = hl_to_device(&p, HL_DEVICE_CPU, &on_host);
  hl_array_release(&p);
  if (rc) return -1;
  int go = hl_array_get(&on_host, 0) != 0;
  hl_array_release(&on_host);
  return go;
}

/* runs loop l on its inputs; its results go to results[0 .. nresults) */
static int run_loop(hl_loop *l, const hl_array *const *in, const int64_t *sym, hl_array *results) {
  enum { MAXC = 64 };
  int nc = l->ncarry, dev = l->body.g.device, rc = -1;
  hl_array carry[MAXC], outs[MAXC], ys[MAXC], index_chunk = {0};
  const hl_array *args[MAXC], *all[MAXC];
  if (nc + l->nxs + 1 > MAXC || nc + l->nys > MAXC) return hl_error("loop: at most %d carried arrays", MAXC - 1);
  hl_interrupt_enter();
  memset(carry, 0, sizeof carry);
  memset(ys, 0, sizeof ys);
  for (int j = 0; j < nc; j++)
    if (owned_copy(in[j], &carry[j])) goto done;
  for (int j = 0; j < l->nys; j++) {
    const hl_type *t = &l->result_types[nc + j];
    int64_t shape[HL_MAX_DIMS];
    if (hl_loop_shape(l, 1, nc + j, sym, shape)) {
      hl_error("%s: internal: the stacked result %d has no whole size here", l->name, j + 1);
      goto done;
    }
    if (hl_array_alloc_on(&ys[j], dev, t->dtype, t->ndim, shape)) goto done;
  }
  int64_t lo, hi;
  if (hl_loop_bounds(l, sym, &lo, &hi)) {
    hl_error("%s: internal: the number of steps is no whole number here", l->name);
    goto done;
  }
  int64_t steps = l->kind == HL_LOOP_FORI ? hi - lo + 1 : hi;
  for (int64_t s = 0; l->kind == HL_LOOP_WHILE || s < steps; s++) {
    /* Ctrl-C between steps (hl_interrupt.h): the loop, and the call that runs it, fail */
    if (hl_interrupted()) {
      hl_error("interrupted");
      goto done;
    }
    if (l->kind == HL_LOOP_WHILE) {
      int go = predicate(l, carry, in);
      if (go < 0) goto done;
      if (!go) break;
    }
    int na = 0;
    hl_array xrow[MAXC], ivar;
    if (l->kind == HL_LOOP_FORI) {
      if (step_index(l, lo, s, steps, &index_chunk, &ivar)) goto done;
      args[na++] = &ivar;
    }
    for (int j = 0; j < nc; j++) args[na++] = &carry[j];
    for (int j = 0; j < l->nxs; j++) {
      xrow[j] = row(in[nc + j], s);
      args[na++] = &xrow[j];
    }
    if (program_inputs(&l->body, l->body_src, na, args, in, all) ||
        hl_program_run_inputs(&l->body, na + l->body.ncaptures, all, outs))
      goto done;
    release_all(carry, nc);
    memcpy(carry, outs, sizeof(hl_array) * (size_t)nc);
    int failed = 0;
    for (int j = 0; j < l->nys && !failed; j++) {
      /* step s's output goes to row s of the stacked result */
      hl_array y = row(&ys[j], s);
      failed = hl_copy_into(&y, &outs[nc + j]);
    }
    release_all(outs + nc, l->nys);
    if (failed) goto done;
  }
  for (int j = 0; j < nc; j++) results[j] = carry[j];
  for (int j = 0; j < l->nys; j++) results[nc + j] = ys[j];
  memset(carry, 0, sizeof carry);
  memset(ys, 0, sizeof ys);
  rc = 0;
done:
  hl_interrupt_leave();
  release_all(carry, nc);
  release_all(ys, l->nys);
  hl_array_release(&index_chunk);
  return rc;
}

/* the programs compiled, and (with place) their own captures (constants, plain arrays) on their
 * device: once each (a pipeline lowered for CUDA without a GPU is compiled but never placed) */
static int make_ready(hl_loop *l, int place) {
  pthread_mutex_lock(&l->ready_lock);
  int is_while = l->kind == HL_LOOP_WHILE, failed = 0;
  if (!l->compiled) {
    failed = hl_program_compile(&l->body, l->name) || (is_while && hl_program_compile(&l->cond, l->name));
    l->compiled = !failed;
  }
  if (!failed && place && !l->placed) {
    failed = hl_program_place_captures(&l->body) || (is_while && hl_program_place_captures(&l->cond));
    l->placed = !failed;
  }
  pthread_mutex_unlock(&l->ready_lock);
  return failed ? -1 : 0;
}

int hl_loop_compile_all(const hl_graph *g) {
  for (int i = 0; i < g->nnodes; i++) {
    int id = hl_graph_distinct_loop(g, i);
    if (id < 0) continue;
    pthread_mutex_lock(&registry);
    hl_loop *l = id >= 0 && id < nloops ? loops[id] : NULL;
    pthread_mutex_unlock(&registry);
    if (!l) return hl_error("loop: internal: an unknown loop (%d)", id);
    if (make_ready(l, 0) || hl_loop_compile_all(&l->body.g) || (l->kind == HL_LOOP_WHILE && hl_loop_compile_all(&l->cond.g)))
      return -1;
  }
  return 0;
}

int hl_loop_result(int id, int k, int nin, const hl_array *const *in, const int64_t *sym, const int64_t *mins, hl_array *out) {
  pthread_mutex_lock(&registry);
  hl_loop *l = id >= 0 && id < nloops ? loops[id] : NULL;
  pthread_mutex_unlock(&registry);
  if (!l || k < 0 || k >= l->nresults || nin != l->ninputs) return hl_error("loop: bad loop call (%d, %d)", id, k);
  if (make_ready(l, 1)) return -1;
  uint64_t run = hl_run_current()->id;
  if (!run) return hl_error("loop: internal: a loop's result asked for outside a pipeline run");
  kept_results *e = NULL;
  for (int j = 0; j < nkept && !e; j++)
    if (kept[j].id == id && kept[j].run == run) e = &kept[j];
  if (!e) {
    hl_array *results = calloc((size_t)l->nresults, sizeof *results);
    if (!results) return hl_error("out of memory running a loop");
    /* (the list grows only now: the loop's own pipeline runs may have freed it) */
    if (run_loop(l, in, sym, results) || (nkept == cap_kept && grow_kept())) {
      release_all(results, l->nresults);
      free(results);
      return -1;
    }
    e = &kept[nkept++];
    *e = (kept_results){.id = id, .n = l->nresults, .run = run, .results = results};
    hl_run_current()->kept = 1;   /* (after run_loop: its runs are over, this one is current again) */
  }
  /* the region asked for (consumers may need part of a result) */
  const hl_array *r = &e->results[k];
  if (out->ndim != r->ndim) return hl_error("loop: result %d has rank %d, the stage asked for %d", k, r->ndim, out->ndim);
  hl_array src = *r;
  for (int d = 0; d < r->ndim; d++) {
    if (mins[d] < 0 || mins[d] + out->shape[d] > r->shape[d]) return hl_error("loop: result %d asked out of its bounds", k);
    src.offset += mins[d] * r->strides[d];
    src.shape[d] = out->shape[d];
  }
  return hl_copy_into(out, &src);
}
