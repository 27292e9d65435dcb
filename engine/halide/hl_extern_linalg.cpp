#include "hl_extern_linalg.h"
#include "hl_extern_view.h"
extern "C" {
#include "hl_linalg.h"
}
#include <mutex>

using namespace Halide;

namespace {

/* A's region for an output region: whole n x n matrices, the output's batch items */
void whole_matrices(halide_buffer_t *A, int n, const halide_buffer_t *out) {
  A->dim[0].min = A->dim[1].min = 0;
  A->dim[0].extent = A->dim[1].extent = n;
  for (int d = 2; d < out->dimensions; d++) A->dim[d].min = out->dim[d].min, A->dim[d].extent = out->dim[d].extent;
}

}  // namespace

/* Parameters arrive as real buffers even in a bounds query: only query buffers are filled. The
 * regions asked for make every buffer's batch items line up with the output's, and B's columns
 * with X's, so the views below need no offsets but the output's first row and column. */
extern "C" int halua_linalg_solve(halide_buffer_t *A, halide_buffer_t *B, int n, halide_buffer_t *X) {
  if (A->is_bounds_query() || B->is_bounds_query() || X->is_bounds_query()) {
    if (A->is_bounds_query()) whole_matrices(A, n, X);
    if (B->is_bounds_query()) {
      /* the columns X asks for: each column is a system of its own */
      B->dim[0].min = X->dim[0].min;
      B->dim[0].extent = X->dim[0].extent;
      B->dim[1].min = 0;
      B->dim[1].extent = n;
      for (int d = 2; d < X->dimensions; d++) B->dim[d].min = X->dim[d].min, B->dim[d].extent = X->dim[d].extent;
    }
    return 0;
  }
  hl_storage sa, sb, sx;
  hl_array a, b, x;
  hl_view_of_buffer(A, &sa, &a);
  hl_view_of_buffer(B, &sb, &b);
  hl_view_of_buffer(X, &sx, &x);
  return hl_linalg_solve_into(&a, &b, &x, X->dim[1].min, HL_LINALG_NAN) ? -1 : 0;
}

extern "C" int halua_linalg_cholesky(halide_buffer_t *A, int n, halide_buffer_t *L) {
  if (A->is_bounds_query() || L->is_bounds_query()) {
    if (A->is_bounds_query()) whole_matrices(A, n, L);
    return 0;
  }
  hl_storage sa, sl;
  hl_array a, l;
  hl_view_of_buffer(A, &sa, &a);
  hl_view_of_buffer(L, &sl, &l);
  return hl_linalg_cholesky_into(&a, &l, L->dim[1].min, L->dim[0].min, HL_LINALG_NAN) ? -1 : 0;
}

Internal::JITModule hl_linalg_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] {
    m.add_extern_for_export("halua_linalg_solve", ExternCFunction(&halua_linalg_solve));
    m.add_extern_for_export("halua_linalg_cholesky", ExternCFunction(&halua_linalg_cholesky));
  });
  return m;
}
