/* The embedding API (engine/include/halua.h): every function, its errors and their words, the
 * release callback's count, zero copy, strides, dtypes, the per-thread error message. */
#define _POSIX_C_SOURCE 200809L
#include <halua.h>
#include <limits.h>
#include <lauxlib.h>
#include <lualib.h>
#include <math.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures, checks;

#define CHECK(cond)                                                                     \
  do {                                                                                  \
    checks++;                                                                           \
    if (!(cond)) {                                                                      \
      failures++;                                                                       \
      fprintf(stderr, "%s:%d: CHECK(%s) failed; halua_error: %s\n", __FILE__, __LINE__, #cond, halua_error()); \
    }                                                                                   \
  } while (0)

/* the call failed with `code` and a message containing each of the words */
#define CHECK_ERR(call, code, ...) check_err((call), (code), #call, __LINE__, (const char *[]){__VA_ARGS__, NULL})
static void check_err(int rc, int code, const char *what, int line, const char **words) {
  checks++;
  const char *m = halua_error();
  int ok = rc == code && strncmp(m, "halua: ", 7) == 0;
  for (int k = 0; ok && words[k]; k++) ok = strstr(m, words[k]) != NULL;
  if (!ok) {
    failures++;
    fprintf(stderr, "line %d: %s gave %d (expected %d), message \"%s\", expected the words:", line, what, rc, code, m);
    for (int k = 0; words[k]; k++) fprintf(stderr, " \"%s\"", words[k]);
    fprintf(stderr, "\n");
  }
}

static int releases;
static void *released_data;
static void count_release(void *user, void *data) {
  releases += user ? *(int *)user : 1;
  released_data = data;
}

/* runs Lua code that returns one number */
/* Two full collections: what a finalizer run by the first lets go of may be found unreferenced
 * only by the second. */
static void collect_twice(lua_State *L) {
  lua_gc(L, LUA_GCCOLLECT, 0);
  lua_gc(L, LUA_GCCOLLECT, 0);
}

static double eval(lua_State *L, const char *code) {
  if (halua_dostring(L, code, "=test", 1)) {
    fprintf(stderr, "eval(%s): %s\n", code, halua_error());
    failures++;
    return -1e300;
  }
  double v = lua_tonumber(L, -1);
  lua_pop(L, 1);
  return v;
}

static void test_errors_of_push(lua_State *L) {
  float buf[8] = {0};
  int64_t shape[2] = {2, 3};
  int top = lua_gettop(L);
  releases = 0;
  CHECK_ERR(halua_push_array(NULL, buf, HALUA_FLOAT32, 2, shape, NULL, NULL, NULL), HALUA_EARG, "push_array", "L is NULL");
  CHECK_ERR(halua_push_array(L, NULL, HALUA_FLOAT32, 2, shape, NULL, count_release, NULL), HALUA_EARG, "data is NULL");
  CHECK_ERR(halua_push_array(L, buf, (halua_dtype)42, 2, shape, NULL, count_release, NULL), HALUA_EARG, "unknown dtype 42", "HALUA_FLOAT32");
  CHECK_ERR(halua_push_array(L, buf, (halua_dtype)-1, 2, shape, NULL, count_release, NULL), HALUA_EARG, "unknown dtype -1");
  CHECK_ERR(halua_push_array(L, buf, HALUA_FLOAT32, 9, shape, NULL, count_release, NULL), HALUA_EARG, "ndim is 9", "0 to 8");
  CHECK_ERR(halua_push_array(L, buf, HALUA_FLOAT32, -1, shape, NULL, count_release, NULL), HALUA_EARG, "ndim is -1");
  CHECK_ERR(halua_push_array(L, buf, HALUA_FLOAT32, 2, NULL, NULL, count_release, NULL), HALUA_EARG, "shape is NULL");
  int64_t negative[2] = {2, -3};
  CHECK_ERR(halua_push_array(L, buf, HALUA_FLOAT32, 2, negative, NULL, count_release, NULL), HALUA_EARG, "negative extent -3",
            "axis 2", "[2,-3]");
  CHECK_ERR(halua_push_array(L, (char *)buf + 1, HALUA_FLOAT32, 2, shape, NULL, count_release, NULL), HALUA_EARG, "not aligned",
            "4-byte", "float32");
  int64_t huge[2] = {(int64_t)1 << 40, (int64_t)1 << 40};
  CHECK_ERR(halua_push_array(L, buf, HALUA_FLOAT32, 2, huge, NULL, count_release, NULL), HALUA_EARG, "too large");
  int64_t far[2] = {INT64_MAX / 4, 1};
  int64_t small[2] = {3, 1};
  CHECK_ERR(halua_push_array(L, buf, HALUA_FLOAT32, 2, small, far, count_release, NULL), HALUA_EARG, "reaches too far");
  /* strides whose reach below and above element 0 are each in range, their distance not (found
   * by fuzz/embed_fuzz.c: hi - lo overflowed) */
  int64_t two[2] = {2, 2}, apart[2] = {INT64_MAX, INT64_MIN};
  CHECK_ERR(halua_push_array(L, buf, HALUA_UINT8, 2, two, apart, count_release, NULL), HALUA_EARG, "reaches too far");
  /* strides that would place elements below address 0 (found by fuzz/embed_fuzz.c: the
   * storage's start was computed by a wrapping pointer offset) */
  int64_t mega[1] = {(int64_t)1 << 20}, down[1] = {-1};
  CHECK_ERR(halua_push_array(L, (void *)(uintptr_t)4096, HALUA_UINT8, 1, mega, down, count_release, NULL), HALUA_EARG,
            "reaches outside the address space");
  /* an empty array's other extents are bounded too, in any order (found by fuzz/embed_fuzz.c:
   * [2^62,5,0] was taken, and its .size multiplied past INT64_MAX) */
  int64_t empty_last[3] = {(int64_t)1 << 62, 5, 0}, empty_first[3] = {0, (int64_t)1 << 62, 5};
  CHECK_ERR(halua_push_array(L, buf, HALUA_FLOAT32, 3, empty_last, NULL, count_release, NULL), HALUA_EARG, "too large");
  CHECK_ERR(halua_push_array(L, buf, HALUA_FLOAT32, 3, empty_first, NULL, count_release, NULL), HALUA_EARG, "too large");
  CHECK(lua_gettop(L) == top);   /* nothing pushed */
  CHECK(releases == 0);          /* a failed wrap leaves the buffer with the host */

  /* a state without halua */
  lua_State *bare = luaL_newstate();
  luaL_openlibs(bare);
  CHECK_ERR(halua_push_array(bare, buf, HALUA_FLOAT32, 2, shape, NULL, count_release, NULL), HALUA_EARG, "not loaded",
            "halua_open");
  CHECK(lua_gettop(bare) == 0 && releases == 0);
  lua_close(bare);
  CHECK(releases == 0);
}

/* Userdata of other libraries are not arrays, even of an array's size and holding an array's
 * record: an array's userdata says it is one (hl_lua_value.c). */
static void test_foreign_userdata(lua_State *L) {
  int top = lua_gettop(L);
  CHECK(halua_dostring(L, "return hl.ones({2, 3}) * 5", "=real", 1) == HALUA_OK);
  size_t size = lua_objlen(L, -1);
  const unsigned char *real = lua_touserdata(L, -1);
  for (int kind = 0; kind < 4; kind++) {
    /* zeros; the record of an array without the rest; the record in a larger userdata; all of
     * an array's userdata, tag included, at the start of a larger one (only its size tells) */
    size_t n = kind >= 2 ? size + 8 : size;
    unsigned char *fake = lua_newuserdata(L, n);
    memset(fake, 0, n);
    if (kind > 0) memcpy(fake, real, kind == 3 ? size : size - 8);
    halua_array view;
    CHECK_ERR(halua_to_array(L, -1, &view), HALUA_ETYPE, "to_array", "a userdata, expected an array");
    lua_pushvalue(L, -1);
    CHECK(halua_setglobal(L, "FAKE") == HALUA_OK);
    CHECK(halua_dostring(L, "return pcall(function() return hl.add(hl.ones(1), FAKE) end)", "=fake", 2) == HALUA_OK);
    CHECK(!lua_toboolean(L, -2) && strstr(lua_tostring(L, -1), "halua: add: argument 2 is a userdata, expected an array or a number"));
    lua_pop(L, 3);
  }
  CHECK(halua_to_array(L, -1, &(halua_array){0}) == HALUA_OK);   /* the real one still is */
  lua_settop(L, top);

  /* a value given the array metatable (as debug.setmetatable can) holding a copy of a wrapped
   * array's record: its finalizer must not release the host's buffer, which the real array
   * still holds */
  float buf[4] = {1, 2, 3, 4};
  int64_t shape[1] = {4};
  releases = 0;
  CHECK(halua_push_array(L, buf, HALUA_FLOAT32, 1, shape, NULL, count_release, NULL) == HALUA_OK);
  CHECK(halua_setglobal(L, "W") == HALUA_OK);
  CHECK(halua_dostring(L, "return W", "=w", 1) == HALUA_OK);
  unsigned char *copy = lua_newuserdata(L, lua_objlen(L, -1));
  memcpy(copy, lua_touserdata(L, -2), lua_objlen(L, -2) - 8);   /* (all but the tag) */
  memset(copy + lua_objlen(L, -2) - 8, 0, 8);
  luaL_getmetatable(L, "halua.array");
  lua_setmetatable(L, -2);
  lua_settop(L, top);
  collect_twice(L);
  CHECK(releases == 0);
  CHECK(eval(L, "return W:sum():item()") == 10);
  CHECK(halua_dostring(L, "W = nil", "=drop", 0) == HALUA_OK);
  collect_twice(L);
  CHECK(releases == 1);
}

static void test_zero_copy(lua_State *L) {
  float buf[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {2, 3};
  releases = 0;
  CHECK(halua_push_array(L, buf, HALUA_FLOAT32, 2, shape, NULL, count_release, NULL) == HALUA_OK);
  halua_array a;
  CHECK(halua_to_array(L, -1, &a) == HALUA_OK);
  CHECK(a.data == buf && a.dtype == HALUA_FLOAT32 && a.ndim == 2 && a.shape[0] == 2 && a.shape[1] == 3);
  CHECK(a.strides[0] == 3 && a.strides[1] == 1);
  CHECK(halua_setglobal(L, "A") == HALUA_OK);
  CHECK(eval(L, "return A:sum():item()") == 21);
  buf[0] = 100;   /* the array shows the host's memory: the next computation sees the change */
  CHECK(eval(L, "return A:sum():item()") == 120);
  CHECK(eval(L, "return hl.jit(function(x) return x * 2 end)(A)[1][1]:item()") == 200);
  buf[0] = 1;
  CHECK(eval(L, "return hl.jit(function(x) return x * 2 end)(A)[1][1]:item()") == 2);
  /* results are new arrays: the input is unchanged; views share the host memory */
  CHECK(halua_dostring(L, "return A:reshape({3, 2}), A.T, A[2]", "=views", 3) == HALUA_OK);
  halua_array r, t, row;
  CHECK(halua_to_array(L, -3, &r) == HALUA_OK && halua_to_array(L, -2, &t) == HALUA_OK && halua_to_array(L, -1, &row) == HALUA_OK);
  CHECK(r.data == buf && r.shape[0] == 3 && r.shape[1] == 2);
  CHECK(row.shape[0] == 3 && ((float *)row.data)[0] == 4);
  CHECK(t.shape[0] == 3 && t.shape[1] == 2);
  float tt[6];
  CHECK(halua_copy_array(L, -2, HALUA_FLOAT32, tt, sizeof tt) == HALUA_OK);
  CHECK(tt[0] == 1 && tt[1] == 4 && tt[2] == 2 && tt[3] == 5 && tt[4] == 3 && tt[5] == 6);
  lua_pop(L, 3);
  CHECK(buf[0] == 1 && buf[5] == 6);

  /* release: exactly once, after the last view is gone, with the host's pointer */
  CHECK(halua_dostring(L, "V = A:reshape({6}); A = nil", "=drop", 0) == HALUA_OK);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(releases == 0);
  CHECK(eval(L, "return V[6]:item()") == 6);
  CHECK(halua_dostring(L, "V = nil", "=drop", 0) == HALUA_OK);
  collect_twice(L);
  CHECK(releases == 1 && released_data == buf);
}

static void test_strides_and_dtypes(lua_State *L) {
  /* a transposed view of a row-major 2x3 block: strides in elements */
  float buf[6] = {1, 2, 3, 4, 5, 6};
  int64_t shape[2] = {3, 2}, strides[2] = {1, 3};
  CHECK(halua_push_array(L, buf, HALUA_FLOAT32, 2, shape, strides, NULL, NULL) == HALUA_OK);
  CHECK(halua_setglobal(L, "T") == HALUA_OK);
  CHECK(eval(L, "return T[1][2]:item() * 10 + T[3][1]:item()") == 43);
  CHECK(eval(L, "return hl.matmul(T, hl.ones({2, 1}))[2][1]:item()") == 7);
  /* negative strides: data is element (0, ..., 0), the others lie before it */
  int64_t n6[1] = {6}, back[1] = {-1};
  CHECK(halua_push_array(L, buf + 5, HALUA_FLOAT32, 1, n6, back, NULL, NULL) == HALUA_OK);
  float rev[6];
  CHECK(halua_copy_array(L, -1, HALUA_FLOAT32, rev, sizeof rev) == HALUA_OK);
  CHECK(rev[0] == 6 && rev[5] == 1);
  CHECK(halua_setglobal(L, "R") == HALUA_OK);
  CHECK(eval(L, "return (R * hl.arange(1, 7)):sum():item()") == 6 * 1 + 5 * 2 + 4 * 3 + 3 * 4 + 2 * 5 + 1 * 6);
  /* release gets the host's pointer back, not the lowest element the strides reach (found by
   * fuzz/embed_fuzz.c) */
  releases = 0;
  released_data = NULL;
  CHECK(halua_push_array(L, buf + 5, HALUA_FLOAT32, 1, n6, back, count_release, NULL) == HALUA_OK);
  lua_pop(L, 1);
  lua_gc(L, LUA_GCCOLLECT, 0);
  CHECK(releases == 1 && released_data == buf + 5);
  /* a broadcast axis (stride 0) */
  int64_t bshape[2] = {4, 3}, bstrides[2] = {0, 1};
  CHECK(halua_push_array(L, buf, HALUA_FLOAT32, 2, bshape, bstrides, NULL, NULL) == HALUA_OK);
  CHECK(halua_setglobal(L, "Bc") == HALUA_OK);
  CHECK(eval(L, "return Bc:sum():item()") == 24);
  /* 0-d and empty arrays */
  double scalar = 2.5;
  CHECK(halua_push_array(L, &scalar, HALUA_FLOAT64, 0, NULL, NULL, NULL, NULL) == HALUA_OK);
  CHECK(halua_setglobal(L, "S") == HALUA_OK);
  CHECK(eval(L, "assert(S.dtype == 'float64' and S.ndim == 0) return (S * 2):item()") == 5);
  int64_t empty[2] = {0, 3};
  CHECK(halua_push_array(L, buf, HALUA_FLOAT32, 2, empty, NULL, NULL, NULL) == HALUA_OK);
  CHECK(halua_copy_array(L, -1, HALUA_FLOAT32, NULL, 0) == HALUA_OK);
  CHECK(halua_setglobal(L, "E") == HALUA_OK);
  CHECK(eval(L, "return E.size + E:sum():item()") == 0);
  /* an empty array reaches no element: any strides will do */
  int64_t empty2[2] = {3, 0}, wild[2] = {INT64_MAX, INT64_MIN};
  CHECK(halua_push_array(L, buf, HALUA_FLOAT32, 2, empty2, wild, NULL, NULL) == HALUA_OK);
  CHECK(halua_copy_array(L, -1, HALUA_FLOAT32, NULL, 0) == HALUA_OK);
  lua_pop(L, 1);
  /* every dtype: the engine sees the bytes as that type, and its results come back */
  struct { halua_dtype t; const char *name; } dts[] = {{HALUA_BOOL, "bool"}, {HALUA_UINT8, "uint8"}, {HALUA_INT32, "int32"},
                                                      {HALUA_INT64, "int64"}, {HALUA_FLOAT32, "float32"}, {HALUA_FLOAT64, "float64"}, {HALUA_INT8, "int8"},
                                                      {HALUA_FLOAT16, "float16"}, {HALUA_BFLOAT16, "bfloat16"}};
  for (size_t k = 0; k < sizeof dts / sizeof dts[0]; k++) {
    CHECK(strcmp(halua_dtype_name(dts[k].t), dts[k].name) == 0);
    _Alignas(8) unsigned char raw[32] = {0};
    int64_t n3[1] = {3};
    for (int i = 0; i < 3; i++) {
      switch (dts[k].t) {
      case HALUA_BOOL: case HALUA_UINT8: case HALUA_INT8: raw[i] = (unsigned char)(i != 1); break;
      case HALUA_INT32: ((int32_t *)raw)[i] = i != 1; break;
      case HALUA_INT64: ((int64_t *)raw)[i] = i != 1; break;
      case HALUA_FLOAT32: ((float *)raw)[i] = i != 1; break;
      case HALUA_FLOAT64: ((double *)raw)[i] = i != 1; break;
      case HALUA_FLOAT16: ((uint16_t *)raw)[i] = i != 1 ? 0x3c00 : 0; break;   /* 1.0 */
      case HALUA_BFLOAT16: ((uint16_t *)raw)[i] = i != 1 ? 0x3f80 : 0; break;
      case HALUA_COMPLEX64: case HALUA_COMPLEX128: break;   /* (below: where has no complex condition) */
      }
    }
    CHECK(halua_push_array(L, raw, dts[k].t, 1, n3, NULL, NULL, NULL) == HALUA_OK);
    CHECK(halua_setglobal(L, "D") == HALUA_OK);
    char code[160];
    snprintf(code, sizeof code, "assert(D.dtype == '%s', D.dtype) return hl.where(D, 7, 3):sum():item()", dts[k].name);
    CHECK(eval(L, code) == 17);
    CHECK(halua_dostring(L, "return hl.maximum(D, D)", "=same", 1) == HALUA_OK);
    halua_array back_a;
    CHECK(halua_to_array(L, -1, &back_a) == HALUA_OK && back_a.dtype == dts[k].t);
    unsigned char out[32];
    size_t es = dts[k].t == HALUA_BOOL || dts[k].t == HALUA_UINT8 || dts[k].t == HALUA_INT8 ? 1
                : dts[k].t == HALUA_FLOAT16 || dts[k].t == HALUA_BFLOAT16 ? 2
                : (dts[k].t == HALUA_INT32 || dts[k].t == HALUA_FLOAT32) ? 4 : 8;
    CHECK(halua_copy_array(L, -1, dts[k].t, out, 3 * es) == HALUA_OK && memcmp(out, raw, 3 * es) == 0);
    lua_pop(L, 1);
  }
  CHECK(halua_dtype_name((halua_dtype)99) == NULL);
  /* complex: interleaved (re, im) pairs, both ways */
  _Alignas(8) float cz[6] = {1, 2, 3, -4, 0.5f, 0};
  int64_t n3[1] = {3};
  CHECK(halua_push_array(L, cz, HALUA_COMPLEX64, 1, n3, NULL, NULL, NULL) == HALUA_OK);
  CHECK(halua_setglobal(L, "Z") == HALUA_OK);
  CHECK(eval(L, "assert(Z.dtype == 'complex64', Z.dtype) return hl.real(Z * Z):sum():item()") == -3 + -7 + 0.25);
  CHECK(halua_dostring(L, "return hl.conj(Z):astype('complex128')", "=conj", 1) == HALUA_OK);
  halua_array za;
  CHECK(halua_to_array(L, -1, &za) == HALUA_OK && za.dtype == HALUA_COMPLEX128);
  double zd[6];
  CHECK(halua_copy_array(L, -1, HALUA_COMPLEX128, zd, sizeof zd) == HALUA_OK);
  CHECK(zd[0] == 1 && zd[1] == -2 && zd[2] == 3 && zd[3] == 4 && zd[4] == 0.5 && zd[5] == 0);
  lua_pop(L, 1);
}

static void test_errors_of_reading(lua_State *L) {
  halua_array a;
  int top = lua_gettop(L);
  lua_pushnumber(L, 3);
  CHECK_ERR(halua_to_array(L, -1, &a), HALUA_ETYPE, "to_array", "stack index -1", "is a number", "expected an array");
  lua_pop(L, 1);
  CHECK_ERR(halua_to_array(L, top + 5, &a), HALUA_EARG, "stack index", "not valid");
  CHECK_ERR(halua_to_array(L, 0, &a), HALUA_EARG, "stack index 0");
  CHECK_ERR(halua_to_array(NULL, 1, &a), HALUA_EARG, "L is NULL");
  CHECK(halua_dostring(L, "return hl.ones({2, 3}, 'float64')", "=r", 1) == HALUA_OK);
  CHECK_ERR(halua_to_array(L, -1, NULL), HALUA_EARG, "out is NULL");
  float f[6];
  double d[6];
  CHECK_ERR(halua_copy_array(L, -1, HALUA_FLOAT32, f, sizeof f), HALUA_ETYPE, "float64", "float32", "astype");
  CHECK_ERR(halua_copy_array(L, -1, HALUA_FLOAT64, d, sizeof d - 8), HALUA_ESHAPE, "float64[2,3]", "6 elements", "48 bytes", "40 bytes");
  CHECK_ERR(halua_copy_array(L, -1, HALUA_FLOAT64, NULL, 48), HALUA_EARG, "dst is NULL");
  CHECK_ERR(halua_copy_array(L, -1, (halua_dtype)17, d, sizeof d), HALUA_EARG, "unknown dtype 17");
  CHECK(halua_copy_array(L, -1, HALUA_FLOAT64, d, sizeof d) == HALUA_OK && d[0] == 1 && d[5] == 1);
  lua_pop(L, 1);
  CHECK(lua_gettop(L) == top);
}

static void test_calls(lua_State *L) {
  int top = lua_gettop(L);
  CHECK(halua_dostring(L, "function boom(x) error('boom: ' .. tostring(x)) end\n"
                          "function shout(x) error('halua: shout: ' .. x, 0) end\n"
                          "mm = hl.jit(function(a, b) return hl.matmul(a, b) end)",
                       "=defs", 0) == HALUA_OK);
  CHECK(halua_getglobal(L, "boom") == HALUA_OK);
  lua_pushnumber(L, 7);
  CHECK_ERR(halua_call(L, 1, 1), HALUA_ERUN, "halua: call: ", "boom: 7");
  CHECK(lua_gettop(L) == top);   /* function and argument popped, nothing pushed */
  CHECK(halua_getglobal(L, "shout") == HALUA_OK);
  lua_pushstring(L, "loud");
  CHECK_ERR(halua_call(L, 1, 0), HALUA_ERUN, "halua: shout: loud");
  CHECK(strncmp(halua_error(), "halua: shout", 12) == 0);   /* "halua: " messages kept as they are */
  /* a host array of the wrong shape for a jitted function: the engine's message */
  float a[12] = {0}, b[6] = {0};
  int64_t as[2] = {3, 4}, bs[2] = {3, 2};
  CHECK(halua_getglobal(L, "mm") == HALUA_OK);
  CHECK(halua_push_array(L, a, HALUA_FLOAT32, 2, as, NULL, NULL, NULL) == HALUA_OK);
  CHECK(halua_push_array(L, b, HALUA_FLOAT32, 2, bs, NULL, NULL, NULL) == HALUA_OK);
  CHECK_ERR(halua_call(L, 2, 1), HALUA_ERUN, "halua: matmul", "[3,4]", "[3,2]");
  CHECK(lua_gettop(L) == top);
  /* and of the right shape */
  int64_t as2[2] = {2, 3};
  for (int i = 0; i < 6; i++) a[i] = (float)i, b[i] = 1;
  CHECK(halua_getglobal(L, "mm") == HALUA_OK);
  CHECK(halua_push_array(L, a, HALUA_FLOAT32, 2, as2, NULL, NULL, NULL) == HALUA_OK);
  CHECK(halua_push_array(L, b, HALUA_FLOAT32, 2, bs, NULL, NULL, NULL) == HALUA_OK);
  CHECK(halua_call(L, 2, 1) == HALUA_OK);
  float out[4];
  CHECK(halua_copy_array(L, -1, HALUA_FLOAT32, out, sizeof out) == HALUA_OK && out[0] == 3 && out[3] == 12);
  lua_pop(L, 1);
  /* calling what is not a function, or with too few values */
  lua_pushnumber(L, 1);
  CHECK_ERR(halua_call(L, 0, 0), HALUA_ERUN, "call", "attempt to call");
  CHECK_ERR(halua_call(L, lua_gettop(L) + 2, 0), HALUA_EARG, "fewer than a function and");
  CHECK_ERR(halua_call(L, -1, 0), HALUA_EARG, "call");
  CHECK_ERR(halua_call(NULL, 0, 0), HALUA_EARG, "L is NULL");
  CHECK(lua_gettop(L) == top);
  /* counts at the ends of int (found by fuzz/embed_fuzz.c: nargs + 1 overflowed, and a result
   * count below LUA_MULTRET reached lua_pcall from dostring) */
  CHECK_ERR(halua_call(L, INT_MAX, 0), HALUA_EARG, "fewer than a function and 2147483647 arguments");
  CHECK(lua_gettop(L) == top);
  CHECK(halua_getglobal(L, "boom") == HALUA_OK);
  lua_pushnumber(L, 1);
  CHECK_ERR(halua_call(L, 1, -2), HALUA_EARG, "call: nresults is -2");
  CHECK(lua_gettop(L) == top);   /* the function and its argument are popped, as on any failure of a call */
  CHECK(halua_getglobal(L, "boom") == HALUA_OK);
  CHECK_ERR(halua_call(L, 0, INT_MAX), HALUA_EMEM, "call: the Lua stack cannot grow");
  CHECK(lua_gettop(L) == top);
  CHECK_ERR(halua_dostring(L, "return 1", NULL, -2), HALUA_EARG, "dostring: nresults is -2");
  CHECK_ERR(halua_dostring(L, "return 1", NULL, INT_MIN), HALUA_EARG, "dostring: nresults is");
  CHECK_ERR(halua_dostring(L, "return 1", NULL, INT_MAX), HALUA_EMEM, "dostring: the Lua stack cannot grow");
  CHECK_ERR(halua_dofile(L, "/nonexistent.lua", -3), HALUA_EARG, "dofile: nresults is -3");
  CHECK(lua_gettop(L) == top);
  CHECK(halua_dostring(L, "return 1, 2", NULL, 3) == HALUA_OK && lua_gettop(L) == top + 3 && lua_isnil(L, -1));
  lua_settop(L, top);
  /* globals */
  CHECK_ERR(halua_getglobal(L, "no_such_thing"), HALUA_ETYPE, "getglobal", "no global named 'no_such_thing'");
  CHECK_ERR(halua_getglobal(L, NULL), HALUA_EARG, "name is NULL");
  lua_settop(L, 0);
  CHECK_ERR(halua_setglobal(L, "x"), HALUA_EARG, "stack is empty");
  lua_settop(L, top);
  lua_pushnumber(L, 5);
  CHECK_ERR(halua_setglobal(L, NULL), HALUA_EARG, "name is NULL");
  CHECK(lua_gettop(L) == top);
  /* loading code */
  CHECK_ERR(halua_dofile(L, "/nonexistent/model.lua", 0), HALUA_ERUN, "dofile", "cannot open /nonexistent/model.lua");
  CHECK_ERR(halua_dofile(L, NULL, 0), HALUA_EARG, "path is NULL");
  CHECK_ERR(halua_dostring(L, "return +", "=bad", 0), HALUA_ERUN, "dostring", "bad:1");
  CHECK_ERR(halua_dostring(L, NULL, NULL, 0), HALUA_EARG, "code is NULL");
  CHECK_ERR(halua_dostring(L, "return hl.ones(2) + hl.ones(3)", NULL, 0), HALUA_ERUN, "halua: add", "[2]", "[3]");
  CHECK(halua_dostring(L, "return 1, 2, 3", NULL, LUA_MULTRET) == HALUA_OK && lua_gettop(L) == top + 3);
  lua_settop(L, top);
}

static void test_open(const char *lua_dir) {
  /* luaopen_halua as a lua_CFunction; package.cpath emptied: the engine linked into this
   * library is used, no halua_core.so is loaded */
  lua_State *L = luaL_newstate();
  luaL_openlibs(L);
  CHECK(luaL_dostring(L, "package.cpath = ''") == 0);
  lua_pushcfunction(L, luaopen_halua);
  CHECK(lua_pcall(L, 0, 1, 0) == 0 && lua_istable(L, -1));   /* HALUA_LUA_DIR is set by ctest */
  CHECK(luaL_dostring(L, "local t = ... ; return require('halua').ones(3):sum():item()") == 0 && lua_tonumber(L, -1) == 3);
  lua_close(L);
  /* halua_open pushes the module table; require gives the same one */
  L = luaL_newstate();
  luaL_openlibs(L);
  CHECK(halua_open(L, lua_dir) == HALUA_OK && lua_istable(L, -1) && lua_gettop(L) == 1);
  lua_setglobal(L, "M");
  CHECK(luaL_dostring(L, "return M == require 'halua'") == 0 && lua_toboolean(L, -1));
  lua_close(L);
  /* a state without the standard libraries */
  L = luaL_newstate();
  CHECK_ERR(halua_open(L, lua_dir), HALUA_ERUN, "open", "luaL_openlibs");
  CHECK(lua_gettop(L) == 0);
  lua_close(L);
  CHECK_ERR(halua_open(NULL, lua_dir), HALUA_EARG, "L is NULL");
  /* a directory without the modules (and none installed where LuaJIT looks) */
  L = halua_newstate("/nonexistent");
  if (L) {   /* halua is installed on the default package.path: nothing to test */
    lua_close(L);
  } else {
    CHECK(strstr(halua_error(), "halua: newstate: ") == halua_error());
    CHECK(strstr(halua_error(), "module 'halua' not found") != NULL);
  }
}

/* libhalua carries the whole engine: LAPACK (hl.linalg) and the host sort on wrapped buffers,
 * eagerly and jitted, and LAPACK's failures as "halua: " messages through halua_call */
static void test_linalg_and_sort(lua_State *L) {
  double a[4] = {4, 1, 2, 3}, b[2] = {1, 2}, x[2];
  int64_t ashape[2] = {2, 2}, bshape[1] = {2};
  CHECK(halua_push_array(L, a, HALUA_FLOAT64, 2, ashape, NULL, NULL, NULL) == HALUA_OK && halua_setglobal(L, "LA") == HALUA_OK);
  CHECK(halua_push_array(L, b, HALUA_FLOAT64, 1, bshape, NULL, NULL, NULL) == HALUA_OK && halua_setglobal(L, "LB") == HALUA_OK);
  CHECK(halua_dostring(L, "return hl.linalg.solve(LA, LB)", "=solve", 1) == HALUA_OK);
  CHECK(halua_copy_array(L, -1, HALUA_FLOAT64, x, sizeof x) == HALUA_OK);
  lua_pop(L, 1);
  /* 4x + y = 1, 2x + 3y = 2 */
  CHECK(fabs(x[0] - 0.1) < 1e-12 && fabs(x[1] - 0.6) < 1e-12);
  CHECK(fabs(eval(L, "return hl.jit(function(a, b) return hl.linalg.solve(a, b):sum() end)(LA, LB):item()") - 0.7) < 1e-12);
  float v[5] = {3, -1, 2, 5, 0}, sorted[5];
  int64_t n5[1] = {5};
  CHECK(halua_dostring(L, "return hl.sort", "=sort", 1) == HALUA_OK);
  CHECK(halua_push_array(L, v, HALUA_FLOAT32, 1, n5, NULL, NULL, NULL) == HALUA_OK);
  CHECK(halua_call(L, 1, 1) == HALUA_OK);
  CHECK(halua_copy_array(L, -1, HALUA_FLOAT32, sorted, sizeof sorted) == HALUA_OK);
  lua_pop(L, 1);
  CHECK(sorted[0] == -1 && sorted[1] == 0 && sorted[2] == 2 && sorted[3] == 3 && sorted[4] == 5);
  CHECK(v[0] == 3 && v[4] == 0);   /* the host's buffer is only read */
  double singular[4] = {1, 2, 2, 4};
  int top = lua_gettop(L);
  CHECK(halua_dostring(L, "return hl.linalg.solve", "=solve", 1) == HALUA_OK);
  CHECK(halua_push_array(L, singular, HALUA_FLOAT64, 2, ashape, NULL, NULL, NULL) == HALUA_OK);
  CHECK(halua_getglobal(L, "LB") == HALUA_OK);
  CHECK_ERR(halua_call(L, 2, 1), HALUA_ERUN, "halua: ", "singular matrix");
  CHECK(lua_gettop(L) == top);
  CHECK(halua_dostring(L, "LA, LB = nil, nil", NULL, 0) == HALUA_OK);
}

/* messages are per thread: another thread's failure leaves this thread's message alone */
static void *fail_elsewhere(void *arg) {
  (void)arg;
  halua_to_array(NULL, 1, NULL);
  return (void *)(strstr(halua_error(), "to_array: out is NULL") != NULL ? (intptr_t)1 : 0);
}

static void test_thread_local_errors(lua_State *L) {
  CHECK_ERR(halua_getglobal(L, "missing_here"), HALUA_ETYPE, "missing_here");
  pthread_t t;
  void *ok = NULL;
  CHECK(pthread_create(&t, NULL, fail_elsewhere, NULL) == 0);
  pthread_join(t, &ok);
  CHECK(ok == (void *)(intptr_t)1);
  CHECK(strstr(halua_error(), "missing_here") != NULL);
}

int main(int argc, char **argv) {
  const char *lua_dir = argc > 1 ? argv[1] : NULL;
  CHECK(strcmp(halua_error(), "") == 0);
  lua_State *L = halua_newstate(lua_dir);
  if (!L) {
    fprintf(stderr, "halua_newstate: %s\n", halua_error());
    return 1;
  }
  CHECK(halua_dostring(L, "hl = halua", "=alias", 0) == HALUA_OK);
  test_errors_of_push(L);
  test_foreign_userdata(L);
  test_zero_copy(L);
  test_strides_and_dtypes(L);
  test_errors_of_reading(L);
  test_calls(L);
  test_linalg_and_sort(L);
  test_thread_local_errors(L);
  /* a wrapped array still referenced at lua_close is released there, once */
  static float kept[4];
  int64_t n4[1] = {4};
  int weight = 1;
  releases = 0;
  CHECK(halua_push_array(L, kept, HALUA_FLOAT32, 1, n4, NULL, count_release, &weight) == HALUA_OK);
  CHECK(halua_setglobal(L, "K") == HALUA_OK);
  CHECK(halua_dostring(L, "K2 = K.T", NULL, 0) == HALUA_OK);
  lua_close(L);
  CHECK(releases == 1 && released_data == kept);
  test_open(lua_dir);
  printf("embed_test: %d checks, %d failed\n", checks, failures);
  return failures != 0;
}
