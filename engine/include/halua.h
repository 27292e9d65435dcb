/* halua.h: the C API for applications that embed halua (C11).
 *
 * A host creates a lua_State with halua loaded, runs Lua scripts that define (jitted) functions,
 * wraps its own buffers as halua arrays without copying them, calls the functions and reads the
 * result arrays back.
 *
 *   lua_State *L = halua_newstate(NULL);
 *   if (!L || halua_dofile(L, "model.lua", 0)) { fprintf(stderr, "%s\n", halua_error()); ... }
 *   halua_getglobal(L, "predict");
 *   int64_t shape[2] = {4, 3};
 *   halua_push_array(L, x, HALUA_FLOAT32, 2, shape, NULL, NULL, NULL);   // x is not copied
 *   if (halua_call(L, 1, 1)) { fprintf(stderr, "%s\n", halua_error()); ... }
 *   halua_array y;
 *   halua_to_array(L, -1, &y);   // y.data valid while the result stays on the stack
 *   lua_pop(L, 1);
 *
 * Errors. Every function returns a status: HALUA_OK (0) or one of the nonzero HALUA_E* codes.
 * Nothing here raises a Lua error or longjmps through the host's frames: the work that can raise
 * runs in protected mode. The message of the last failure is per thread (thread-local storage):
 * halua_error() returns it on the thread that made the failing call, until that thread's next
 * failure. Messages begin "halua: ". A function that fails leaves the Lua stack as it found it,
 * except that what it consumes is gone on failure too: halua_call pops the function and its
 * arguments (like lua_pcall, without leaving an error object), halua_setglobal the value.
 *
 * Threads. A lua_State belongs to one thread at a time (Lua's rule). Any number of threads may
 * each run their own lua_State with halua: compiled pipelines are cached process-wide, and a
 * pipeline compiled by one thread serves every other. The same host buffer may be wrapped in
 * several states at once: the engine only reads wrapped memory.
 *
 * Linking. `pkg-config --cflags --libs halua` gives libhalua (the engine, linked with LuaJIT)
 * and LuaJIT's flags; the host uses LuaJIT's own lua.h/lauxlib.h/lualib.h beside this header.
 */
#ifndef HALUA_H
#define HALUA_H

#include <lua.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

/* Status codes. */
enum {
  HALUA_OK = 0,
  HALUA_EARG = 1,    /* a bad argument from the host: NULL pointer, unknown dtype, bad shape */
  HALUA_ETYPE = 2,   /* a Lua value is not what was asked for (not an array, another dtype) */
  HALUA_ESHAPE = 3,  /* an array has another size or shape than the host said */
  HALUA_ERUN = 4,    /* Lua code raised an error (a script, a jitted function, an engine op) */
  HALUA_EMEM = 5,    /* out of memory */
};

/* Element types. The values are part of the ABI and do not change. */
typedef enum {
  HALUA_BOOL = 0,     /* one byte, 0 or 1 */
  HALUA_UINT8 = 1,
  HALUA_INT32 = 2,
  HALUA_INT64 = 3,
  HALUA_FLOAT32 = 4,
  HALUA_FLOAT64 = 5,
  HALUA_INT8 = 6,
  HALUA_FLOAT16 = 7,  /* IEEE binary16 bits */
  HALUA_BFLOAT16 = 8, /* the top 16 bits of a float32 */
  HALUA_COMPLEX64 = 9,   /* (re, im) float32 pairs, interleaved as NumPy's */
  HALUA_COMPLEX128 = 10, /* (re, im) float64 pairs */
} halua_dtype;

#define HALUA_MAX_DIMS 8

/* An array as the host sees it. Strides are in elements (not bytes), may be 0 (a broadcast
 * axis) or negative; element (i0, i1, ...) is at data + sum(ik * strides[k]) elements. */
typedef struct {
  halua_dtype dtype;
  int ndim;
  int64_t shape[HALUA_MAX_DIMS];
  int64_t strides[HALUA_MAX_DIMS];
  void *data;                /* element (0, ..., 0) */
} halua_array;

/* Called once when the last reference to a wrapped buffer is dropped (by Lua's garbage
 * collector or lua_close, on the thread running that lua_State): `data` is the pointer given to
 * halua_push_array. It must not call into the lua_State. */
typedef void (*halua_release_fn)(void *user, void *data);

/* ---- opening ---- */

