#include "hl_extern_linalg.h"
#include "hl_extern_view.h"
extern "C" {
#include "hl_linalg.h"
}

namespace {

/* A's region for an output region: whole n x n matrices, the output's batch items */
void whole_matrices(halide_buffer_t *A, int n, const halide_buffer_t *out) {
  A->dim[0].min = A->dim[1].min = 0;
  A->dim[0].extent = A->dim[1].extent = n;
  for (int d = 2; d < out->dimensions; d++) A->dim[d].min = out->dim[d].min, A->dim[d].extent = out->dim[d].extent;
}

/* A's region for output `out`: whole matrices, the output's batch items */
void matrices_view(const halide_buffer_t *A, int n, const halide_buffer_t *out, hl_storage *st, hl_array *a) {
  int min[HL_MAX_DIMS] = {0, 0}, ext[HL_MAX_DIMS] = {n, n};
  for (int d = 2; d < out->dimensions; d++) min[d] = out->dim[d].min, ext[d] = out->dim[d].extent;
  hl_view_of_region(A, min, ext, st, a);
}

}  // namespace

/* Parameters arrive as real buffers even in a bounds query: only query buffers are filled.
 * The views below line every operand's batch items up with the output's, and B's columns with
 * X's (each column is a system of its own); the output's first row and column go to the core. */
namespace {

/* solve and solve_triangular (mode >= 0) */
int solve_stage(halide_buffer_t *A, halide_buffer_t *B, int mode, int n, halide_buffer_t *X) {
  if (A->is_bounds_query() || B->is_bounds_query() || X->is_bounds_query()) {
    if (A->is_bounds_query()) whole_matrices(A, n, X);
    if (B->is_bounds_query()) {
      whole_matrices(B, n, X);
      B->dim[0].min = X->dim[0].min;
      B->dim[0].extent = X->dim[0].extent;
    }
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  if (hl_input_on_host(A) || hl_input_on_host(B))
    return hl_stage_failed(-2, mode < 0 ? "linalg.solve: copying an operand from cuda failed"
                                        : "linalg.solve_triangular: copying an operand from cuda failed");
  hl_storage sa, sb, sx;
  hl_array a, b, x;
  matrices_view(A, n, X, &sa, &a);
  int min[HL_MAX_DIMS], ext[HL_MAX_DIMS];
  for (int d = 0; d < X->dimensions; d++) min[d] = X->dim[d].min, ext[d] = X->dim[d].extent;
  min[1] = 0;
  ext[1] = n;
  hl_view_of_region(B, min, ext, &sb, &b);
  hl_view_of_buffer(X, &sx, &x);
  int rc = mode < 0 ? hl_linalg_solve_into(&a, &b, &x, X->dim[1].min, HL_LINALG_NAN)
                    : hl_linalg_solve_triangular_into(&a, &b, mode, &x, X->dim[1].min, HL_LINALG_NAN);
  return rc ? hl_stage_failed(-1, nullptr) : 0;
}

}  // namespace

extern "C" int hl_stage_linalg_solve(halide_buffer_t *A, halide_buffer_t *B, int n, halide_buffer_t *X) {
  return solve_stage(A, B, -1, n, X);
}

extern "C" int hl_stage_linalg_solve_triangular(halide_buffer_t *A, halide_buffer_t *B, int mode, int n, halide_buffer_t *X) {
  return solve_stage(A, B, mode, n, X);
}

extern "C" int hl_stage_linalg_cholesky(halide_buffer_t *A, int n, halide_buffer_t *L) {
  if (A->is_bounds_query() || L->is_bounds_query()) {
    if (A->is_bounds_query()) whole_matrices(A, n, L);
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  if (hl_input_on_host(A)) return hl_stage_failed(-2, "linalg.cholesky: copying the operand from cuda failed");
  hl_storage sa, sl;
  hl_array a, l;
  matrices_view(A, n, L, &sa, &a);
  hl_view_of_buffer(L, &sl, &l);
  return hl_linalg_cholesky_into(&a, &l, L->dim[1].min, L->dim[0].min, HL_LINALG_NAN) ? hl_stage_failed(-1, nullptr) : 0;
}

/* P's dim 0 is the packed axis, its dims 1.. A's batch (A's dims 2..): the whole matrices of the
 * batch items asked for; the core packs each and keeps P's range of the packed axis */
extern "C" int hl_stage_linalg_decomp(halide_buffer_t *A, int what, int mode, int m, int n, halide_buffer_t *P) {
  if (A->is_bounds_query() || P->is_bounds_query()) {
    if (A->is_bounds_query()) {
      A->dim[0].min = A->dim[1].min = 0;
      A->dim[0].extent = n;
      A->dim[1].extent = m;
      for (int d = 1; d < P->dimensions; d++) A->dim[d + 1].min = P->dim[d].min, A->dim[d + 1].extent = P->dim[d].extent;
    }
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  if (hl_input_on_host(A)) return hl_stage_failed(-2, "linalg: copying the operand from cuda failed");
  hl_storage sa, sp;
  hl_array a, p;
  int min[HL_MAX_DIMS] = {0, 0}, ext[HL_MAX_DIMS] = {n, m};
  for (int d = 1; d < P->dimensions; d++) min[d + 1] = P->dim[d].min, ext[d + 1] = P->dim[d].extent;
  hl_view_of_region(A, min, ext, &sa, &a);
  hl_view_of_buffer(P, &sp, &p);
  return hl_linalg_decomp_into((hl_decomp)what, mode, &a, &p, P->dim[0].min, HL_LINALG_NAN) ? hl_stage_failed(-1, nullptr) : 0;
}
