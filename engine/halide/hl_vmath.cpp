#include "hl_vmath.h"
#include <cmath>

using namespace Halide;

namespace {

Expr f32(double v) { return Expr((float)v); }
Expr u32(uint64_t v) { return Internal::make_const(UInt(32), v); }

/* Horner's rule, highest coefficient first */
Expr poly(Expr x, std::initializer_list<double> c) {
  Expr r;
  for (double k : c) r = r.defined() ? r * x + f32(k) : f32(k);
  return r;
}

Expr bits(Expr x) { return reinterpret(UInt(32), x); }
Expr from_bits(Expr b) { return reinterpret(Float(32), b); }
Expr copysign(Expr mag, Expr sgn) {
  return from_bits((bits(mag) & u32(0x7fffffff)) | (bits(sgn) & u32(0x80000000)));
}
Expr fabs(Expr x) { return from_bits(bits(x) & u32(0x7fffffff)); }
/* NaN/inf tests on the bits: pipelines compile with LLVM's no-NaNs/no-infs flags, under which
 * float comparisons against NaN or inf may be folded away */
Expr isnan_b(Expr x) { return (bits(x) & u32(0x7fffffff)) > u32(0x7f800000); }
Expr isinf_b(Expr x) { return (bits(x) & u32(0x7fffffff)) == u32(0x7f800000); }
Expr isfinite_b(Expr x) { return (bits(x) & u32(0x7f800000)) != u32(0x7f800000); }
const Expr kInf = f32(INFINITY), kNaN = Expr(std::nanf(""));

/* Pipelines compile with fast-math (FMA contraction is half of matmul's speed), which lets LLVM
 * reassociate: the compensated steps below are wrapped in strict_float to keep them IEEE. */

/* y 2^k for integer k in [-149, 128]: two in-range powers, applied one after the other so that
 * neither the scale nor an intermediate overflows before the final result does */
Expr scale2(Expr y, Expr k) {
  Expr k1 = k / 2, k2 = k - k1;
  auto p = [](Expr e) { return from_bits(cast(UInt(32), e + 127) << u32(23)); };
  return strict_float((y * p(k1)) * p(k2));
}

/* e^r for |r| <= ln2/2: Taylor to degree 7 (remainder < 6e-9) */
Expr exp_reduced(Expr r) {
  return poly(r, {1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0, 1.0});
}

}  // namespace

Expr hl_vmath_exp(Expr x) {
  /* x = k ln2 + r, ln2 split in two (Cody-Waite) so k ln2_hi is exact */
  Expr xc = clamp(x, f32(-104.0), f32(89.0));
  Expr k = clamp(cast(Int(32), round(xc * f32(1.4426950408889634))), -149, 128);
  Expr kf = cast(Float(32), k);
  Expr r = strict_float((xc - kf * f32(0.693145751953125)) - kf * f32(1.428606765330187e-06));
  Expr y = scale2(exp_reduced(r), k);
  return select(isnan_b(x), x, x > f32(88.72283935546875), kInf, x < f32(-103.97208), f32(0), y);
}

Expr hl_vmath_expm1(Expr x) {
  /* near 0, a Taylor series of e^x - 1 (degree 8, |x| < 0.5); elsewhere exp(x) - 1 has no
   * cancellation worth the name */
  Expr small = x * poly(x, {1.0 / 362880, 1.0 / 40320, 1.0 / 5040, 1.0 / 720, 1.0 / 120, 1.0 / 24, 1.0 / 6, 0.5, 1.0});
  return select(fabs(x) < f32(0.5), small, hl_vmath_exp(x) - f32(1));
}

Expr hl_vmath_log(Expr x) {
  /* x = 2^e m with m in [sqrt(1/2), sqrt(2)); log(m) = 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172 */
  Expr denormal = x < f32(1.17549435e-38);
  Expr xs = select(denormal, x * f32(8388608.0), x);   /* 2^23 */
  Expr b = bits(xs);
  Expr e = cast(Int(32), b >> u32(23)) - 127;
  Expr m = from_bits((b & u32(0x007fffff)) | u32(0x3f800000));   /* [1, 2) */
  Expr big = m > f32(1.41421356);
  m = select(big, m * f32(0.5), m);
  e = select(big, e + 1, e) - select(denormal, 23, 0);
  Expr f = m - f32(1);
  Expr s = f / (f32(2) + f);
  Expr s2 = s * s;
  Expr lm = f32(2) * s * poly(s2, {1.0 / 11, 1.0 / 9, 1.0 / 7, 1.0 / 5, 1.0 / 3, 1.0});
  Expr ef = cast(Float(32), e);
  Expr y = strict_float(ef * f32(0.693145751953125) + (lm + ef * f32(1.428606765330187e-06)));
  return select(isnan_b(x) || x < f32(0), kNaN, x == f32(0), -kInf, isinf_b(x), x, y);
}

