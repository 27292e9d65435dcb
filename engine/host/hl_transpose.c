/* Matrix transposes on the host (see hl_transpose.h). */
#include "hl_transpose.h"
#include "hl_pool.h"
#include "hl_thread_exit.h"
#include <stdlib.h>
#include <string.h>
#if defined(__x86_64__)
#include <immintrin.h>
#endif

/* The matrices are walked in square blocks of 1 KiB rows (256 elements of 4 bytes): each task
 * turns a band of output rows. A transpose reads and writes runs of rows far apart, which the
 * hardware prefetchers do not follow: on this machine one thread read runs of 256 bytes at
 * 6.5 GB/s, of 1 KiB at 13, or at 20 with software prefetches a few rows ahead (a copy: 40). So
 * a block of the input is first copied, run by run with prefetches, into a per-thread buffer
 * whose rows are padded (rows a power of two apart share one cache set), then turned tile by
 * tile into whole output rows. One thread: 9 GB/s with 256-byte blocks, 14-15 with these. */
enum { ROW_BYTES = 1024, MAX_SIDE = 256, PAD_BYTES = 64, PREFETCH_ROWS = 4 };
static int64_t side_of(size_t es) { return ROW_BYTES / (int64_t)es < MAX_SIDE ? ROW_BYTES / (int64_t)es : MAX_SIDE; }

/* the plain element-by-element transpose of a rows x cols region */
#define PLAIN(T)                                                                          \
  static void plain_##T(T *out, int64_t ldo, const T *in, int64_t ldi, int64_t rows, int64_t cols) { \
    for (int64_t i = 0; i < rows; i++)                                                    \
      for (int64_t j = 0; j < cols; j++) out[i * ldo + j] = in[j * ldi + i];              \
  }
PLAIN(uint8_t)
PLAIN(uint16_t)
PLAIN(uint32_t)
PLAIN(uint64_t)

static void plain(void *out, int64_t ldo, const void *in, int64_t ldi, int64_t rows, int64_t cols, size_t es) {
  switch (es) {
  case 1: plain_uint8_t(out, ldo, in, ldi, rows, cols); break;
  case 2: plain_uint16_t(out, ldo, in, ldi, rows, cols); break;
  case 4: plain_uint32_t(out, ldo, in, ldi, rows, cols); break;
  default: plain_uint64_t(out, ldo, in, ldi, rows, cols); break;
  }
}

#if defined(__x86_64__)
/* one 8x8 block of 4-byte elements: interleave row pairs, then pairs of pairs, then the 128-bit
 * halves (the moves never look at the values, so any 4-byte dtype goes through as floats) */
__attribute__((target("avx2"))) static void block8x8(float *out, int64_t ldo, const float *in, int64_t ldi) {
  __m256 r[8], t[8], s[8];
  for (int k = 0; k < 8; k++) r[k] = _mm256_loadu_ps(in + k * ldi);
  for (int k = 0; k < 8; k += 2) {
    t[k] = _mm256_unpacklo_ps(r[k], r[k + 1]);
    t[k + 1] = _mm256_unpackhi_ps(r[k], r[k + 1]);
  }
  for (int k = 0; k < 8; k += 4) {
    s[k] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(1, 0, 1, 0));
    s[k + 1] = _mm256_shuffle_ps(t[k], t[k + 2], _MM_SHUFFLE(3, 2, 3, 2));
    s[k + 2] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(1, 0, 1, 0));
    s[k + 3] = _mm256_shuffle_ps(t[k + 1], t[k + 3], _MM_SHUFFLE(3, 2, 3, 2));
  }
  for (int k = 0; k < 4; k++) {
    _mm256_storeu_ps(out + k * ldo, _mm256_permute2f128_ps(s[k], s[k + 4], 0x20));
    _mm256_storeu_ps(out + (k + 4) * ldo, _mm256_permute2f128_ps(s[k], s[k + 4], 0x31));
  }
}

/* one 4x4 block of 8-byte elements */
__attribute__((target("avx2"))) static void block4x4(double *out, int64_t ldo, const double *in, int64_t ldi) {
  __m256d r0 = _mm256_loadu_pd(in), r1 = _mm256_loadu_pd(in + ldi);
  __m256d r2 = _mm256_loadu_pd(in + 2 * ldi), r3 = _mm256_loadu_pd(in + 3 * ldi);
  __m256d t0 = _mm256_unpacklo_pd(r0, r1), t1 = _mm256_unpackhi_pd(r0, r1);
  __m256d t2 = _mm256_unpacklo_pd(r2, r3), t3 = _mm256_unpackhi_pd(r2, r3);
  _mm256_storeu_pd(out, _mm256_permute2f128_pd(t0, t2, 0x20));
  _mm256_storeu_pd(out + ldo, _mm256_permute2f128_pd(t1, t3, 0x20));
  _mm256_storeu_pd(out + 2 * ldo, _mm256_permute2f128_pd(t0, t2, 0x31));
  _mm256_storeu_pd(out + 3 * ldo, _mm256_permute2f128_pd(t1, t3, 0x31));
}

