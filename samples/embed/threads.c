/* Four host threads, one lua_State each, running the same halua model at once.
 *
 *   threads [model.lua]
 *
 * The compiled pipelines are cached process-wide: every thread asks for the pipeline of batch 4
 * at the same moment (one compiles it, the others wait for it and reuse it), and each also uses a
 * batch size of its own (pipelines compiled one after another by different threads). The weights
 * are one host buffer wrapped in all four states at once: the engine only reads it. Each thread
 * also runs the model's compiled loop (smooth) on the same inputs. Each result is checked against
 * the computation in C. */
#define _POSIX_C_SOURCE 200809L   /* pthread barriers under -std=c11 */
#include "common.h"
#include <pthread.h>
#include <string.h>

enum { THREADS = 4, STEPS = 100, MAX_BATCH = 4 + THREADS };

static const char *model;
static float w[FEATURES * CLASSES] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
static float b[CLASSES] = {0.1f, -0.2f};
static pthread_barrier_t start;

typedef struct {
  int id;
  int failed;
  double max_err;
  int releases;
} worker;

static void count_release(void *user, void *data) {
  (void)data;
  ((worker *)user)->releases++;
}

static int fail(worker *me, const char *what) {
  fprintf(stderr, "thread %d: %s failed: %s\n", me->id, what, halua_error());
  me->failed = 1;
  return 1;
}

static int run(worker *me) {
  lua_State *L = halua_newstate(NULL);
  if (!L) return fail(me, "halua_newstate");
  if (halua_dofile(L, model, 0)) return fail(me, "loading the model");
  const int64_t wshape[2] = {FEATURES, CLASSES}, bshape[1] = {CLASSES};
  if (halua_push_array(L, w, HALUA_FLOAT32, 2, wshape, NULL, count_release, me) || halua_setglobal(L, "W") ||
      halua_push_array(L, b, HALUA_FLOAT32, 1, bshape, NULL, count_release, me) || halua_setglobal(L, "B"))
    return fail(me, "wrapping the weights");
  float x[MAX_BATCH * FEATURES], out[MAX_BATCH * CLASSES], want[CLASSES];
  pthread_barrier_wait(&start);   /* all four reach the first compile together */
  for (int step = 0; step < STEPS; step++) {
    int batch = step % 2 ? 4 + me->id + 1 : 4;
    for (int i = 0; i < batch * FEATURES; i++) x[i] = cosf(0.05f * (float)(step + 7 * me->id) + (float)i);
    const int64_t xshape[2] = {batch, FEATURES};
    if (halua_getglobal(L, "predict") || halua_push_array(L, x, HALUA_FLOAT32, 2, xshape, NULL, count_release, me) ||
        halua_getglobal(L, "W") || halua_getglobal(L, "B") || halua_call(L, 3, 1))
      return fail(me, "calling predict");
    if (halua_copy_array(L, -1, HALUA_FLOAT32, out, (size_t)batch * CLASSES * sizeof(float))) return fail(me, "reading the result");
    /* x is rewritten next step while this step's array on it may still await collection: fine,
     * nothing holds it (the model keeps no inputs), and results are arrays of their own */
    lua_pop(L, 1);
    /* the compiled loop: the threads' runs of one pipeline at once keep their results apart */
    float smooth[MAX_BATCH * FEATURES];
    if (halua_getglobal(L, "smooth") || halua_push_array(L, x, HALUA_FLOAT32, 2, xshape, NULL, count_release, me) ||
        halua_call(L, 1, 1) || halua_copy_array(L, -1, HALUA_FLOAT32, smooth, (size_t)batch * FEATURES * sizeof(float)))
      return fail(me, "calling smooth");
    lua_pop(L, 1);
    for (int i = 0; i < batch * FEATURES; i++) {
      double c = x[i];
      for (int s = 0; s < 20; s++) c = c * 0.5 + x[i] * 0.25;
      double e = fabs(smooth[i] - c);
      if (e > me->max_err) me->max_err = e;
    }
    for (int r = 0; r < batch; r++) {
      reference_row(x + r * FEATURES, w, b, want);
      for (int c = 0; c < CLASSES; c++) {
        double e = fabs(out[r * CLASSES + c] - want[c]);
        if (e > me->max_err) me->max_err = e;
      }
    }
  }
  lua_close(L);
  if (me->releases != 2 * STEPS + 2) {
    fprintf(stderr, "thread %d: %d release callbacks, expected %d\n", me->id, me->releases, 2 * STEPS + 2);
    me->failed = 1;
  }
  return 0;
}

static void *thread_main(void *arg) {
  run(arg);
  return NULL;
}

int main(int argc, char **argv) {
  model = argc > 1 ? argv[1] : "model.lua";
  pthread_t threads[THREADS];
  worker workers[THREADS];
  pthread_barrier_init(&start, NULL, THREADS);
  for (int t = 0; t < THREADS; t++) {
    workers[t] = (worker){.id = t};
    if (pthread_create(&threads[t], NULL, thread_main, &workers[t])) {
      fprintf(stderr, "threads: pthread_create failed\n");
      return 1;
    }
  }
  int failed = 0;
  double max_err = 0;
  for (int t = 0; t < THREADS; t++) {
    pthread_join(threads[t], NULL);
    failed |= workers[t].failed;
    if (workers[t].max_err > max_err) max_err = workers[t].max_err;
  }
  pthread_barrier_destroy(&start);

  /* the process-wide cache, seen from a new state: one pipeline per distinct signature */
  lua_State *L = halua_newstate(NULL);
  if (!L) die("halua_newstate");
  if (halua_dostring(L, "local c = halua.cache_info() return c.entries, c.misses, c.hits", "=cache", 3)) die("cache_info");
  printf("%d threads x %d calls, largest difference from C %.3g; cache: %.0f entries, %.0f misses, %.0f hits\n", THREADS,
         STEPS, max_err, lua_tonumber(L, -3), lua_tonumber(L, -2), lua_tonumber(L, -1));
  lua_close(L);
  if (failed || max_err > 1e-5) {
    fprintf(stderr, "threads: FAILED\n");
    return 1;
  }
  printf("threads: ok\n");
  return 0;
}
