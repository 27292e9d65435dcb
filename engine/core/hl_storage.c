#include "hl_storage.h"
#include "hl_error.h"
#include <stdlib.h>
#include <string.h>

static size_t heap_bytes;   /* updated with __atomic builtins: storage is shared across threads */

/* Halide may read a little past the end of a buffer in vector tails: pad allocations. */
enum { ALIGN = 64, PAD = 64 };

hl_storage *hl_storage_new(size_t nbytes) {
  hl_storage *s = malloc(sizeof *s);
  size_t padded = (nbytes + PAD + ALIGN - 1) / ALIGN * ALIGN;
  void *data = s ? aligned_alloc(ALIGN, padded) : NULL;
  if (!data) {
    free(s);
    hl_error("out of memory allocating %zu bytes", nbytes);
    return NULL;
  }
  memset(data, 0, padded);
  *s = (hl_storage){.refcount = 1, .data = data, .nbytes = nbytes};
  __atomic_add_fetch(&heap_bytes, nbytes, __ATOMIC_RELAXED);
  return s;
}

hl_storage *hl_storage_wrap(void *data, size_t nbytes, hl_release_fn release, void *ctx) {
  hl_storage *s = malloc(sizeof *s);
  if (!s) {
    hl_error("out of memory");
    return NULL;
  }
  *s = (hl_storage){.refcount = 1, .data = data, .nbytes = nbytes, .release = release, .release_ctx = ctx};
  return s;
}

void hl_storage_retain(hl_storage *s) { __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED); }

void hl_storage_release(hl_storage *s) {
  if (!s || __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (s->release) {
    s->release(s->release_ctx, s->data);
  } else {
    __atomic_sub_fetch(&heap_bytes, s->nbytes, __ATOMIC_RELAXED);
    free(s->data);
  }
  free(s);
}

size_t hl_heap_bytes(void) { return __atomic_load_n(&heap_bytes, __ATOMIC_RELAXED); }
