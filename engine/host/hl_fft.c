#include "hl_fft.h"
#include "hl_error.h"
#include "hl_pool.h"
#include <math.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>

enum { MAX_STAGES = 64 };

/* How to transform one length in one direction: the radices of its Stockham stages, with their
 * twiddles in the element type; or, for a length with a prime factor past HL_FFT_MAX_RADIX,
 * Bluestein's chirp and the power-of-two plan it convolves with. */
typedef struct plan {
  size_t bytes;             /* what its tables hold, Bluestein's sub-plan included */
  int64_t n;
  int sign;                 /* -1 forward, +1 inverse */
  int dbl;                  /* float64 elements, else float32 */
  int nst;
  int radix[MAX_STAGES];
  int64_t L[MAX_STAGES];    /* the transforms' length before each stage */
  void *tw[MAX_STAGES];     /* (p - 1) L twiddles W^(j q) at (q - 1) L + j: real parts, then imaginary */
  void *wp[MAX_STAGES];     /* odd radices past 5: the p-th roots of unity, real then imaginary */
  struct plan *sub;         /* Bluestein: the forward transform of length m */
  int64_t m;
  void *chirp;              /* n values c[j] */
  void *bhat;               /* m values: the transform of the conjugated chirp, divided by m */
} plan;

/* exp(sign 2 pi i k / N) for any k, in double, from two tables of sqrt(N) entries each (one
 * product per value instead of a sin and a cos: a 2^20-point plan would spend more on its
 * twiddles than on the transform) */
typedef struct {
  int64_t N, B;
  double *lo, *hi;   /* (re, im) pairs of the roots k and B k */
} roots;

static int roots_init(roots *r, int64_t N, int sign) {
  r->N = N;
  r->B = (int64_t)ceil(sqrt((double)N));
  int64_t nh = N / r->B + 1;
  r->lo = malloc(sizeof(double) * 2 * (size_t)r->B);
  r->hi = malloc(sizeof(double) * 2 * (size_t)nh);
  if (!r->lo || !r->hi) return -1;
  const double two_pi = 6.283185307179586476925286766559;
  for (int64_t k = 0; k < r->B; k++) {
    double a = sign * two_pi * (double)k / (double)N;
    r->lo[2 * k] = cos(a), r->lo[2 * k + 1] = sin(a);
  }
  for (int64_t k = 0; k < nh; k++) {
    double a = sign * two_pi * (double)((k * r->B) % N) / (double)N;
    r->hi[2 * k] = cos(a), r->hi[2 * k + 1] = sin(a);
  }
  return 0;
}

static void roots_free(roots *r) {
  free(r->lo);
  free(r->hi);
}

static void root(const roots *r, int64_t k, double *re, double *im) {
  k %= r->N;
  const double *a = r->lo + 2 * (k % r->B), *b = r->hi + 2 * (k / r->B);
  *re = a[0] * b[0] - a[1] * b[1];
  *im = a[0] * b[1] + a[1] * b[0];
}

static void put(void *base, int64_t at, double v, int dbl) {
  if (dbl) ((double *)base)[at] = v;
  else ((float *)base)[at] = (float)v;
}

static void plan_free(plan *pl) {
  if (!pl) return;
  for (int s = 0; s < pl->nst; s++) {
    free(pl->tw[s]);
    free(pl->wp[s]);
  }
  plan_free(pl->sub);
  free(pl->chirp);
  free(pl->bhat);
  free(pl);
}

/* the values a lane needs in each of its four work arrays */
static int64_t fft_buffer_len(const plan *pl) { return pl->sub ? pl->m : pl->n; }

enum { COMPLEX, REAL, REAL_INVERSE };   /* what a job transforms: pairs to pairs, reals to pairs, back */

typedef struct {
  const hl_array *x, *out;   /* (out's storage is written) */
  const plan *pl;
  int what, axis, pstart, nd;   /* nd: the axes besides the pairs' */
  int64_t n, start, nlanes, chunk;
  const void *half;          /* real transforms of even length n: exp(-+2 pi i k / n), k <= n / 2 */
  int oom;                   /* atomic */
} job;

