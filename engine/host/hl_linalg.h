/* Dense linear algebra on the host: LAPACK (getrf/getrs through gesv, potrf) per matrix of a
 * batch. Eager ops call these directly; jit pipelines call them from an extern stage
 * (engine/backend/extern/hl_extern_linalg.cpp). Operands are strided host views (broadcast batch axes may
 * have stride 0); LAPACK gets column-major copies, so no layout is assumed. */
#ifndef HL_LINALG_H
#define HL_LINALG_H
#include "hl_array.h"
#include "hl_linalg_layout.h"

/* What a matrix that has no answer (singular for solve, not positive definite for cholesky)
 * does: an error naming it (eager: NumPy raises LinAlgError), or NaN in every element of that
 * matrix's result (inside a pipeline, which cannot stop part way; JAX gives NaN too). */
typedef enum { HL_LINALG_RAISE, HL_LINALG_NAN } hl_linalg_fail;

/* a [..., n, n], b [..., n, k], out [..., m, k] with equal batch dimensions: out receives rows
 * row0 .. row0+m-1 of each solution x of a x = b (LU with partial pivoting). float32 or float64,
 * all three of one dtype. -1 + hl_error on failure. */
int hl_linalg_solve_into(const hl_array *a, const hl_array *b, hl_array *out, int64_t row0, hl_linalg_fail fail);

/* As solve, with one triangle of a (LAPACK trtrs): mode bits 1 lower (else upper), 2 solve
 * with its transpose, 4 its diagonal taken as ones. A zero on the diagonal is singular. */
int hl_linalg_solve_triangular_into(const hl_array *a, const hl_array *b, int mode, hl_array *out, int64_t row0, hl_linalg_fail fail);

/* a [..., n, n], out [..., m, p]: out receives rows row0.., columns col0.. of the lower Cholesky
 * factor L of each matrix (a = L L^T; only a's lower triangle is read, as in NumPy). */
int hl_linalg_cholesky_into(const hl_array *a, hl_array *out, int64_t row0, int64_t col0, hl_linalg_fail fail);

/* a [..., m, n], out [..., p]: out receives elements col0 .. col0+p-1 of each matrix's packed
 * decomposition (hl_linalg_layout.h; `mode` as there). An SVD or eigenproblem that does not
 * converge (NaN or infinite values included, for svd) is an error or NaN by `fail`. */
int hl_linalg_decomp_into(hl_decomp what, int mode, const hl_array *a, hl_array *out, int64_t col0, hl_linalg_fail fail);

#endif
