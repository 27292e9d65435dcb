/* halua's own Lua modules, loaded from bytecode kept beside the engine library (hl_disk.h's blobs).
 * Parsing lua/halua's 13,000 lines at every `require "halua"` was a third of a process's start
 * (about 20 of 65 ms on the 2-vCPU machines); LuaJIT loads its own bytecode several times faster.
 * A blob's key is LuaJIT's version, the module file's path and its contents (their length and a
 * hash), so an edited file, or another LuaJIT, is parsed again and its blob replaced; blobs are
 * named by module, so there are as many as there are modules. The bytecode keeps the debug
 * information (lua_dump does not strip it): tracebacks and error positions read as from the source.
 * lua/halua/init.lua puts the loader in package.loaders, for halua's modules only. */
#include "hl_lua_modules.h"
#include "hl_disk.h"
#include <lauxlib.h>
#include <luajit.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
  char *p;
  size_t n, cap;
  int failed;
} growing;

static int append(lua_State *L, const void *p, size_t n, void *ud) {
  (void)L;
  growing *g = ud;
  if (g->n + n > g->cap) {
    size_t cap = g->cap ? g->cap : 1 << 16;
    while (cap < g->n + n) cap *= 2;
    char *grown = realloc(g->p, cap);
    if (!grown) {
      g->failed = 1;
      return 1;
    }
    g->p = grown;
    g->cap = cap;
  }
  memcpy(g->p + g->n, p, n);
  g->n += n;
  return 0;
}

static char *read_file(const char *path, size_t *n) {
  FILE *f = fopen(path, "rb");
  if (!f) return NULL;
  growing g = {0};
  char chunk[65536];
  size_t r;
  while ((r = fread(chunk, 1, sizeof chunk, f)) > 0)
    if (append(NULL, chunk, r, &g)) break;
  int bad = ferror(f) || g.failed;
  fclose(f);
  if (bad) {
    free(g.p);
    return NULL;
  }
  *n = g.n;
  return g.p ? g.p : calloc(1, 1);
}

/* core.load_module(name, path) -> the module's chunk, or nil and the message loadfile would give */
static int l_load_module(lua_State *L) {
  const char *name = luaL_checkstring(L, 1), *path = luaL_checkstring(L, 2);
  size_t n = 0;
  char *src = read_file(path, &n);
  if (!src) {
    lua_pushnil(L);
    lua_pushfstring(L, "cannot read %s", path);
    return 2;
  }
  char blob[256], key[4400];
  unsigned long long hash = (unsigned long long)hl_disk_hash(src, n);
  int klen = snprintf(key, sizeof key, "halua Lua bytecode 1|%s|%s|%zu|%016llx", LUAJIT_VERSION, path, n, hash);
  int named = snprintf(blob, sizeof blob, "%s.ljbc", name);
  int cached = klen > 0 && (size_t)klen < sizeof key && named > 0 && (size_t)named < sizeof blob;
  lua_pushfstring(L, "@%s", path);
  const char *chunkname = lua_tostring(L, -1);
  void *bc = NULL;
  size_t bn = 0;
  if (cached && hl_disk_blob_read(blob, (const unsigned char *)key, (size_t)klen, &bc, &bn) == 0) {
    int rc = luaL_loadbuffer(L, bc, bn, chunkname);
    free(bc);
    if (rc == 0) {
      free(src);
      return 1;
    }
    lua_pop(L, 1);   /* (bytecode this LuaJIT does not take: parsed again, and its blob replaced) */
  }
  int rc = luaL_loadbuffer(L, src, n, chunkname);
  free(src);
  if (rc != 0) {
    lua_pushnil(L);
    lua_insert(L, -2);
    return 2;
  }
  if (cached) {
    growing g = {0};
    if (lua_dump(L, append, &g) == 0 && !g.failed)
      hl_disk_blob_write(blob, (const unsigned char *)key, (size_t)klen, g.p, g.n);   /* (or parsed again next time) */
    free(g.p);
  }
  return 1;
}

void hl_lua_register_modules(lua_State *L, int core_idx) {
  lua_pushcfunction(L, l_load_module);
  lua_setfield(L, core_idx, "load_module");
}
