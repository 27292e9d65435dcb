/* hl.linalg's decompositions on the host: QR (geqrf, orgqr), SVD (gesdd, as NumPy), symmetric
 * eigenproblems (syevd, as NumPy) and log-determinants (getrf), per matrix of a batch, each
 * result packed as engine/core/hl_linalg_layout.h describes. */
#include "hl_linalg.h"
#include "hl_batch.h"
#include "hl_error.h"
#include "hl_lapack.h"
#include "hl_pool.h"
#include <limits.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  hl_decomp what;
  int mode, f64;
  const hl_array *a;
  hl_array *out;
  int64_t col0;      /* the packed element out's last axis starts at */
  int m, n, nb;
  int64_t nbatch, chunk;
  hl_linalg_layout lay;
  hl_linalg_fail fail;
  const hl_lapack_routines *lapack;
  int64_t bad;       /* atomic: the first batch item with no answer, nbatch if none */
  int oom;           /* atomic */
} job;

static int64_t batch_offset(const job *j, const hl_array *x, int64_t bi) {
  return hl_batch_offset(x, j->nb, j->out->shape, bi);
}

/* LAPACK works in double or float; the code below reads and writes through these */
static double get(const void *p, int64_t i, int f64) { return f64 ? ((const double *)p)[i] : ((const float *)p)[i]; }
static void put(void *p, int64_t i, double v, int f64) {
  if (f64) ((double *)p)[i] = v;
  else ((float *)p)[i] = (float)v;
}

/* the workspace size a LAPACK query (lwork = -1) reported */
static int query_size(const void *w, int f64) {
  double v = get(w, 0, f64);
  return v < 1 ? 1 : v > INT_MAX / 2 ? INT_MAX / 2 : (int)v + 1;
}

/* factor `p` of the packed vector pk: rows x cols, row-major, from column-major src (leading
 * dimension ld); `upper`: zero below the diagonal */
static void pack(const job *j, void *pk, int p, const void *src, int ld, int upper) {
  int64_t off = 0;
  for (int q = 0; q < p; q++) off += j->lay.rows[q] * j->lay.cols[q];
  for (int64_t r = 0; r < j->lay.rows[p]; r++)
    for (int64_t c = 0; c < j->lay.cols[p]; c++)
      put(pk, off + r * j->lay.cols[p] + c, upper && r > c ? 0 : get(src, r + c * (int64_t)ld, j->f64), j->f64);
}

/* LAPACK on one matrix (column-major in w, leading dimension m) into the packed vector pk;
 * 0, 1 (no answer: not converged), or -1 (out of memory) */
