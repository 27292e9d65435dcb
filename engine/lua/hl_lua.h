/* What the binding's other files share with hl_lua.c: array userdata in and out, and raising the
 * engine's error message. */
#ifndef HL_LUA_H
#define HL_LUA_H
#include "hl_array.h"
#include <lua.h>

hl_array *hl_lua_to_array(lua_State *L, int idx);   /* NULL when idx holds no array */
/* a concrete array; takes ownership once its userdata exists (an error raised before, such as
 * out of memory, leaves a with the caller) */
void hl_lua_push_array(lua_State *L, hl_array *a);
int hl_lua_is_loaded(lua_State *L);                 /* luaopen_halua_core has run in L */
int hl_lua_raise(lua_State *L);                     /* raises hl_error_message() */
/* raises a formatted "halua: ..." message as is: luaL_error would prefix the calling Lua
 * function's file:line, one of halua's own files */
int hl_lua_raisef(lua_State *L, const char *fmt, ...);
struct hl_trace *hl_lua_check_trace(lua_State *L, int idx);
/* a tracer of the trace at trace_idx (the userdata keeps the trace alive); takes ownership */
void hl_lua_push_tracer(lua_State *L, hl_array *a, int trace_idx);

/* hl_lua_loop.c: compiled loops (core.loop_record), registered into the core table at core_idx */
void hl_lua_register_loop(lua_State *L, int core_idx);

/* the Lua C function of the engine module (hl_lua.c), which the embedding API preloads */
int luaopen_halua_core(lua_State *L);

/* hl_lua_io.c: .npy/.npz reading and writing, registered into the core table at core_idx */
void hl_lua_register_io(lua_State *L, int core_idx);
#endif
