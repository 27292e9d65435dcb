/* The embedding API (engine/include/halua.h): a host's lua_State with halua loaded, host buffers
 * wrapped as arrays without a copy, arrays read back, Lua code called.
 *
 * No function here may let a Lua error escape into the host's frames. Host arguments are checked
 * in plain C first; everything that touches Lua runs inside lua_pcall of one C function
 * (`dispatch`, kept in the registry so that pushing it allocates nothing) which calls the job's
 * worker. A worker reports failures by raising; the message is moved to a thread-local buffer. */
#define _GNU_SOURCE   /* dladdr */
#include "halua.h"
#include "hl_array.h"
#include "hl_error.h"
#include "hl_device.h"
#include "hl_eval.h"
#include "hl_lua.h"
#include <dlfcn.h>
#include <lauxlib.h>
#include <lualib.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- errors: one message per thread, set by every failing call ---- */

static _Thread_local char last_error[2048];

const char *halua_error(void) { return last_error; }

static int fail(int code, const char *fmt, ...) HL_PRINTF(2, 3);
static int fail(int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  int n = snprintf(last_error, sizeof last_error, "halua: ");
  vsnprintf(last_error + n, sizeof last_error - (size_t)n, fmt, ap);
  va_end(ap);
  return code;
}

/* the error object of a failed pcall (popped): "halua: " messages as they are, others under
 * `what`; only strings and numbers are read, so nothing is converted or allocated here */
static int fail_lua(lua_State *L, int lua_status, int code, const char *what) {
  if (lua_status == LUA_ERRMEM) code = HALUA_EMEM;
  if (lua_type(L, -1) == LUA_TSTRING) {
    const char *m = lua_tostring(L, -1);
    if (strncmp(m, "halua: ", 7) == 0) snprintf(last_error, sizeof last_error, "%s", m);
    else fail(code, "%s: %s", what, m);
  } else if (lua_type(L, -1) == LUA_TNUMBER) {
    fail(code, "%s: %.17g", what, lua_tonumber(L, -1));
  } else {
    fail(code, "%s: a Lua error whose value is a %s, not a message", what, lua_typename(L, lua_type(L, -1)));
  }
  lua_pop(L, 1);
  return code;
}

/* ---- protected jobs ---- */

typedef struct job job;
typedef int (*job_fn)(lua_State *L, job *j);
struct job {
  job_fn fn;
  int code;   /* the status to report if the worker raises (HALUA_ERUN unless it says) */
  const char *name;
  const char *text;
  int index;   /* a stack index, for messages */
  hl_array array;
};

static char dispatch_key;   /* its address keys the dispatcher in each state's registry */

/* dispatch(job, args...): runs the job's worker with the args as its stack */
static int dispatch(lua_State *L) {
  job *j = lua_touserdata(L, 1);
  lua_remove(L, 1);
  return j->fn(L, j);
}

static int install_dispatch(lua_State *L) {
  lua_pushlightuserdata(L, &dispatch_key);
  lua_pushcfunction(L, dispatch);
  lua_rawset(L, LUA_REGISTRYINDEX);
  return 0;
}

/* Runs j->fn protected with the nargs values on top of the stack as its arguments (they are
 * consumed) and leaves nresults of its results. `what` names the call in messages. */
static int run_job(lua_State *L, job *j, int nargs, int nresults, const char *what) {
  if (!lua_checkstack(L, 8 + (nresults > 0 ? nresults : 0))) {
    lua_pop(L, nargs);
    return fail(HALUA_EMEM, "%s: the Lua stack cannot grow", what);
  }
  lua_pushlightuserdata(L, &dispatch_key);
  lua_rawget(L, LUA_REGISTRYINDEX);
  if (lua_type(L, -1) != LUA_TFUNCTION) {   /* first call in this state */
    lua_pop(L, 1);
    int rc = lua_cpcall(L, install_dispatch, NULL);
    if (rc) {
      fail_lua(L, rc, HALUA_EMEM, what);
      lua_pop(L, nargs);
      return HALUA_EMEM;
    }
    lua_pushlightuserdata(L, &dispatch_key);
    lua_rawget(L, LUA_REGISTRYINDEX);
  }
  lua_insert(L, -(nargs + 1));
  lua_pushlightuserdata(L, j);
  lua_insert(L, -(nargs + 1));
  j->code = HALUA_ERUN;
  int rc = lua_pcall(L, nargs + 1, nresults, 0);
  if (rc) return fail_lua(L, rc, j->code, what);
  return HALUA_OK;
}