/* element offsets of lane `lane` (row-major over the shape without the axis and the pairs) */
static void lane_offsets(const job *jb, int64_t lane, int64_t *ox, int64_t *oo) {
  int64_t a = jb->x->offset, b = jb->out->offset;
  for (int d = jb->nd - 1; d >= 0; d--) {
    if (d == jb->axis) continue;
    int64_t e = jb->x->shape[d], i = lane % e;
    lane /= e;
    a += i * jb->x->strides[d];
    b += i * jb->out->strides[d];
  }
  *ox = a;
  *oo = b;
}

#define T float
#define FN(name) name##_f32
#include "hl_fft_kernels.h"
#undef T
#undef FN
#define T double
#define FN(name) name##_f64
#include "hl_fft_kernels.h"
#undef T
#undef FN

static plan *plan_new(int64_t n, int sign, int dbl);

/* Bluestein's part of a plan: the chirp, and the transform of its conjugate laid out cyclically */
static int plan_bluestein(plan *pl) {
  int64_t n = pl->n, m = 1;
  while (m < 2 * n - 1) m *= 2;
  pl->m = m;
  size_t es = pl->dbl ? sizeof(double) : sizeof(float);
  if (!(pl->sub = plan_new(m, -1, pl->dbl))) return -1;
  pl->chirp = malloc(es * 2 * (size_t)n);
  pl->bhat = calloc(2 * (size_t)m, es);
  void *sr = malloc(es * 2 * (size_t)m);
  roots r = {0};
  int rc = !pl->chirp || !pl->bhat || !sr || roots_init(&r, 2 * n, pl->sign) ? -1 : 0;
  if (rc == 0) {
    /* c[j] = exp(sign pi i j^2 / n), its angle reduced mod 2n exactly in integers */
    for (int64_t j = 0; j < n; j++) {
      double re, im;
      root(&r, (int64_t)((unsigned __int128)j * (unsigned __int128)j % (unsigned __int128)(2 * n)), &re, &im);
      put(pl->chirp, j, re, pl->dbl);
      put(pl->chirp, n + j, im, pl->dbl);
      /* b[t] = conj(c[t]) at t and at m - t, divided by m now rather than after each use */
      put(pl->bhat, j, re / (double)m, pl->dbl);
      put(pl->bhat, m + j, -im / (double)m, pl->dbl);
      if (j) {
        put(pl->bhat, m - j, re / (double)m, pl->dbl);
        put(pl->bhat, 2 * m - j, -im / (double)m, pl->dbl);
      }
    }
    if (pl->dbl) {
      double *h = pl->bhat, *s = sr;
      if (stockham_f64(pl->sub, h, h + m, s, s + m)) memcpy(h, s, sizeof(double) * 2 * (size_t)m);
    } else {
      float *h = pl->bhat, *s = sr;
      if (stockham_f32(pl->sub, h, h + m, s, s + m)) memcpy(h, s, sizeof(float) * 2 * (size_t)m);
    }
  }
  roots_free(&r);
  free(sr);
  return rc;
}

/* The plan of length n (> 0): radix 4 while 4 divides n, then 2, then the odd primes in
 * increasing order; Bluestein's if one of them passes HL_FFT_MAX_RADIX. NULL when out of memory. */
