/* What the binding's files share (hl_lua.c, hl_lua_io.c, hl_lua_loop.c and the embedding API):
 * array userdata in and out, traces, and raising the engine's error message. */
#ifndef HL_LUA_VALUE_H
#define HL_LUA_VALUE_H
#include "hl_eval.h"
#include <lua.h>

#define ARRAY_MT "halua.array"
#define TRACE_MT "halua.trace"
#define PROGRAM_MT "halua.program"

hl_array *hl_lua_to_array(lua_State *L, int idx);   /* NULL when idx holds no array */
/* Makes the table at mt (registered as ARRAY_MT) the one arrays pushed below are given. */
void hl_lua_register_array_mt(lua_State *L, int mt);
/* Has each finished cycle of Lua's collector count as a collection for the early rule of
 * engine memory (hl_lua_value.c); once per lua_State, when the binding opens. */
void hl_lua_start_cycle_marks(lua_State *L);
/* how many full collections the rules of engine memory have run on this thread */
uint64_t hl_lua_collections(void);
/* Move an engine array into a new userdata (takes ownership once the userdata exists: an error
 * raised before, such as out of memory, leaves src with the caller). A tracer keeps the trace at
 * trace_idx alive (0: none). */
hl_array *hl_lua_push_value(lua_State *L, const hl_array *src, int trace_idx);
/* the same with the array metatable at index mt */
hl_array *hl_lua_push_value_mt(lua_State *L, const hl_array *src, int trace_idx, int mt);
/* a concrete array (hl_lua_push_value without a trace) */
void hl_lua_push_array(lua_State *L, hl_array *a);
/* a tracer of the trace at trace_idx; takes ownership */
void hl_lua_push_tracer(lua_State *L, hl_array *a, int trace_idx);
int hl_lua_is_loaded(lua_State *L);                 /* luaopen_halua_core has run in L */
int hl_lua_raise(lua_State *L);                     /* raises hl_error_message() */
/* raises a formatted "halua: ..." message as is: luaL_error would prefix the calling Lua
 * function's file:line, one of halua's own files */
int hl_lua_raisef(lua_State *L, const char *fmt, ...);
hl_trace *hl_lua_check_trace(lua_State *L, int idx);
/* core.program_build's userdata: a jitted program */
typedef struct {
  hl_program p;
} hl_lua_program;
/* the program at idx, or an error */
hl_program *hl_lua_check_program(lua_State *L, int idx);
/* Runs p on the arrays from stack index `first` to the top; pushes its outputs, returns their
 * count (core.program_run) */
int hl_lua_program_run(lua_State *L, hl_program *p, int first);
/* the same with the arrays already taken from the stack; mt: the array metatable's index, or 0
 * (hl_lua_push_value_mt) */
int hl_lua_program_run_arrays(lua_State *L, hl_program *p, int nargs, const hl_array *const *args, int mt);
/* A collection when kernels held only by (possibly dead) jitted functions grow large: call after
 * building a program. */
void hl_lua_kernel_check(lua_State *L);
/* Raises the error for an operand of the wrong type, for every op alike: "halua: <op>: argument
 * <argn> is a <type>, expected <expected>" for the value at idx, with what a script most likely
 * did: nil comes from tonumber() of an array, which LuaJIT answers with nil (arrays have no
 * __tonumber), or from a missing argument; a table wants hl.array. */
int hl_lua_arg_error(lua_State *L, const char *op, int argn, int idx, const char *expected);
#endif
