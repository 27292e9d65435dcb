/* Vectorisable float32 elementary functions as Halide Exprs (see hl_vmath.h).
 *
 * Every function is range reduction + a polynomial + exponent-bit manipulation, so a lane never
 * calls libm. The polynomial coefficients were fitted for this file (weighted minimax by Lawson's
 * iteration over Chebyshev nodes, targets from mpmath at 40 digits; each coefficient rounded to
 * float32 and the higher ones refitted); each comment gives the interval, the degree and the fit's
 * own relative error. Measured accuracy against glibc is checked by tests/c/vmath_check.cpp.
 *
 * Fast-math: Halide compiles with LLVM's reassociation, contraction, no-NaNs and no-infs flags, and
 * its own simplifier reassociates floats too (it rewrote x + x*y as x*(y + 1), and (m - 1) + t as
 * (t + m) - 1, costing up to 2000 ulp). strict_float would stop that, but Halide 14 then marks
 * the whole pipeline StrictFloat (no FMA anywhere, e.g. in a fused matmul). Instead:
 *  - NaN/inf/zero tests look at the bits (float compares against NaN may be folded away);
 *  - every step whose rounding must not be regrouped (the small term added last to a
 *    polynomial, the split ln2 and pi constants, the two-step scaling by 2^k, rounding-error
 *    terms) goes through barrier(), which neither simplifier sees through (a select does not
 *    do: Halide moves arithmetic into select arms);
 *  - pow's log and the trig reduction are done in double, with bits to spare. */
#include "hl_vmath.h"
#include <cmath>

using namespace Halide;

namespace {

Expr f32(double v) { return Expr((float)v); }
Expr f64(double v) { return Internal::make_const(Float(64), v); }
Expr u32(uint64_t v) { return Internal::make_const(UInt(32), v); }

/* Horner's rule, highest coefficient first (contracts to FMAs) */
Expr poly(Expr x, std::initializer_list<double> c) {
  Expr r;
  for (double k : c) r = r.defined() ? r * x + f32(k) : f32(k);
  return r;
}
Expr poly64(Expr x, std::initializer_list<double> c) {
  Expr r;
  for (double k : c) r = r.defined() ? r * x + f64(k) : f64(k);
  return r;
}

Expr bits(Expr x) { return reinterpret(UInt(32), x); }
Expr from_bits(Expr b) { return reinterpret(Float(32), b); }
Expr fabs_(Expr x) { return from_bits(bits(x) & u32(0x7fffffff)); }
Expr copysign_(Expr mag, Expr sgn) { return from_bits(bits(fabs_(mag)) | (bits(sgn) & u32(0x80000000))); }
Expr sign_bit(Expr x) { return (bits(x) & u32(0x80000000)) != u32(0); }
Expr isnan_b(Expr x) { return (bits(x) & u32(0x7fffffff)) > u32(0x7f800000); }
Expr isinf_b(Expr x) { return (bits(x) & u32(0x7fffffff)) == u32(0x7f800000); }
Expr isfinite_b(Expr x) { return (bits(x) & u32(0x7f800000)) != u32(0x7f800000); }
Expr iszero_b(Expr x) { return (bits(x) & u32(0x7fffffff)) == u32(0); }
const Expr kInf = f32(INFINITY), kNaN = Expr(std::nanf(""));

/* v, kept as one value (see the top of the file): its bits are xor-ed with a 0 that neither
 * Halide nor LLVM can prove is 0: it is 1 for one NaN payload of guard (a function's input,
 * whose result is then NaN anyway). The payload sits mid-range, so that bounds known on guard's
 * bits (e.g. a cleared sign) do not decide the compare. */
Expr barrier(Expr v, Expr guard) {
  Type u = UInt(v.type().bits());
  Expr odd = cast(u, bits(guard) == u32(0x7fc0ffee));
  return reinterpret(v.type(), reinterpret(u, v) ^ odd);
}

/* 2^k for integer k in [-126, 127] */
Expr pow2i(Expr k) { return from_bits(cast(UInt(32), k + 127) << u32(23)); }

/* y 2^k for k in [-160, 160]: two in-range factors applied one after the other, so neither the
 * scale nor the intermediate overflows or goes denormal before the final product does (which
 * then rounds once, also into the denormals) */
Expr scale2(Expr y, Expr k, Expr guard) {
  Expr k1 = k >> 1, k2 = k - k1;
  return barrier(y * pow2i(k1), guard) * pow2i(k2);
}

/* expm1 on |r| <= ln2/2 (+0.2%): r + r^2 Q(r), degree 7, fit error 4.4e-10 relative */
Expr expm1_poly(Expr r, Expr guard) {
  return r + barrier(r * r *
                         poly(r, {0.00019764357421081513, 0.0013932365691289306, 0.008333543315529823,
                                  0.04166649281978607, 0.1666666567325592, 0.5}),
                     guard);
}

/* x = k ln2 + r, |r| <= ln2/2 (Cody-Waite: ln2_hi has 16 significant bits, so k ln2_hi is exact
 * for |k| < 2^8 and x - k ln2_hi is exact by Sterbenz); p = e^r - 1. For |x| <= ~110. */
void exp_reduce(Expr x, Expr guard, Expr &k, Expr &p) {
  Expr kf = round(x * f32(1.4426950408889634));
  Expr r = barrier(x - kf * f32(0.693145751953125), guard) - kf * f32(1.428606765330187e-06);
  k = cast(Int(32), kf);
  p = expm1_poly(r, guard);
}

/* e^x for x in [-87, 88] (2^k stays normal): about 0.6 ulp */
Expr exp_normal(Expr x, Expr guard) {
  Expr k, p;
  exp_reduce(x, guard, k, p);
  return (f32(1) + p) * pow2i(k);
}

/* log(1 + f) for f in [sqrt(1/2) - 1, sqrt(2) - 1]: f + f^2 P(f), degree 10, fit error 4.2e-9 */
Expr log1p_poly(Expr f, Expr guard) {
  return f + barrier(f * f *
                         poly(f, {-0.0762317031621933, 0.12914729118347168, -0.13247500360012054,
                                  0.141805961728096, -0.16608430445194244, 0.20002013444900513,
                                  -0.25001609325408936, 0.33333325386047363, -0.49999988079071045}),
                     guard);
}

/* positive normal u = 2^e m, m in [sqrt(1/2), sqrt(2)) */
void split_log(Expr u, Expr &e, Expr &m) {
  Expr b = bits(u);
  e = cast(Int(32), b >> u32(23)) - 127;
  m = from_bits((b & u32(0x007fffff)) | u32(0x3f800000)); /* [1, 2) */
  Expr big = m > f32(1.41421356);
  m = select(big, m * f32(0.5), m);
  e = select(big, e + 1, e);
}

const double kLn2Hi = 0.693145751953125, kLn2Lo = 1.428606765330187e-06;
const double kPio2Hi = 1.5707963705062866, kPio2Lo = -4.3711390001862426e-08;
const double kPiHi = 3.1415927410125732, kPiLo = -8.742278000372485e-08;

}  // namespace

