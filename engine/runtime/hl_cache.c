#include "hl_cache.h"
#include "hl_backend.h"
#include "hl_disk.h"
#include "hl_error.h"
#include "hl_notice.h"
#include "hl_thread_exit.h"
#include <malloc.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

typedef struct entry {
  uint64_t hash;
  unsigned char *key;
  size_t len;
  struct hl_kernel *kernel;   /* one reference, the entry's */
  size_t bytes;               /* what the kernel keeps (hl_kernel_bytes) */
  struct entry *next;         /* in its bucket */
  struct entry *newer, *older;   /* in the recency list: the most recently used first */
} entry;

enum { NBUCKETS = 4096 };
static entry *buckets[NBUCKETS];
/* The recency list, for the memory bound: a hit moves its entry to the front, and a new entry
 * beyond the bound evicts from the back. */
static entry *newest, *oldest;
static size_t mem_limit;   /* bytes; set once (HALUA_CACHE_MEM_MB) */
static pthread_once_t limit_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* the index, the recency list and stats */
/* Held for a whole miss (look again, compile, insert): compiles run one at a time, so threads
 * missing on the same pipeline wait for the first one's kernel instead of compiling it again,
 * and the lowering and Halide's compiler (which keep process-wide state) never run
 * concurrently. Hits take only `lock`. */
static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;
static hl_cache_stats stats;
static unsigned long generation;   /* hl_cache_generation: atomic, moved under `lock` */
static long memo_hits;             /* hl_cache_count_hits: atomic, added to stats.hits */
static _Thread_local hl_key scratch;   /* reused: eager ops build a key per call */
static _Thread_local hl_thread_exit scratch_exit;   /* frees it when its thread ends */
static void free_scratch(void *k) { hl_key_free(k); }

static entry *find(uint64_t h, const hl_key *k) {
  for (entry *e = buckets[h % NBUCKETS]; e; e = e->next)
    if (e->hash == h && e->len == k->len && memcmp(e->key, k->bytes, k->len) == 0) return e;
  return NULL;
}

static void unlink_recency(entry *e) {
  if (e->newer) e->newer->older = e->older;
  else newest = e->older;
  if (e->older) e->older->newer = e->newer;
  else oldest = e->newer;
  e->newer = e->older = NULL;
}

static void push_newest(entry *e) {
  e->older = newest;
  e->newer = NULL;
  if (newest) newest->newer = e;
  newest = e;
  if (!oldest) oldest = e;
}

/* The kernel, retained for the caller (an entry may be evicted, and its kernel freed, as soon
 * as `lock` is released). */
static struct hl_kernel *find_locked(const hl_key *k) {
  pthread_mutex_lock(&lock);
  entry *e = find(k->hash, k);
  struct hl_kernel *kernel = e ? e->kernel : NULL;
  if (e) {
    stats.hits++;
    if (newest != e) {
      unlink_recency(e);
      push_newest(e);
    }
    hl_kernel_retain(kernel);
  }
  pthread_mutex_unlock(&lock);
  return kernel;
}

/* Takes e out of the index (under `lock`); the caller releases its kernel and frees it after
 * unlocking (the last release of a kernel takes the compiler's lock). */
static void remove_locked(entry *e) {
  entry **p = &buckets[e->hash % NBUCKETS];
  while (*p != e) p = &(*p)->next;
  *p = e->next;
  unlink_recency(e);
  __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
  stats.entries--;
  stats.mem_bytes -= e->bytes;
}

static void free_entry(entry *e) {
  hl_kernel_release(e->kernel);   /* freed now unless a program or a running op holds it */
  free(e->key);
  free(e);
}

static void read_limit(void) {
  mem_limit = (size_t)HL_CACHE_MEM_MB_DEFAULT << 20;
  const char *env = getenv("HALUA_CACHE_MEM_MB");
  if (!env || !*env) return;
  char *end;
  double mb = strtod(env, &end);
  if (*end || !(mb > 0) || mb > 1e9)
    fprintf(stderr, "halua: warning: HALUA_CACHE_MEM_MB=%s is not a positive number of megabytes; using %d\n", env,
            HL_CACHE_MEM_MB_DEFAULT);
  else
    mem_limit = (size_t)(mb * 1048576.0);
}


static double now_ms(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec * 1e3 + t.tv_nsec * 1e-6;
}

