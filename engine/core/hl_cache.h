/* The process-wide cache of compiled kernels, keyed on the canonical IR bytes (+ target, which is
 * fixed per process for now). Thread-safe: embedders run one lua_State per thread over it. */
#ifndef HL_CACHE_H
#define HL_CACHE_H
#include "hl_ir.h"

struct hl_kernel;
typedef struct {
  long entries, hits, misses;
  double compile_ms;
} hl_cache_stats;

/* The kernel for g, compiled on a miss; `name` is for messages. */
struct hl_kernel *hl_cache_get(const hl_graph *g, const char *name);
hl_cache_stats hl_cache_info(void);
void hl_cache_clear(void);
#endif
