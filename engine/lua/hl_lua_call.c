/* A jitted function's call memo: the argument signatures (dtype, device, shape of each array) of
 * its last few plain calls and the program each ran. A call whose arguments match one runs that
 * program at once, in one C call: no signature string is made, interned and looked up, and no
 * Lua frame walks the arguments (hl.jit's fast path, lua/halua/jit.lua). */
#include "hl_lua_call.h"
#include "hl_lua_value.h"
#include <lauxlib.h>
#include <string.h>

#define CALL_MEMO_MT "halua.call_memo"
/* (a function of more array arguments takes the general path each call: jit.lua's signature) */
enum { MEMO_ENTRIES = 4, MEMO_MAX_ARGS = 16 };
/* the functions below have the memo metatable as upvalue 1 and the array metatable as upvalue 2,
 * which spares their results a lookup in the registry */
#define ARRAY_MT_UPVALUE lua_upvalueindex(2)

typedef struct {
  int8_t dtype, device, ndim;
  int64_t shape[HL_MAX_DIMS];
} arg_sig;

typedef struct {
  int used, nargs;
  arg_sig args[MEMO_MAX_ARGS];
  hl_program *program;   /* kept alive by the memo's environment table, at the entry's index */
} memo_entry;

typedef struct {
  memo_entry e[MEMO_ENTRIES];
  int next;   /* the entry the next add replaces: round robin */
  uint64_t tag;   /* memo_tag(): a memo's, checked as an array's tag is (hl_lua_value.c) */
} call_memo;

static const char memo_key;
static uint64_t memo_tag(void) { return (uint64_t)(uintptr_t)&memo_key ^ 0xca11a5a100000000ull; }

/* the concrete array at idx and its signature; NULL when it is not one (a number, a tracer, a
 * table) */
static const hl_array *arg_of(lua_State *L, int idx, arg_sig *s) {
  hl_array *a = hl_lua_to_array(L, idx);
  if (!a || hl_live_trace(a)) return NULL;
  s->dtype = (int8_t)a->dtype;
  s->device = (int8_t)hl_array_device(a);
  s->ndim = (int8_t)a->ndim;
  memcpy(s->shape, a->shape, sizeof(int64_t) * (size_t)a->ndim);
  return a;
}

/* call_memo() -> a new, empty memo */
static int l_call_memo(lua_State *L) {
  call_memo *m = lua_newuserdata(L, sizeof *m);
  memset(m, 0, sizeof *m);
  m->tag = memo_tag();
  lua_pushvalue(L, lua_upvalueindex(1));
  lua_setmetatable(L, -2);
  lua_createtable(L, MEMO_ENTRIES, 0);
  lua_setfenv(L, -2);
  return 1;
}

/* the memo at idx */
static call_memo *check_memo(lua_State *L, int idx) {
  call_memo *m = lua_touserdata(L, idx);
  if (!m || lua_objlen(L, idx) != sizeof *m || m->tag != memo_tag()) luaL_argerror(L, idx, "expected a call memo");
  return m;
}

/* whether the array a, on device `device`, has the signature s (no signature is made for a call:
 * the shapes are compared where they are) */
static int fits(const hl_array *a, int device, const arg_sig *s) {
  if ((int)a->dtype != s->dtype || device != s->device || a->ndim != s->ndim) return 0;
  for (int d = 0; d < a->ndim; d++)
    if (a->shape[d] != s->shape[d]) return 0;
  return 1;
}

/* the entry (0-based) whose signature the arguments from stack index `first` match, or -1; the
 * arguments' arrays in `arrays` */
