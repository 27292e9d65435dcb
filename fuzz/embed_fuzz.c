/* libFuzzer target: the C embedding API (engine/include/halua.h).
 *
 * The input is decoded into a sequence of calls with hostile arguments: halua_push_array with
 * any dtype value, ndim, shape (negative, huge), strides (zero, negative, overflowing), NULL
 * pointers and misaligned data; halua_to_array and halua_copy_array at any stack index, with
 * any dtype and destination size; halua_getglobal / halua_setglobal / halua_call /
 * halua_dostring / halua_dofile with any name, argument count and result count, on functions of
 * a small fixed script (eager ops, views, a jitted function, errors of every kind).
 *
 * Every call must return a status and keep halua.h's promises, which are checked here: the
 * stack effect of each call on success and on failure, "halua: " messages, the expected status
 * where the arguments decide it, zero copy (to_array gives the host's pointer), copy_array's
 * bytes, and each wrapped buffer's release running exactly once, with the host's pointer, once
 * the arrays are gone (the state is emptied and collected after every input). The lua_State
 * is made once per process and allocates through malloc, so LeakSanitizer sees Lua's heap.
 *
 * Arrays the engine computes with are kept small (rank 2 at most, 64 elements, four dtypes),
 * so that the kernels they need are few (about 70) and cached on disk (HALUA_CACHE_DIR) after the
 * first run: compiling them all takes about half a minute under the sanitizers. */
#include <halua.h>
#include <lauxlib.h>
#include <limits.h>
#include <lualib.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#ifndef HALUA_FUZZ_LUA_DIR
#define HALUA_FUZZ_LUA_DIR NULL
#endif

static lua_State *L;

