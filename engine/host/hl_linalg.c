#include "hl_linalg.h"
#include "hl_batch.h"
#include "hl_error.h"
#include "hl_lapack.h"
#include "hl_pool.h"
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

enum { SOLVE, CHOLESKY, TRIANGULAR };

typedef struct {
  int what, mode;    /* mode: TRIANGULAR's bits (hl_linalg.h) */
  const hl_array *a, *b;
  hl_array *out;
  int64_t row0, col0;
  int n, k;          /* matrix order; right-hand sides (solve) */
  int nb;            /* batch rank (out's rank - 2) */
  int64_t nbatch, chunk;
  hl_linalg_fail fail;
  const hl_lapack_routines *lapack;
  int64_t bad;       /* atomic: the first batch item with no answer, nbatch if none */
  int oom;           /* atomic */
} job;

static int64_t batch_offset(const job *j, const hl_array *x, int64_t bi) {
  return hl_batch_offset(x, j->nb, j->out->shape, bi);
}

/* dst (column-major, leading dimension ld) = the rows x cols matrix of x at element `base`;
 * `lower`: only the lower triangle (what potrf reads), the rest zeroed */
static void gather(const hl_array *x, int64_t base, int rows, int cols, int lower, void *dst, int ld) {
  int64_t rs = x->strides[x->ndim - 2], cs = x->strides[x->ndim - 1];
  if (x->dtype == HL_FLOAT64) {
    const double *s = (const double *)x->storage->data + base;
    double *d = dst;
    for (int c = 0; c < cols; c++)
      for (int r = 0; r < rows; r++) d[r + (int64_t)c * ld] = lower && r < c ? 0 : s[r * rs + c * cs];
  } else {
    const float *s = (const float *)x->storage->data + base;
    float *d = dst;
    for (int c = 0; c < cols; c++)
      for (int r = 0; r < rows; r++) d[r + (int64_t)c * ld] = lower && r < c ? 0 : s[r * rs + c * cs];
  }
}

enum { PLAIN, LOWER, FILL_NAN };

/* whether the n x n column-major matrix at w (leading dimension ld) holds only finite values */
static int all_finite(const void *w, int n, int ld, int f64) {
  for (int c = 0; c < n; c++)
    for (int r = 0; r < n; r++) {
      double v = f64 ? ((const double *)w)[r + (int64_t)c * ld] : ((const float *)w)[r + (int64_t)c * ld];
      if (!isfinite(v)) return 0;
    }
  return 1;
}

/* out's matrix at element `base` (rows x cols) = the block of src (column-major, leading
 * dimension ld) at row0, col0; LOWER zeroes the elements above the diagonal of src */
static void scatter(hl_array *out, int64_t base, const void *src, int ld, int64_t row0, int64_t col0, int mode) {
  int nd = out->ndim;
  int64_t rows = out->shape[nd - 2], cols = out->shape[nd - 1];
  int64_t rs = out->strides[nd - 2], cs = out->strides[nd - 1];
  for (int64_t r = 0; r < rows; r++)
    for (int64_t c = 0; c < cols; c++) {
      int64_t i = row0 + r, jj = col0 + c;
      int zero = mode == LOWER && i < jj;
      if (out->dtype == HL_FLOAT64) {
        double v = mode == FILL_NAN ? NAN : zero ? 0 : ((const double *)src)[i + jj * ld];
        ((double *)out->storage->data)[base + r * rs + c * cs] = v;
      } else {
        float v = mode == FILL_NAN ? NAN : zero ? 0 : ((const float *)src)[i + jj * ld];
        ((float *)out->storage->data)[base + r * rs + c * cs] = v;
      }
    }
}

