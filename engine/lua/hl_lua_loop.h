/* Compiled loops for the Lua module (hl_lua_loop.c: core.loop_record). */
#ifndef HL_LUA_LOOP_H
#define HL_LUA_LOOP_H
#include <lua.h>

/* registers the functions into the core table at core_idx */
void hl_lua_register_loop(lua_State *L, int core_idx);
#endif
