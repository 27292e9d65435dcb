#include "hl_extern_matmul.h"
#include "hl_extern_view.h"
extern "C" {
#include "hl_hooks.h"
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

extern "C" int hl_stage_cpu_matmul(halide_buffer_t *A, halide_buffer_t *B, int K, halide_buffer_t *C) {
  if (hl_matmul_bounds_query(A, B, K, C)) return 0;
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  hl_storage sa, sb, sc;
  hl_array a, b, c;
  /* A is [.., m, K] and B [.., K, n] over C's rows, columns and batch items. Inputs that are
   * pipeline parameters arrive whole rather than as the bounds query's region, so the views are
   * cut from each buffer's own mins (a slice of a product used to read the wrong rows). */
  int r = C->dimensions, amin[HL_MAX_DIMS], aext[HL_MAX_DIMS], bmin[HL_MAX_DIMS], bext[HL_MAX_DIMS];
  for (int d = 0; d < r; d++) {
    amin[d] = bmin[d] = C->dim[d].min;
    aext[d] = bext[d] = C->dim[d].extent;
  }
  amin[0] = bmin[1] = 0;
  aext[0] = bext[1] = K;
  hl_view_of_region(A, amin, aext, &sa, &a);
  hl_view_of_region(B, bmin, bext, &sb, &b);
  hl_view_of_buffer(C, &sc, &c);
  const hl_runtime_hooks *hooks = hl_backend_hooks();
  if (!hooks) return hl_stage_failed(-1, "matmul: internal: the runtime has not started");
  return hooks->matmul_into(&a, &b, &c) ? hl_stage_failed(-1, nullptr) : 0;
}

Internal::JITModule hl_cpu_matmul_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] { m.add_extern_for_export("hl_stage_cpu_matmul", ExternCFunction(&hl_stage_cpu_matmul)); });
  return m;
}