/* raise from a worker with `code` as the status the host sees */
static int raise_code(lua_State *L, job *j, int code, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  j->code = code;
  return lua_error(L);
}

/* ---- dtypes ---- */

const char *halua_dtype_name(halua_dtype dtype) {
  switch (dtype) {
  case HALUA_BOOL: return "bool";
  case HALUA_UINT8: return "uint8";
  case HALUA_INT32: return "int32";
  case HALUA_INT64: return "int64";
  case HALUA_FLOAT32: return "float32";
  case HALUA_FLOAT64: return "float64";
  }
  return NULL;
}

/* the engine's dtype for a public one, -1 for none; names tie the two enums together */
static int engine_dtype(halua_dtype t) {
  const char *name = halua_dtype_name(t);
  return name ? hl_dtype_from_name(name) : -1;
}

static halua_dtype public_dtype(hl_dtype t) {
  for (int p = HALUA_BOOL; p <= HALUA_FLOAT64; p++)
    if (engine_dtype((halua_dtype)p) == (int)t) return (halua_dtype)p;
  return HALUA_FLOAT32;   /* unreachable: every engine dtype has a public name */
}

/* ---- opening ---- */

/* <prefix>/share/lua/5.1 for a library installed as <prefix>/lib/libhalua.so (the relative path
 * comes from the install layout, CMakeLists.txt), when it holds halua/init.lua: an installed tree
 * finds its Lua modules wherever the prefix is */
#ifndef HALUA_LIB_TO_LMOD
#define HALUA_LIB_TO_LMOD "../share/lua/5.1"
#endif
static const char *installed_lua_dir(char *buf, size_t n) {
  static const char here = 0;
  Dl_info info;
  if (!dladdr(&here, &info) || !info.dli_fname) return NULL;
  const char *slash = strrchr(info.dli_fname, '/');
  if (!slash) return NULL;
  int len = (int)(slash - info.dli_fname);
  char probe[4096];
  if (snprintf(buf, n, "%.*s/" HALUA_LIB_TO_LMOD, len, info.dli_fname) >= (int)n) return NULL;
  if (snprintf(probe, sizeof probe, "%s/halua/init.lua", buf) >= (int)sizeof probe) return NULL;
  return access(probe, R_OK) == 0 ? buf : NULL;
}

/* Prepends dir's patterns to package.path (once), preloads the linked-in engine as halua_core
 * and pushes require("halua"). Raises on failure: it runs inside a job or as luaopen_halua. */
static int load_halua(lua_State *L, const char *dir) {
  char buf[4096];
  if (!dir) {
    const char *env = getenv("HALUA_LUA_DIR");
    dir = env && *env ? env : installed_lua_dir(buf, sizeof buf);
  }
  lua_getglobal(L, "package");
  lua_getglobal(L, "require");
  if (!lua_istable(L, -2) || !lua_isfunction(L, -1))
    return luaL_error(L, "halua: open: this lua_State has no package library (open the standard libraries with "
                         "luaL_openlibs first, or use halua_newstate)");
  int package = lua_gettop(L) - 1;
  if (dir) {
    lua_getfield(L, package, "path");
    const char *path = lua_tostring(L, -1);
    lua_pushfstring(L, "%s/?.lua;%s/?/init.lua;", dir, dir);
    if (!path || !strstr(path, lua_tostring(L, -1))) {
      lua_pushstring(L, path ? path : "");
      lua_concat(L, 2);
      lua_setfield(L, package, "path");
    } else {
      lua_pop(L, 1);
    }
    lua_pop(L, 1);
  }
  /* the engine in this library, not a second copy from halua_core.so on package.cpath */
  lua_getfield(L, package, "loaded");
  lua_getfield(L, -1, "halua_core");
  int have_core = !lua_isnil(L, -1);
  lua_pop(L, 2);
  if (!have_core) {
    lua_getfield(L, package, "preload");
    if (!lua_istable(L, -1)) return luaL_error(L, "halua: open: package.preload is not a table");
    lua_pushcfunction(L, luaopen_halua_core);
    lua_setfield(L, -2, "halua_core");
    lua_pop(L, 1);
  }
  lua_pushstring(L, "halua");
  lua_call(L, 1, 1);
  if (!lua_istable(L, -1)) {
    if (!dir) return luaL_error(L, "halua: open: require \"halua\" gave no module table; set HALUA_LUA_DIR or pass lua_dir");
    return luaL_error(L, "halua: open: require \"halua\" gave no module table (looked in %s)", dir);
  }
  return 1;
}