static int factor(const job *j, void *w, void *pk) {
  int m = j->m, n = j->n, k = m < n ? m : n, ld = m > 0 ? m : 1, info = 0, f64 = j->f64, mode = j->mode;
  size_t es = f64 ? 8 : 4;
  int lwork = -1, qwork = -1;
  char qs[16];
  void *work = NULL, *v1 = NULL, *v2 = NULL;
  int *iwork = NULL;
  int rc = -1;
  switch (j->what) {
  case HL_DECOMP_QR: {
    int kq = mode == 1 ? m : k;
    v1 = malloc(es * (size_t)k + 1);   /* tau */
    if (!v1) goto done;
    if (k > 0) {
      if (f64) j->lapack->dgeqrf(&m, &n, w, &ld, v1, (double *)qs, &lwork, &info);
      else j->lapack->sgeqrf(&m, &n, w, &ld, v1, (float *)qs, &lwork, &info);
      lwork = query_size(qs, f64);
      if (mode != 2) {
        if (f64) j->lapack->dorgqr(&m, &kq, &k, w, &ld, v1, (double *)qs, &qwork, &info);
        else j->lapack->sorgqr(&m, &kq, &k, w, &ld, v1, (float *)qs, &qwork, &info);
        int q = query_size(qs, f64);
        if (q > lwork) lwork = q;
      }
      if (!(work = malloc(es * (size_t)lwork))) goto done;
      if (f64) j->lapack->dgeqrf(&m, &n, w, &ld, v1, work, &lwork, &info);
      else j->lapack->sgeqrf(&m, &n, w, &ld, v1, work, &lwork, &info);
    }
    pack(j, pk, 1, w, ld, 1);   /* r: the upper triangle geqrf leaves (complete: m rows) */
    if (mode != 2) {
      if (k > 0) {
        if (f64) j->lapack->dorgqr(&m, &kq, &k, w, &ld, v1, work, &lwork, &info);
        else j->lapack->sorgqr(&m, &kq, &k, w, &ld, v1, work, &lwork, &info);
      } else {   /* no reflectors: q is the identity's first kq columns */
        for (int c = 0; c < kq; c++)
          for (int r = 0; r < m; r++) put(w, r + (int64_t)c * ld, r == c, f64);
      }
      pack(j, pk, 0, w, ld, 0);
    }
    rc = 0;
    break;
  }
  case HL_DECOMP_SVD: {
    const char *jobz = mode == 1 ? "A" : mode == 2 ? "N" : "S";
    int ucols = mode == 1 ? m : k, vrows = mode == 1 ? n : k, ldu = ld, ldvt = vrows > 0 ? vrows : 1;
    v1 = malloc(es * ((size_t)m * (size_t)ucols + (size_t)k) + 1);   /* u, then s */
    v2 = malloc(es * (size_t)vrows * (size_t)n + 1);                  /* vt */
    iwork = malloc(sizeof(int) * 8 * (size_t)k + 1);
    if (!v1 || !v2 || !iwork) goto done;
    void *s = (char *)v1 + es * (size_t)m * (size_t)ucols;
    if (k > 0) {
      if (f64) j->lapack->dgesdd(jobz, &m, &n, w, &ld, s, v1, &ldu, v2, &ldvt, (double *)qs, &lwork, iwork, &info, 1);
      else j->lapack->sgesdd(jobz, &m, &n, w, &ld, s, v1, &ldu, v2, &ldvt, (float *)qs, &lwork, iwork, &info, 1);
      lwork = query_size(qs, f64);
      if (!(work = malloc(es * (size_t)lwork))) goto done;
      if (f64) j->lapack->dgesdd(jobz, &m, &n, w, &ld, s, v1, &ldu, v2, &ldvt, work, &lwork, iwork, &info, 1);
      else j->lapack->sgesdd(jobz, &m, &n, w, &ld, s, v1, &ldu, v2, &ldvt, work, &lwork, iwork, &info, 1);
      if (info != 0) {
        rc = 1;
        break;
      }
    } else if (mode == 1) {   /* an empty matrix: u and vh are identities */
      for (int c = 0; c < m; c++)
        for (int r = 0; r < m; r++) put(v1, r + (int64_t)c * ldu, r == c, f64);
      for (int c = 0; c < n; c++)
        for (int r = 0; r < n; r++) put(v2, r + (int64_t)c * ldvt, r == c, f64);
    }
    pack(j, pk, 1, s, 1, 0);
    if (mode != 2) {
      pack(j, pk, 0, v1, ldu, 0);
      pack(j, pk, 2, v2, ldvt, 0);
    }
    rc = 0;
    break;
  }
  case HL_DECOMP_EIGH: {
    const char *jobz = mode & 2 ? "N" : "V", *uplo = mode & 1 ? "U" : "L";
    int liwork = -1, iq = 0;
    v1 = malloc(es * (size_t)n + 1);   /* w */
    if (!v1) goto done;
    if (n > 0) {
      if (f64) j->lapack->dsyevd(jobz, uplo, &n, w, &ld, v1, (double *)qs, &lwork, &iq, &liwork, &info, 1, 1);
      else j->lapack->ssyevd(jobz, uplo, &n, w, &ld, v1, (float *)qs, &lwork, &iq, &liwork, &info, 1, 1);
      lwork = query_size(qs, f64);
      liwork = iq > 0 ? iq : 1;
      work = malloc(es * (size_t)lwork);
      iwork = malloc(sizeof(int) * (size_t)liwork);
      if (!work || !iwork) goto done;
      if (f64) j->lapack->dsyevd(jobz, uplo, &n, w, &ld, v1, work, &lwork, iwork, &liwork, &info, 1, 1);
      else j->lapack->ssyevd(jobz, uplo, &n, w, &ld, v1, work, &lwork, iwork, &liwork, &info, 1, 1);
      if (info != 0) {
        rc = 1;
        break;
      }
    }
    pack(j, pk, 0, v1, 1, 0);
    if (!(mode & 2)) pack(j, pk, 1, w, ld, 0);
    rc = 0;
    break;
  }
  case HL_DECOMP_SLOGDET: {
    iwork = malloc(sizeof(int) * (size_t)n + 1);
    if (!iwork) goto done;
    if (n > 0) {
      if (f64) j->lapack->dgetrf(&n, &n, w, &ld, iwork, &info);
      else j->lapack->sgetrf(&n, &n, w, &ld, iwork, &info);
    }
    /* a zero pivot (info > 0): det is 0, log|det| is -inf, as NumPy says (not an error) */
    double sign = 1, logdet = 0, det = 1;   /* det: the pivots' product, as NumPy's det */
    if (info > 0) {
      sign = 0;
      logdet = -INFINITY;
      det = 0;
    } else {
      for (int d = 0; d < n; d++) {
        double p = get(w, d + (int64_t)d * ld, f64);
        if (iwork[d] != d + 1) sign = -sign, det = -det;
        if (p < 0) sign = -sign;
        logdet += log(fabs(p));
        det *= p;
      }
    }
    if (mode == 1) {
      put(pk, 0, det, f64);
    } else {
      put(pk, 0, sign, f64);
      put(pk, 1, logdet, f64);
    }
    rc = 0;
    break;
  }
  }
done:
  free(work);
  free(v1);
  free(v2);
  free(iwork);
  return rc;
}