static void run_item(job *j, int64_t bi, void *w, int *ipiv) {
  int n = j->n, k = j->k, ld = n > 0 ? n : 1, info = 0;
  int f64 = j->a->dtype == HL_FLOAT64;
  void *wa = w, *wb = (char *)w + (size_t)n * (size_t)n * (f64 ? 8 : 4);
  int64_t oo = batch_offset(j, j->out, bi);
  if (n > 0) {
    if (j->what == TRIANGULAR) {
      /* substitution: a NaN or an infinity reaches only the values that depend on it, and a
       * zero on the diagonal (not a unit one) is singular */
      gather(j->a, batch_offset(j, j->a, bi), n, n, 0, wa, ld);
      gather(j->b, batch_offset(j, j->b, bi), n, k, 0, wb, ld);
      const char *uplo = j->mode & 1 ? "L" : "U", *trans = j->mode & 2 ? "T" : "N", *diag = j->mode & 4 ? "U" : "N";
      if (f64) j->lapack->dtrtrs(uplo, trans, diag, &n, &k, wa, &ld, wb, &ld, &info, 1, 1, 1);
      else j->lapack->strtrs(uplo, trans, diag, &n, &k, wa, &ld, wb, &ld, &info, 1, 1, 1);
    } else if (j->what == SOLVE) {
      gather(j->a, batch_offset(j, j->a, bi), n, n, 0, wa, ld);
      gather(j->b, batch_offset(j, j->b, bi), n, k, 0, wb, ld);
      /* a matrix holding a NaN or an infinity has no meaningful solution: every value of the
       * answer is NaN, as NumPy gives (LAPACK's pivoting would leave some of them finite) */
      if (!all_finite(wa, n, ld, f64)) {
        scatter(j->out, oo, NULL, ld, 0, 0, FILL_NAN);
        return;
      }
      if (f64) j->lapack->dgesv(&n, &k, wa, &ld, ipiv, wb, &ld, &info);
      else j->lapack->sgesv(&n, &k, wa, &ld, ipiv, wb, &ld, &info);
    } else {
      gather(j->a, batch_offset(j, j->a, bi), n, n, 1, wa, ld);
      if (f64) j->lapack->dpotrf("L", &n, wa, &ld, &info, 1);
      else j->lapack->spotrf("L", &n, wa, &ld, &info, 1);
      /* reference LAPACK stops at a NaN pivot, OpenBLAS's potrf carries on: the same answer
       * from both (not positive definite, as NumPy on reference LAPACK says) */
      for (int d = 0; d < n && info == 0; d++) {
        double p = f64 ? ((double *)wa)[d + (int64_t)d * ld] : ((float *)wa)[d + (int64_t)d * ld];
        if (!(p > 0)) info = d + 1;
      }
    }
  }
  /* info > 0: a zero pivot (singular) or a non-positive pivot (not positive definite); info < 0
   * would be a bad argument, which the shapes checked here rule out */
  if (info != 0) {
    if (j->fail == HL_LINALG_NAN) {
      scatter(j->out, oo, NULL, ld, 0, 0, FILL_NAN);
    } else {
      int64_t seen = __atomic_load_n(&j->bad, __ATOMIC_ACQUIRE);
      while (bi < seen && !__atomic_compare_exchange_n(&j->bad, &seen, bi, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      }
    }
    return;
  }
  if (j->what != CHOLESKY) scatter(j->out, oo, wb, ld, j->row0, 0, PLAIN);
  else scatter(j->out, oo, wa, ld, j->row0, j->col0, LOWER);
}

/* task t: batch items [t * chunk, (t + 1) * chunk), with its own LAPACK workspace */
static int task(void *ctx, int t, uint8_t *closure) {
  (void)closure;
  job *j = ctx;
  size_t es = j->a->dtype == HL_FLOAT64 ? 8 : 4;
  size_t n = (size_t)j->n, elems = n * n + (j->what != CHOLESKY ? n * (size_t)j->k : 0);
  void *w = malloc(elems * es + 1);
  int *ipiv = malloc(sizeof(int) * n + 1);
  if (!w || !ipiv) {
    __atomic_store_n(&j->oom, 1, __ATOMIC_RELEASE);
  } else {
    int64_t lo = (int64_t)t * j->chunk, hi = lo + j->chunk < j->nbatch ? lo + j->chunk : j->nbatch;
    for (int64_t bi = lo; bi < hi; bi++) run_item(j, bi, w, ipiv);
  }
  free(w);
  free(ipiv);
  return 0;
}

static int run(job *j, const char *op) {
  const hl_array *a = j->a;
  if (a->dtype != HL_FLOAT32 && a->dtype != HL_FLOAT64)
    return hl_error("%s: needs float32 or float64 matrices, got %s", op, hl_dtype_name(a->dtype));
  if (j->out->dtype != a->dtype || (j->b && j->b->dtype != a->dtype))
    return hl_error("%s: internal: operands of different dtypes", op);
  const hl_array *all[3] = {a, j->b, j->out};
  for (int x = 0; x < 3; x++)
    if (all[x] && (!all[x]->storage || all[x]->storage->device != 0)) return hl_error("%s: internal: operands must be host arrays", op);
  int64_t n = a->shape[a->ndim - 1], k = j->b ? j->b->shape[j->b->ndim - 1] : 0;
  /* LAPACK counts in 32-bit integers */
  if (n > INT_MAX || k > INT_MAX)
    return hl_error("%s: matrices of shape %s are too large for LAPACK", op, hl_shape_str(a->ndim, (const long long *)a->shape).s);
  j->n = (int)n;
  j->k = (int)k;
  j->nb = j->out->ndim - 2;
  j->nbatch = hl_shape_size(j->nb, j->out->shape);
  j->bad = j->nbatch;
  j->oom = 0;
  /* an empty result of non-empty matrices still factors them: a singular one is an error */
  if (j->nbatch == 0 || n == 0) return 0;
  j->lapack = hl_lapack(op);
  if (!j->lapack) return -1;
  /* batches of small matrices spread over the engine's threads */
  double work = (double)j->nbatch * (double)n * (double)n * (double)(n + k);
  hl_pool_for_chunks(j, task, j->nbatch, work >= 65536.0, &j->chunk);
  if (j->oom) return hl_error("%s: out of memory for LAPACK's workspace (matrices of order %lld)", op, (long long)n);
  if (j->bad < j->nbatch) {
    const char *what = j->what == CHOLESKY ? "matrix is not positive definite"
                       : j->what == TRIANGULAR ? "singular matrix: a zero on the diagonal" : "singular matrix";
    struct hl_shape_fmt s = hl_shape_str(a->ndim, (const long long *)a->shape);
    if (j->nb == 0) return hl_error("%s: %s (a is %s%s)", op, what, hl_dtype_name(a->dtype), s.s);
    long long idx[HL_MAX_DIMS];
    int64_t bi = j->bad;
    for (int d = j->nb - 1; d >= 0; d--) {
      idx[d] = bi % j->out->shape[d] + 1;   /* 1-based, as Lua shows indices */
      bi /= j->out->shape[d];
    }
    return hl_error("%s: %s at batch index %s of a %s%s", op, what, hl_shape_str(j->nb, idx).s, hl_dtype_name(a->dtype), s.s);
  }
  return 0;
}

int hl_linalg_solve_into(const hl_array *a, const hl_array *b, hl_array *out, int64_t row0, hl_linalg_fail fail) {
  job j = {.what = SOLVE, .a = a, .b = b, .out = out, .row0 = row0, .fail = fail};
  return run(&j, "linalg.solve");
}

int hl_linalg_cholesky_into(const hl_array *a, hl_array *out, int64_t row0, int64_t col0, hl_linalg_fail fail) {
  job j = {.what = CHOLESKY, .a = a, .out = out, .row0 = row0, .col0 = col0, .fail = fail};
  return run(&j, "linalg.cholesky");
}

int hl_linalg_solve_triangular_into(const hl_array *a, const hl_array *b, int mode, hl_array *out, int64_t row0, hl_linalg_fail fail) {
  job j = {.what = TRIANGULAR, .mode = mode, .a = a, .b = b, .out = out, .row0 = row0, .fail = fail};
  return run(&j, "linalg.solve_triangular");
}