int luaopen_halua(lua_State *L) { return load_halua(L, NULL); }

static int open_worker(lua_State *L, job *j) { return load_halua(L, j->text); }

int halua_open(lua_State *L, const char *lua_dir) {
  if (!L) return fail(HALUA_EARG, "open: L is NULL");
  job j = {.fn = open_worker, .text = lua_dir};
  return run_job(L, &j, 0, 1, "open");
}

static int newstate_worker(lua_State *L, job *j) {
  luaL_openlibs(L);
  load_halua(L, j->text);
  lua_setglobal(L, "halua");
  return 0;
}

lua_State *halua_newstate(const char *lua_dir) {
  lua_State *L = luaL_newstate();
  if (!L) {
    fail(HALUA_EMEM, "newstate: out of memory creating a lua_State");
    return NULL;
  }
  job j = {.fn = newstate_worker, .text = lua_dir};
  if (run_job(L, &j, 0, 0, "newstate")) {
    lua_close(L);
    return NULL;
  }
  return L;
}

/* ---- arrays in ---- */

static int push_worker(lua_State *L, job *j) {
  if (!hl_lua_is_loaded(L)) return raise_code(L, j, HALUA_EARG, "halua: push_array: halua is not loaded in this lua_State (call halua_open first)");
  hl_lua_push_array(L, &j->array);
  return 1;
}

/* The lowest and highest element offsets the strides reach; -1 when they overflow. */
static int strided_span(int ndim, const int64_t *shape, const int64_t *strides, int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  for (int k = 0; k < ndim; k++) {
    if (shape[k] == 0) {
      *lo = *hi = 0;
      return 0;
    }
    int64_t reach;
    if (__builtin_mul_overflow(shape[k] - 1, strides[k], &reach)) return -1;
    if (__builtin_add_overflow(reach < 0 ? *lo : *hi, reach, reach < 0 ? lo : hi)) return -1;
  }
  return 0;
}

int halua_push_array(lua_State *L, void *data, halua_dtype dtype, int ndim, const int64_t *shape,
                     const int64_t *strides, halua_release_fn release, void *user) {
  static const char *op = "push_array";
  if (!L) return fail(HALUA_EARG, "%s: L is NULL", op);
  int t = engine_dtype(dtype);
  if (t < 0)
    return fail(HALUA_EARG, "%s: unknown dtype %d (use HALUA_BOOL, HALUA_UINT8, HALUA_INT32, HALUA_INT64, HALUA_FLOAT32 "
                            "or HALUA_FLOAT64)", op, (int)dtype);
  if (ndim < 0 || ndim > HL_MAX_DIMS) return fail(HALUA_EARG, "%s: ndim is %d; arrays have 0 to %d dimensions", op, ndim, HL_MAX_DIMS);
  if (!data) return fail(HALUA_EARG, "%s: data is NULL", op);
  if (ndim > 0 && !shape) return fail(HALUA_EARG, "%s: shape is NULL for %d dimensions", op, ndim);
  size_t es = hl_dtype_size((hl_dtype)t);
  if ((uintptr_t)data % es)
    return fail(HALUA_EARG, "%s: data %p is not aligned to the %zu-byte size of a %s element", op, data, es, halua_dtype_name(dtype));
  hl_array a;
  memset(&a, 0, sizeof a);
  a.dtype = (hl_dtype)t;
  a.ndim = ndim;
  int64_t n = 1;
  for (int k = ndim - 1; k >= 0; k--) {
    if (shape[k] < 0)
      return fail(HALUA_EARG, "%s: negative extent %lld on axis %d of shape %s", op, (long long)shape[k], k + 1,
                  hl_shape_str(ndim, (const long long *)shape).s);
    a.shape[k] = shape[k];
    a.strides[k] = strides ? strides[k] : n;
    if (shape[k] && n > INT64_MAX / 16 / shape[k])
      return fail(HALUA_EARG, "%s: shape %s is too large", op, hl_shape_str(ndim, (const long long *)shape).s);
    n *= shape[k];
  }
  int64_t lo, hi;
  if (strided_span(ndim, a.shape, a.strides, &lo, &hi) || hi - lo >= INT64_MAX / 16)
    return fail(HALUA_EARG, "%s: shape %s with strides %s reaches too far", op, hl_shape_str(ndim, (const long long *)shape).s,
                hl_shape_str(ndim, (const long long *)a.strides).s);
  /* the storage starts at the lowest element the strides reach, so negative strides work */
  char *base = (char *)data + lo * (int64_t)es;
  a.offset = -lo;
  size_t nbytes = n ? (size_t)(hi - lo + 1) * es : 0;
  a.storage = hl_storage_wrap(base, nbytes, release, user);
  if (!a.storage) return fail(HALUA_EMEM, "%s: out of memory", op);
  job j = {.fn = push_worker, .array = a};
  int rc = run_job(L, &j, 0, 1, op);
  if (rc) {
    /* no userdata took the storage: drop the record without calling the host's release */
    a.storage->release = NULL;
    hl_storage_release(a.storage);
  }
  return rc;
}