static void run_item(job *j, int64_t bi, void *w, void *pk) {
  int m = j->m, n = j->n, ld = m > 0 ? m : 1, f64 = j->f64;
  int64_t total = j->lay.total, base = batch_offset(j, j->a, bi);
  const hl_array *a = j->a;
  int64_t rs = a->strides[a->ndim - 2], cs = a->strides[a->ndim - 1];
  int finite = 1;
  for (int c = 0; c < n; c++)
    for (int r = 0; r < m; r++) {
      double v = get(a->storage->data, base + r * rs + c * cs, f64);
      finite = finite && isfinite(v);
      put(w, r + (int64_t)c * ld, v, f64);
    }
  int rc = 0;
  if (!finite) {
    /* NaN or an infinity: NumPy's svd raises (it does not converge); the other decompositions
     * give NaN throughout, as NumPy's do (LAPACK's answer would be partly finite or hang) */
    if (j->what == HL_DECOMP_SVD) rc = 1;
    else
      for (int64_t i = 0; i < total; i++) put(pk, i, NAN, f64);
  } else {
    rc = factor(j, w, pk);
  }
  if (rc < 0) {
    __atomic_store_n(&j->oom, 1, __ATOMIC_RELEASE);
    return;
  }
  if (rc > 0) {
    if (j->fail == HL_LINALG_NAN) {
      for (int64_t i = 0; i < total; i++) put(pk, i, NAN, f64);
    } else {
      int64_t seen = __atomic_load_n(&j->bad, __ATOMIC_ACQUIRE);
      while (bi < seen && !__atomic_compare_exchange_n(&j->bad, &seen, bi, 0, __ATOMIC_ACQ_REL, __ATOMIC_ACQUIRE)) {
      }
      return;
    }
  }
  /* out's part of the packed vector */
  hl_array *o = j->out;
  int64_t oo = batch_offset(j, o, bi), os = o->strides[o->ndim - 1];
  for (int64_t i = 0; i < o->shape[o->ndim - 1]; i++) put(o->storage->data, oo + i * os, get(pk, j->col0 + i, f64), f64);
}

