/* The FFT's kernels for one element type: hl_fft.c includes this file once with T float and once
 * with T double (FN(name) gives each its own names), so both share one text.
 * Complex values are held split: real parts in one array, imaginary parts in another, so the
 * butterflies' inner loops run over contiguous memory and the compiler vectorises them. */

/* The butterflies: radix p from x[q xs] (q < p; x[q xs] for q >= 1 times the twiddle w[(q - 1) ws])
 * to y[u ys] (u < p), sg the direction's sign. Inlined into both loop orders of the stage. */
#define BFLY static inline __attribute__((always_inline)) void
#define TWIDDLE(q)                                                                                 \
  T t##q##r = xr[q * xs] * wr[(q - 1) * ws] - xi[q * xs] * wi[(q - 1) * ws];                       \
  T t##q##i = xr[q * xs] * wi[(q - 1) * ws] + xi[q * xs] * wr[(q - 1) * ws]

BFLY FN(bfly2)(const T *restrict xr, const T *restrict xi, int64_t xs, T *restrict yr, T *restrict yi, int64_t ys,
               const T *wr, const T *wi, int64_t ws, T sg) {
  (void)sg;
  TWIDDLE(1);
  yr[0] = xr[0] + t1r, yi[0] = xi[0] + t1i;
  yr[ys] = xr[0] - t1r, yi[ys] = xi[0] - t1i;
}

BFLY FN(bfly3)(const T *restrict xr, const T *restrict xi, int64_t xs, T *restrict yr, T *restrict yi, int64_t ys,
               const T *wr, const T *wi, int64_t ws, T sg) {
  const T c = sg * (T)0.86602540378443864676;
  TWIDDLE(1);
  TWIDDLE(2);
  T sr = t1r + t2r, si = t1i + t2i, dr = t1r - t2r, di = t1i - t2i;
  T mr = xr[0] - sr / 2, mi = xi[0] - si / 2;
  yr[0] = xr[0] + sr, yi[0] = xi[0] + si;
  yr[ys] = mr - c * di, yi[ys] = mi + c * dr;
  yr[2 * ys] = mr + c * di, yi[2 * ys] = mi - c * dr;
}

BFLY FN(bfly4)(const T *restrict xr, const T *restrict xi, int64_t xs, T *restrict yr, T *restrict yi, int64_t ys,
               const T *wr, const T *wi, int64_t ws, T sg) {
  TWIDDLE(1);
  TWIDDLE(2);
  TWIDDLE(3);
  T a_r = xr[0] + t2r, a_i = xi[0] + t2i, b_r = xr[0] - t2r, b_i = xi[0] - t2i;
  T c_r = t1r + t3r, c_i = t1i + t3i, d_r = t1r - t3r, d_i = t1i - t3i;
  yr[0] = a_r + c_r, yi[0] = a_i + c_i;
  yr[2 * ys] = a_r - c_r, yi[2 * ys] = a_i - c_i;
  /* w = sg i: multiplying by it turns (re, im) into (-sg im, sg re) */
  yr[ys] = b_r - sg * d_i, yi[ys] = b_i + sg * d_r;
  yr[3 * ys] = b_r + sg * d_i, yi[3 * ys] = b_i - sg * d_r;
}

/* y1 and y4 (y2 and y3) share their cosine part a and differ in the sign of i b */
BFLY FN(bfly5)(const T *restrict xr, const T *restrict xi, int64_t xs, T *restrict yr, T *restrict yi, int64_t ys,
               const T *wr, const T *wi, int64_t ws, T sg) {
  const T c1 = (T)0.30901699437494742410, c2 = (T)-0.80901699437494742410;
  const T s1 = sg * (T)0.95105651629515357212, s2 = sg * (T)0.58778525229247312917;
  TWIDDLE(1);
  TWIDDLE(2);
  TWIDDLE(3);
  TWIDDLE(4);
  T u1r = t1r + t4r, u1i = t1i + t4i, u2r = t2r + t3r, u2i = t2i + t3i;
  T u3r = t1r - t4r, u3i = t1i - t4i, u4r = t2r - t3r, u4i = t2i - t3i;
  T a1r = xr[0] + c1 * u1r + c2 * u2r, a1i = xi[0] + c1 * u1i + c2 * u2i;
  T a2r = xr[0] + c2 * u1r + c1 * u2r, a2i = xi[0] + c2 * u1i + c1 * u2i;
  T b1r = s1 * u3r + s2 * u4r, b1i = s1 * u3i + s2 * u4i;
  T b2r = s2 * u3r - s1 * u4r, b2i = s2 * u3i - s1 * u4i;
  yr[0] = xr[0] + u1r + u2r, yi[0] = xi[0] + u1i + u2i;
  yr[ys] = a1r - b1i, yi[ys] = a1i + b1r;
  yr[4 * ys] = a1r + b1i, yi[4 * ys] = a1i - b1r;
  yr[2 * ys] = a2r - b2i, yi[2 * ys] = a2i + b2r;
  yr[3 * ys] = a2r + b2i, yi[3 * ys] = a2i - b2r;
}

