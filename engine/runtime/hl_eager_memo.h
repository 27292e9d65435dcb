/* The eager ops' memo: per thread, the kernel each recent (primitive, operand signature) got from
 * the kernel cache, so that a repeated eager op skips building its one-node graph, serialising
 * and hashing its key and taking the cache's lock. The signature holds exactly what decides that
 * graph's key (hl_ir.c, put_graph, for a dynamic graph): the primitive, its attributes by its
 * layout, the result's dtype and rank, each operand's dtype, rank and stride class, the device. */
#ifndef HL_EAGER_MEMO_H
#define HL_EAGER_MEMO_H
#include "hl_ir.h"

struct hl_kernel;
enum { HL_MEMO_MAX_IN = 4 };   /* ops with more operands go to the cache each time */

typedef struct {
  int32_t prim, nin, device, dtype, ndim;
  int32_t in[HL_MEMO_MAX_IN][3];   /* dtype, rank, stride class */
  int32_t unused;                  /* (zero: no padding bytes, signatures compare as bytes) */
  int64_t i[2 * HL_MAX_DIMS];      /* the attributes the key holds; the rest zero */
  double f;
} hl_eager_sig;

/* Fills sig for prim over `in` (their stride classes in `stride`) into `out`; 0 when the op can
 * be remembered, -1 when it cannot (too many operands). */
int hl_eager_sig_make(hl_eager_sig *sig, int prim, int nin, const hl_array *const *in, const int *stride,
                      const hl_attrs *attrs, const hl_array *out);
/* The remembered kernel, retained for the caller, or NULL. A hit marks the kernel used, which
 * keeps a hot kernel in the cache (hl_kernel_note_use: the cache evicts the least recently used,
 * and a memo hit does not pass through it). */
struct hl_kernel *hl_eager_memo_find(const hl_eager_sig *sig);
/* Remembers k (the memo takes its own reference). */
void hl_eager_memo_put(const hl_eager_sig *sig, struct hl_kernel *k);
/* Lets go of this thread's remembered kernels (after hl_cache_clear, so that they are freed). */
void hl_eager_memo_forget(void);
/* Adds the hits this thread's memo has answered to the cache's count (hl_cache_count_hits),
 * which takes them in batches: before hl_cache_info, for a count that is exact for the thread. */
void hl_eager_memo_count_hits(void);

/* The memo's lane for the bulk of eager arithmetic: an elementwise primitive without attributes
 * over operands of one shape that are each contiguous or one value broadcast (all strides 0),
 * run as a rank-1 kernel. Its key is small and compared field by field, and it answers the
 * result's dtype too, so such an op needs no signature, hash or inference. */
enum { HL_LANE_MAX_IN = 3 };
typedef struct {
  int32_t prim, nin, dtype[HL_LANE_MAX_IN];
  uint32_t broadcast;   /* bit k: operand k is one value broadcast */
} hl_eager_lane_key;
/* The kernel and the result's dtype, or NULL; marked used as hl_eager_memo_find's. The kernel is
 * lent, not retained (a retain and its release were two locked instructions per op): it stays
 * valid until this thread's next lane put or memo lookup, so the caller runs it before any other
 * eager op (a lane kernel is one elementwise primitive: its run makes none). */
struct hl_kernel *hl_eager_lane_find(const hl_eager_lane_key *key, hl_dtype *dtype);
void hl_eager_lane_put(const hl_eager_lane_key *key, struct hl_kernel *k, hl_dtype dtype);
#endif
