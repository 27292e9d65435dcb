/* Collectives over the ranks of a job (hl.dist): the engine's side. The transport that moves the
 * bytes is a table of functions another module fills (engine/dist/hl_mpi.c, Open MPI, loaded by
 * lua/halua/dist.lua only when it is used), so the engine itself links no MPI library. Eager ops
 * (the runtime) and extern stages of pipelines (the backend) both call hl_dist_into. */
#ifndef HL_DIST_H
#define HL_DIST_H
#include "hl_array.h"

typedef enum { HL_DIST_SUM, HL_DIST_MAX, HL_DIST_MIN } hl_dist_reduction;

/* Ranks are 0-based here (hl.dist shows them 1-based). Every function is collective (all ranks
 * call it in the same order with matching sizes) except sendrecv, and returns 0, or a positive
 * code that error_text describes (the transport is a module of its own, outside the engine's
 * error state). Reductions see bool/uint8/int8/int32/int64/float32/float64 only: the engine
 * reduces float16 and bfloat16 in float32. */
typedef struct hl_dist_transport {
  int rank, size;
  int (*allreduce)(const void *send, void *recv, int64_t count, hl_dtype dtype, hl_dist_reduction op);
  /* each rank's `bytes`, concatenated in rank order into recv (size * bytes) */
  int (*allgather)(const void *send, void *recv, int64_t bytes);
  /* send holds size blocks of count elements; rank r receives the reduction of every rank's block r */
  int (*reduce_scatter)(const void *send, void *recv, int64_t count, hl_dtype dtype, hl_dist_reduction op);
  /* block r of send (bytes each) goes to rank r; recv's block r comes from rank r */
  int (*alltoall)(const void *send, void *recv, int64_t bytes);
  int (*bcast)(void *buf, int64_t bytes, int root);
  /* sends to rank dest and receives from rank src at once; -1 for either: none */
  int (*sendrecv)(const void *send, int dest, void *recv, int src, int64_t bytes);
  const char *(*error_text)(int code);
} hl_dist_transport;

/* The transport collectives use from now on (NULL: none). It must outlive its use. */
void hl_dist_set_transport(const hl_dist_transport *t);
const hl_dist_transport *hl_dist_get_transport(void);

/* The collective `prim` (HL_P_PSUM ... HL_P_ALL_TO_ALL) of host array x into out, which the
 * caller has allocated with the type hl_infer gives (contiguous). attrs: the node's i[0..2]
 * (hl_prims.def). First every rank's operand is checked against the others': a different
 * collective, dtype or shape on another rank is an error on every rank, not corrupt data. */
int hl_dist_into(int prim, const hl_array *x, const int64_t *attrs, hl_array *out);
#endif
