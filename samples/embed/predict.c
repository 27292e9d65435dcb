/* A C host running a halua model: loads model.lua (a jitted dense layer + softmax), wraps its own
 * buffers as arrays without copying them, calls the jitted function in a loop and checks every
 * result against the same computation in C.
 *
 *   predict [model.lua [steps]]
 *
 * Two ways to hand data over, both zero-copy: the weights and one input buffer are wrapped once
 * and kept as Lua globals (the host rewrites the input buffer in place before each call, and the
 * array sees the new values); on odd iterations a fresh malloc'd request buffer is wrapped for
 * that call alone, and its release callback frees it when Lua's collector drops the array. */
#include "common.h"
#include <string.h>

enum { BATCH = 4, STEPS = 200 };

static int releases;        /* release callbacks seen */
static int fresh_buffers;   /* buffers wrapped for one call */

static void count_release(void *user, void *data) {
  (void)user;
  (void)data;
  releases++;
}

static void free_release(void *user, void *data) {
  (void)user;
  free(data);
  releases++;
}

static void fill_input(float *x, int step) {
  for (int i = 0; i < BATCH * FEATURES; i++) x[i] = sinf(0.1f * (float)step + (float)i);
}

int main(int argc, char **argv) {
  const char *model = argc > 1 ? argv[1] : "model.lua";
  int steps = argc > 2 ? atoi(argv[2]) : STEPS;
  if (steps < 1) steps = 1;
  lua_State *L = halua_newstate(NULL);
  if (!L) die("halua_newstate");
  if (halua_dofile(L, model, 0)) die("loading the model");

  static float x[BATCH * FEATURES];
  static float w[FEATURES * CLASSES] = {0.5f, -1.0f, 2.0f, 0.25f, -0.75f, 1.5f};
  static float b[CLASSES] = {0.1f, -0.2f};
  const int64_t xshape[2] = {BATCH, FEATURES}, wshape[2] = {FEATURES, CLASSES}, bshape[1] = {CLASSES};
  if (halua_push_array(L, w, HALUA_FLOAT32, 2, wshape, NULL, count_release, NULL) || halua_setglobal(L, "W") ||
      halua_push_array(L, b, HALUA_FLOAT32, 1, bshape, NULL, count_release, NULL) || halua_setglobal(L, "B") ||
      halua_push_array(L, x, HALUA_FLOAT32, 2, xshape, NULL, count_release, NULL) || halua_setglobal(L, "X"))
    die("wrapping the host buffers");

  float out[BATCH * CLASSES], want[CLASSES];
  double max_err = 0;
  for (int step = 0; step < steps; step++) {
    const float *input = x;
    if (halua_getglobal(L, "predict")) die("predict");
    if (step % 2 == 0) {
      fill_input(x, step);   /* the wrapped buffer, rewritten in place: no copy, no new array */
      if (halua_getglobal(L, "X")) die("X");
    } else {
      float *req = malloc(sizeof x);
      if (!req) return 1;
      fill_input(req, step);
      input = req;
      if (halua_push_array(L, req, HALUA_FLOAT32, 2, xshape, NULL, free_release, NULL)) die("wrapping a request");
      fresh_buffers++;
    }
    if (halua_getglobal(L, "W") || halua_getglobal(L, "B")) die("W, B");
    if (halua_call(L, 3, 1)) die("calling predict");
    halua_array y;
    if (halua_to_array(L, -1, &y)) die("reading the result");
    if (y.dtype != HALUA_FLOAT32 || y.ndim != 2 || y.shape[0] != BATCH || y.shape[1] != CLASSES) {
      fprintf(stderr, "predict gave a %s array of %d dimensions\n", halua_dtype_name(y.dtype), y.ndim);
      return 1;
    }
    if (halua_copy_array(L, -1, HALUA_FLOAT32, out, sizeof out)) die("copying the result");
    for (int r = 0; r < BATCH; r++) {
      reference_row(input + r * FEATURES, w, b, want);
      for (int c = 0; c < CLASSES; c++) {
        double e = fabs(out[r * CLASSES + c] - want[c]);
        /* the zero-copy view (strides in elements) gives the same values as the copy */
        float viewed = ((const float *)y.data)[r * y.strides[0] + c * y.strides[1]];
        if (viewed != out[r * CLASSES + c]) e = INFINITY;
        if (e > max_err) max_err = e;
      }
    }
    lua_pop(L, 1);
    if (step == steps - 1) {
      printf("predict(x) at step %d:\n", step);
      for (int r = 0; r < BATCH; r++) printf("  [%.6f, %.6f]\n", out[r * CLASSES], out[r * CLASSES + 1]);
    }
  }

  /* the labels, int64 and 1-based, through the other jitted function */
  int64_t labels[BATCH];
  if (halua_getglobal(L, "classify") || halua_getglobal(L, "X") || halua_getglobal(L, "W") || halua_getglobal(L, "B") ||
      halua_call(L, 3, 1) || halua_copy_array(L, -1, HALUA_INT64, labels, sizeof labels))
    die("classify");
  lua_pop(L, 1);
  printf("classify(x) = {%lld, %lld, %lld, %lld}\n", (long long)labels[0], (long long)labels[1], (long long)labels[2],
         (long long)labels[3]);

  lua_close(L);
  int want_releases = 3 + fresh_buffers;
  printf("%d calls, largest difference from C %.3g, %d release callbacks (%d expected)\n", steps, max_err, releases,
         want_releases);
  if (max_err > 1e-5 || releases != want_releases) {
    fprintf(stderr, "predict: FAILED\n");
    return 1;
  }
  printf("predict: ok\n");
  return 0;
}