/* A miss of the memory cache: the disk cache's entry when there is a valid one, else a compile
 * (into a new entry, for the pipelines that can live on disk). Under compile_lock. */
static struct hl_kernel *compile_or_load(const hl_graph *g, const char *name, int *loaded) {
  *loaded = 0;
  char *sig = hl_kernel_disk_signature(g);
  if (!sig) return hl_kernel_compile(g, name, NULL);
  /* the disk key: the backend's signature, then the IR in its canonical order */
  hl_key ir = {0};
  size_t slen = strlen(sig) + 1;
  unsigned char *key = hl_graph_canonical_key(g, &ir) ? NULL : malloc(slen + ir.len);
  if (!key) {
    free(sig);
    hl_key_free(&ir);
    return hl_kernel_compile(g, name, NULL);
  }
  memcpy(key, sig, slen);
  memcpy(key + slen, ir.bytes, ir.len);
  size_t len = slen + ir.len;
  free(sig);
  hl_key_free(&ir);
  char tmp[4400];
  double t0 = now_ms();
  void *bytes;
  size_t nbytes;
  struct hl_kernel *k = hl_disk_read("", key, len, &bytes, &nbytes) == 0 ? hl_kernel_load(g, name, bytes, nbytes) : NULL;
  free(bytes);
  double load_ms = now_ms() - t0;
  *loaded = k != NULL;
  if (k) {
    pthread_mutex_lock(&lock);
    stats.disk_hits++;
    stats.disk_load_ms += load_ms;
    pthread_mutex_unlock(&lock);
    if (hl_log_compiles()) fprintf(stderr, "halua: loaded %s from the disk cache in %.2f ms (%d nodes)\n", name, load_ms, g->nnodes);
  } else {
    pthread_mutex_lock(&lock);
    stats.disk_misses++;
    pthread_mutex_unlock(&lock);
    int have_tmp = hl_disk_temp(tmp, sizeof tmp, ".o") == 0;
    k = hl_kernel_compile(g, name, have_tmp ? tmp : NULL);
    /* the compiled file becomes the entry (when it could not be made, the kernel was JIT-compiled;
     * when it cannot be stored, a full disk say, it stays in memory only) */
    struct stat st;
    if (have_tmp && k && stat(tmp, &st) == 0 && st.st_size > 0) {
      hl_disk_store("", key, len, tmp);
    } else if (have_tmp) {   /* a failed compile, or one the JIT made */
      unlink(tmp);
    }
  }
  free(key);
  return k;
}

