#include "hl_extern_fft.h"
#include "hl_extern_view.h"
extern "C" {
#include "hl_fft.h"
}

/* What the host stages share once each has X's region (min, ext, over X's dimensions): a bounds
 * query is answered with it; an earlier stage's failure, or X left on the device, stops the run.
 * True when the caller is to run its kernel on the views x (X's region) and o (the output); else
 * *rc is the stage's status. */
static bool host_stage(halide_buffer_t *X, halide_buffer_t *out, const int *min, const int *ext, hl_storage *sx, hl_array *x,
                       hl_storage *so, hl_array *o, int *rc) {
  *rc = 0;
  if (X->is_bounds_query() || out->is_bounds_query()) {
    if (X->is_bounds_query())
      for (int d = 0; d < X->dimensions; d++) X->dim[d].min = min[d], X->dim[d].extent = ext[d];
    return false;
  }
  if (hl_stage_run_failed()) *rc = -1;   /* (an earlier stage failed) */
  else if (hl_input_on_host(X)) *rc = hl_stage_failed(-2, "fft: copying the operand from cuda failed");
  if (*rc) return false;
  hl_view_of_region(X, min, ext, sx, x);
  hl_view_of_buffer(out, so, o);
  return true;
}

/* X's region is hl_fft_region's. The output's first position along the lane and its first part go
 * to the kernel, which writes only what was asked. */
extern "C" int hl_stage_fft(halide_buffer_t *X, int dim, int n, int inverse, halide_buffer_t *out) {
  int r = out->dimensions, min[HL_MAX_DIMS], ext[HL_MAX_DIMS], rc;
  if (dim < 1 || dim >= r || X->dimensions != r) return hl_stage_failed(-1, "fft: internal: a bad fft stage");
  hl_fft_region(out, dim, n, min, ext);
  hl_storage sx, so;
  hl_array x, o;
  if (!host_stage(X, out, min, ext, &sx, &x, &so, &o, &rc)) return rc;
  return hl_fft_into(&x, r - 1 - dim, inverse, &o, out->dim[dim].min, out->dim[0].min) ? hl_stage_failed(-1, nullptr) : 0;
}

/* X has the output's dimensions less the pairs' (output dimension d + 1 is X's d): its region is
 * the output's with the lane widened to [0, n). */
extern "C" int hl_stage_fft_real(halide_buffer_t *X, int dim, int n, halide_buffer_t *out) {
  int r = X->dimensions, min[HL_MAX_DIMS], ext[HL_MAX_DIMS], rc;
  if (dim < 1 || dim > r || out->dimensions != r + 1) return hl_stage_failed(-1, "fft: internal: a bad real fft stage");
  for (int d = 0; d < r; d++) min[d] = out->dim[d + 1].min, ext[d] = out->dim[d + 1].extent;
  min[dim - 1] = 0, ext[dim - 1] = n;
  hl_storage sx, so;
  hl_array x, o;
  if (!host_stage(X, out, min, ext, &sx, &x, &so, &o, &rc)) return rc;
  return hl_fft_real_into(&x, r - dim, &o, out->dim[dim].min, out->dim[0].min) ? hl_stage_failed(-1, nullptr) : 0;
}

/* X has the output's dimensions after the pairs' (output dimension d is X's d + 1): its region is
 * the output's with the lane widened to the n / 2 + 1 values and both parts of each pair. */
extern "C" int hl_stage_fft_real_inverse(halide_buffer_t *X, int dim, int n, halide_buffer_t *out) {
  int r = out->dimensions, min[HL_MAX_DIMS], ext[HL_MAX_DIMS], rc;
  if (dim < 0 || dim >= r || X->dimensions != r + 1 || r + 1 > HL_MAX_DIMS || n < 1)
    return hl_stage_failed(-1, "fft: internal: a bad inverse real fft stage");
  min[0] = 0, ext[0] = 2;
  for (int d = 0; d < r; d++) min[d + 1] = out->dim[d].min, ext[d + 1] = out->dim[d].extent;
  min[dim + 1] = 0, ext[dim + 1] = n / 2 + 1;
  hl_storage sx, so;
  hl_array x, o;
  if (!host_stage(X, out, min, ext, &sx, &x, &so, &o, &rc)) return rc;
  return hl_fft_real_inverse_into(&x, r - 1 - dim, n, &o, out->dim[dim].min) ? hl_stage_failed(-1, nullptr) : 0;
}
