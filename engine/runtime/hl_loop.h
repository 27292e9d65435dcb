/* Compiled loops inside jit pipelines. A loop's body (and a while loop's condition) is a program
 * of its own, compiled once; in the enclosing pipeline each of the loop's results is a LOOP node,
 * an extern stage that calls hl_loop_result. The first result asked for in a pipeline run runs
 * the loop (no return to Lua per step) and keeps every result for the others until the run ends.
 * The host drives the steps; the body's program runs on the enclosing pipeline's device, and on
 * CUDA the carries and results stay in device memory.
 *
 * A loop node's inputs: the initial carries, then the arrays scanned over (scan), then the
 * values of the enclosing trace that the body and condition use (their abstract captures). */
#ifndef HL_LOOP_H
#define HL_LOOP_H
#include "hl_eval.h"


typedef struct hl_loop {
  hl_loop_kind kind;
  hl_program body;        /* args: [i (fori, int32 0-d)] carries [x rows (scan)]; results: carries [ys (scan)] */
  hl_program cond;        /* while: args: carries; result: a bool 0-d */
  int64_t lo, hi;         /* fori: steps lo..hi; scan: hi steps */
  int ncarry, nxs, nys, ninputs;
  hl_type *input_types;       /* the loop node's inputs (carries, xs, enclosing values) */
  int *body_src, *cond_src;   /* per capture of body/cond: the loop input it reads, or -1 (its own) */
  int nresults;
  hl_type *result_types;      /* carries, then ys stacked along a new first axis */
  int placed;                 /* the programs' own captures are on their device (at the first run) */
} hl_loop;

/* Takes ownership of l (a calloc'd loop with its programs); returns its id, or -1. */
int hl_loop_register(hl_loop *l);
void hl_loop_discard(hl_loop *l);   /* frees a loop that was never registered */
const hl_loop *hl_loop_get(int id);
/* The region of result k of loop `id` that starts at `mins` (per axis) and has out's shape, given
 * the loop's inputs, written into out (a view of the result's dtype): inputs and out are on the
 * loop's device. */
int hl_loop_result(int id, int k, int nin, const hl_array *const *in, const int64_t *mins, hl_array *out);

/* Pipeline runs: hl_kernel_run brackets each run so a loop runs once per run of its pipeline.
 * A loop's results are kept per thread for the run that asked for them, and freed when it ends. */
uint64_t hl_run_begin(void);
void hl_run_end(uint64_t previous);
#endif
