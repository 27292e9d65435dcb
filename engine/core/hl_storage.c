#include "hl_storage.h"
#include "hl_error.h"
#include "hl_device.h"
#include "hl_thread_exit.h"
#include <pthread.h>
#include <sys/mman.h>
#include <stdlib.h>
#include <string.h>

static size_t heap_bytes;   /* updated with __atomic builtins: storage is shared across threads */
static size_t device_bytes;      /* the part of heap_bytes in device memory */
static uint64_t device_blocks;   /* device allocations made, ever */

/* Freed large blocks are kept for reuse: a fresh large allocation is a new mapping whose every page
 * faults on first touch, which costs more than the kernels that write it. Where page tables are
 * virtualised (the 2-vCPU benchmark machines) that first touch costs about 10 us per 4 KiB even
 * inside a transparent huge page, so a 1024x1024 matmul into fresh memory ran at a third of its
 * speed. Arrays die only when Lua's GC collects them: the cache holds a whole collection's
 * worth of blocks (the GC runs after every 32 MiB or more of new arrays, hl_lua.c), so a loop's
 * outputs are written into memory the loop has used before. */
enum { CACHE_SLOTS = 256, CACHE_MIN = 1 << 18 };
static const size_t cache_max_bytes = (size_t)1 << 30;
static struct { void *data; size_t padded; } block_cache[CACHE_SLOTS];
static size_t cached_bytes;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

static void *cache_take(size_t padded) {
  void *p = NULL;
  pthread_mutex_lock(&cache_lock);
  for (int i = 0; i < CACHE_SLOTS; i++)
    if (block_cache[i].data && block_cache[i].padded == padded) {
      p = block_cache[i].data;
      block_cache[i].data = NULL;
      cached_bytes -= padded;
      break;
    }
  pthread_mutex_unlock(&cache_lock);
  return p;
}

static int cache_put(void *data, size_t padded) {
  int kept = 0;
  pthread_mutex_lock(&cache_lock);
  if (cached_bytes + padded <= cache_max_bytes)
    for (int i = 0; i < CACHE_SLOTS && !kept; i++)
      if (!block_cache[i].data) {
        block_cache[i].data = data;
        block_cache[i].padded = padded;
        cached_bytes += padded;
        kept = 1;
      }
  pthread_mutex_unlock(&cache_lock);
  return kept;
}


/* Halide may read a little past the end of a buffer in vector tails: pad allocations. */
enum { ALIGN = 64, PAD = 64 };

/* Large blocks on 2 MiB boundaries, asking for transparent huge pages (the kernels here give them
 * only on request): with 4 KiB pages a matmul's speed depended on where its operands landed,
 * varying 2x between runs from TLB misses. */
enum { HUGE_MIN = 1 << 21 };
static void *huge_alloc(size_t padded) {
  size_t rounded = (padded + HUGE_MIN - 1) / HUGE_MIN * HUGE_MIN;
  void *p = aligned_alloc(HUGE_MIN, rounded);
#ifdef MADV_HUGEPAGE
  if (p) madvise(p, rounded, MADV_HUGEPAGE);
#endif
  return p;
}

/* Small arrays (eager ops on a few elements, the REPL's scalars) are one block each: the
 * record, then the data at a 64-byte boundary. Freed blocks wait on the freeing thread's list
 * for their size, up to 4 MiB a thread: Lua's collector frees a cycle's worth of results at once,
 * and a loop of small ops then reuses those blocks instead of going through malloc. The lists
 * are per thread, so embedders' threads never wait on each other here; a thread's blocks are
 * freed when it ends. (Not under AddressSanitizer, which is to see every free.) */
enum { SMALL_HEADER = 128, SMALL_MAX = 4096 };
static const size_t small_keep_bytes = (size_t)4 << 20;
_Static_assert(sizeof(hl_storage) <= SMALL_HEADER, "the record fits before the data");
#if defined(__has_feature)   /* clang says so here; GCC defines __SANITIZE_ADDRESS__ */
#if __has_feature(address_sanitizer)
#define HL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(HL_ASAN)
enum { SMALL_LISTS = 0 };
#else
enum { SMALL_LISTS = 1 };
#endif
typedef struct {
  void *head[SMALL_MAX / ALIGN + 1];   /* each block's first word links to the next */
  size_t kept;
} small_lists;
static _Thread_local small_lists small_mine;
static _Thread_local hl_thread_exit small_exit;   /* drains the lists when the thread ends */