/* task t: batch items [t * chunk, (t + 1) * chunk), with its own copy of the matrix */
static int task(void *ctx, int t, uint8_t *closure) {
  (void)closure;
  job *j = ctx;
  size_t es = j->f64 ? 8 : 4, side = (size_t)(j->m > j->n ? j->m : j->n);
  void *w = malloc(es * side * side + 1), *pk = malloc(es * (size_t)j->lay.total + 1);
  if (!w || !pk) {
    __atomic_store_n(&j->oom, 1, __ATOMIC_RELEASE);
  } else {
    int64_t lo = (int64_t)t * j->chunk, hi = lo + j->chunk < j->nbatch ? lo + j->chunk : j->nbatch;
    for (int64_t bi = lo; bi < hi && !__atomic_load_n(&j->oom, __ATOMIC_ACQUIRE); bi++) run_item(j, bi, w, pk);
  }
  free(w);
  free(pk);
  return 0;
}

static const char *op_name(hl_decomp what) {
  static const char *names[] = {"linalg.qr", "linalg.svd", "linalg.eigh", "linalg.slogdet"};
  return names[what];
}

int hl_linalg_decomp_into(hl_decomp what, int mode, const hl_array *a, hl_array *out, int64_t col0, hl_linalg_fail fail) {
  const char *op = op_name(what);
  if (a->dtype != HL_FLOAT32 && a->dtype != HL_FLOAT64)
    return hl_error("%s: needs float32 or float64 matrices, got %s", op, hl_dtype_name(a->dtype));
  if (out->dtype != a->dtype || a->ndim != out->ndim + 1) return hl_error("%s: internal: operands do not match", op);
  if (!a->storage || a->storage->device != 0 || !out->storage || out->storage->device != 0)
    return hl_error("%s: internal: operands must be host arrays", op);
  int64_t m = a->shape[a->ndim - 2], n = a->shape[a->ndim - 1];
  if (m > 46340 || n > 46340)   /* LAPACK counts in 32-bit integers, workspaces included */
    return hl_error("%s: matrices of shape %s are too large for LAPACK", op, hl_shape_str(a->ndim, (const long long *)a->shape).s);
  job j = {.what = what, .mode = mode, .f64 = a->dtype == HL_FLOAT64, .a = a, .out = out, .col0 = col0, .fail = fail};
  j.m = (int)m;
  j.n = (int)n;
  j.nb = out->ndim - 1;
  j.lay = hl_linalg_layout_of(what, mode, m, n);
  j.nbatch = hl_shape_size(j.nb, out->shape);
  j.bad = j.nbatch;
  if (j.nbatch == 0 || out->shape[out->ndim - 1] == 0) return 0;
  j.lapack = hl_lapack(op);
  if (!j.lapack) return -1;
  double work = (double)j.nbatch * (double)m * (double)n * (double)(m > n ? m : n);
  hl_pool_for_chunks(&j, task, j.nbatch, work >= 65536.0, &j.chunk);
  if (j.oom) return hl_error("%s: out of memory for LAPACK's workspace (matrices of shape %lldx%lld)", op, (long long)m, (long long)n);
  if (j.bad < j.nbatch) {
    const char *what_failed = what == HL_DECOMP_SVD ? "SVD did not converge" : "eigenvalues did not converge";
    struct hl_shape_fmt s = hl_shape_str(a->ndim, (const long long *)a->shape);
    if (j.nb == 0) return hl_error("%s: %s (a is %s%s; NaN or infinite values do not converge)", op, what_failed, hl_dtype_name(a->dtype), s.s);
    long long idx[HL_MAX_DIMS];
    int64_t bi = j.bad;
    for (int d = j.nb - 1; d >= 0; d--) {
      idx[d] = bi % out->shape[d] + 1;
      bi /= out->shape[d];
    }
    return hl_error("%s: %s at batch index %s of a %s%s (NaN or infinite values do not converge)", op, what_failed, hl_shape_str(j.nb, idx).s,
                    hl_dtype_name(a->dtype), s.s);
  }
  return 0;
}
