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
/* hl_stage_fft_real_inverse(X, dim, n, Out): the n real values along Out's Halide dimension `dim`
 * (X's dim + 1, of extent n / 2 + 1, X's dimension 0 the pairs) whose transform X's pairs begin */
extern "C" int hl_stage_fft_real_inverse(halide_buffer_t *X, int dim, int n, halide_buffer_t *out);

/* The region of X that out's values need (the host stage's and hl_stage_cufft's): every value
 * needs its whole lane and both parts of each pair, so it is out's region with dimension `dim`
 * widened to [0, n) and the pairs' dimension (0) to [0, 2). */
static inline void hl_fft_region(const halide_buffer_t *out, int dim, int n, int *min, int *ext) {
  for (int d = 0; d < out->dimensions; d++) min[d] = out->dim[d].min, ext[d] = out->dim[d].extent;
  min[dim] = 0, ext[dim] = n;
  min[0] = 0, ext[0] = 2;
}
#endif
