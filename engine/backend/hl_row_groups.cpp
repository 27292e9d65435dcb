/* Which stored values are computed one row at a time, inside the loop over the rows of the stage
 * that reads them (hl_schedule.cpp), instead of whole into a buffer of their own.
 *
 * A row softmax stores its exponentials (an expensive value read twice: by the row sums and by
 * the division), and its maxima and sums are reductions, each stored whole: at 4096x4096 the
 * exponentials alone are 64 MB written and read again, and the input is read twice more. Each
 * row of the result needs only its own row of each: computed per row, they stay in the L1 cache
 * (PyTorch's CPU softmax kernel works row by row the same way). */
#include "hl_row_groups.h"
#include <set>
#include <utility>

namespace {

/* A walk from an owner's row down the values it inlines: `w` is how many consecutive elements
 * (in row-major order) of a node one row of the owner reads, -1 where the walk has lost that
 * (a transpose, a slice, a broadcast across rows): the rows read are then unknown. */
struct walk {
  const hl_graph *g;
  const std::vector<char> &root, &may_join;
  int64_t rows, inner;                /* the owner's rows, and their elements */
  std::set<std::pair<int, int64_t>> seen;
  std::vector<int64_t> width;         /* per member: its elements per row (0: not reached) */
  bool lost = false;                  /* a member is read where the rows are unknown */

  static int64_t total(const hl_node &n) { return hl_shape_size(n.type.ndim, n.type.shape); }

  /* what one row of node ni reads of its input si, given ni's width per row */
  int64_t input_width(int ni, int si, int64_t w) const {
    if (w < 0) return -1;
    const hl_node &n = g->nodes[ni], &s = g->nodes[si];
    hl_prim_kind kind = hl_prims[n.prim].kind;
    if (n.prim == HL_P_RESHAPE) return w;   /* (row-major order kept, and n's total is rows * w) */
    bool same = s.type.ndim == n.type.ndim;
    for (int d = 0; same && d < n.type.ndim; d++) same = s.type.shape[d] == n.type.shape[d];
    if (kind == HL_K_ELEMWISE) return same ? w : -1;
    if (n.prim == HL_P_BROADCAST) {
      if (same) return w;
      /* [..., 1] to [...,  C] by rows of C: one element per row */
      int r = n.type.ndim;
      bool column = s.type.ndim == r && r > 0 && s.type.shape[r - 1] == 1 && w == n.type.shape[r - 1];
      for (int d = 0; column && d < r - 1; d++) column = s.type.shape[d] == n.type.shape[d];
      return column ? 1 : -1;
    }
    if (kind == HL_K_REDUCE && w == 1 && hl_reduces_rows(g, ni))
      return s.type.shape[s.type.ndim - 1];   /* a result per row: the row's elements */
    return -1;
  }

  void visit(int n, int64_t w) {
    if (!seen.insert({n, w}).second) return;
    const hl_node &nd = g->nodes[n];
    if (w >= 0 && total(nd) != rows * w) w = -1;
    for (int k = 0; k < nd.nin; k++) {
      int s = hl_node_inputs(g, &nd)[k];
      const hl_node &sn = g->nodes[s];
      int64_t ws = input_width(n, s, w);
      /* a reduction of rows longer than the owner's (a row sum kept as [n, 1]) stays stored:
       * the owner's loop, parallel by its own size, would run that work in one thread */
      if (ws > inner) {
        lost = true;
        return;
      }
      if (hl_prims[sn.prim].kind == HL_K_SOURCE) continue;   /* parameters, constants, iotas */
      if (root[s]) {
        if (!may_join[s]) continue;   /* a buffer computed before: read anywhere */
        if (ws < 0 || total(sn) != rows * ws || (width[s] && width[s] != ws)) {
          lost = true;
          return;
        }
        width[s] = ws;
      }
      visit(s, ws);
      if (lost) return;
    }
  }
};

/* the stored values (root) that node p's stage reads, through the values it inlines */
void reads_of(const hl_graph *g, const std::vector<char> &root, int p, std::vector<int> &mark, int stamp, std::vector<int> &out) {
  const hl_node &n = g->nodes[p];
  for (int k = 0; k < n.nin; k++) {
    int s = hl_node_inputs(g, &n)[k];
    if (mark[s] == stamp) continue;
    mark[s] = stamp;
    if (root[s]) out.push_back(s);
    else reads_of(g, root, s, mark, stamp, out);
  }
}

}  // namespace

bool hl_reduces_rows(const hl_graph *g, int i) {
  const hl_node &n = g->nodes[i];
  if (n.prim != HL_P_SUM && n.prim != HL_P_PROD && n.prim != HL_P_MAX && n.prim != HL_P_MIN) return false;
  const hl_node &src = g->nodes[hl_node_inputs(g, &n)[0]];
  return src.type.ndim > 0 && n.attrs.i[0] == (int64_t)1 << (src.type.ndim - 1);
}

std::vector<int> hl_row_groups(const hl_graph *g, const std::vector<char> &root, const std::vector<char> &may_own,
                               const std::vector<char> &may_join) {
  int nn = g->nnodes;
  std::vector<int> row_of(nn, -1);
  /* every stage that reads each stored value: the stored nodes, and the outputs that inline
   * theirs (-2: read as a pipeline output) */
  std::vector<std::vector<int>> readers(nn);
  std::vector<int> mark(nn, -1), reads;
  for (int p = 0; p < nn; p++) {
    bool stage = root[p] && g->nodes[p].prim != HL_P_PARAM;
    bool inlined_output = false;
    for (int k = 0; k < g->noutputs; k++)
      if (g->outputs[k] == p) {
        if (root[p]) readers[p].push_back(-2);
        else inlined_output = true;
      }
    if (!stage && !inlined_output) continue;
    reads.clear();
    reads_of(g, root, p, mark, p, reads);
    for (int s : reads) readers[s].push_back(p);
  }
  /* owners from the last node back: a member is computed within its owner, so it owns nothing */
  for (int o = nn - 1; o >= 0; o--) {
    const hl_node &on = g->nodes[o];
    if (!may_own[o] || row_of[o] >= 0 || on.type.ndim < 2) continue;
    int64_t inner = on.type.shape[on.type.ndim - 1];
    int64_t rows = inner > 0 ? hl_shape_size(on.type.ndim, on.type.shape) / inner : 0;
    if (rows < 2) continue;
    walk wk{g, root, may_join, rows, inner, {}, std::vector<int64_t>(nn, 0)};
    wk.visit(o, inner);
    if (wk.lost) continue;
    std::vector<char> in(nn, 0);
    for (int s = 0; s < nn; s++) in[s] = wk.width[s] > 0;
    /* a member read by a stage outside the group cannot be computed per row of this one */
    for (bool changed = true; changed;) {
      changed = false;
      for (int s = 0; s < nn; s++) {
        if (!in[s]) continue;
        for (int p : readers[s])
          if (p != o && (p < 0 || !in[p])) {
            in[s] = 0;
            changed = true;
            break;
          }
      }
    }
    for (int s = 0; s < nn; s++)
      if (in[s]) row_of[s] = o;
  }
  return row_of;
}
