/* The host copy of an input in device memory (hl_extern_host_copy.h). */
#include "hl_extern_host_copy.h"
#include <cstdlib>
#include <mutex>
#include "hl_device.h"
#include "hl_extern_view.h"

using namespace Halide;

namespace {

/* the element offsets, from the view's first element, of the lowest and highest elements it
 * covers (strides may be negative or 0) */
void span(const halide_buffer_t *b, int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  for (int d = 0; d < b->dimensions; d++) {
    int64_t reach = (int64_t)(b->dim[d].extent - 1) * b->dim[d].stride;
    if (reach < 0) *lo += reach;
    else *hi += reach;
  }
}

bool empty(const halide_buffer_t *b) {
  for (int d = 0; d < b->dimensions; d++)
    if (b->dim[d].extent <= 0) return true;
  return false;
}

}  // namespace

extern "C" int hl_input_host_copy(halide_buffer_t *b) {
  if (b->host || !b->device || empty(b)) return 0;
  int64_t lo, hi;
  span(b, &lo, &hi);
  size_t bytes = (size_t)b->type.bytes(), n = (size_t)(hi - lo + 1) * bytes;
  uint8_t *base = (uint8_t *)malloc(n);
  if (!base) return hl_stage_failed(-1, "out of memory for the host copy of an input in device memory");
  if (hl_device_copy_to_host(HL_DEVICE_CUDA, base, b->device + (uint64_t)(lo * (int64_t)bytes), n)) {
    free(base);
    return hl_stage_failed(-1, nullptr);
  }
  b->host = base - lo * (int64_t)bytes;   /* (the view's first element) */
  b->flags &= ~(uint64_t)(halide_buffer_flag_host_dirty | halide_buffer_flag_device_dirty);
  return 0;
}

void hl_input_host_copy_release(halide_buffer_t *b) {
  if (!b->host || !b->device || empty(b)) return;
  int64_t lo, hi;
  span(b, &lo, &hi);
  free(b->host + lo * (int64_t)b->type.bytes());
  b->host = nullptr;
}

Internal::JITModule hl_host_copy_exports() {
  static Internal::JITModule m;
  static std::once_flag once;
  std::call_once(once, [] { m.add_extern_for_export("hl_input_host_copy", ExternCFunction(&hl_input_host_copy)); });
  return m;
}
