/* The discrete Fourier transform along one axis, on the host: a self-sorting (Stockham)
 * mixed-radix FFT (radices 4, 2, 3 and small odd primes up to HL_FFT_MAX_RADIX) for lengths
 * whose prime factors are small, and Bluestein's chirp-z algorithm (a convolution by
 * power-of-two FFTs) for lengths with a larger prime factor, so every length costs O(n log n).
 * float32 and float64, computed in the element type with twiddles computed in double.
 * Why hand-written rather than a library: docs/fft.md ("Choice"). Eager fft calls it directly;
 * pipelines call it from an extern stage (engine/backend/extern/hl_extern_fft.cpp). */
#ifndef HL_FFT_H
#define HL_FFT_H
#include "hl_array.h"

enum { HL_FFT_MAX_RADIX = 31 };   /* a larger prime factor goes through Bluestein */

/* x: float32 or float64 of shape S..[2], the (re, im) pairs of complex values (the pairs' axis
 * last, any strides); the transform runs along `axis` (0-based, not the last):
 * y[k] = sum_j x[j] exp(-+2 pi i j k / n), the minus sign forward (inverse = 0), the plus sign for
 * inverse = 1, with no 1/n. out (host, x's dtype) has x's shape except that along `axis` it holds
 * the positions start .. start+m-1 of the result and along the pairs' axis the parts pstart ..
 * (so a pipeline can ask for a region). -1 + hl_error on failure. */
int hl_fft_into(const hl_array *x, int axis, int inverse, hl_array *out, int64_t start, int pstart);

/* The forward transform of real values: x float32 or float64 of any shape, transformed along
 * `axis` (n values); out holds the (re, im) pairs [..., 2] of the first n / 2 + 1 results (the
 * others are their conjugates), as a region as above (out's axis `axis` from start, its pairs'
 * axis from pstart). An even n costs a complex transform of n / 2 (the even- and odd-indexed
 * values as the real and imaginary parts, then split apart). */
int hl_fft_real_into(const hl_array *x, int axis, hl_array *out, int64_t start, int pstart);

/* Its inverse, unscaled: x the pairs [..., 2] of n / 2 + 1 values along `axis`, out the n real
 * values y[j] = sum_k X[k] exp(2 pi i j k / n) with X extended by conjugates (X[n - k] = conj(X[k]))
 * and the imaginary parts of X[0] and, n even, X[n / 2] taken as 0; out (x's shape less the
 * pairs' axis) holds positions start .. along the axis. */
int hl_fft_real_inverse_into(const hl_array *x, int axis, int64_t n, hl_array *out, int64_t start);
#endif
