/* The embedding API (engine/include/halua.h): errors, protected jobs, opening halua in a
 * lua_State, running Lua code. Arrays in and out are in hl_embed_array.c.
 *
 * No function here may let a Lua error escape into the host's frames. Host arguments are checked
 * in plain C first; everything that touches Lua runs inside lua_pcall of one C function
 * (`dispatch`, kept in the registry so that pushing it allocates nothing) which calls the job's
 * worker. A worker reports failures by raising; the message is moved to a thread-local buffer. */
#define _GNU_SOURCE   /* dladdr */
#include "halua.h"
#include "hl_embed.h"
#include "hl_error.h"
#include "hl_lua.h"
#include "hl_lua_value.h"
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

int hl_embed_fail(int code, const char *fmt, ...) {
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
    else hl_embed_fail(code, "%s: %s", what, m);
  } else if (lua_type(L, -1) == LUA_TNUMBER) {
    hl_embed_fail(code, "%s: %.17g", what, lua_tonumber(L, -1));
  } else {
    hl_embed_fail(code, "%s: a Lua error whose value is a %s, not a message", what, lua_typename(L, lua_type(L, -1)));
  }
  lua_pop(L, 1);
  return code;
}

/* ---- protected jobs ---- */

static char dispatch_key;   /* its address keys the dispatcher in each state's registry */

/* dispatch(job, args...): runs the job's worker with the args as its stack */
static int dispatch(lua_State *L) {
  hl_embed_job *j = lua_touserdata(L, 1);
  lua_remove(L, 1);
  return j->fn(L, j);
}

static int install_dispatch(lua_State *L) {
  lua_pushlightuserdata(L, &dispatch_key);
  lua_pushcfunction(L, dispatch);
  lua_rawset(L, LUA_REGISTRYINDEX);
  return 0;
}