Expr hl_vmath_log1p(Expr x) {
  /* u = 1 + x rounds; log(u) - ((u - 1) - x) / u restores what the rounding lost */
  Expr u = strict_float(f32(1) + x);
  Expr y = hl_vmath_log(u) - strict_float((u - f32(1)) - x) / u;
  return select(strict_float(u == f32(1)), x, isinf_b(x) && x > f32(0), x, x == f32(-1), -kInf,
                x < f32(-1), kNaN, y);
}

Expr hl_vmath_tanh(Expr x) {
  /* tanh|x| = e / (e + 2) with e = expm1(2|x|): accurate near 0; 1 beyond 9.1 */
  Expr a = fabs(x);
  Expr e = hl_vmath_expm1(f32(2) * a);
  Expr t = select(a > f32(9.1), f32(1), e / (e + f32(2)));
  return select(isnan_b(x), x, copysign(t, x));
}

/* e^a / 2 for large a */
static Expr half_exp_squared(Expr a) {
  Expr h = hl_vmath_exp(a * f32(0.5));
  return strict_float((h * f32(0.5)) * h);
}

Expr hl_vmath_sinh(Expr x) {
  /* sinh|x| = (e + e/(e+1)) / 2 with e = expm1|x| (accurate near 0); near overflow, e^|x| / 2
   * as (e^(|x|/2) / 2) e^(|x|/2), which does not overflow early */
  Expr a = fabs(x);
  Expr e = hl_vmath_expm1(a);
  Expr s = select(a > f32(88.0), half_exp_squared(a), f32(0.5) * (e + e / (e + f32(1))));
  return select(isnan_b(x), x, copysign(s, x));
}

Expr hl_vmath_cosh(Expr x) {
  Expr a = fabs(x);
  Expr e = hl_vmath_exp(a);
  Expr c = select(a > f32(88.0), half_exp_squared(a), f32(0.5) * (e + f32(1) / e));
  return select(isnan_b(x), x, c);
}

namespace {

/* x = k pi/2 + r in double, then quadrant k mod 4. Exact for |x| < 2^24; beyond, the second
 * step keeps r in [-pi/4, pi/4] so results stay in range, but they are not accurate (that needs
 * a Payne-Hanek reduction). */
void reduce_half_pi(Expr x, Expr &r, Expr &q) {
  Expr xd = cast(Float(64), x);
  auto d = [](double v) { return Internal::make_const(Float(64), v); };
  Expr k = round(xd * d(0.6366197723675814));
  Expr rd = strict_float((xd - k * d(1.5707963267948966)) - k * d(6.123233995736766e-17));
  Expr k2 = round(rd * d(0.6366197723675814));
  rd = strict_float(rd - k2 * d(1.5707963267948966));
  r = cast(Float(32), rd);
  Expr kk = select(abs(k) < d(9.0e15), k, d(0)) + k2;
  q = cast(Int(32), cast(Int(64), kk) & (int64_t)3);
}

/* sin and cos on [-pi/4, pi/4]: Taylor series to degree 11 and 12 */
Expr sin_kernel(Expr r) {
  Expr r2 = r * r;
  return r + r * r2 * poly(r2, {-1.0 / 39916800, 1.0 / 362880, -1.0 / 5040, 1.0 / 120, -1.0 / 6});
}
Expr cos_kernel(Expr r) {
  Expr r2 = r * r;
  return poly(r2, {1.0 / 479001600, -1.0 / 3628800, 1.0 / 40320, -1.0 / 720, 1.0 / 24, -0.5, 1.0});
}

}  // namespace

Expr hl_vmath_sin(Expr x) {
  Expr r, q;
  reduce_half_pi(x, r, q);
  Expr s = sin_kernel(r), c = cos_kernel(r);
  Expr y = select(q == 0, s, q == 1, c, q == 2, -s, -c);
  return select(isfinite_b(x), y, kNaN);
}

Expr hl_vmath_cos(Expr x) {
  Expr r, q;
  reduce_half_pi(x, r, q);
  Expr s = sin_kernel(r), c = cos_kernel(r);
  Expr y = select(q == 0, c, q == 1, -s, q == 2, -c, s);
  return select(isfinite_b(x), y, kNaN);
}

