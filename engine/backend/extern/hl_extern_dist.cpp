#include "hl_extern_dist.h"
#include "hl_extern_view.h"
#include <cstdlib>
extern "C" {
#include "hl_dist.h"
#include "hl_ir.h"
}

namespace {

/* a host view of buffer b as an array of dtype t (float16/bfloat16 buffers hold bit patterns) */
void view(const halide_buffer_t *b, hl_dtype t, hl_storage *st, hl_array *a) {
  hl_view_of_buffer(b, st, a);
  a->dtype = t;
}

}  // namespace

extern "C" int hl_stage_dist(halide_buffer_t *X, int prim, int a, int b, int size, int dtype, int e0, int e1, int e2, int e3,
                             int e4, int e5, int e6, int e7, halide_buffer_t *out) {
  const int ext[HL_MAX_DIMS] = {e0, e1, e2, e3, e4, e5, e6, e7};
  int r = X->dimensions;
  if (X->is_bounds_query() || out->is_bounds_query()) {
    if (X->is_bounds_query())
      for (int d = 0; d < r; d++) X->dim[d].min = 0, X->dim[d].extent = ext[d];
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  if (hl_input_on_host(X)) return hl_stage_failed(-2, "dist: copying the operand from cuda failed");
  hl_storage sx, so;
  hl_array x, o, whole;
  int zero[HL_MAX_DIMS] = {0};
  hl_view_of_region(X, zero, ext, &sx, &x);
  x.dtype = (hl_dtype)dtype;
  view(out, (hl_dtype)dtype, &so, &o);
  int64_t attrs[3] = {a, b, size};
  hl_type tx, ty;
  tx.dtype = x.dtype;
  tx.ndim = x.ndim;
  memcpy(tx.shape, x.shape, sizeof tx.shape);
  hl_attrs at = {};
  at.i[0] = a, at.i[1] = b, at.i[2] = size;
  if (hl_infer(prim, 1, &tx, &at, &ty)) return hl_stage_failed(-1, nullptr);
  bool all = true;   /* the region asked for is the whole result: computed in place */
  for (int d = 0; d < r; d++) all = all && out->dim[d].min == 0 && out->dim[d].extent == ty.shape[r - 1 - d];
  if (all) return hl_dist_into(prim, &x, attrs, &o) ? hl_stage_failed(-1, nullptr) : 0;
  if (hl_array_alloc(&whole, ty.dtype, ty.ndim, ty.shape)) return hl_stage_failed(-1, nullptr);
  int rc = hl_dist_into(prim, &x, attrs, &whole);
  if (!rc) {   /* the region: whole's elements from out's mins on */
    hl_array part = whole;
    for (int d = 0; d < r; d++) {
      part.offset += (int64_t)out->dim[d].min * whole.strides[r - 1 - d];
      part.shape[r - 1 - d] = out->dim[d].extent;
    }
    hl_array_copy_elements(&o, &part);
  }
  hl_array_release(&whole);
  return rc ? hl_stage_failed(-1, nullptr) : 0;
}
