/* Refcounted host storage, 64-byte aligned, with process-wide heap accounting.
 * Wrapped host memory (zero-copy embedding, engine/include/halua.h) is borrowed: the host owns
 * it, the engine only reads it (arrays are immutable, so nothing writes into an input), it is
 * not counted in hl_heap_bytes, and an optional release callback is called instead of free. */
#ifndef HL_STORAGE_H
#define HL_STORAGE_H
#include <stddef.h>
#include <stdint.h>

typedef void (*hl_release_fn)(void *ctx, void *data);

typedef struct hl_storage {
  long refcount;           /* atomic */
  int device;              /* 0: host memory at data; 1: CUDA memory at device_ptr */
  void *device_handle;     /* the device backend's record of the allocation */
  uint64_t device_ptr;
  void *data;
  size_t nbytes;
  int borrowed;            /* 1: host memory from hl_storage_wrap, never freed or written by us */
  int small;               /* 1: the data follows this record in one block (hl_storage.c) */
  hl_release_fn release;   /* borrowed memory: called with (release_ctx, release_data) at the last release */
  void *release_ctx;
  void *release_data;      /* the host's pointer, which need not be `data` (negative strides) */
} hl_storage;

/* Uninitialised contents (callers write every element); NULL + hl_error on failure. */
hl_storage *hl_storage_new(size_t nbytes);
hl_storage *hl_storage_new_on(int device, size_t nbytes);
/* Borrowed host memory: nbytes at data; release (may be NULL) is called once, with ctx and
 * release_data (the pointer the host gave, wherever it lies), when the last reference goes. */
hl_storage *hl_storage_wrap(void *data, size_t nbytes, hl_release_fn release, void *ctx, void *release_data);
void hl_storage_retain(hl_storage *s);
void hl_storage_release(hl_storage *s);

/* Bytes of engine storage alive now (ours, not wrapped). The Lua layer steps its GC on this.
 * Exact for the arrays the calling thread made and freed; each other thread's host arrays may
 * be counted up to 64 KiB off (hl_storage.c counts them per thread). */
size_t hl_heap_bytes(void);
/* The part of it in device memory, and the device allocations made so far (the GC paces
 * device results on their own: hl_lua_value.c). */
size_t hl_device_heap_bytes(void);
uint64_t hl_device_blocks_made(void);
/* Bytes of host arrays of at most HL_STORAGE_WARM_MAX bytes that the calling thread has made so
 * far: arrays small enough that a few megabytes of them, collected early, are reused while they
 * are still in the caches (the GC's pacing, hl_lua_value.c). */
enum { HL_STORAGE_WARM_MAX = 64 << 10 };
size_t hl_storage_warm_bytes_made(void);
/* Memory for pipelines' internal buffers (Halide's custom_malloc/custom_free): 64-byte aligned,
 * large blocks huge-page backed and reused. */
void *hl_scratch_alloc(size_t n);
void hl_scratch_free(void *p);
#endif