/* ---- arrays out ---- */

static int to_array_worker(lua_State *L, job *j) {
  hl_array *a = hl_lua_to_array(L, 1);
  const char *where = j->text;
  if (!a)
    return raise_code(L, j, HALUA_ETYPE, "halua: %s: the value at stack index %d is a %s, expected an array", where,
                      j->index, luaL_typename(L, 1));
  if (!a->storage)
    return raise_code(L, j, HALUA_ETYPE, "halua: %s: the value at stack index %d is a traced value (inside hl.jit): it has no data yet",
                      where, j->index);
  if (hl_array_device(a) != HL_DEVICE_CPU)
    return raise_code(L, j, HALUA_ETYPE, "halua: %s: the array at stack index %d is on cuda; move it to the host first (x:to(\"cpu\") in Lua)",
                      where, j->index);
  j->array = *a;   /* a borrowed view: the value stays referenced by the host's stack */
  return 0;
}

/* the engine array at idx, borrowed (valid while the Lua value lives) */
static int get_array(lua_State *L, int idx, hl_array *out, const char *op) {
  if (!L) return fail(HALUA_EARG, "%s: L is NULL", op);
  int top = lua_gettop(L);
  int abs = idx > 0 || idx <= LUA_REGISTRYINDEX ? idx : top + idx + 1;
  if (abs <= 0 || abs > top) return fail(HALUA_EARG, "%s: stack index %d is not valid (the stack holds %d values)", op, idx, top);
  if (!lua_checkstack(L, 1)) return fail(HALUA_EMEM, "%s: the Lua stack cannot grow", op);
  lua_pushvalue(L, abs);
  job j = {.fn = to_array_worker, .text = op, .index = idx};
  int rc = run_job(L, &j, 1, 0, op);
  if (!rc) *out = j.array;
  return rc;
}

int halua_to_array(lua_State *L, int idx, halua_array *out) {
  if (!out) return fail(HALUA_EARG, "to_array: out is NULL");
  hl_array a;
  int rc = get_array(L, idx, &a, "to_array");
  if (rc) return rc;
  memset(out, 0, sizeof *out);
  out->dtype = public_dtype(a.dtype);
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
  int64_t inner = a->shape[last], step = a->strides[last] * (int64_t)es;
  for (int64_t done = 0; done < n; done += inner) {
    int64_t off = 0;
    for (int k = 0; k < last; k++) off += idx[k] * a->strides[k];
    const char *p = src + off * (int64_t)es;
    for (int64_t i = 0; i < inner; i++, p += step, dst += es) memcpy(dst, p, es);
    for (int k = last - 1; k >= 0 && ++idx[k] == a->shape[k]; k--) idx[k] = 0;
  }
}

