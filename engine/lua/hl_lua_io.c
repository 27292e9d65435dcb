/* .npy / .npz files for hl.save, hl.load, hl.savez and hl.loadz (lua/halua/io.lua checks the
 * arguments and places loaded arrays on the default device). The file formats are in
 * engine/formats (hl_npy, hl_npz, hl_zip) and write host arrays, which the runtime makes
 * (hl_host_contiguous); everything is released before an error is raised. */
#include "hl_error.h"
#include "hl_eval.h"
#include "hl_lua_io.h"
#include "hl_lua_value.h"
#include "hl_npy.h"
#include "hl_npz.h"
#include <lauxlib.h>
#include <stdlib.h>

/* npy_save(path, array) */
static int l_npy_save(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  hl_array *a = hl_lua_to_array(L, 2);
  if (!a) return hl_lua_arg_error(L, "save", 2, 2, "an array");
  hl_array host;
  if (hl_host_contiguous("save", a, &host)) return hl_lua_raise(L);
  int rc = hl_npy_save(path, &host);
  hl_array_release(&host);
  if (rc) return hl_lua_raise(L);
  return 0;
}

/* npy_load(path) -> array, on the host */
static int l_npy_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  hl_array a;
  if (hl_npy_load(path, &a)) return hl_lua_raise(L);
  hl_lua_push_array(L, &a);
  return 1;
}

/* npz_save(path, {name, ...}, {array, ...}) */
static int l_npz_save(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  luaL_checktype(L, 2, LUA_TTABLE);
  luaL_checktype(L, 3, LUA_TTABLE);
  int n = (int)lua_objlen(L, 2);
  if ((int)lua_objlen(L, 3) != n) return hl_lua_raisef(L, "halua: savez: %d names for %d arrays", n, (int)lua_objlen(L, 3));
  /* the strings and arrays stay referenced by the two tables for the whole call */
  for (int i = 1; i <= n; i++) {
    lua_rawgeti(L, 2, i);
    lua_rawgeti(L, 3, i);
    int ok = lua_type(L, -2) == LUA_TSTRING && hl_lua_to_array(L, -1);
    lua_pop(L, 2);
    if (!ok) return hl_lua_raisef(L, "halua: savez: entry %d is not a name and an array", i);
  }
  const char **names = malloc(((size_t)n + 1) * sizeof *names);
  hl_array *host = calloc((size_t)n + 1, sizeof *host);
  const hl_array **arrays = malloc(((size_t)n + 1) * sizeof *arrays);
  if (!names || !host || !arrays) {
    free(names);
    free(host);
    free(arrays);
    return hl_lua_raisef(L, "halua: savez: out of memory");
  }
  /* every array on the host first: an array that cannot be saved leaves no file behind */
  int ready = 0, rc = 0;
  for (int i = 1; i <= n && !rc; i++) {
    lua_rawgeti(L, 2, i);
    names[i - 1] = lua_tostring(L, -1);
    lua_pop(L, 1);
    lua_rawgeti(L, 3, i);
    rc = hl_host_contiguous("savez", hl_lua_to_array(L, -1), &host[i - 1]);
    lua_pop(L, 1);
    if (!rc) arrays[ready++] = &host[i - 1];
  }
  if (!rc) rc = hl_npz_save(path, n, names, (const hl_array *const *)arrays);
  for (int i = 0; i < ready; i++) hl_array_release(&host[i]);
  free(names);
  free(host);
  free(arrays);
  if (rc) return hl_lua_raise(L);
  return 0;
}

/* npz_load(path) -> {name = array, ...}, {name, ...} in the archive's order; arrays on the host */
static int l_npz_load(lua_State *L) {
  const char *path = luaL_checkstring(L, 1);
  hl_npz_entry *e;
  int n;
  if (hl_npz_load(path, &e, &n)) return hl_lua_raise(L);
  /* a table per result before any array moves to Lua: no error can strand the rest */
  if (!lua_checkstack(L, 8)) {
    hl_npz_entries_free(e, n);
    return hl_lua_raisef(L, "halua: loadz: Lua stack exhausted");
  }
  lua_createtable(L, 0, n);
  lua_createtable(L, n, 0);
  for (int i = 0; i < n; i++) {
    lua_pushstring(L, e[i].name);
    lua_rawseti(L, -2, i + 1);
    lua_pushstring(L, e[i].name);
    hl_lua_push_array(L, &e[i].array);   /* takes the storage reference */
    e[i].array.storage = NULL;
    lua_rawset(L, -4);
  }
  hl_npz_entries_free(e, n);
  return 2;
}

void hl_lua_register_io(lua_State *L, int core_idx) {
  static const luaL_Reg fns[] = {
      {"npy_save", l_npy_save},
      {"npy_load", l_npy_load},
      {"npz_save", l_npz_save},
      {"npz_load", l_npz_load},
      {NULL, NULL},
  };
  for (const luaL_Reg *f = fns; f->name; f++) {
    lua_pushcfunction(L, f->func);
    lua_setfield(L, core_idx, f->name);
  }
}
