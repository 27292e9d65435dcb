/* Runs a function that hl.export wrote, for tests: reads each input's data from a .npy file
 * and writes each output's data into a .npy file whose header (and size) the test made
 * beforehand, by saving the value halua computed for it.
 *
 *   cc -DFN=name -DFN_NUM_INPUTS=NAME_NUM_INPUTS -DFN_NUM_OUTPUTS=NAME_NUM_OUTPUTS -include name.h \
 *      export_driver.c libname.a ... -o run
 *   ./run in0.npy in1.npy ... -- out0.npy out1.npy ...        (exit 0, or the call's status) */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* where a .npy file's data starts (after its header), or -1 */
static long data_offset(FILE *f) {
  unsigned char pre[12];
  if (fread(pre, 1, 12, f) != 12 || memcmp(pre, "\x93NUMPY", 6)) return -1;
  if (pre[6] == 1) return 10 + (long)(pre[8] | pre[9] << 8);
  return 12 + (long)(pre[8] | pre[9] << 8 | pre[10] << 16 | (long)pre[11] << 24);
}

static void *load(const char *path, FILE **keep, long *off, long *bytes) {
  FILE *f = fopen(path, keep ? "r+b" : "rb");
  if (!f) {
    fprintf(stderr, "run: cannot open %s\n", path);
    exit(100);
  }
  fseek(f, 0, SEEK_END);
  long size = ftell(f);
  fseek(f, 0, SEEK_SET);
  *off = data_offset(f);
  if (*off < 0 || *off > size) {
    fprintf(stderr, "run: %s is not a .npy file\n", path);
    exit(100);
  }
  *bytes = size - *off;
  char *data = malloc((size_t)*bytes + 64);
  fseek(f, *off, SEEK_SET);
  if (!data || fread(data, 1, (size_t)*bytes, f) != (size_t)*bytes) exit(100);
  if (keep) *keep = f;
  else fclose(f);
  return data;
}


int main(int argc, char **argv) {
  const void *in[256];
  void *out[256];
  FILE *files[256];
  long offs[256], sizes[256];
  int nin = 0, nout = 0, i = 1;
  for (; i < argc && strcmp(argv[i], "--"); i++) {
    long off, bytes;
    in[nin++] = load(argv[i], NULL, &off, &bytes);
  }
  for (i++; i < argc; i++, nout++) out[nout] = load(argv[i], &files[nout], &offs[nout], &sizes[nout]);
  if (nin != FN_NUM_INPUTS || nout != FN_NUM_OUTPUTS) {
    fprintf(stderr, "run: %d inputs and %d outputs given, the header says %d and %d\n", nin, nout, FN_NUM_INPUTS, FN_NUM_OUTPUTS);
    return 100;
  }
  for (int k = 0; k < nout; k++) memset(out[k], 0xA5, (size_t)sizes[k]);   /* every byte must be written */
  int status = FN(in, out);
  if (status != 0) {
    fprintf(stderr, "run: the call returned %d\n", status);
    return 101;
  }
  for (int k = 0; k < nout; k++) {
    fseek(files[k], offs[k], SEEK_SET);
    if (fwrite(out[k], 1, (size_t)sizes[k], files[k]) != (size_t)sizes[k] || fclose(files[k])) return 100;
  }
  return 0;
}