static void fail(const char *why, int line) {
  fprintf(stderr, "embed_fuzz:%d: %s (halua_error: \"%s\")\n", line, why, halua_error());
  abort();
}
#define CHECK(cond)                       \
  do {                                    \
    if (!(cond)) fail("CHECK(" #cond ") failed", __LINE__); \
  } while (0)

/* EMBED_FUZZ_TRACE=1 prints each call and its status (to replay a crash by hand) */
static int tracing;
#define TRACE(...)                      \
  do {                                  \
    if (tracing) fprintf(stderr, __VA_ARGS__); \
  } while (0)

static const char *shape_text(int ndim, const int64_t *v) {
  static char buf[8][200];
  static int which;
  char *b = buf[which++ % 8];
  int n = snprintf(b, 200, "{");
  for (int k = 0; v && k < ndim && k < HALUA_MAX_DIMS; k++) n += snprintf(b + n, (size_t)(200 - n), k ? ", %lld" : "%lld", (long long)v[k]);
  snprintf(b + n, (size_t)(200 - n), "}");
  return v ? b : "NULL";
}

/* ---- the input ---- */

typedef struct {
  const uint8_t *p;
  size_t n, pos;
} input;

static unsigned byte(input *in) { return in->pos < in->n ? in->p[in->pos++] : 0; }
static int done(const input *in) { return in->pos >= in->n; }
static unsigned pick(input *in, unsigned n) { return byte(in) % n; }
static int64_t i64(input *in) {
  uint64_t v = 0;
  for (int k = 0; k < 8; k++) v = v << 8 | byte(in);
  return (int64_t)v;
}

/* ---- the fixed script ---- */

/* Each function takes anything: a value that is no array is an error, never a method call on
 * it (a table's method could be one of these functions again). The arrays the engine computes
 * with are kept small. */
static const char *script =
    "local hl = halua\n"
    "local is_array = require('halua_core').is_array\n"
    "local function arr(x) if not is_array(x) then error('not an array: ' .. type(x)) end return x end\n"
    "local computed = {float32 = true, int32 = true, float16 = true, bool = true}\n"
    "local function small(x) return arr(x).ndim <= 2 and x.size <= 64 and computed[x.dtype] end\n"
    "function describe(x)\n"
    "  if not is_array(x) then return type(x) end\n"
    "  return x.dtype, x.ndim, x.size, x.shape, x.strides\n"
    "end\n"
    "function scale(x) if not small(x) then return x end return x * 2 + 1 end\n"
    "function add(a, b) if not (small(a) and small(b)) or a.dtype ~= b.dtype then return a end return a + b end\n"
    "function total(x) if not small(x) then return x.size end return x:sum() end\n"
    "function view(x) if arr(x).ndim == 0 then return x end return x[1], x.T end\n"
    "function reshape(x) if not small(x) then return x end return x:reshape({x.size}) end\n"
    "function cast(x) if not small(x) then return x end return x:astype('float32'), x:astype('int32') end\n"
    "function item(x) if not small(x) then return 0 end return x:sum():item() end\n"
    "function keep(x) kept = x return true end\n"
    "function drop() kept = nil end\n"
    "function make(n) n = tonumber(n) or 3 if n < 0 or n > 64 then n = 3 end return hl.arange(n), hl.ones({2, 2}, 'int32') end\n"
    "local f = hl.jit(function(x) return hl.tanh(x) * 2 end)\n"
    "function jitted(x)\n"
    "  if arr(x).dtype ~= 'float32' or x.ndim ~= 1 or (x.size ~= 0 and x.size ~= 3) then return x end\n"
    "  return f(x)\n"
    "end\n"
    "function raise() error('a plain error') end\n"
    "function raise_halua() error('halua: a halua error', 0) end\n"
    "function raise_table() error({}) end\n"
    "function raise_number() error(42) end\n"
    "function many(...) return ... end\n"
    "function nothing() end\n";

static const char *const functions[] = {"describe", "scale", "add",   "total", "view",  "reshape",     "cast",
                                        "item",     "keep",  "drop",  "make",  "jitted", "raise",      "raise_halua",
                                        "raise_table", "raise_number", "many", "nothing"};
enum { NFUNCTIONS = sizeof functions / sizeof functions[0] };

/* globals the fuzzer may set (and clears after each input) and names that are no global */
static const char *const scratch[] = {"s1", "s2", "kept", "", "a name with spaces"};
enum { NSCRATCH = sizeof scratch / sizeof scratch[0] };

/* Lua's heap through malloc, each block linked into a list that starts at a global: LuaJIT
 * refers to some of its blocks only through tagged or offset pointers, which LeakSanitizer
 * cannot follow, so without the list a Lua object, and the engine memory only it refers to,
 * would look leaked. With it, a leak report is memory that nothing refers to. */
typedef struct lua_block {
  struct lua_block *prev, *next;
} lua_block;   /* 16 bytes: the blocks keep malloc's alignment */
static lua_block lua_blocks = {&lua_blocks, &lua_blocks};

static void link_block(lua_block *b) {
  b->prev = &lua_blocks;
  b->next = lua_blocks.next;
  lua_blocks.next->prev = b;
  lua_blocks.next = b;
}

static void *lua_alloc(void *ud, void *ptr, size_t osize, size_t nsize) {
  (void)ud;
  (void)osize;
  lua_block *b = ptr ? (lua_block *)ptr - 1 : NULL;
  if (b) {
    b->prev->next = b->next;
    b->next->prev = b->prev;
  }
  if (nsize == 0) {
    free(b);
    return NULL;
  }
  lua_block *nb = realloc(b, sizeof *nb + nsize);
  if (!nb) {
    if (b) link_block(b);
    return NULL;
  }
  link_block(nb);
  return nb + 1;
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  tracing = getenv("EMBED_FUZZ_TRACE") != NULL;
  const char *dir = getenv("HALUA_LUA_DIR");
  if (!dir || !*dir) dir = HALUA_FUZZ_LUA_DIR;
  L = lua_newstate(lua_alloc, NULL);
  if (!L) {
    fprintf(stderr, "embed_fuzz: lua_newstate failed\n");
    exit(1);
  }
  luaL_openlibs(L);
  if (halua_open(L, dir) || halua_setglobal(L, "halua") || halua_dostring(L, script, "=embed_fuzz", 0)) {
    fprintf(stderr, "embed_fuzz: %s\n", halua_error());
    exit(1);
  }
  CHECK(lua_gettop(L) == 0);
  return 0;
}

/* ---- host buffers ---- */

enum { MAX_BUFFERS = 32, MAX_SPAN = 4096, MAX_STACK = 48 };

typedef struct {
  void *alloc;      /* what malloc gave */
  void *data;       /* the pointer pushed: element (0, ..., 0) */
  int counted;      /* pushed with the release callback */
  int released;
} buffer;

static buffer buffers[MAX_BUFFERS];
static int nbuffers;

static void release(void *user, void *data) {
  buffer *b = user;
  CHECK(b >= buffers && b < buffers + nbuffers && b->counted);
  CHECK(!b->released);
  CHECK(data == b->data);   /* halua.h: `data` is the pointer given to halua_push_array */
  b->released = 1;
  free(b->alloc);
  b->alloc = NULL;
}

/* ---- what the fuzzer pushed, slot by slot ---- */

enum { K_OTHER, K_ARRAY, K_HOST };   /* a non-array, an engine-made value, a wrapped buffer */
typedef struct {
  int kind;
  /* K_HOST: */
  halua_dtype dtype;
  int ndim;
  int64_t shape[HALUA_MAX_DIMS], strides[HALUA_MAX_DIMS];
  void *data;
} slot;

static slot stack[MAX_STACK + 8];

static size_t elem_size(halua_dtype t) {
  switch (t) {
  case HALUA_BOOL: case HALUA_UINT8: case HALUA_INT8: return 1;
  case HALUA_FLOAT16: case HALUA_BFLOAT16: return 2;
  case HALUA_INT32: case HALUA_FLOAT32: return 4;
  case HALUA_INT64: case HALUA_FLOAT64: case HALUA_COMPLEX64: return 8;
  case HALUA_COMPLEX128: return 16;
  }
  return 0;
}

static int64_t pick_extent(input *in) {
  static const int64_t e[] = {0, 1, 2, 3, 4, 5, 7, 1, 2};
  unsigned c = byte(in);
  if (c < 240) return e[c % (sizeof e / sizeof e[0])];
  switch (c % 8) {
  case 0: return -1;
  case 1: return INT64_MIN;
  case 2: return INT64_MAX;
  case 3: return (int64_t)1 << 31;
  case 4: return (int64_t)1 << 40;
  case 5: return (int64_t)1 << 62;
  case 6: return INT64_MAX / 16;
  default: return i64(in);
  }
}

static int64_t pick_stride(input *in, int64_t natural) {
  unsigned c = byte(in);
  if (c < 64) return natural;
  if (c < 200) return (int64_t)(c % 9) - 4;   /* -4 .. 4 */
  switch (c % 7) {
  case 0: return INT64_MIN;
  case 1: return INT64_MAX;
  case 2: return -natural;
  case 3: return (int64_t)1 << 40;
  case 4: return -((int64_t)1 << 40);
  case 5: return natural < INT64_MAX / 2 ? natural * 2 : natural;
  default: return i64(in);
  }
}

/* lowest and highest element offsets the strides reach; 0 when they overflow */
static int span(int ndim, const int64_t *shape, const int64_t *strides, int64_t *lo, int64_t *hi) {
  *lo = *hi = 0;
  for (int k = 0; k < ndim; k++)
    if (shape[k] == 0) return 1;
  for (int k = 0; k < ndim; k++) {
    int64_t reach;
    if (__builtin_mul_overflow(shape[k] - 1, strides[k], &reach)) return 0;
    if (__builtin_add_overflow(reach < 0 ? *lo : *hi, reach, reach < 0 ? lo : hi)) return 0;
  }
  return 1;
}

static void op_push(input *in) {
  int top = lua_gettop(L);
  if (top >= MAX_STACK || nbuffers >= MAX_BUFFERS) return;
  unsigned c = byte(in);
  halua_dtype dtype = (halua_dtype)(c < 240 ? c % 9 : c == 240 ? -1 : c == 241 ? INT_MIN : c == 242 ? INT_MAX : (int)c % 16);
  c = byte(in);
  int ndim = c < 248 ? (int)(c % 4 == 3 ? c % 9 : c % 3) : c == 248 ? -1 : c == 249 ? INT_MIN : c == 250 ? INT_MAX : (int)c % 12;
  int64_t shape[HALUA_MAX_DIMS] = {0}, strides[HALUA_MAX_DIMS] = {0};
  int nd = ndim < 0 ? 0 : ndim > HALUA_MAX_DIMS ? HALUA_MAX_DIMS : ndim;
  for (int k = 0; k < nd; k++) shape[k] = pick_extent(in);
  unsigned flags = byte(in);
  int use_strides = flags & 1, counted = flags & 2, null_shape = (flags & 0x1c) == 0x1c, null_data = (flags & 0xe0) == 0xe0;
  size_t es = elem_size(dtype);
  int misalign = (flags & 0x60) == 0x40 && es > 1;
  /* row-major strides, as the engine makes them for strides == NULL */
  int64_t natural[HALUA_MAX_DIMS], n = 1;
  for (int k = nd - 1; k >= 0; k--) {
    natural[k] = n;
    if (shape[k] >= 0 && __builtin_mul_overflow(n, shape[k], &n)) n = INT64_MAX;
  }
  for (int k = 0; k < nd; k++) strides[k] = use_strides ? pick_stride(in, natural[k]) : natural[k];

  /* what halua.h decides from the arguments: a bad argument, a shape or strides out of range */
  int bad = es == 0 || ndim < 0 || ndim > HALUA_MAX_DIMS || null_data || (ndim > 0 && null_shape) || misalign;
  int negative = 0, zero = 0;
  for (int k = 0; k < nd; k++) negative |= shape[k] < 0, zero |= shape[k] == 0;
  int too_big = 0;   /* the non-empty axes hold more than 2^59 elements (even in an empty array) */
  int64_t numel = 1;
  for (int k = 0; k < nd && !negative; k++)
    if (shape[k] && (__builtin_mul_overflow(numel, shape[k], &numel) || numel > INT64_MAX / 16)) too_big = 1;
  int64_t lo = 0, hi = 0, width = 0;
  int spans = !negative && !zero && !too_big && span(nd, shape, strides, &lo, &hi) &&
              !__builtin_sub_overflow(hi, lo, &width) && width < INT64_MAX / 16;
  int backed = (spans && width < MAX_SPAN) || (zero && !negative && !too_big);
  if (zero) numel = 0, lo = hi = 0;

  /* a buffer holding exactly the elements the strides reach (ASan sees any read outside) */
  size_t esz = es ? es : 4;
  size_t nelem = backed && !zero ? (size_t)width + 1 : 0;
  void *alloc = malloc(nelem ? nelem * esz : 1);
  CHECK(alloc);
  for (size_t i = 0; i < nelem * esz; i++) ((uint8_t *)alloc)[i] = (uint8_t)byte(in);
  if (dtype == HALUA_BOOL)   /* halua.h: a bool is one byte, 0 or 1 */
    for (size_t i = 0; i < nelem; i++) ((uint8_t *)alloc)[i] &= 1;
  /* an unbacked push (a span larger than this fuzzer allocates) points anywhere aligned: it is
   * popped at once, unread */
  void *data = backed ? (char *)alloc - lo * (int64_t)esz : alloc;
  if (misalign) data = (char *)data + 1;
  if (null_data) data = NULL;

  buffer *b = &buffers[nbuffers];
  *b = (buffer){.alloc = alloc, .data = data, .counted = counted};
  int rc = halua_push_array(L, data, dtype, ndim, null_shape ? NULL : shape, use_strides ? strides : NULL,
                            counted ? release : NULL, counted ? b : NULL);
  TRACE("push_array(dtype %d, ndim %d, shape %s, strides %s, data %s%s) = %d\n", (int)dtype, ndim,
        shape_text(nd, null_shape ? NULL : shape), shape_text(nd, use_strides ? strides : NULL),
        null_data ? "NULL" : backed ? "buffer" : "unbacked", misalign ? " + 1" : "", rc);
  if (bad || negative || too_big) CHECK(rc == HALUA_EARG);
  else if (zero) CHECK(rc == HALUA_OK);   /* no element reached: any strides will do */
  else if (!spans) CHECK(rc == HALUA_EARG);
  else if (backed) CHECK(rc == HALUA_OK);
  else CHECK(rc == HALUA_OK || rc == HALUA_EARG);   /* strides that reach past the address space are refused */
  if (rc) {
    CHECK(strncmp(halua_error(), "halua: push_array: ", 19) == 0);
    CHECK(lua_gettop(L) == top);
    CHECK(!b->released);
    free(alloc);
    return;
  }
  CHECK(lua_gettop(L) == top + 1);
  nbuffers++;
  /* the array shows the host's memory */
  halua_array a;
  CHECK(halua_to_array(L, -1, &a) == HALUA_OK);
  CHECK(a.dtype == dtype && a.ndim == ndim && a.data == data);
  for (int k = 0; k < ndim; k++) CHECK(a.shape[k] == shape[k] && (zero || a.strides[k] == strides[k]));
  if (!backed) {
    lua_pop(L, 1);
    return;
  }
  slot *s = &stack[top + 1];
  s->kind = K_HOST;
  s->dtype = dtype;
  s->ndim = ndim;
  memcpy(s->shape, a.shape, sizeof s->shape);
  memcpy(s->strides, a.strides, sizeof s->strides);
  s->data = data;
}

static void op_push_other(input *in) {
  int top = lua_gettop(L);
  if (top >= MAX_STACK) return;
  switch (pick(in, 6)) {
  case 0: lua_pushnil(L); break;
  case 1: lua_pushnumber(L, (double)(int8_t)byte(in)); break;
  case 2: lua_pushstring(L, "halua"); break;
  case 3: lua_newtable(L); break;
  case 4: lua_pushboolean(L, 1); break;
  default: lua_pushlightuserdata(L, buffers); break;
  }
  stack[top + 1].kind = K_OTHER;
}

/* a stack index: valid ones mostly, then everything else */
static int pick_index(input *in, int top) {
  unsigned c = byte(in);
  if (c < 200 && top > 0) return c & 1 ? -(int)(c / 2 % (unsigned)top) - 1 : (int)(c / 2 % (unsigned)top) + 1;
  static const int odd[] = {0, -1, 1, LUA_REGISTRYINDEX, LUA_GLOBALSINDEX, LUA_ENVIRONINDEX, INT_MIN, INT_MAX, -10001, 10000};
  switch (c % 12) {
  case 10: return top + 1;
  case 11: return -top - 1;
  default: return odd[c % 12];
  }
}

static int valid_index(int idx, int top) { return (idx > 0 && idx <= top) || (idx < 0 && idx > LUA_REGISTRYINDEX && -idx <= top); }
static int abs_index(int idx, int top) { return idx > 0 ? idx : top + idx + 1; }

/* element i (row-major) of a strided view */
static const uint8_t *element(const halua_array *a, int64_t i, size_t es) {
  int64_t off = 0;
  for (int k = a->ndim - 1; k >= 0; k--) {
    off += i % a->shape[k] * a->strides[k];
    i /= a->shape[k];
  }
  return (const uint8_t *)a->data + off * (int64_t)es;
}

static void op_to_array(input *in) {
  int top = lua_gettop(L);
  int idx = pick_index(in, top);
  int null_out = pick(in, 16) == 0;
  halua_array a;
  memset(&a, 0xab, sizeof a);
  int rc = halua_to_array(L, idx, null_out ? NULL : &a);
  TRACE("to_array(%d%s) = %d\n", idx, null_out ? ", NULL" : "", rc);
  CHECK(lua_gettop(L) == top);
  if (null_out || !valid_index(idx, top)) {
    CHECK(rc == HALUA_EARG);
    return;
  }
  const slot *s = &stack[abs_index(idx, top)];
  if (s->kind == K_OTHER) CHECK(rc == HALUA_ETYPE);
  if (s->kind == K_HOST) CHECK(rc == HALUA_OK);
  if (rc) {
    CHECK(rc == HALUA_ETYPE && strncmp(halua_error(), "halua: to_array: ", 17) == 0);
    return;
  }
  CHECK(a.ndim >= 0 && a.ndim <= HALUA_MAX_DIMS && halua_dtype_name(a.dtype));
  if (s->kind == K_HOST) {
    CHECK(a.dtype == s->dtype && a.ndim == s->ndim && a.data == s->data);
    for (int k = 0; k < a.ndim; k++) CHECK(a.shape[k] == s->shape[k]);
  }
  /* every element is readable (ASan checks host buffers; engine memory is its own) */
  int64_t n = 1;
  for (int k = 0; k < a.ndim; k++) n *= a.shape[k];
  size_t es = elem_size(a.dtype);
  if (n > MAX_SPAN) n = MAX_SPAN;
  unsigned sum = 0;
  for (int64_t i = 0; i < n; i++) sum += *element(&a, i, es);
  volatile unsigned sink = sum;
  (void)sink;
}

static void op_copy_array(input *in) {
  int top = lua_gettop(L);
  int idx = pick_index(in, top);
  unsigned c = byte(in);
  halua_dtype dtype = (halua_dtype)(c < 250 ? c % 9 : c == 250 ? -1 : (int)c);
  /* the array's own description, when it is one, to size the destination */
  halua_array a;
  int is_array = valid_index(idx, top) && halua_to_array(L, idx, &a) == HALUA_OK;
  int64_t n = 1;
  if (is_array)
    for (int k = 0; k < a.ndim; k++) n *= a.shape[k];
  size_t es = elem_size(dtype), esz = es ? es : 1;
  size_t bytes;
  c = byte(in);
  switch (c % 6) {
  case 0: bytes = 0; break;
  case 1: bytes = (size_t)c; break;
  case 2: bytes = is_array && n <= MAX_SPAN ? (size_t)n * esz + esz : 16; break;
  case 3: bytes = is_array && n <= MAX_SPAN && n > 0 ? (size_t)n * esz - 1 : 3; break;
  default: bytes = is_array && n <= MAX_SPAN ? (size_t)n * esz : 8; break;
  }
  int null_dst = pick(in, 16) == 0;
  uint8_t *dst = malloc(bytes ? bytes : 1);
  CHECK(dst);
  int rc = halua_copy_array(L, idx, dtype, null_dst ? NULL : dst, bytes);
  TRACE("copy_array(%d, dtype %d, %s, %zu) = %d\n", idx, (int)dtype, null_dst ? "NULL" : "dst", bytes, rc);
  CHECK(lua_gettop(L) == top);
  if (es == 0 || (null_dst && bytes) || !valid_index(idx, top)) CHECK(rc == HALUA_EARG);
  else if (!is_array) CHECK(rc == HALUA_ETYPE);
  else if (a.dtype != dtype) CHECK(rc == HALUA_ETYPE);
  else if ((size_t)n * es != bytes) CHECK(rc == HALUA_ESHAPE);
  else CHECK(rc == HALUA_OK);
  if (rc) {
    CHECK(strncmp(halua_error(), "halua: copy_array: ", 19) == 0);
  } else {
    for (int64_t i = 0; i < n; i++) CHECK(memcmp(dst + i * (int64_t)es, element(&a, i, es), es) == 0);
  }
  free(dst);
}

static const char *pick_name(input *in) {
  unsigned c = pick(in, NFUNCTIONS + NSCRATCH + 4);
  if (c < NFUNCTIONS) return functions[c];
  c -= NFUNCTIONS;
  if (c < NSCRATCH) return scratch[c];
  static const char *const other[] = {"halua", "no_such_global", "_G", NULL};
  return other[c - NSCRATCH];
}

static void op_getglobal(input *in) {
  int top = lua_gettop(L);
  if (top >= MAX_STACK) return;
  const char *name = pick_name(in);
  int rc = halua_getglobal(L, name);
  TRACE("getglobal(%s) = %d\n", name ? name : "NULL", rc);
  if (!name) CHECK(rc == HALUA_EARG);
  for (int k = 0; name && k < NFUNCTIONS; k++)
    if (!strcmp(name, functions[k])) CHECK(rc == HALUA_OK);
  if (rc) {
    CHECK((rc == HALUA_EARG || rc == HALUA_ETYPE) && strncmp(halua_error(), "halua: getglobal: ", 18) == 0);
    CHECK(lua_gettop(L) == top);
    return;
  }
  CHECK(lua_gettop(L) == top + 1);
  stack[top + 1].kind = lua_type(L, -1) == LUA_TUSERDATA ? K_ARRAY : K_OTHER;
}

static void op_setglobal(input *in) {
  int top = lua_gettop(L);
  unsigned c = pick(in, NSCRATCH + 1);
  const char *name = c < NSCRATCH ? scratch[c] : NULL;
  int rc = halua_setglobal(L, name);
  TRACE("setglobal(%s) = %d\n", name ? name : "NULL", rc);
  if (top == 0) {
    CHECK(rc == HALUA_EARG && lua_gettop(L) == 0);
    return;
  }
  CHECK(lua_gettop(L) == top - 1);   /* the value is consumed either way */
  if (!name) CHECK(rc == HALUA_EARG);
  else CHECK(rc == HALUA_OK);
}

/* After a call, the new slots hold what the function returned. */
static void mark_results(int from, int top) {
  for (int i = from; i <= top; i++) stack[i].kind = lua_type(L, i) == LUA_TUSERDATA ? K_ARRAY : K_OTHER;
}

static void op_call(input *in) {
  int top = lua_gettop(L);
  if (top >= MAX_STACK - 4) return;
  unsigned c = byte(in);
  /* the function: one of the script's, or any value already there (a call of a non-function fails) */
  const char *fname = c < 224 ? functions[c % NFUNCTIONS] : "a value on the stack";
  if (c < 224) {
    CHECK(halua_getglobal(L, functions[c % NFUNCTIONS]) == HALUA_OK);
    stack[top + 1].kind = K_OTHER;
  } else if (top > 0) {
    lua_pushvalue(L, (int)(c % (unsigned)top) + 1);
    stack[top + 1] = stack[c % (unsigned)top + 1];
  } else {
    lua_pushnil(L);
    stack[top + 1].kind = K_OTHER;
  }
  int nargs = (int)pick(in, 4);
  for (int k = 0; k < nargs; k++) {
    int from = top > 0 ? (int)pick(in, (unsigned)top) + 1 : 0;
    if (from) {
      lua_pushvalue(L, from);
      stack[top + 2 + k] = stack[from];
    } else {
      lua_pushnumber(L, k);
      stack[top + 2 + k].kind = K_OTHER;
    }
  }
  int base = top;   /* below the function */
  top = lua_gettop(L);
  c = byte(in);
  int nresults = c < 200 ? (int)(c % 4) : c < 230 ? LUA_MULTRET : c == 230 ? -2 : c == 231 ? INT_MIN : c == 232 ? INT_MAX : c == 233 ? 5000 : 7;
  int call_nargs = nargs;
  c = byte(in);
  if (c >= 248) call_nargs = c == 248 ? -1 : c == 249 ? INT_MIN : c == 250 ? INT_MAX : c == 251 ? top : c == 252 ? top + 1 : INT_MAX - 1;
  TRACE("call(%s with %d values, nargs %d, nresults %d) ...\n", fname, nargs, call_nargs, nresults);
  int rc = halua_call(L, call_nargs, nresults);
  TRACE("  = %d %s\n", rc, rc ? halua_error() : "");
  if (call_nargs < 0 || call_nargs >= top) {   /* no function and arguments to pop */
    CHECK(rc == HALUA_EARG && lua_gettop(L) == top);
    lua_settop(L, base);
    return;
  }
  int below = top - call_nargs - 1;   /* what stays under the function */
  if (nresults < LUA_MULTRET) CHECK(rc == HALUA_EARG);
  if (nresults > LUAI_MAXCSTACK) CHECK(rc == HALUA_EMEM);
  if (rc) {   /* the function and arguments are popped, nothing is pushed */
    CHECK(rc == HALUA_ERUN || rc == HALUA_EMEM || (rc == HALUA_EARG && nresults < LUA_MULTRET));
    CHECK(strncmp(halua_error(), "halua: ", 7) == 0);
    CHECK(lua_gettop(L) == below);
    lua_settop(L, below < base ? below : base);
    return;
  }
  if (nresults >= 0) CHECK(lua_gettop(L) == below + nresults);
  else CHECK(lua_gettop(L) >= below);
  if (lua_gettop(L) > MAX_STACK) lua_settop(L, below);
  mark_results(below + 1, lua_gettop(L));
}

static void op_dostring(input *in) {
  int top = lua_gettop(L);
  static const char *const chunks[] = {
      "return 1, 2, 3",
      "return halua.ones({2, 3})",
      "return halua.zeros({0, 4}, 'float64')",
      "return (halua.arange(6):reshape({2, 3}))",
      "error('a plain error')",
      "error('halua: raised', 0)",
      "error(nil)",
      "return kept",
      "s1 = halua.full({2}, 7, 'int8')",
      "syntax error here (",
      "return halua.array({1, 2, 3}, 'float16')",
      "local x = s1 return x and describe(x)",
      NULL,
  };
  enum { NCHUNKS = sizeof chunks / sizeof chunks[0] };
  const char *code = chunks[pick(in, NCHUNKS)];
  unsigned c = byte(in);
  int nresults = c < 200 ? (int)(c % 4) : c < 230 ? LUA_MULTRET : c == 230 ? -2 : c == 231 ? INT_MIN : c == 232 ? INT_MAX : 5000;
  const char *chunkname = pick(in, 4) == 0 ? NULL : "=fuzz";
  int rc = halua_dostring(L, code, chunkname, nresults);
  TRACE("dostring(\"%s\", nresults %d) = %d\n", code ? code : "NULL", nresults, rc);
  if (!code || nresults < LUA_MULTRET) {
    CHECK(rc == HALUA_EARG && lua_gettop(L) == top);
    return;
  }
  if (nresults > LUAI_MAXCSTACK) CHECK(rc == HALUA_EMEM);
  if (rc) {
    CHECK(rc == HALUA_ERUN || rc == HALUA_EMEM);
    CHECK(strncmp(halua_error(), "halua: ", 7) == 0);
    CHECK(lua_gettop(L) == top);
    return;
  }
  if (nresults >= 0) CHECK(lua_gettop(L) == top + nresults);
  else CHECK(lua_gettop(L) >= top);
  if (lua_gettop(L) > MAX_STACK) lua_settop(L, top);
  mark_results(top + 1, lua_gettop(L));
}

static void op_dofile(input *in) {
  int top = lua_gettop(L);
  static const char *const paths[] = {"/nonexistent/model.lua", "/", "/dev/null", NULL};
  const char *path = paths[pick(in, 4)];
  unsigned c = byte(in);
  int nresults = c < 128 ? 0 : c < 250 ? LUA_MULTRET : c == 250 ? -2 : c == 251 ? INT_MIN : c == 252 ? INT_MAX : 1;
  int rc = halua_dofile(L, path, nresults);
  TRACE("dofile(%s, nresults %d) = %d\n", path ? path : "NULL", nresults, rc);
  if (!path || nresults < LUA_MULTRET) CHECK(rc == HALUA_EARG);
  if (nresults > LUAI_MAXCSTACK) CHECK(rc != HALUA_OK);
  if (rc) {
    CHECK(strncmp(halua_error(), "halua: ", 7) == 0 && lua_gettop(L) == top);
    return;
  }
  CHECK(lua_gettop(L) >= top);
  lua_settop(L, top);
}

static void op_misc(input *in) {
  int top = lua_gettop(L);
  switch (pick(in, 5)) {
  case 0: {   /* calls on a NULL state */
    CHECK(halua_getglobal(NULL, "describe") == HALUA_EARG);
    CHECK(halua_call(NULL, 0, 0) == HALUA_EARG);
    CHECK(halua_to_array(NULL, 1, &(halua_array){0}) == HALUA_EARG);
    CHECK(halua_push_array(NULL, buffers, HALUA_UINT8, 0, NULL, NULL, NULL, NULL) == HALUA_EARG);
    CHECK(halua_setglobal(NULL, "s1") == HALUA_EARG);
    CHECK(halua_dostring(NULL, "return 1", NULL, 0) == HALUA_EARG);
    CHECK(halua_open(NULL, NULL) == HALUA_EARG);
    break;
  }
  case 1: {
    int v = (int)i64(in);
    const char *name = halua_dtype_name((halua_dtype)v);
    CHECK((name != NULL) == (v >= HALUA_BOOL && v <= HALUA_COMPLEX128));
    break;
  }
  case 2:   /* halua again in the same state: the same module table */
    if (top < MAX_STACK) {
      CHECK(halua_open(L, HALUA_FUZZ_LUA_DIR) == HALUA_OK && lua_gettop(L) == top + 1);
      stack[top + 1].kind = K_OTHER;
    }
    break;
  case 3:
    if (top > 0) {
      lua_pop(L, 1);
    }
    break;
  default:
    lua_gc(L, LUA_GCCOLLECT, 0);
    break;
  }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  input in = {data, size, 0};
  nbuffers = 0;
  lua_settop(L, 0);
  for (int ops = 0; ops < 64 && !done(&in); ops++) {
    switch (pick(&in, 12)) {
    case 0: case 1: op_push(&in); break;
    case 2: op_push_other(&in); break;
    case 3: op_to_array(&in); break;
    case 4: op_copy_array(&in); break;
    case 5: op_getglobal(&in); break;
    case 6: op_setglobal(&in); break;
    case 7: case 8: op_call(&in); break;
    case 9: op_dostring(&in); break;
    case 10: op_dofile(&in); break;
    default: op_misc(&in); break;
    }
  }
  /* the state as it was: no values left, the scratch globals cleared, every array collected,
   * so every wrapped buffer's release has run exactly once */
  lua_settop(L, 0);
  for (int k = 0; k < NSCRATCH; k++) {
    lua_pushnil(L);
    lua_setglobal(L, scratch[k]);
  }
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
  for (int i = 0; i < nbuffers; i++) {
    if (buffers[i].counted) CHECK(buffers[i].released);
    else free(buffers[i].alloc);   /* nothing refers to it any more */
  }
  return 0;
}
