/* A host copy of a CUDA pipeline's input, for the host code that reads it (hl_host_reads.h). */
#ifndef HL_EXTERN_HOST_COPY_H
#define HL_EXTERN_HOST_COPY_H
#include <Halide.h>

/* Called by a pipeline before its host code reads input b: when b is in device memory only,
 * gives it host memory holding its elements (b->host; neither side dirty). 0 on success; a
 * failure is reported as a stage's is (hl_stage_failed). */
extern "C" int hl_input_host_copy(halide_buffer_t *b);
/* After the run: frees the host memory hl_input_host_copy gave b, if any (b->host is cleared). */
void hl_input_host_copy_release(halide_buffer_t *b);
/* A JIT module exporting hl_input_host_copy to pipelines that call it. */
Halide::Internal::JITModule hl_host_copy_exports();
#endif
