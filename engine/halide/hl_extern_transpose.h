/* 2-D transposing outputs of CPU jit pipelines as an extern stage calling hl_transpose. */
#ifndef HL_EXTERN_TRANSPOSE_H
#define HL_EXTERN_TRANSPOSE_H
#include <Halide.h>

extern "C" int halua_cpu_transpose(halide_buffer_t *X, halide_buffer_t *out);
/* A JIT module exporting halua_cpu_transpose to the pipelines. */
Halide::Internal::JITModule hl_transpose_exports();
#endif