/* an odd prime up to HL_FFT_MAX_RADIX: the p-point DFT by its definition, with the p-th roots of
 * unity pr, pi */
static void FN(bfly_odd)(int p, const T *pr, const T *pi, const T *restrict xr, const T *restrict xi, int64_t xs,
                         T *restrict yr, T *restrict yi, int64_t ys, const T *wr, const T *wi, int64_t ws) {
  T vr[HL_FFT_MAX_RADIX], vi[HL_FFT_MAX_RADIX];
  vr[0] = xr[0], vi[0] = xi[0];
  for (int q = 1; q < p; q++) {
    T x_r = xr[q * xs], x_i = xi[q * xs], w_r = wr[(q - 1) * ws], w_i = wi[(q - 1) * ws];
    vr[q] = x_r * w_r - x_i * w_i, vi[q] = x_r * w_i + x_i * w_r;
  }
  for (int u = 0; u < p; u++) {
    T sr = vr[0], si = vi[0];
    for (int q = 1, e = u; q < p; q++, e = e + u >= p ? e + u - p : e + u) {
      sr += vr[q] * pr[e] - vi[q] * pi[e];
      si += vr[q] * pi[e] + vi[q] * pr[e];
    }
    yr[u * ys] = sr, yi[u * ys] = si;
  }
}

/* Stage s of a Stockham plan, a -> b. Before it the data holds n / L transforms of length L
 * (transform t's frequency j at t + (n / L) j); the stage combines p of them into transforms of
 * length p L: with mm = n / (p L), b[t + mm (j + L u)] = sum_q w^(u q) W^(j q) a[t + mm q + p mm j]
 * for t < mm, j < L, u < p, w a p-th and W a (p L)-th root of unity (the twiddle W^(j q) at
 * (q - 1) L + j). The inner loop runs over t while the stride mm is long (early stages) and over j
 * once it is short (late ones), so that either way it is long and its twiddles or data contiguous
 * enough for the compiler to vectorise. */
#define STAGE_LOOPS(CALL)                                                                            \
  do {                                                                                               \
    if (mm >= 8 || mm >= L) {                                                                        \
      for (int64_t j = 0; j < L; j++)                                                                \
        for (int64_t t = 0; t < mm; t++) CALL;                                                       \
    } else {                                                                                         \
      for (int64_t t = 0; t < mm; t++)                                                               \
        for (int64_t j = 0; j < L; j++) CALL;                                                        \
    }                                                                                                \
  } while (0)
#define AT ar + p * mm * j + t, ai + p * mm * j + t, mm, br + mm * j + t, bi + mm * j + t, ostride, twr + j, twi + j, L

static void FN(stage)(const plan *pl, int s, const T *restrict ar, const T *restrict ai, T *restrict br, T *restrict bi) {
  const int p = pl->radix[s];
  const int64_t L = pl->L[s], mm = pl->n / (L * p), ostride = mm * L;
  const T *twr = pl->tw[s], *twi = twr + (int64_t)(p - 1) * L;
  const T sg = (T)pl->sign;
  switch (p) {
  case 2: STAGE_LOOPS(FN(bfly2)(AT, sg)); break;
  case 3: STAGE_LOOPS(FN(bfly3)(AT, sg)); break;
  case 4: STAGE_LOOPS(FN(bfly4)(AT, sg)); break;
  case 5: STAGE_LOOPS(FN(bfly5)(AT, sg)); break;
  default: {
    const T *pr = pl->wp[s], *pi = pr + p;
    STAGE_LOOPS(FN(bfly_odd)(p, pr, pi, AT));
    break;
  }
  }
}
#undef AT
#undef STAGE_LOOPS
#undef TWIDDLE
#undef BFLY

/* Runs the stages, ping-ponging between (ar, ai) and (br, bi); returns 1 when the result ended
 * in b, else 0. */
