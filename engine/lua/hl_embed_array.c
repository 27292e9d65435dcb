/* The embedding API, arrays: host buffers wrapped as arrays without a copy (borrowed storage,
 * hl_storage_wrap), arrays described or copied back to the host. */
#include "hl_embed.h"
#include "hl_device.h"
#include "hl_error.h"
#include "hl_eval.h"
#include "hl_lua.h"
#include "hl_lua_value.h"
#include <lauxlib.h>
#include <string.h>

/* ---- arrays in ---- */

static int push_worker(lua_State *L, hl_embed_job *j) {
  if (!hl_lua_is_loaded(L)) return hl_embed_raise(L, j, HALUA_EARG, "halua: push_array: halua is not loaded in this lua_State (call halua_open first)");
  hl_lua_push_array(L, &j->array);
  return 1;
}

/* The lowest and highest element offsets the strides reach; -1 when they overflow. An empty
 * array reaches none, whatever its strides. */
static int strided_span(int ndim, const int64_t *shape, const int64_t *strides, int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  for (int k = 0; k < ndim; k++)
    if (shape[k] == 0) return 0;
  for (int k = 0; k < ndim; k++) {
    int64_t reach;
    if (__builtin_mul_overflow(shape[k] - 1, strides[k], &reach)) return -1;
    if (__builtin_add_overflow(reach < 0 ? *lo : *hi, reach, reach < 0 ? lo : hi)) return -1;
  }
  return 0;
}

int halua_push_array(lua_State *L, void *data, halua_dtype dtype, int ndim, const int64_t *shape,
                     const int64_t *strides, halua_release_fn release, void *user) {
  static const char *op = "push_array";
  if (!L) return hl_embed_fail(HALUA_EARG, "%s: L is NULL", op);
  int t = hl_embed_dtype(dtype);
  if (t < 0)
    return hl_embed_fail(HALUA_EARG, "%s: unknown dtype %d (use HALUA_BOOL, HALUA_UINT8, HALUA_INT32, HALUA_INT64, HALUA_FLOAT32, "
                            "HALUA_FLOAT64, HALUA_INT8, HALUA_FLOAT16, HALUA_BFLOAT16, HALUA_COMPLEX64 or HALUA_COMPLEX128)", op, (int)dtype);
  if (ndim < 0 || ndim > HL_MAX_DIMS) return hl_embed_fail(HALUA_EARG, "%s: ndim is %d; arrays have 0 to %d dimensions", op, ndim, HL_MAX_DIMS);
  if (!data) return hl_embed_fail(HALUA_EARG, "%s: data is NULL", op);
  if (ndim > 0 && !shape) return hl_embed_fail(HALUA_EARG, "%s: shape is NULL for %d dimensions", op, ndim);
  size_t es = hl_dtype_size((hl_dtype)t);
  if ((uintptr_t)data % es)
    return hl_embed_fail(HALUA_EARG, "%s: data %p is not aligned to the %zu-byte size of a %s element", op, data, es, halua_dtype_name(dtype));
  hl_array a;
  memset(&a, 0, sizeof a);
  a.dtype = (hl_dtype)t;
  a.ndim = ndim;
  /* n: the elements (the row-major stride so far); count: the elements of the non-empty axes,
   * bounded as every shape in the engine is (hl_shape_check), so that an empty array's other
   * extents multiply without overflow too */
  int64_t n = 1, count = 1;
  for (int k = ndim - 1; k >= 0; k--) {
    if (shape[k] < 0)
      return hl_embed_fail(HALUA_EARG, "%s: negative extent %lld on axis %d of shape %s", op, (long long)shape[k], k + 1,
                  hl_shape_str(ndim, (const long long *)shape).s);
    a.shape[k] = shape[k];
    a.strides[k] = strides ? strides[k] : n;
    if (shape[k] && count > INT64_MAX / 16 / shape[k])
      return hl_embed_fail(HALUA_EARG, "%s: shape %s is too large", op, hl_shape_str(ndim, (const long long *)shape).s);
    if (shape[k]) count *= shape[k];
    n *= shape[k];
  }
  int64_t lo, hi, width;   /* (hi - lo overflows for strides near INT64_MIN and INT64_MAX) */
  if (strided_span(ndim, a.shape, a.strides, &lo, &hi) || __builtin_sub_overflow(hi, lo, &width) || width >= INT64_MAX / 16)
    return hl_embed_fail(HALUA_EARG, "%s: shape %s with strides %s reaches too far", op, hl_shape_str(ndim, (const long long *)shape).s,
                hl_shape_str(ndim, (const long long *)a.strides).s);
  /* no buffer lies across either end of the address space: strides that say otherwise are
   * wrong, and `data + lo` below would be undefined */
  uintptr_t at = (uintptr_t)data;
  if ((uint64_t)-lo * es > at || (uint64_t)hi * es > UINTPTR_MAX - at)
    return hl_embed_fail(HALUA_EARG, "%s: shape %s with strides %s reaches outside the address space from data %p", op,
                         hl_shape_str(ndim, (const long long *)shape).s, hl_shape_str(ndim, (const long long *)a.strides).s, data);
  /* the storage starts at the lowest element the strides reach, so negative strides work;
   * release gets the host's own pointer back */
  char *base = (char *)data + lo * (int64_t)es;
  a.offset = -lo;
  size_t nbytes = n ? (size_t)(width + 1) * es : 0;
  a.storage = hl_storage_wrap(base, nbytes, release, user, data);
  if (!a.storage) return hl_embed_fail(HALUA_EMEM, "%s: out of memory", op);
  hl_embed_job j = {.fn = push_worker, .array = a};
  int rc = hl_embed_run(L, &j, 0, 1, op);
  if (rc) {
    /* no userdata took the storage: drop the record without calling the host's release */
    a.storage->release = NULL;
    hl_storage_release(a.storage);
  }
  return rc;
}

