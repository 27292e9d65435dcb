/* Lua values of the binding: array and tracer userdata in and out, traces, the engine's errors
 * raised, and Lua's collector stepped by the engine's memory. */
#include "hl_lua_value.h"
#include "hl_backend.h"
#include "hl_cache.h"
#include "hl_device.h"
#include "hl_error.h"
#include "hl_storage.h"
#include <lauxlib.h>
#include <stdarg.h>
#include <stdbool.h>
#include <time.h>

int hl_lua_raise(lua_State *L) {
  lua_pushstring(L, hl_error_message());
  return lua_error(L);
}

/* Raise a formatted message (lua_pushfstring's formats: %s %d %f %%). Unlike luaL_error it adds
 * no "file:line:" of the Lua caller, which would be one of halua's own files. */
int hl_lua_raisef(lua_State *L, const char *fmt, ...) {
  va_list ap;
  va_start(ap, fmt);
  lua_pushvfstring(L, fmt, ap);
  va_end(ap);
  return lua_error(L);
}

int hl_lua_arg_error(lua_State *L, const char *op, int argn, int idx, const char *expected) {
  int t = lua_type(L, idx);
  if (t == LUA_TNONE || t == LUA_TNIL)
    return hl_lua_raisef(L, "halua: %s: argument %d is nil, expected %s (tonumber() of an array gives nil; "
                            "use x:item() outside hl.jit, or keep it an array)", op, argn, expected);
  return hl_lua_raisef(L, "halua: %s: argument %d is a %s, expected %s%s", op, argn, lua_typename(L, t), expected,
                       t == LUA_TTABLE ? " (make one with hl.array)" : "");
}

/* ---- heap tracking: step Lua's GC by engine bytes, which Lua cannot see ---- */

/* A collection runs after 32 MiB of new host arrays, or more: an eighth of the arrays that
 * survived the last one, or four times the Lua heap. A collection walks the Lua heap, not the
 * arrays' bytes (about 0.15 ms with halua loaded and a thousand live arrays), so its cost stays a
 * small part of the work; the blocks it frees are then reused warm (hl_storage.c's cache), where
 * new memory costs more to touch than most kernels take.
 *
 * Device arrays are paced on their own. A GPU streams 32 MiB in ~10 us, so the host rule made a
 * loop of mid-sized GPU ops mostly collections (H200: a jitted copy of 2^24 float32 ran at 412
 * GB/s, one 0.3 ms collection per call; of 2^26 at 1.4 TB/s against ~4 alone). Once 32 MiB of new
 * device arrays are pending, a collection runs after 24 new device blocks (Halide's CUDA runtime
 * keeps 32 freed blocks for reuse; a block beyond those goes back to the driver, and each free
 * waits for the device's queued work), or after a sixty-fourth of the GPU's memory.
 *
 * Small arrays are also collected early. 32 MiB of garbage is far more than the caches hold, so
 * a loop of eager ops on arrays of a few thousand elements wrote every result into memory the
 * caches had long dropped, where NumPy, freeing each temporary at once, reuses one warm block:
 * `c * 2 + c` ran 2-3.5x slower than with a collection after every 2 MiB (on 1,000 to 16,000
 * float32, this 2-vCPU machine, the 0.15 ms collection included). So after 2 MiB of new arrays
 * of at most 64 KiB (hl_storage_warm_bytes_made), a collection runs, unless the time since the
 * last one is less than twice what a collection takes (the lesser of the last two): a Lua heap
 * of the user's that makes collections slow makes them rarer, and they never take more than a
 * third of the time. Larger arrays do not fit the caches a few at a time; the rule above paces
 * them.
 *
 * The thresholds are process-wide like the byte counts they are compared with; embedders run a
 * lua_State per thread, so they are read and written atomically. The early rule's marks are the
 * thread's own, like the counts of small arrays it compares. */
#define GC_MIN_BYTES ((size_t)32 << 20)
#define GC_DEVICE_BLOCKS 24
#define GC_WARM_BYTES ((size_t)2 << 20)
static size_t gc_host_max = GC_MIN_BYTES, gc_device_floor = GC_MIN_BYTES, gc_device_max = GC_MIN_BYTES;
static uint64_t gc_device_mark;   /* hl_device_blocks_made() at the last collection */
static _Thread_local size_t gc_warm_next = GC_WARM_BYTES;   /* hl_storage_warm_bytes_made() that calls for one */
/* when the last collection ended, and what a collection costs: the lesser of the last two, so
 * that one collection the machine slowed (a preempted thread) does not hold the rule back and let
 * tens of MiB pile up at once */