Expr hl_vmath_exp(Expr x) {
  /* e^x = 2^k e^r (exp_reduce), 2^k applied by scale2 so that results go gradually into the
   * denormals; e^x rounds to inf above 88.7228394 and to 0 below -103.972084 */
  Expr k, p;
  exp_reduce(clamp(x, f32(-104.0), f32(89.0)), x, k, p);
  Expr y = scale2(f32(1) + p, k, x);
  return select(isnan_b(x), x, x > f32(88.72283935546875), kInf, x < f32(-103.97208), f32(0), y);
}

namespace {
/* expm1 for x in [-30, 89], no special values: 2^k (1 + p) - 1 = 2^k p + (2^k - 1), where
 * 2^k - 1 is exact for -24 <= k <= 24 and 2^k p is exact, so one rounding (k = 0: p itself,
 * accurate near 0). Past k = 24 the -1 is below 1/4 ulp: e^x alone. */
Expr expm1_core(Expr x, Expr guard) {
  Expr k, p;
  exp_reduce(x, guard, k, p);
  Expr s = pow2i(min(k, 24));
  return select(k > 24, scale2(f32(1) + p, k, guard), s * p + barrier(s - f32(1), guard));
}
}  // namespace

Expr hl_vmath_expm1(Expr x) {
  Expr y = expm1_core(clamp(x, f32(-30.0), f32(89.0)), x);
  return select(isnan_b(x) || iszero_b(x), x, x > f32(88.72283935546875), kInf, y);
}