int halua_copy_array(lua_State *L, int idx, halua_dtype dtype, void *dst, size_t dst_bytes) {
  static const char *op = "copy_array";
  int t = engine_dtype(dtype);
  if (t < 0) return fail(HALUA_EARG, "%s: unknown dtype %d", op, (int)dtype);
  if (!dst && dst_bytes) return fail(HALUA_EARG, "%s: dst is NULL", op);
  hl_array a;
  int rc = get_array(L, idx, &a, op);
  if (rc) return rc;
  if ((int)a.dtype != t)
    return fail(HALUA_ETYPE, "%s: the array is %s, the host asked for %s (convert it in Lua with x:astype(\"%s\"))", op,
                hl_dtype_name(a.dtype), halua_dtype_name(dtype), halua_dtype_name(dtype));
  int64_t n = hl_shape_size(a.ndim, a.shape);
  size_t es = hl_dtype_size(a.dtype);
  if ((size_t)n * es != dst_bytes)
    return fail(HALUA_ESHAPE, "%s: the array %s%s has %lld elements (%zu bytes), the destination holds %zu bytes", op,
                hl_dtype_name(a.dtype), hl_shape_str(a.ndim, (const long long *)a.shape).s, (long long)n, (size_t)n * es, dst_bytes);
  gather(&a, dst);
  return HALUA_OK;
}

/* ---- running Lua ---- */

static int do_worker(lua_State *L, job *j) {
  if (luaL_loadfile(L, j->name)) return lua_error(L);   /* the message is on the stack */   /* the message is on the stack */
  lua_call(L, 0, LUA_MULTRET);
  return lua_gettop(L);
}

static int dostring_worker(lua_State *L, job *j) {
  int rc = luaL_loadbuffer(L, j->text, strlen(j->text), j->name);
  if (rc) return lua_error(L);
  lua_call(L, 0, LUA_MULTRET);
  return lua_gettop(L);
}

int halua_dofile(lua_State *L, const char *path, int nresults) {
  if (!L) return fail(HALUA_EARG, "dofile: L is NULL");
  if (!path) return fail(HALUA_EARG, "dofile: path is NULL");
  job j = {.fn = do_worker, .name = path};
  return run_job(L, &j, 0, nresults, "dofile");
}

int halua_dostring(lua_State *L, const char *code, const char *chunkname, int nresults) {
  if (!L) return fail(HALUA_EARG, "dostring: L is NULL");
  if (!code) return fail(HALUA_EARG, "dostring: code is NULL");
  job j = {.fn = dostring_worker, .text = code, .name = chunkname ? chunkname : "=halua_dostring"};
  return run_job(L, &j, 0, nresults, "dostring");
}

static int getglobal_worker(lua_State *L, job *j) {
  lua_getglobal(L, j->name);
  if (lua_isnil(L, -1)) return raise_code(L, j, HALUA_ETYPE, "halua: getglobal: there is no global named '%s'", j->name);
  return 1;
}

int halua_getglobal(lua_State *L, const char *name) {
  if (!L) return fail(HALUA_EARG, "getglobal: L is NULL");
  if (!name) return fail(HALUA_EARG, "getglobal: name is NULL");
  job j = {.fn = getglobal_worker, .name = name};
  return run_job(L, &j, 0, 1, "getglobal");
}

static int setglobal_worker(lua_State *L, job *j) {
  lua_setglobal(L, j->name);
  return 0;
}

int halua_setglobal(lua_State *L, const char *name) {
  if (!L) return fail(HALUA_EARG, "setglobal: L is NULL");
  if (lua_gettop(L) < 1) return fail(HALUA_EARG, "setglobal: the stack is empty: push the value first");
  if (!name) {
    lua_pop(L, 1);
    return fail(HALUA_EARG, "setglobal: name is NULL");
  }
  job j = {.fn = setglobal_worker, .name = name};
  return run_job(L, &j, 1, 0, "setglobal");
}

int halua_call(lua_State *L, int nargs, int nresults) {
  if (!L) return fail(HALUA_EARG, "call: L is NULL");
  if (nargs < 0 || lua_gettop(L) < nargs + 1)
    return fail(HALUA_EARG, "call: the stack holds %d values, fewer than a function and %d arguments", lua_gettop(L), nargs);
  if (nresults < LUA_MULTRET) return fail(HALUA_EARG, "call: nresults is %d", nresults);
  if (nresults > 0 && !lua_checkstack(L, nresults)) return fail(HALUA_EMEM, "call: the Lua stack cannot grow");
  int rc = lua_pcall(L, nargs, nresults, 0);
  return rc ? fail_lua(L, rc, HALUA_ERUN, "call") : HALUA_OK;
}
