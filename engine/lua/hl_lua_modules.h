/* halua's own Lua modules, loaded from their bytecode kept beside the engine library (hl_lua_modules.c). */
#ifndef HL_LUA_MODULES_H
#define HL_LUA_MODULES_H
#include <lua.h>

/* registers core.load_module(name, path) into the core table at core_idx */
void hl_lua_register_modules(lua_State *L, int core_idx);
#endif
