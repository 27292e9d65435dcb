/* Refcounted host storage, 64-byte aligned, with process-wide heap accounting.
 * Wrapped host memory (zero-copy embedding) carries a release callback instead. */
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
  hl_release_fn release;   /* NULL: memory is ours (aligned_alloc) */
  void *release_ctx;
} hl_storage;

/* Uninitialised contents (callers write every element); NULL + hl_error on failure. */
hl_storage *hl_storage_new(size_t nbytes);
hl_storage *hl_storage_new_on(int device, size_t nbytes);
hl_storage *hl_storage_wrap(void *data, size_t nbytes, hl_release_fn release, void *ctx);
void hl_storage_retain(hl_storage *s);
void hl_storage_release(hl_storage *s);

/* Bytes of engine storage alive now (ours, not wrapped). The Lua layer steps its GC on this. */
size_t hl_heap_bytes(void);
/* Memory for pipelines' internal buffers (Halide's custom_malloc/custom_free): 64-byte aligned,
 * large blocks huge-page backed and reused. */
void *hl_scratch_alloc(size_t n);
void hl_scratch_free(void *p);
#endif
