/* A polymorphic program's table of sizes (hl.jit's dynamic_axes): the data a graph holds
 * (hl_graph.sym), which the IR keys and frees; engine/core/hl_symbolic.h makes and reads it. */
#ifndef HL_SYM_TABLE_H
#define HL_SYM_TABLE_H
#include <stdint.h>
#include <stdlib.h>

/* at most this many symbols in one program */
#define HL_MAX_SYMS 4
/* coefficients are multiples of 1/HL_SYM_DEN: a size divided exactly by 2..8 stays affine */
#define HL_SYM_DEN 840

/* what a slot holds: a node's extent along numpy axis `index`, attrs.i[index], attrs.shape[index],
 * or a constant's value (attrs.f) */
typedef enum { HL_SYM_SHAPE, HL_SYM_ATTR_I, HL_SYM_ATTR_SHAPE, HL_SYM_VALUE } hl_sym_field;

/* what a form bounds: a size, or a slice's reach into its operand */
enum { HL_SYM_FORM_SIZE, HL_SYM_FORM_SLICE };

/* value = (c + sum_j a[j] * s_j) / HL_SYM_DEN for sizes; fc + sum_j fa[j] * s_j for a VALUE */
typedef struct {
  int node, field, index;
  int64_t c, a[HL_MAX_SYMS];
  double fc, fa[HL_MAX_SYMS];
} hl_sym_slot;

typedef struct hl_symbolic {
  int nsym;
  int param[HL_MAX_SYMS], axis[HL_MAX_SYMS];   /* symbol j is the extent of numpy axis axis[j] of parameter param[j] */
  int nnodes;
  int *first;           /* node i's slots are slots[first[i] .. first[i + 1]) */
  hl_sym_slot *slots;
  int nslots;
  /* the distinct forms of its sizes, each with the least value a call may give it (1 for
   * extents: a size that is 0 where every trace had one changes what ops mean, 0 for slice
   * starts), and the reach of each slice into its operand (0 or more: hl_symbolic.c's
   * slice_bounds): a call whose sizes make one of them fractional or smaller is specialised instead */
  hl_sym_slot *forms;   /* (index holds the least value, field what it bounds: HL_SYM_FORM_*) */
  int nforms;
  /* the nodes a call's shapes are checked at: the parameters, and the reshapes whose extents
   * follow the symbols (their flat index is computed in 32 bits) */
  int *watch;
  int nwatch;
} hl_symbolic;

static inline void hl_sym_free(hl_symbolic *s) {
  if (!s) return;
  free(s->first);
  free(s->slots);
  free(s->forms);
  free(s->watch);
  free(s);
}
#endif
