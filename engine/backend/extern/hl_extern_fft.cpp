#include "hl_extern_fft.h"
#include "hl_extern_view.h"
extern "C" {
#include "hl_fft.h"
}

/* X's region is hl_fft_region's. The output's first position along the lane and its first part go
 * to the kernel, which writes only what was asked. */
extern "C" int hl_stage_fft(halide_buffer_t *X, int dim, int n, int inverse, halide_buffer_t *out) {
  int r = out->dimensions, min[HL_MAX_DIMS], ext[HL_MAX_DIMS];
  if (dim < 1 || dim >= r || X->dimensions != r) return hl_stage_failed(-1, "fft: internal: a bad fft stage");
  hl_fft_region(out, dim, n, min, ext);
  if (X->is_bounds_query() || out->is_bounds_query()) {
    if (X->is_bounds_query())
      for (int d = 0; d < r; d++) X->dim[d].min = min[d], X->dim[d].extent = ext[d];
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  if (hl_input_on_host(X)) return hl_stage_failed(-2, "fft: copying the operand from cuda failed");
  hl_storage sx, so;
  hl_array x, o;
  hl_view_of_region(X, min, ext, &sx, &x);
  hl_view_of_buffer(out, &so, &o);
  return hl_fft_into(&x, r - 1 - dim, inverse, &o, out->dim[dim].min, out->dim[0].min) ? hl_stage_failed(-1, nullptr) : 0;
}

/* X has the output's dimensions less the pairs' (output dimension d + 1 is X's d): its region is
 * the output's with the lane widened to [0, n). */
extern "C" int hl_stage_fft_real(halide_buffer_t *X, int dim, int n, halide_buffer_t *out) {
  int r = X->dimensions, min[HL_MAX_DIMS], ext[HL_MAX_DIMS];
  if (dim < 1 || dim > r || out->dimensions != r + 1) return hl_stage_failed(-1, "fft: internal: a bad real fft stage");
  for (int d = 0; d < r; d++) min[d] = out->dim[d + 1].min, ext[d] = out->dim[d + 1].extent;
  min[dim - 1] = 0, ext[dim - 1] = n;
  if (X->is_bounds_query() || out->is_bounds_query()) {
    if (X->is_bounds_query())
      for (int d = 0; d < r; d++) X->dim[d].min = min[d], X->dim[d].extent = ext[d];
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  if (hl_input_on_host(X)) return hl_stage_failed(-2, "fft: copying the operand from cuda failed");
  hl_storage sx, so;
  hl_array x, o;
  hl_view_of_region(X, min, ext, &sx, &x);
  hl_view_of_buffer(out, &so, &o);
  return hl_fft_real_into(&x, r - dim, &o, out->dim[dim].min, out->dim[0].min) ? hl_stage_failed(-1, nullptr) : 0;
}

/* X has the output's dimensions after the pairs' (output dimension d is X's d + 1): its region is
 * the output's with the lane widened to the n / 2 + 1 values and both parts of each pair. */
extern "C" int hl_stage_fft_real_inverse(halide_buffer_t *X, int dim, int n, halide_buffer_t *out) {
  int r = out->dimensions, min[HL_MAX_DIMS], ext[HL_MAX_DIMS];
  if (dim < 0 || dim >= r || X->dimensions != r + 1 || n < 1)
    return hl_stage_failed(-1, "fft: internal: a bad inverse real fft stage");
  min[0] = 0, ext[0] = 2;
  for (int d = 0; d < r; d++) min[d + 1] = out->dim[d].min, ext[d + 1] = out->dim[d].extent;
  min[dim + 1] = 0, ext[dim + 1] = n / 2 + 1;
  if (X->is_bounds_query() || out->is_bounds_query()) {
    if (X->is_bounds_query())
      for (int d = 0; d <= r; d++) X->dim[d].min = min[d], X->dim[d].extent = ext[d];
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  if (hl_input_on_host(X)) return hl_stage_failed(-2, "fft: copying the operand from cuda failed");
  hl_storage sx, so;
  hl_array x, o;
  hl_view_of_region(X, min, ext, &sx, &x);
  hl_view_of_buffer(out, &so, &o);
  return hl_fft_real_inverse_into(&x, r - 1 - dim, n, &o, out->dim[dim].min) ? hl_stage_failed(-1, nullptr) : 0;
}
