/* cuBLAS, found at run time (dlopen), for float32/float64 matmul on CUDA as a Halide extern
 * stage. Halide and cuBLAS share the device's primary context and the default stream. */
#ifndef HL_CUBLAS_H
#define HL_CUBLAS_H
#include <Halide.h>

bool hl_cublas_available();
/* The extern stage: C[..., m, n] = sum_k A[..., m, k] B[..., k, n] on device buffers, in Halide's
 * dimension order (dim 0 innermost). K is the contracted extent. */
extern "C" int hl_stage_cublas_matmul(halide_buffer_t *A, halide_buffer_t *B, int K, halide_buffer_t *C);
/* A JIT module exporting hl_stage_cublas_matmul to pipelines that call it. */
Halide::Internal::JITModule hl_cublas_exports();
#endif
