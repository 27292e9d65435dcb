/* Shape polymorphism (hl.jit's dynamic_axes): one program for every size of some axes.
 *
 * halua does not carry symbolic sizes through shape inference. The function is traced several
 * times instead, at made-up sizes of its dynamic axes (each group of equal dynamic axes is one
 * symbol): once at base sizes, once more per symbol with that symbol moved, and once with every
 * symbol moved to check the fit. Every size-like number of the program (node extents, the
 * attributes that hold sizes, constants such as mean's divisor) is then an affine function of the
 * symbols, found from the traces and checked on the last one; anything else (a graph that
 * differs between sizes, an extent that is not affine) makes the program specialised instead,
 * with the reason. The lowering reads each symbol's value from its parameter's buffer. */
#ifndef HL_SYMBOLIC_H
#define HL_SYMBOLIC_H
#include "hl_sym_table.h"
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct hl_graph;

/* The table of graphs[0..nsym+1] (pruned, node for node the same program): graphs[0] traced at
 * sizes[0], graphs[1 + j] at sizes[1 + j] (symbol j moved), graphs[nsym + 1] at sizes[nsym + 1]
 * (every symbol moved). Parameters below nargs are the arguments, the rest captured constants.
 * NULL with the reason in why when the program is not polymorphic (or NULL with why "" on
 * running out of memory). */
hl_symbolic *hl_sym_fit(const struct hl_graph *const *graphs, int nsym, const int64_t sizes[][HL_MAX_SYMS], const int *param,
                        const int *axis, int nargs, char *why, size_t nwhy);
/* The affine form (c and a[0..nsym) of out) of a number that is values[t] in the trace at
 * sizes[t], t = 0 .. nsym + 1 (the traces hl_sym_fit takes): 0, or -1 when it is not one. */
int hl_sym_fit_number(int nsym, const int64_t sizes[][HL_MAX_SYMS], const int64_t *values, hl_sym_slot *out);
/* s for another graph of nnodes nodes made from s's graph (its canonical order, a part of it):
 * node i's slots go to node node_map[i] (-1: not there; distinct nodes to distinct nodes; node_map
 * NULL: node i, a copy), and
 * symbol j's parameter becomes param_map[param[j]], which must be there (param_map NULL: the same
 * numbers). The call checks (forms,
 * watch list) go along only with keep_checks, the watched nodes mapped; a part of a program is
 * checked as the whole program it is run for. NULL when out of memory (hl_error says so). */
hl_symbolic *hl_sym_remap(const hl_symbolic *s, int nnodes, const int *node_map, const int *param_map, int keep_checks);
/* node i's slot for (field, index), or NULL when that number is a constant */
const hl_sym_slot *hl_sym_find(const hl_symbolic *s, int node, int field, int index);
/* a slot's size at these symbol values: 0, or -1 when it is not a whole non-negative number
 * (a size divided by 2 at an odd size: the program does not apply there) */
int hl_sym_size(const hl_sym_slot *slot, int nsym, const int64_t *sym, int64_t *out);
/* The symbols' values read from the parameters' shapes (shapes[p], ndims[p]), and every
 * parameter's shape checked against the program: 0, or -1 when these arguments are not sizes the
 * program was made for (said in why). */
int hl_sym_bind(const struct hl_graph *g, const int64_t *const *shapes, const int *ndims, int64_t *sym, char *why, size_t nwhy);
/* Whether `real` (the function traced at the call's sizes `sym`, pruned) is g's polymorphic program
 * at those sizes: the same operations, and every size-like number and constant the one g's forms
 * give there. 1, or 0 with why: a size checked or clamped inside the function behaves otherwise at
 * these sizes than at the traced ones. Compiled loops' numbers are not compared: the runtime
 * compares the loops themselves (engine/runtime/hl_poly.c). */
int hl_sym_matches(const struct hl_graph *g, const struct hl_graph *real, const int64_t *sym, char *why, size_t nwhy);
#ifdef __cplusplus
}
#endif
#endif
