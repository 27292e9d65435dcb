/* What the libraries hl.export writes link in besides their pipeline and the host extern stages
 * (libhalua_export.a, see CMakeLists.txt): the call adapter from plain data pointers to Halide
 * buffers, and the stages' failure hooks (hl_extern_view.h) for a process without the engine. */
#include "hl_extern_view.h"
#include <stdint.h>
extern "C" {
#include "hl_error.h"
}

/* No engine records the run's failure here: the message goes to Halide's runtime (halide_error:
 * stderr unless the host installs its own handler) and the stage's status fails the pipeline,
 * whose checks of extern results exported pipelines keep. */
int hl_stage_failed(int status, const char *what) {
  halide_error(nullptr, what ? what : hl_error_message());
  return status;
}

bool hl_stage_run_failed() { return false; }

/* Calls an exported pipeline through its argv entry point. desc describes each of the n arrays
 * (inputs, embedded captures, outputs) as: type code, bits, rank, then the shape in numpy's
 * order; data[j] is array j's contiguous row-major memory. The pipeline's status: 0 on success. */
extern "C" int hl_export_call(int (*pipeline)(void **), int n, const int32_t *desc, void *const *data) {
  enum { MAXA = 256 };
  if (n < 0 || n > MAXA) return -1;
  halide_buffer_t bufs[MAXA];
  halide_dimension_t dims[MAXA][HL_MAX_DIMS];
  void *argv[MAXA];
  for (int j = 0; j < n; j++) {
    int code = *desc++, bits = *desc++, rank = *desc++;
    if (rank < 0 || rank > HL_MAX_DIMS) return -1;
    bufs[j] = halide_buffer_t();
    bufs[j].host = (uint8_t *)data[j];
    bufs[j].type = halide_type_t((halide_type_code_t)code, bits);
    bufs[j].dimensions = rank;
    bufs[j].dim = dims[j];
    int32_t stride = 1;
    for (int d = 0; d < rank; d++) {   /* Halide's dimension 0 is numpy's last axis */
      int32_t extent = desc[rank - 1 - d];
      dims[j][d] = halide_dimension_t(0, extent, stride);
      stride *= extent;
    }
    desc += rank;
    argv[j] = &bufs[j];
  }
  return pipeline(argv);
}
