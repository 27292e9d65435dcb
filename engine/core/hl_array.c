#include "hl_array.h"
#include "hl_error.h"
#include "hl_ir.h"
#include <math.h>
#include <string.h>

int hl_array_alloc(hl_array *out, hl_dtype dtype, int ndim, const int64_t *shape) {
  return hl_array_alloc_on(out, 0, dtype, ndim, shape);
}

int hl_array_alloc_on(hl_array *out, int device, hl_dtype dtype, int ndim, const int64_t *shape) {
  memset(out, 0, sizeof *out);
  out->dtype = dtype;
  out->ndim = ndim;
  /* the non-empty axes' count bounded as hl_shape_check bounds it, in an empty array too, so
   * that its extents multiply without overflow in any order */
  int64_t n = 1, count = 1;
  for (int i = ndim - 1; i >= 0; i--) {
    if (shape[i] < 0) return hl_error("array: negative extent %lld in a shape", (long long)shape[i]);
    out->shape[i] = shape[i];
    out->strides[i] = n;
    int64_t grown;   /* (a multiplication checked: a division here was a fifth of an eager op's allocation) */
    if (shape[i] && (__builtin_mul_overflow(count, shape[i], &grown) || grown > INT64_MAX / 16))
      return hl_error("array: shape %s is too large to allocate", hl_shape_str(ndim, (const long long *)shape).s);
    if (shape[i]) count *= shape[i];
    n *= shape[i];
  }
  out->storage = hl_storage_new_on(device, (size_t)n * hl_dtype_size(dtype));
  return out->storage ? 0 : -1;
}

int hl_array_device(const hl_array *a) {
  if (a->storage) return a->storage->device;
  return a->graph ? a->graph->device : 0;
}

void hl_array_release(hl_array *a) {
  hl_storage_release(a->storage);
  a->storage = NULL;
}

void hl_array_copy_ref(hl_array *dst, const hl_array *src) {
  *dst = *src;
  if (dst->storage) hl_storage_retain(dst->storage);
}

int64_t hl_array_elem_offset(const hl_array *a, int64_t flat) {
  int64_t off = 0;
  for (int i = a->ndim - 1; i >= 0; i--) {
    int64_t e = a->shape[i];
    off += (flat % e) * a->strides[i];
    flat /= e;
  }
  return off;
}

void hl_array_copy_elements(hl_array *dst, const hl_array *src) {
  int nd = src->ndim;
  size_t es = hl_dtype_size(src->dtype);
  int64_t n = hl_shape_size(nd, src->shape);
  char *d = hl_array_data(dst);
  const char *s = hl_array_data(src);
  if (n == 0) return;
  if (nd == 0 || (hl_array_is_contiguous(dst) && hl_array_is_contiguous(src))) {
    memcpy(d, s, (size_t)n * es);
    return;
  }
  int64_t inner = src->shape[nd - 1], ds = dst->strides[nd - 1], ss = src->strides[nd - 1];
  int64_t idx[HL_MAX_DIMS] = {0};
  for (int64_t r = 0; r < n / inner; r++) {
    int64_t doff = 0, soff = 0;
    for (int k = 0; k < nd - 1; k++) {
      doff += idx[k] * dst->strides[k];
      soff += idx[k] * src->strides[k];
    }
    if (ds == 1 && ss == 1)
      memcpy(d + doff * (int64_t)es, s + soff * (int64_t)es, (size_t)inner * es);
    else
      for (int64_t i = 0; i < inner; i++) memcpy(d + (doff + i * ds) * (int64_t)es, s + (soff + i * ss) * (int64_t)es, es);
    for (int k = nd - 2; k >= 0 && ++idx[k] == src->shape[k]; k--) idx[k] = 0;
  }
}

double hl_array_get(const hl_array *a, int64_t flat) {
  const char *p = (const char *)hl_array_data(a) + hl_array_elem_offset(a, flat) * (int64_t)hl_dtype_size(a->dtype);
  switch (a->dtype) {
  case HL_BOOL: return *(const uint8_t *)p != 0;
  case HL_UINT8: return *(const uint8_t *)p;
  case HL_INT8: return *(const int8_t *)p;
  case HL_FLOAT16: case HL_BFLOAT16: return hl_half_to_float(a->dtype, *(const uint16_t *)p);
  case HL_INT32: return *(const int32_t *)p;
  case HL_INT64: return (double)*(const int64_t *)p;
  case HL_FLOAT32: return *(const float *)p;
  case HL_FLOAT64: return *(const double *)p;
  case HL_COMPLEX64: return *(const float *)p;     /* the real part (hl_array.h) */
  case HL_COMPLEX128: return *(const double *)p;
  default: return 0;
  }
}

void hl_array_set(hl_array *a, int64_t flat, double v) {
  char *p = (char *)hl_array_data(a) + hl_array_elem_offset(a, flat) * (int64_t)hl_dtype_size(a->dtype);
  /* float -> int conversion of NaN/inf/out-of-range is undefined in C: pin it first */
  if (!hl_dtype_is_float(a->dtype) && !hl_dtype_is_complex(a->dtype) && a->dtype != HL_BOOL)
    v = isfinite(v) ? fmax(fmin(v, 9.2233720368547748e18), -9.2233720368547758e18) : 0;
  switch (a->dtype) {
  case HL_BOOL: *(uint8_t *)p = v != 0; break;
  case HL_UINT8: *(uint8_t *)p = (uint8_t)(int64_t)v; break;
  case HL_INT8: *(int8_t *)p = (int8_t)(int64_t)v; break;
  case HL_FLOAT16: case HL_BFLOAT16: *(uint16_t *)p = hl_half_from_double(a->dtype, v); break;
  case HL_INT32: *(int32_t *)p = (int32_t)(int64_t)v; break;
  case HL_INT64: *(int64_t *)p = (int64_t)v; break;
  case HL_FLOAT32: *(float *)p = (float)v; break;
  case HL_FLOAT64: *(double *)p = v; break;
  case HL_COMPLEX64: ((float *)p)[0] = (float)v; ((float *)p)[1] = 0; break;
  case HL_COMPLEX128: ((double *)p)[0] = v; ((double *)p)[1] = 0; break;
  default: break;
  }
}

void hl_complex_as_real(const hl_array *a, hl_array *out) {
  *out = *a;
  out->dtype = hl_complex_part(a->dtype);
  for (int k = 0; k < a->ndim; k++) out->strides[k] = a->strides[k] * 2;
  out->offset = a->offset * 2;
  out->shape[a->ndim] = 2;
  out->strides[a->ndim] = 1;
  out->ndim = a->ndim + 1;
}
