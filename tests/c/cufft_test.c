/* cufft_test: what of the cuFFT path (engine/backend/extern/hl_extern_cufft.cpp) runs without a
 * GPU: which views cuFFT reads in place, how a transform becomes batched calls and loops, the
 * region the stage asks of its operand, HALUA_NO_CUFFT, and, where there is no GPU, that a
 * loaded cuFFT fails with a status and a message rather than a crash. Exits 1 with a line per
 * failure. The transforms themselves run on a GPU: tests/lua/fft_cuda_spec.lua. */
#include "hl_extern_cufft.h"
#include "hl_device.h"
#include "hl_error.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures;

#define CHECK(cond, ...)                    \
  do {                                      \
    if (!(cond)) {                          \
      fprintf(stderr, "cufft_test: ");      \
      fprintf(stderr, __VA_ARGS__);         \
      fprintf(stderr, "\n");                \
      failures++;                           \
    }                                       \
  } while (0)

static void view_ok(void) {
  int64_t shape[3] = {4, 8, 2}, dense[3] = {16, 2, 1};
  CHECK(hl_cufft_view_ok(3, shape, dense, 0, 0), "a dense view along axis 0");
  CHECK(hl_cufft_view_ok(3, shape, dense, 0, 1), "a dense view along axis 1");
  CHECK(!hl_cufft_view_ok(3, shape, dense, 0, 2), "the pairs' axis is no lane");
  CHECK(!hl_cufft_view_ok(3, shape, dense, 1, 1), "an odd offset splits pairs");
  CHECK(hl_cufft_view_ok(3, shape, dense, 16, 1), "an even offset");
  int64_t planar[3] = {8, 1, 32};   /* the parts 32 apart: not interleaved */
  CHECK(!hl_cufft_view_ok(3, shape, planar, 0, 1), "pairs with stride 32");
  int64_t odd[3] = {17, 2, 1};   /* rows of 8.5 complex values */
  CHECK(!hl_cufft_view_ok(3, shape, odd, 0, 1), "an odd row step");
  int64_t reversed[3] = {16, -2, 1};
  CHECK(!hl_cufft_view_ok(3, shape, reversed, 14, 1), "a reversed lane");
  int64_t bcast_rows[3] = {0, 2, 1};
  CHECK(hl_cufft_view_ok(3, shape, bcast_rows, 0, 1), "rows broadcast across lanes");
  int64_t bcast_lane[3] = {2, 0, 1};
  CHECK(!hl_cufft_view_ok(3, shape, bcast_lane, 0, 1), "a lane of one repeated value");
  int64_t one[3] = {1, 8, 2}, s_one[3] = {0, 2, 1};
  CHECK(hl_cufft_view_ok(3, one, s_one, 0, 0), "a lane of length 1 with step 0");
  int64_t notpairs[3] = {4, 8, 3};
  CHECK(!hl_cufft_view_ok(3, notpairs, dense, 0, 1), "a last axis of 3");
}

#define LAYOUT(L, n_, is_, os_, b_, id_, od_, nl_)                                                                 \
  CHECK((L).n == (n_) && (L).istride == (is_) && (L).ostride == (os_) && (L).batch == (b_) && (L).idist == (id_) && \
            (L).odist == (od_) && (L).nloop == (nl_),                                                             \
        "line %d: n %lld stride %lld/%lld batch %lld dist %lld/%lld loops %d", __LINE__, (long long)(L).n,         \
        (long long)(L).istride, (long long)(L).ostride, (long long)(L).batch, (long long)(L).idist,                 \
        (long long)(L).odist, (L).nloop)

