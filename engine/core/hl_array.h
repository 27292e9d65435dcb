/* Arrays: a strided view (shape, strides and offset in elements) of a refcounted storage, or a
 * tracer: no storage, a node of a graph being traced. Arrays are values: no op changes one. */
#ifndef HL_ARRAY_H
#define HL_ARRAY_H
#include "hl_dtype.h"
#include "hl_storage.h"
#include <stdint.h>

#define HL_MAX_DIMS 8

struct hl_graph;

typedef struct hl_array {
  hl_dtype dtype;
  int ndim;
  int64_t shape[HL_MAX_DIMS];
  int64_t strides[HL_MAX_DIMS];  /* in elements; 0 along broadcast axes */
  int64_t offset;                /* in elements */
  hl_storage *storage;           /* NULL for a tracer */
  struct hl_graph *graph;        /* tracer: the graph it belongs to */
  int node;                      /* tracer: its node */
  int weak;                      /* a traced Lua number: promotes like one */
} hl_array;

/* A new contiguous (row-major) array; its elements are uninitialised. */
int hl_array_alloc(hl_array *out, hl_dtype dtype, int ndim, const int64_t *shape);
int hl_array_alloc_on(hl_array *out, int device, hl_dtype dtype, int ndim, const int64_t *shape);
int hl_array_device(const hl_array *a);   /* 0 host, 1 CUDA; a tracer's is its graph's */
void hl_array_release(hl_array *a);            /* drops the storage reference */
void hl_array_copy_ref(hl_array *dst, const hl_array *src);   /* dst shares src's storage */
/* whether a and b have one shape (inline: an eager op asks for each operand, and a call to
 * memcmp for a few extents costs more than comparing them) */
static inline int hl_same_shape(const hl_array *a, const hl_array *b) {
  if (a->ndim != b->ndim) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != b->shape[d]) return 0;
  return 1;
}
/* (inline: an eager op asks for each operand) */
static inline int hl_array_is_contiguous(const hl_array *a) {
  int64_t n = 1;
  for (int i = a->ndim - 1; i >= 0; i--) {
    if (a->shape[i] != 1 && a->strides[i] != n) return 0;
    n *= a->shape[i];
  }
  return 1;
}
static inline void *hl_array_data(const hl_array *a) {
  return (char *)a->storage->data + a->offset * (int64_t)hl_dtype_size(a->dtype);
}
/* the same for an array in device memory: the address of its first element there */
static inline uint64_t hl_array_device_address(const hl_array *a) {
  return a->storage->device_ptr + (uint64_t)(a->offset * (int64_t)hl_dtype_size(a->dtype));
}
/* Element at a flat row-major index, as a double (bool/ints converted; a complex's real part). */
double hl_array_get(const hl_array *a, int64_t flat);
void hl_array_set(hl_array *a, int64_t flat, double v);   /* contiguous arrays being built (complex: v + 0i) */
/* A complex array's storage seen as the float array of its (re, im) pairs: shape S..[2], the
 * same storage (no reference taken: out lives no longer than a). */
void hl_complex_as_real(const hl_array *a, hl_array *out);
int64_t hl_array_elem_offset(const hl_array *a, int64_t flat);
/* dst's elements = src's (host arrays of one shape and dtype, any strides), by runs along the
 * innermost axis: one memcpy when both are contiguous. */
void hl_array_copy_elements(hl_array *dst, const hl_array *src);
#endif
