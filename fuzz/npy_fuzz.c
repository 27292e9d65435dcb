/* libFuzzer target: the .npy reader (hl_npy_read, engine/formats/hl_npy.c) on the input bytes.
 *
 * A read either fails with a message that names the stream ("halua: fuzz.npy: ...") and leaves
 * nothing allocated, or gives a contiguous host array whose every byte came from the input. A
 * successful read is written back with hl_npy_write and read again: the second read must give
 * the same dtype, shape and bytes, and the written header must be numpy.save's. */
#include "hl_array.h"
#include "hl_error.h"
#include "hl_npy.h"
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WHAT "fuzz.npy"

static void fail(const char *why) {
  fprintf(stderr, "npy_fuzz: %s (halua: %s)\n", why, hl_error_message());
  abort();
}

/* the input as a source: a regular file's behaviour (it knows what is left) */
typedef struct {
  hl_source base;
  const uint8_t *p;
  size_t n, pos;
} mem_source;

static int64_t mem_read(hl_source *s, void *dst, size_t n) {
  mem_source *m = (mem_source *)s;
  size_t left = m->n - m->pos;
  if (n > left) n = left;
  if (n) memcpy(dst, m->p + m->pos, n);
  m->pos += n;
  return (int64_t)n;
}

static int64_t mem_remaining(hl_source *s) {
  mem_source *m = (mem_source *)s;
  return (int64_t)(m->n - m->pos);
}

static void mem_source_init(mem_source *m, const uint8_t *p, size_t n) {
  m->base.read = mem_read;
  m->base.remaining = mem_remaining;
  m->p = p;
  m->n = n;
  m->pos = 0;
}

typedef struct {
  hl_sink base;
  uint8_t *buf;
  size_t n, cap;
} mem_sink;

static int sink_write(hl_sink *s, const void *src, size_t n) {
  mem_sink *m = (mem_sink *)s;
  if (m->n + n > m->cap) {
    size_t cap = (m->n + n) * 2;
    uint8_t *b = realloc(m->buf, cap);
    if (!b) return hl_error("fuzz: out of memory");
    m->buf = b;
    m->cap = cap;
  }
  memcpy(m->buf + m->n, src, n);
  m->n += n;
  return 0;
}

static void check_array(const hl_array *a, size_t input_size) {
  if (!a->storage || hl_array_device(a) != 0) fail("the array has no host storage");
  if (a->ndim < 0 || a->ndim > HL_MAX_DIMS) fail("ndim out of range");
  for (int k = 0; k < a->ndim; k++)
    if (a->shape[k] < 0) fail("negative extent");
  int64_t n = hl_shape_size(a->ndim, a->shape);
  size_t nbytes = (size_t)n * hl_dtype_size(a->dtype);
  if (n && !hl_array_is_contiguous(a)) fail("the array is not contiguous");
  if (nbytes > input_size) fail("more data than the input holds");
  if (nbytes > a->storage->nbytes) fail("the storage is smaller than the array");
  /* every byte is read (ASan sees a short buffer); bools are 0 or 1 */
  const uint8_t *d = hl_array_data(a);
  unsigned sum = 0;
  for (size_t i = 0; i < nbytes; i++) sum += d[i];
  if (a->dtype == HL_BOOL)
    for (size_t i = 0; i < nbytes; i++)
      if (d[i] > 1) fail("a bool element is neither 0 nor 1");
  volatile unsigned sink = sum;
  (void)sink;
}

static void round_trip(const hl_array *a) {
  mem_sink out = {.base.write = sink_write};
  if (hl_npy_write(&out.base, a)) fail("writing back what was read failed");
  char hdr[HL_NPY_HEADER_MAX];
  size_t hlen = hl_npy_header(a->dtype, a->ndim, a->shape, hdr);
  if (hlen % 64 || out.n < hlen || memcmp(out.buf, hdr, hlen)) fail("the written header is not numpy.save's");
  mem_source again;
  mem_source_init(&again, out.buf, out.n);
  hl_array b;
  if (hl_npy_read(&again.base, WHAT, &b)) fail("reading back a written array failed");
  if (again.pos != out.n) fail("the second read left bytes unread");
  size_t nbytes = (size_t)hl_shape_size(a->ndim, a->shape) * hl_dtype_size(a->dtype);
  if (b.dtype != a->dtype || b.ndim != a->ndim || memcmp(b.shape, a->shape, sizeof(int64_t) * (size_t)a->ndim) ||
      (nbytes && memcmp(hl_array_data(&b), hl_array_data(a), nbytes)))
    fail("the round trip changed the array");
  hl_array_release(&b);
  free(out.buf);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size) {
  mem_source src;
  mem_source_init(&src, data, size);
  hl_array a;
  hl_error_clear();
  if (hl_npy_read(&src.base, WHAT, &a)) {
    if (strncmp(hl_error_message(), "halua: " WHAT ": ", sizeof "halua: " WHAT ": " - 1)) fail("the error does not name the stream");
    return 0;
  }
  check_array(&a, size);
  round_trip(&a);
  hl_array_release(&a);
  return 0;
}
