/* The engine's Lua module (hl_lua.c). */
#ifndef HL_LUA_H
#define HL_LUA_H
#include <lua.h>

/* the Lua C function of the engine module, which the embedding API preloads */
int luaopen_halua_core(lua_State *L);
#endif
