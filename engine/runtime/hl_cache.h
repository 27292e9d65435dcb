/* The process-wide cache of compiled kernels, keyed on the canonical IR bytes (+ target, which is
 * fixed per process for now). Thread-safe: embedders run one lua_State per thread over it. A miss
 * looks in the disk cache (hl_disk.h) before compiling, and a compile it can keep goes there. */
#ifndef HL_CACHE_H
#define HL_CACHE_H
#include "hl_ir.h"

struct hl_kernel;
typedef struct {
  long entries, hits, misses;
  double compile_ms;
  long disk_hits, disk_misses;   /* the disk cache (hl_disk.h): entries loaded, and not found or damaged */
  double disk_load_ms;
} hl_cache_stats;

/* The kernel for g, compiled on a miss; `name` is for messages. */
struct hl_kernel *hl_cache_get(const hl_graph *g, const char *name);
hl_cache_stats hl_cache_info(void);
/* Forgets the index (kernels in use stay); with disk, also removes the disk cache's entries. */
int hl_cache_clear(int disk);
#endif