static _Thread_local uint64_t gc_last_end_ns, gc_cost_ns, gc_prev_cost_ns;

static uint64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static size_t larger(size_t a, size_t b) { return a > b ? a : b; }

/* the engine's bytes in host memory (the total counts the device's too) */
static size_t host_bytes(size_t device) {
  size_t all = hl_heap_bytes();
  return all > device ? all - device : 0;
}

/* Lua's own collection cycles free small arrays too, and a loop of ops on a few elements each
 * makes far more Lua garbage (a userdata per result) than array bytes: Lua finishes a cycle every
 * few thousand ops, long before 2 MiB of arrays. So a cycle that finished since the last mark
 * counts as a collection of the rule's own, and such a loop asks for none (they had been a
 * twentieth of an eager `a + b`). The mark is an empty table that only a weak table in the
 * registry holds: the first cycle to finish after it is made clears it from there. (A finalizer
 * would say so at once, but LuaJIT runs finalizers at lua_close after it has unloaded this
 * library, and one that makes the next mark would run in every round there.) Each lua_State has
 * its own mark. */
static const char cycle_mark_key;

/* a new mark in the weak table at the top of the stack */
static void new_mark_in(lua_State *L) {
  lua_newtable(L);
  lua_rawseti(L, -2, 1);
}

/* pushes L's weak table of marks (nil in a state the binding did not open) */
static void push_marks(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&cycle_mark_key);
  lua_rawget(L, LUA_REGISTRYINDEX);
}

/* whether a cycle of L's collector finished since its mark was made (then a new one is made) */
static bool cycle_finished(lua_State *L) {
  push_marks(L);
  bool finished = false;
  if (lua_istable(L, -1)) {
    lua_rawgeti(L, -1, 1);
    finished = lua_isnil(L, -1);
    lua_pop(L, 1);
    if (finished) new_mark_in(L);
  }
  lua_pop(L, 1);
  return finished;
}

static void new_cycle_mark(lua_State *L) {
  push_marks(L);
  if (lua_istable(L, -1)) new_mark_in(L);
  lua_pop(L, 1);
}

void hl_lua_start_cycle_marks(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&cycle_mark_key);
  lua_createtable(L, 1, 0);
  lua_createtable(L, 0, 1);
  lua_pushliteral(L, "v");
  lua_setfield(L, -2, "__mode");
  lua_setmetatable(L, -2);
  new_mark_in(L);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

/* the early rule: 2 MiB of new small arrays since the last collection (the rule's own, or a
 * cycle of Lua's), and a collection costs at most a third of the time */
static bool gc_warm_due(lua_State *L) {
  size_t made = hl_storage_warm_bytes_made();
  if (made < gc_warm_next) return false;
  if (cycle_finished(L)) {
    gc_warm_next = made + GC_WARM_BYTES;
    return false;
  }
  if (now_ns() - gc_last_end_ns >= 2 * gc_cost_ns) return true;
  gc_warm_next = made + GC_WARM_BYTES / 8;   /* look again soon */
  return false;
}

static bool gc_due(lua_State *L) {
  size_t device = hl_device_heap_bytes(), host = host_bytes(device);
  if (host >= __atomic_load_n(&gc_host_max, __ATOMIC_RELAXED) || gc_warm_due(L)) return true;
  if (device < __atomic_load_n(&gc_device_floor, __ATOMIC_RELAXED)) return false;
  uint64_t mark = __atomic_load_n(&gc_device_mark, __ATOMIC_RELAXED);   /* (before the count: a newer mark can only be lower) */
  return device >= __atomic_load_n(&gc_device_max, __ATOMIC_RELAXED) || hl_device_blocks_made() - mark >= GC_DEVICE_BLOCKS;
}

static _Thread_local uint64_t collections;

uint64_t hl_lua_collections(void) { return collections; }