/* A lua_CFunction: loads halua into L and returns its module table, as `require "halua"` does
 * for a script. Use it with luaL_openlibs'd states, e.g. through lua_cpcall or as
 * package.preload.halua. It registers the engine linked into this library (no halua_core.so is
 * loaded) and finds the Lua modules as halua_open(L, NULL) does. As a lua_CFunction it raises
 * Lua errors: call it protected, or use halua_open. */
int luaopen_halua(lua_State *L);

/* Loads halua into L (which must have the standard libraries, see luaL_openlibs) and pushes the
 * module table; `require "halua"` returns the same table afterwards. The Lua modules
 * (halua/init.lua, ...) are searched in lua_dir when it is not NULL, else in the directory named
 * by the environment variable HALUA_LUA_DIR, else in <prefix>/share/lua/5.1 beside the installed
 * library (<prefix>/lib/libhalua.so), else on package.path as it is. */
int halua_open(lua_State *L, const char *lua_dir);

/* A new lua_State with the standard libraries and halua loaded (lua_dir as for halua_open), the
 * module also set as the global `halua`. NULL on failure (see halua_error()). Close it with
 * lua_close. */
lua_State *halua_newstate(const char *lua_dir);

/* The message of this thread's last failed halua_* call ("halua: ..."), or "" when none failed. */
const char *halua_error(void);

/* The dtype's name ("float32", ...), or NULL for a value that is no halua_dtype. */
const char *halua_dtype_name(halua_dtype dtype);

/* ---- arrays in ---- */

/* Pushes an array that shows the host's memory at `data` WITHOUT copying it. shape has ndim
 * (0..8) non-negative extents (NULL allowed when ndim is 0); strides has ndim strides in
 * elements, or is NULL for row-major contiguous. data must be non-NULL and aligned to the
 * element size, and every element the strides reach must be readable until release(user, data)
 * is called. The engine never writes through the array (arrays are immutable values; results
 * are new arrays), so the host may keep reading the buffer; if it writes to it while an array
 * wraps it, later computations see the new values. Views made from the array (reshape,
 * slicing, transpose) share the buffer, so release runs once, after the last of them is gone.
 * release may be NULL (the host keeps the buffer alive long enough itself: e.g. until
 * lua_close). On failure nothing is pushed and release is never called: the buffer stays the
 * host's. */
int halua_push_array(lua_State *L, void *data, halua_dtype dtype, int ndim, const int64_t *shape,
                     const int64_t *strides, halua_release_fn release, void *user);

/* ---- arrays out ---- */

/* Describes the array at stack index idx without copying: out->data points into the engine's
 * (or the host's wrapped) memory and stays valid while that array value is alive in Lua (keep
 * it on the stack or referenced). Fails with HALUA_ETYPE for a value that is not an array, for
 * an array on a GPU and for a traced value. */
int halua_to_array(lua_State *L, int idx, halua_array *out);

/* Copies the array at idx into dst as a row-major contiguous block of its elements. The array
 * must have dtype `dtype` (HALUA_ETYPE otherwise; no conversion is done) and exactly
 * dst_bytes / element size elements (HALUA_ESHAPE otherwise). Views and broadcast arrays are
 * gathered element by element. */
int halua_copy_array(lua_State *L, int idx, halua_dtype dtype, void *dst, size_t dst_bytes);

/* ---- running Lua ---- */

/* Loads and runs a Lua file or string (chunkname may be NULL) and leaves nresults results
 * (LUA_MULTRET for all) on the stack. */
int halua_dofile(lua_State *L, const char *path, int nresults);
int halua_dostring(lua_State *L, const char *code, const char *chunkname, int nresults);

/* Pushes the global `name`; a nil global is an error (HALUA_ETYPE) and pushes nothing. */
int halua_getglobal(lua_State *L, const char *name);

/* Pops the value on top of the stack and sets it as the global `name`. */
int halua_setglobal(lua_State *L, const char *name);

/* Calls the function below the nargs arguments on top of the stack, as lua_pcall does, and
 * leaves nresults results (LUA_MULTRET for all). On an error, the function and arguments are
 * popped, nothing is pushed and halua_error() holds the message: a Lua error that is no
 * "halua: " message is reported as "halua: call: <message>". */
int halua_call(lua_State *L, int nargs, int nresults);

#ifdef __cplusplus
}
#endif
#endif