/* ---- arrays out ---- */

static int to_array_worker(lua_State *L, hl_embed_job *j) {
  hl_array *a = hl_lua_to_array(L, 1);
  const char *where = j->text;
  if (!a)
    return hl_embed_raise(L, j, HALUA_ETYPE, "halua: %s: the value at stack index %d is a %s, expected an array", where,
                      j->index, luaL_typename(L, 1));
  if (hl_is_leaked(a))
    return hl_embed_raise(L, j, HALUA_ETYPE, "halua: %s: the value at stack index %d is a leaked tracer: it escaped the "
                      "hl.jit function that traced it, whose trace has ended", where, j->index);
  if (!a->storage)
    return hl_embed_raise(L, j, HALUA_ETYPE, "halua: %s: the value at stack index %d is a traced value (inside hl.jit): it has no data yet",
                      where, j->index);
  if (hl_array_device(a) != HL_DEVICE_CPU)
    return hl_embed_raise(L, j, HALUA_ETYPE, "halua: %s: the array at stack index %d is on cuda; move it to the host first (x:to(\"cpu\") in Lua)",
                      where, j->index);
  j->array = *a;   /* a borrowed view: the value stays referenced by the host's stack */
  return 0;
}

/* the engine array at idx, borrowed (valid while the Lua value lives) */
static int get_array(lua_State *L, int idx, hl_array *out, const char *op) {
  if (!L) return hl_embed_fail(HALUA_EARG, "%s: L is NULL", op);
  int top = lua_gettop(L);
  int abs = idx > 0 || idx <= LUA_REGISTRYINDEX ? idx : top + idx + 1;
  if (abs <= 0 || abs > top) return hl_embed_fail(HALUA_EARG, "%s: stack index %d is not valid (the stack holds %d values)", op, idx, top);
  if (!lua_checkstack(L, 1)) return hl_embed_fail(HALUA_EMEM, "%s: the Lua stack cannot grow", op);
  lua_pushvalue(L, abs);
  hl_embed_job j = {.fn = to_array_worker, .text = op, .index = idx};
  int rc = hl_embed_run(L, &j, 1, 0, op);
  if (!rc) *out = j.array;
  return rc;
}

int halua_to_array(lua_State *L, int idx, halua_array *out) {
  if (!out) return hl_embed_fail(HALUA_EARG, "to_array: out is NULL");
  hl_array a;
  int rc = get_array(L, idx, &a, "to_array");
  if (rc) return rc;
  memset(out, 0, sizeof *out);
  out->dtype = hl_embed_public_dtype(a.dtype);
  out->ndim = a.ndim;
  for (int k = 0; k < a.ndim; k++) {
    out->shape[k] = a.shape[k];
    out->strides[k] = a.strides[k];
  }
  out->data = hl_array_data(&a);
  return HALUA_OK;
}

/* Copies a strided array into a row-major block: the last axis in a loop, the others counted
 * like an odometer. */
static void gather(const hl_array *a, char *dst) {
  size_t es = hl_dtype_size(a->dtype);
  int64_t n = hl_shape_size(a->ndim, a->shape);
  if (n == 0) return;
  const char *src = hl_array_data(a);
  if (hl_array_is_contiguous(a)) {
    memcpy(dst, src, (size_t)n * es);
    return;
  }
  int last = a->ndim - 1;
  int64_t idx[HL_MAX_DIMS] = {0};
  int64_t inner = a->shape[last];
  for (int64_t done = 0; done < n; done += inner) {
    int64_t off = 0;
    for (int k = 0; k < last; k++) off += idx[k] * a->strides[k];
    /* each element's address from its offset: a pointer stepped on past the last element of a
     * row (a wrapped host buffer's stride may be far larger than the row) can leave the address
     * space, which is undefined even unread (found by fuzz/embed_fuzz.c) */
    for (int64_t i = 0; i < inner; i++, dst += es) memcpy(dst, src + (off + i * a->strides[last]) * (int64_t)es, es);
    for (int k = last - 1; k >= 0 && ++idx[k] == a->shape[k]; k--) idx[k] = 0;
  }
}

int halua_copy_array(lua_State *L, int idx, halua_dtype dtype, void *dst, size_t dst_bytes) {
  static const char *op = "copy_array";
  int t = hl_embed_dtype(dtype);
  if (t < 0) return hl_embed_fail(HALUA_EARG, "%s: unknown dtype %d", op, (int)dtype);
  if (!dst && dst_bytes) return hl_embed_fail(HALUA_EARG, "%s: dst is NULL", op);
  hl_array a;
  int rc = get_array(L, idx, &a, op);
  if (rc) return rc;
  if ((int)a.dtype != t)
    return hl_embed_fail(HALUA_ETYPE, "%s: the array is %s, the host asked for %s (convert it in Lua with x:astype(\"%s\"))", op,
                hl_dtype_name(a.dtype), halua_dtype_name(dtype), halua_dtype_name(dtype));
  int64_t n = hl_shape_size(a.ndim, a.shape);
  size_t es = hl_dtype_size(a.dtype);
  if ((size_t)n * es != dst_bytes)
    return hl_embed_fail(HALUA_ESHAPE, "%s: the array %s%s has %lld elements (%zu bytes), the destination holds %zu bytes", op,
                hl_dtype_name(a.dtype), hl_shape_str(a.ndim, (const long long *)a.shape).s, (long long)n, (size_t)n * es, dst_bytes);
  gather(&a, dst);
  return HALUA_OK;
}

