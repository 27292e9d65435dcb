#include "hl_extern_matmul.h"
#include "hl_extern_view.h"
extern "C" {
#include "hl_eval.h"
#include "hl_error.h"
}
#include <mutex>

using namespace Halide;

bool hl_matmul_bounds_query(halide_buffer_t *A, halide_buffer_t *B, int K, halide_buffer_t *C) {
  if (!A->is_bounds_query() && !B->is_bounds_query() && !C->is_bounds_query()) return false;
  int r = C->dimensions;
  if (A->is_bounds_query()) {
    A->dim[0].min = 0;
    A->dim[0].extent = K;
    A->dim[1].min = C->dim[1].min;
    A->dim[1].extent = C->dim[1].extent;
    for (int d = 2; d < r; d++) A->dim[d].min = C->dim[d].min, A->dim[d].extent = C->dim[d].extent;
  }
  if (B->is_bounds_query()) {
    B->dim[0].min = C->dim[0].min;
    B->dim[0].extent = C->dim[0].extent;
    B->dim[1].min = 0;
    B->dim[1].extent = K;
    for (int d = 2; d < r; d++) B->dim[d].min = C->dim[d].min, B->dim[d].extent = C->dim[d].extent;
  }
  return true;
}

extern "C" int halua_cpu_matmul(halide_buffer_t *A, halide_buffer_t *B, int K, halide_buffer_t *C) {
  if (hl_matmul_bounds_query(A, B, K, C)) return 0;
  hl_storage sa, sb, sc;
  hl_array a, b, c;
  hl_view_of_buffer(A, &sa, &a);
  hl_view_of_buffer(B, &sb, &b);
  hl_view_of_buffer(C, &sc, &c);
  /* the regions Halide passes match the bounds query: A is [.., m, K], B [.., K, n] */
  return hl_matmul_into(&a, &b, &c) ? -1 : 0;
}

Internal::JITModule hl_cpu_matmul_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] { m.add_extern_for_export("halua_cpu_matmul", ExternCFunction(&halua_cpu_matmul)); });
  return m;
}
