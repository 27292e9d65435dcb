/* A jitted function's call memo (hl_lua_call.c: core.call_memo, call_memo_add, call_memo_run,
 * call_memo_match). */
#ifndef HL_LUA_CALL_H
#define HL_LUA_CALL_H
#include <lua.h>

/* registers the functions into the core table at core_idx */
void hl_lua_register_call(lua_State *L, int core_idx);
#endif
