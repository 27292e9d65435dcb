#include "hl_extern_sort.h"
#include "hl_extern_view.h"
extern "C" {
#include "hl_sort.h"
}

/* Every output element needs its whole lane: X's region is the output's with dimension `dim`
 * widened to [0, n). Parameters arrive whole rather than as the region asked for, so X's view is
 * cut from its own mins; the output's first position along the lane goes to the core. */
extern "C" int hl_stage_sort(halide_buffer_t *X, int dim, int n, int arg, halide_buffer_t *out) {
  int r = out->dimensions, min[HL_MAX_DIMS], ext[HL_MAX_DIMS];
  if (dim < 0 || dim >= r || X->dimensions != r) return hl_stage_failed(-1, "sort: internal: a bad sort stage");
  for (int d = 0; d < r; d++) min[d] = out->dim[d].min, ext[d] = out->dim[d].extent;
  min[dim] = 0;
  ext[dim] = n;
  if (X->is_bounds_query() || out->is_bounds_query()) {
    if (X->is_bounds_query())
      for (int d = 0; d < r; d++) X->dim[d].min = min[d], X->dim[d].extent = ext[d];
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  if (hl_input_on_host(X)) return hl_stage_failed(-2, "sort: copying the operand from cuda failed");
  hl_storage sx, so;
  hl_array x, o;
  hl_view_of_region(X, min, ext, &sx, &x);
  hl_view_of_buffer(out, &so, &o);
  /* (bool arrives as uint8, how pipelines store it: 0 and 1 sort the same either way) */
  return hl_sort_into(&x, r - 1 - dim, arg, &o, out->dim[dim].min) ? hl_stage_failed(-1, nullptr) : 0;
}