Expr hl_vmath_log(Expr x) {
  /* x = 2^e m, m in [sqrt(1/2), sqrt(2)) (denormals scaled by 2^23 first), f = m - 1 exact;
   * log x = e ln2_hi + (log1p(f) + e ln2_lo), e ln2_hi exact (|e| < 2^8, 16-bit ln2_hi) */
  Expr denormal = bits(x) < u32(0x00800000);
  Expr xs = select(denormal, x * f32(8388608.0), x);
  Expr e, m;
  split_log(xs, e, m);
  e = e - select(denormal, 23, 0);
  Expr ef = cast(Float(32), e);
  Expr y = ef * f32(kLn2Hi) + barrier(log1p_poly(barrier(m - f32(1), x), x) + ef * f32(kLn2Lo), x);
  /* bits: +-0 -> -inf; negative or NaN -> NaN; +inf -> +inf */
  Expr b = bits(x);
  return select(iszero_b(x), -kInf, b > u32(0x7f800000), kNaN, b == u32(0x7f800000), x, y);
}

Expr hl_vmath_log1p(Expr x) {
  /* u = 1 + x rounds; u = 2^e m as in log. When e = 0, x itself is in log1p_poly's interval:
   * log1p(x) = log1p_poly(x), exact input. Otherwise log(1+x) = log u + d/u with d = x - (u - 1)
   * the rounding error of 1 + x (exact: u - 1 and x - (u - 1) are both exact there). */
  Expr u = barrier(f32(1) + x, x);
  Expr e, m;
  split_log(u, e, m);
  Expr e0 = e == 0;
  Expr f = barrier(select(e0, x, m - f32(1)), x);
  Expr d = select(e0, f32(0), (x - barrier(u - f32(1), x)) / u);
  Expr ef = cast(Float(32), e);
  Expr y = ef * f32(kLn2Hi) + barrier(log1p_poly(f, x) + (ef * f32(kLn2Lo) + d), x);
  /* -1 -> -inf; below -1 (incl. -inf) -> NaN; +inf -> +inf; +-0 -> +-0 */
  Expr b = bits(x);
  return select(isnan_b(x) || iszero_b(x), x, b == u32(0xbf800000), -kInf, b > u32(0xbf800000), kNaN,
                b == u32(0x7f800000), x, y);
}

Expr hl_vmath_tanh(Expr x) {
  /* |x| < 0.55: a + a^3 T(a^2), degree 13, fit error 1.2e-10 (accurate near 0, keeps denormals);
   * above: 1 - 2/(e^2|x| + 1) (the subtraction loses nothing: the result is >= 1/2), which is
   * 1 in float from |x| = 9.01 on (2|x| is clamped to 18.2 to keep e^2|x| normal) */
  Expr a = fabs_(x);
  Expr a2 = a * a;
  Expr small = a + barrier(a * a2 *
                               poly(a2, {0.002144601196050644, -0.008193791843950748, 0.021711286157369614,
                                         -0.05394914373755455, 0.1333322674036026, -0.3333333134651184}),
                           x);
  Expr t = select(a < f32(0.55), small, f32(1) - f32(2) / (exp_normal(min(a, f32(9.1)) * f32(2), x) + f32(1)));
  return select(isnan_b(x), x, copysign_(t, x));
}

namespace {
/* e^a / 2 for a in [0, 90], as 2^(k-1) e^r: no early overflow (inf past ln(2 FLT_MAX)) */
Expr half_exp(Expr a, Expr guard) {
  Expr k, p;
  exp_reduce(min(a, f32(90.0)), guard, k, p);
  return scale2(f32(1) + p, k - 1, guard);
}
}  // namespace

Expr hl_vmath_sinh(Expr x) {
  /* |x| < 1: a + a^3 H(a^2), degree 11, fit error 1.5e-10; beyond, h - 1/(4h) with h = e^a/2
   * (cancels at most a factor 1.16 at a = 1) */
  Expr a = fabs_(x);
  Expr a2 = a * a;
  Expr small = a + barrier(a * a2 *
                               poly(a2, {9.859617478014115e-08, 2.577452733021346e-06, 0.00019856168364640325,
                                         0.00833328440785408, 0.1666666716337204}),
                           x);
  Expr h = half_exp(a, x);
  Expr s = select(a < f32(1), small, h - f32(0.25) / h);
  return select(isnan_b(x), x, copysign_(s, x));
}