static int FN(stockham)(const plan *pl, T *ar, T *ai, T *br, T *bi) {
  for (int s = 0; s < pl->nst; s++) {
    FN(stage)(pl, s, ar, ai, br, bi);
    T *tr = ar, *ti = ai;
    ar = br, ai = bi, br = tr, bi = ti;
  }
  return pl->nst & 1;
}

/* The transform of (r, i) (n values) into (r, i); (sr, si) is scratch. Both hold pl's buffer
 * length (fft_buffer_len). Bluestein's: X[k] = c[k] sum_j (x[j] c[j]) conj(c[k - j]) with the chirp
 * c[j] = exp(-+ pi i j^2 / n): the sum is a cyclic convolution of length m >= 2n - 1 done by
 * power-of-two transforms, the inverse one as conj(fft(conj(.))). */
static void FN(transform)(const plan *pl, T *r, T *i, T *sr, T *si) {
  if (!pl->sub) {
    if (FN(stockham)(pl, r, i, sr, si)) {
      memcpy(r, sr, sizeof(T) * (size_t)pl->n);
      memcpy(i, si, sizeof(T) * (size_t)pl->n);
    }
    return;
  }
  const int64_t n = pl->n, m = pl->m;
  const T *cr = pl->chirp, *ci = cr + n, *hr = pl->bhat, *hi = hr + m;
  for (int64_t j = 0; j < n; j++) {
    T xr = r[j], xi = i[j];
    sr[j] = xr * cr[j] - xi * ci[j], si[j] = xr * ci[j] + xi * cr[j];
  }
  memset(sr + n, 0, sizeof(T) * (size_t)(m - n));
  memset(si + n, 0, sizeof(T) * (size_t)(m - n));
  T *ar = sr, *ai = si, *br = r, *bi = i;
  if (FN(stockham)(pl->sub, ar, ai, br, bi)) ar = r, ai = i, br = sr, bi = si;
  for (int64_t k = 0; k < m; k++) {   /* times the chirp's transform, conjugated */
    T xr = ar[k], xi = ai[k];
    ar[k] = xr * hr[k] - xi * hi[k], ai[k] = -(xr * hi[k] + xi * hr[k]);
  }
  if (FN(stockham)(pl->sub, ar, ai, br, bi)) ar = br, ai = bi;
  for (int64_t k = 0; k < n; k++) {   /* conjugated back, times the chirp */
    T xr = ar[k], xi = -ai[k];
    r[k] = xr * cr[k] - xi * ci[k], i[k] = xr * ci[k] + xi * cr[k];
  }
}

/* The lanes [lo, hi) of a job: each gathered from x, transformed, the asked part written out. */
static void FN(lanes)(const job *jb, int64_t lo, int64_t hi, T *r, T *i, T *sr, T *si) {
  const hl_array *x = jb->x, *o = jb->out;
  const int64_t n = jb->pl->n, m = o->shape[jb->axis], np = o->shape[o->ndim - 1];
  const int64_t sx = x->strides[jb->axis], px = x->strides[x->ndim - 1];
  const int64_t so = o->strides[jb->axis], po = o->strides[o->ndim - 1];
  for (int64_t lane = lo; lane < hi; lane++) {
    int64_t ox, oo;
    lane_offsets(jb, lane, &ox, &oo);
    const T *src = (const T *)x->storage->data + ox;
    for (int64_t j = 0; j < n; j++) r[j] = src[j * sx], i[j] = src[j * sx + px];
    FN(transform)(jb->pl, r, i, sr, si);
    T *dst = (T *)o->storage->data + oo;
    for (int64_t k = 0; k < m; k++)
      for (int64_t q = 0; q < np; q++) dst[k * so + q * po] = (jb->pstart + q ? i : r)[jb->start + k];
  }
}

/* The lanes [lo, hi) of a real job. An even length n is a complex transform of m = n / 2: with
 * z[k] = x[2k] + i x[2k+1] and Z its transform, the even- and odd-indexed values' transforms are
 * E = (Z[k] + conj(Z[m - k])) / 2 and O = (Z[k] - conj(Z[m - k])) / 2i, and X[k] = E + W^k O with
 * W = exp(-2 pi i / n). An odd length is transformed as complex values with zero imaginary parts. */
