/* Complex values in pipelines (docs/complex.md). Halide has no complex type: a complex value of
 * shape S is the float array of shape S..[2] of its (re, im) pairs, which is also how its storage
 * lies (NumPy's layout), so a complex buffer binds as that float array (hl_complex_as_real). */
#ifndef HL_COMPLEX_H
#define HL_COMPLEX_H
#include "hl_ir.h"

int hl_graph_has_complex(const hl_graph *g);
/* g with every complex value replaced by its float array of pairs: complex PARAMs become float
 * params of shape S..[2], view_as_real and view_as_complex vanish, a complex constant or a cast
 * from a real type builds its pairs, and the other primitives that take complex values
 * (hl_ir.c's complex_ok) act on the pairs with their attributes extended by the pairs' axis.
 * The result has the same parameters and outputs in the same order; a polymorphic program's table
 * of sizes (g->sym) goes along, on the nodes that stand for each node and those made beside it.
 * 0, or -1 + hl_error. */
int hl_graph_realify(const hl_graph *g, hl_graph *out);
#endif
