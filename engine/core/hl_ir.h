/* The IR: a graph of primitive nodes in trace order, with dtype and shape on every node.
 * A pipeline is a graph plus its outputs. Nodes refer to inputs by index; PARAM nodes are the
 * pipeline's arguments in order. */
#ifndef HL_IR_H
#define HL_IR_H
#include "hl_array.h"
#include <stdint.h>

typedef enum {
#define X(e, name, kind, in, out, arity, attrs, stage) HL_P_##e,
#include "hl_prims.def"
#undef X
  HL_NPRIMS
} hl_prim;

typedef enum { HL_K_SOURCE, HL_K_ELEMWISE, HL_K_REDUCE, HL_K_MATMUL, HL_K_VIEW, HL_K_CONCAT, HL_K_LOOP, HL_K_INDEXED, HL_K_LINALG,
               HL_K_SORT, HL_K_DIST, HL_K_FFT } hl_prim_kind;
/* a compiled loop's kind (its LOOP nodes run it: engine/runtime/hl_loop.h) */
typedef enum { HL_LOOP_FORI, HL_LOOP_WHILE, HL_LOOP_SCAN } hl_loop_kind;
/* the most inputs one loop takes: carries, scanned arrays and enclosing values together */
#define HL_MAX_LOOP_INPUTS 24
typedef enum { HL_IN_ANY, HL_IN_NUM, HL_IN_FLOAT, HL_IN_BOOL, HL_IN_INT, HL_IN_BITS } hl_in_rule;
typedef enum { HL_OUT_SAME, HL_OUT_TOBOOL, HL_OUT_ATTR, HL_OUT_INDEX, HL_OUT_SUMLIKE } hl_out_rule;

/* a node's attributes and where it runs in a pipeline: hl_prims.def's last two columns */
typedef enum { HL_A_NONE, HL_A_PARAM, HL_A_VALUE, HL_A_AXIS, HL_A_AXES, HL_A_PERM, HL_A_SLICE, HL_A_LOOP,
               HL_A_SCATTER, HL_A_DIST, HL_A_MODE, HL_A_LANE } hl_attr_layout;
typedef enum { HL_S_FUNC, HL_S_EXTERN } hl_stage_kind;
/* how scatter combines an update with what its target holds (attrs i[2]) */
typedef enum { HL_SCATTER_ADD, HL_SCATTER_SET, HL_SCATTER_MUL, HL_SCATTER_MIN, HL_SCATTER_MAX } hl_scatter_mode;
#define hl_is_scatter(prim) (hl_prims[prim].attrs == HL_A_SCATTER)

typedef struct {
  const char *name;
  hl_prim_kind kind;
  hl_in_rule in;
  hl_out_rule out;
  int arity;
  hl_attr_layout attrs;
  hl_stage_kind stage;
} hl_prim_info;

extern const hl_prim_info hl_prims[HL_NPRIMS];
int hl_prim_from_name(const char *name);   /* -1 when unknown */
/* how many of attrs.i a node of this primitive and rank uses (its layout) */
int hl_attr_count(int prim, int ndim);
const char *hl_scatter_mode_name(int mode);   /* "add", "set", ... for hl_scatter_mode */

/* Attributes: i and f by the primitive's layout (hl_prims.def's attributes column: the cache
 * key holds exactly those, hl_attr_count); the output's dtype and shape are the node's type (CAST's
 * target dtype, RESHAPE's and BROADCAST's shape, LOOP's result type). */
typedef struct {
  int64_t i[2 * HL_MAX_DIMS];
  double f;
  hl_dtype dtype;    /* CAST, IOTA, CONST, PARAM: the output dtype */
  int64_t shape[HL_MAX_DIMS];  /* RESHAPE, BROADCAST, IOTA: output shape; ndim in nshape */
  int nshape;
} hl_attrs;

typedef struct {
  hl_dtype dtype;
  int ndim;
  int64_t shape[HL_MAX_DIMS];
} hl_type;

typedef struct {
  int prim;
  hl_type type;
  int nin;
  int in0;            /* index of its first input in graph->edges */
  hl_attrs attrs;
} hl_node;

