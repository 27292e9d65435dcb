/* 2-D transposing outputs of CPU jit pipelines as an extern stage calling hl_transpose. */
#ifndef HL_EXTERN_TRANSPOSE_H
#define HL_EXTERN_TRANSPOSE_H
#include <HalideRuntime.h>

extern "C" int hl_stage_cpu_transpose(halide_buffer_t *X, halide_buffer_t *out);
#endif