static plan *plan_new(int64_t n, int sign, int dbl) {
  plan *pl = calloc(1, sizeof *pl);
  if (!pl) return NULL;
  pl->n = n, pl->sign = sign, pl->dbl = dbl;
  int64_t rest = n;
  while (rest % 4 == 0) pl->radix[pl->nst++] = 4, rest /= 4;
  while (rest % 2 == 0) pl->radix[pl->nst++] = 2, rest /= 2;
  for (int p = 3; p <= HL_FFT_MAX_RADIX && rest > 1; p += 2)
    while (rest % p == 0) pl->radix[pl->nst++] = p, rest /= p;
  if (rest > 1) {   /* (a factor past the radices is left: the stages found are dropped) */
    pl->nst = 0;
    if (plan_bluestein(pl)) {
      plan_free(pl);
      return NULL;
    }
    return pl;
  }
  size_t es = dbl ? sizeof(double) : sizeof(float);
  roots r = {0};
  int bad = roots_init(&r, n, sign);
  for (int s = 0, L = 1; s < pl->nst && !bad; s++) {
    int p = pl->radix[s];
    int64_t mm = n / ((int64_t)L * p);
    pl->L[s] = L;
    if (!(pl->tw[s] = malloc(es * 2 * (size_t)(p - 1) * (size_t)L))) bad = 1;
    for (int64_t j = 0; j < L && !bad; j++)
      for (int q = 1; q < p; q++) {
        double re, im;
        root(&r, mm * j * q, &re, &im);
        put(pl->tw[s], (int64_t)(q - 1) * L + j, re, dbl);
        put(pl->tw[s], (int64_t)(p - 1) * L + (int64_t)(q - 1) * L + j, im, dbl);
      }
    if (p > 5 && !bad) {
      if (!(pl->wp[s] = malloc(es * 2 * (size_t)p))) bad = 1;
      for (int k = 0; k < p && !bad; k++) {
        double re, im;
        root(&r, k * (n / p), &re, &im);
        put(pl->wp[s], k, re, dbl);
        put(pl->wp[s], p + k, im, dbl);
      }
    }
    L *= p;
  }
  roots_free(&r);
  if (bad) {
    plan_free(pl);
    return NULL;
  }
  return pl;
}

static size_t plan_bytes(const plan *pl) {
  size_t es = pl->dbl ? sizeof(double) : sizeof(float), b = sizeof *pl;
  for (int s = 0; s < pl->nst; s++) b += es * 2 * (size_t)(pl->radix[s] - 1) * (size_t)pl->L[s] + (pl->wp[s] ? es * 2 * (size_t)pl->radix[s] : 0);
  if (pl->sub) b += plan_bytes(pl->sub) + es * 2 * (size_t)(pl->n + pl->m);
  return b;
}

/* Plans kept between calls: a training loop transforms the same lengths again and again, and a
 * plan costs O(n) products (Bluestein's a whole transform more). At most CACHE_PLANS plans and
 * CACHE_BYTES of tables; the least recently used plan nobody is using goes first. A plan is
 * immutable once built, so lanes on many threads and calls on many host threads share it. */
enum { CACHE_PLANS = 16 };
#define CACHE_BYTES ((size_t)64 << 20)
static struct {
  plan *pl;
  int refs;
  uint64_t used;
} cache[CACHE_PLANS];
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;
static uint64_t cache_clock;

static plan *plan_get(int64_t n, int sign, int dbl) {
  pthread_mutex_lock(&cache_lock);
  for (int k = 0; k < CACHE_PLANS; k++) {
    plan *pl = cache[k].pl;
    if (pl && pl->n == n && pl->sign == sign && pl->dbl == dbl) {
      cache[k].refs++;
      cache[k].used = ++cache_clock;
      pthread_mutex_unlock(&cache_lock);
      return pl;
    }
  }
  pthread_mutex_unlock(&cache_lock);
  plan *pl = plan_new(n, sign, dbl);   /* (built unlocked: two threads may build one length twice) */
  if (!pl) return NULL;
  pl->bytes = plan_bytes(pl);
  if (pl->bytes > CACHE_BYTES / 2) return pl;   /* not kept: plan_put frees it */
  pthread_mutex_lock(&cache_lock);
  for (;;) {   /* make room: the least recently used plans not in use go */
    size_t held = 0;
    int free_slot = -1, lru = -1;
    for (int k = 0; k < CACHE_PLANS; k++) {
      if (!cache[k].pl) {
        free_slot = k;
        continue;
      }
      held += cache[k].pl->bytes;
      if (!cache[k].refs && (lru < 0 || cache[k].used < cache[lru].used)) lru = k;
    }
    if (free_slot >= 0 && held + pl->bytes <= CACHE_BYTES) {
      cache[free_slot].pl = pl, cache[free_slot].refs = 1, cache[free_slot].used = ++cache_clock;
      break;
    }
    if (lru < 0) break;   /* everything kept is in use: this one is not kept */
    plan_free(cache[lru].pl);
    cache[lru].pl = NULL;
  }
  pthread_mutex_unlock(&cache_lock);
  return pl;
}

