/* The process-wide cache of compiled kernels, keyed on the canonical IR bytes (+ target, which is
 * fixed per process for now). Thread-safe: embedders run one lua_State per thread over it. A miss
 * looks in the disk cache (hl_disk.h) before compiling, and a compile it can keep goes there.
 * Bounded: when the kernels' memory (hl_kernel_bytes) passes HALUA_CACHE_MEM_MB, the least
 * recently used entries are evicted and their code freed once no program holds it. */
#ifndef HL_CACHE_H
#define HL_CACHE_H
#include "hl_ir.h"

struct hl_kernel;
typedef struct {
  long entries, hits, misses;
  double compile_ms;
  long disk_hits, disk_misses;   /* the disk cache (hl_disk.h): entries loaded, and not found or damaged */
  double disk_load_ms;
  size_t mem_bytes;   /* what the cached kernels keep */
  size_t mem_limit;   /* the bound on it */
  long evictions;     /* entries evicted to stay within it */
} hl_cache_stats;

enum { HL_CACHE_MEM_MB_DEFAULT = 512 };

/* The kernel for g, compiled on a miss, retained for the caller (hl_kernel_release it when done);
 * `name` is for messages. */
struct hl_kernel *hl_cache_get(const hl_graph *g, const char *name);
hl_cache_stats hl_cache_info(void);
/* Moves whenever an entry leaves the cache (evicted or cleared): a lookup remembered elsewhere
 * (the eager ops' memo, hl_eager_memo.h) stands while it has not moved. */
unsigned long hl_cache_generation(void);
/* Counts n lookups answered from such a memory as hits (cache_info's hits). */
void hl_cache_count_hits(long n);
/* Empties the cache, freeing every kernel no program holds; with disk, also removes the disk
 * cache's entries. */
int hl_cache_clear(int disk);
#endif
