/* Op-level semantics on top of hl_apply: dtype promotion (with weakly typed Lua numbers), the
 * primitives' input rules, and NumPy broadcasting. */
#ifndef HL_FRONTEND_H
#define HL_FRONTEND_H
#include "hl_eval.h"

typedef struct {
  const hl_array *array;   /* NULL: a Lua number */
  double number;
  int is_bool;             /* a Lua boolean */
} hl_operand;

/* Elementwise prim over operands (numbers allowed), result in out. */
int hl_op_elemwise(int prim, int nin, const hl_operand *ops, const hl_attrs *attrs, hl_array *out);
/* NumPy's broadcast of shapes; -1 + hl_error naming `op` when impossible. */
int hl_broadcast_shapes(const char *op, int n, const hl_array *const *arrays, int *ndim, int64_t *shape);
int hl_op_broadcast_to(const hl_array *a, int ndim, const int64_t *shape, hl_array *out);
int hl_op_cast(const hl_array *a, hl_dtype dtype, hl_array *out);
int hl_op_reshape(const hl_array *a, int ndim, const int64_t *shape, hl_array *out);
/* NumPy matmul: 1-D operands, batch broadcasting, promotion. */
int hl_op_matmul(const hl_array *a, const hl_array *b, hl_array *out);
/* numpy.linalg.solve: a [..., n, n]; b [..., n, k], or a stack of vectors [..., n] when b is 1-D
 * or has one dimension fewer than a (NumPy 1.x's rule); batch dimensions broadcast; ints and
 * bool promote to float32. */
int hl_op_solve(const hl_array *a, const hl_array *b, hl_array *out);
/* numpy.linalg.cholesky: the lower factor of each matrix of a [..., n, n]. */
int hl_op_cholesky(const hl_array *a, hl_array *out);
/* solve with one triangle of a (mode: hl_linalg.h's bits), b as for hl_op_solve */
int hl_op_solve_triangular(const hl_array *a, const hl_array *b, int mode, hl_array *out);
/* hl.linalg's decompositions (prim: HL_P_QR, _SVD, _EIGH, _SLOGDET): each matrix of a's packed
 * factors (engine/core/hl_linalg_layout.h), ints and bool as float32. */
int hl_op_linalg_decomp(int prim, const hl_array *a, int mode, hl_array *out);
#endif
