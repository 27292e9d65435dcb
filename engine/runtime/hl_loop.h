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
#include <pthread.h>


typedef struct hl_loop {
  hl_loop_kind kind;
  char name[32];          /* the loop's function (fori_loop, ...), in its compile notices */
  hl_program body;        /* args: [i (fori, int32 0-d)] carries [x rows (scan)]; results: carries [ys (scan)] */
  hl_program cond;        /* while: args: carries; result: a bool 0-d */
  int64_t lo, hi;         /* fori: steps lo..hi; scan: hi steps */
  int ncarry, nxs, nys, ninputs;
  hl_type *input_types;       /* the loop node's inputs (carries, xs, enclosing values) */
  int *body_src, *cond_src;   /* per capture of body/cond: the loop input it reads, or -1 (its own) */
  int nresults;
  hl_type *result_types;      /* carries, then ys stacked along a new first axis */
  /* A loop of a polymorphic program (engine/runtime/hl_poly.c): the extents of its inputs and
   * results as forms of that program's nsym symbols (per array, HL_MAX_DIMS slots; the types'
   * shapes are then those of one made-up size), and per symbol of its (polymorphic) body and
   * condition the program's symbol it is. nsym 0: the types are the sizes. */
  int nsym;
  hl_sym_slot *input_forms, *result_forms;
  hl_sym_slot lo_form, hi_form;   /* lo and hi (+ HL_LOOP_BOUND_SHIFT): a scan over a dynamic axis */
  int body_sym[HL_MAX_SYMS], cond_sym[HL_MAX_SYMS];
  /* the programs are compiled with the program that runs the loop (hl_loop_compile_all; a loop
   * traced only to check a polymorphic program against a call's sizes never is), and their own
   * captures placed on their device at the first run */
  pthread_mutex_t ready_lock;
  int compiled, placed;
} hl_loop;

/* A new loop record (zeroed), to fill and register or discard; NULL + hl_error. */
hl_loop *hl_loop_new(void);
/* Takes ownership of l (from hl_loop_new, with its programs); returns its id, or -1. */
int hl_loop_register(hl_loop *l);
void hl_loop_discard(hl_loop *l);   /* frees a loop that was never registered */
const hl_loop *hl_loop_get(int id);
/* The region of result k of loop `id` that starts at `mins` (per axis) and has out's shape, given
 * the loop's inputs and the values of its program's symbols (NULL in a program of fixed sizes),
 * written into out (a view of the result's dtype): inputs and out are on the loop's device. */
int hl_loop_result(int id, int k, int nin, const hl_array *const *in, const int64_t *sym, const int64_t *mins, hl_array *out);
/* Compile the bodies and conditions of the loops that g runs (nested ones too) that are not yet
 * compiled (a program's loops compile with it: engine/lua's program builds call this). */
int hl_loop_compile_all(const hl_graph *g);
/* a polymorphic loop's bounds are kept as forms of lo and hi plus this (forms give sizes, which are
 * not negative; a fori loop's bounds are any int32) */
#define HL_LOOP_BOUND_SHIFT ((int64_t)1 << 32)
/* The loop's lo and hi at these symbol values (NULL: fixed sizes): 0, or -1 when the sizes give
 * them no whole value. */
int hl_loop_bounds(const hl_loop *l, const int64_t *sym, int64_t *lo, int64_t *hi);
/* The shape of loop input (results: 0) or result (1) k at these symbol values (NULL: fixed sizes):
 * 0, or -1 when the sizes give it no whole extent. */
int hl_loop_shape(const hl_loop *l, int result, int k, const int64_t *sym, int64_t *shape);

/* A loop runs once per run of its pipeline (hl_interrupt.h's record of the run): its results are
 * kept per thread for the run that asked for them, and freed when it ends (hl_kernel_run calls
 * this, through the runtime's hooks, for a run whose record says results were kept). */
void hl_loop_release_kept(uint64_t run);
#endif