Expr hl_vmath_cosh(Expr x) {
  /* h + 1/(4h) with h = e^|x|/2: a sum of positives, no cancellation */
  Expr h = half_exp(fabs_(x), x);
  return select(isnan_b(x), x, h + f32(0.25) / h);
}

namespace {

/* Trig range reduction, in double: x = k pi/2 + r, |r| <= pi/4 (+ rounding of k), q = k mod 4.
 * pi/2 = P1 + P2 + P3 with P1, P2 of 21 significant bits, so k P1 and k P2 are exact for
 * k < 2^32; x - k P1 is exact (a small multiple of P1's last bit), each later step rounds once
 * in double, and P1 + P2 + P3 is pi/2 to 2^-104 relative. That keeps r accurate to about 2^-60
 * (far below float's 2^-24 relative, even for the floats closest to a multiple of pi/2) for
 * |x| < 6e9. Beyond, the reduction would need the bits of 2/pi at x's exponent (Payne-Hanek):
 * r is clamped to [-pi/4, pi/4], so sin and cos stay in [-1, 1] and tan finite, but the values
 * are not accurate there. r is returned as float hi + lo (lo below hi's last bit). */

void reduce_half_pi(Expr x, Expr &r, Expr &rlo, Expr &q) {
  Expr xd = cast(Float(64), x);
  Expr k = round(xd * f64(0.6366197723675814));
  Expr r1 = barrier(xd - k * f64(1.570796012878418), x);
  Expr r2 = barrier(r1 - k * f64(3.139164164167596e-07), x);
  Expr rd = clamp(r2 - k * f64(6.223372171896613e-14), f64(-0.7854), f64(0.7854));
  r = cast(Float(32), rd);
  rlo = cast(Float(32), rd - cast(Float(64), r));
  /* k mod 4 in double: exact for any k (doubles past 2^55 are multiples of 8) */
  q = cast(Int(32), k - f64(4) * floor(k * f64(0.25)));
}

/* sin on |r| <= pi/4: r + r^3 S(r^2), degree 9, fit error 1.6e-10; plus lo (sin' = cos ~ 1) */
Expr sin_kernel(Expr r, Expr rlo) {
  Expr r2 = r * r;
  return r + barrier(r * r2 *
                              poly(r2, {2.832539621522301e-06, -0.00019853065896313637,
                                        0.008333379402756691, -0.1666666716337204}) +
                          rlo,
                      r);
}
/* cos on |r| <= pi/4: 1 + r^2 C(r^2), degree 10, fit error 7e-12; minus r lo (cos' = -sin) */
Expr cos_kernel(Expr r, Expr rlo) {
  Expr r2 = r * r;
  return f32(1) + barrier(r2 * poly(r2, {-2.8826289621974865e-07, 2.4821507395245135e-05,
                                          -0.0013888978864997625, 0.0416666679084301, -0.5}) -
                               r * rlo,
                           r);
}

}  // namespace

Expr hl_vmath_sin(Expr x) {
  Expr r, rlo, q;
  reduce_half_pi(x, r, rlo, q);
  Expr s = sin_kernel(r, rlo), c = cos_kernel(r, rlo);
  Expr y = select(q == 0, s, q == 1, c, q == 2, -s, -c);
  return select(iszero_b(x), x, isfinite_b(x), y, kNaN);
}

Expr hl_vmath_cos(Expr x) {
  Expr r, rlo, q;
  reduce_half_pi(x, r, rlo, q);
  Expr s = sin_kernel(r, rlo), c = cos_kernel(r, rlo);
  Expr y = select(q == 0, c, q == 1, -s, q == 2, -c, s);
  return select(isfinite_b(x), y, kNaN);
}

Expr hl_vmath_tan(Expr x) {
  /* tan = sin/cos on the reduced argument, -cos/sin in odd quadrants */
  Expr r, rlo, q;
  reduce_half_pi(x, r, rlo, q);
  Expr s = sin_kernel(r, rlo), c = cos_kernel(r, rlo);
  Expr y = select((q & 1) == 0, s / c, -c / s);
  return select(iszero_b(x), x, isfinite_b(x), y, kNaN);
}

namespace {
/* atan on [0, 1]: t + t^3 A(t^2), degree 19, fit error 2.7e-9 */
Expr atan_poly(Expr t, Expr guard) {
  Expr t2 = t * t;
  return t + barrier(t * t2 *
                         poly(t2, {-0.0017821441870182753, 0.010866271331906319, -0.0310935340821743,
                                   0.05787887051701546, -0.08399207890033722, 0.10950861126184464,
                                   -0.1426401436328888, 0.1999852955341339, -0.33333298563957214}),
                     guard);
}
}  // namespace

