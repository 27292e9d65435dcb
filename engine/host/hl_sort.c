#include "hl_sort.h"
#include "hl_error.h"
#include "hl_pool.h"
#include <stdlib.h>
#include <string.h>

/* Runs this short are insertion-sorted before the merges begin. */
enum { RUN = 16 };

/* One stable merge sort per key type: keys k and (when IX, a constant) indices ix move together
 * (tk and tix are scratch of the same length); returns 1 when the result ended in the scratch
 * arrays. Ties keep their order because a right-hand element moves first only when it is strictly
 * less. Sorting values alone moves no indices: half the memory traffic. */
#define DEFINE_SORT(NAME, T, LESS, IX)                                                                \
  static int NAME(T *k, int64_t *ix, T *tk, int64_t *tix, int64_t n) {                               \
    for (int64_t lo = 0; lo < n; lo += RUN) {                                                         \
      int64_t hi = lo + RUN < n ? lo + RUN : n;                                                       \
      for (int64_t i = lo + 1; i < hi; i++) {                                                         \
        T key = k[i];                                                                                 \
        int64_t id = IX ? ix[i] : 0, j = i;                                                           \
        for (; j > lo && LESS(key, k[j - 1]); j--) {                                                  \
          k[j] = k[j - 1];                                                                            \
          if (IX) ix[j] = ix[j - 1];                                                                  \
        }                                                                                             \
        k[j] = key;                                                                                   \
        if (IX) ix[j] = id;                                                                           \
      }                                                                                               \
    }                                                                                                 \
    int swapped = 0;                                                                                  \
    for (int64_t w = RUN; w < n; w *= 2) {                                                            \
      for (int64_t lo = 0; lo < n; lo += 2 * w) {                                                     \
        int64_t mid = lo + w < n ? lo + w : n, hi = lo + 2 * w < n ? lo + 2 * w : n;                  \
        int64_t a = lo, b = mid, o = lo;                                                              \
        while (a < mid && b < hi) {                                                                   \
          if (LESS(k[b], k[a])) {                                                                     \
            tk[o] = k[b];                                                                             \
            if (IX) tix[o] = ix[b];                                                                   \
            b++;                                                                                      \
          } else {                                                                                    \
            tk[o] = k[a];                                                                             \
            if (IX) tix[o] = ix[a];                                                                   \
            a++;                                                                                      \
          }                                                                                           \
          o++;                                                                                        \
        }                                                                                             \
        for (; a < mid; a++, o++) {                                                                   \
          tk[o] = k[a];                                                                               \
          if (IX) tix[o] = ix[a];                                                                     \
        }                                                                                             \
        for (; b < hi; b++, o++) {                                                                    \
          tk[o] = k[b];                                                                               \
          if (IX) tix[o] = ix[b];                                                                     \
        }                                                                                             \
      }                                                                                               \
      T *t = k;                                                                                       \
      k = tk;                                                                                         \
      tk = t;                                                                                         \
      int64_t *ti = ix;                                                                               \
      ix = tix;                                                                                       \
      tix = ti;                                                                                       \
      swapped = !swapped;                                                                             \
    }                                                                                                 \
    return swapped;                                                                                   \
  }

#define PLAIN_LESS(a, b) ((a) < (b))
/* NaN after every number, as NumPy sorts; -0.0 and 0.0 are equal (their order is kept) */
#define FLOAT_LESS(a, b) (((a) < (b)) | (((a) == (a)) & ((b) != (b))))   /* no short circuit */

/* values with their indices (argsort), and values alone (sort) */
DEFINE_SORT(arg_u8, uint8_t, PLAIN_LESS, 1)
DEFINE_SORT(arg_i8, int8_t, PLAIN_LESS, 1)
DEFINE_SORT(arg_i32, int32_t, PLAIN_LESS, 1)
DEFINE_SORT(arg_i64, int64_t, PLAIN_LESS, 1)
DEFINE_SORT(arg_f32, float, FLOAT_LESS, 1)
DEFINE_SORT(arg_f64, double, FLOAT_LESS, 1)
DEFINE_SORT(val_u8, uint8_t, PLAIN_LESS, 0)
DEFINE_SORT(val_i8, int8_t, PLAIN_LESS, 0)
DEFINE_SORT(val_i32, int32_t, PLAIN_LESS, 0)
DEFINE_SORT(val_i64, int64_t, PLAIN_LESS, 0)
DEFINE_SORT(val_f32, float, FLOAT_LESS, 0)
DEFINE_SORT(val_f64, double, FLOAT_LESS, 0)

typedef struct {
  const hl_array *x;
  hl_array *out;
  int axis, arg;
  int64_t start, n, nlanes, chunk;
  int oom;   /* atomic */
} job;

