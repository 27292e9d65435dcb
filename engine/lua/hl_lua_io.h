/* .npy/.npz reading and writing for the Lua module (hl_lua_io.c). */
#ifndef HL_LUA_IO_H
#define HL_LUA_IO_H
#include <lua.h>

/* registers the functions into the core table at core_idx */
void hl_lua_register_io(lua_State *L, int core_idx);
#endif