static void layouts(void) {
  hl_cufft_layout L;
  /* [3, 5, 8] complex, along the last: the two batch axes are one run of 15 lanes */
  int64_t s1[4] = {3, 5, 8, 2}, d1[4] = {80, 16, 2, 1};
  hl_cufft_layout_of(4, s1, d1, d1, 2, &L);
  LAYOUT(L, 8, 1, 1, 15, 8, 8, 0);
  /* [3, 8, 5] along the middle: lanes 5 apart; the inner 5 are the batch, 3 calls 40 apart */
  int64_t s2[4] = {3, 8, 5, 2}, d2[4] = {80, 10, 2, 1};
  hl_cufft_layout_of(4, s2, d2, d2, 1, &L);
  LAYOUT(L, 8, 5, 5, 5, 1, 1, 1);
  CHECK(L.loop_n[0] == 3 && L.loop_istep[0] == 40 && L.loop_ostep[0] == 40, "the loop of [3, 8, 5]");
  /* [9, 8, 2] along the middle: 9 is longer than 2, so it is the batch */
  int64_t s3[4] = {9, 8, 2, 2}, d3[4] = {32, 4, 2, 1};
  hl_cufft_layout_of(4, s3, d3, d3, 1, &L);
  LAYOUT(L, 8, 2, 2, 9, 16, 16, 1);
  CHECK(L.loop_n[0] == 2 && L.loop_istep[0] == 1 && L.loop_ostep[0] == 1, "the loop of [9, 8, 2]");
  /* the input broadcast across lanes: no distance says "the same lane again", so a loop of
   * single-lane calls whose input step is 0 */
  int64_t s4[3] = {8, 4, 2}, i4[3] = {2, 0, 1}, o4[3] = {8, 2, 1};
  hl_cufft_layout_of(3, s4, i4, o4, 0, &L);
  LAYOUT(L, 8, 1, 4, 1, 8, 32, 1);
  CHECK(L.loop_n[0] == 4 && L.loop_istep[0] == 0 && L.loop_ostep[0] == 1, "the loop of a broadcast input");
  /* a transposed input (a [6, 4] array seen as [4, 6]) into a dense output */
  int64_t s5[3] = {4, 6, 2}, i5[3] = {2, 8, 1}, o5[3] = {12, 2, 1};
  hl_cufft_layout_of(3, s5, i5, o5, 1, &L);
  LAYOUT(L, 6, 4, 1, 4, 1, 6, 0);
  /* axes that are one run in the input but not in a padded output stay apart */
  int64_t s6[4] = {2, 3, 4, 2}, i6[4] = {24, 8, 2, 1}, o6[4] = {32, 8, 2, 1};
  hl_cufft_layout_of(4, s6, i6, o6, 2, &L);
  LAYOUT(L, 4, 1, 1, 3, 4, 4, 1);
  CHECK(L.loop_n[0] == 2 && L.loop_istep[0] == 12 && L.loop_ostep[0] == 16, "the loop of a padded output");
  /* lanes of one value; axes of extent 1 are skipped */
  int64_t s7[4] = {1, 5, 1, 2}, d7[4] = {10, 2, 2, 1};
  hl_cufft_layout_of(4, s7, d7, d7, 2, &L);
  LAYOUT(L, 1, 1, 1, 5, 1, 1, 0);
  /* a single lane */
  int64_t s8[2] = {16, 2}, d8[2] = {2, 1};
  hl_cufft_layout_of(2, s8, d8, d8, 0, &L);
  LAYOUT(L, 16, 1, 1, 1, 16, 16, 0);
}

/* the stage's bounds query: the region of X out's region needs */
static void stage_region(void) {
  halide_dimension_t od[3] = {{1, 1, 1, 0}, {2, 3, 1, 0}, {1, 2, 24, 0}}, xd[3];
  memset(xd, 0, sizeof xd);
  halide_buffer_t X, out;
  memset(&X, 0, sizeof X);
  memset(&out, 0, sizeof out);
  X.type = out.type = (struct halide_type_t){halide_type_float, 32, 1};
  X.dimensions = out.dimensions = 3;
  X.dim = xd;
  out.dim = od;
  int rc = hl_stage_cufft(&X, 1, 8, 0, &out);
  CHECK(rc == 0, "a bounds query returns 0");
  CHECK(xd[0].min == 0 && xd[0].extent == 2, "both parts of the pairs: [%d, +%d)", xd[0].min, xd[0].extent);
  CHECK(xd[1].min == 0 && xd[1].extent == 8, "the whole lane: [%d, +%d)", xd[1].min, xd[1].extent);
  CHECK(xd[2].min == 1 && xd[2].extent == 2, "the output's lanes: [%d, +%d)", xd[2].min, xd[2].extent);
}

