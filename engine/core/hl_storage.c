#include "hl_storage.h"
#include "hl_tls.h"
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

/* Halide may read a little past the end of a buffer in vector tails: pad allocations. */
enum { ALIGN = 64, PAD = 64 };

/* Large blocks are whole 2 MiB pages of a mapping of their own, on 2 MiB boundaries and asking
 * for transparent huge pages (the kernels here give them only on request): with 4 KiB pages a
 * matmul's speed depended on where its operands landed, varying 2x between runs from TLB
 * misses. Under AddressSanitizer they come from aligned_alloc, which it watches. */
enum { HUGE_MIN = 1 << 21 };
#if defined(__has_feature)   /* clang says so here; GCC defines __SANITIZE_ADDRESS__ */
#if __has_feature(address_sanitizer)
#define HL_ASAN 1
#endif
#endif
#if defined(__SANITIZE_ADDRESS__) || defined(HL_ASAN)
enum { MAPPED_BLOCKS = 0 };
#else
enum { MAPPED_BLOCKS = 1 };
#endif
static size_t huge_rounded(size_t n) { return (n + HUGE_MIN - 1) / HUGE_MIN * HUGE_MIN; }

static void *huge_alloc(size_t rounded) {
  char *p;
  if (MAPPED_BLOCKS) {
    /* map 2 MiB more than asked, then unmap what lies before the first 2 MiB boundary and
     * after the block (pieces of a mapping unmap on their own: the cache splits blocks) */
    char *m = mmap(NULL, rounded + HUGE_MIN, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (m == MAP_FAILED) return NULL;
    p = (char *)(((uintptr_t)m + HUGE_MIN - 1) & ~(uintptr_t)(HUGE_MIN - 1));
    if (p > m) munmap(m, (size_t)(p - m));
    munmap(p + rounded, (size_t)(m + HUGE_MIN - p));
  } else if (!(p = aligned_alloc(HUGE_MIN, rounded))) {
    return NULL;
  }
  return p;
}

/* Which 2 MiB pages of a large block ask for huge pages: those that hold an array's data. The
 * page after an array whose size is a whole number of 2 MiB pages (2, 4, 64 MiB...) holds only
 * its pad, which is written (hl_storage_new) and read: as a huge page it took 2 MiB of memory
 * for 64 bytes, half again a 4 MiB array's. Now it takes 4 KiB pages. A cached block keeps how
 * many of its bytes are advised huge (the rest advised not), so that a block reused for arrays
 * of one size makes no system call. */
static void advise(char *p, size_t from, size_t to, int huge) {
#if defined(MADV_HUGEPAGE) && defined(MADV_NOHUGEPAGE)
  if (to > from) madvise(p + from, to - from, huge ? MADV_HUGEPAGE : MADV_NOHUGEPAGE);
#else
  (void)p, (void)from, (void)to, (void)huge;
#endif
}

/* Freed large blocks are kept for reuse: a fresh large allocation is new memory whose every page
 * faults on first touch, which costs more than the kernels that write it. Where page tables are
 * virtualised (the 2-vCPU benchmark machines) that first touch costs about 10 us per 4 KiB even
 * inside a transparent huge page, so a 1024x1024 matmul into fresh memory ran at a third of its
 * speed. Arrays die only when Lua's GC collects them: the cache holds a whole collection's
 * worth of blocks (the GC runs after every 32 MiB or more of new arrays, hl_lua.c), so a loop's
 * outputs are written into memory the loop has used before.
 * A block under 2 MiB (from aligned_alloc) serves its own size only. A mapped block serves any
 * request of its size or less, in whole 2 MiB pages, and what it has left stays in the cache:
 * when the sizes a program makes change (the next row of a benchmark, another batch size), the
 * memory the last ones had touched is reused. Keeping only exact sizes, a 1024x1024 matmul after
 * rows of 64 MiB arrays took fresh pages for its results until the next collection, and ran at
 * half its speed (0.35-0.42 s of system time in its page faults, 16 calls) in slow hours.
 * Pieces in the cache are not merged again. They go back to the system when the cache is full,
 * or all at once when an allocation fails (cache_drain). */
enum { CACHE_SLOTS = 256, CACHE_MIN = 1 << 18 };
static const size_t cache_max_bytes = (size_t)1 << 30;
static struct { void *data; size_t size, huge; } block_cache[CACHE_SLOTS];   /* huge: see advise */
static size_t cached_bytes;
static pthread_mutex_t cache_lock = PTHREAD_MUTEX_INITIALIZER;

/* a cached block of `size` bytes: size is the padded size under 2 MiB, else whole 2 MiB pages */
static size_t cached_size(size_t padded) { return padded >= HUGE_MIN ? huge_rounded(padded) : padded; }
/* the bytes of an array's block advised huge: the 2 MiB pages its data reaches (advise) */
static size_t huge_pages(size_t nbytes, size_t padded) { return padded >= HUGE_MIN ? huge_rounded(nbytes) : 0; }

static void *cache_take(size_t size, size_t *huge) {
  void *p = NULL;
  int best = -1;
  pthread_mutex_lock(&cache_lock);
  for (int i = 0; i < CACHE_SLOTS; i++) {
    size_t have = block_cache[i].size;
    if (!block_cache[i].data || have < size) continue;
    if (have == size) {
      best = i;
      break;
    }
    /* a larger mapped block, the smallest of them */
    if (MAPPED_BLOCKS && size >= HUGE_MIN && (best < 0 || have < block_cache[best].size)) best = i;
  }
  if (best >= 0) {
    p = block_cache[best].data;
    size_t had = block_cache[best].huge;
    *huge = had < size ? had : size;
    cached_bytes -= size;
    if (block_cache[best].size > size) {   /* the rest stays, in the same slot */
      block_cache[best].data = (char *)p + size;
      block_cache[best].size -= size;
      block_cache[best].huge = had > size ? had - size : 0;
    } else {
      block_cache[best].data = NULL;
    }
  }
  pthread_mutex_unlock(&cache_lock);
  return p;
}

static int cache_put(void *data, size_t size, size_t huge) {
  int kept = 0;
  pthread_mutex_lock(&cache_lock);
  if (cached_bytes + size <= cache_max_bytes)
    for (int i = 0; i < CACHE_SLOTS && !kept; i++)
      if (!block_cache[i].data) {
        block_cache[i].data = data;
        block_cache[i].size = size;
        block_cache[i].huge = huge;
        cached_bytes += size;
        kept = 1;
      }
  pthread_mutex_unlock(&cache_lock);
  return kept;
}

/* a block that is not cached: mapped pages from 2 MiB, aligned_alloc's below */
static void *fresh_block(size_t size) { return size >= HUGE_MIN ? huge_alloc(size) : aligned_alloc(ALIGN, size); }
static void block_free(void *p, size_t size) {
  if (MAPPED_BLOCKS && size >= HUGE_MIN) munmap(p, size);
  else free(p);
}

/* gives every cached block back to the system (an allocation failed: the memory may be here) */
static void cache_drain(void) {
  struct { void *data; size_t size; } all[CACHE_SLOTS];
  int n = 0;
  pthread_mutex_lock(&cache_lock);
  for (int i = 0; i < CACHE_SLOTS; i++)
    if (block_cache[i].data) {
      all[n].data = block_cache[i].data;
      all[n++].size = block_cache[i].size;
      block_cache[i].data = NULL;
    }
  cached_bytes = 0;
  pthread_mutex_unlock(&cache_lock);
  for (int i = 0; i < n; i++) block_free(all[i].data, all[i].size);
}

/* a new large block of `size` (cached_size) whose first `huge` bytes ask for huge pages (0 under
 * 2 MiB): from the cache, else fresh (after emptying the cache, if the system has no more) */
static void *large_alloc(size_t size, size_t huge) {
  size_t had = SIZE_MAX;   /* SIZE_MAX: a fresh block (cache_take sets it for a cached one) */
  char *p = cache_take(size, &had);
  if (!p && !(p = fresh_block(size))) {
    cache_drain();
    p = fresh_block(size);
  }
  if (!p || size < HUGE_MIN) return p;
  if (had == SIZE_MAX) {   /* fresh */
    advise(p, 0, huge, 1);
    advise(p, huge, size, 0);
  } else if (had < huge) {
    advise(p, had, huge, 1);
  } else if (had > huge) {
    advise(p, huge, had, 0);
  }
  return p;
}

static void large_free(void *p, size_t size, size_t huge) {
  if (!cache_put(p, size, huge)) block_free(p, size);
}

/* Small arrays (eager ops on a few elements, the REPL's scalars) are one block each: the
 * record, then the data at a 64-byte boundary. Freed blocks wait on the freeing thread's list
 * for their size, up to 8 MiB a thread: Lua's collector frees a cycle's worth of results at once,
 * and a loop of small ops then reuses those blocks instead of going through malloc. (A collection
 * of the early rule, hl_lua_value.c, frees 2 MiB of arrays' data or more, and their records
 * besides; with 4 MiB kept, `c * 2 + c` on 1,000 float32 took part of its 4 kB blocks from
 * malloc each round, and ran 10-15% slower.) The lists
 * are per thread, so embedders' threads never wait on each other here; a thread's blocks are
 * freed when it ends. (Not under AddressSanitizer, which is to see every free.) */
enum { SMALL_HEADER = 128, SMALL_MAX = 4096 };
static const size_t small_keep_bytes = (size_t)8 << 20;
_Static_assert(sizeof(hl_storage) <= SMALL_HEADER, "the record fits before the data");
enum { SMALL_LISTS = MAPPED_BLOCKS };   /* (both off under AddressSanitizer) */
/* A thread's part of this file's state, in one thread-local (each is a call to __tls_get_addr
 * from a shared library): its lists of small blocks, the bytes of warm-sized arrays it made, and
 * the bytes of host arrays it made less those it freed since it last added them to heap_bytes.
 * Host bytes are counted per thread and added to the process's count in steps of HEAP_STEP:
 * a locked add for each result and a locked subtract for each free had cost every eager op two
 * instructions that wait for all the stores before them. */
enum { HEAP_STEP = 64 << 10 };
typedef struct {
  void *head[SMALL_MAX / ALIGN + 1];   /* each block's first word links to the next */
  size_t kept;
  size_t warm_made;
  ptrdiff_t heap_delta;   /* |heap_delta| < HEAP_STEP */
  hl_thread_exit exit;    /* drains the lists and adds heap_delta when the thread ends */
} thread_state;
static _Thread_local thread_state mine;

static void thread_end(void *p) {
  thread_state *t = p;
  for (size_t c = 0; c < sizeof t->head / sizeof t->head[0]; c++)
    while (t->head[c]) {
      void *next = *(void **)t->head[c];
      free(t->head[c]);
      t->head[c] = next;
    }
  t->kept = 0;
  __atomic_add_fetch(&heap_bytes, (size_t)t->heap_delta, __ATOMIC_RELAXED);
  t->heap_delta = 0;
}

/* host bytes made (n > 0) or freed (n < 0) by the calling thread */
static inline void heap_count(thread_state *t, ptrdiff_t n) {
  hl_thread_exit_add(&t->exit, thread_end, t);
  ptrdiff_t d = t->heap_delta + n;
  if (d >= HEAP_STEP || d <= -HEAP_STEP) {
    __atomic_add_fetch(&heap_bytes, (size_t)d, __ATOMIC_RELAXED);
    d = 0;
  }
  t->heap_delta = d;
}

static hl_storage *small_new(thread_state *l, size_t padded) {
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

/* (the caller counted the freed bytes, heap_count, which registered thread_end) */
static void small_free_block(thread_state *l, hl_storage *s, size_t padded) {
  if (SMALL_LISTS && l->kept + SMALL_HEADER + padded <= small_keep_bytes) {
    *(void **)s = l->head[padded / ALIGN];
    l->head[padded / ALIGN] = s;
    l->kept += SMALL_HEADER + padded;
    return;
  }
  free(s);
}

size_t hl_storage_warm_bytes_made(void) { return mine.warm_made; }

hl_storage *hl_storage_new(size_t nbytes) {
  size_t padded = (nbytes + PAD + ALIGN - 1) / ALIGN * ALIGN;
  thread_state *t = &mine;
  HL_TLS_KEEP(t);
  if (padded <= HL_STORAGE_WARM_MAX) t->warm_made += padded;
  if (padded <= SMALL_MAX) {
    hl_storage *s = small_new(t, padded);
    if (!s) {
      hl_error("out of memory allocating %zu bytes", nbytes);
      return NULL;
    }
    memset((char *)s->data + nbytes, 0, padded - nbytes);
    *s = (hl_storage){.refcount = 1, .data = s->data, .nbytes = nbytes, .small = 1};
    heap_count(t, (ptrdiff_t)nbytes);
    return s;
  }
  hl_storage *s = malloc(sizeof *s);
  void *data = !s ? NULL : padded >= CACHE_MIN ? large_alloc(cached_size(padded), huge_pages(nbytes, padded)) : aligned_alloc(ALIGN, padded);
  if (!data) {
    free(s);
    hl_error("out of memory allocating %zu bytes", nbytes);
    return NULL;
  }
  /* kernels write every element: only the tail padding (read by vector tails) is cleared */
  memset((char *)data + nbytes, 0, padded - nbytes);
  *s = (hl_storage){.refcount = 1, .data = data, .nbytes = nbytes};
  heap_count(t, (ptrdiff_t)nbytes);
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
    thread_state *t = &mine;
    HL_TLS_KEEP(t);
    heap_count(t, -(ptrdiff_t)s->nbytes);
    size_t padded = (s->nbytes + PAD + ALIGN - 1) / ALIGN * ALIGN;
    if (s->small) {   /* one block with its record (small_new) */
      small_free_block(t, s, padded);
      return;
    }
    if (padded >= CACHE_MIN) large_free(s->data, cached_size(padded), huge_pages(s->nbytes, padded));
    else free(s->data);
  }
  free(s);
}

/* (the calling thread's count is exact; another thread's may be up to HEAP_STEP away) */
size_t hl_heap_bytes(void) {
  ptrdiff_t all = (ptrdiff_t)__atomic_load_n(&heap_bytes, __ATOMIC_RELAXED) + mine.heap_delta;
  return all > 0 ? (size_t)all : 0;
}
size_t hl_device_heap_bytes(void) { return __atomic_load_n(&device_bytes, __ATOMIC_RELAXED); }
uint64_t hl_device_blocks_made(void) { return __atomic_load_n(&device_blocks, __ATOMIC_RELAXED); }

/* ---- scratch memory for pipelines' own buffers (Halide's custom_malloc) ----
 * Large scratch blocks are large blocks like arrays' (above), from the same cache: with
 * malloc's scattered 4 KiB pages, matmul's packed panels hit different cache sets in each
 * process and ran at half speed in some. A header before the block records its size. */
enum { SCRATCH_HEADER = 64, SCRATCH_LARGE = 1 << 16 };

void *hl_scratch_alloc(size_t n) {
  size_t total = n + 2 * SCRATCH_HEADER;   /* Halide may read a little past either end */
  char *block;
  if (total >= SCRATCH_LARGE) {
    total = huge_rounded(total);
    block = large_alloc(total, total);
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
  if (total >= SCRATCH_LARGE) large_free(block, total, total);
  else free(block);
}
