/* Vectorisable float32 math for Halide. Halide 14 lowers float32 exp, log, tanh, sin, ... to
 * scalar libm calls, one per lane; these are plain arithmetic and bit operations instead, so a
 * fused chain stays in SIMD registers (and runs as is on GPUs). Special values follow C99/NumPy:
 * NaN in gives NaN out, overflow gives inf, underflow gives 0. Accuracy: a few ulp over the
 * float range (sin/cos/tan: arguments reduced in double, exact for |x| < 2^24). */
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