Expr hl_vmath_atan2(Expr y, Expr x) {
  /* t = min(|x|,|y|) / max(|x|,|y|) in [0, 1], p = atan t; then by octant
   *   |y| <= |x|, x >= 0: p        |y| > |x|, x >= 0: pi/2 - p
   *   |y| <= |x|, x <  0: pi - p   |y| > |x|, x <  0: pi/2 + p
   * with pi/2 and pi in two parts (one rounding at the end); the sign of y last. C99's zeros and
   * infinities: 0/0 counts as t = 0, inf/inf as t = 1 (pi/4 or 3pi/4), a finite/inf as t = 0;
   * the sign bit of x (so -0 too) picks the left half-plane. */
  Expr ax = fabs_(x), ay = fabs_(y);
  Expr lo = min(ax, ay), hi = max(ax, ay);
  Expr t = select(iszero_b(hi), f32(0), isinf_b(hi), select(isinf_b(lo), f32(1), f32(0)), lo / hi);
  Expr p = atan_poly(t, y);
  Expr steep = ay > ax, left = sign_bit(x);
  Expr ch = select(steep, f32(kPio2Hi), left, f32(kPiHi), f32(0));
  Expr cl = select(steep, f32(kPio2Lo), left, f32(kPiLo), f32(0));
  Expr sp = select(steep != left, -p, p);
  Expr a = ch + barrier(sp + cl, y);
  return select(isnan_b(x) || isnan_b(y), kNaN, copysign_(a, y));
}

Expr hl_vmath_atan(Expr x) {
  /* atan x = atan2(x, 1): t = |x| below 1, 1/|x| above, then pi/2 - atan t */
  return hl_vmath_atan2(x, f32(1));
}

namespace {
/* asin on [0, 1/2]: s + s z B(z), z = s^2, degree 13, fit error 2.9e-10 */
Expr asin_tail(Expr s, Expr z) {
  return s * z *
         poly(z, {0.03770212084054947, 0.01431217323988676, 0.0318395234644413, 0.04451335221529007,
                  0.07500521838665009, 0.16666659712791443});
}
}  // namespace

Expr hl_vmath_asin(Expr x) {
  /* |x| <= 1/2: the polynomial. Above: asin a = pi/2 - 2 asin s, s = sqrt((1 - a)/2) <= 1/2
   * (1 - a exact), summed as (pi/2_hi - 2s) + (pi/2_lo - 2 tail): the first difference is exact
   * near a = 1/2, where the cancellation is */
  Expr a = fabs_(x);
  Expr big = a > f32(0.5);
  Expr z = select(big, (f32(1) - a) * f32(0.5), a * a);
  Expr s = select(big, sqrt(z), a);
  Expr tail = asin_tail(s, z);
  Expr y = select(big, barrier(f32(kPio2Hi) - f32(2) * s, x) + barrier(f32(kPio2Lo) - f32(2) * tail, x),
                  s + barrier(tail, x));
  return select(isnan_b(x) || a > f32(1), kNaN, copysign_(y, x));
}

Expr hl_vmath_acos(Expr x) {
  /* |x| <= 1/2: pi/2 - asin x. x > 1/2: 2 asin s, s = sqrt((1 - x)/2). x < -1/2: pi - 2 asin s,
   * s = sqrt((1 + x)/2). No cancellation in any branch. */
  Expr a = fabs_(x);
  Expr big = a > f32(0.5);
  Expr z = select(big, (f32(1) - a) * f32(0.5), x * x);
  Expr s = select(big, sqrt(z), x);
  Expr tail = asin_tail(s, z);
  Expr mid = f32(kPio2Hi) - barrier(s + barrier(tail - f32(kPio2Lo), x), x);
  Expr two = f32(2) * s + f32(2) * tail;
  Expr neg = barrier(f32(kPiHi) - f32(2) * s, x) + barrier(f32(kPiLo) - f32(2) * tail, x);
  Expr y = select(!big, mid, sign_bit(x), neg, two);
  return select(isnan_b(x) || a > f32(1), kNaN, y);
}

