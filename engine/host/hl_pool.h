/* The engine's thread pool for pipelines' parallel loops. Workers spin for a while after each
 * job before they sleep: on virtual machines an idle vCPU can take milliseconds to wake, which
 * halved parallel speed with a sleeping pool. The calling thread takes tasks too. A parallel
 * loop started while another runs (nested, or from a second host thread) runs inline. */
#ifndef HL_POOL_H
#define HL_POOL_H
#include <stdint.h>

typedef int (*hl_task_fn)(void *ctx, int index, uint8_t *closure);
/* Run f(ctx, i, closure) for i in [min, min + extent); returns the first non-zero status, or
 * HL_POOL_INTERRUPTED when Ctrl-C stopped it between tasks (hl_interrupt.h). */
enum { HL_POOL_INTERRUPTED = -100 };
int hl_pool_par_for(void *ctx, hl_task_fn f, int min, int extent, uint8_t *closure);
/* Items [0, n) of a host kernel (matrices of a batch, lanes of a sort) in chunks: about four per
 * thread when `worth` (the work pays for a hand-off) and there are threads, else one chunk run
 * on this thread. *chunk is set before any task runs: task t takes the items
 * [t * chunk, min((t + 1) * chunk, n)), reading the chunk through its ctx. */
int hl_pool_for_chunks(void *ctx, hl_task_fn f, int64_t n, int worth, int64_t *chunk);
int hl_pool_threads(void);          /* threads that run tasks, the caller included */
void hl_pool_set_threads(int n);    /* before the first parallel loop; HALUA_NUM_THREADS too */
#endif