static void plan_put(plan *pl) {
  pthread_mutex_lock(&cache_lock);
  for (int k = 0; k < CACHE_PLANS; k++)
    if (cache[k].pl == pl) {
      cache[k].refs--;
      pl = NULL;
      break;
    }
  pthread_mutex_unlock(&cache_lock);
  plan_free(pl);
}

static int task(void *ctx, int t, uint8_t *closure) {
  (void)closure;
  job *jb = ctx;
  size_t es = jb->pl->dbl ? sizeof(double) : sizeof(float), len = (size_t)fft_buffer_len(jb->pl);
  char *w = malloc(4 * len * es + 64);
  if (!w) {
    __atomic_store_n(&jb->oom, 1, __ATOMIC_RELEASE);
    return 0;
  }
  int64_t lo = (int64_t)t * jb->chunk, hi = lo + jb->chunk < jb->nlanes ? lo + jb->chunk : jb->nlanes;
  if (jb->pl->dbl) {
    double *b = (double *)w;
    (jb->what == REAL ? lanes_real_f64 : jb->what == REAL_INVERSE ? lanes_real_inverse_f64 : lanes_f64)(jb, lo, hi, b, b + len, b + 2 * len, b + 3 * len);
  } else {
    float *b = (float *)w;
    (jb->what == REAL ? lanes_real_f32 : jb->what == REAL_INVERSE ? lanes_real_inverse_f32 : lanes_f32)(jb, lo, hi, b, b + len, b + 2 * len, b + 3 * len);
  }
  free(w);
  return 0;
}

int hl_fft_into(const hl_array *x, int axis, int inverse, hl_array *out, int64_t start, int pstart) {
  const char *op = inverse ? "fft.backward" : "fft.forward";
  if (x->dtype != HL_FLOAT32 && x->dtype != HL_FLOAT64) return hl_error("%s: internal: takes float32 or float64 pairs", op);
  if (x->ndim < 2 || x->shape[x->ndim - 1] != 2 || axis < 0 || axis >= x->ndim - 1 || out->ndim != x->ndim ||
      out->dtype != x->dtype)
    return hl_error("%s: internal: bad operand or result", op);
  if (!x->storage || x->storage->device != 0 || !out->storage || out->storage->device != 0)
    return hl_error("%s: internal: operands must be host arrays", op);
  int64_t n = x->shape[axis];
  if (n == 0 || hl_shape_size(out->ndim, out->shape) == 0) return 0;
  if (start < 0 || start + out->shape[axis] > n || pstart < 0 || pstart + out->shape[out->ndim - 1] > 2)
    return hl_error("%s: internal: the region asked for is outside the result", op);
  job jb = {.x = x, .out = out, .what = COMPLEX, .axis = axis, .pstart = pstart, .nd = x->ndim - 1, .n = n, .start = start};
  plan *pl = plan_get(n, inverse ? 1 : -1, x->dtype == HL_FLOAT64);
  if (!pl) return hl_error("%s: out of memory planning a transform of length %lld", op, (long long)n);
  jb.pl = pl;
  jb.nlanes = hl_shape_size(x->ndim, x->shape) / (2 * n);
  /* many lanes spread over the engine's threads; a task is worth it past ~16K values */
  int rc = hl_pool_for_chunks(&jb, task, jb.nlanes, jb.nlanes > 1 && jb.nlanes * n >= (1 << 14), &jb.chunk);
  plan_put(pl);
  if (rc == HL_POOL_INTERRUPTED) return hl_error("interrupted");
  if (jb.oom) return hl_error("%s: out of memory transforming lanes of length %lld", op, (long long)n);
  return 0;
}