static int find_entry(lua_State *L, const call_memo *m, int first, int nargs, const hl_array **arrays) {
  int device[MEMO_MAX_ARGS];
  if (nargs > MEMO_MAX_ARGS) return -1;
  for (int k = 0; k < nargs; k++) {
    const hl_array *a = hl_lua_to_array(L, first + k);
    if (!a || hl_live_trace(a)) return -1;   /* (a number, a tracer, a table) */
    arrays[k] = a;
    device[k] = hl_array_device(a);
  }
  for (int i = 0; i < MEMO_ENTRIES; i++) {
    const memo_entry *e = &m->e[i];
    if (!e->used || e->nargs != nargs) continue;
    int match = 1;
    for (int k = 0; match && k < nargs; k++) match = fits(arrays[k], device[k], &e->args[k]);
    if (match) return i;
  }
  return -1;
}

/* call_memo_add(memo, program, args...) -> slot: remembers that these arguments' signature runs
 * program, and says in which of its slots (1-based); nothing when they are not all concrete
 * arrays, or too many */
static int l_call_memo_add(lua_State *L) {
  call_memo *m = check_memo(L, 1);
  hl_program *p = hl_lua_check_program(L, 2);
  int nargs = lua_gettop(L) - 2;
  if (nargs > MEMO_MAX_ARGS) return 0;
  memo_entry e = {.used = 1, .nargs = nargs, .program = p};
  const hl_array *arrays[MEMO_MAX_ARGS];
  for (int k = 0; k < nargs; k++)
    if (!(arrays[k] = arg_of(L, k + 3, &e.args[k]))) return 0;
  for (int i = 0; i < MEMO_ENTRIES; i++) {   /* known already (a call the memo sent on: a moved argument) */
    int match = m->e[i].used && m->e[i].nargs == nargs && m->e[i].program == p;
    for (int k = 0; match && k < nargs; k++) match = fits(arrays[k], e.args[k].device, &m->e[i].args[k]);
    if (match) {
      lua_pushinteger(L, i + 1);
      return 1;
    }
  }
  int slot = m->next;
  m->next = (m->next + 1) % MEMO_ENTRIES;
  m->e[slot] = e;
  lua_getfenv(L, 1);
  lua_pushvalue(L, 2);
  lua_rawseti(L, -2, slot + 1);
  lua_pushinteger(L, slot + 1);
  return 1;
}

/* call_memo_match(memo, args...) -> the slot (1-based) whose signature the arguments match, or
 * nothing (the pytree path of lua/halua/jit.lua runs the slot's entry itself) */
static int l_call_memo_match(lua_State *L) {
  call_memo *m = check_memo(L, 1);
  const hl_array *arrays[MEMO_MAX_ARGS];
  int slot = find_entry(L, m, 2, lua_gettop(L) - 1, arrays);
  if (slot < 0) return 0;
  lua_pushinteger(L, slot + 1);
  return 1;
}

/* call_memo_run(memo, fallback, args...): the outputs of the remembered program for these
 * arguments' signature, or fallback(args...)'s results */
static int l_call_memo_run(lua_State *L) {
  call_memo *m = check_memo(L, 1);
  int nargs = lua_gettop(L) - 2;
  const hl_array *arrays[MEMO_MAX_ARGS];
  int slot = find_entry(L, m, 3, nargs, arrays);
  if (slot >= 0) return hl_lua_program_run_arrays(L, m->e[slot].program, nargs, arrays, ARRAY_MT_UPVALUE);
  lua_remove(L, 1);   /* fallback, args... */
  lua_call(L, nargs, LUA_MULTRET);
  return lua_gettop(L);
}

void hl_lua_register_call(lua_State *L, int core_idx) {
  static const luaL_Reg fns[] = {
      {"call_memo", l_call_memo},
      {"call_memo_add", l_call_memo_add},
      {"call_memo_run", l_call_memo_run},
      {"call_memo_match", l_call_memo_match},
  };
  luaL_newmetatable(L, CALL_MEMO_MT);
  int mt = lua_gettop(L);
  for (size_t k = 0; k < sizeof fns / sizeof fns[0]; k++) {
    lua_pushvalue(L, mt);
    luaL_getmetatable(L, ARRAY_MT);
    lua_pushcclosure(L, fns[k].func, 2);
    lua_setfield(L, core_idx, fns[k].name);
  }
  lua_pop(L, 1);
}