static void heap_check(lua_State *L) {
  if (!gc_due(L)) return;
  uint64_t start = now_ns();
  lua_gc(L, LUA_GCCOLLECT, 0);
  new_cycle_mark(L);   /* (this collection cleared the last: it counts below) */
  collections++;
  gc_last_end_ns = now_ns();
  uint64_t cost = gc_last_end_ns - start;
  gc_cost_ns = cost < gc_prev_cost_ns || !gc_prev_cost_ns ? cost : gc_prev_cost_ns;
  gc_prev_cost_ns = cost;
  gc_warm_next = hl_storage_warm_bytes_made() + GC_WARM_BYTES;
  size_t device = hl_device_heap_bytes(), host = host_bytes(device);
  size_t lua_bytes = (size_t)lua_gc(L, LUA_GCCOUNT, 0) << 10;
  __atomic_store_n(&gc_host_max, host + larger(GC_MIN_BYTES, larger(host / 8, 4 * lua_bytes)), __ATOMIC_RELAXED);
  uint64_t blocks = hl_device_blocks_made();
  if (blocks) {   /* (a process that never used a GPU does not probe for one) */
    __atomic_store_n(&gc_device_floor, device + GC_MIN_BYTES, __ATOMIC_RELAXED);
    size_t allowance = larger(GC_MIN_BYTES, larger(device / 8, hl_cuda_device_memory() / 64));
    __atomic_store_n(&gc_device_max, device + allowance, __ATOMIC_RELAXED);
    __atomic_store_n(&gc_device_mark, blocks, __ATOMIC_RELAXED);
  }
}

/* Kernels evicted from the cache stay alive while a jitted function holds them, and Lua sees
 * only a small userdata: after 4 MiB of such kernels more than the last collection left, or a
 * sixteenth of the cache's bound, a collection frees those of functions that are gone. Checked
 * when a program is built (once per compile or cache lookup of a jitted function, which costs
 * far more than the collection). */
#define KERNELS_MIN_BYTES ((size_t)4 << 20)
static size_t kernels_soft_max;

static size_t kernels_outside_cache(void) {
  size_t live = hl_kernel_live_bytes(), cached = hl_cache_info().mem_bytes;
  return live > cached ? live - cached : 0;
}

void hl_lua_kernel_check(lua_State *L) {
  hl_cache_stats s = hl_cache_info();
  size_t allowance = s.mem_limit / 16 > KERNELS_MIN_BYTES ? s.mem_limit / 16 : KERNELS_MIN_BYTES;
  size_t max = __atomic_load_n(&kernels_soft_max, __ATOMIC_RELAXED);
  if (kernels_outside_cache() < (max ? max : allowance)) return;
  lua_gc(L, LUA_GCCOLLECT, 0);
  __atomic_store_n(&kernels_soft_max, kernels_outside_cache() + allowance, __ATOMIC_RELAXED);
}

/* ---- arrays ---- */

/* The array metatable is also in the registry under this address: every result reaches it with
 * a light userdata key instead of interning ARRAY_MT's string. */
static const char array_mt_key;

void hl_lua_register_array_mt(lua_State *L, int mt) {
  lua_pushlightuserdata(L, (void *)&array_mt_key);
  lua_pushvalue(L, mt);
  lua_rawset(L, LUA_REGISTRYINDEX);
}

static void push_array_mt(lua_State *L) {
  lua_pushlightuserdata(L, (void *)&array_mt_key);
  lua_rawget(L, LUA_REGISTRYINDEX);
}

/* An array's userdata: the record, then a tag that says it is one. Checking the tag and the
 * userdata's size costs two calls into Lua; comparing its metatable with the array metatable
 * cost four (lua_getmetatable, lua_rawequal, lua_settop), about 140 instructions per operand,
 * a sixth of an eager `a + b`. The tag is this library's address of array_mt_key with the top
 * bit set: no pointer, which is what other userdata of this size hold, and chosen anew by each
 * process's address layout. Only C code writes a userdata's bytes (or LuaJIT's FFI, which can
 * write any memory), so a script cannot forge it by accident. */
typedef struct {
  hl_array a;
  uint64_t tag;
} array_box;

static uint64_t array_tag(void) { return (uint64_t)(uintptr_t)&array_mt_key ^ 0xa11a5a1a00000000ull; }

