/* The Lua binding: the array metatable, one closure per primitive (generated from the primitive
 * table), tracing and compiled programs; it registers the other files' functions (hl_lua_io.c,
 * hl_lua_loop.c), which share only hl_lua_value.c's helpers with it. Errors are raised as plain
 * Lua strings that begin "halua: " (no position prefix), after every engine resource is released. */
#include "hl_cache.h"
#include "hl_eager_memo.h"
#include "hl_disk.h"
#include "hl_error.h"
#include "hl_eval.h"
#include "hl_export.h"
#include "hl_frontend.h"
#include "hl_backend.h"
#include "hl_device.h"
#include "hl_dist.h"
#include "hl_lua.h"
#include "hl_lua_io.h"
#include "hl_lua_modules.h"
#include "hl_lua_loop.h"
#include "hl_lua_call.h"
#include "hl_lua_value.h"
#include "hl_loop.h"
#include "hl_poly.h"
#include "hl_runtime.h"
#include "hl_interrupt.h"
#include <lauxlib.h>
#include <lua.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define raise hl_lua_raise
#define raisef hl_lua_raisef
#define to_array hl_lua_to_array
#define push_array hl_lua_push_value
#define check_trace hl_lua_check_trace

static hl_array *check_array(lua_State *L, int idx, const char *op) {
  hl_array *a = to_array(L, idx);
  if (!a) hl_lua_arg_error(L, op, idx, idx, "an array");
  if (hl_is_leaked(a)) hl_lua_raisef(L, "halua: %s: " HL_LEAKED_TRACER, op);
  return a;
}

/* The result of an op: a tracer result shares its env (trace) with an input tracer. mt: the
 * array metatable's index, or 0 (hl_lua_push_value_mt). */
static void push_result_mt(lua_State *L, hl_array *r, int first, int last, int mt) {
  int trace_idx = 0;
  if (r->graph) {
    for (int k = first; k <= last && !trace_idx; k++) {
      hl_array *a = to_array(L, k);
      if (a && a->graph == r->graph) {
        lua_getfenv(L, k);
        lua_rawgeti(L, -1, 1);
        lua_remove(L, -2);
        trace_idx = lua_gettop(L);
      }
    }
  }
  hl_lua_push_value_mt(L, r, trace_idx, mt);
  if (trace_idx) lua_remove(L, trace_idx);
}
static void push_result(lua_State *L, hl_array *r, int first, int last) { push_result_mt(L, r, first, last, 0); }

/* (the three functions below check their array too: debug.setmetatable can give the array
 * metatable to any value) */
static int array_gc(lua_State *L) {
  hl_array *a = to_array(L, 1);
  if (a) hl_array_release(a);
  return 0;
}

static hl_dtype check_dtype(lua_State *L, int idx, const char *op, hl_dtype dflt) {
  if (lua_isnoneornil(L, idx)) return dflt;
  const char *s = lua_tostring(L, idx);
  int t = s ? hl_dtype_from_name(s) : -1;
  if (t < 0)
    raisef(L, "halua: %s: unknown dtype %s (use float32 float64 float16 bfloat16 int8 int32 int64 uint8 bool)", op,
           s ? s : luaL_typename(L, idx));
  return (hl_dtype)t;
}

/* hl.jit's dynamic sizes (lua/halua/symdim.lua) are cdata that stand for a number where a size or
 * a scalar is taken: their traced value, which the registry's "halua.symdim" function gives (nil
 * for any other cdata). lua_tonumber would read them as 0, so every number read here goes through
 * num_at. */
