/* objload_test: relocatable objects loaded without a linker (engine/backend/hl_objload.h).
 * Objects are compiled here by the C compiler (cc -c -fPIC) from small sources that use what a
 * loader must get right: calls into libm, data in another object, pointers in relocated
 * constants, an external variable through the GOT, zeroed data, a weak definition overridden by
 * a strong one, a COMDAT group two objects both carry; then a call out of 32-bit reach, calls
 * into a scope (another image, as pipelines call Halide's runtime, or a table of functions, as
 * CUDA pipelines call the JIT's), a destructor (not run), what the loader refuses (thread-locals, constructors, a symbol
 * the process lacks, a name defined twice, not ELF, truncated), and damaged objects, which must
 * fail or load but never crash. */
#define _GNU_SOURCE
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>
#include "hl_objload.h"

static int failures;
#define CHECK(cond, ...)                                   \
  do {                                                     \
    if (!(cond)) {                                         \
      failures++;                                          \
      fprintf(stderr, "FAIL %s:%d: ", __FILE__, __LINE__); \
      fprintf(stderr, __VA_ARGS__);                        \
      fprintf(stderr, "\n");                               \
    }                                                      \
  } while (0)

static char dir[] = "/tmp/objload_test-XXXXXX";

typedef struct {
  unsigned char *b;
  size_t n;
} blob;

/* src (C, or assembly when ext is "s") compiled to an object, its bytes */
static blob compile(const char *name, const char *ext, const char *src) {
  char path[512], obj[512], cmd[1400];
  snprintf(path, sizeof path, "%s/%s.%s", dir, name, ext);
  snprintf(obj, sizeof obj, "%s/%s.o", dir, name);
  FILE *f = fopen(path, "w");
  if (!f || fputs(src, f) < 0 || fclose(f) != 0) {
    fprintf(stderr, "objload_test: cannot write %s\n", path);
    exit(2);
  }
  snprintf(cmd, sizeof cmd, "cc -c -fPIC -O1 -o '%s' '%s'", obj, path);
  if (system(cmd) != 0) {
    fprintf(stderr, "objload_test: the C compiler failed on %s\n", path);
    exit(2);
  }
  blob out = {0, 0};
  f = fopen(obj, "rb");
  if (!f) exit(2);
  fseek(f, 0, SEEK_END);
  out.n = (size_t)ftell(f);
  fseek(f, 0, SEEK_SET);
  out.b = malloc(out.n);   /* (malloc: aligned as the loader reads tables in place) */
  if (!out.b || fread(out.b, 1, out.n, f) != out.n) exit(2);
  fclose(f);
  return out;
}

static hl_objimage *load(blob *objs, size_t n, char *why, size_t cap) {
  const unsigned char *p[8];
  size_t s[8];
  for (size_t i = 0; i < n; i++) {
    p[i] = objs[i].b;
    s[i] = objs[i].n;
  }
  return hl_objload(p, s, n, NULL, why, cap);
}

static const char *SRC_A =
    "#include <math.h>\n"
    "#include <stdio.h>\n"
    "extern int shared_counter;\n"
    "extern int b_twice(int);\n"
    "static const char *names[] = {\"alpha\", \"beta\", \"gamma\"};\n"
    "static int zeros[1000];\n"
    "double a_sin(double x) { return sin(x); }\n"
    "float a_expf(float x) { return expf(x); }\n"
    "const char *a_name(int i) { return names[i]; }\n"
    "int a_calls_b(int x) { shared_counter += 1; return b_twice(x) + shared_counter; }\n"
    "FILE *a_stderr(void) { return stderr; }\n"
    "__attribute__((weak)) int overridden(void) { return 1; }\n"
    "int a_overridden(void) { return overridden(); }\n"
    "int a_bss(void) { int s = 0; for (int i = 0; i < 1000; i++) s += zeros[i]; zeros[7]++; return s; }\n"
    "double (*a_fn_ptr(void))(double) { return cos; }\n";

static const char *SRC_B =
    "int shared_counter = 41;\n"
    "int b_twice(int x) { return 2 * x; }\n"
    "int overridden(void) { return 2; }\n";

/* a function in a COMDAT group: each object has its own copy, and the first loaded stands */
static const char *comdat(int value, const char *caller) {
  static char buf[2][700];
  char *b = buf[value & 1];
  snprintf(b, 700,
           "  .section .text.shared_fn,\"axG\",@progbits,shared_fn,comdat\n"
           "  .globl shared_fn\n  .type shared_fn,@function\n"
           "shared_fn:\n  movl $%d, %%eax\n  ret\n"
           "  .text\n  .globl %s\n  .type %s,@function\n"
           "%s:\n  jmp shared_fn@PLT\n"
           "  .section .note.GNU-stack,\"\",@progbits\n",
           value, caller, caller, caller);
  return b;
}

