/* Which cuFFT calls transform every lane of a view (hl_extern_cufft.h): pure functions of
 * shapes and strides, so tests/c/cufft_test.c checks them without a GPU. */
#include "hl_extern_cufft.h"

extern "C" int hl_cufft_view_ok(int ndim, const int64_t *shape, const int64_t *strides, int64_t offset, int axis) {
  if (ndim < 2 || axis < 0 || axis >= ndim - 1 || shape[ndim - 1] != 2) return 0;
  /* a complex value is two adjacent elements starting at an even element (cuFFT's float2 and
   * double2 are aligned to their size) */
  if (strides[ndim - 1] != 1 || offset % 2 != 0) return 0;
  for (int d = 0; d < ndim - 1; d++) {
    if (shape[d] <= 1) continue;   /* (a step never taken) */
    if (strides[d] < 0 || strides[d] % 2 != 0) return 0;
    if (d == axis && strides[d] == 0) return 0;   /* a broadcast lane: cuFFT's stride must be positive */
  }
  return 1;
}

namespace {
struct axis_run {
  int64_t n, is, os;
};
}  // namespace

extern "C" void hl_cufft_layout_of(int ndim, const int64_t *shape, const int64_t *istrides, const int64_t *ostrides,
                                   int axis, hl_cufft_layout *L) {
  L->n = shape[axis];
  L->istride = L->n > 1 ? istrides[axis] / 2 : 1;
  L->ostride = L->n > 1 ? ostrides[axis] / 2 : 1;
  /* the other axes, outermost first, merged where the outer one steps over the whole inner one
   * in both views (a contiguous batch of lanes is one axis however many it came as) */
  axis_run runs[HL_MAX_DIMS];
  int nr = 0;
  for (int d = 0; d < ndim - 1; d++) {
    if (d == axis || shape[d] <= 1) continue;
    axis_run cur = {shape[d], istrides[d] / 2, ostrides[d] / 2};
    if (nr > 0 && runs[nr - 1].is == cur.is * cur.n && runs[nr - 1].os == cur.os * cur.n)
      runs[nr - 1] = {runs[nr - 1].n * cur.n, cur.is, cur.os};
    else
      runs[nr++] = cur;
  }
  /* the batch: the longest run cuFFT can step through (a broadcast input repeats, which cuFFT's
   * distances cannot say), the innermost of equals; one call per point of the others */
  int b = -1;
  for (int k = nr - 1; k >= 0; k--)
    if (runs[k].is > 0 && runs[k].os > 0 && (b < 0 || runs[k].n > runs[b].n)) b = k;
  if (b >= 0) {
    L->batch = runs[b].n, L->idist = runs[b].is, L->odist = runs[b].os;
  } else {
    L->batch = 1, L->idist = L->n * L->istride, L->odist = L->n * L->ostride;   /* (unused by one lane) */
  }
  L->nloop = 0;
  for (int k = 0; k < nr; k++) {
    if (k == b) continue;
    L->loop_n[L->nloop] = runs[k].n;
    L->loop_istep[L->nloop] = runs[k].is;
    L->loop_ostep[L->nloop] = runs[k].os;
    L->nloop++;
  }
}
