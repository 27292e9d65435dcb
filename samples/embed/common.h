/* What the embedding samples share: the model's computation in plain C, to check halua's
 * results against, and a fatal-error helper that prints halua's message. */
#ifndef EMBED_COMMON_H
#define EMBED_COMMON_H
#include <halua.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>

enum { FEATURES = 3, CLASSES = 2 };

static void die(const char *what) {
  fprintf(stderr, "%s failed: %s\n", what, halua_error());
  exit(1);
}

/* softmax(x @ w + b) for one row, as model.lua computes it */
static void reference_row(const float *x, const float *w, const float *b, float *out) {
  double z[CLASSES], m = -INFINITY, s = 0;
  for (int c = 0; c < CLASSES; c++) {
    z[c] = b[c];
    for (int f = 0; f < FEATURES; f++) z[c] += (double)x[f] * w[f * CLASSES + c];
    if (z[c] > m) m = z[c];
  }
  for (int c = 0; c < CLASSES; c++) s += exp(z[c] - m);
  for (int c = 0; c < CLASSES; c++) out[c] = (float)(exp(z[c] - m) / s);
}
#endif
