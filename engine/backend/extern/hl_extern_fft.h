/* Fourier transforms as a Halide extern stage of CPU pipelines: hl_stage_fft(X, dim, n, inverse, Out)
 * transforms each lane of X (float (re, im) pairs, the pairs in Halide dimension 0) along Halide
 * dimension `dim` (of extent n) with engine/host/hl_fft.c, forward (inverse = 0) or backward. */
#ifndef HL_EXTERN_FFT_H
#define HL_EXTERN_FFT_H
#include <HalideRuntime.h>

extern "C" int hl_stage_fft(halide_buffer_t *X, int dim, int n, int inverse, halide_buffer_t *out);
/* hl_stage_fft_real(X, dim, n, Out): the transform of the real values X along the output's Halide
 * dimension `dim` (X's dimension dim - 1, of extent n): Out holds the pairs of its first n / 2 + 1 */
extern "C" int hl_stage_fft_real(halide_buffer_t *X, int dim, int n, halide_buffer_t *out);
#endif