static void FN(lanes_real)(const job *jb, int64_t lo, int64_t hi, T *r, T *i, T *sr, T *si) {
  const hl_array *x = jb->x, *o = jb->out;
  const int64_t n = jb->n, cnt = o->shape[jb->axis], np = o->shape[o->ndim - 1];
  const int64_t sx = x->strides[jb->axis], so = o->strides[jb->axis], po = o->strides[o->ndim - 1];
  const int64_t m = n / 2;
  const T *wr = jb->half, *wi = wr ? wr + m + 1 : NULL;
  for (int64_t lane = lo; lane < hi; lane++) {
    int64_t ox, oo;
    lane_offsets(jb, lane, &ox, &oo);
    const T *src = (const T *)x->storage->data + ox;
    T *dst = (T *)o->storage->data + oo;
    if (!wr) {
      for (int64_t j = 0; j < n; j++) r[j] = src[j * sx], i[j] = 0;
      FN(transform)(jb->pl, r, i, sr, si);
      for (int64_t k = 0; k < cnt; k++)
        for (int64_t q = 0; q < np; q++) dst[k * so + q * po] = (jb->pstart + q ? i : r)[jb->start + k];
      continue;
    }
    for (int64_t k = 0; k < m; k++) r[k] = src[2 * k * sx], i[k] = src[(2 * k + 1) * sx];
    FN(transform)(jb->pl, r, i, sr, si);
    for (int64_t c = 0; c < cnt; c++) {
      int64_t k = jb->start + c, a = k == m ? 0 : k, b = k == 0 ? 0 : m - k;
      T zr = r[a], zi = i[a], cr = r[b], ci = -i[b];   /* Z[k] and conj(Z[m - k]) */
      T er = (zr + cr) / 2, ei = (zi + ci) / 2, dr = (zr - cr) / 2, di = (zi - ci) / 2;
      /* O = D / i = (di, -dr); X = E + W^k O */
      T xr = er + wr[k] * di + wi[k] * dr, xi = ei + wi[k] * di - wr[k] * dr;
      for (int64_t q = 0; q < np; q++) dst[c * so + q * po] = jb->pstart + q ? xi : xr;
    }
  }
}

/* The lanes [lo, hi) of an inverse real job: X (n / 2 + 1 pairs) extended by conjugates, its
 * imaginary parts at 0 and n / 2 dropped. An even n = 2m is a complex transform of m: with
 * A = X[k], B = conj(X[m - k]) = X[k + m] (the extension), the even-indexed outputs are the
 * transform of A + B and the odd-indexed ones of (A - B) W^k, W = exp(2 pi i / n), so one transform
 * of (A + B) + i (A - B) W^k gives them as its real and imaginary parts. */
static void FN(lanes_real_inverse)(const job *jb, int64_t lo, int64_t hi, T *r, T *i, T *sr, T *si) {
  const hl_array *x = jb->x, *o = jb->out;
  const int64_t n = jb->n, cnt = o->shape[jb->axis], h = n / 2 + 1;
  const int64_t sx = x->strides[jb->axis], px = x->strides[x->ndim - 1], so = o->strides[jb->axis];
  const int64_t m = n / 2;
  const T *wr = jb->half, *wi = wr ? wr + m + 1 : NULL;
  for (int64_t lane = lo; lane < hi; lane++) {
    int64_t ox, oo;
    lane_offsets(jb, lane, &ox, &oo);
    const T *src = (const T *)x->storage->data + ox;
    T *dst = (T *)o->storage->data + oo;
    if (!wr) {
      r[0] = src[0], i[0] = 0;
      for (int64_t k = 1; k < h; k++) {
        r[k] = src[k * sx], i[k] = src[k * sx + px];
        r[n - k] = r[k], i[n - k] = -i[k];
      }
      FN(transform)(jb->pl, r, i, sr, si);
      for (int64_t c = 0; c < cnt; c++) dst[c * so] = r[jb->start + c];
      continue;
    }
    for (int64_t k = 0; k < m; k++) {
      T ar = src[k * sx], ai = k ? src[k * sx + px] : 0;
      T br = src[(m - k) * sx], bi = k ? -src[(m - k) * sx + px] : 0;
      T er = ar + br, ei = ai + bi, dr = ar - br, di = ai - bi;
      T fr = dr * wr[k] - di * wi[k], fi = dr * wi[k] + di * wr[k];   /* (A - B) W^k */
      r[k] = er - fi, i[k] = ei + fr;                                  /* E + i F */
    }
    FN(transform)(jb->pl, r, i, sr, si);
    for (int64_t c = 0; c < cnt; c++) {
      int64_t j = jb->start + c;
      dst[c * so] = (j & 1 ? i : r)[j / 2];
    }
  }
}
