/* The loop driver of the libraries hl.export writes (linked in from libhalua_export.a only by a
 * library that has compiled loops): hl_stage_loop_N stages as the engine's (hl_loop_extern.cpp,
 * engine/runtime/hl_loop.c), over the library's table of loops (hl_export_loop.h) and its compiled
 * bodies. As in the engine, the first result of a loop asked for in a pipeline run runs the whole
 * loop, and the others are kept for that run; runs nest (a body may run loops of its own). */
#include "hl_export_loop.h"
#include "hl_extern_view.h"
#include "hl_loop_stages.h"
#include <stdint.h>
#include <stdlib.h>

extern "C" {
extern const hl_export_loop hl_export_loops[];
extern const int hl_export_nloops;
int hl_export_call(int (*pipeline)(void **), int n, const int32_t *desc, void *const *data);
}

namespace {

enum { MAXA = 64 };

/* ---- pipeline runs and the results kept for them ---- */

struct Kept {
  int id, n;
  uint64_t run;
  void **results;   /* contiguous host arrays, one per loop result */
};
thread_local uint64_t current_run;
thread_local Kept *kept;
thread_local int nkept, cap_kept;
uint64_t next_run = 1;

uint64_t run_begin() {
  uint64_t previous = current_run;
  current_run = __atomic_fetch_add(&next_run, 1, __ATOMIC_RELAXED);
  return previous;
}

void run_end(uint64_t previous) {
  int w = 0;
  for (int k = 0; k < nkept; k++) {
    if (kept[k].run == current_run) {
      for (int j = 0; j < kept[k].n; j++) free(kept[k].results[j]);
      free(kept[k].results);
    } else {
      kept[w++] = kept[k];
    }
  }
  nkept = w;
  if (!nkept) {
    free(kept);
    kept = nullptr;
    cap_kept = 0;
  }
  current_run = previous;
}

/* ---- arrays ---- */

/* array j of a descriptor list: where it starts */
const int *nth_desc(const int *desc, int j) {
  for (; j > 0; j--) desc += 3 + desc[2];
  return desc;
}

size_t elem_bytes(const int *d) { return (size_t)((d[1] + 7) / 8); }

size_t elements(const int *d) {
  size_t n = 1;
  for (int a = 0; a < d[2]; a++) n *= (size_t)d[3 + a];
  return n;
}

/* a contiguous buffer over host memory for the described array */
void make_buffer(const int *d, void *host, halide_buffer_t *b, halide_dimension_t *dims) {
  *b = halide_buffer_t();
  b->host = (uint8_t *)host;
  b->type = halide_type_t((halide_type_code_t)d[0], d[1]);
  b->dimensions = d[2];
  b->dim = dims;
  int32_t stride = 1;
  for (int a = 0; a < d[2]; a++) {
    int32_t extent = d[3 + d[2] - 1 - a];
    dims[a] = halide_dimension_t(0, extent, stride);
    stride *= extent;
  }
}

/* Copies the region of src (any strides) that starts at src_min[d] with dst's extents into dst
 * (a buffer with its own strides), one innermost row at a time. */
void copy_region(const halide_buffer_t *src, const int *src_min, const halide_buffer_t *dst) {
  int r = dst->dimensions;
  size_t es = (size_t)dst->type.bytes();
  int64_t count[HL_MAX_DIMS] = {0};
  for (int d = 0; d < r; d++)
    if (dst->dim[d].extent <= 0) return;
  for (;;) {
    int64_t so = 0, doff = 0;
    for (int d = 1; d < r; d++) {
      so += (src_min[d] - src->dim[d].min + count[d]) * (int64_t)src->dim[d].stride;
      doff += count[d] * (int64_t)dst->dim[d].stride;
    }
    int64_t s0 = r ? (int64_t)(src_min[0] - src->dim[0].min) : 0;
    int32_t n = r ? dst->dim[0].extent : 1;
    int32_t ss = r ? src->dim[0].stride : 1, ds = r ? dst->dim[0].stride : 1;
    for (int32_t x = 0; x < n; x++)
      memcpy(dst->host + (doff + (int64_t)x * ds) * es, src->host + (so + (s0 + x) * ss) * es, es);
    int d = 1;
    for (; d < r; d++) {
      if (++count[d] < dst->dim[d].extent) break;
      count[d] = 0;
    }
    if (d >= r) return;
  }
}

/* an owned contiguous copy of a whole input buffer */
void *owned_copy(const halide_buffer_t *in, const int *d) {
  void *p = malloc(elements(d) * elem_bytes(d) + 1);
  if (!p) return nullptr;
  halide_buffer_t b;
  halide_dimension_t dims[HL_MAX_DIMS];
  make_buffer(d, p, &b, dims);
  int mins[HL_MAX_DIMS] = {0};   /* (the bounds query asked for the whole input) */
  copy_region(in, mins, &b);
  return p;
}

/* row s of buffer b (dropping numpy's first axis, Halide's last dimension) */
halide_buffer_t row(const halide_buffer_t *b, int64_t s) {
  halide_buffer_t r = *b;
  int last = b->dimensions - 1;
  r.host = b->host + (s - b->dim[last].min) * (int64_t)b->dim[last].stride * b->type.bytes();
  r.dimensions = last;
  return r;
}

/* A body's or condition's argument list: args, then its captures (loop inputs or constants). */
struct Call {
  void *argv[MAXA + 8];
  halide_buffer_t bufs[MAXA];
  halide_dimension_t dims[MAXA][HL_MAX_DIMS];
  int n = 0;
  bool add(halide_buffer_t *b) {
    if (n >= MAXA) return false;
    argv[n++] = b;
    return true;
  }
  halide_buffer_t *fresh(const int *d, void *host) {
    if (n >= MAXA) return nullptr;
    make_buffer(d, host, &bufs[n], dims[n]);
    return &bufs[n];
  }
  bool add_fresh(const int *d, void *host) {
    halide_buffer_t *b = fresh(d, host);
    return b && add(b);
  }
  bool add_captures(int ncaps, const int *src, const int *caps, const unsigned char *const *data, halide_buffer_t **in) {
    for (int c = 0; c < ncaps; c++) {
      if (src[c] >= 0 ? !add(in[src[c]]) : !add_fresh(nth_desc(caps, c), (void *)data[c])) return false;
    }
    return true;
  }
  int run(int (*fn)(void **)) {
    uint64_t outer = run_begin();   /* the body's own loops keep their results for this run */
    int rc = fn(argv);
    run_end(outer);
    return rc;
  }
};

/* Runs loop l on its inputs; results[0 .. nresults) get owned contiguous arrays. */
int run_loop(const hl_export_loop *l, halide_buffer_t **in, void **results) {
  int nc = l->ncarry;
  void *carry[MAXA] = {nullptr};
  int rc = -1;
  int ncaps = l->body_ncaps > l->cond_ncaps ? l->body_ncaps : l->cond_ncaps;
  if (1 + 2 * nc + l->nxs + l->nys + ncaps > MAXA) return hl_stage_failed(-1, "loop: too many arrays in an exported loop");
  for (int j = 0; j < nc; j++)
    if (!(carry[j] = owned_copy(in[j], nth_desc(l->inputs, j)))) goto fail;
  for (int j = 0; j < l->nys; j++) {
    const int *d = nth_desc(l->results, nc + j);
    if (!(results[nc + j] = malloc(elements(d) * elem_bytes(d) + 1))) goto fail;
  }
  {
    const int index_desc[] = {halide_type_int, 32, 0};
    const int bool_desc[] = {halide_type_uint, 8, 0};
    int64_t steps = l->kind == HL_EXPORT_FORI ? l->hi - l->lo + 1 : l->hi;
    for (int64_t s = 0; l->kind == HL_EXPORT_WHILE || s < steps; s++) {
      if (l->kind == HL_EXPORT_WHILE) {
        Call c;
        uint8_t go = 0;
        for (int j = 0; j < nc; j++)
          if (!c.add_fresh(nth_desc(l->inputs, j), carry[j])) goto fail;
        if (!c.add_captures(l->cond_ncaps, l->cond_src, l->cond_caps, l->cond_data, in) || !c.add_fresh(bool_desc, &go)) goto fail;
        if (c.run(l->cond)) goto fail;
        if (!go) break;
      }
      Call c;
      int32_t index = (int32_t)(l->lo + s);
      if (l->kind == HL_EXPORT_FORI && !c.add_fresh(index_desc, &index)) goto fail;
      for (int j = 0; j < nc; j++)
        if (!c.add_fresh(nth_desc(l->inputs, j), carry[j])) goto fail;
      halide_buffer_t xrows[MAXA];
      for (int j = 0; j < l->nxs; j++) {
        xrows[j] = row(in[nc + j], s);
        if (!c.add(&xrows[j])) goto fail;
      }
      if (!c.add_captures(l->body_ncaps, l->body_src, l->body_caps, l->body_data, in)) goto fail;
      void *next[MAXA] = {nullptr};
      bool ok = true;
      for (int j = 0; j < nc && ok; j++) {
        const int *d = nth_desc(l->inputs, j);
        ok = (next[j] = malloc(elements(d) * elem_bytes(d) + 1)) && c.add_fresh(d, next[j]);
      }
      halide_buffer_t yrows[MAXA], ys[MAXA];
      halide_dimension_t ydims[MAXA][HL_MAX_DIMS];
      for (int j = 0; j < l->nys && ok; j++) {
        /* step s's output goes to row s of the stacked result */
        make_buffer(nth_desc(l->results, nc + j), results[nc + j], &ys[j], ydims[j]);
        yrows[j] = row(&ys[j], s);
        ok = c.add(&yrows[j]);
      }
      if (!ok || c.run(l->body)) {
        for (int j = 0; j < nc; j++) free(next[j]);
        goto fail;
      }
      for (int j = 0; j < nc; j++) {
        free(carry[j]);
        carry[j] = next[j];
      }
    }
  }
  for (int j = 0; j < nc; j++) results[j] = carry[j];
  return 0;
fail:
  for (int j = 0; j < nc; j++) free(carry[j]);
  for (int j = 0; j < l->nys; j++) {
    free(results[nc + j]);
    results[nc + j] = nullptr;
  }
  return rc;
}

int loop_stage(int id, int k, int n, halide_buffer_t **in, halide_buffer_t *out) {
  const hl_export_loop *l = nullptr;
  for (int j = 0; j < hl_export_nloops && !l; j++)
    if (hl_export_loops[j].id == id) l = &hl_export_loops[j];
  if (!l || n != l->ninputs || k < 0 || k >= l->nresults) return hl_stage_failed(-1, "loop: internal: a loop stage with an unknown loop or inputs");
  bool query = out->is_bounds_query();
  for (int j = 0; j < n; j++) query = query || in[j]->is_bounds_query();
  if (query) {
    /* every input whole: the loop reads all of each */
    for (int j = 0; j < n; j++) {
      if (!in[j]->is_bounds_query()) continue;
      const int *d = nth_desc(l->inputs, j);
      for (int a = 0; a < in[j]->dimensions; a++) {
        in[j]->dim[a].min = 0;
        in[j]->dim[a].extent = d[3 + in[j]->dimensions - 1 - a];
      }
    }
    return 0;
  }
  Kept *e = nullptr;
  for (int j = 0; j < nkept && !e; j++)
    if (kept[j].id == id && kept[j].run == current_run) e = &kept[j];
  if (!e) {
    void **results = (void **)calloc((size_t)l->nresults, sizeof(void *));
    if (!results) return hl_stage_failed(-1, "loop: out of memory");
    if (run_loop(l, in, results)) {
      free(results);
      return -1;
    }
    if (nkept == cap_kept) {
      int c = cap_kept ? 2 * cap_kept : 8;
      Kept *nk = (Kept *)realloc(kept, sizeof(Kept) * (size_t)c);
      if (!nk) {
        for (int j = 0; j < l->nresults; j++) free(results[j]);
        free(results);
        return hl_stage_failed(-1, "loop: out of memory");
      }
      kept = nk;
      cap_kept = c;
    }
    e = &kept[nkept++];
    *e = Kept{id, l->nresults, current_run, results};
  }
  /* the region asked for (consumers may need part of a result) */
  halide_buffer_t whole;
  halide_dimension_t dims[HL_MAX_DIMS];
  make_buffer(nth_desc(l->results, k), e->results[k], &whole, dims);
  int mins[HL_MAX_DIMS];
  for (int a = 0; a < out->dimensions; a++) {
    mins[a] = out->dim[a].min;
    if (mins[a] < 0 || mins[a] + out->dim[a].extent > dims[a].extent) return hl_stage_failed(-1, "loop: a result asked out of its bounds");
  }
  copy_region(&whole, mins, out);
  return 0;
}

}  // namespace

/* The entry point of a library with loops: its pipeline's call is one run. */
extern "C" int hl_export_call_loops(int (*pipeline)(void **), int n, const int32_t *desc, void *const *data) {
  uint64_t outer = run_begin();
  int rc = hl_export_call(pipeline, n, desc, data);
  run_end(outer);
  return rc;
}

/* hl_stage_loop_N(id, k, N input buffers, the output buffer), N = 1 .. 24 (HL_MAX_LOOP_INPUTS) */
#define B halide_buffer_t *
#define STAGE(N, PARAMS, ...)                                        \
  extern "C" int hl_stage_loop_##N(int id, int k, PARAMS, B out) {      \
    B in[] = {__VA_ARGS__};                                          \
    return loop_stage(id, k, N, in, out);                            \
  }
#define P(...) __VA_ARGS__
HL_LOOP_STAGES(STAGE)