struct hl_kernel *hl_cache_get(const hl_graph *g, const char *name) {
  pthread_once(&limit_once, read_limit);
  hl_thread_exit_add(&scratch_exit, free_scratch, &scratch);
  hl_graph_key(g, &scratch);
  struct hl_kernel *k = find_locked(&scratch);
  if (k) return k;
  pthread_mutex_lock(&compile_lock);
  if ((k = find_locked(&scratch))) {   /* another thread compiled it while we waited */
    pthread_mutex_unlock(&compile_lock);
    return k;
  }
  /* a jitted program's compile says so when it takes more than a second: here, around the
   * compile itself, so that threads waiting for another thread's compile print nothing (the
   * compiling thread does); eager single-primitive kernels compile quickly and stay silent */
  hl_notice *notice = NULL;
  if (!g->dynamic) {
    char what[200];
    snprintf(what, sizeof what, "compiling %s (%d ops)", name ? name : "jit", g->nnodes);
    notice = hl_notice_begin(1000, what);
  }
  int loaded;
  k = compile_or_load(g, name ? name : "jit", &loaded);
  hl_notice_end(notice);
  entry *e = k ? malloc(sizeof *e) : NULL;
  unsigned char *kb = k ? malloc(scratch.len) : NULL;
  if (!e || !kb) {
    pthread_mutex_unlock(&compile_lock);
    free(e);
    free(kb);
    if (k) {
      hl_kernel_release(k);
      hl_error("out of memory caching a kernel");
    }
    return NULL;
  }
  memcpy(kb, scratch.bytes, scratch.len);
  *e = (entry){.hash = scratch.hash, .key = kb, .len = scratch.len, .kernel = k, .bytes = hl_kernel_bytes(k)};
  hl_kernel_retain(k);   /* the caller's reference; the entry keeps the first */
  entry *evicted = NULL;
  pthread_mutex_lock(&lock);
  e->next = buckets[scratch.hash % NBUCKETS];
  buckets[scratch.hash % NBUCKETS] = e;
  push_newest(e);
  stats.entries++;
  stats.misses++;
  stats.mem_bytes += e->bytes;
  if (!loaded) stats.compile_ms += hl_kernel_compile_ms(k);
  /* over the bound: the least recently used entries go (never the new one); a kernel that a
   * jitted function or a running op still holds is freed when they let it go. Eager ops find
   * their kernels in their threads' memos (hl_eager_memo.h) without passing here, and mark them
   * used: an entry whose kernel is marked goes to the front instead, once, and its mark is
   * cleared (the "clock" approximation of least recently used). */
  long second_chances = stats.entries;
  while (stats.mem_bytes > mem_limit && stats.entries > 1) {
    entry *old = oldest != e ? oldest : e->newer;
    if (second_chances-- > 0 && hl_kernel_take_use(old->kernel)) {
      unlink_recency(old);
      push_newest(old);
      continue;
    }
    remove_locked(old);
    old->next = evicted;
    evicted = old;
    stats.evictions++;
  }
  pthread_mutex_unlock(&lock);
  pthread_mutex_unlock(&compile_lock);
  while (evicted) {
    entry *n = evicted->next;
    free_entry(evicted);
    evicted = n;
  }
  if (hl_log_compiles() && !loaded) {
    double ph[4];
    hl_kernel_compile_phases(k, ph);
    int jobs, distinct, parts = hl_kernel_compile_parts(k, &jobs, &distinct);
    char phases[128], repeats[96] = "";
    if (jobs > 1)   /* (the processes' lowering, Halide and LLVM overlap: one figure for them) */
      snprintf(phases, sizeof phases, "%d pipelines compiled by %d processes at once in %.1f", parts, jobs, ph[2]);
    else
      snprintf(phases, sizeof phases, "lowering %.1f, Halide %.1f, LLVM %.1f", ph[0], ph[1], ph[2]);
    if (distinct < parts)   /* (parts with one program share its code: hl_partition.h) */
      snprintf(repeats, sizeof repeats, "; %d distinct programs among its %d pipelines, each compiled once", distinct, parts);
    fprintf(stderr, "halua: compiled %s in %.1f ms (%d nodes; cache miss: no pipeline with this %s; %s, link %.1f%s; keeps %.0f KB)\n",
            name, hl_kernel_compile_ms(k), g->nnodes, g->dynamic ? "primitive, dtype, rank and attributes" : "IR and input signature",
            phases, ph[3], repeats, hl_kernel_bytes(k) / 1024.0);
  }
  return k;
}

unsigned long hl_cache_generation(void) { return __atomic_load_n(&generation, __ATOMIC_ACQUIRE); }

void hl_cache_count_hits(long n) { __atomic_add_fetch(&memo_hits, n, __ATOMIC_RELAXED); }

hl_cache_stats hl_cache_info(void) {
  pthread_once(&limit_once, read_limit);
  pthread_mutex_lock(&lock);
  hl_cache_stats s = stats;
  s.hits += __atomic_load_n(&memo_hits, __ATOMIC_RELAXED);
  s.mem_limit = mem_limit;
  pthread_mutex_unlock(&lock);
  return s;
}

int hl_cache_clear(int disk) {
  /* every entry goes; the kernels that jitted functions still hold are freed when those are */
  pthread_mutex_lock(&lock);
  entry *all = newest;
  for (int b = 0; b < NBUCKETS; b++) buckets[b] = NULL;
  newest = oldest = NULL;
  stats = (hl_cache_stats){0};
  __atomic_store_n(&memo_hits, 0, __ATOMIC_RELAXED);
  __atomic_add_fetch(&generation, 1, __ATOMIC_RELEASE);
  pthread_mutex_unlock(&lock);
  while (all) {
    entry *n = all->older;
    free_entry(all);
    all = n;
  }
#ifdef __GLIBC__
  malloc_trim(0);   /* what the freed kernels held goes back to the system, not only to malloc */
#endif
  if (disk && hl_disk_clear()) return hl_error("cache_clear: could not remove every entry of %s", hl_disk_dir());
  return 0;
}
