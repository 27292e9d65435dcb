/* The backend's view of the runtime above it: a table of hooks that the runtime fills at start-up
 * (engine/runtime/hl_runtime.c), so that the backend and its extern stages never call up by name. */
#ifndef HL_HOOKS_H
#define HL_HOOKS_H
#ifdef __cplusplus
extern "C" {
#endif
#include "hl_ir.h"
#include "hl_sym_table.h"

/* A compiled loop as the backend sees it (its extern stage, hl.export): the runtime's record
 * (engine/runtime/hl_loop.h) in core types. */
typedef struct hl_loop_info {
  hl_loop_kind kind;
  int device;                                /* where its body runs */
  int64_t lo, hi;                            /* fori: steps lo..hi; scan: hi steps */
  int ncarry, nxs, nys, ninputs, nresults;
  const hl_type *input_types, *result_types;
  const hl_graph *body, *cond;               /* cond: while loops only, else NULL */
  int body_ncaptures, cond_ncaptures;
  const hl_array *body_captures, *cond_captures;
  const int *body_src, *cond_src;            /* per capture: the loop input it reads, or -1 (its own) */
  /* a loop of a polymorphic program: the extents of its inputs and results as forms of the
   * program's nsym symbols (HL_MAX_DIMS slots per array); nsym 0: the types' shapes */
  int nsym;
  const hl_sym_slot *input_forms, *result_forms;
} hl_loop_info;

/* What the backend asks of the runtime above it, which fills this table at start-up
 * (hl_runtime_start): the backend never calls up by name. */
typedef struct hl_runtime_hooks {
  /* frees what compiled loops kept for the pipeline run `run` (hl_interrupt.h's record says
   * whether they kept any), once the run has ended (hl_kernel_run) */
  void (*release_kept)(uint64_t run);
  /* compiled loops: the description, and the region of result k that starts at mins (sym: the
   * values of a polymorphic program's symbols, NULL in a program of fixed sizes) */
  int (*loop_info)(int id, hl_loop_info *out);
  /* the loop a running program names by its slot (compiled code names its loops by slots, so
   * that it is the same in every process: engine/runtime/hl_eval.h), or -1 */
  int (*loop_id)(int slot);
  int (*loop_result)(int id, int k, int nin, const hl_array *const *in, const int64_t *sym, const int64_t *mins,
                     hl_array *out);
  /* out = a @ b through the runtime's cached matmul kernel (the CPU matmul stage) */
  int (*matmul_into)(const hl_array *a, const hl_array *b, hl_array *out);
} hl_runtime_hooks;

void hl_backend_set_hooks(const hl_runtime_hooks *hooks);
/* the table (every entry set once the runtime has started; NULL before) */
const hl_runtime_hooks *hl_backend_hooks(void);

#ifdef __cplusplus
}
#endif
#endif