/* element offsets of lane `lane` (row-major over the shape without the axis) in x and out */
static void lane_offsets(const job *j, int64_t lane, int64_t *ox, int64_t *oo) {
  int64_t a = j->x->offset, b = j->out->offset;
  for (int d = j->x->ndim - 1; d >= 0; d--) {
    if (d == j->axis) continue;
    int64_t e = j->x->shape[d], i = lane % e;
    lane /= e;
    a += i * j->x->strides[d];
    b += i * j->out->strides[d];
  }
  *ox = a;
  *oo = b;
}

/* gather a lane into k (typed), sort it, write the requested part */
#define SORT_LANE(T, ARG_FN, VAL_FN)                                                                   \
  do {                                                                                               \
    const T *src = (const T *)j->x->storage->data + ox;                                              \
    T *k = keys, *tk = (T *)keys + n;                                                                \
    for (int64_t i = 0; i < n; i++) k[i] = src[i * sx];                                              \
    if (j->arg) {                                                                                    \
      for (int64_t i = 0; i < n; i++) ix[i] = i;                                                     \
      if (ARG_FN(k, ix, tk, tix, n)) ix = tix;                                                       \
      int64_t *dst = (int64_t *)j->out->storage->data + oo;                                          \
      for (int64_t i = 0; i < m; i++) dst[i * so] = ix[j->start + i];                                \
    } else {                                                                                         \
      if (VAL_FN(k, NULL, tk, NULL, n)) k = tk;                                                      \
      T *dst = (T *)j->out->storage->data + oo;                                                      \
      for (int64_t i = 0; i < m; i++) dst[i * so] = k[j->start + i];                                 \
    }                                                                                                \
  } while (0)

static int task(void *ctx, int t, uint8_t *closure) {
  (void)closure;
  job *j = ctx;
  int64_t n = j->n, m = j->out->shape[j->axis];
  int64_t sx = j->x->strides[j->axis], so = j->out->strides[j->axis];
  size_t es = hl_dtype_size(j->x->dtype);
  void *keys = malloc(2 * (size_t)n * es + 8);
  int64_t *idx = j->arg ? malloc(2 * sizeof(int64_t) * (size_t)n + 8) : NULL;
  if (!keys || (j->arg && !idx)) {
    __atomic_store_n(&j->oom, 1, __ATOMIC_RELEASE);
  } else {
    int64_t lo = (int64_t)t * j->chunk, hi = lo + j->chunk < j->nlanes ? lo + j->chunk : j->nlanes;
    for (int64_t lane = lo; lane < hi; lane++) {
      int64_t ox, oo, *ix = idx, *tix = idx ? idx + n : NULL;
      lane_offsets(j, lane, &ox, &oo);
      switch (j->x->dtype) {
      case HL_BOOL:
      case HL_UINT8: SORT_LANE(uint8_t, arg_u8, val_u8); break;
      case HL_INT8: SORT_LANE(int8_t, arg_i8, val_i8); break;
      case HL_INT32: SORT_LANE(int32_t, arg_i32, val_i32); break;
      case HL_INT64: SORT_LANE(int64_t, arg_i64, val_i64); break;
      case HL_FLOAT32: SORT_LANE(float, arg_f32, val_f32); break;
      case HL_FLOAT64: SORT_LANE(double, arg_f64, val_f64); break;
      default: break;
      }
    }
  }
  free(keys);
  free(idx);
  return 0;
}

int hl_sort_into(const hl_array *x, int axis, int arg, hl_array *out, int64_t start) {
  const char *op = arg ? "argsort" : "sort";
  if (axis < 0 || axis >= x->ndim || out->ndim != x->ndim) return hl_error("%s: internal: bad axis or rank", op);
  if ((arg && out->dtype != HL_INT64) || (!arg && out->dtype != x->dtype)) return hl_error("%s: internal: bad result dtype", op);
  if (!x->storage || x->storage->device != 0 || !out->storage || out->storage->device != 0)
    return hl_error("%s: internal: operands must be host arrays", op);
  switch (x->dtype) {
  case HL_BOOL: case HL_UINT8: case HL_INT8: case HL_INT32: case HL_INT64: case HL_FLOAT32: case HL_FLOAT64: break;
  default: return hl_error("%s: cannot sort dtype %s", op, hl_dtype_name(x->dtype));
  }
  job j = {.x = x, .out = out, .axis = axis, .arg = arg, .start = start, .n = x->shape[axis]};
  if (j.n == 0 || hl_shape_size(out->ndim, out->shape) == 0) return 0;
  j.nlanes = hl_shape_size(x->ndim, x->shape) / j.n;
  /* many lanes spread over the engine's threads; a task is worth it past ~16K elements */
  hl_pool_for_chunks(&j, task, j.nlanes, j.nlanes * j.n >= (1 << 14), &j.chunk);
  if (j.oom) return hl_error("%s: out of memory sorting lanes of %lld elements", op, (long long)j.n);
  return 0;
}