static void switches(void) {
  int avail = hl_cufft_available();
  setenv("HALUA_NO_CUFFT", "1", 1);
  CHECK(!hl_cufft_available(), "HALUA_NO_CUFFT turns cuFFT off");
  unsetenv("HALUA_NO_CUFFT");
  CHECK(hl_cufft_available() == avail, "unset, cuFFT is as it was");
  CHECK(!strcmp(hl_cufft_status_name(5), "CUFFT_INTERNAL_ERROR"), "status 5 is %s", hl_cufft_status_name(5));
  CHECK(!strcmp(hl_cufft_status_name(-1), "the library is not loaded"), "status -1 is %s", hl_cufft_status_name(-1));
  CHECK(!strcmp(hl_cufft_status_name(99), "an unknown cuFFT status"), "status 99 is %s", hl_cufft_status_name(99));
}

/* No GPU: a loaded cuFFT cannot plan; the transform says so (the probe's status, not a crash) */
static void without_gpu(void) {
  if (hl_cuda_device_count() > 0) {
    CHECK(hl_cufft_probe() == 0 || !hl_cufft_available(), "a GPU whose cuFFT does not plan is not used");
    printf("cufft_test: a GPU is here: the no-GPU checks are skipped\n");
    return;
  }
  int st = hl_cufft_probe();
  CHECK(st != 0, "no GPU, yet a plan was made");
  if (st == -1) {
    CHECK(!hl_cufft_available(), "no library, yet available");
    printf("cufft_test: no libcufft here: the checks of a loaded cuFFT are skipped\n");
    return;
  }
  printf("cufft_test: libcufft loads here without a GPU; its first plan fails with %s\n", hl_cufft_status_name(st));
  /* CUDA arrays at a made-up address (no device: nothing is ever dereferenced) */
  hl_storage s;
  memset(&s, 0, sizeof s);
  s.refcount = 1;
  s.device = HL_DEVICE_CUDA;
  s.device_ptr = 1u << 20;
  hl_array x, out;
  memset(&x, 0, sizeof x);
  x.dtype = HL_FLOAT32;
  x.ndim = 2;
  x.shape[0] = 8, x.shape[1] = 2;
  x.strides[0] = 2, x.strides[1] = 1;
  x.storage = &s;
  out = x;
  out.offset = 64;
  hl_error_clear();
  CHECK(hl_cufft_into(&x, 0, 0, &out) == -1, "a transform without a GPU failed");
  char want[160];
  snprintf(want, sizeof want, "halua: fft: cuFFT could not plan a batch of 1 transforms of 8 values (%s)", hl_cufft_status_name(st));
  CHECK(!strcmp(hl_error_message(), want), "the message: %s", hl_error_message());
  /* a view cuFFT cannot read goes through a device copy, which says there is no device */
  x.offset = 1;
  hl_error_clear();
  CHECK(hl_cufft_into(&x, 0, 0, &out) == -1, "a copy without a GPU failed");
  CHECK(strstr(hl_error_message(), "copy: no CUDA device here"), "the message: %s", hl_error_message());
  /* not pairs of floats */
  x.dtype = out.dtype = HL_INT32;
  hl_error_clear();
  CHECK(hl_cufft_into(&x, 0, 0, &out) == -1 &&
            !strcmp(hl_error_message(), "halua: fft: internal: cuFFT takes float32 or float64 pairs in cuda memory"),
        "int32: %s", hl_error_message());
}

int main(void) {
  view_ok();
  layouts();
  stage_region();
  switches();
  without_gpu();
  if (failures) fprintf(stderr, "cufft_test: %d failures\n", failures);
  else printf("cufft_test: all passed\n");
  return failures ? 1 : 0;
}
