/* Element types: names, sizes and the promotion lattice. */
#ifndef HL_DTYPE_H
#define HL_DTYPE_H
#include <stddef.h>
#include <stdint.h>

typedef enum {
#define X(e, name, bytes, kind, rank) HL_##e,
#include "hl_dtypes.def"
#undef X
  HL_NDTYPES
} hl_dtype;

const char *hl_dtype_name(hl_dtype t);
/* bytes per element, and the kind: 'b', 'u', 'i', 'f' or 'c' (inline: an eager op asks for
 * both several times, and a call each cost more than the lookup) */
static inline size_t hl_dtype_size(hl_dtype t) {
  static const unsigned char bytes[] = {
#define X(e, name, size, kind, rank) size,
#include "hl_dtypes.def"
#undef X
  };
  return bytes[t];
}
static inline char hl_dtype_kind(hl_dtype t) {
  static const char kinds[] = {
#define X(e, name, size, kind, rank) kind,
#include "hl_dtypes.def"
#undef X
  };
  return kinds[t];
}
int hl_dtype_from_name(const char *name);  /* -1 when unknown */
hl_dtype hl_dtype_promote(hl_dtype a, hl_dtype b);
/* elements of a shape (1 for rank 0) */
int64_t hl_shape_size(int ndim, const int64_t *shape);
/* The dtype of `t op <Lua number v>`: Lua numbers are weakly typed, so `t` wins unless the
 * number cannot be represented in t's kind (a fraction with an int array gives float32, any
 * number with a bool array gives int32 or float32). */
hl_dtype hl_dtype_promote_weak(hl_dtype t, double v);
/* The 2-byte floats are stored as their bit patterns (uint16) and computed in float32, each
 * result rounded back (hl_lower.cpp does the same in Halide). Conversions round to nearest,
 * ties to even; a double goes through float32 rounded to odd, so it is rounded once. */
static inline int hl_dtype_is_half(hl_dtype t) { return t == HL_FLOAT16 || t == HL_BFLOAT16; }
uint16_t hl_half_from_double(hl_dtype t, double v);   /* t: HL_FLOAT16 or HL_BFLOAT16 */
float hl_half_to_float(hl_dtype t, uint16_t bits);
static inline int hl_dtype_is_float(hl_dtype t) { return hl_dtype_kind(t) == 'f'; }
/* v rounded to the float dtype t (1e39 is inf as a float32, 1e-50 is 0); whether that is finite */
double hl_round_in(hl_dtype t, double v);
int hl_finite_in(hl_dtype t, double v);
static inline int hl_dtype_is_int(hl_dtype t) { char k = hl_dtype_kind(t); return k == 'i' || k == 'u'; }
static inline int hl_dtype_is_complex(hl_dtype t) { return hl_dtype_kind(t) == 'c'; }
/* complex64 <-> float32 and complex128 <-> float64: the type of a complex's parts, and the
 * complex whose parts hold a real type (ints and the 2-byte floats give complex64) */
static inline hl_dtype hl_complex_part(hl_dtype t) { return t == HL_COMPLEX128 ? HL_FLOAT64 : HL_FLOAT32; }
static inline hl_dtype hl_complex_of(hl_dtype t) {
  return t == HL_FLOAT64 || t == HL_COMPLEX128 ? HL_COMPLEX128 : HL_COMPLEX64;
}
#endif
