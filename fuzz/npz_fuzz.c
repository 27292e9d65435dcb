/* libFuzzer target: the .npz reader (hl_npz_load: engine/formats/hl_npz.c over hl_zip_read.c,
 * then hl_npy_read per member) on the input bytes as a file.
 *
 * The input is written to an in-memory file (memfd) that the reader opens by its /proc path.
 * A load either fails with a message naming the archive and leaves nothing allocated, or gives
 * contiguous host arrays under distinct names, none holding more bytes than a stored member
 * could or than deflate can expand the input to. A successful load is saved with hl_npz_save
 * (a temporary directory) and loaded again: the same names, dtypes, shapes and bytes. */
#define _GNU_SOURCE   /* memfd_create */
#include "hl_array.h"
#include "hl_error.h"
#include "hl_npz.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

static int fd = -1;
static char path[64], dir[4096], saved[4200];

static void fail(const char *why) {
  fprintf(stderr, "npz_fuzz: %s (halua: %s)\n", why, hl_error_message());
  abort();
}

static void cleanup(void) {
  unlink(saved);
  rmdir(dir);
}

int LLVMFuzzerInitialize(int *argc, char ***argv) {
  (void)argc;
  (void)argv;
  fd = memfd_create("npz_fuzz", 0);
  if (fd < 0) {
    perror("npz_fuzz: memfd_create");
    exit(1);
  }
  snprintf(path, sizeof path, "/proc/self/fd/%d", fd);
  const char *tmp = getenv("TMPDIR");
  snprintf(dir, sizeof dir, "%s/npz_fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
  if (!mkdtemp(dir)) {
    perror("npz_fuzz: mkdtemp");
    exit(1);
  }
  snprintf(saved, sizeof saved, "%s/saved.npz", dir);
  atexit(cleanup);
  return 0;
}

static void check_entries(const hl_npz_entry *e, int n, size_t input_size) {
  for (int i = 0; i < n; i++) {
    const hl_array *a = &e[i].array;
    if (!e[i].name) fail("an entry has no name");
    for (int k = 0; k < i; k++)
      if (!strcmp(e[k].name, e[i].name)) fail("two entries have the same name");
    if (!a->storage || hl_array_device(a) != 0) fail("an array has no host storage");
    if (a->ndim < 0 || a->ndim > HL_MAX_DIMS) fail("ndim out of range");
    int64_t count = hl_shape_size(a->ndim, a->shape);
    size_t nbytes = (size_t)count * hl_dtype_size(a->dtype);
    if (count && !hl_array_is_contiguous(a)) fail("an array is not contiguous");
    if (nbytes > a->storage->nbytes) fail("the storage is smaller than the array");
    /* deflate expands at most 1032:1 */
    if (nbytes > 1040 * (uint64_t)input_size + 1024) fail("an array holds more bytes than the input can give");
    const uint8_t *d = hl_array_data(a);
    unsigned sum = 0;
    for (size_t b = 0; b < nbytes; b++) sum += d[b];
    volatile unsigned sink = sum;
    (void)sink;
  }
}

static void round_trip(const hl_npz_entry *e, int n) {
  const char **names = malloc(sizeof *names * (size_t)(n ? n : 1));
  const hl_array **arrays = malloc(sizeof *arrays * (size_t)(n ? n : 1));
  if (!names || !arrays) fail("out of memory");
  for (int i = 0; i < n; i++) {
    names[i] = e[i].name;
    arrays[i] = &e[i].array;
  }
  if (hl_npz_save(saved, n, names, arrays)) fail("saving what was loaded failed");
  free(names);
  free(arrays);
  hl_npz_entry *f = NULL;
  int m = 0;
  if (hl_npz_load(saved, &f, &m)) fail("loading a saved archive failed");
  if (m != n) fail("the round trip changed the number of arrays");
  for (int i = 0; i < n; i++) {
    const hl_array *a = &e[i].array, *b = &f[i].array;
    size_t nbytes = (size_t)hl_shape_size(a->ndim, a->shape) * hl_dtype_size(a->dtype);
    if (strcmp(e[i].name, f[i].name) || a->dtype != b->dtype || a->ndim != b->ndim ||
        memcmp(a->shape, b->shape, sizeof(int64_t) * (size_t)a->ndim) ||
        (nbytes && memcmp(hl_array_data(a), hl_array_data(b), nbytes)))
      fail("the round trip changed an array");
  }
  hl_npz_entries_free(f, m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  if (ftruncate(fd, 0) || pwrite(fd, data, size, 0) != (ssize_t)size) fail("cannot write the input to the memfd");
  hl_npz_entry *e = NULL;
  int n = -1;
  hl_error_clear();
  if (hl_npz_load(path, &e, &n)) {
    char want[128];
    snprintf(want, sizeof want, "halua: loadz: %s", path);
    if (strncmp(hl_error_message(), want, strlen(want))) fail("the error does not name the archive");
    return 0;
  }
  if (n < 0 || (n > 0 && !e)) fail("a load succeeded without its entries");
  check_entries(e, n, size);
  round_trip(e, n);
  hl_npz_entries_free(e, n);
  return 0;
}