/* exp(sign 2 pi i k / n) for k = 0 .. n / 2, in the element type: real parts, then imaginary */
static void *half_twiddles(int64_t n, int sign, int dbl) {
  int64_t m = n / 2;
  roots r = {0};
  void *half = malloc((dbl ? sizeof(double) : sizeof(float)) * 2 * (size_t)(m + 1));
  if (!half || roots_init(&r, n, sign)) {
    roots_free(&r);
    free(half);
    return NULL;
  }
  for (int64_t k = 0; k <= m; k++) {
    double re, im;
    root(&r, k, &re, &im);
    put(half, k, re, dbl);
    put(half, m + 1 + k, im, dbl);
  }
  roots_free(&r);
  return half;
}

/* Runs a real job (jb's arrays, axis, n and region set): an even n as a transform of n / 2 */
static int run_real(job *jb, const char *op, int sign, int dbl) {
  int64_t n = jb->n;
  int even = n % 2 == 0;
  void *half = even ? half_twiddles(n, sign, dbl) : NULL;
  plan *pl = even && !half ? NULL : plan_get(even ? n / 2 : n, sign, dbl);
  if (!pl) {
    free(half);
    return hl_error("%s: out of memory planning a transform of length %lld", op, (long long)n);
  }
  jb->half = half;
  jb->pl = pl;
  const hl_array *reals = jb->what == REAL ? jb->x : jb->out;
  jb->nlanes = hl_shape_size(reals->ndim, reals->shape) / reals->shape[jb->axis];
  int rc = hl_pool_for_chunks(jb, task, jb->nlanes, jb->nlanes > 1 && jb->nlanes * n >= (1 << 14), &jb->chunk);
  plan_put(pl);
  free(half);
  if (rc == HL_POOL_INTERRUPTED) return hl_error("interrupted");
  if (jb->oom) return hl_error("%s: out of memory transforming lanes of length %lld", op, (long long)n);
  return 0;
}

int hl_fft_real_into(const hl_array *x, int axis, hl_array *out, int64_t start, int pstart) {
  const char *op = "fft.real";
  if (x->dtype != HL_FLOAT32 && x->dtype != HL_FLOAT64) return hl_error("%s: internal: takes float32 or float64", op);
  if (axis < 0 || axis >= x->ndim || out->ndim != x->ndim + 1 || out->dtype != x->dtype)
    return hl_error("%s: internal: bad operand or result", op);
  if (!x->storage || x->storage->device != 0 || !out->storage || out->storage->device != 0)
    return hl_error("%s: internal: operands must be host arrays", op);
  int64_t n = x->shape[axis];
  if (n == 0 || hl_shape_size(out->ndim, out->shape) == 0) return 0;
  if (start < 0 || start + out->shape[axis] > n / 2 + 1 || pstart < 0 || pstart + out->shape[out->ndim - 1] > 2)
    return hl_error("%s: internal: the region asked for is outside the result", op);
  job jb = {.x = x, .out = out, .what = REAL, .axis = axis, .pstart = pstart, .nd = x->ndim, .n = n, .start = start};
  return run_real(&jb, op, -1, x->dtype == HL_FLOAT64);
}

int hl_fft_real_inverse_into(const hl_array *x, int axis, int64_t n, hl_array *out, int64_t start) {
  const char *op = "fft.real_inverse";
  if (x->dtype != HL_FLOAT32 && x->dtype != HL_FLOAT64) return hl_error("%s: internal: takes float32 or float64 pairs", op);
  if (x->ndim < 2 || x->shape[x->ndim - 1] != 2 || axis < 0 || axis >= x->ndim - 1 || out->ndim != x->ndim - 1 ||
      out->dtype != x->dtype || n < 1 || x->shape[axis] != n / 2 + 1)
    return hl_error("%s: internal: bad operand or result", op);
  if (!x->storage || x->storage->device != 0 || !out->storage || out->storage->device != 0)
    return hl_error("%s: internal: operands must be host arrays", op);
  if (hl_shape_size(out->ndim, out->shape) == 0) return 0;
  if (start < 0 || start + out->shape[axis] > n) return hl_error("%s: internal: the region asked for is outside the result", op);
  job jb = {.x = x, .out = out, .what = REAL_INVERSE, .axis = axis, .nd = out->ndim, .n = n, .start = start};
  return run_real(&jb, op, 1, x->dtype == HL_FLOAT64);
}
