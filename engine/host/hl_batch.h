/* Batches of matrices (or lanes) on the host: a flat batch index to an element offset. */
#ifndef HL_BATCH_H
#define HL_BATCH_H
#include "hl_array.h"

/* The element offset in x of batch item bi, counted row-major over the batch shape
 * shape[0..nb) (a result's leading axes); x's own strides place it, so broadcast (stride 0) and
 * strided operands need no copy. */
static inline int64_t hl_batch_offset(const hl_array *x, int nb, const int64_t *shape, int64_t bi) {
  int64_t off = x->offset;
  for (int d = nb - 1; d >= 0; d--) {
    off += (bi % shape[d]) * x->strides[d];
    bi /= shape[d];
  }
  return off;
}
#endif