static void check_image(hl_objimage *im, const char *where) {
  double (*a_sin)(double) = (double (*)(double))hl_objload_symbol(im, "a_sin");
  float (*a_expf)(float) = (float (*)(float))hl_objload_symbol(im, "a_expf");
  const char *(*a_name)(int) = (const char *(*)(int))hl_objload_symbol(im, "a_name");
  int (*a_calls_b)(int) = (int (*)(int))hl_objload_symbol(im, "a_calls_b");
  FILE *(*a_stderr)(void) = (FILE * (*)(void)) hl_objload_symbol(im, "a_stderr");
  int (*a_overridden)(void) = (int (*)(void))hl_objload_symbol(im, "a_overridden");
  int (*overridden)(void) = (int (*)(void))hl_objload_symbol(im, "overridden");
  int (*a_bss)(void) = (int (*)(void))hl_objload_symbol(im, "a_bss");
  double (*(*a_fn_ptr)(void))(double) = (double (*(*)(void))(double))hl_objload_symbol(im, "a_fn_ptr");
  int *counter = (int *)hl_objload_symbol(im, "shared_counter");
  CHECK(a_sin && a_expf && a_name && a_calls_b && a_stderr && a_overridden && overridden && a_bss && a_fn_ptr && counter,
        "%s: a symbol is missing", where);
  if (failures) return;
  CHECK(a_sin(0.5) == sin(0.5), "%s: a_sin(0.5) = %.17g, sin = %.17g", where, a_sin(0.5), sin(0.5));
  volatile float two = 2.0f;
  CHECK(a_expf(two) == expf(two), "%s: a_expf(2)", where);
  CHECK(strcmp(a_name(0), "alpha") == 0 && strcmp(a_name(2), "gamma") == 0, "%s: a_name", where);
  CHECK(*counter == 41, "%s: shared_counter starts at %d", where, *counter);
  CHECK(a_calls_b(5) == 10 + 42, "%s: a_calls_b(5) = %d", where, a_calls_b(5));
  CHECK(*counter == 42, "%s: shared_counter is %d after a call", where, *counter);
  CHECK(a_stderr() == stderr, "%s: stderr through the GOT", where);
  CHECK(a_overridden() == 2 && overridden() == 2, "%s: the strong definition stands (%d, %d)", where, a_overridden(),
        overridden());
  CHECK(a_bss() == 0 && a_bss() == 1, "%s: zeroed data", where);
  CHECK(a_fn_ptr() == cos, "%s: the address of cos", where);
  CHECK(hl_objload_symbol(im, "names") == NULL && hl_objload_symbol(im, "zeros") == NULL,
        "%s: static symbols are not the image's", where);
  CHECK(hl_objload_symbol(im, "no_such_symbol") == NULL, "%s: a missing symbol", where);
  CHECK(hl_objload_bytes(im) >= 3 * 4096, "%s: %zu bytes mapped", where, hl_objload_bytes(im));
}

static void expect_refusal(blob *objs, size_t n, const char *words, const char *what) {
  char why[512];
  hl_objimage *im = load(objs, n, why, sizeof why);
  CHECK(im == NULL, "%s: loaded", what);
  hl_objload_free(im);
  CHECK(strstr(why, words) != NULL, "%s: the reason \"%s\" lacks \"%s\"", what, why, words);
}

/* functions a table scope names (3c) */
static int times_five(int x) { return 5 * x; }
static int times_eleven(int x) { return 11 * x; }

