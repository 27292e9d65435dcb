/* The packed result of hl.linalg's decompositions (qr, svd, eigh, slogdet): one primitive has one
 * output, so each matrix [..., m, n] of a batch gives one vector [..., total] holding its factors
 * one after the other, each row-major. Shape inference (hl_ir.c), the host code that fills it
 * (engine/host/hl_linalg_decomp.c) and lua/halua/linalg_layout.lua, which unpacks it, follow
 * this one description. With k = min(m, n), by the node's mode (attrs i[0]):
 *   linalg.qr       0 reduced: q m x k, r k x n;  1 complete: q m x m, r m x n;  2 r only: r k x n
 *   linalg.svd      0 reduced: u m x k, s k, vh k x n;  1 full: u m x m, s k, vh n x n;  2 s only
 *   linalg.eigh     bit 0: the upper triangle is read (else the lower); bit 1: values only.
 *                   w n (ascending), then v n x n (eigenvectors in its columns) unless values only
 *   linalg.slogdet  0: sign, log|det|;  1: det alone (its own mode so that its derivative rule can
 *                   hold at singular matrices, where log|det| has none) (a square) */
#ifndef HL_LINALG_LAYOUT_H
#define HL_LINALG_LAYOUT_H
#include <stdint.h>

typedef enum { HL_DECOMP_QR, HL_DECOMP_SVD, HL_DECOMP_EIGH, HL_DECOMP_SLOGDET } hl_decomp;

/* up to three factors, each rows x cols (0 x 0 when absent), packed in this order */
typedef struct {
  int64_t rows[3], cols[3];
  int64_t total;
} hl_linalg_layout;

static inline hl_linalg_layout hl_linalg_layout_of(hl_decomp what, int mode, int64_t m, int64_t n) {
  hl_linalg_layout l = {{0, 0, 0}, {0, 0, 0}, 0};
  int64_t k = m < n ? m : n;
  switch (what) {
  case HL_DECOMP_QR:
    if (mode == 1) l.rows[0] = m, l.cols[0] = m, l.rows[1] = m, l.cols[1] = n;
    else if (mode == 2) l.rows[1] = k, l.cols[1] = n;
    else l.rows[0] = m, l.cols[0] = k, l.rows[1] = k, l.cols[1] = n;
    break;
  case HL_DECOMP_SVD:
    l.rows[1] = 1, l.cols[1] = k;
    if (mode == 1) l.rows[0] = m, l.cols[0] = m, l.rows[2] = n, l.cols[2] = n;
    else if (mode == 0) l.rows[0] = m, l.cols[0] = k, l.rows[2] = k, l.cols[2] = n;
    break;
  case HL_DECOMP_EIGH:
    l.rows[0] = 1, l.cols[0] = n;
    if (!(mode & 2)) l.rows[1] = n, l.cols[1] = n;
    break;
  case HL_DECOMP_SLOGDET: l.rows[0] = 1, l.cols[0] = mode == 1 ? 1 : 2; break;
  }
  for (int p = 0; p < 3; p++) l.total += l.rows[p] * l.cols[p];
  return l;
}
#endif
