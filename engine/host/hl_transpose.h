/* Matrix transposes on the host: out[i][j] = in[j][i], in blocks staged in cache, with
 * in-register 8x8 (4-byte) and 4x4 (8-byte) shuffles on CPUs with AVX2, over the engine's thread
 * pool. A transpose written as a Halide schedule reads each output vector as a strided gather
 * (Halide 14 makes no shuffle transpose): 16 GB/s for a 4096x4096 float32 on this 2-vCPU
 * machine, against 27 GB/s here. The jit pipelines' 2-D transposing outputs of a parameter (an
 * extern stage) and eager copies of transposed views use it. */
#ifndef HL_TRANSPOSE_H
#define HL_TRANSPOSE_H
#include <stddef.h>
#include <stdint.h>

/* out (rows x cols, row stride ldo elements) = the transpose of in (cols x rows, row stride ldi
 * elements; any sign, as in a reversed view), for elements of es bytes (1, 2, 4 or 8). The two must
 * not overlap. */
void hl_transpose(void *out, int64_t ldo, const void *in, int64_t ldi, int64_t rows, int64_t cols, size_t es);
#endif