int main(void) {
  if (!mkdtemp(dir)) return 2;
  blob ab[2] = {compile("a", "c", SRC_A), compile("b", "c", SRC_B)};
  char why[512];

  /* 1. two objects, every kind of reference */
  hl_objimage *im = load(ab, 2, why, sizeof why);
  CHECK(im != NULL, "loading a and b: %s", why);
  if (im) check_image(im, "near");
  hl_objload_free(im);

  /* 2. a call out of 32-bit reach: a function placed far from where mappings go (an absolute
   * symbol of another object), called through the image's jump. The place: the first of a few
   * addresses the kernel grants that lies 4 GB or more from a fresh mapping (where the image will
   * go); under the sanitizers some of them are their shadow memory. */
  unsigned char *far = MAP_FAILED;
  void *probe = mmap(NULL, 4096, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  static const uintptr_t hints[] = {(uintptr_t)1 << 32, (uintptr_t)0x200000000000, (uintptr_t)0x500000000000};
  for (size_t h = 0; h < sizeof hints / sizeof hints[0] && far == MAP_FAILED && probe != MAP_FAILED; h++) {
    far = mmap((void *)hints[h], 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    intptr_t gap = far == MAP_FAILED ? 0 : (intptr_t)far - (intptr_t)probe;
    if (far != MAP_FAILED && gap > -((intptr_t)4 << 30) && gap < ((intptr_t)4 << 30)) {
      munmap(far, 4096);
      far = MAP_FAILED;
    }
  }
  if (probe != MAP_FAILED) munmap(probe, 4096);
  if (far == MAP_FAILED) fprintf(stderr, "objload_test: note: no address far from the mappings: the far call is not tried\n");
  if (far != MAP_FAILED) {
    static const unsigned char ret42[] = {0xb8, 0x2a, 0, 0, 0, 0xc3};   /* mov $42, %eax; ret */
    memcpy(far, ret42, sizeof ret42);
    CHECK(mprotect(far, 4096, PROT_READ | PROT_EXEC) == 0, "protecting the far function");
    char src[300];
    snprintf(src, sizeof src,
             "  .globl far_fn\n  .type far_fn,@function\n  .set far_fn, %#llx\n"
             "  .section .note.GNU-stack,\"\",@progbits\n",
             (unsigned long long)(uintptr_t)far);
    blob fc[2] = {compile("far", "s", src), compile("call_far", "c", "int far_fn(void); int call_far(void) { return far_fn() + 1; }\n")};
    im = load(fc, 2, why, sizeof why);
    CHECK(im != NULL, "loading the far call: %s", why);
    if (im) {
      int (*call_far)(void) = (int (*)(void))hl_objload_symbol(im, "call_far");
      intptr_t d = (intptr_t)(void *)call_far - (intptr_t)far;
      if (d > INT32_MIN && d < INT32_MAX) fprintf(stderr, "objload_test: note: the image landed near the far function\n");
      CHECK(call_far && call_far() == 43, "the far call returned %d", call_far ? call_far() : -1);
    }
    hl_objload_free(im);
    free(fc[0].b);
    free(fc[1].b);
    munmap(far, 4096);
  }

  /* 3. a COMDAT group in two objects: one copy stands, and both objects call it */
  blob g[2] = {compile("g1", "s", comdat(7, "g1_call")), compile("g2", "s", comdat(8, "g2_call"))};
  im = load(g, 2, why, sizeof why);
  CHECK(im != NULL, "loading the COMDAT objects: %s", why);
  if (im) {
    int (*g1)(void) = (int (*)(void))hl_objload_symbol(im, "g1_call");
    int (*g2)(void) = (int (*)(void))hl_objload_symbol(im, "g2_call");
    int (*fn)(void) = (int (*)(void))hl_objload_symbol(im, "shared_fn");
    CHECK(g1 && g2 && fn && g1() == 7 && g2() == 7 && fn() == 7, "the first object's group stands");
  }
  hl_objload_free(im);

  /* 3b. a scope: an image whose functions another image calls (as pipelines call Halide's
   * runtime), and an object with a destructor, which loads (destructors are not run) */
  blob lib = compile("scoped", "c", "int scoped_fn(int x) { return 3 * x; }\n"
                                    "__attribute__((destructor)) static void bye(void) {}\n");
  blob user = compile("user", "c", "int scoped_fn(int); int use_scope(void) { return scoped_fn(7); }\n");
  hl_objimage *scope = load(&lib, 1, why, sizeof why);
  CHECK(scope != NULL, "loading an object with a destructor: %s", why);
  if (scope) {
    const unsigned char *p = user.b;
    size_t n = user.n;
    im = hl_objload(&p, &n, 1, scope, why, sizeof why);
    CHECK(im != NULL, "loading against a scope: %s", why);
    int (*use)(void) = im ? (int (*)(void))hl_objload_symbol(im, "use_scope") : NULL;
    CHECK(use && use() == 21, "a call into the scope");
    CHECK(!im || hl_objload_symbol(im, "scoped_fn") == NULL, "the scope's symbols are not the image's");
    hl_objload_free(im);
  }
  hl_objload_free(scope);
  expect_refusal(&user, 1, "calls scoped_fn, which is not in the process", "no scope");

  /* 3c. a scope of functions that live elsewhere (hl_objload_functions: as CUDA pipelines call
   * the JIT's runtime): the first of two equal names stands, and the table maps nothing */
  {
    const char *names[] = {"scoped_fn", "scoped_fn", "other_fn"};
    void *addrs[] = {(void *)times_five, (void *)times_eleven, (void *)times_eleven};
    hl_objimage *table = hl_objload_functions(names, addrs, 3);
    CHECK(table != NULL, "a table of functions");
    CHECK(table && hl_objload_bytes(table) == 0, "a table maps nothing");
    CHECK(table && hl_objload_symbol(table, "scoped_fn") == (void *)times_five, "the first of two equal names stands");
    const unsigned char *p = user.b;
    size_t n = user.n;
    im = table ? hl_objload(&p, &n, 1, table, why, sizeof why) : NULL;
    CHECK(im != NULL, "loading against a table of functions: %s", why);
    int (*use)(void) = im ? (int (*)(void))hl_objload_symbol(im, "use_scope") : NULL;
    CHECK(use && use() == 35, "a call into the table's function");
    hl_objload_free(im);
    hl_objload_free(table);
    hl_objimage *empty = hl_objload_functions(NULL, NULL, 0);
    CHECK(empty != NULL && hl_objload_symbol(empty, "scoped_fn") == NULL, "an empty table");
    hl_objload_free(empty);
  }

  /* 4. what the loader refuses, with its reason */
  blob tls = compile("tls", "c", "__thread int t; int get_t(void) { return t; }\n");
  expect_refusal(&tls, 1, "thread-local data", "thread-locals");
  blob ctor = compile("ctor", "c", "int x; __attribute__((constructor)) static void init(void) { x = 1; }\n");
  expect_refusal(&ctor, 1, "constructors", "a constructor");
  blob undef = compile("undef", "c", "int nowhere_at_all_fn(void); int f(void) { return nowhere_at_all_fn(); }\n");
  expect_refusal(&undef, 1, "calls nowhere_at_all_fn, which is not in the process", "an undefined symbol");
  blob dup[2] = {compile("dup1", "c", "int twice_defined = 1;\n"), compile("dup2", "c", "int twice_defined = 2;\n")};
  expect_refusal(dup, 2, "twice_defined is defined twice", "a name defined twice");
  expect_refusal(ab, 0, "no objects", "no objects");
  blob text = {(unsigned char *)strdup("int main(void) { return 0; }\n"), 30};
  expect_refusal(&text, 1, "not an ELF file", "a text file");
  blob half = {ab[0].b, 100};
  expect_refusal(&half, 1, "malformed section table", "a truncated object");
  unsigned char *shifted = malloc(ab[0].n + 4);
  memcpy(shifted + 4, ab[0].b, ab[0].n);
  blob askew = {shifted + 4, ab[0].n};
  expect_refusal(&askew, 1, "not aligned to 8 bytes", "an object at an odd address");

  /* 5. damaged objects: one byte changed at a time, anywhere; each fails or loads, and a loaded
   * image is freed (its code is not run: a changed instruction may do anything) */
  srand(12345);
  unsigned char *copy = malloc(ab[0].n);
  int loaded = 0, refused = 0;
  for (int trial = 0; trial < 3000; trial++) {
    memcpy(copy, ab[0].b, ab[0].n);
    int k = 1 + rand() % 3;
    for (int j = 0; j < k; j++) copy[(size_t)rand() % ab[0].n] ^= (unsigned char)(1 + rand() % 255);
    blob pair[2] = {{copy, ab[0].n}, ab[1]};
    hl_objimage *d = load(pair, 2, why, sizeof why);
    if (d) loaded++;
    else refused++;
    hl_objload_free(d);
  }
  CHECK(loaded > 0 && refused > 0, "damaged objects: %d loaded, %d refused", loaded, refused);
  blob *all[] = {&ab[0], &ab[1], &g[0], &g[1], &lib, &user, &tls, &ctor, &undef, &dup[0], &dup[1], &text};
  for (size_t i = 0; i < sizeof all / sizeof all[0]; i++) free(all[i]->b);
  free(shifted);
  free(copy);

  char cmd[600];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  if (system(cmd) != 0) fprintf(stderr, "objload_test: could not remove %s\n", dir);
  if (failures) {
    fprintf(stderr, "objload_test: %d failures\n", failures);
    return 1;
  }
  printf("objload_test: ok (damaged objects: %d loaded, %d refused)\n", loaded, refused);
  return 0;
}
