/* The extern stage of hl.dist's collectives in pipelines: hl_stage_dist(X, prim, a, b, size,
 * dtype, e0..e7, out) runs the collective (engine/host/hl_dist.c) on the whole of X, whose
 * extents e0.. (Halide's dimension order) it asks for in the bounds query, and hands out the
 * region asked of it. Every rank runs the same pipeline, so every rank calls its collectives in
 * the same order. */
#ifndef HL_EXTERN_DIST_H
#define HL_EXTERN_DIST_H
#include <HalideRuntime.h>

extern "C" int hl_stage_dist(halide_buffer_t *X, int prim, int a, int b, int size, int dtype, int e0, int e1, int e2, int e3,
                             int e4, int e5, int e6, int e7, halide_buffer_t *out);
#endif
