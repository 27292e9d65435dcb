/* Extern stages see Halide buffers; the engine's code wants arrays. A view of a buffer's host
 * memory, valid for the call (the storage record lives on the caller's stack). */
#ifndef HL_EXTERN_VIEW_H
#define HL_EXTERN_VIEW_H
#include <HalideRuntime.h>
#include <cstring>
extern "C" {
#include "hl_array.h"
}

/* An extern stage that fails says so here, and returns status: Halide's own check of a stage's
 * result is compiled out with its other asserts (Target::NoAsserts), so the pipeline's run looks
 * here instead (hl_kernel_run). `what` describes a failure the engine has not already recorded
 * (NULL when it has). */
int hl_stage_failed(int status, const char *what);
/* A stage of this run has failed: the pipeline goes on (its asserts are compiled out), and the
 * stages after it return at once rather than work on what the failed one left (a loop could run
 * long on it). Extern stages run on the pipeline's own thread (they are computed at root). */
bool hl_stage_run_failed();
/* (The engine's two are in hl_extern_state.cpp, on the record of the pipeline run that
 * hl_kernel_run enters; exported libraries have their own, hl_export_support.cpp.) */

/* An input of a host stage in a CUDA pipeline may hold its newest values in device memory:
 * Halide leaves the copy to the extern stage. 0 on success. */
static inline int hl_input_on_host(halide_buffer_t *b) {
  if (!b->device_dirty() || !b->device_interface) return 0;
  return b->device_interface->copy_to_host(nullptr, b);
}

static inline void hl_view_of_buffer(const halide_buffer_t *b, hl_storage *st, hl_array *a) {
  std::memset(st, 0, sizeof *st);
  st->refcount = 1;
  st->data = b->host;
  std::memset(a, 0, sizeof *a);
  halide_type_t t = b->type;
  a->dtype = t.code == halide_type_float ? (t.bits == 64 ? HL_FLOAT64 : HL_FLOAT32)
             : t.code == halide_type_uint ? (t.bits == 1 ? HL_BOOL : HL_UINT8)
             : (t.bits == 64 ? HL_INT64 : t.bits == 8 ? HL_INT8 : HL_INT32);
  a->ndim = b->dimensions;
  for (int d = 0; d < b->dimensions; d++) {
    a->shape[b->dimensions - 1 - d] = b->dim[d].extent;
    a->strides[b->dimensions - 1 - d] = b->dim[d].stride;
  }
  a->storage = st;
}

/* The view of buffer b's memory on `device`: its host memory, or its device memory (whose
 * address Halide's CUDA runtime keeps in b->device, as the engine's device arrays do). */
static inline void hl_view_of_buffer_on(int device, const halide_buffer_t *b, hl_storage *st, hl_array *a) {
  hl_view_of_buffer(b, st, a);
  if (device == 0) return;
  st->data = nullptr;
  st->device = device;
  st->device_ptr = b->device;
}

/* The view of buffer b's region that starts at coordinates min[d] with extents ext[d] (Halide's
 * dimension order). Extern stages need it for inputs that are pipeline parameters: those arrive
 * whole, not as the region the stage's bounds query asked for. */
static inline void hl_view_of_region(const halide_buffer_t *b, const int *min, const int *ext, hl_storage *st, hl_array *a) {
  hl_view_of_buffer(b, st, a);
  int r = b->dimensions;
  for (int d = 0; d < r; d++) {
    a->offset += (int64_t)(min[d] - b->dim[d].min) * b->dim[d].stride;
    a->shape[r - 1 - d] = ext[d];
  }
}
#endif
