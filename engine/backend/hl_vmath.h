/* Vectorisable float32 math for Halide. Halide 14 lowers float32 exp, log, tanh, sin, ... to
 * scalar libm calls, one per lane; these are plain arithmetic and bit operations instead, so a
 * fused chain stays in SIMD registers (and runs as is on GPUs). Each takes and returns a
 * Float(32) Expr. Special values follow C99 (NaN in gives NaN out, overflow gives inf, underflow
 * goes through the denormals to 0, odd functions keep the sign of zero; pow and atan2 follow
 * C's powf/atan2f special cases). Accuracy against the exact value, as measured by
 * tests/c/vmath_check over the whole float range: under 1.5 ulp for all but asin (2) and tan
 * (2.7); sin/cos/tan only for |x| < 6e9 (past that their values stay in range but are not
 * accurate: see reduce_half_pi). No strict_float is used, so pipelines keep fast-math. */
#ifndef HL_VMATH_H
#define HL_VMATH_H
#include <Halide.h>

Halide::Expr hl_vmath_exp(Halide::Expr x);
Halide::Expr hl_vmath_expm1(Halide::Expr x);
Halide::Expr hl_vmath_log(Halide::Expr x);
Halide::Expr hl_vmath_log1p(Halide::Expr x);
Halide::Expr hl_vmath_tanh(Halide::Expr x);
Halide::Expr hl_vmath_sinh(Halide::Expr x);
Halide::Expr hl_vmath_cosh(Halide::Expr x);
Halide::Expr hl_vmath_sin(Halide::Expr x);
Halide::Expr hl_vmath_cos(Halide::Expr x);
Halide::Expr hl_vmath_tan(Halide::Expr x);
Halide::Expr hl_vmath_atan(Halide::Expr x);
Halide::Expr hl_vmath_asin(Halide::Expr x);
Halide::Expr hl_vmath_acos(Halide::Expr x);
Halide::Expr hl_vmath_atan2(Halide::Expr y, Halide::Expr x);
Halide::Expr hl_vmath_pow(Halide::Expr x, Halide::Expr y);
Halide::Expr hl_vmath_erf(Halide::Expr x);
#endif