Expr hl_vmath_pow(Expr x, Expr y) {
  /* |x|^y = e^t, t = y log|x| carried in double: a float log (2^-24 relative) times |y| up to
   * ~10^2 would cost ~10^2 ulp. log|x| = e ln2 + 2 atanh(s), s = (m-1)/(m+1), |s| < 0.172,
   * atanh's Taylor series to s^15 (next term < 2^-45 relative). Then t = k ln2 + r in double,
   * r split into float hi + lo, e^r = 1 + expm1_poly(hi) + lo. Special cases as C99 powf. */
  Expr ax = fabs_(x);
  Expr denormal = bits(ax) < u32(0x00800000);
  Expr e, m;
  split_log(select(denormal, ax * f32(8388608.0), ax), e, m);
  e = e - select(denormal, 23, 0);
  Expr md = cast(Float(64), m);
  Expr sd = (md - f64(1)) / (md + f64(1));
  Expr s2 = sd * sd;
  Expr atanh2 = sd * poly64(s2, {2.0 / 15, 2.0 / 13, 2.0 / 11, 2.0 / 9, 2.0 / 7, 2.0 / 5, 2.0 / 3, 2.0});
  Expr ld = cast(Float(64), e) * f64(0.6931471805599453) + atanh2;
  Expr t = clamp(cast(Float(64), y) * ld, f64(-110), f64(100));
  Expr kd = round(t * f64(1.4426950408889634));
  Expr rd = t - kd * f64(0.6931471805599453);
  Expr rh = cast(Float(32), rd);
  Expr rl = cast(Float(32), rd - cast(Float(64), rh));
  Expr mag = scale2(f32(1) + (expm1_poly(rh, x) + rl), cast(Int(32), kd), x);

  Expr y_int = floor(y) == y && isfinite_b(y);
  Expr y_odd = y_int && fabs_(y) < f32(16777216.0) && (cast(Int(32), fabs_(y)) & 1) == 1;
  Expr x_neg = sign_bit(x);
  Expr r = select(x_neg && y_odd, -mag, mag);
  r = select(x_neg && !y_int && !iszero_b(x) && !isinf_b(x), kNaN, r);
  /* zeros and infinities of x */
  Expr zr = select(y < f32(0), kInf, f32(0));
  r = select(iszero_b(x), select(y_odd, copysign_(zr, x), zr), r);
  Expr ir = select(y < f32(0), f32(0), kInf);
  r = select(isinf_b(x), select(x_neg && y_odd, -ir, ir), r);
  /* infinite y */
  Expr yr = select(ax == f32(1), f32(1), (ax > f32(1)) == (y > f32(0)), kInf, f32(0));
  r = select(isinf_b(y), yr, r);
  /* NaNs, except the two cases C99 pins to 1 */
  r = select(isnan_b(x) || isnan_b(y), kNaN, r);
  return select(iszero_b(y) || bits(x) == u32(0x3f800000), f32(1), r);
}

Expr hl_vmath_erf(Expr x) {
  /* Halide's erf was measured at 6.5 ulp (near |x| = 1), so: |x| < 0.9: a + a E(a^2), degree 13,
   * fit error 8.9e-10. Above: 1 - e^(-a^2) g(1/a) with g(1/a) = erfc(a) e^(a^2) fitted on
   * [0.9, 4] in 1/a, degree 9, fit error 4.1e-8; erfc <= 0.21 there, so its error shrinks 4x in
   * erf. Past 4, erf is 1 in float (erfc(4) < half an ulp of 1). */
  Expr a = fabs_(x);
  Expr a2 = a * a;
  Expr small = a + barrier(a * poly(a2, {7.943100354168564e-05, -0.0008039752719923854, 0.005191753152757883,
                                         -0.026855560019612312, 0.11283624172210693, -0.3761262893676758,
                                         0.12837916612625122}),
                           x);
  Expr ac = clamp(a, f32(0.9), f32(4.0));
  Expr g = poly(f32(1) / ac, {0.01763906329870224, -0.10770849883556366, 0.26635709404945374, -0.303880900144577,
                              0.04079369455575943, 0.33877959847450256, -0.41431719064712524, 0.029036657884716988,
                              0.560705840587616, 0.0001782306790119037});
  Expr big = f32(1) - exp_normal(-(ac * ac), x) * g;
  Expr v = select(a < f32(0.9), small, big);
  return select(isnan_b(x), x, copysign_(v, x));
}
