#include "hl_dtype.h"
#include <math.h>
#include <string.h>

static const struct { const char *name; size_t bytes; char kind; int rank; } dtype_info[] = {
#define X(e, name, bytes, kind, rank) {name, bytes, kind, rank},
#include "hl_dtypes.def"
#undef X
};

const char *hl_dtype_name(hl_dtype t) { return t < HL_NDTYPES ? dtype_info[t].name : "?"; }
size_t hl_dtype_size(hl_dtype t) { return dtype_info[t].bytes; }
char hl_dtype_kind(hl_dtype t) { return dtype_info[t].kind; }

int hl_dtype_from_name(const char *name) {
  for (int i = 0; i < HL_NDTYPES; i++)
    if (strcmp(dtype_info[i].name, name) == 0) return i;
  return -1;
}

hl_dtype hl_dtype_promote(hl_dtype a, hl_dtype b) {
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
  case 'f': return t;
  case 'b': return integral ? HL_INT32 : HL_FLOAT32;
  default: return integral ? t : HL_FLOAT32;
  }
}