int hl_embed_run(lua_State *L, hl_embed_job *j, int nargs, int nresults, const char *what) {
  if (nresults < LUA_MULTRET) {
    lua_pop(L, nargs);
    return hl_embed_fail(HALUA_EARG, "%s: nresults is %d", what, nresults);
  }
  /* room for the job and its results (nresults may be INT_MAX: no 8 + nresults before the bound) */
  if (!lua_checkstack(L, 8) || (nresults > 0 && (nresults > LUAI_MAXCSTACK || !lua_checkstack(L, 8 + nresults)))) {
    lua_pop(L, nargs);
    return hl_embed_fail(HALUA_EMEM, "%s: the Lua stack cannot grow", what);
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

int hl_embed_raise(lua_State *L, hl_embed_job *j, int code, const char *fmt, ...) {
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
  case HALUA_INT8: return "int8";
  case HALUA_FLOAT16: return "float16";
  case HALUA_BFLOAT16: return "bfloat16";
  case HALUA_COMPLEX64: return "complex64";
  case HALUA_COMPLEX128: return "complex128";
  }
  return NULL;
}

/* the engine's dtype for a public one, -1 for none; names tie the two enums together */
int hl_embed_dtype(halua_dtype t) {
  const char *name = halua_dtype_name(t);
  return name ? hl_dtype_from_name(name) : -1;
}

halua_dtype hl_embed_public_dtype(hl_dtype t) {
  for (int p = HALUA_BOOL; p <= HALUA_COMPLEX128; p++)
    if (hl_embed_dtype((halua_dtype)p) == (int)t) return (halua_dtype)p;
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

static int open_worker(lua_State *L, hl_embed_job *j) { return load_halua(L, j->text); }

int halua_open(lua_State *L, const char *lua_dir) {
  if (!L) return hl_embed_fail(HALUA_EARG, "open: L is NULL");
  hl_embed_job j = {.fn = open_worker, .text = lua_dir};
  return hl_embed_run(L, &j, 0, 1, "open");
}

static int newstate_worker(lua_State *L, hl_embed_job *j) {
  luaL_openlibs(L);
  load_halua(L, j->text);
  lua_setglobal(L, "halua");
  return 0;
}

lua_State *halua_newstate(const char *lua_dir) {
  lua_State *L = luaL_newstate();
  if (!L) {
    hl_embed_fail(HALUA_EMEM, "newstate: out of memory creating a lua_State");
    return NULL;
  }
  hl_embed_job j = {.fn = newstate_worker, .text = lua_dir};
  if (hl_embed_run(L, &j, 0, 0, "newstate")) {
    lua_close(L);
    return NULL;
  }
  return L;
}

/* ---- running Lua ---- */

static int do_worker(lua_State *L, hl_embed_job *j) {
  if (luaL_loadfile(L, j->name)) return lua_error(L);   /* the message is on the stack */   /* the message is on the stack */
  lua_call(L, 0, LUA_MULTRET);
  return lua_gettop(L);
}

static int dostring_worker(lua_State *L, hl_embed_job *j) {
  int rc = luaL_loadbuffer(L, j->text, strlen(j->text), j->name);
  if (rc) return lua_error(L);
  lua_call(L, 0, LUA_MULTRET);
  return lua_gettop(L);
}

int halua_dofile(lua_State *L, const char *path, int nresults) {
  if (!L) return hl_embed_fail(HALUA_EARG, "dofile: L is NULL");
  if (!path) return hl_embed_fail(HALUA_EARG, "dofile: path is NULL");
  hl_embed_job j = {.fn = do_worker, .name = path};
  return hl_embed_run(L, &j, 0, nresults, "dofile");
}

int halua_dostring(lua_State *L, const char *code, const char *chunkname, int nresults) {
  if (!L) return hl_embed_fail(HALUA_EARG, "dostring: L is NULL");
  if (!code) return hl_embed_fail(HALUA_EARG, "dostring: code is NULL");
  hl_embed_job j = {.fn = dostring_worker, .text = code, .name = chunkname ? chunkname : "=halua_dostring"};
  return hl_embed_run(L, &j, 0, nresults, "dostring");
}

static int getglobal_worker(lua_State *L, hl_embed_job *j) {
  lua_getglobal(L, j->name);
  if (lua_isnil(L, -1)) return hl_embed_raise(L, j, HALUA_ETYPE, "halua: getglobal: there is no global named '%s'", j->name);
  return 1;
}

int halua_getglobal(lua_State *L, const char *name) {
  if (!L) return hl_embed_fail(HALUA_EARG, "getglobal: L is NULL");
  if (!name) return hl_embed_fail(HALUA_EARG, "getglobal: name is NULL");
  hl_embed_job j = {.fn = getglobal_worker, .name = name};
  return hl_embed_run(L, &j, 0, 1, "getglobal");
}

static int setglobal_worker(lua_State *L, hl_embed_job *j) {
  lua_setglobal(L, j->name);
  return 0;
}

int halua_setglobal(lua_State *L, const char *name) {
  if (!L) return hl_embed_fail(HALUA_EARG, "setglobal: L is NULL");
  if (lua_gettop(L) < 1) return hl_embed_fail(HALUA_EARG, "setglobal: the stack is empty: push the value first");
  if (!name) {
    lua_pop(L, 1);
    return hl_embed_fail(HALUA_EARG, "setglobal: name is NULL");
  }
  hl_embed_job j = {.fn = setglobal_worker, .name = name};
  return hl_embed_run(L, &j, 1, 0, "setglobal");
}

int halua_call(lua_State *L, int nargs, int nresults) {
  if (!L) return hl_embed_fail(HALUA_EARG, "call: L is NULL");
  /* (nargs >= top, not top < nargs + 1: nargs may be INT_MAX) */
  if (nargs < 0 || nargs >= lua_gettop(L))
    return hl_embed_fail(HALUA_EARG, "call: the stack holds %d values, fewer than a function and %d arguments", lua_gettop(L), nargs);
  /* from here the function and its arguments are there: a failure pops them, as lua_pcall's does */
  if (nresults < LUA_MULTRET) {
    lua_pop(L, nargs + 1);
    return hl_embed_fail(HALUA_EARG, "call: nresults is %d", nresults);
  }
  if (nresults > 0 && !lua_checkstack(L, nresults)) {
    lua_pop(L, nargs + 1);
    return hl_embed_fail(HALUA_EMEM, "call: the Lua stack cannot grow to %d results", nresults);
  }
  int rc = lua_pcall(L, nargs, nresults, 0);
  return rc ? fail_lua(L, rc, HALUA_ERUN, "call") : HALUA_OK;
}