hl_array *hl_lua_to_array(lua_State *L, int idx) {
  array_box *b = lua_touserdata(L, idx);
  /* (a light userdata has no size: lua_objlen gives 0) */
  return b && lua_objlen(L, idx) == sizeof *b && b->tag == array_tag() ? &b->a : NULL;
}

/* Move an engine array into a new userdata (takes ownership). Tracers keep their trace alive. */
hl_array *hl_lua_push_value(lua_State *L, const hl_array *src, int trace_idx) { return hl_lua_push_value_mt(L, src, trace_idx, 0); }

hl_array *hl_lua_push_value_mt(lua_State *L, const hl_array *src, int trace_idx, int mt) {
  /* the GC step comes first: once the userdata exists it owns src, and an error raised before
   * that (out of memory, a finalizer's error) leaves src with the caller (halua_push_array
   * relies on this to hand a wrapped buffer back to the host) */
  if (src->storage) heap_check(L);
  array_box *b = lua_newuserdata(L, sizeof *b);
  b->a = *src;
  b->tag = array_tag();
  hl_array *a = &b->a;
  if (mt) lua_pushvalue(L, mt);
  else push_array_mt(L);
  lua_setmetatable(L, -2);
  if (a->graph && trace_idx) {
    lua_newtable(L);
    lua_pushvalue(L, trace_idx);
    lua_rawseti(L, -2, 1);
    lua_setfenv(L, -2);
  }
  return a;
}

int hl_lua_is_loaded(lua_State *L) {
  lua_getfield(L, LUA_REGISTRYINDEX, ARRAY_MT);
  int loaded = lua_istable(L, -1);
  lua_pop(L, 1);
  return loaded;
}
void hl_lua_push_array(lua_State *L, hl_array *a) { hl_lua_push_value(L, a, 0); }
void hl_lua_push_tracer(lua_State *L, hl_array *a, int trace_idx) { hl_lua_push_value(L, a, trace_idx); }

hl_trace *hl_lua_check_trace(lua_State *L, int idx) { return luaL_checkudata(L, idx, TRACE_MT); }

hl_program *hl_lua_check_program(lua_State *L, int idx) { return &((hl_lua_program *)luaL_checkudata(L, idx, PROGRAM_MT))->p; }

/* the results as they come from the program: past a few, in a userdata (an error raised later
 * frees it with the rest of the call's stack) */
int hl_lua_program_run_arrays(lua_State *L, hl_program *p, int nargs, const hl_array *const *args, int mt) {
  enum { ONSTACK = 16 };
  for (int k = 0; k < nargs; k++)
    if (hl_is_leaked(args[k])) hl_lua_raisef(L, "halua: jit: " HL_LEAKED_TRACER);
  int n = p->g.noutputs;
  hl_array small[ONSTACK];
  hl_array *outs = n > ONSTACK ? lua_newuserdata(L, sizeof *outs * (size_t)n) : small;
  if (hl_program_run(p, nargs, args, outs)) return hl_lua_raise(L);
  if (!lua_checkstack(L, n)) {
    for (int k = 0; k < n; k++) hl_array_release(&outs[k]);
    hl_lua_raisef(L, "halua: jit: too many results (%d) for Lua's stack", n);
  }
  for (int k = 0; k < n; k++) hl_lua_push_value_mt(L, &outs[k], 0, mt);
  return n;
}

int hl_lua_program_run(lua_State *L, hl_program *p, int first) {
  int nargs = lua_gettop(L) - first + 1;
  if (nargs > HL_MAX_PROGRAM_ARRAYS) hl_lua_raisef(L, "halua: jit: too many arguments (%d, at most %d)", nargs, HL_MAX_PROGRAM_ARRAYS);
  /* a userdata holds the argument list, so an error raised while checking them leaks nothing */
  const hl_array **args = lua_newuserdata(L, sizeof *args * (size_t)(nargs ? nargs : 1));
  for (int k = 0; k < nargs; k++) {
    args[k] = hl_lua_to_array(L, first + k);
    if (!args[k]) hl_lua_arg_error(L, "jit", first + k, first + k, "an array");
  }
  return hl_lua_program_run_arrays(L, p, nargs, args, 0);
}