Expr hl_vmath_tan(Expr x) {
  Expr r, q;
  reduce_half_pi(x, r, q);
  Expr s = sin_kernel(r), c = cos_kernel(r);
  Expr y = select((q & 1) == 0, s / c, -c / s);
  return select(isfinite_b(x), y, kNaN);
}

Expr hl_vmath_atan(Expr x) {
  /* |x| > 1: pi/2 - atan(1/|x|); then t > tan(pi/8): pi/4 + atan((t-1)/(t+1)); the rest is an
   * odd Taylor series on [0, 0.4143] to degree 19 */
  Expr a = fabs(x);
  Expr inv = a > f32(1);
  Expr t = select(inv, f32(1) / a, a);
  Expr mid = t > f32(0.41421356);
  Expr u = select(mid, (t - f32(1)) / (t + f32(1)), t);
  Expr u2 = u * u;
  Expr p = u + u * u2 * poly(u2, {-1.0 / 19, 1.0 / 17, -1.0 / 15, 1.0 / 13, -1.0 / 11, 1.0 / 9, -1.0 / 7, 1.0 / 5, -1.0 / 3});
  p = select(mid, f32(0.7853981633974483) + p, p);
  p = select(inv, f32(1.5707963267948966) - p, p);
  return select(isnan_b(x), x, copysign(p, x));
}

Expr hl_vmath_atan2(Expr y, Expr x) {
  /* atan(y/x) moved into the right quadrant; zeros and infinities as C99 says */
  Expr ay = fabs(y), ax = fabs(x);
  Expr both_inf = isinf_b(x) && isinf_b(y);
  Expr base = select(both_inf, f32(0.7853981633974483), ax == f32(0) && ay == f32(0), f32(0),
                     hl_vmath_atan(ay / ax));   /* in [0, pi/2] */
  Expr neg_x = (bits(x) & u32(0x80000000)) != u32(0);
  Expr ang = select(neg_x, f32(3.141592653589793) - base, base);
  return select(isnan_b(x) || isnan_b(y), kNaN, copysign(ang, y));
}

Expr hl_vmath_asin(Expr x) {
  Expr a = fabs(x);
  Expr y = hl_vmath_atan2(a, sqrt((f32(1) - a) * (f32(1) + a)));
  return select(isnan_b(x) || a > f32(1), kNaN, copysign(y, x));
}

Expr hl_vmath_acos(Expr x) {
  Expr y = hl_vmath_atan2(sqrt((f32(1) - x) * (f32(1) + x)), x);
  return select(isnan_b(x) || fabs(x) > f32(1), kNaN, y);
}

Expr hl_vmath_pow(Expr x, Expr y) {
  /* |x|^y = exp(y log|x|) in double (so large y keep their digits), then C99's special cases */
  Expr ax = fabs(x);
  Expr l = cast(Float(64), hl_vmath_log(ax));
  Expr mag = hl_vmath_exp(cast(Float(32), cast(Float(64), y) * l));
  Expr y_int = floor(y) == y && isfinite_b(y);
  Expr y_odd = y_int && fabs(y) < f32(16777216.0) && (cast(Int(32), fabs(y)) & 1) == 1;
  Expr x_neg = (bits(x) & u32(0x80000000)) != u32(0);
  Expr r = select(x_neg && y_odd, -mag, mag);
  r = select(x_neg && !y_int && ax != f32(0) && !isinf_b(x), kNaN, r);
  /* zeros and infinities of x */
  Expr zero_x = ax == f32(0);
  Expr zr = select(y < f32(0), kInf, f32(0));
  r = select(zero_x, select(y_odd, copysign(zr, x), zr), r);
  Expr inf_x = isinf_b(x);
  Expr ir = select(y < f32(0), f32(0), kInf);
  r = select(inf_x, select(x_neg && y_odd, -ir, ir), r);
  /* infinite y */
  Expr yinf = isinf_b(y);
  Expr yr = select(ax == f32(1), f32(1), (ax > f32(1)) == (y > f32(0)), kInf, f32(0));
  r = select(yinf, yr, r);
  /* NaNs, except the two cases C99 pins to 1 */
  r = select(isnan_b(x) || isnan_b(y), kNaN, r);
  return select(y == f32(0) || x == f32(1), f32(1), r);
}

Expr hl_vmath_erf(Expr x) {
  /* Halide's erf is polynomial (vectorises) and accurate to a few ulp; it needs finite input
   * (erf is +-1 in float32 past |x| = 4); NaN passes through */
  return select(isnan_b(x), x, Halide::erf(clamp(x, f32(-10), f32(10))));
}
