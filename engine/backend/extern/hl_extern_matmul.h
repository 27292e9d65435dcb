/* Matmul as a Halide extern stage: C[..., m, n] = sum_k A[..., m, k] B[..., k, n], in Halide's
 * dimension order (dim 0 innermost); K is the contracted extent. On CUDA the stage calls cuBLAS
 * (hl_cublas.cpp); on the CPU it calls the engine's own cached, shape-generic matmul kernel
 * (hl_cpu_matmul.cpp), so a pipeline with matmuls compiles only its other work. */
#ifndef HL_EXTERN_MATMUL_H
#define HL_EXTERN_MATMUL_H
#include <Halide.h>

/* For a bounds query: fill the regions of A and B that C's region needs. Parameters arrive as
 * real buffers even in a bounds query: only query buffers are filled. True when it was one. */
bool hl_matmul_bounds_query(halide_buffer_t *A, halide_buffer_t *B, int K, halide_buffer_t *C);

extern "C" int hl_stage_cpu_matmul(halide_buffer_t *A, halide_buffer_t *B, int K, halide_buffer_t *C);
/* A JIT module exporting hl_stage_cpu_matmul to pipelines that call it. */
Halide::Internal::JITModule hl_cpu_matmul_exports();
#endif
