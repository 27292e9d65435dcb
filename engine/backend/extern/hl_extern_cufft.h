/* cuFFT, found at run time (dlopen, as cuBLAS is: the build links nothing from CUDA), for the
 * fft.forward and fft.backward primitives on CUDA arrays: eagerly (hl_eval.c) and as the extern
 * stage hl_stage_cufft of CUDA pipelines. Values are float32/float64 (re, im) pairs, the pairs'
 * axis last; cuFFT reads them as cufftComplex / cufftDoubleComplex, so a view it is given must
 * have unit-stride pairs and even steps elsewhere (hl_cufft_view_ok); others are copied first.
 * HALUA_CUFFT names the library to load first; HALUA_NO_CUFFT=1 turns cuFFT off (the host FFT
 * then serves CUDA arrays, through copies). */
#ifndef HL_EXTERN_CUFFT_H
#define HL_EXTERN_CUFFT_H
#include <HalideRuntime.h>
#include <stdint.h>
#ifdef __cplusplus
extern "C" {
#endif
#include "hl_array.h"

/* How one transform of every lane runs as cuFFT calls: `batch` lanes of n values per call
 * (values `istride` apart in the input, `ostride` in the output; lanes `idist` / `odist`
 * apart), one call per point of the loops (loop_n[k] steps of loop_istep[k] / loop_ostep[k]).
 * Every count is in complex values. */
typedef struct hl_cufft_layout {
  int64_t n, istride, ostride;
  int64_t batch, idist, odist;
  int nloop;
  int64_t loop_n[HL_MAX_DIMS], loop_istep[HL_MAX_DIMS], loop_ostep[HL_MAX_DIMS];
} hl_cufft_layout;

/* Whether a view of pairs (shape [..., 2], strides and offset in elements) reads as complex
 * values: the pairs' stride 1, an even offset, every other step even and not negative, and
 * the lane's step (along `axis`) positive where the lane is longer than 1. */
int hl_cufft_view_ok(int ndim, const int64_t *shape, const int64_t *strides, int64_t offset, int axis);
/* The calls for a transform along `axis` from a view with strides istrides to one of the same
 * shape with ostrides (both hl_cufft_view_ok): the other axes that are one run in both views
 * merge, and the longest axis whose steps are positive becomes the batch; the rest are loops. */
void hl_cufft_layout_of(int ndim, const int64_t *shape, const int64_t *istrides, const int64_t *ostrides, int axis,
                        hl_cufft_layout *L);

/* Whether fft on CUDA uses cuFFT: the library loaded, HALUA_NO_CUFFT unset, and (where there is a
 * GPU) a first plan made (a failure is warned once; the host FFT serves instead). */
int hl_cufft_available(void);
/* Load cuFFT and make (and free) one small plan, with no check of a device first: 0 when it
 * worked, else a cuFFT status (-1: the library is absent). The no-GPU case must come back here
 * as a status, not a crash (tests/c/cufft_test.c). */
int hl_cufft_probe(void);
/* The name of a cuFFT status ("CUFFT_INTERNAL_ERROR"). */
const char *hl_cufft_status_name(int status);

/* out (CUDA, x's dtype and shape, a view cuFFT can write) = the transform of x (CUDA, any view)
 * along `axis`, forward (inverse = 0, exp(-2 pi i jk/n)) or backward, unscaled. A view cuFFT
 * cannot read is first copied into out and transformed there. -1 + hl_error on failure. */
int hl_cufft_into(const hl_array *x, int axis, int inverse, hl_array *out);

/* The extern stage of CUDA pipelines, hl_stage_fft's counterpart (same arguments): X and out in
 * device memory, out the region Halide asks for. */
int hl_stage_cufft(halide_buffer_t *X, int dim, int n, int inverse, halide_buffer_t *out);
#ifdef __cplusplus
}
#include <Halide.h>
/* A JIT module exporting hl_stage_cufft to pipelines that call it. */
Halide::Internal::JITModule hl_cufft_exports();
#endif
#endif