static void small_drain(void *p) {
  small_lists *l = p;
  for (size_t c = 0; c < sizeof l->head / sizeof l->head[0]; c++)
    while (l->head[c]) {
      void *next = *(void **)l->head[c];
      free(l->head[c]);
      l->head[c] = next;
    }
  l->kept = 0;
}

static hl_storage *small_new(size_t padded) {
  small_lists *l = &small_mine;
  void *block = SMALL_LISTS ? l->head[padded / ALIGN] : NULL;
  if (block) {
    void *next = *(void **)block;
    l->head[padded / ALIGN] = next;
    l->kept -= SMALL_HEADER + padded;
    /* the collector freed the list's blocks a cycle ago, out of the caches by now: bring the
     * next one in for writing while this op runs, or its first touch stalls the next op */
    if (next)
      for (size_t off = 0; off < SMALL_HEADER + padded && off < 4 * ALIGN; off += ALIGN) __builtin_prefetch((char *)next + off, 1, 3);
  } else if (!(block = aligned_alloc(ALIGN, SMALL_HEADER + padded))) {
    return NULL;
  }
  hl_storage *s = block;
  s->data = (char *)block + SMALL_HEADER;
  return s;
}

static void small_free_block(hl_storage *s, size_t padded) {
  small_lists *l = &small_mine;
  if (SMALL_LISTS && l->kept + SMALL_HEADER + padded <= small_keep_bytes) {
    hl_thread_exit_add(&small_exit, small_drain, l);
    *(void **)s = l->head[padded / ALIGN];
    l->head[padded / ALIGN] = s;
    l->kept += SMALL_HEADER + padded;
    return;
  }
  free(s);
}

static _Thread_local size_t warm_bytes_made;
size_t hl_storage_warm_bytes_made(void) { return warm_bytes_made; }

hl_storage *hl_storage_new(size_t nbytes) {
  size_t padded = (nbytes + PAD + ALIGN - 1) / ALIGN * ALIGN;
  if (padded <= HL_STORAGE_WARM_MAX) warm_bytes_made += padded;
  if (padded <= SMALL_MAX) {
    hl_storage *s = small_new(padded);
    if (!s) {
      hl_error("out of memory allocating %zu bytes", nbytes);
      return NULL;
    }
    memset((char *)s->data + nbytes, 0, padded - nbytes);
    *s = (hl_storage){.refcount = 1, .data = s->data, .nbytes = nbytes, .small = 1};
    __atomic_add_fetch(&heap_bytes, nbytes, __ATOMIC_RELAXED);
    return s;
  }
  hl_storage *s = malloc(sizeof *s);
  void *data = s && padded >= CACHE_MIN ? cache_take(padded) : NULL;
  if (s && !data) data = padded >= HUGE_MIN ? huge_alloc(padded) : aligned_alloc(ALIGN, padded);
  if (!data) {
    free(s);
    hl_error("out of memory allocating %zu bytes", nbytes);
    return NULL;
  }
  /* kernels write every element: only the tail padding (read by vector tails) is cleared */
  memset((char *)data + nbytes, 0, padded - nbytes);
  *s = (hl_storage){.refcount = 1, .data = data, .nbytes = nbytes};
  __atomic_add_fetch(&heap_bytes, nbytes, __ATOMIC_RELAXED);
  return s;
}

hl_storage *hl_storage_new_on(int device, size_t nbytes) {
  if (device == HL_DEVICE_CPU) return hl_storage_new(nbytes);
  hl_storage *s = calloc(1, sizeof *s);
  if (!s) {
    hl_error("out of memory");
    return NULL;
  }
  s->refcount = 1;
  s->device = device;
  s->nbytes = nbytes;
  if (hl_device_alloc(device, nbytes ? nbytes : 1, &s->device_handle, &s->device_ptr)) {
    free(s);
    return NULL;
  }
  /* device bytes count too: the GC must run when device temporaries pile up */
  __atomic_add_fetch(&heap_bytes, nbytes, __ATOMIC_RELAXED);
  __atomic_add_fetch(&device_bytes, nbytes, __ATOMIC_RELAXED);
  __atomic_add_fetch(&device_blocks, 1, __ATOMIC_RELAXED);
  return s;
}

