/* Applying a primitive to arrays: recorded into the trace when an input is a tracer, otherwise
 * run now ("eager is jit of one op": a cached single-primitive kernel, or a view for shape-only
 * primitives). Outputs are new array values owned by the caller. */
#ifndef HL_EVAL_H
#define HL_EVAL_H
#include "hl_ir.h"
#include "hl_symbolic.h"

/* A trace is either a jit trace (tracers are abstract: a node and a type) or a tape, which
 * autodiff records outside jit: every op also runs now, and each node keeps its concrete value,
 * so recorded arrays have both data and a node, and Lua code can look at their values. */
typedef struct hl_trace {
  hl_graph g;
  hl_array *captures;   /* concrete arrays used by the traced code: extra pipeline inputs */
  int *capture_param;   /* node of each capture */
  int ncaptures, cap_captures;
  int closed;           /* finished: its tracers must not be used any more; a tape records no more */
  int tape;             /* a tape: values[node] holds each node's value */
  hl_array *values;
  int cap_values;
  /* the trace this one is nested in (a compiled loop's body inside hl.jit): its tracers used
   * here become captures that keep their graph (abstract captures), filled by the loop */
  struct hl_trace *parent;
} hl_trace;

void hl_trace_init(hl_trace *t);
void hl_trace_free(hl_trace *t);
/* Stop recording (a tape's arrays then act as plain arrays) and drop a tape's node values. */
void hl_trace_close(hl_trace *t);

/* The trace an op on `a` records into: a tracer's (even a closed one, to report its escape), or a
 * recorded array's while its tape is open. NULL for plain arrays. */
static inline hl_trace *hl_live_trace(const hl_array *a) {
  hl_trace *t = (hl_trace *)a->graph;
  if (!t || (a->storage && t->closed)) return NULL;
  return t;
}
/* a tracer without data (inside hl.jit) */
static inline int hl_is_abstract(const hl_array *a) { return a->graph && !a->storage; }
/* A leaked tracer: one kept past the end of its hl.jit trace (stored in a variable outside the
 * traced function). Every use of it is an error, "<op>: " HL_LEAKED_TRACER. */
static inline int hl_is_leaked(const hl_array *a) { return hl_is_abstract(a) && ((const hl_trace *)a->graph)->closed; }
#define HL_LEAKED_TRACER                                                                                  \
  "this value is a leaked tracer: it escaped the hl.jit function that traced it, whose trace has ended; " \
  "return it from the function and use the result instead"

/* Autodiff's variables: a new node standing for x, distinct from every other use of x (so nested
 * derivatives never confuse their variables): an identity of x's node, after capturing x when it
 * is plain. */
int hl_trace_variable(hl_trace *t, const hl_array *x, hl_array *out);
/* While set (per thread), an op whose operands belong only to traces that enclose `t` is recorded
 * in t, which captures them, rather than in the innermost of those traces: a differentiable
 * loop's body traced again for its backward loop then uses the very values the forward body
 * captured (lua/halua/control.lua). NULL: ops go to the innermost operand trace. */
void hl_trace_set_floor(hl_trace *t);
/* A source node (CONST, IOTA) recorded into t. */
int hl_trace_source(hl_trace *t, int prim, const hl_attrs *attrs, hl_array *out);
/* A node's value as an array of the trace: a tracer, or on a tape the value recorded there. */
int hl_trace_node_value(hl_trace *t, int node, hl_array *out);
/* A new tracer standing for an argument of the traced function. */
int hl_trace_arg(hl_trace *t, int device, hl_dtype dtype, int ndim, const int64_t *shape, hl_array *out);

/* Record prim into t (whose enclosing traces' tracers and plain arrays among the inputs are
 * captured): compiled loops, whose nodes the enclosing trace records even when every input is
 * concrete. */
int hl_trace_apply(hl_trace *t, int prim, int nin, const hl_array *const *in, const hl_attrs *attrs, hl_array *out);

/* out = prim(inputs...) with attrs; inputs follow the primitive's rules (see hl_frontend.h). */
int hl_apply(int prim, int nin, const hl_array *const *in, const hl_attrs *attrs, hl_array *out);
/* The number v as a 0-d array of dtype t beside `like` (may be NULL): a CONST node in like's
 * trace when like is traced, else a concrete array on like's device. */
int hl_scalar_like(double v, hl_dtype t, const hl_array *like, hl_array *out);
/* The same for an eager op on host arrays that no trace records: the 0-d array's block is the
 * thread's for operand position `slot` (below 4), reused while nothing else holds it. */