static int symdim_value(lua_State *L, int idx, double *v) {
  if (lua_type(L, idx) != 10 /* LUA_TCDATA */) return 0;
  if (idx < 0 && idx > LUA_REGISTRYINDEX) idx = lua_gettop(L) + idx + 1;
  lua_getfield(L, LUA_REGISTRYINDEX, "halua.symdim");
  if (!lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  lua_pushvalue(L, idx);
  lua_call(L, 1, 1);
  int ok = lua_type(L, -1) == LUA_TNUMBER;
  if (ok) *v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return ok;
}
static int is_num(lua_State *L, int idx) {
  double v;
  return lua_type(L, idx) == LUA_TNUMBER || symdim_value(L, idx, &v);
}
static double num_at(lua_State *L, int idx) {
  double v = 0;
  return lua_type(L, idx) == LUA_TNUMBER || !symdim_value(L, idx, &v) ? lua_tonumber(L, idx) : v;
}

/* shape from a number or a table of numbers */
static int check_shape(lua_State *L, int idx, const char *op, int64_t *shape) {
  /* the same test for a number as for a table's entries: NaN, infinities and values past 9e15
   * (no array has that many elements, and the int64 conversion is exact below it) are refused
   * here, before any op sees the shape or an array is placed on a device */
  if (is_num(L, idx)) {
    double v = num_at(L, idx);
    if (!(v >= 0 && v <= 9.0e15) || v != floor(v)) raisef(L, "halua: %s: shape entries must be non-negative integers", op);
    shape[0] = (int64_t)v;
    return 1;
  }
  if (!lua_istable(L, idx)) raisef(L, "halua: %s: shape must be a number or a table of numbers, got %s", op, luaL_typename(L, idx));
  int n = (int)lua_objlen(L, idx);
  if (n > HL_MAX_DIMS) raisef(L, "halua: %s: at most 8 dimensions", op);
  for (int k = 0; k < n; k++) {
    lua_rawgeti(L, idx, k + 1);
    double v = num_at(L, -1);
    if (!is_num(L, -1) || !(v >= 0 && v <= 9.0e15) || v != floor(v))
      raisef(L, "halua: %s: shape entries must be non-negative integers", op);
    shape[k] = (int64_t)v;
    lua_pop(L, 1);
  }
  return n;
}

/* ---- hl.array from Lua values ---- */

typedef struct {
  int ndim;
  int64_t shape[HL_MAX_DIMS];
  int has_float, has_bool, has_number;
  int leaf_depth;   /* depth of the first value seen: every value must be there; -1 before */
} scan_info;

static void scan(lua_State *L, int idx, int depth, scan_info *s) {
  int t = lua_type(L, idx);
  if (t == LUA_TNUMBER || t == LUA_TBOOLEAN) {
    if (s->leaf_depth < 0) s->leaf_depth = depth;
    if (depth != s->ndim || depth != s->leaf_depth) raisef(L, "halua: array: ragged nested table (a value where a table was expected, or the reverse)");
    if (t == LUA_TBOOLEAN) s->has_bool = 1;
    else {
      double v = lua_tonumber(L, idx);
      s->has_number = 1;
      if (v != floor(v) || !isfinite(v)) s->has_float = 1;
    }
    return;
  }
  if (t != LUA_TTABLE) {
    lua_pushfstring(L, "halua: array: cannot make an array from a %s", luaL_typename(L, idx));
    lua_error(L);
  }
  int n = (int)lua_objlen(L, idx);
  /* a sequence 1..n and nothing else: a hole ({1, nil, 3}) or a named key ({a = 1}) would be
   * dropped without a word */
  int entries = 0;
  lua_pushnil(L);
  while (lua_next(L, idx)) {
    lua_pop(L, 1);
    entries++;
    if (entries > n || lua_type(L, -1) != LUA_TNUMBER) {
      lua_pop(L, 1);
      raisef(L, "halua: array: not a sequence: the table has a hole or a named key (arrays are made from tables like {1, 2, 3})");
    }
  }
  if (s->leaf_depth >= 0 && depth >= s->leaf_depth) raisef(L, "halua: array: ragged nested table (a table where a value was expected)");
  if (depth >= HL_MAX_DIMS) raisef(L, "halua: array: at most 8 dimensions");
  if (depth == s->ndim) {
    s->shape[s->ndim++] = n;
  } else if (depth > s->ndim || s->shape[depth] != n) {
    raisef(L, "halua: array: ragged nested table (rows of different lengths)");
  }
  for (int k = 1; k <= n; k++) {
    lua_rawgeti(L, idx, k);
    scan(L, lua_gettop(L), depth + 1, s);
    lua_pop(L, 1);
  }
}

/* Every number of the nested table at idx can be stored in the integer dtype t as it is (a
 * fraction is truncated, as NumPy's conversion does); NaN, infinities and values out of t's
 * range are an error rather than a wrapped or pinned value. */
static void check_values(lua_State *L, int idx, hl_dtype t) {
  if (lua_type(L, idx) == LUA_TNUMBER) {
    double v = lua_tonumber(L, idx), lo, hi;   /* [lo, hi): hi is the first value too large */
    switch (t) {
    case HL_INT8: lo = -128, hi = 128; break;
    case HL_UINT8: lo = 0, hi = 256; break;
    case HL_INT32: lo = -2147483648.0, hi = 2147483648.0; break;
    default: lo = -9223372036854775808.0, hi = 9223372036854775808.0; break;
    }
    if (!isfinite(v)) raisef(L, "halua: array: %s cannot be stored in %s", isnan(v) ? "NaN" : "an infinity", hl_dtype_name(t));
    /* (a fraction truncates toward 0; int64's lo - 1 is lo itself as a double) */
    if (!(t == HL_INT64 ? v >= lo && v < hi : v > lo - 1 && v < hi)) {
      char buf[64];
      snprintf(buf, sizeof buf, "%.17g", v);
      raisef(L, "halua: array: %s is out of range for %s", buf, hl_dtype_name(t));
    }
    return;
  }
  if (lua_type(L, idx) != LUA_TTABLE) return;
  int n = (int)lua_objlen(L, idx);
  for (int k = 1; k <= n; k++) {
    lua_rawgeti(L, idx, k);
    check_values(L, lua_gettop(L), t);
    lua_pop(L, 1);
  }
}

static void fill(lua_State *L, int idx, hl_array *a, int64_t *pos) {
  if (lua_type(L, idx) != LUA_TTABLE) {
    double v = lua_type(L, idx) == LUA_TBOOLEAN ? lua_toboolean(L, idx) : lua_tonumber(L, idx);
    hl_array_set(a, (*pos)++, v);
    return;
  }
  int n = (int)lua_objlen(L, idx);
  for (int k = 1; k <= n; k++) {
    lua_rawgeti(L, idx, k);
    fill(L, lua_gettop(L), a, pos);
    lua_pop(L, 1);
  }
}

static int l_array(lua_State *L) {
  if (to_array(L, 1)) {
    hl_array *x = to_array(L, 1);
    hl_array r;
    if (lua_isnoneornil(L, 2)) {
      hl_array_copy_ref(&r, x);
    } else if (hl_op_cast(x, check_dtype(L, 2, "array", x->dtype), &r)) {
      return raise(L);
    }
    push_result(L, &r, 1, 1);
    return 1;
  }
  scan_info s = {0};
  s.leaf_depth = -1;
  scan(L, 1, 0, &s);
  hl_dtype dflt = s.has_bool && !s.has_number ? HL_BOOL : HL_FLOAT32;
  if (s.has_bool && s.has_number) raisef(L, "halua: array: mixes booleans and numbers");
  hl_dtype t = check_dtype(L, 2, "array", dflt);
  if (hl_dtype_is_int(t)) check_values(L, 1, t);
  hl_array a;
  if (hl_array_alloc(&a, t, s.ndim, s.shape)) return raise(L);
  int64_t pos = 0;
  fill(L, 1, &a, &pos);
  push_array(L, &a, 0);
  return 1;
}

static int l_full(lua_State *L) {
  int64_t shape[HL_MAX_DIMS];
  int n = check_shape(L, 1, "full", shape);
  if (hl_shape_check("full", n, shape)) return raise(L);
  int isb = lua_type(L, 2) == LUA_TBOOLEAN;
  if (!isb && !is_num(L, 2)) raisef(L, "halua: full: fill value must be a number or boolean, got %s", luaL_typename(L, 2));
  double v = isb ? lua_toboolean(L, 2) : num_at(L, 2);
  hl_dtype t = check_dtype(L, 3, "full", isb ? HL_BOOL : HL_FLOAT32);
  /* full(shape, v, dtype, tracer): a constant of the tracer's trace (no pipeline input) */
  hl_array *like = lua_isnoneornil(L, 4) ? NULL : check_array(L, 4, "full");
  /* a 0-d value broadcast (stride 0): no kernel, no n-element fill until someone needs it */
  hl_array s, r;
  hl_attrs at = {.dtype = t, .f = v};
  if (like && hl_is_abstract(like) ? hl_trace_source((hl_trace *)like->graph, HL_P_CONST, &at, &s)
                                   : hl_apply(HL_P_CONST, 0, NULL, &at, &s))
    return raise(L);
  int rc = hl_op_broadcast_to(&s, n, shape, &r);
  hl_array_release(&s);
  if (rc) return raise(L);
  if (like) push_result(L, &r, 4, 4);
  else push_array(L, &r, 0);
  return 1;
}

/* ---- elementwise ops: one closure per primitive, upvalue 1 = prim, 2 = name, 3 = the array
 * metatable ---- */

static void get_operand(lua_State *L, int idx, hl_operand *o, const char *op) {
  memset(o, 0, sizeof *o);
  if ((o->array = to_array(L, idx))) {   /* (first: most operands are arrays) */
    if (hl_is_leaked(o->array)) hl_lua_raisef(L, "halua: %s: " HL_LEAKED_TRACER, op);
    return;
  }
  int t = lua_type(L, idx);
  if (t == LUA_TNUMBER) {
    o->number = lua_tonumber(L, idx);
  } else if (t == LUA_TBOOLEAN) {
    o->number = lua_toboolean(L, idx);
    o->is_bool = 1;
  } else if (!(t == 10 /* LUA_TCDATA */ && symdim_value(L, idx, &o->number))) {
    hl_lua_arg_error(L, op, idx, idx, "an array or a number");
  }
}

/* The closures of elementwise primitives and reductions have the primitive's row of hl_prims as
 * upvalue 1 (a light userdata: no conversion from a number) and the array metatable as upvalue 2
 * (no lookup in the registry for the result). */
static int closure_prim(lua_State *L) {
  return (int)((const hl_prim_info *)lua_touserdata(L, lua_upvalueindex(1)) - hl_prims);
}

static int l_elemwise(lua_State *L) {
  int prim = closure_prim(L);
  int n = hl_prims[prim].arity;
  const char *name = hl_prims[prim].name;
  if (lua_gettop(L) < n) {
    lua_pushfstring(L, "halua: %s: takes %d operands, got %d", name, n, lua_gettop(L));
    return lua_error(L);
  }
  hl_operand ops[4];
  for (int k = 0; k < n; k++) get_operand(L, k + 1, &ops[k], name);
  hl_array r;
  if (hl_op_elemwise(prim, n, ops, NULL, &r)) return raise(L);
  push_result_mt(L, &r, 1, n, lua_upvalueindex(2));
  return 1;
}

static int l_cast(lua_State *L) {
  hl_array *x = check_array(L, 1, "astype");
  if (lua_isnoneornil(L, 2)) return raisef(L, "halua: astype: expected a dtype name such as \"float32\", got nothing");
  hl_dtype t = check_dtype(L, 2, "astype", x->dtype);
  if (hl_dtype_is_complex(x->dtype) && !hl_dtype_is_complex(t))
    return raisef(L, "halua: astype: %s to %s would drop the imaginary part; take hl.real(x) or hl.abs(x) first", hl_dtype_name(x->dtype),
                  hl_dtype_name(t));
  hl_array r;
  if (hl_op_cast(x, t, &r)) return raise(L);
  push_result(L, &r, 1, 1);
  return 1;
}

/* reduce(prim, x, mask) -> reduced array (axes removed) */
static int l_reduce(lua_State *L) {
  int prim = closure_prim(L);
  const char *name = hl_prims[prim].name;
  hl_array *x = check_array(L, 1, name);
  hl_attrs at = {0};
  at.i[0] = (int64_t)luaL_checknumber(L, 2);
  hl_array r;
  const hl_array *in[1] = {x};
  if (hl_apply(prim, 1, in, &at, &r)) return raise(L);
  push_result(L, &r, 1, 1);
  return 1;
}

static int l_matmul(lua_State *L) {
  hl_array *a = check_array(L, 1, "matmul"), *b = check_array(L, 2, "matmul");
  hl_array r;
  if (hl_op_matmul(a, b, &r)) return raise(L);
  push_result(L, &r, 1, 2);
  return 1;
}

static int l_linalg_solve(lua_State *L) {
  hl_array *a = check_array(L, 1, "linalg.solve"), *b = check_array(L, 2, "linalg.solve");
  hl_array r;
  if (hl_op_solve(a, b, &r)) return raise(L);
  push_result(L, &r, 1, 2);
  return 1;
}

/* linalg_solve_triangular(a, b, mode): mode's bits as hl_linalg.h says */
static int l_linalg_solve_triangular(lua_State *L) {
  hl_array *a = check_array(L, 1, "linalg.solve_triangular"), *b = check_array(L, 2, "linalg.solve_triangular");
  hl_array r;
  if (hl_op_solve_triangular(a, b, (int)luaL_checkinteger(L, 3), &r)) return raise(L);
  push_result(L, &r, 1, 2);
  return 1;
}

static int l_linalg_cholesky(lua_State *L) {
  hl_array *a = check_array(L, 1, "linalg.cholesky");
  hl_array r;
  if (hl_op_cholesky(a, &r)) return raise(L);
  push_result(L, &r, 1, 1);
  return 1;
}

/* linalg_decomp(name, a, mode): a decomposition primitive's packed factors (lua/halua/linalg.lua
 * unpacks them) */
static int l_linalg_decomp(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  int prim = hl_prim_from_name(name);
  if (prim != HL_P_QR && prim != HL_P_SVD && prim != HL_P_EIGH && prim != HL_P_SLOGDET)
    return luaL_error(L, "halua: linalg: %s is not a decomposition", name);
  hl_array *a = check_array(L, 2, name);
  hl_array r;
  if (hl_op_linalg_decomp(prim, a, (int)luaL_checkinteger(L, 3), &r)) return raise(L);
  push_result(L, &r, 2, 2);
  return 1;
}

/* sort(x, axis0, arg): the sorted values along the axis, or (arg true) their 0-based positions */
static int l_sort(lua_State *L) {
  int arg = lua_toboolean(L, 3);
  hl_array *x = check_array(L, 1, arg ? "argsort" : "sort");
  hl_attrs at = {0};
  at.i[0] = (int64_t)luaL_checknumber(L, 2);
  hl_array r;
  const hl_array *in[1] = {x};
  if (hl_apply(arg ? HL_P_ARGSORT : HL_P_SORT, 1, in, &at, &r)) return raise(L);
  push_result(L, &r, 1, 1);
  return 1;
}

/* fft(x, axis0, how [, n]): the unscaled transform along the axis of the (re, im) pairs x, forward
 * (how false or nil) or backward (true); of the real values x, its first n / 2 + 1 pairs (how
 * "real"); or the n real values whose transform's first n / 2 + 1 values are the pairs x (how
 * "real_inverse") */
static int l_fft(lua_State *L) {
  int prim = HL_P_FFT_FORWARD;
  if (lua_type(L, 3) == LUA_TSTRING) prim = strcmp(lua_tostring(L, 3), "real") == 0 ? HL_P_FFT_REAL : HL_P_FFT_REAL_INVERSE;
  else if (lua_toboolean(L, 3)) prim = HL_P_FFT_BACKWARD;
  hl_array *x = check_array(L, 1, hl_prims[prim].name);
  hl_attrs at = {0};
  at.i[0] = (int64_t)luaL_checknumber(L, 2);
  if (prim == HL_P_FFT_REAL_INVERSE) at.i[1] = (int64_t)luaL_checknumber(L, 4);
  hl_array r;
  const hl_array *in[1] = {x};
  if (hl_apply(prim, 1, in, &at, &r)) return raise(L);
  push_result(L, &r, 1, 1);
  return 1;
}

/* dist(name, x, a, b, size): the collective `name` (a dist.* primitive) with its attributes,
 * ranks and axes 0-based (lua/halua/dist.lua checks them and converts) */
static int l_dist(lua_State *L) {
  const char *name = luaL_checkstring(L, 1);
  int prim = hl_prim_from_name(name);
  if (prim < 0 || hl_prims[prim].kind != HL_K_DIST) return luaL_error(L, "halua: dist: %s is not a collective", name);
  hl_array *x = check_array(L, 2, name);
  hl_attrs at = {0};
  at.i[0] = (int64_t)luaL_checknumber(L, 3);
  at.i[1] = (int64_t)luaL_checknumber(L, 4);
  at.i[2] = (int64_t)luaL_checknumber(L, 5);
  hl_array r;
  const hl_array *in[1] = {x};
  if (hl_apply(prim, 1, in, &at, &r)) return raise(L);
  push_result(L, &r, 2, 2);
  return 1;
}

/* dist_set_transport(p): the collectives' transport (a light userdata from halua_dist), or none */
static int l_dist_set_transport(lua_State *L) {
  hl_dist_set_transport(lua_islightuserdata(L, 1) ? (const hl_dist_transport *)lua_touserdata(L, 1) : NULL);
  return 0;
}

static int l_reshape(lua_State *L) {
  hl_array *x = check_array(L, 1, "reshape");
  int64_t shape[HL_MAX_DIMS];
  int n = check_shape(L, 2, "reshape", shape);
  hl_array r;
  if (hl_op_reshape(x, n, shape, &r)) return raise(L);
  push_result(L, &r, 1, 1);
  return 1;
}

static int l_broadcast_to(lua_State *L) {
  hl_array *x = check_array(L, 1, "broadcast_to");
  int64_t shape[HL_MAX_DIMS];
  int n = check_shape(L, 2, "broadcast_to", shape);
  hl_array r;
  if (hl_op_broadcast_to(x, n, shape, &r)) return raise(L);
  push_result(L, &r, 1, 1);
  return 1;
}

/* transpose(x, perm0) with a 0-based permutation table */
static int l_transpose(lua_State *L) {
  hl_array *x = check_array(L, 1, "transpose");
  hl_attrs at = {0};
  luaL_checktype(L, 2, LUA_TTABLE);
  if ((int)lua_objlen(L, 2) != x->ndim) {
    lua_pushfstring(L, "halua: transpose: permutation has %d entries for shape %s", (int)lua_objlen(L, 2),
                    hl_shape_str(x->ndim, (const long long *)x->shape).s);
    return lua_error(L);
  }
  for (int k = 0; k < x->ndim; k++) {
    lua_rawgeti(L, 2, k + 1);
    at.i[k] = (int64_t)num_at(L, -1);
    lua_pop(L, 1);
  }
  hl_array r;
  const hl_array *in[1] = {x};
  if (hl_apply(HL_P_TRANSPOSE, 1, in, &at, &r)) return raise(L);
  push_result(L, &r, 1, 1);
  return 1;
}

/* view_as_real(z) and view_as_complex(x): complex arrays and the float arrays of their pairs */
static int l_complex_view(lua_State *L, int prim, const char *name) {
  hl_array *x = check_array(L, 1, name);
  hl_array r;
  const hl_array *in[1] = {x};
  if (hl_apply(prim, 1, in, NULL, &r)) return raise(L);
  push_result(L, &r, 1, 1);
  return 1;
}
static int l_view_as_real(lua_State *L) { return l_complex_view(L, HL_P_VIEW_REAL, "view_as_real"); }
static int l_view_as_complex(lua_State *L) { return l_complex_view(L, HL_P_VIEW_COMPLEX, "view_as_complex"); }

/* slice(x, starts0, steps, counts) */
static int l_slice(lua_State *L) {
  hl_array *x = check_array(L, 1, "index");   /* x[key], x:at(key) */
  hl_attrs at = {0};
  at.nshape = x->ndim;
  for (int k = 0; k < x->ndim; k++) {
    lua_rawgeti(L, 2, k + 1);
    lua_rawgeti(L, 3, k + 1);
    lua_rawgeti(L, 4, k + 1);
    at.i[k] = (int64_t)num_at(L, -3);
    at.i[HL_MAX_DIMS + k] = (int64_t)num_at(L, -2);
    at.shape[k] = (int64_t)num_at(L, -1);
    lua_pop(L, 3);
  }
  hl_array r;
  const hl_array *in[1] = {x};
  if (hl_apply(HL_P_SLICE, 1, in, &at, &r)) return raise(L);
  push_result(L, &r, 1, 1);
  return 1;
}

/* gather(x, idx, axis0) and scatter_add(values, idx, axis0, n): indices 0-based, no promotion
 * (the index array keeps its integer dtype) */
static int l_indexed(lua_State *L, int prim) {
  const char *op = hl_prims[prim].name;
  hl_array *x = check_array(L, 1, op);
  hl_array *idx = check_array(L, 2, op);
  hl_attrs at = {0};
  at.i[0] = (int64_t)luaL_checknumber(L, 3);
  if (prim == HL_P_SCATTER_ADD) at.i[1] = (int64_t)luaL_checknumber(L, 4);
  const hl_array *in[2] = {x, idx};
  hl_array r;
  if (hl_apply(prim, 2, in, &at, &r)) return raise(L);
  push_result(L, &r, 1, 2);
  return 1;
}
static int l_gather(lua_State *L) { return l_indexed(L, HL_P_GATHER); }
static int l_scatter_add(lua_State *L) { return l_indexed(L, HL_P_SCATTER_ADD); }

/* scatter(operand, updates, idx, axis0, mode): mode a name of hl_scatter_mode ("add", "set",
 * "mul", "min", "max"); indices 0-based, the updates already of the operand's dtype */
static int l_scatter(lua_State *L) {
  hl_array *x = check_array(L, 1, "scatter");
  hl_array *u = check_array(L, 2, "scatter");
  hl_array *idx = check_array(L, 3, "scatter");
  hl_attrs at = {0};
  at.i[0] = (int64_t)luaL_checknumber(L, 4);
  const char *mode = luaL_checkstring(L, 5);
  at.i[2] = -1;
  for (int m = 0; m <= HL_SCATTER_MAX; m++)
    if (!strcmp(mode, hl_scatter_mode_name(m))) at.i[2] = m;
  if (at.i[2] < 0) raisef(L, "halua: scatter: unknown mode '%s' (add, set, mul, min or max)", mode);
  at.i[1] = at.i[0] >= 0 && at.i[0] < x->ndim ? x->shape[at.i[0]] : 0;
  const hl_array *in[3] = {x, u, idx};
  hl_array r;
  if (hl_apply(HL_P_SCATTER, 3, in, &at, &r)) return raise(L);
  push_result(L, &r, 1, 3);
  return 1;
}

/* concatenate({arrays}, axis0): operands are promoted to one dtype first */
static int l_concatenate(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int n = (int)lua_objlen(L, 1);
  if (n < 1 || n > 64) raisef(L, "halua: concatenate: needs 1 to 64 arrays");
  int base = lua_gettop(L);
  const hl_array *in[64];
  hl_array tmp[64];
  int ntmp = 0;
  hl_dtype t = HL_BOOL;
  for (int k = 0; k < n; k++) {
    lua_rawgeti(L, 1, k + 1);
    hl_array *a = to_array(L, -1);
    if (!a) {
      lua_pushfstring(L, "halua: concatenate: element %d is a %s, expected an array", k + 1, luaL_typename(L, -1));
      return lua_error(L);
    }
    in[k] = a;
    t = k ? hl_dtype_promote(t, a->dtype) : a->dtype;
  }
  hl_attrs at = {0};
  at.i[0] = (int64_t)luaL_checknumber(L, 2);
  int rc = 0;
  for (int k = 0; k < n && !rc; k++)
    if (in[k]->dtype != t) {
      rc = hl_op_cast(in[k], t, &tmp[ntmp]);
      if (!rc) in[k] = &tmp[ntmp++];
    }
  hl_array r;
  if (!rc) rc = hl_apply(HL_P_CONCAT, n, in, &at, &r);
  for (int k = 0; k < ntmp; k++) hl_array_release(&tmp[k]);
  if (rc) return raise(L);
  push_result(L, &r, base + 1, base + n);
  return 1;
}

/* iota(dtype, shape, axis0) */
static int l_iota(lua_State *L) {
  hl_attrs at = {0};
  at.dtype = check_dtype(L, 1, "iota", HL_INT32);
  at.nshape = check_shape(L, 2, "iota", at.shape);
  at.i[0] = (int64_t)luaL_checknumber(L, 3);
  /* iota(dtype, shape, axis, tracer): an index grid of the tracer's trace, as full's constants */
  hl_array *like = lua_isnoneornil(L, 4) ? NULL : check_array(L, 4, "iota");
  hl_array r;
  if (like && hl_is_abstract(like) ? hl_trace_source((hl_trace *)like->graph, HL_P_IOTA, &at, &r)
                                   : hl_apply(HL_P_IOTA, 0, NULL, &at, &r))
    return raise(L);
  if (like) push_result(L, &r, 4, 4);
  else push_array(L, &r, 0);
  return 1;
}

/* ---- reading arrays back ---- */

static int tracer_error(lua_State *L, const char *what, const hl_array *a) {
  if (hl_is_leaked(a)) return raisef(L, "halua: %s: " HL_LEAKED_TRACER, what);
  lua_pushfstring(L, "halua: %s: cannot turn a traced value into a Lua value inside hl.jit; use hl.where or hl.cond "
                     "for data-dependent choices, or mark the argument static with static_argnums", what);
  return lua_error(L);
}

static void push_elem(lua_State *L, const hl_array *a, int64_t flat) {
  if (hl_dtype_is_complex(a->dtype)) {
    /* Lua has no complex numbers: a complex element is the pair {re, im} (docs/complex.md) */
    const char *p = (const char *)hl_array_data(a) + hl_array_elem_offset(a, flat) * (int64_t)hl_dtype_size(a->dtype);
    int dbl = a->dtype == HL_COMPLEX128;
    lua_createtable(L, 2, 0);
    for (int k = 0; k < 2; k++) {
      lua_pushnumber(L, dbl ? ((const double *)p)[k] : (double)((const float *)p)[k]);
      lua_rawseti(L, -2, k + 1);
    }
    return;
  }
  double v = hl_array_get(a, flat);
  if (a->dtype == HL_BOOL) lua_pushboolean(L, v != 0);
  else lua_pushnumber(L, v);
}

/* Arrays on a GPU are read through a host copy, pushed as a new userdata at the stack top. */
static hl_array *on_host(lua_State *L, hl_array *x) {
  if (hl_array_device(x) == HL_DEVICE_CPU) return x;
  hl_array h;
  if (hl_to_device(x, HL_DEVICE_CPU, &h)) {
    raise(L);
    return NULL;
  }
  return push_array(L, &h, 0);
}

static int l_item(lua_State *L) {
  hl_array *x = check_array(L, 1, "item");
  if (hl_is_abstract(x)) return tracer_error(L, "item", x);
  x = on_host(L, x);
  int64_t n = hl_shape_size(x->ndim, x->shape);
  if (n != 1) {
    lua_pushfstring(L, "halua: item: needs a one-element array, got shape %s", hl_shape_str(x->ndim, (const long long *)x->shape).s);
    return lua_error(L);
  }
  push_elem(L, x, 0);
  return 1;
}

static void totable_rec(lua_State *L, const hl_array *a, int depth, int64_t *flat) {
  if (depth == a->ndim) {
    push_elem(L, a, (*flat)++);
    return;
  }
  lua_createtable(L, (int)a->shape[depth], 0);
  for (int64_t k = 0; k < a->shape[depth]; k++) {
    totable_rec(L, a, depth + 1, flat);
    lua_rawseti(L, -2, (int)k + 1);
  }
}

static int l_totable(lua_State *L) {
  hl_array *x = check_array(L, 1, "totable");
  if (hl_is_abstract(x)) return tracer_error(L, "totable", x);
  x = on_host(L, x);
  int64_t flat = 0;
  totable_rec(L, x, 0, &flat);
  return 1;
}

/* get(x, flat0): one element, for the printer */
static int l_get(lua_State *L) {
  hl_array *x = check_array(L, 1, "get");
  if (hl_is_abstract(x)) return tracer_error(L, "tostring", x);
  if (hl_array_device(x) != HL_DEVICE_CPU) return raisef(L, "halua: get: the array is on cuda; copy it with x:to(\"cpu\")");
  push_elem(L, x, (int64_t)luaL_checknumber(L, 2));
  return 1;
}

static int l_info(lua_State *L) {
  hl_array *x = to_array(L, 1);
  if (!x) return 0;
  lua_pushstring(L, hl_dtype_name(x->dtype));
  lua_createtable(L, x->ndim, 0);
  for (int k = 0; k < x->ndim; k++) {
    lua_pushnumber(L, (double)x->shape[k]);
    lua_rawseti(L, -2, k + 1);
  }
  lua_pushboolean(L, hl_is_abstract(x));
  return 3;
}

static int l_is_array(lua_State *L) {
  lua_pushboolean(L, to_array(L, 1) != NULL);
  return 1;
}

/* usable(x, op): whether x is an array; a leaked tracer is op's error (as_array's check in Lua,
 * for the functions written there, at the cost of is_array) */
static int l_usable(lua_State *L) {
  hl_array *x = to_array(L, 1);
  if (x && hl_is_leaked(x)) return raisef(L, "halua: %s: " HL_LEAKED_TRACER, luaL_checkstring(L, 2));
  lua_pushboolean(L, x != NULL);
  return 1;
}

static int l_is_tracer(lua_State *L) {
  hl_array *x = to_array(L, 1);
  lua_pushboolean(L, x && hl_is_abstract(x));
  return 1;
}

/* A tracer's shape (or size) as hl.jit's dynamic_axes show it while a polymorphic trace is built
 * (lua/halua/symdim.lua's hook, given the shape's numbers and the tracer's trace): 1 when pushed,
 * 0 for any other array or when no such hook is set. */
static int push_symbolic_shape(lua_State *L, const hl_array *x, int size) {
  if (!hl_is_abstract(x)) return 0;
  lua_getfield(L, LUA_REGISTRYINDEX, "halua.symdim_shape");
  if (!lua_isfunction(L, -1)) {
    lua_pop(L, 1);
    return 0;
  }
  lua_createtable(L, x->ndim, 0);
  for (int d = 0; d < x->ndim; d++) {
    lua_pushnumber(L, (double)x->shape[d]);
    lua_rawseti(L, -2, d + 1);
  }
  lua_pushlightuserdata(L, x->graph);
  lua_pushboolean(L, size);
  lua_call(L, 3, 1);
  return 1;
}

/* Properties read by __index: returns nil when not a property. */
static int l_property(lua_State *L) {
  hl_array *x = to_array(L, 1);
  const char *k = lua_tostring(L, 2);
  if (!x || !k) return 0;
  switch (k[0]) {
  case 'n':
    if (!strcmp(k, "ndim")) {
      lua_pushinteger(L, x->ndim);
      return 1;
    }
    break;
  case 's':
    if (!strcmp(k, "size")) {
      if (push_symbolic_shape(L, x, 1)) return 1;
      lua_pushnumber(L, (double)hl_shape_size(x->ndim, x->shape));
      return 1;
    }
    if (!strcmp(k, "shape")) {
      if (push_symbolic_shape(L, x, 0)) return 1;
      lua_createtable(L, x->ndim, 0);
      for (int d = 0; d < x->ndim; d++) {
        lua_pushnumber(L, (double)x->shape[d]);
        lua_rawseti(L, -2, d + 1);
      }
      return 1;
    }
    break;
  case 'd':
    if (!strcmp(k, "dtype")) {
      lua_pushstring(L, hl_dtype_name(x->dtype));
      return 1;
    }
    if (!strcmp(k, "device")) {
      lua_pushstring(L, hl_array_device(x) == HL_DEVICE_CPU ? "cpu" : "cuda:1");
      return 1;
    }
    break;
  }
  return 0;
}

static int array_len(lua_State *L) {
  hl_array *x = to_array(L, 1);
  if (!x) return hl_lua_arg_error(L, "len", 1, 1, "an array");
  if (x->ndim == 0) return raisef(L, "halua: len: a 0-d array has no length (use x:item())");
  lua_pushnumber(L, (double)x->shape[0]);
  return 1;
}

static int array_compare(lua_State *L) {
  return raisef(L, "halua: compare: < and <= on arrays cannot give an array in Lua; use hl.lt(a, b), hl.le, "
                   "hl.gt, hl.ge, hl.eq (or a:lt(b)) ");
}

/* ---- tracing ---- */


/* trace_new([parent]) -> a trace; nested in parent (a compiled loop's body), which it keeps alive */
static int l_trace_new(lua_State *L) {
  hl_trace *parent = lua_isnoneornil(L, 1) ? NULL : check_trace(L, 1);
  hl_trace *t = lua_newuserdata(L, sizeof(hl_trace));
  hl_trace_init(t);
  luaL_getmetatable(L, TRACE_MT);
  lua_setmetatable(L, -2);
  if (parent) {
    t->parent = parent;
    t->g.device = parent->g.device;
    lua_newtable(L);
    lua_pushvalue(L, 1);
    lua_rawseti(L, -2, 1);
    lua_setfenv(L, -2);
  }
  return 1;
}

static int trace_gc(lua_State *L) {
  hl_trace_free(check_trace(L, 1));
  return 0;
}

/* trace_arg(trace, dtype, shape, device) -> tracer */
static int l_trace_arg(lua_State *L) {
  hl_trace *t = check_trace(L, 1);
  hl_dtype d = check_dtype(L, 2, "jit", HL_FLOAT32);
  int64_t shape[HL_MAX_DIMS];
  int n = check_shape(L, 3, "jit", shape);
  int device = (int)luaL_optinteger(L, 4, HL_DEVICE_CPU);
  hl_array r;
  if (hl_trace_arg(t, device, d, n, shape, &r)) return raise(L);
  push_array(L, &r, 1);
  return 1;
}

static int l_trace_close(lua_State *L) {
  hl_trace_close(check_trace(L, 1));
  return 0;
}

/* ---- what autodiff reads and makes (lua/halua/ad.lua) ---- */

static int l_tape_new(lua_State *L) {
  l_trace_new(L);
  check_trace(L, -1)->tape = 1;
  return 1;
}

/* trace_of(x) -> the trace x records into (nil for plain arrays and finished tapes), its node */
static int l_trace_of(lua_State *L) {
  hl_array *x = to_array(L, 1);
  if (!x || !hl_live_trace(x)) return 0;
  lua_getfenv(L, 1);
  lua_rawgeti(L, -1, 1);
  lua_pushinteger(L, x->node);
  return 2;
}

/* node_in(trace, x) -> x's node when x belongs to the trace (also once a tape has stopped), else nil */
static int l_node_in(lua_State *L) {
  hl_trace *t = check_trace(L, 1);
  hl_array *x = to_array(L, 2);
  if (!x || x->graph != &t->g) return 0;
  lua_pushinteger(L, x->node);
  return 1;
}

/* tape_stop(tape): record no more; the values stay for the backward pass */
static int l_tape_stop(lua_State *L) {
  check_trace(L, 1)->closed = 1;
  return 0;
}

/* trace_variable(trace, x) -> a fresh node of the trace standing for x */
static int l_trace_variable(lua_State *L) {
  hl_trace *t = check_trace(L, 1);
  hl_array *x = check_array(L, 2, "autodiff");
  hl_array r;
  if (hl_trace_variable(t, x, &r)) return raise(L);
  push_array(L, &r, 1);
  return 1;
}

/* node_value(trace, node) -> the node's value: a tracer, or the recorded array on a tape */
static int l_node_value(lua_State *L) {
  hl_trace *t = check_trace(L, 1);
  hl_array r;
  if (hl_trace_node_value(t, (int)luaL_checkinteger(L, 2), &r)) return raise(L);
  push_array(L, &r, 1);
  return 1;
}

/* strip(x) -> x's data as a plain array (no node) */
static int l_strip(lua_State *L) {
  hl_array *x = check_array(L, 1, "autodiff");
  if (!x->graph) {
    lua_settop(L, 1);
    return 1;
  }
  if (!x->storage) return raisef(L, "halua: autodiff: a traced value has no data to strip");
  hl_array r;
  hl_array_copy_ref(&r, x);
  r.graph = NULL;
  push_array(L, &r, 0);
  return 1;
}

static void set_int_list(lua_State *L, const char *key, int n, const int64_t *v, int64_t add) {
  lua_createtable(L, n, 0);
  for (int k = 0; k < n; k++) {
    lua_pushnumber(L, (double)(v[k] + add));
    lua_rawseti(L, -2, k + 1);
  }
  lua_setfield(L, -2, key);
}

/* graph_nodes(trace, first, last) -> {[id] = {op, ins = {ids}, dtype, shape, attributes}} for the
 * nodes first..last, in the 1-based conventions of the Lua API (axes, perms) */
static int l_graph_nodes(lua_State *L) {
  hl_trace *t = check_trace(L, 1);
  int first = (int)luaL_checkinteger(L, 2), last = (int)luaL_checkinteger(L, 3);
  if (first < 0) first = 0;
  if (last >= t->g.nnodes) last = t->g.nnodes - 1;
  lua_createtable(L, 0, last - first + 1);
  for (int id = first; id <= last; id++) {
    const hl_node *n = &t->g.nodes[id];
    const hl_attrs *a = &n->attrs;
    lua_createtable(L, 0, 8);
    lua_pushstring(L, hl_prims[n->prim].name);
    lua_setfield(L, -2, "op");
    const int *ins = hl_node_inputs(&t->g, n);
    lua_createtable(L, n->nin, 0);
    for (int k = 0; k < n->nin; k++) {
      lua_pushinteger(L, ins[k]);
      lua_rawseti(L, -2, k + 1);
    }
    lua_setfield(L, -2, "ins");
    lua_pushstring(L, hl_dtype_name(n->type.dtype));
    lua_setfield(L, -2, "dtype");
    set_int_list(L, "shape", n->type.ndim, n->type.shape, 0);
    switch (hl_prims[n->prim].attrs) {   /* the row's attribute layout (hl_prims.def) */
    case HL_A_AXES: {
      int64_t axes[HL_MAX_DIMS];
      int na = 0, nd = t->g.nodes[ins[0]].type.ndim;
      for (int k = 0; k < nd; k++)
        if (a->i[0] >> k & 1) axes[na++] = k;
      set_int_list(L, "axes", na, axes, 1);
      break;
    }
    case HL_A_SCATTER:
      if (n->prim == HL_P_SCATTER) {
        lua_pushstring(L, hl_scatter_mode_name((int)a->i[2]));
        lua_setfield(L, -2, "mode");
      }
      /* fall through */
    case HL_A_AXIS:
      lua_pushinteger(L, (lua_Integer)a->i[0] + 1);
      lua_setfield(L, -2, "axis");
      break;
    case HL_A_VALUE:
      lua_pushnumber(L, a->f);
      lua_setfield(L, -2, "value");
      break;
    case HL_A_LOOP:   /* which compiled loop, and which of its results (1-based) */
      lua_pushinteger(L, (lua_Integer)a->i[0]);
      lua_setfield(L, -2, "loop");
      lua_pushinteger(L, (lua_Integer)a->i[1] + 1);
      lua_setfield(L, -2, "result");
      break;
    case HL_A_PERM:
      set_int_list(L, "perm", n->type.ndim, a->i, 1);
      break;
    case HL_A_SLICE:
      set_int_list(L, "start", n->type.ndim, a->i, 0);
      set_int_list(L, "step", n->type.ndim, a->i + HL_MAX_DIMS, 0);
      break;
    case HL_A_DIST: {   /* ranks and axes 1-based, as hl.dist takes them (0: no rank) */
      const char *first = n->prim == HL_P_BROADCAST_FROM ? "root" : n->prim == HL_P_PPERMUTE ? "send_to" : "axis";
      int reduction = n->prim == HL_P_PSUM || n->prim == HL_P_PMAX || n->prim == HL_P_PMIN;
      const char *second = n->prim == HL_P_PPERMUTE ? "recv_from" : reduction ? "root" : "axis2";
      lua_pushinteger(L, (lua_Integer)a->i[0] + 1);
      lua_setfield(L, -2, first);
      lua_pushinteger(L, (lua_Integer)a->i[1] + 1);
      lua_setfield(L, -2, second);
      lua_pushinteger(L, (lua_Integer)a->i[2]);
      lua_setfield(L, -2, "size");
      break;
    }
    case HL_A_MODE:
      lua_pushinteger(L, (lua_Integer)a->i[0]);
      lua_setfield(L, -2, "mode");
      break;
    case HL_A_LANE:   /* an axis (1-based) and a length along it */
      lua_pushinteger(L, (lua_Integer)a->i[0] + 1);
      lua_setfield(L, -2, "axis");
      lua_pushinteger(L, (lua_Integer)a->i[1]);
      lua_setfield(L, -2, "n");
      break;
    case HL_A_NONE:
    case HL_A_PARAM:
      break;
    }
    lua_rawseti(L, -2, id);
  }
  return 1;
}

static int is_trace(lua_State *L, int idx) {
  if (!lua_isuserdata(L, idx) || !lua_getmetatable(L, idx)) return 0;
  luaL_getmetatable(L, TRACE_MT);
  int same = lua_rawequal(L, -1, -2);
  lua_pop(L, 2);
  return same;
}

/* trace_captures(trace) -> {[param node] = array}: the arrays a trace captured (values it closed
 * over), as the arrays they were: plain data, or tracers of an enclosing trace. vmap replays a
 * traced function on them. */
static int l_trace_captures(lua_State *L) {
  hl_trace *t = check_trace(L, 1);
  lua_createtable(L, 0, t->ncaptures);
  int out = lua_gettop(L);
  for (int k = 0; k < t->ncaptures; k++) {
    hl_array r;
    hl_array_copy_ref(&r, &t->captures[k]);
    int owner = 0;
    if (r.graph) {
      /* an enclosing trace's tracer: its Lua trace is up the chain of parents (each trace's
       * environment holds its parent) */
      lua_pushvalue(L, 1);
      while (is_trace(L, -1) && &((hl_trace *)lua_touserdata(L, -1))->g != r.graph) {
        lua_getfenv(L, -1);
        lua_rawgeti(L, -1, 1);
        lua_remove(L, -2);
        lua_remove(L, -2);
      }
      if (!is_trace(L, -1)) {
        lua_pop(L, 1);
        hl_array_release(&r);
        return raisef(L, "halua: vmap: a captured tracer's trace is not an enclosing one");
      }
      owner = lua_gettop(L);
    }
    push_array(L, &r, owner);
    if (owner) lua_remove(L, owner);
    lua_rawseti(L, out, t->capture_param[k]);
  }
  return 1;
}

/* the arrays of a Lua list at idx, in a block left on the Lua stack (freed with it) */
static const hl_array **list_arrays(lua_State *L, int idx, int *n, const char *what) {
  *n = (int)lua_objlen(L, idx);
  if (*n > HL_MAX_PROGRAM_ARRAYS) raisef(L, "halua: %s: too many arrays (%d, at most %d)", what, *n, HL_MAX_PROGRAM_ARRAYS);
  const hl_array **out = lua_newuserdata(L, sizeof *out * (size_t)(*n ? *n : 1));
  for (int k = 0; k < *n; k++) {
    lua_rawgeti(L, idx, k + 1);
    out[k] = to_array(L, -1);
    lua_pop(L, 1);   /* still referenced by the list */
    if (!out[k]) raisef(L, "halua: %s: list holds a non-array", what);
  }
  return out;
}

/* program_build(trace, {tracers}, name [, schedule]) -> program */
static int l_program_build(lua_State *L) {
  hl_trace *t = check_trace(L, 1);
  int n;
  const hl_array **outs = list_arrays(L, 2, &n, "jit");
  const char *name = luaL_optstring(L, 3, "jit");
  /* 4: "auto" for Halide's autoscheduler (validated by hl.jit) */
  t->g.schedule = lua_isstring(L, 4) && strcmp(lua_tostring(L, 4), "auto") == 0;
  hl_lua_program *u = lua_newuserdata(L, sizeof(hl_lua_program));
  memset(u, 0, sizeof *u);
  luaL_getmetatable(L, PROGRAM_MT);
  lua_setmetatable(L, -2);
  if (hl_program_build(t, n, outs, name, &u->p) || hl_loop_compile_all(&u->p.g)) return raise(L);
  hl_lua_kernel_check(L);
  return 1;
}

/* program_build_symbolic({traces}, {{tracers}...}, {{sizes}...}, {param}, {axis}, name) -> program, or
 * nil and the reason the function is not polymorphic (engine/runtime/hl_poly.h); param and axis
 * 0-based */
static int l_program_build_symbolic(lua_State *L) {
  luaL_checktype(L, 1, LUA_TTABLE);
  int ntr = (int)lua_objlen(L, 1), nsym = (int)lua_objlen(L, 4);
  if (nsym < 1 || nsym > HL_MAX_SYMS || ntr != nsym + 2 || (int)lua_objlen(L, 2) != ntr || (int)lua_objlen(L, 3) != ntr ||
      (int)lua_objlen(L, 5) != nsym)
    return raisef(L, "halua: jit: %d dynamic sizes (at most %d)", nsym, HL_MAX_SYMS);
  hl_trace *traces[HL_MAX_SYMS + 2];
  const hl_array **outs[HL_MAX_SYMS + 2];
  int64_t sizes[HL_MAX_SYMS + 2][HL_MAX_SYMS] = {{0}};
  int param[HL_MAX_SYMS], axis[HL_MAX_SYMS], nout = -1;
  for (int t = 0; t < ntr; t++) {
    lua_rawgeti(L, 1, t + 1);
    traces[t] = check_trace(L, -1);
    lua_pop(L, 1);
    lua_rawgeti(L, 2, t + 1);
    int n;
    outs[t] = list_arrays(L, lua_gettop(L), &n, "jit");   /* (its userdata stays on the stack) */
    if (nout >= 0 && n != nout) return raisef(L, "halua: jit: the function returns %d arrays at one size and %d at another", nout, n);
    nout = n;
    lua_rawgeti(L, 3, t + 1);
    for (int j = 0; j < nsym; j++) {
      lua_rawgeti(L, -1, j + 1);
      sizes[t][j] = (int64_t)lua_tonumber(L, -1);
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  for (int j = 0; j < nsym; j++) {
    lua_rawgeti(L, 4, j + 1);
    lua_rawgeti(L, 5, j + 1);
    param[j] = (int)lua_tointeger(L, -2);
    axis[j] = (int)lua_tointeger(L, -1);
    lua_pop(L, 2);
  }
  const char *name = luaL_optstring(L, 6, "jit");
  hl_lua_program *u = lua_newuserdata(L, sizeof(hl_lua_program));
  memset(u, 0, sizeof *u);
  luaL_getmetatable(L, PROGRAM_MT);
  lua_setmetatable(L, -2);
  char why[400];
  int rc = hl_program_build_symbolic(traces, (const hl_array *const *const *)outs, nout, nsym, (const int64_t(*)[HL_MAX_SYMS])sizes,
                                     param, axis, name, &u->p, why, sizeof why);
  if (rc < 0 || (rc == 0 && hl_loop_compile_all(&u->p.g))) return raise(L);
  if (rc > 0) {
    lua_pushnil(L);
    lua_pushstring(L, why);
    return 2;
  }
  hl_lua_kernel_check(L);
  return 1;
}

/* the arrays at stack slots first..last (a program's arguments) */
static const hl_array **stack_arrays(lua_State *L, int first, int last, int *n) {
  *n = last - first + 1;
  if (*n > HL_MAX_PROGRAM_ARRAYS) raisef(L, "halua: jit: too many arrays");
  const hl_array **args = lua_newuserdata(L, sizeof *args * (size_t)(*n > 0 ? *n : 1));
  for (int k = 0; k < *n; k++) args[k] = check_array(L, first + k, "jit");
  return args;
}
/* true, or false and why, for a check of the engine's that answered ok (1, 0; -1 raises) */
static int push_verdict(lua_State *L, int ok, const char *why) {
  if (ok < 0) return raise(L);
  lua_pushboolean(L, ok);
  if (ok) return 1;
  lua_pushstring(L, why);
  return 2;
}

/* program_serves(program, args...) -> true, or false and why (hl_program_serves) */
static int l_program_serves(lua_State *L) {
  hl_program *p = hl_lua_check_program(L, 1);
  int nargs;
  const hl_array **args = stack_arrays(L, 2, lua_gettop(L), &nargs);
  char why[300];
  return push_verdict(L, hl_program_serves(p, nargs, args, why, sizeof why), why);
}

/* program_matches(program, trace, {tracers}, args...) -> true, or false and why (hl_program_matches) */
static int l_program_matches(lua_State *L) {
  hl_program *p = hl_lua_check_program(L, 1);
  hl_trace *t = check_trace(L, 2);
  int nargs, nout, last = lua_gettop(L);
  const hl_array **outs = list_arrays(L, 3, &nout, "jit");
  const hl_array **args = stack_arrays(L, 4, last, &nargs);
  char why[300];
  return push_verdict(L, hl_program_matches(p, t, nout, outs, nargs, args, why, sizeof why), why);
}

/* trace_id(trace) -> what a tracer's shape hook is told its trace is (halua.symdim_shape) */
static int l_trace_id(lua_State *L) {
  lua_pushlightuserdata(L, &check_trace(L, 1)->g);
  return 1;
}

/* trace_export(trace, {tracers}, dir, name): hl.export's library (engine/runtime/hl_export.h) */
static int l_trace_export(lua_State *L) {
  hl_trace *t = check_trace(L, 1);
  int n;
  const hl_array **outs = list_arrays(L, 2, &n, "export");
  if (hl_export_trace(t, n, outs, luaL_checkstring(L, 3), luaL_checkstring(L, 4))) return raise(L);
  return 0;
}

static int program_gc(lua_State *L) {
  hl_lua_program *u = luaL_checkudata(L, 1, PROGRAM_MT);
  hl_program_free(&u->p);
  return 0;
}

/* program_run(program, args...) -> outputs... */
static int l_program_run(lua_State *L) { return hl_lua_program_run(L, hl_lua_check_program(L, 1), 2); }

/* push a string the engine allocated and free it; NULL means the engine recorded an error */
static int push_owned(lua_State *L, char *s) {
  if (!s) return raise(L);
  lua_pushstring(L, s);
  free(s);
  return 1;
}

static int l_program_stmt(lua_State *L) {
  hl_lua_program *u = luaL_checkudata(L, 1, PROGRAM_MT);
  return push_owned(L, hl_kernel_stmt(u->p.kernel, &u->p.g));
}

static int l_program_asm(lua_State *L) {
  hl_lua_program *u = luaL_checkudata(L, 1, PROGRAM_MT);
  return push_owned(L, hl_kernel_asm(u->p.kernel, &u->p.g));
}

static int l_program_ptx(lua_State *L) {
  hl_lua_program *u = luaL_checkudata(L, 1, PROGRAM_MT);
  const char *ptx = hl_kernel_ptx(u->p.kernel, &u->p.g);
  if (!ptx) return raise(L);
  lua_pushstring(L, ptx);
  return 1;
}

/* the PTX of the loop bodies and conditions the graph runs, nested loops included, each loop once;
 * -1 with hl_error when one cannot be had */
static int push_loop_ptx(lua_State *L, const hl_graph *g, int list) {
  for (int i = 0; i < g->nnodes; i++) {
    int id = hl_graph_distinct_loop(g, i);
    const hl_loop *l = id < 0 ? NULL : hl_loop_get(id);
    if (!l) continue;
    const hl_program *parts[2] = {&l->body, &l->cond};
    for (int k = 0; k < 2; k++) {
      if (!parts[k]->kernel) continue;
      const char *ptx = hl_kernel_ptx(parts[k]->kernel, &parts[k]->g);
      if (!ptx) return -1;
      lua_pushstring(L, ptx);
      lua_rawseti(L, list, (int)lua_objlen(L, list) + 1);
      if (push_loop_ptx(L, &parts[k]->g, list)) return -1;
    }
  }
  return 0;
}

/* program_loop_ptx(program) -> {ptx, ...} (empty strings for cpu programs) */
static int l_program_loop_ptx(lua_State *L) {
  hl_lua_program *u = luaL_checkudata(L, 1, PROGRAM_MT);
  lua_newtable(L);
  if (push_loop_ptx(L, &u->p.g, lua_gettop(L))) return raise(L);
  return 1;
}

static int l_program_compile_ms(lua_State *L) {
  hl_lua_program *u = luaL_checkudata(L, 1, PROGRAM_MT);
  lua_pushnumber(L, hl_kernel_compile_ms(u->p.kernel));
  return 1;
}

/* trace_text(trace, {tracers}) -> the pruned program as text, without compiling */
static int l_trace_text(lua_State *L) {
  hl_trace *t = check_trace(L, 1);
  int n;
  const hl_array **outs = list_arrays(L, 2, &n, "trace");
  int *ids = lua_newuserdata(L, sizeof *ids * (size_t)(n ? n : 1));
  for (int k = 0; k < n; k++) {
    if (outs[k]->graph != &t->g) raisef(L, "halua: trace: an output is not a value of this trace");
    ids[k] = outs[k]->node;
  }
  hl_graph pruned;
  if (hl_graph_set_outputs(&t->g, n, ids) || hl_graph_prune(&t->g, &pruned)) return raise(L);
  char *s = hl_graph_text(&pruned);
  hl_graph_free(&pruned);
  if (!s) hl_error("trace: out of memory printing the program");
  return push_owned(L, s);
}

static void set_number(lua_State *L, const char *field, double v) {
  lua_pushnumber(L, v);
  lua_setfield(L, -2, field);
}

static int l_cache_info(lua_State *L) {
  hl_eager_memo_count_hits();
  hl_cache_stats s = hl_cache_info();
  lua_createtable(L, 0, 12);
  set_number(L, "entries", (double)s.entries);
  set_number(L, "hits", (double)s.hits);
  set_number(L, "misses", (double)s.misses);
  set_number(L, "compile_ms", s.compile_ms);
  set_number(L, "disk_hits", (double)s.disk_hits);
  set_number(L, "disk_misses", (double)s.disk_misses);
  set_number(L, "disk_load_ms", s.disk_load_ms);
  set_number(L, "disk_bytes", (double)hl_disk_bytes());
  set_number(L, "mem_bytes", (double)s.mem_bytes);
  set_number(L, "mem_limit", (double)s.mem_limit);
  set_number(L, "evictions", (double)s.evictions);
  if (hl_disk_dir()) {
    lua_pushstring(L, hl_disk_dir());
    lua_setfield(L, -2, "disk_dir");
  }
  return 1;
}

/* to_device(x, device number) -> x on that device (0 host, 1 cuda) */
static int l_to_device(lua_State *L) {
  hl_array *x = check_array(L, 1, "device_put");
  int device = (int)luaL_checkinteger(L, 2);
  if (hl_is_leaked(x)) return raisef(L, "halua: device_put: " HL_LEAKED_TRACER);
  if (hl_is_abstract(x)) return raisef(L, "halua: device_put: traced values stay where their function runs");
  hl_array r;
  if (hl_to_device(x, device, &r)) return raise(L);
  push_array(L, &r, 0);
  return 1;
}

static int l_device_of(lua_State *L) {
  hl_array *x = check_array(L, 1, "device");
  lua_pushinteger(L, hl_array_device(x));
  return 1;
}

static int l_cuda_count(lua_State *L) {
  lua_pushinteger(L, hl_cuda_device_count());
  return 1;
}

static int l_sync(lua_State *L) {
  if (hl_device_sync((int)luaL_optinteger(L, 1, HL_DEVICE_CUDA))) return raise(L);
  return 0;
}

/* cache_clear(disk) */
static int l_cache_clear(lua_State *L) {
  int rc = hl_cache_clear(lua_toboolean(L, 1));
  hl_eager_memo_forget();   /* this thread's memo lets the cleared kernels go now */
  if (rc) return raise(L);
  return 0;
}

/* prim_names() -> every primitive's name, in table order; and {name = kind} */
static int l_prim_names(lua_State *L) {
  static const char *kinds[] = {"source", "elemwise", "reduce", "matmul", "view", "concat", "loop", "indexed", "linalg", "sort", "dist", "fft"};
  _Static_assert(sizeof kinds / sizeof kinds[0] == HL_K_FFT + 1, "a name for every kind of primitive");
  lua_createtable(L, HL_NPRIMS, 0);
  lua_createtable(L, 0, HL_NPRIMS);
  for (int p = 0; p < HL_NPRIMS; p++) {
    lua_pushstring(L, hl_prims[p].name);
    lua_rawseti(L, -3, p + 1);
    lua_pushstring(L, kinds[hl_prims[p].kind]);
    lua_setfield(L, -2, hl_prims[p].name);
  }
  return 2;
}

/* arg_error(op, argn, value [, expected]): the shared operand error, for the Lua side's checks */
static int l_arg_error(lua_State *L) {
  const char *op = luaL_checkstring(L, 1);
  int argn = (int)luaL_checkinteger(L, 2);
  const char *expected = luaL_optstring(L, 4, "an array");
  lua_settop(L, 4);
  return hl_lua_arg_error(L, op, argn, 3, expected);
}

static int l_heap_bytes(lua_State *L) {
  lua_pushnumber(L, (double)hl_heap_bytes());
  return 1;
}

/* collections() -> how many full collections this thread's ops have asked for (memory_spec) */
static int l_collections(lua_State *L) {
  lua_pushnumber(L, (double)hl_lua_collections());
  return 1;
}

static const luaL_Reg core_funcs[] = {
    {"array", l_array},
    {"full", l_full},
    {"cast", l_cast},
    {"matmul", l_matmul},
    {"linalg_solve", l_linalg_solve},
    {"linalg_cholesky", l_linalg_cholesky},
    {"linalg_solve_triangular", l_linalg_solve_triangular},
    {"linalg_decomp", l_linalg_decomp},
    {"sort", l_sort},
    {"fft", l_fft},
    {"dist", l_dist},
    {"dist_set_transport", l_dist_set_transport},
    {"reshape", l_reshape},
    {"broadcast_to", l_broadcast_to},
    {"transpose", l_transpose},
    {"view_as_real", l_view_as_real},
    {"view_as_complex", l_view_as_complex},
    {"slice", l_slice},
    {"gather", l_gather},
    {"scatter_add", l_scatter_add},
    {"scatter", l_scatter},
    {"concatenate", l_concatenate},
    {"iota", l_iota},
    {"item", l_item},
    {"totable", l_totable},
    {"get", l_get},
    {"info", l_info},
    {"is_array", l_is_array},
    {"usable", l_usable},
    {"is_tracer", l_is_tracer},
    {"property", l_property},
    {"trace_new", l_trace_new},
    {"trace_arg", l_trace_arg},
    {"trace_close", l_trace_close},
    {"trace_text", l_trace_text},
    {"tape_new", l_tape_new},
    {"trace_of", l_trace_of},
    {"node_in", l_node_in},
    {"tape_stop", l_tape_stop},
    {"trace_variable", l_trace_variable},
    {"node_value", l_node_value},
    {"trace_captures", l_trace_captures},
    {"strip", l_strip},
    {"graph_nodes", l_graph_nodes},
    {"program_build", l_program_build},
    {"program_build_symbolic", l_program_build_symbolic},
    {"trace_id", l_trace_id},
    {"program_serves", l_program_serves},
    {"program_matches", l_program_matches},
    {"trace_export", l_trace_export},
    {"program_run", l_program_run},
    {"program_stmt", l_program_stmt},
    {"program_compile_ms", l_program_compile_ms},
    {"program_ptx", l_program_ptx},
    {"program_loop_ptx", l_program_loop_ptx},
    {"program_asm", l_program_asm},
    {"cache_info", l_cache_info},
    {"to_device", l_to_device},
    {"device_of", l_device_of},
    {"cuda_count", l_cuda_count},
    {"sync", l_sync},
    {"cache_clear", l_cache_clear},
    {"heap_bytes", l_heap_bytes},
    {"collections", l_collections},
    {"arg_error", l_arg_error},
    {"prim_names", l_prim_names},
    {NULL, NULL},
};

int luaopen_halua_core(lua_State *L) {
  hl_runtime_start();
  hl_interrupt_install();   /* Ctrl-C stops compiled loops too, where it stops Lua code */
  /* the array metatable; __index/__newindex/__tostring are completed by halua/init.lua */
  luaL_newmetatable(L, ARRAY_MT);
  lua_pushcfunction(L, array_gc);
  lua_setfield(L, -2, "__gc");
  lua_pushcfunction(L, array_len);
  lua_setfield(L, -2, "__len");
  lua_pushcfunction(L, array_compare);
  lua_setfield(L, -2, "__lt");
  lua_pushcfunction(L, array_compare);
  lua_setfield(L, -2, "__le");
  int mt = lua_gettop(L);
  hl_lua_register_array_mt(L, mt);
  hl_lua_start_cycle_marks(L);
  luaL_newmetatable(L, TRACE_MT);
  lua_pushcfunction(L, trace_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);
  luaL_newmetatable(L, PROGRAM_MT);
  lua_pushcfunction(L, program_gc);
  lua_setfield(L, -2, "__gc");
  lua_pop(L, 1);

  lua_newtable(L);
  luaL_register(L, NULL, core_funcs);
  int core = lua_gettop(L);
  lua_pushinteger(L, HL_MAX_PROGRAM_ARRAYS);   /* jit says so before tracing (lua/halua/jit.lua) */
  lua_setfield(L, core, "max_program_arrays");
  /* one closure per primitive, from the table */
  lua_newtable(L);
  int prims = lua_gettop(L);
  for (int p = 0; p < HL_NPRIMS; p++) {
    hl_prim_kind kind = hl_prims[p].kind;
    if (kind != HL_K_ELEMWISE && kind != HL_K_REDUCE) continue;
    if (p == HL_P_CAST) continue;
    lua_pushlightuserdata(L, (void *)&hl_prims[p]);
    luaL_getmetatable(L, ARRAY_MT);
    lua_pushcclosure(L, kind == HL_K_ELEMWISE ? l_elemwise : l_reduce, 2);
    lua_setfield(L, prims, hl_prims[p].name);
  }
  lua_setfield(L, core, "prims");
  /* operators straight to C: no Lua frame on the eager fast path */
  static const struct { const char *mm, *prim; } ops[] = {
      {"__add", "add"}, {"__sub", "sub"}, {"__mul", "mul"}, {"__div", "div"},
      {"__mod", "mod"}, {"__pow", "pow"}, {"__unm", "neg"},
  };
  for (size_t k = 0; k < sizeof ops / sizeof ops[0]; k++) {
    lua_getfield(L, core, "prims");
    lua_getfield(L, -1, ops[k].prim);
    lua_setfield(L, mt, ops[k].mm);
    lua_pop(L, 1);
  }
  lua_pushvalue(L, mt);
  lua_setfield(L, core, "array_mt");
  hl_lua_register_io(L, core);
  hl_lua_register_loop(L, core);
  hl_lua_register_call(L, core);
  hl_lua_register_modules(L, core);
  return 1;
}