hl_storage *hl_storage_wrap(void *data, size_t nbytes, hl_release_fn release, void *ctx, void *release_data) {
  hl_storage *s = malloc(sizeof *s);
  if (!s) {
    hl_error("out of memory");
    return NULL;
  }
  *s = (hl_storage){.refcount = 1, .data = data, .nbytes = nbytes, .borrowed = 1, .release = release, .release_ctx = ctx,
                      .release_data = release_data};
  return s;
}

void hl_storage_retain(hl_storage *s) { __atomic_add_fetch(&s->refcount, 1, __ATOMIC_RELAXED); }

void hl_storage_release(hl_storage *s) {
  if (!s) return;
  /* the last reference needs no locked instruction: whoever holds the only one is alone with it
   * (a retain needs a reference of its own). A locked one would wait for every store before it. */
  if (__atomic_load_n(&s->refcount, __ATOMIC_ACQUIRE) != 1 && __atomic_sub_fetch(&s->refcount, 1, __ATOMIC_ACQ_REL) != 0) return;
  if (s->device != HL_DEVICE_CPU) {
    __atomic_sub_fetch(&heap_bytes, s->nbytes, __ATOMIC_RELAXED);
    __atomic_sub_fetch(&device_bytes, s->nbytes, __ATOMIC_RELAXED);
    hl_device_free(s->device, s->device_handle);
  } else if (s->borrowed) {
    if (s->release) s->release(s->release_ctx, s->release_data);
  } else {
    __atomic_sub_fetch(&heap_bytes, s->nbytes, __ATOMIC_RELAXED);
    size_t padded = (s->nbytes + PAD + ALIGN - 1) / ALIGN * ALIGN;
    if (s->small) {   /* one block with its record (small_new) */
      small_free_block(s, padded);
      return;
    }
    if (padded < CACHE_MIN || !cache_put(s->data, padded)) free(s->data);
  }
  free(s);
}

size_t hl_heap_bytes(void) { return __atomic_load_n(&heap_bytes, __ATOMIC_RELAXED); }
size_t hl_device_heap_bytes(void) { return __atomic_load_n(&device_bytes, __ATOMIC_RELAXED); }
uint64_t hl_device_blocks_made(void) { return __atomic_load_n(&device_blocks, __ATOMIC_RELAXED); }

/* ---- scratch memory for pipelines' own buffers (Halide's custom_malloc) ----
 * Large scratch blocks come from the same 2 MiB-aligned huge pages and are kept for reuse:
 * with malloc's scattered 4 KiB pages, matmul's packed panels hit different cache sets in each
 * process and ran at half speed in some. A header before the block records its size. */
enum { SCRATCH_HEADER = 64, SCRATCH_LARGE = 1 << 16, SCRATCH_SLOTS = 16 };
static struct { void *block; size_t size; } scratch_free[SCRATCH_SLOTS];
static pthread_mutex_t scratch_lock = PTHREAD_MUTEX_INITIALIZER;

void *hl_scratch_alloc(size_t n) {
  size_t total = n + 2 * SCRATCH_HEADER;   /* Halide may read a little past either end */
  char *block = NULL;
  if (total >= SCRATCH_LARGE) {
    size_t rounded = (total + HUGE_MIN - 1) / HUGE_MIN * HUGE_MIN;
    pthread_mutex_lock(&scratch_lock);
    for (int i = 0; i < SCRATCH_SLOTS && !block; i++)
      if (scratch_free[i].block && scratch_free[i].size == rounded) {
        block = scratch_free[i].block;
        scratch_free[i].block = NULL;
      }
    pthread_mutex_unlock(&scratch_lock);
    if (!block) block = huge_alloc(rounded);
    total = rounded;
  } else {
    block = aligned_alloc(SCRATCH_HEADER, (total + SCRATCH_HEADER - 1) / SCRATCH_HEADER * SCRATCH_HEADER);
  }
  if (!block) return NULL;
  *(size_t *)block = total;
  return block + SCRATCH_HEADER;
}

void hl_scratch_free(void *p) {
  if (!p) return;
  char *block = (char *)p - SCRATCH_HEADER;
  size_t total = *(size_t *)block;
  if (total >= SCRATCH_LARGE) {
    pthread_mutex_lock(&scratch_lock);
    for (int i = 0; i < SCRATCH_SLOTS; i++)
      if (!scratch_free[i].block) {
        scratch_free[i].block = block;
        scratch_free[i].size = total;
        block = NULL;
        break;
      }
    pthread_mutex_unlock(&scratch_lock);
  }
  free(block);
}
