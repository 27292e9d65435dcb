/* The FFT's kernels for one element type: hl_fft.c includes this file once with T float and once
 * with T double (FN(name) gives each its own names), so both share one text.
 * Complex values are held split: real parts in one array, imaginary parts in another, so the
 * butterflies' inner loops run over contiguous memory and the compiler vectorises them. */

/* Stage s of a Stockham plan, a -> b. Before it the data holds n / L transforms of length L
 * (transform t's frequency j at t + (n / L) j); the stage combines p of them into transforms of
 * length p L: with mm = n / (p L), b[t + mm (j + L u)] = sum_q w^(u q) W^(j q) a[t + mm q + p mm j]
 * for t < mm, j < L, u < p, w a p-th and W a (p L)-th root of unity. */
static void FN(stage)(const plan *pl, int s, const T *restrict ar, const T *restrict ai, T *restrict br, T *restrict bi) {
  const int p = pl->radix[s];
  const int64_t L = pl->L[s], mm = pl->n / (L * p), ostride = mm * L;
  const T *twr = pl->tw[s], *twi = twr + (int64_t)(p - 1) * L;
  const T sg = (T)pl->sign;
  for (int64_t j = 0; j < L; j++) {
    const T *wr = twr + j * (p - 1), *wi = twi + j * (p - 1);
    const T *xr = ar + p * mm * j, *xi = ai + p * mm * j;
    T *yr = br + mm * j, *yi = bi + mm * j;
    switch (p) {
    case 2: {
      const T w1r = wr[0], w1i = wi[0];
      for (int64_t t = 0; t < mm; t++) {
        T x1r = xr[mm + t], x1i = xi[mm + t];
        T t1r = x1r * w1r - x1i * w1i, t1i = x1r * w1i + x1i * w1r;
        yr[t] = xr[t] + t1r, yi[t] = xi[t] + t1i;
        yr[ostride + t] = xr[t] - t1r, yi[ostride + t] = xi[t] - t1i;
      }
      break;
    }
    case 3: {
      const T w1r = wr[0], w1i = wi[0], w2r = wr[1], w2i = wi[1], c = sg * (T)0.86602540378443864676;
      for (int64_t t = 0; t < mm; t++) {
        T x1r = xr[mm + t], x1i = xi[mm + t], x2r = xr[2 * mm + t], x2i = xi[2 * mm + t];
        T t1r = x1r * w1r - x1i * w1i, t1i = x1r * w1i + x1i * w1r;
        T t2r = x2r * w2r - x2i * w2i, t2i = x2r * w2i + x2i * w2r;
        T sr = t1r + t2r, si = t1i + t2i, dr = t1r - t2r, di = t1i - t2i;
        T mr = xr[t] - sr / 2, mi = xi[t] - si / 2;
        yr[t] = xr[t] + sr, yi[t] = xi[t] + si;
        yr[ostride + t] = mr - c * di, yi[ostride + t] = mi + c * dr;
        yr[2 * ostride + t] = mr + c * di, yi[2 * ostride + t] = mi - c * dr;
      }
      break;
    }
    case 4: {
      const T w1r = wr[0], w1i = wi[0], w2r = wr[1], w2i = wi[1], w3r = wr[2], w3i = wi[2];
      for (int64_t t = 0; t < mm; t++) {
        T x1r = xr[mm + t], x1i = xi[mm + t], x2r = xr[2 * mm + t], x2i = xi[2 * mm + t];
        T x3r = xr[3 * mm + t], x3i = xi[3 * mm + t];
        T t1r = x1r * w1r - x1i * w1i, t1i = x1r * w1i + x1i * w1r;
        T t2r = x2r * w2r - x2i * w2i, t2i = x2r * w2i + x2i * w2r;
        T t3r = x3r * w3r - x3i * w3i, t3i = x3r * w3i + x3i * w3r;
        T a_r = xr[t] + t2r, a_i = xi[t] + t2i, b_r = xr[t] - t2r, b_i = xi[t] - t2i;
        T c_r = t1r + t3r, c_i = t1i + t3i, d_r = t1r - t3r, d_i = t1i - t3i;
        yr[t] = a_r + c_r, yi[t] = a_i + c_i;
        yr[2 * ostride + t] = a_r - c_r, yi[2 * ostride + t] = a_i - c_i;
        /* w = sg i: multiplying by it turns (re, im) into (-sg im, sg re) */
        yr[ostride + t] = b_r - sg * d_i, yi[ostride + t] = b_i + sg * d_r;
        yr[3 * ostride + t] = b_r + sg * d_i, yi[3 * ostride + t] = b_i - sg * d_r;
      }
      break;
    }
    case 5: {
      /* y1 and y4 (y2 and y3) share their real-cosine part a and differ in the sign of i b */
      const T c1 = (T)0.30901699437494742410, c2 = (T)-0.80901699437494742410;
      const T s1 = sg * (T)0.95105651629515357212, s2 = sg * (T)0.58778525229247312917;
      for (int64_t t = 0; t < mm; t++) {
        T vr[5], vi[5];
        vr[0] = xr[t], vi[0] = xi[t];
        for (int q = 1; q < 5; q++) {
          T x_r = xr[q * mm + t], x_i = xi[q * mm + t];
          vr[q] = x_r * wr[q - 1] - x_i * wi[q - 1], vi[q] = x_r * wi[q - 1] + x_i * wr[q - 1];
        }
        T t1r = vr[1] + vr[4], t1i = vi[1] + vi[4], t2r = vr[2] + vr[3], t2i = vi[2] + vi[3];
        T t3r = vr[1] - vr[4], t3i = vi[1] - vi[4], t4r = vr[2] - vr[3], t4i = vi[2] - vi[3];
        T a1r = vr[0] + c1 * t1r + c2 * t2r, a1i = vi[0] + c1 * t1i + c2 * t2i;
        T a2r = vr[0] + c2 * t1r + c1 * t2r, a2i = vi[0] + c2 * t1i + c1 * t2i;
        T b1r = s1 * t3r + s2 * t4r, b1i = s1 * t3i + s2 * t4i;
        T b2r = s2 * t3r - s1 * t4r, b2i = s2 * t3i - s1 * t4i;
        yr[t] = vr[0] + t1r + t2r, yi[t] = vi[0] + t1i + t2i;
        yr[ostride + t] = a1r - b1i, yi[ostride + t] = a1i + b1r;
        yr[4 * ostride + t] = a1r + b1i, yi[4 * ostride + t] = a1i - b1r;
        yr[2 * ostride + t] = a2r - b2i, yi[2 * ostride + t] = a2i + b2r;
        yr[3 * ostride + t] = a2r + b2i, yi[3 * ostride + t] = a2i - b2r;
      }
      break;
    }
    default: {   /* an odd prime up to HL_FFT_MAX_RADIX: the p-point DFT by its definition */
      const T *pr = pl->wp[s], *pi = pr + p;
      T vr[HL_FFT_MAX_RADIX], vi[HL_FFT_MAX_RADIX];
      for (int64_t t = 0; t < mm; t++) {
        vr[0] = xr[t], vi[0] = xi[t];
        for (int q = 1; q < p; q++) {
          T x_r = xr[q * mm + t], x_i = xi[q * mm + t];
          vr[q] = x_r * wr[q - 1] - x_i * wi[q - 1], vi[q] = x_r * wi[q - 1] + x_i * wr[q - 1];
        }
        for (int u = 0; u < p; u++) {
          T sr = vr[0], si = vi[0];
          for (int q = 1, e = u; q < p; q++, e = e + u >= p ? e + u - p : e + u) {
            sr += vr[q] * pr[e] - vi[q] * pi[e];
            si += vr[q] * pi[e] + vi[q] * pr[e];
          }
          yr[u * ostride + t] = sr, yi[u * ostride + t] = si;
        }
      }
      break;
    }
    }
  }
}

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