int hl_eager_scalar(double v, hl_dtype t, int slot, hl_array *out);
/* An eager elementwise op through the memo's lane (hl_eager_memo.h). The operands are the
 * caller's to have broadcast to one shape, and traced by nothing (hl_op_elemwise's). 1: done,
 * out is the result; 0: not such an op, or operands not each on the host and contiguous or one
 * value broadcast (nothing done); -1: failed. */
int hl_eager_elemwise_lane(int prim, int nin, const hl_array *const *in, hl_array *out);
/* a broadcast of the concrete array a to a shape it broadcasts to (checked by the caller): a
 * view of a's storage, stride 0 along the new and stretched axes */
void hl_broadcast_view(const hl_array *a, int ndim, const int64_t *shape, hl_array *out);

/* A compiled trace: the pruned graph, its kernel (one reference, released by hl_program_free),
 * and which outputs share a node. */
typedef struct hl_program {
  hl_graph g;
  struct hl_kernel *kernel;
  hl_array *captures;
  int ncaptures;
  int nargs;
  /* its kernel names the compiled loops of g by their slots (hl_graph_number_loops), so that a
   * pipeline with loops is the same in every process (the disk cache) and for every trace: the
   * loop of slot k is loop_ids[k] */
  int *loop_ids;
  int nloops;
} hl_program;

/* The loop that the program this thread is running names by `slot` (the loop stages' hook,
 * engine/backend/hl_hooks.h), or -1. */
int hl_program_loop_id(int slot);

/* Prune t's graph to `outputs` (tracers of t), compile it (through the cache) into p. */
int hl_program_build(hl_trace *t, int nout, const hl_array *const *outputs, const char *name, hl_program *p);
/* The same in two steps: the program without its kernel (p->kernel NULL: a compiled loop's body
 * is compiled when the loop first runs), and its compile (nothing when it has its kernel). */
int hl_program_prepare(hl_trace *t, int nout, const hl_array *const *outputs, hl_program *p);
/* p's captures: references to captures[0..n) (p has none yet). 0, or -1 + hl_error. */
int hl_program_set_captures(hl_program *p, int n, const hl_array *captures);
int hl_program_compile(hl_program *p, const char *name);
/* The arrays of a polymorphic program's symbols (hl.jit's dynamic_axes: engine/runtime/hl_poly.h)
 * from its inputs: the `ngiven` first ones given (its arguments, or every input), the rest its own
 * captures. 0; 1 when p does not serve these shapes (why); -1 + hl_error. */
int hl_program_bind_symbols(const hl_program *p, int ngiven, const hl_array *const *given, int64_t *sym, char *why,
                            size_t nwhy);
/* out = t's graph pruned to `outputs` (tracers of t). */
int hl_trace_prune(hl_trace *t, int nout, const hl_array *const *outputs, hl_graph *out);
/* Whether two captured constants are the same: one array, or equal contents (a constant made
 * inside the function each time). */
int hl_same_capture(const hl_array *a, const hl_array *b);
/* The most arrays a program takes in (arguments and captures) and gives out, each: a model's
 * parameters and its optimiser's state as separate leaves (hundreds for a deep network). */
enum { HL_MAX_PROGRAM_ARRAYS = 4096 };
/* Run with the argument arrays; fills nout new arrays. */
int hl_program_run(hl_program *p, int nargs, const hl_array *const *args, hl_array *outs);
/* Run with every input given (arguments, then one array per capture): a loop's body, whose
 * abstract captures are values of the enclosing pipeline. */
int hl_program_run_inputs(hl_program *p, int nin, const hl_array *const *in, hl_array *outs);
void hl_program_free(hl_program *p);
/* Move the program's concrete captures to its device (once; hl_program_run does it itself). */
int hl_program_place_captures(hl_program *p);

/* Copy src's elements into the allocated view dst: one device, dtype and shape, any strides. */
int hl_copy_into(hl_array *dst, const hl_array *src);

/* out = a on `device` (a copy when it is elsewhere; a shared reference when it is there). */
int hl_to_device(const hl_array *a, int device, hl_array *out);

/* out = a @ b into out's (allocated, possibly strided) view through the cached matmul kernel:
 * the CPU extern stage of jit pipelines. */
int hl_matmul_into(const hl_array *a, const hl_array *b, hl_array *out);

/* Make a contiguous copy (a kernel run) unless `a` already is; out shares or owns. */
int hl_contiguous(const hl_array *a, hl_array *out);

/* A host, contiguous view of `a` for writing it to a file: a copy from the GPU, or of a strided
 * view, when it is needed; a shared reference otherwise. Traced values are an error under `op`. */
int hl_host_contiguous(const char *op, const hl_array *a, hl_array *out);
#endif
