/* The jit pipelines' 2-D transposing outputs as an extern stage (see engine/host/hl_transpose.h). */
#include "hl_extern_transpose.h"
#include "hl_extern_view.h"
extern "C" {
#include "hl_transpose.h"
}

/* out[y][x] = X[x][y] over out's region (Halide's dims: 0 = columns, 1 = rows). X is a parameter,
 * which arrives whole: the element for out's first position is found from X's own mins. */
extern "C" int hl_stage_cpu_transpose(halide_buffer_t *X, halide_buffer_t *out) {
  if (X->dimensions != 2 || out->dimensions != 2) return hl_stage_failed(-1, "transpose: internal: not a matrix");
  if (X->is_bounds_query() || out->is_bounds_query()) {
    if (X->is_bounds_query()) {
      X->dim[0].min = out->dim[1].min;
      X->dim[0].extent = out->dim[1].extent;
      X->dim[1].min = out->dim[0].min;
      X->dim[1].extent = out->dim[0].extent;
    }
    return 0;
  }
  if (hl_stage_run_failed()) return -1;   /* (an earlier stage failed) */
  /* (pipelines take and give rows of unit stride: the engine makes its arrays so) */
  if ((X->dim[0].extent > 1 && X->dim[0].stride != 1) || (out->dim[0].extent > 1 && out->dim[0].stride != 1))
    return hl_stage_failed(-2, "transpose: internal: rows of a stride other than 1");
  int64_t es = out->type.bytes();
  int64_t at = (int64_t)(out->dim[0].min - X->dim[1].min) * X->dim[1].stride + (int64_t)(out->dim[1].min - X->dim[0].min);
  hl_transpose(out->host, out->dim[1].stride, X->host + at * es, X->dim[1].stride, out->dim[1].extent, out->dim[0].extent,
               (size_t)es);
  return 0;
}