static int have_avx2(void) {
  static int known = -1;
  if (known < 0) known = __builtin_cpu_supports("avx2") ? 1 : 0;
  return known;
}
#endif

/* the tiles of a block's shuffles: 8x8 of 4-byte elements, 4x4 of 8-byte ones, or none */
static int64_t tile_of(size_t es) {
#if defined(__x86_64__)
  if (have_avx2()) return es == 4 ? 8 : es == 8 ? 4 : 0;
#endif
  (void)es;
  return 0;
}

/* out (rows x cols) = the transpose of in (cols x rows), both in cache: whole tiles in
 * registers, the edges element by element */
static void turn(char *out, int64_t ldo, const char *in, int64_t ldi, int64_t rows, int64_t cols, size_t es) {
  int64_t tile = tile_of(es);
  if (!tile) {
    plain(out, ldo, in, ldi, rows, cols, es);
    return;
  }
  int64_t rt = rows - rows % tile, ct = cols - cols % tile;
#if defined(__x86_64__)
  for (int64_t i = 0; i < rt; i += tile)
    for (int64_t j = 0; j < ct; j += tile) {
      char *o = out + (i * ldo + j) * (int64_t)es;
      const char *t = in + (j * ldi + i) * (int64_t)es;
      if (es == 4) block8x8((float *)o, ldo, (const float *)t, ldi);
      else block4x4((double *)o, ldo, (const double *)t, ldi);
    }
#endif
  if (ct < cols) plain(out + ct * (int64_t)es, ldo, in + ct * ldi * (int64_t)es, ldi, rt, cols - ct, es);
  if (rt < rows) plain(out + rt * ldo * (int64_t)es, ldo, in + rt * (int64_t)es, ldi, rows - rt, cols, es);
}

/* This thread's staging buffer, made at its first use (NULL when out of memory). Not a
 * _Thread_local array: static thread-local storage is carved out of every thread's stack in a
 * program linked with the engine, and 272 KiB of it left no room in threads made with small
 * stacks. */
enum { STAGED_BYTES = MAX_SIDE * (ROW_BYTES + PAD_BYTES) };
static _Thread_local char *staged;
static _Thread_local hl_thread_exit staged_exit;
static void free_staged(void *unused) {
  (void)unused;
  free(staged);
  staged = NULL;
}
static char *staged_buffer(void) {
  if (!staged && (staged = aligned_alloc(64, STAGED_BYTES))) hl_thread_exit_add(&staged_exit, free_staged, NULL);
  return staged;
}

/* a rows x cols block of the output (at most side x side), from the cols x rows block of in */
static void block(char *out, int64_t ldo, const char *in, int64_t ldi, int64_t rows, int64_t cols, size_t es) {
  char *staged = staged_buffer();
  if (!staged) {   /* (out of memory: turned where it lies) */
    turn(out, ldo, in, ldi, rows, cols, es);
    return;
  }
  int64_t ldt = side_of(es) + PAD_BYTES / (int64_t)es;   /* the staged rows' stride, in elements */
  size_t run = (size_t)rows * es;
  for (int64_t j = 0; j < cols; j++) {
    if (j + PREFETCH_ROWS < cols)
      for (size_t q = 0; q < run; q += 64) __builtin_prefetch(in + (j + PREFETCH_ROWS) * ldi * (int64_t)es + (int64_t)q, 0, 3);
    memcpy(staged + j * ldt * (int64_t)es, in + j * ldi * (int64_t)es, run);
  }
  turn(out, ldo, staged, ldt, rows, cols, es);
}

typedef struct {
  char *out;
  const char *in;
  int64_t ldo, ldi, rows, cols;
  size_t es;
} job;

/* the output rows [r0, r0 + side), block by block along the columns */
static void band(const job *j, int64_t r0) {
  int64_t side = side_of(j->es), rows = j->rows - r0 < side ? j->rows - r0 : side;
  for (int64_t c0 = 0; c0 < j->cols; c0 += side) {
    int64_t cols = j->cols - c0 < side ? j->cols - c0 : side;
    block(j->out + (r0 * j->ldo + c0) * (int64_t)j->es, j->ldo, j->in + (c0 * j->ldi + r0) * (int64_t)j->es, j->ldi, rows,
          cols, j->es);
  }
}

static int band_task(void *ctx, int b, uint8_t *closure) {
  (void)closure;
  const job *j = ctx;
  band(j, (int64_t)b * side_of(j->es));
  return 0;
}

void hl_transpose(void *out, int64_t ldo, const void *in, int64_t ldi, int64_t rows, int64_t cols, size_t es) {
  if (rows <= 0 || cols <= 0) return;
  job j = {out, in, ldo, ldi, rows, cols, es};
  int64_t side = side_of(es), bands = (rows + side - 1) / side;
  /* below 64K elements a task costs more than it saves */
  if (rows * cols < ((int64_t)1 << 16) || bands > INT32_MAX) {
    for (int64_t r0 = 0; r0 < rows; r0 += side) band(&j, r0);
    return;
  }
  hl_pool_par_for(&j, band_task, 0, (int)bands, NULL);
}
