/* Linear algebra as Halide extern stages of CPU pipelines: hl_stage_linalg_solve(A, B, n, X) and
 * hl_stage_linalg_cholesky(A, n, L) call LAPACK (engine/host/hl_linalg.c) per matrix of the batch,
 * in Halide's dimension order (dim 0 innermost); n is the matrix order. A matrix with no answer
 * gives NaN in its result (a pipeline cannot raise part way). */
#ifndef HL_EXTERN_LINALG_H
#define HL_EXTERN_LINALG_H
#include <HalideRuntime.h>

extern "C" int hl_stage_linalg_solve(halide_buffer_t *A, halide_buffer_t *B, int n, halide_buffer_t *X);
extern "C" int hl_stage_linalg_cholesky(halide_buffer_t *A, int n, halide_buffer_t *L);
/* solve with one triangle of A; mode: hl_linalg.h's bits */
extern "C" int hl_stage_linalg_solve_triangular(halide_buffer_t *A, halide_buffer_t *B, int mode, int n, halide_buffer_t *X);
/* the packed factors (engine/core/hl_linalg_layout.h) of each m x n matrix of A; what: hl_decomp */
extern "C" int hl_stage_linalg_decomp(halide_buffer_t *A, int what, int mode, int m, int n, halide_buffer_t *P);
#endif
