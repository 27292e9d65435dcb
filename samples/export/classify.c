/* A C program with no Lua, LLVM or Halide: it classifies the digits test set with the MLP that
 * samples/digits_export.lua trained and exported (hl.export) as libdigits_predict.
 *
 *   cc samples/export/classify.c -I DIR DIR/libdigits_predict.a -lm -lpthread -ldl -o classify
 *   ./classify DIR
 *
 * DIR holds the library and the test set the Lua script wrote beside it with hl.save:
 * test_images.npy (the raw pixels, float32, the shape the library was exported for) and
 * test_labels.npy (the labels 0..9, int32). */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include "digits_predict.h"

/* A .npy file's data (numpy.save's format, as hl.save writes it): checks its dtype descriptor
 * (e.g. "<f4") and C order, gives its element count; exits on anything else. */
static void *read_npy(const char *dir, const char *file, const char *descr, size_t item, long *count) {
  char path[4096], header[1024];
  snprintf(path, sizeof path, "%s/%s", dir, file);
  FILE *f = fopen(path, "rb");
  unsigned char pre[10];
  if (!f || fread(pre, 1, 10, f) != 10 || memcmp(pre, "\x93NUMPY", 6) || pre[6] != 1) {
    fprintf(stderr, "classify: %s is not a version 1 .npy file\n", path);
    exit(1);
  }
  size_t hlen = (size_t)pre[8] | (size_t)pre[9] << 8;
  if (hlen >= sizeof header || fread(header, 1, hlen, f) != hlen) {
    fprintf(stderr, "classify: %s has a bad header\n", path);
    exit(1);
  }
  header[hlen] = 0;
  char want[32];
  snprintf(want, sizeof want, "'descr': '%s'", descr);
  const char *shape = strstr(header, "'shape': (");
  if (!strstr(header, want) || !strstr(header, "'fortran_order': False") || !shape) {
    fprintf(stderr, "classify: %s does not hold a C-order %s array\n", path, descr);
    exit(1);
  }
  long n = 1;
  for (const char *p = shape + 10; *p && *p != ')';) {
    char *end;
    long d = strtol(p, &end, 10);
    if (end == p) break;
    n *= d;
    p = end + (*end == ',');
    while (*p == ' ') p++;
  }
  void *data = malloc((size_t)n * item + 1);
  if (!data || fread(data, item, (size_t)n, f) != (size_t)n) {
    fprintf(stderr, "classify: %s is truncated\n", path);
    exit(1);
  }
  fclose(f);
  *count = n;
  return data;
}

int main(int argc, char **argv) {
  const char *dir = argc > 1 ? argv[1] : ".";
  long n, npixels;
  float *images = read_npy(dir, "test_images.npy", "<f4", sizeof(float), &npixels);
  int32_t *labels = read_npy(dir, "test_labels.npy", "<i4", sizeof(int32_t), &n);
  if (npixels != n * 64) {
    fprintf(stderr, "classify: %ld labels for %ld pixels (64 per image)\n", n, npixels);
    return 1;
  }
  int64_t *predicted = malloc((size_t)n * sizeof *predicted);

  const void *inputs[DIGITS_PREDICT_NUM_INPUTS] = {images};
  void *outputs[DIGITS_PREDICT_NUM_OUTPUTS] = {predicted};
  int status = digits_predict(inputs, outputs);
  if (status != 0) {
    fprintf(stderr, "classify: digits_predict failed (%d)\n", status);
    return 1;
  }
  long correct = 0;
  for (long i = 0; i < n; i++) correct += predicted[i] - 1 == labels[i];   /* classes are 1-based */
  printf("C: %ld of %ld test images classified correctly: accuracy %.2f%%\n", correct, n, 100.0 * (double)correct / (double)n);
  free(images);
  free(labels);
  free(predicted);
  return 0;
}
