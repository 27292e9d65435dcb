#include "hl_cache.h"
#include "hl_backend.h"
#include "hl_disk.h"
#include "hl_error.h"
#include "hl_notice.h"
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
  struct hl_kernel *kernel;
  struct entry *next;
} entry;

enum { NBUCKETS = 4096 };
static entry *buckets[NBUCKETS];
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;   /* the index and stats */
/* Held for a whole miss (look again, compile, insert): compiles run one at a time, so threads
 * missing on the same pipeline wait for the first one's kernel instead of compiling it again,
 * and the lowering and Halide's compiler (which keep process-wide state) never run
 * concurrently. Hits take only `lock`. */
static pthread_mutex_t compile_lock = PTHREAD_MUTEX_INITIALIZER;
static hl_cache_stats stats;
static _Thread_local hl_key scratch;   /* reused: eager ops build a key per call */
/* freed when its thread ends (hosts may run ops on many short-lived threads) */
static pthread_key_t scratch_key;
static pthread_once_t scratch_once = PTHREAD_ONCE_INIT;
static void free_scratch(void *k) { hl_key_free(k); }
static void make_scratch_key(void) { pthread_key_create(&scratch_key, free_scratch); }

static entry *find(uint64_t h, const hl_key *k) {
  for (entry *e = buckets[h % NBUCKETS]; e; e = e->next)
    if (e->hash == h && e->len == k->len && memcmp(e->key, k->bytes, k->len) == 0) return e;
  return NULL;
}

/* The kernel, not the entry: hl_cache_clear may free the entry as soon as `lock` is released
 * (kernels are never freed). */
static struct hl_kernel *find_locked(const hl_key *k) {
  pthread_mutex_lock(&lock);
  entry *e = find(k->hash, k);
  struct hl_kernel *kernel = e ? e->kernel : NULL;
  if (e) stats.hits++;
  pthread_mutex_unlock(&lock);
  return kernel;
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
  char path[4400], tmp[4400];
  double t0 = now_ms();
  struct hl_kernel *k = hl_disk_find("", key, len, path, sizeof path) == 0 ? hl_kernel_load(g, name, path) : NULL;
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
    int have_tmp = hl_disk_temp(tmp, sizeof tmp, ".so") == 0;
    k = hl_kernel_compile(g, name, have_tmp ? tmp : NULL);
    /* the shared object becomes the entry (when it could not be made, the kernel was JIT-compiled;
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
  if (!scratch.bytes) {   /* this thread's first lookup */
    pthread_once(&scratch_once, make_scratch_key);
    pthread_setspecific(scratch_key, &scratch);
  }
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
      hl_kernel_free(k);
      hl_error("out of memory caching a kernel");
    }
    return NULL;
  }
  memcpy(kb, scratch.bytes, scratch.len);
  *e = (entry){.hash = scratch.hash, .key = kb, .len = scratch.len, .kernel = k};
  pthread_mutex_lock(&lock);
  e->next = buckets[scratch.hash % NBUCKETS];
  buckets[scratch.hash % NBUCKETS] = e;
  stats.entries++;
  stats.misses++;
  if (!loaded) stats.compile_ms += hl_kernel_compile_ms(k);
  pthread_mutex_unlock(&lock);
  pthread_mutex_unlock(&compile_lock);
  if (hl_log_compiles() && !loaded) {
    double ph[4];
    hl_kernel_compile_phases(k, ph);
    fprintf(stderr, "halua: compiled %s in %.1f ms (%d nodes; cache miss: no pipeline with this %s; lowering %.1f, Halide %.1f, LLVM %.1f, link %.1f)\n",
            name, hl_kernel_compile_ms(k), g->nnodes, g->dynamic ? "primitive, dtype, rank and attributes" : "IR and input signature",
            ph[0], ph[1], ph[2], ph[3]);
  }
  return k;
}

hl_cache_stats hl_cache_info(void) {
  pthread_mutex_lock(&lock);
  hl_cache_stats s = stats;
  pthread_mutex_unlock(&lock);
  return s;
}

int hl_cache_clear(int disk) {
  /* Kernels may still be referenced by jitted functions' entries: those hold the graph and
   * recompile through here, so freeing is safe only for kernels nobody holds. We keep compiled
   * code alive (it is small) and only forget the index. */
  pthread_mutex_lock(&lock);
  for (int b = 0; b < NBUCKETS; b++) {
    for (entry *e = buckets[b]; e;) {
      entry *n = e->next;
      free(e->key);
      free(e);
      e = n;
    }
    buckets[b] = NULL;
  }
  stats = (hl_cache_stats){0};
  pthread_mutex_unlock(&lock);
  if (disk && hl_disk_clear()) return hl_error("cache_clear: could not remove every entry of %s", hl_disk_dir());
  return 0;
}