typedef struct hl_graph {
  hl_node *nodes;
  int nnodes, cap_nodes;
  int *edges;
  int nedges, cap_edges;
  int nparams;
  int *outputs;
  int noutputs;
  int dynamic;        /* eager kernels: PARAM extents come from buffers at run time */
  int device;         /* where the pipeline runs: 0 host, 1 CUDA */
  int schedule;       /* 0: halua's schedules (hl_schedule.cpp); 1: Halide's Mullapudi2016 autoscheduler */
  struct hl_symbolic *sym;   /* a polymorphic program's sizes (hl_symbolic.h; owned), or NULL */
} hl_graph;

/* whether g's extents are known when it is compiled (not an eager kernel's, nor a polymorphic program's) */
static inline int hl_graph_sized(const hl_graph *g) { return !g->dynamic && !g->sym; }

/* a node's input ids (n->nin of them); NULL for a node without inputs, whose graph may have no
 * edges array at all (an offset from a null pointer is undefined, even a zero one) */
static inline const int *hl_node_inputs(const hl_graph *g, const hl_node *n) { return n->nin ? g->edges + n->in0 : NULL; }

/* Shape and dtype inference for one primitive. Inputs must already follow the prim's input rule
 * (promotion, casts and broadcasts are the frontend's job). -1 + hl_error on bad input. */
int hl_infer(int prim, int nin, const hl_type *in, const hl_attrs *attrs, hl_type *out);
/* A shape given from outside (a source's, a reshape's or broadcast's target, a new array's) must
 * describe an array that can exist: a rank the IR holds, no negative extent, and a count of
 * elements (of its non-empty axes, which set the strides) within the bound an allocation has,
 * 2^63 / 16, so that no size or stride computed from it overflows. 0, or -1 + hl_error under op. */
int hl_shape_check(const char *op, int ndim, const int64_t *shape);

void hl_graph_init(hl_graph *g);
void hl_graph_free(hl_graph *g);
void hl_graph_reset(hl_graph *g);
/* Append a node (inference included); returns its index or -1. */
int hl_graph_add(hl_graph *g, int prim, int nin, const int *inputs, const hl_attrs *attrs);
int hl_graph_add_param(hl_graph *g, hl_dtype dtype, int ndim, const int64_t *shape);
int hl_graph_set_outputs(hl_graph *g, int n, const int *outputs);
/* A copy of g with only the nodes that reach the outputs (dead code removed), in order. */
int hl_graph_prune(const hl_graph *g, hl_graph *out);

/* Canonical serialisation (the cache key): the same program gives the same bytes. */
typedef struct { unsigned char *bytes; size_t len, cap; uint64_t hash; } hl_key;
void hl_graph_key(const hl_graph *g, hl_key *key);
/* The same with the nodes in an order of the graph's own (parameters by index, then depth first
 * from the outputs), so that one program traced in another order (a Lua loop over a table's keys)
 * has one key: what the disk cache keys on. Also holds whether g is dynamic. */
int hl_graph_canonical_key(const hl_graph *g, hl_key *key);
/* g with its nodes in that order (the same program traced in any order gives the same graph);
 * pos (NULL, or room for g's nodes) gets each node's place there. A polymorphic program's table
 * (g->sym) is not copied: hl_sym_remap does that with pos. */
int hl_graph_canonical(const hl_graph *g, hl_graph *out, int *pos);
void hl_key_free(hl_key *key);
/* A copy of g in which compiled loops are named by their place, not by this process's numbers:
 * each LOOP node's loop number (attrs.i[0]) becomes its slot, 0, 1, ... in the canonical order of
 * the loops' results, and (*ids)[slot] (malloc'd, *nids of them; NULL and 0 without loops) the
 * number it had. The table of sizes (g->sym) is not copied. 0, or -1 + hl_error. */
int hl_graph_number_loops(const hl_graph *g, hl_graph *out, int **ids, int *nids);
/* The loop node i of g runs where no earlier node of g runs it (one loop may serve several of a
 * graph's nodes, one per result): its id, else -1. Walking a graph's distinct loops is
 * `for (i ...) if ((id = hl_graph_distinct_loop(g, i)) >= 0)`. */
int hl_graph_distinct_loop(const hl_graph *g, int i);

/* Readable text, like a jaxpr. Caller frees. */
char *hl_graph_text(const hl_graph *g);
char *hl_type_text(const hl_type *t, char *buf, size_t n);   /* "float32[3,4]" */
#endif
