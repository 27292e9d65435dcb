#include "hl_dtype.h"
#include <math.h>
#include <string.h>

static const struct { const char *name; size_t bytes; char kind; int rank; } dtype_info[] = {
#define X(e, name, bytes, kind, rank) {name, bytes, kind, rank},
#include "hl_dtypes.def"
#undef X
};

const char *hl_dtype_name(hl_dtype t) { return t < HL_NDTYPES ? dtype_info[t].name : "?"; }

int hl_dtype_from_name(const char *name) {
  for (int i = 0; i < HL_NDTYPES; i++)
    if (strcmp(dtype_info[i].name, name) == 0) return i;
  return -1;
}

hl_dtype hl_dtype_promote(hl_dtype a, hl_dtype b) {
  /* a complex with float64 needs float64 parts */
  if ((a == HL_COMPLEX64 && b == HL_FLOAT64) || (a == HL_FLOAT64 && b == HL_COMPLEX64)) return HL_COMPLEX128;
  if (a != b && dtype_info[a].rank == dtype_info[b].rank) {
    /* the lattice's two incomparable pairs: the least type that holds both */
    if (hl_dtype_is_int(a)) return HL_INT32;   /* int8 with uint8 (NumPy and JAX: int16) */
    return HL_FLOAT32;                         /* float16 with bfloat16 */
  }
  return dtype_info[a].rank >= dtype_info[b].rank ? a : b;
}

hl_dtype hl_dtype_promote_weak(hl_dtype t, double v) {
  int integral = isfinite(v) && v == floor(v);
  switch (dtype_info[t].kind) {
  case 'f':
  case 'c': return t;
  case 'b': return integral ? HL_INT32 : HL_FLOAT32;
  default: return integral ? t : HL_FLOAT32;
  }
}

/* ---- the 2-byte floats ---- */

static uint32_t bits_of(float f) { uint32_t u; memcpy(&u, &f, 4); return u; }
static float float_of(uint32_t u) { float f; memcpy(&f, &u, 4); return f; }

/* d rounded to float32 toward zero, its last bit set when inexact ("round to odd"): rounding
 * that again to a format of at most 22 significand bits gives d correctly rounded */
static float float_round_odd(double d) {
  float f = (float)d;
  if (d != d || (double)f == d) return f;
  uint32_t u = bits_of(f);
  if (fabs((double)f) > fabs(d)) u -= 1;   /* one step toward zero (from inf: the largest float) */
  return float_of(u | 1);
}

static uint16_t f32_to_f16(float f) {
  uint32_t u = bits_of(f), sign = (u >> 16) & 0x8000, a = u & 0x7fffffff;
  if (a > 0x7f800000) return (uint16_t)(sign | 0x7e00 | ((a >> 13) & 0x3ff));   /* NaN stays NaN */
  if (a >= 0x477ff000) return (uint16_t)(sign | 0x7c00);                        /* rounds past 65504 */
  if (a < 0x38800000) return (uint16_t)(sign | (uint32_t)lrintf(float_of(a) * 16777216.0f));   /* subnormal */
  return (uint16_t)(sign | ((a - 0x38000000 + 0xfff + ((a >> 13) & 1)) >> 13));
}

static float f16_to_f32(uint16_t h) {
  uint32_t sign = (uint32_t)(h & 0x8000) << 16, e = (h >> 10) & 0x1f, m = h & 0x3ff;
  if (e == 0) return float_of(bits_of((float)m * 5.9604644775390625e-8f) | sign);
  if (e == 31) return float_of(sign | 0x7f800000 | (m << 13));
  return float_of(sign | ((e + 112) << 23) | (m << 13));
}

static uint16_t f32_to_bf16(float f) {
  uint32_t u = bits_of(f);
  if ((u & 0x7fffffff) > 0x7f800000) return (uint16_t)((u >> 16) | 0x40);
  return (uint16_t)((u + 0x7fff + ((u >> 16) & 1)) >> 16);
}

uint16_t hl_half_from_double(hl_dtype t, double v) {
  float f = float_round_odd(v);
  return t == HL_BFLOAT16 ? f32_to_bf16(f) : f32_to_f16(f);
}

float hl_half_to_float(hl_dtype t, uint16_t bits) {
  return t == HL_BFLOAT16 ? float_of((uint32_t)bits << 16) : f16_to_f32(bits);
}

int64_t hl_shape_size(int ndim, const int64_t *shape) {
  int64_t n = 1;
  for (int i = 0; i < ndim; i++) n *= shape[i];
  return n;
}

double hl_round_in(hl_dtype t, double v) {
  if (t == HL_FLOAT32) return (float)v;
  if (hl_dtype_is_half(t)) return hl_half_to_float(t, hl_half_from_double(t, v));
  return v;
}

int hl_finite_in(hl_dtype t, double v) { return isfinite(hl_round_in(t, v)); }
