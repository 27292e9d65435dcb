/* CPU schedules. The policy, in one place:
 *  - elementwise and view nodes are inlined into their consumers (fusion), unless they feed a
 *    matmul or are expensive and used twice;
 *  - materialised Funcs vectorise the innermost dimension by the target's natural width and run
 *    their outer loop in parallel when the work is large enough (decided at run time in eager
 *    kernels, whose extents are not known when they compile);
 *  - a materialised value that one stage reads row by row, and no other, is computed per row
 *    inside that stage's loop over rows (hl_row_groups.cpp: a softmax's maxima, exponentials and
 *    sums);
 *  - matmul is register-blocked: a 4-vector x 6-row accumulator tile, k innermost per tile. */
#include "hl_lower.h"
#include "hl_row_groups.h"
#include "hl_symbolic.h"
#include <dlfcn.h>
#include <mutex>
#include <thread>

using namespace Halide;

namespace {

const int kParallelMinElems = 1 << 15;   /* below this a thread hand-off costs more than it saves */
const int64_t kMaxInlined = 64;          /* nodes inlined into one expression, at most (materialised) */
/* the elements past its end that a Func computed whole keeps spare (bind_whole): the widest
 * vector, 64 one-byte lanes of AVX-512 */
const int kSpare = 64;

Expr total_elems(Func f, int r) {
  Expr n = 1;
  for (int d = 0; d < r; d++) n = n * f.output_buffer().dim(d).extent();
  return n;
}

/* The lanes of a vector along an innermost axis of static_inner elements (0: not known). */
int lanes_along(int vec, int static_inner) {
  int w = vec;
  if (static_inner > 0)
    while (w > 1 && w > static_inner) w /= 2;
  /* never two lanes: Halide 14's simplifier rewrites a vector of two scalars, [a, b], as the
   * ramp a + (b - a) * lane whatever their type, and for floats that is not b (a copy whose
   * rows of 2 were gathered through a reshape, tile({2, 1}) of {{1e20, 1}}, gave {1e20, 0}, and
   * an inf or NaN in b made a NaN of a); a scalar loop keeps the values */
  return w == 2 ? 1 : w;
}

/* Vectorise dim 0, parallelise the rest (or blocks of a 1-D loop). */
/* `whole`: s is the pure definition of a Func computed over exactly its whole shape, of size
 * static_inner (innermost) and static_total (a pipeline output, or a stored value bounded so:
 * bound_whole). The last vector or block then shifts inwards to end at the edge, computing some
 * elements twice, rather than being guarded: no predicated tail, one branch fewer (a guarded
 * tail of a fully known loop was also where Halide 14's simplifier dropped code: see
 * bind_whole). Not for a Func of which consumers may
 * need less than the whole: a shifted vector would start before the region, reading its inputs
 * before their first element. */
void pointwise(Stage s, int r, int vec, bool parallel, int static_inner, int64_t static_total = 0, bool whole = false) {
  const std::vector<Var> &v = hl_vars(r);
  if (r == 0) return;
  int w = lanes_along(vec, static_inner);
  TailStrategy vector_tail = whole && static_inner >= w ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf;
  if (r == 1) {
    if (parallel) {
      Var xo("xo"), xi("xi");
      /* tasks of at least 16K elements (a task hand-off costs about a microsecond), and about
       * 16 of them when the size is known, so both cores stay busy to the end */
      int64_t block = static_total > 0 ? std::max<int64_t>(1 << 14, (static_total / 16 + vec - 1) / vec * vec) : 1 << 14;
      bool shift = whole && static_total >= block;   /* every block whole: its vectors too */
      s.split(v[0], xo, xi, (int)block, shift ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf).parallel(xo);
      s.vectorize(xi, w, shift ? TailStrategy::ShiftInwards : TailStrategy::GuardWithIf);
    } else if (w > 1) {
      s.vectorize(v[0], w, vector_tail);
    }
    return;
  }
  if (w > 1) s.vectorize(v[0], w, vector_tail);
  if (parallel) {
    Var outer = v[r - 1];
    for (int d = r - 2; d >= 1; d--) {
      Var fused("f" + std::to_string(d));   /* (the last, f1, is row_loop's) */
      s.fuse(outer, v[d], fused);
      outer = fused;
    }
    s.parallel(outer);
  }
}

/* The results in one block of a column reduction, 0 for one block. Rows read in runs of 4 KB
 * stream best (column sums of 4096x4096 float32: 4.7 ms in blocks of 1024, 7.8 ms in blocks of
 * 256), so blocks are wide: about a quarter of a row (an even number of them, for both cores),
 * from 256 results to about 2048 (16 KB of float64 sums, within the L1 cache). A row of 512 or
 * fewer is one block, as is one not known (an eager kernel's: a block of 1024 ran a 4x3 column
 * sum's three columns as 128 guarded vectors, 1.8x the time of the whole op). The last block's
 * guarded vectors run to the block's end, past the last column: no further than the spare
 * elements the reduction keeps there (bind_whole; a guarded vector past an allocation's end is
 * where Halide 14's simplifier dropped code), so at most kSpare blocks, and whole vectors per
 * block only where they end within the spare elements. */
int column_block(int static_inner, int vec) {
  if (static_inner <= 512) return 0;
  int blocks = std::min({std::max(4, (static_inner + 2047) / 2048), static_inner / 256, kSpare});
  blocks -= blocks % 2;   /* (an even count: 3 blocks on 2 cores left one idle a third of the time) */
  int block = (static_inner + blocks - 1) / blocks;   /* (past the end: fewer than `blocks`) */
  int whole_vectors = (block + vec - 1) / vec * vec;
  return blocks * whole_vectors - static_inner <= kSpare ? whole_vectors : block;
}

/* The update of a reduction that keeps the innermost axis (a column sum, a batch norm's means):
 * a block of results (column_block) stays in the L1 cache while every reduced row streams through
 * it, each row's block read in one contiguous run, and the blocks run in parallel. Halide's
 * default order reduces innermost: a vector of 8 columns stepped down all the rows, each step a
 * new cache line and, for rows of 4 KB or more, a new page (a jitted column sum of 2048x1000
 * float32 took 2.5 ms where NumPy's takes 0.95). */
void column_update(Stage s, const RDom &rd, int r, int vec, bool parallel, int static_inner) {
  if (r == 0) return;   /* (a 0-d value's reduction: nothing to order) */
  const std::vector<Var> &v = hl_vars(r);
  int w = lanes_along(vec, static_inner);
  int block = column_block(static_inner, vec);
  bool blocked = block > 0;
  Var xo("xo"), xi("xi");
  std::vector<VarOrRVar> order;
  if (blocked) {
    s.split(v[0], xo, xi, block, TailStrategy::GuardWithIf);
    order.push_back(xi);
  } else {
    order.push_back(v[0]);
  }
  for (int d = 0; d < rd.dimensions(); d++) order.push_back(rd[d]);
  std::vector<Var> outer;   /* the pure loops around the reduction, innermost first */
  if (blocked) outer.push_back(xo);
  for (int d = 1; d < r; d++) outer.push_back(v[d]);
  for (const Var &o : outer) order.push_back(o);
  s.reorder(order);
  if (w > 1) s.vectorize(blocked ? xi : v[0], w, TailStrategy::GuardWithIf);
  if (parallel && !outer.empty()) {
    Var par = outer[0];
    for (size_t d = 1; d < outer.size(); d++) {
      Var fused("c" + std::to_string(d));
      s.fuse(par, outer[d], fused);
      par = fused;
    }
    s.parallel(par);
  }
}

/* `sized` is a pipeline output of the same shape as f, whose buffer tells the extents at run time
 * (eager kernels have one output, the shape of their single node). */
/* `work`: the elements a reduction reads (0: as many as f has), which decides parallelism: a
 * row logsumexp of 4096x4096 has only 4096 results but reads 16M elements */
/* `whole`: f is computed over exactly its whole shape (pointwise) */
/* `sizes`: SIZED (a jit pipeline's constant extents), EAGER (an eager kernel's: read from `sized`
 * at run time) or SYMBOLIC (a polymorphic program's, traced at large made-up sizes: parallel
 * wherever a traced size was large, nothing assumed of the real extents) */
enum sizes_known { SIZED, EAGER, SYMBOLIC };
/* Node i's: a polymorphic program's node none of whose extents follows a symbol (a stage of a
 * parameter's shape, such as an optimiser's update) is SIZED, and is scheduled as in any jit
 * pipeline. */
sizes_known sizes_of(const hl_lowered &L, int i) {
  const hl_graph *g = L.g;
  if (g->dynamic) return EAGER;
  if (!g->sym) return SIZED;
  for (int k = g->sym->first[i]; k < g->sym->first[i + 1]; k++)
    if (g->sym->slots[k].field == HL_SYM_SHAPE) return SYMBOLIC;
  return SIZED;
}
bool node_sized(const hl_lowered &L, int i) { return sizes_of(L, i) == SIZED; }
/* a reduction's: symbolic where what it reads is */
sizes_known reduce_sizes(const hl_lowered &L, int i, int src) { return node_sized(L, src) ? sizes_of(L, i) : sizes_of(L, src); }

/* a polymorphic program's element count of node i at run time (hl_lowered::totals), where it
 * follows the symbols; else undefined */
Expr run_total(const hl_lowered &L, int i) { return sizes_of(L, i) == SYMBOLIC ? L.totals[i] : Expr(); }

/* `run_total`: a polymorphic program's element count of f at run time (run_total above): the work
 * that decides parallelism (a reduction's: what it reads) */
/* `columns`: f's update is a reduction, over these, that keeps the innermost axis (column_update) */
void schedule_root(Func f, const hl_node &n, sizes_known sizes, int vec, const RDom &columns, Func sized, int64_t work = 0,
                   bool whole = false, Expr run_total = Expr()) {
  int r = n.type.ndim;
  f.compute_root();
  bool dynamic = sizes == EAGER, unsized = sizes != SIZED;
  whole = whole && !unsized;
  int64_t total = hl_shape_size(r, n.type.shape);
  int inner = unsized || r == 0 ? 0 : (int)n.type.shape[r - 1];
  if (unsized || work < total) work = total;
  auto apply = [&](bool par) {
    pointwise(f, r, vec, par && total >= kParallelMinElems, inner, unsized ? 0 : total, whole);
    for (int u = 0; u < f.num_update_definitions(); u++) {
      /* an update never splits in blocks larger than its Func (when it split into blocks of 16K
       * elements, the update of a 1024-element sum computed whole for an extern consumer ran
       * over 16K elements, past its buffer): column_update's blocks are within the row */
      if (columns.defined()) column_update(f.update(u), columns, r, vec, par, inner);
      else if (r == 1 && par && !unsized) {
        /* the reduction runs along the innermost axis: parallel over the results, in about 16
         * tasks of at least 16K elements read. The inner loop keeps the name x0, at which the
         * per-lane partial results are computed (schedule_inner_reduction) */
        int64_t per_result = work / std::max<int64_t>(total, 1);
        int64_t rows = std::max<int64_t>((1 << 14) / std::max<int64_t>(per_result, 1), (total + 15) / 16);
        Var po("po");
        f.update(u).split(hl_vars(1)[0], po, hl_vars(1)[0], (int)std::max<int64_t>(rows, 1), TailStrategy::GuardWithIf).parallel(po);
      } else if (r > 0 && par) {
        /* the reduction runs along the innermost axis: parallelise over the output */
        pointwise(f.update(u), r, 1, true, inner);
      } else if (!f.update(u).get_schedule().touched()) {
        /* (an update that schedule_inner_reduction split and rfactored, before this, keeps
         * that schedule: unscheduled() on it failed the compile) */
        f.update(u).unscheduled();
      }
    }
  };
  if ((dynamic || run_total.defined()) && r > 0) {
    /* eager kernels and polymorphic programs: the same code for every shape, so choose
     * parallelism at run time */
    Expr big = run_total.defined() ? run_total >= Expr((int64_t)kParallelMinElems) : total_elems(sized, r) >= kParallelMinElems;
    Stage sp = f.specialize(big);
    pointwise(sp, r, vec, true, inner);
    apply(false);
  } else {
    apply(work >= kParallelMinElems);
  }
}

/* `out` is the Func that holds the product: the node's own, or the pipeline output it feeds
 * directly (then the tiles are written straight into the output buffer) */
void schedule_matmul(hl_lowered &L, int i, int vec, Func sized, Func out) {
  const hl_node &n = L.g->nodes[i];
  int r = n.type.ndim;
  const std::vector<Var> &v = hl_vars(r);
  Func prod = L.helpers[i];
  Var no("no"), mo("mo"), ni("ni"), mi("mi");
  const int tn = 4 * vec, tm = 6;   /* 24 of the 32 vector registers hold accumulators */
  /* tiles of constant size (ShiftInwards overlaps the last one) keep the accumulators in
   * registers; shapes smaller than one tile take the guarded schedule */
  Var par = no;   /* the parallel loop: n-tiles, fused with the batch dimensions */
  for (int d = 2; d < r; d++) par = Var("b" + std::to_string(d));
  auto tile = [&](Stage s, TailStrategy tail) {
    s.tile(v[0], v[1], no, mo, ni, mi, tn, tm, tail);
    /* whole tiles only are unrolled and vectorised: guarded tiles lose some of their predicated
     * vector stores in Halide 14 (the last column of a 3x3 product was never written). Their
     * sums are still computed in vectors (prod, below); the tile only copies them out */
    if (tail == TailStrategy::ShiftInwards) {
      s.unroll(mi);
      /* the vectors of a row unrolled too: a loop over them indexed the tile's sums, so LLVM kept
       * the tile in a stack array, cleared it with memset and copied it out after k (5% of the
       * MLP's value_and_grad); unrolled, the sums go from registers to the output */
      if (vec > 1) s.vectorize(ni, vec, tail).unroll(ni);
    }
    /* n-tiles outer, m-tiles inner: the k x tn panel of B stays in cache while m sweeps */
    s.reorder(ni, mi, mo, no);
    Var outer = no;
    for (int d = 2; d < r; d++) {
      Var fused("b" + std::to_string(d));
      s.fuse(outer, v[d], fused);
      outer = fused;
    }
    s.parallel(outer);
  };
  out.compute_root();
  /* (a shape-generic kernel's extents, from its output buffer) */
  Expr ncols = L.g->dynamic ? sized.output_buffer().dim(0).extent() : Expr(), nrows = L.g->dynamic ? sized.output_buffer().dim(1).extent() : Expr();
  Expr big = L.g->dynamic ? (ncols >= tn && nrows >= tm)
            : L.g->sym    ? Internal::const_false()   /* (the guarded tiles below serve every size) */
            : (n.type.shape[r - 1] >= tn && n.type.shape[r - 2] >= tm ? Internal::const_true() : Internal::const_false());
  tile(out.specialize(big), TailStrategy::ShiftInwards);
  /* a narrow product (fewer columns than a tile, at least a tile's rows): one vector of columns
   * per tile and whole tiles of rows (shifted inwards), so that the accumulators are a constant
   * 6 vectors and stay in registers, and the rows in parallel (one tile of columns has no
   * parallel loop): 256x1024 @ 1024x10 in 0.16 ms, 0.33 with the guarded tiles below */
  if (L.g->dynamic && vec > 1 && r == 2) {
    Stage s = out.specialize(ncols < tn && nrows >= tm);
    s.split(v[0], no, ni, vec, TailStrategy::GuardWithIf).split(v[1], mo, mi, tm, TailStrategy::ShiftInwards);
    s.reorder(ni, mi, mo, no).parallel(mo);
  }
  tile(out, TailStrategy::GuardWithIf);
  /* (the tile's rows unrolled in copies guarded by the rows it has: where the product is read in
   * another order than it is computed, a flip of it, Halide cannot bound a tile's rows by a
   * constant, and a plain unroll refused to compile) */
  prod.compute_at(out, mo).unroll(v[1], tm, TailStrategy::GuardWithIf);
  /* pack the k x tn panel of B contiguously once per n-tile: rows of a power-of-two-wide B
   * otherwise alias in the cache. Where B's columns are clamped (L.panels: the CPU's products),
   * the tile's sums are whole vectors past the last column, read from the panel's copies of it:
   * a guarded vector loop runs its tail in scalars, and a product of 10 columns was all tail */
  bool padded = L.panels[i].defined();   /* (not for a product with no columns) */
  Func panel = padded ? L.panels[i] : L.funcs[hl_node_inputs(L.g, &n)[1]].in(prod);
  TailStrategy lanes = padded ? TailStrategy::RoundUp : TailStrategy::GuardWithIf;
  panel.compute_at(out, par);
  RVar k = L.rdoms[i][0];
  prod.update().reorder(v[0], v[1], k).unroll(v[1], tm, TailStrategy::GuardWithIf);
  if (vec > 1) {
    prod.vectorize(v[0], vec, lanes);
    panel.vectorize(v[0], vec, lanes);
    prod.update().vectorize(v[0], vec, lanes).unroll(v[0]);
  }
}

/* scatter_add and scatter: zeros (or the operand) in parallel and vectorised like any buffer; the update walks the indices in
 * order (their targets may repeat), vectorised along the innermost result axis when that axis is
 * not the scattered one */
void schedule_scatter(hl_lowered &L, int i, int vec, Func sized) {
  const hl_node &n = L.g->nodes[i];
  int r = n.type.ndim, hd = r - 1 - (int)n.attrs.i[0];
  Func f = L.funcs[i];
  (void)sized;
  f.compute_root();
  int64_t total = hl_shape_size(r, n.type.shape);
  bool dynamic = L.g->dynamic, unsized = !node_sized(L, i);
  pointwise(f, r, vec, !dynamic && total >= kParallelMinElems, unsized || r == 0 ? 0 : (int)n.type.shape[r - 1],
            unsized ? 0 : total);
  Stage u = f.update();
  if (r > 1 && hd != 0 && L.rdoms[i].defined()) {
    const std::vector<Var> &v = hl_vars(r);
    std::vector<VarOrRVar> order = {v[0]};
    for (int d = 0; d < L.rdoms[i].dimensions(); d++) order.push_back(L.rdoms[i][d]);
    for (int d = 1; d < r; d++)
      if (d != hd) order.push_back(v[d]);
    u.reorder(order).vectorize(v[0], vec, TailStrategy::GuardWithIf);
  } else {
    u.unscheduled();
  }
}

/* A reduction along its input's innermost axis (a full sum, a row softmax's sums): the axis is
 * split by the vector width and rfactor gives each lane its own partial result, so the loads and
 * the arithmetic (an inlined exp) run in vectors; a large full reduction first splits its
 * outermost axis into parts reduced in parallel. rfactor refuses reductions it cannot prove
 * associative (the NaN-keeping max and min): false, and nothing is changed. */
bool schedule_inner_reduction(hl_lowered &L, int i, Func red, int r, int vec, bool parallel) {
  RDom rd = L.rdoms[i];
  if (!rd.defined() || red.num_update_definitions() != 1) return false;
  /* ask before splitting: a split made before rfactor refused would stay on the update, and
   * schedule_root's unscheduled() then failed the compile (a jitted hl.max of 179K elements) */
  if (!Internal::prove_associativity(red.name(), red.update_args(0), red.update_values(0).as_vector()).associative())
    return false;
  const std::vector<Var> &v = hl_vars(r);
  try {
    Stage st = red.update(0);
    Func owner = red;          /* the Func whose update gets the per-lane partial results */
    Var at;                    /* its loop at which the lanes are computed */
    RVar inner = rd[0];
    if (r == 0) {
      if (!parallel) return false;
      Var w("w");
      Func parts;
      if (rd.dimensions() == 1) {
        RVar ro("ro"), ri("ri");
        st.split(rd[0], ro, ri, 1 << 14, TailStrategy::GuardWithIf);
        parts = st.rfactor(ro, w);
        inner = ri;
      } else {
        parts = st.rfactor(rd[rd.dimensions() - 1], w);
      }
      parts.compute_root().update().parallel(w);
      owner = parts;
      at = w;
    } else {
      at = v[0];
    }
    RVar xo("xo"), xi("xi");
    Var u("u");
    Stage ost = owner.update(0);
    /* a long axis takes four vectors of lanes: four independent chains of adds hide the add's
     * latency, where one vector's chain ran at a third of the memory bandwidth (a 4096x4096 sum) */
    const int64_t *n_inner = Internal::as_const_int(rd[0].extent());
    int lanes_n = n_inner && *n_inner >= 64 * vec ? 4 * vec : vec;
    ost.split(inner, xo, xi, lanes_n, TailStrategy::GuardWithIf);
    Func lanes = ost.rfactor(xi, u);
    lanes.compute_at(owner, at).vectorize(u);
    /* rfactor gives the partial results the reduction's storage schedule: the lanes after its
     * pure dimensions (a row's length apart, so 64 lanes were scattered and gathered one by one)
     * and its outermost dimension rounded up past the whole shape (bind_whole's spare elements),
     * an 80 KB heap block per row of a [n, 1024] max. Computed per row, they need one vector:
     * the lanes innermost, no rounding (a 2048x1000 row max ran 5.7x faster) */
    std::vector<Var> storage = {u};
    for (const Var &a : lanes.args())
      if (a.name() != u.name()) {
        storage.push_back(a);
        lanes.align_storage(a, 1);
      }
    lanes.reorder_storage(storage);
    lanes.update().vectorize(u);
    return true;
  } catch (const Halide::Error &) {
    return false;
  }
}

/* Whether node i, with the nodes inlined into it, reads a transpose that moves the innermost
 * axis: its rows come from the source's columns. */
/* the side of a transposing tile, at most (float32's vector with AVX-512): a 64x64 tile of bytes
 * (int8's vector) unrolls into thousands of gathered lanes, which took minutes to compile (a
 * jitted bool [2,1] transpose: 111 s) */
const int kTransposeTile = 16;

/* Remembered per node in `memo` (-1: not yet known): the inlined nodes form a graph whose shared
 * values (a carry used twice by each of a loop's unrolled steps) would be walked once per path,
 * 2^steps times. */
bool reads_across(const hl_lowered &L, const std::vector<char> &root, int i, std::vector<signed char> &memo) {
  if (memo[i] >= 0) return memo[i];
  const hl_graph *g = L.g;
  const hl_node &n = g->nodes[i];
  int r = n.type.ndim;
  bool across = n.prim == HL_P_TRANSPOSE && r >= 2 && n.attrs.i[r - 1] != r - 1;
  /* not where either innermost axis has one element ([1, n] to [n, 1]): the elements keep their
   * order, and tiles one element wide would only add guarded tails */
  if (across && !g->dynamic && !g->sym) {
    const hl_node &src = g->nodes[hl_node_inputs(g, &n)[0]];
    if (n.type.shape[r - 1] == 1 || src.type.shape[src.type.ndim - 1] == 1) across = false;
  }
  for (int k = 0; !across && k < n.nin; k++) {
    int s = hl_node_inputs(g, &n)[k];
    across = !root[s] && g->nodes[s].prim != HL_P_PARAM && reads_across(L, root, s, memo);
  }
  memo[i] = across;
  return across;
}

/* A transposing copy in square tiles of one vector: each of its source's cache lines is read once
 * for the whole tile (they stay in L1 while its rows are written), where whole output rows would
 * sweep the cache once per row (4096x4096 float32: 12 ms against 210 ms untiled; 64x64 tiles took
 * 50 ms). The tile's rows are a loop, not unrolled: unrolled, each tile was 16 rows of 16-lane
 * strided gathers for LLVM, 130 ms of compile per transpose (a third of a deep MLP step's), and
 * the loop runs as fast (transpose(w) + x of 1024^2 and 4096^2: 4.1 and 64 ms either way). */
void schedule_tiled(Func f, int r, int vec, bool parallel) {
  const std::vector<Var> &v = hl_vars(r);
  int tv = std::min(vec, kTransposeTile);
  f.compute_root();
  Var xo("xo"), yo("yo"), xi("xi"), yi("yi");
  f.tile(v[0], v[1], xo, yo, xi, yi, tv, tv, TailStrategy::GuardWithIf).vectorize(xi);
  Var outer = yo;
  for (int d = 2; d < r; d++) {
    Var fused("t" + std::to_string(d));
    f.fuse(outer, v[d], fused);
    outer = fused;
  }
  if (parallel) f.parallel(outer);
}

bool expensive(int prim) {
  if (prim == HL_P_THREEFRY) return true;   /* 20 rounds; its two words are read apart */
  return hl_prims[prim].in == HL_IN_FLOAT && prim != HL_P_DIV && prim != HL_P_RECIPROCAL && prim != HL_P_SQRT;
}

/* The loop of a stage scheduled by pointwise() (rank >= 2) in which one row of its innermost axis
 * is computed: the rows' loop, or the outer loops fused into one when they run in parallel. */
Var row_loop(int r, bool parallel) { return parallel && r >= 3 ? Var("f1") : hl_vars(r)[1]; }

}  // namespace

/* Halide 14's simplifier takes a load whose first lane lies past the end of an allocation of
 * known size as proof that the code around it never runs, whatever the load's predicate. A
 * guarded vector tail with one live lane makes such a load once the pass that rewrites vector
 * interleavings has split a vector let into its odd and even lanes (the odd lanes start one past
 * the live one): the simplifier then dropped the tail's branch, and the loop ran its first block
 * for every block (jit(sum(var(x, 1))) of a 5x5 summed columns 0 to 3 twice and column 4 never).
 * So a Func computed over its whole shape gets spare elements past its end, at least a vector of
 * the widest lanes: its outermost dimension's storage is rounded up past its extent
 * (align_storage, which leaves the strides as they are, so extern stages see the same buffers).
 * Only for a whole shape: the storage rounds up the region computed, so a region of one row of a
 * huge shape would have taken the shape's size. */
static void bind_whole(Func f, const hl_node &n) {
  int r = n.type.ndim;
  const std::vector<Var> &v = hl_vars(r);
  for (int d = 0; d < r; d++) f.bound(v[d], 0, (int)n.type.shape[r - 1 - d]);
  if (r == 0) return;
  int64_t outer = n.type.shape[0], inner = hl_shape_size(r, n.type.shape) / outer;
  f.align_storage(v[r - 1], Expr((int)(outer + (kSpare + inner - 1) / inner)));
}

/* f (node i's Func, or its accumulator or helper) computed over exactly i's whole shape, for a
 * tail that shifts inwards (pointwise): a consumer never reads outside an operand's shape (the
 * lowering clamps every read in bounds, as an operand may be a parameter's buffer), so this only
 * computes what a consumer reading part of it leaves out. Not for an empty value: bound to
 * extent 0, it loses its buffer. */
static bool bound_whole(hl_lowered &L, int i, Func f) {
  const hl_node &n = L.g->nodes[i];
  if (!node_sized(L, i) || hl_shape_size(n.type.ndim, n.type.shape) == 0) return false;
  bind_whole(f, n);
  return true;
}
static bool bound_whole(hl_lowered &L, int i) { return bound_whole(L, i, L.funcs[i]); }

/* the nodes an extern stage reads (as a buffer: Halide cannot inline into an extern stage) */
static std::vector<char> extern_inputs(const hl_lowered &L) {
  const hl_graph *g = L.g;
  std::vector<char> read(g->nnodes, 0);
  for (int i = 0; i < g->nnodes; i++) {
    if (!L.funcs[i].is_extern()) continue;
    for (int k = 0; k < g->nodes[i].nin; k++) read[hl_node_inputs(g, &g->nodes[i])[k]] = 1;
  }
  return read;
}

/* An extern stage (the engine's matmul kernel, cuBLAS, a compiled loop) reads whole operands,
 * but Halide learns that only from its bounds query at run time, so the regions of everything
 * computed for an operand stay symbolic; deep index maps (an im2col of a padded, pooled
 * activation) then overflow Halide's constant folding. Declaring each operand's full extent
 * makes them constants. */
static std::vector<char> bound_extern_operands(hl_lowered &L) {
  const hl_graph *g = L.g;
  std::vector<char> bounded(g->nnodes, 0);
  if (g->dynamic) return bounded;   /* (bound_whole takes a polymorphic program's sized nodes only) */
  for (int i = 0; i < g->nnodes; i++) {
    if (!L.funcs[i].is_extern()) continue;
    const hl_node &n = g->nodes[i];
    for (int k = 0; k < n.nin; k++) {
      int s = hl_node_inputs(g, &n)[k];
      const hl_node &sn = g->nodes[s];
      if (sn.prim == HL_P_PARAM || L.funcs[s].is_extern()) continue;   /* extern outputs have no pure vars */
      /* an empty operand bound to extent 0 loses its buffer: the extern call names a symbol
       * that is not there (a solve over a zero-size batch) */
      if (!bounded[s]) bounded[s] = bound_whole(L, s);
    }
  }
  return bounded;
}

/* Which nodes get their own buffer (the rest inline into their consumers): reductions and
 * matmuls, expensive elementwise work used more than once, and matmul operands that are not
 * already buffers (the CPU kernel reads them in tiles; cuBLAS takes buffers). */
static std::vector<char> materialised(const hl_lowered &L) {
  const hl_graph *g = L.g;
  std::vector<char> root(g->nnodes, 0), operand(g->nnodes, 0);   /* operand: read as a buffer */
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node &n = g->nodes[i];
    hl_prim_kind kind = hl_prims[n.prim].kind;
    bool extern_stage = hl_prims[n.prim].stage == HL_S_EXTERN;   /* loops, LAPACK, sorting */
    bool tiled = g->device == 0 || L.funcs[i].is_extern();
    if (kind == HL_K_REDUCE || kind == HL_K_MATMUL || extern_stage || hl_is_scatter(n.prim)) root[i] = 1;
    if (kind == HL_K_ELEMWISE && L.consumers[i] > 1 && expensive(n.prim)) root[i] = 1;
    /* extern stages read buffers; so do the CPU kernel's tiles and cuBLAS (an empty node reads
     * nothing: it is a constant) */
    bool reads_buffers = (extern_stage || (kind == HL_K_MATMUL && tiled)) && !hl_empty_on_cuda(g, i);
    for (int k = 0; reads_buffers && k < (extern_stage ? n.nin : 2); k++) {
      int s = hl_node_inputs(g, &n)[k];
      if (g->nodes[s].prim != HL_P_PARAM) operand[s] = 1;
    }
  }
  /* an empty value of a CUDA pipeline is inlined unless an extern stage needs its buffer */
  for (int i = 0; i < g->nnodes; i++) root[i] = hl_empty_on_cuda(g, i) ? operand[i] : (root[i] || operand[i]);
  /* Halide inlines a Func into every Func after it and computes bounds of every Func's value, so
   * a long run of inlined nodes costs the square of its length, and a value read twice is walked
   * once per path: 40 unrolled rounds of tanh(a * c + d) compiled in 5 s, 80 in 53 s. An
   * elementwise node whose inlined expression (counted as the tree Halide walks) has grown past
   * kMaxInlined gets a buffer of its own, which ends the run. */
  std::vector<int64_t> size(g->nnodes, 1);
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node &n = g->nodes[i];
    if (root[i] || n.prim == HL_P_PARAM) continue;
    for (int k = 0; k < n.nin; k++) {
      int s = hl_node_inputs(g, &n)[k];
      if (!root[s] && g->nodes[s].prim != HL_P_PARAM) size[i] += size[s];
    }
    if (size[i] > kMaxInlined && hl_prims[n.prim].kind == HL_K_ELEMWISE && !hl_empty_on_cuda(g, i)) {
      root[i] = 1;
      size[i] = 1;
    }
  }
  return root;
}

/* The stored values that a stage computes row by row (hl_row_groups): per node, the node that
 * owns it, or -1. Owners are the stages pointwise() schedules (elementwise values, reshapes and
 * broadcasts, stored or inlined into one output; rank 2 at least, not transposing tiles); members
 * are elementwise values and reductions of the innermost axis that need no buffer of their own
 * (not an output, nor an extern stage's operand, nor bound whole for one). Programs of known
 * sizes only: an eager kernel's rows are not known to be worth it. */
static std::vector<int> rows_computed_in(hl_lowered &L, const std::vector<char> &root, const std::vector<char> &bounded,
                                         const std::vector<char> &extern_input, std::vector<signed char> &across) {
  const hl_graph *g = L.g;
  std::vector<char> may_own(g->nnodes, 0), may_join(g->nnodes, 0);
  if (!hl_graph_sized(g)) return std::vector<int>(g->nnodes, -1);
  std::vector<int> output_uses(g->nnodes, 0), output_of(g->nnodes, -1);
  for (int k = 0; k < g->noutputs; k++) {
    output_uses[g->outputs[k]]++;
    if (output_of[g->outputs[k]] < 0) output_of[g->outputs[k]] = k;
  }
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node &n = g->nodes[i];
    if (n.prim == HL_P_PARAM) continue;
    hl_prim_kind kind = hl_prims[n.prim].kind;
    bool pointwise_stage = kind == HL_K_ELEMWISE || n.prim == HL_P_RESHAPE || n.prim == HL_P_BROADCAST;
    bool tiled = n.type.ndim >= 2 && reads_across(L, root, i, across);
    if (root[i]) {
      bool plain = !L.funcs[i].is_extern() && !tiled;
      may_own[i] = pointwise_stage && plain;
      may_join[i] = plain && (kind == HL_K_ELEMWISE || hl_reduces_rows(g, i)) && !output_uses[i] && !extern_input[i] && !bounded[i];
    } else if (output_uses[i] == 1 && pointwise_stage && !tiled) {
      may_own[i] = !L.outputs[output_of[i]].is_extern();
    }
  }
  return hl_row_groups(g, root, may_own, may_join);
}

/* Node i computed row by row in the loop over the rows of `owner` (rows_computed_in): its rows in
 * vectors, a reduction's partial results per lane as when stored, in no loop of its own. Not bound
 * to its whole shape (bind_whole), which would compute every row for each; its storage, one row,
 * rounded up to kSpare elements so that a guarded vector's lanes stay within it (bind_whole's
 * reason). */
static void schedule_in_rows(hl_lowered &L, int i, const Target &t, int vec, int owner, const std::vector<char> &root) {
  const hl_graph *g = L.g;
  const hl_node &o = g->nodes[owner];
  Func at = L.funcs[owner];
  if (!root[owner])
    for (int k = 0; k < g->noutputs; k++)
      if (g->outputs[k] == owner) at = L.outputs[k];
  Var row = row_loop(o.type.ndim, hl_shape_size(o.type.ndim, o.type.shape) >= kParallelMinElems);
  const hl_node &n = g->nodes[i];
  if (hl_prims[n.prim].kind == HL_K_REDUCE) {
    Func red = L.helpers[i].defined() ? L.helpers[i] : L.funcs[i];
    const hl_node &src = g->nodes[hl_node_inputs(g, &n)[0]];
    if (hl_dtype_is_float(src.type.dtype))
      schedule_inner_reduction(L, i, red, n.type.ndim, L.helpers[i].defined() ? t.natural_vector_size(red.output_types()[0]) : vec, false);
    /* with spare elements past its row, as the value's below: a guarded vector tail of one
     * live lane reading the row (a float32 tanh of row sums 5 long, read twice by a where) lost
     * its last element otherwise, bind_whole's Halide 14 fault (the program fuzzer, seed 5302) */
    red.compute_at(at, row);
    if (red.dimensions() > 0) red.align_storage(red.args()[0], kSpare);
    return;
  }
  int r = n.type.ndim;
  int w = lanes_along(vec, (int)n.type.shape[r - 1]);
  Func f = L.funcs[i];
  f.compute_at(at, row).align_storage(hl_vars(r)[0], kSpare);
  if (w > 1) f.vectorize(hl_vars(r)[0], w, TailStrategy::GuardWithIf);
}

void hl_schedule_cpu(hl_lowered &L, const Target &t) {
  const hl_graph *g = L.g;
  std::vector<char> root = materialised(L);
  /* a matmul whose only use is as an output is computed in the output's buffer */
  std::vector<int> output_of(g->nnodes, -1);
  for (int k = 0; k < g->noutputs; k++) {
    int i = g->outputs[k];
    if (L.consumers[i] == 0 && output_of[i] < 0 && g->nodes[i].prim == HL_P_MATMUL && !L.funcs[i].is_extern())
      output_of[i] = k;
  }
  std::vector<char> output_done(g->noutputs, 0);
  std::vector<signed char> across(g->nnodes, -1);   /* reads_across, remembered */
  std::vector<char> bounded = bound_extern_operands(L);
  std::vector<char> extern_input = extern_inputs(L);
  std::vector<int> row_of = rows_computed_in(L, root, bounded, extern_input, across);
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node &n = g->nodes[i];
    if (!root[i] || n.prim == HL_P_PARAM) continue;
    /* lanes of the type the Func computes in (float32 for the 2-byte floats) */
    int vec = t.natural_vector_size(hl_compute_type(n.type.dtype));
    if (row_of[i] >= 0) {
      schedule_in_rows(L, i, t, vec, row_of[i], root);
      continue;
    }
    if (output_of[i] >= 0) {
      schedule_matmul(L, i, vec, L.outputs[0], L.outputs[output_of[i]]);
      output_done[output_of[i]] = 1;
      continue;
    }
    if (hl_prims[n.prim].stage == HL_S_EXTERN) {   /* the loop driver, LAPACK, sorting: on the host */
      L.funcs[i].compute_root();
      continue;
    }
    switch (hl_prims[n.prim].kind) {
    case HL_K_INDEXED:
      if (hl_is_scatter(n.prim)) schedule_scatter(L, i, vec, L.outputs[0]);
      else schedule_root(L.funcs[i], n, sizes_of(L, i), vec, RDom(), L.outputs[0], 0, bounded[i] || bound_whole(L, i), run_total(L, i));
      break;
    case HL_K_MATMUL:
      if (L.funcs[i].is_extern()) L.funcs[i].compute_root();   /* the engine's matmul kernel */
      else schedule_matmul(L, i, vec, L.outputs[0], L.funcs[i]);
      break;
    case HL_K_REDUCE: {
      /* the accumulators are computed whole, their storage with spare elements (bind_whole),
       * as the Funcs of other nodes are (an extern operand's own Func is bound already) */
      auto bind = [&](Func f) {
        if (!bounded[i] || f.name() != L.funcs[i].name()) bound_whole(L, i, f);
      };
      if (n.prim == HL_P_ARGMAX || n.prim == HL_P_ARGMIN) {
        /* the extreme value, then the index search: both along the reduced axis */
        int src = hl_node_inputs(g, &n)[0];
        sizes_known sz = reduce_sizes(L, i, src);
        Expr work = sz == SYMBOLIC ? L.totals[src] : Expr();
        for (Func f : {L.helpers[i], L.funcs[i]}) bind(f);
        schedule_root(L.helpers[i], n, sz, 1, RDom(), L.outputs[0], 0, false, work);
        schedule_root(L.funcs[i], n, sz, 1, RDom(), L.outputs[0], 0, false, work);
      } else {
        /* a reduction along the innermost axis keeps a vector of partial results per row
         * (schedule_inner_reduction); one that keeps that axis runs in blocks of columns
         * (column_update) */
        const hl_node &src = g->nodes[hl_node_inputs(g, &n)[0]];
        bool inner_reduced = src.type.ndim > 0 && (n.attrs.i[0] >> (src.type.ndim - 1) & 1);
        /* a float32 sum reduces in its float64 accumulator, a float max or min in integer
         * keys: the node is the conversion back, inlined */
        Func red = L.helpers[i].defined() ? L.helpers[i] : L.funcs[i];
        bind(red);
        int rvec = L.helpers[i].defined() ? t.natural_vector_size(red.output_types()[0]) : vec;
        int64_t reads = hl_shape_size(src.type.ndim, src.type.shape);
        int src_id = hl_node_inputs(g, &n)[0];
        sizes_known sz = reduce_sizes(L, i, src_id);
        bool big = sz == SIZED && reads >= kParallelMinElems;
        /* rfactor first: Halide 14's rfactor of an update whose pure loops were already fused
         * (the parallel loop of a rank >= 3 result) kept the original loops around the fused
         * one, so every result was summed once per outer iteration (a jitted sum over the last
         * axis of [8,8,256,256] gave 64 x the sum); loops scheduled after it are its own. Eager
         * kernels too: their row sums had run in scalars, 5x the jitted ones' time */
        if (inner_reduced && sz != SYMBOLIC && hl_dtype_is_float(src.type.dtype))
          schedule_inner_reduction(L, i, red, n.type.ndim, rvec, big);
        schedule_root(red, n, sz, inner_reduced ? 1 : rvec, inner_reduced ? RDom() : L.rdoms[i], L.outputs[0], reads, false,
                      sz == SYMBOLIC ? L.totals[src_id] : Expr());
        /* the conversion back is inlined into its consumers, except into an extern stage
         * (sort, LAPACK, a loop), which reads a buffer: there it gets one */
        if (red.name() != L.funcs[i].name() && extern_input[i])
          schedule_root(L.funcs[i], n, sizes_of(L, i), vec, RDom(), L.outputs[0], 0, bounded[i] || bound_whole(L, i), run_total(L, i));
      }
      break;
    }
    default:
      /* (tiles serve any extents: a polymorphic program's transposes are tiled too, parallel where
       * the traced sizes were large) */
      if (!g->dynamic && n.type.ndim >= 2 && reads_across(L, root, i, across))
        schedule_tiled(L.funcs[i], n.type.ndim, vec, hl_shape_size(n.type.ndim, n.type.shape) >= kParallelMinElems);
      else
        schedule_root(L.funcs[i], n, sizes_of(L, i), vec, RDom(), L.outputs[0], 0, bounded[i] || bound_whole(L, i), run_total(L, i));
      break;
    }
  }
  for (Func &f : L.staged) f.compute_root();   /* bit patterns of 2-byte floats for loop stages */
  for (int k = 0; k < g->noutputs; k++) {
    if (output_done[k]) continue;
    int i = g->outputs[k];
    const hl_node &n = g->nodes[i];
    /* lanes of the type the Func computes in (float32 for the 2-byte floats) */
    int vec = t.natural_vector_size(hl_compute_type(n.type.dtype));
    bool parallel = hl_shape_size(n.type.ndim, n.type.shape) >= kParallelMinElems;
    if (L.outputs[k].is_extern()) continue;   /* a transpose of a parameter (hl_transpose.c) */
    if (!g->dynamic && n.type.ndim >= 2 && !root[i] && reads_across(L, root, i, across))
      schedule_tiled(L.outputs[k], n.type.ndim, vec, parallel);
    else
      schedule_root(L.outputs[k], n, sizes_of(L, i), vec, RDom(), L.outputs[k], 0, true, run_total(L, i));
  }
}

/* ---- CUDA ----
 * The same materialisation policy as the CPU; each materialised Func becomes GPU kernels:
 * elementwise work in 256-thread blocks, reductions with one thread per output element (full
 * reductions first reduce blocks of the input in parallel, through rfactor), matmul in 16x16
 * thread tiles with k in registers. cuBLAS comes later as an extern stage. */
namespace {

/* dimensions r-1 down to `inner` of a rank-r stage fused into one loop variable */
Var fused_outer(Stage s, int r, int inner) {
  const std::vector<Var> &v = hl_vars(r);
  Var outer = v[r - 1];
  for (int d = r - 2; d >= inner; d--) {
    Var fused("f" + std::to_string(d) + "_" + std::to_string(inner));
    s.fuse(outer, v[d], fused);
    outer = fused;
  }
  return outer;
}

void gpu_pointwise(Stage s, int r) {
  const std::vector<Var> &v = hl_vars(r);
  if (r == 0) {
    s.gpu_single_thread();
    return;
  }
  Var bx("bx"), tx("tx");
  if (r == 1) {
    s.gpu_tile(v[0], bx, tx, 256, TailStrategy::GuardWithIf);
    return;
  }
  Var outer = fused_outer(s, r, 1);
  Var by("by"), ty("ty");
  s.gpu_tile(v[0], outer, bx, by, tx, ty, 32, 8, TailStrategy::GuardWithIf);
}

/* every dimension fused into one, in 256-thread blocks: elementwise stages and outputs. (2-D
 * tiles of a gathered reshape met a Halide 14 simplifier failure, a false signed overflow while
 * folding the tail block's index, at a conv2d of 1437 images.) */
void gpu_flat(Stage s, int r) {
  if (r == 0) {
    s.gpu_single_thread();
    return;
  }
  Var outer = fused_outer(s, r, 0);
  Var bx("bx"), tx("tx");
  s.gpu_tile(outer, bx, tx, 256, TailStrategy::GuardWithIf);
}

void gpu_reduce(hl_lowered &L, Func f, int r, int i) {
  f.compute_root();
  if (r > 0) {
    gpu_pointwise(f, r);
    for (int u = 0; u < f.num_update_definitions(); u++) gpu_pointwise(f.update(u), r);
    return;
  }
  /* a full reduction: partial results over the outermost reduction variable, in parallel */
  RDom rd = L.rdoms[i];
  RVar outer = rd[rd.dimensions() - 1];
  Var u("u");
  bool rfactored = false;
  for (int k = 0; k < f.num_update_definitions(); k++) {
    RVar ro("ro"), ri("ri");
    Stage st = f.update(k);
    if (rd.dimensions() == 1) st.split(outer, ro, ri, 1024, TailStrategy::GuardWithIf);
    try {
      Func intm = st.rfactor(rd.dimensions() == 1 ? ro : outer, u);
      Var ub("ub"), ut("ut");
      intm.compute_root().gpu_tile(u, ub, ut, 64, TailStrategy::GuardWithIf);
      intm.update().gpu_tile(u, ub, ut, 64, TailStrategy::GuardWithIf);
      rfactored = true;
    } catch (const Halide::Error &) {
      /* rfactor proves associativity by pattern; NaN-propagating max/min are not recognised:
       * those full reductions run in one GPU thread (correct; a two-pass form would be faster) */
      st.gpu_single_thread();
    }
  }
  /* The scalar combines the partial results on the host, where Halide copies them (a few
   * values: one GPU thread would wait for a copy to the device and back). */
  if (!rfactored) gpu_pointwise(f, 0);
}

/* scatter_add's update: one GPU thread per position off the scattered axis, each walking the
 * indices in order (no two threads write one element, so no atomics are needed) */
void gpu_scatter(hl_lowered &L, int i) {
  const hl_node &n = L.g->nodes[i];
  int r = n.type.ndim, hd = r - 1 - (int)n.attrs.i[0];
  Stage u = L.funcs[i].update();
  const std::vector<Var> &v = hl_vars(r);
  std::vector<Var> pure;
  for (int d = 0; d < r; d++)
    if (d != hd) pure.push_back(v[d]);
  if (pure.empty()) {
    u.gpu_single_thread();
    return;
  }
  Var outer = pure.back();
  for (int k = (int)pure.size() - 2; k >= 0; k--) {
    Var fused("sf" + std::to_string(k));
    u.fuse(outer, pure[k], fused);
    outer = fused;
  }
  Var bx("bx"), tx("tx");
  u.gpu_tile(outer, bx, tx, 64, TailStrategy::GuardWithIf);
}

void gpu_matmul(hl_lowered &L, int i) {
  const hl_node &n = L.g->nodes[i];
  int r = n.type.ndim;
  const std::vector<Var> &v = hl_vars(r);
  Func out = L.funcs[i], prod = L.helpers[i];
  Var y = v[1];
  for (int d = 2; d < r; d++) {
    Var fused("b" + std::to_string(d));
    out.fuse(y, v[d], fused);
    y = fused;
  }
  Var bx("bx"), by("by"), tx("tx"), ty("ty");
  out.compute_root().gpu_tile(v[0], y, bx, by, tx, ty, 16, 16, TailStrategy::GuardWithIf);
  prod.compute_at(out, tx);
}

}  // namespace

void hl_schedule_cuda(hl_lowered &L, const Target &t) {
  (void)t;
  const hl_graph *g = L.g;
  std::vector<char> root = materialised(L);
  bound_extern_operands(L);
  std::vector<char> extern_input = extern_inputs(L);
  for (int i = 0; i < g->nnodes; i++) {
    const hl_node &n = g->nodes[i];
    if (!root[i] || n.prim == HL_P_PARAM) continue;
    if (hl_empty_on_cuda(g, i)) {   /* an extern stage's empty operand: a host buffer of nothing */
      L.funcs[i].compute_root();
      continue;
    }
    if (hl_prims[n.prim].stage == HL_S_EXTERN) {   /* host stages; a loop's body runs as a pipeline of its own */
      L.funcs[i].compute_root();
      continue;
    }
    switch (hl_prims[n.prim].kind) {
    case HL_K_INDEXED:
      L.funcs[i].compute_root();
      if (hl_is_scatter(n.prim)) {
        gpu_pointwise(L.funcs[i], n.type.ndim);
        gpu_scatter(L, i);
      } else {
        gpu_flat(L.funcs[i], n.type.ndim);
      }
      break;
    case HL_K_MATMUL:
      if (L.funcs[i].is_extern()) {
        L.funcs[i].compute_root();   /* cuBLAS */
      } else if (L.helpers[i].defined() && L.helpers[i].is_extern()) {
        L.helpers[i].compute_root();   /* cuBLAS, then zeros where K = 0 */
        L.funcs[i].compute_root();
        gpu_flat(L.funcs[i], n.type.ndim);
      } else if (!L.helpers[i].defined()) {   /* zeros: a product over K = 0 */
        L.funcs[i].compute_root();
        gpu_flat(L.funcs[i], n.type.ndim);
      } else {
        gpu_matmul(L, i);
      }
      break;
    case HL_K_REDUCE:
      if (n.prim == HL_P_ARGMAX || n.prim == HL_P_ARGMIN) {
        /* two passes whose second depends on the first's value: one thread per output */
        for (Func f : {L.helpers[i], L.funcs[i]}) {
          f.compute_root();
          gpu_pointwise(f, n.type.ndim);
          gpu_pointwise(f.update(), n.type.ndim);
        }
      } else {
        gpu_reduce(L, L.helpers[i].defined() ? L.helpers[i] : L.funcs[i], n.type.ndim, i);
        /* the conversion back from the accumulator's type is inlined into its consumers, except
         * into an extern stage (sort, LAPACK, a loop), which reads a buffer: there it gets one */
        if (L.helpers[i].defined() && extern_input[i]) {
          L.funcs[i].compute_root();
          gpu_flat(L.funcs[i], n.type.ndim);
        }
      }
      break;
    default:
      L.funcs[i].compute_root();
      gpu_flat(L.funcs[i], n.type.ndim);
      break;
    }
  }
  for (Func &f : L.staged) {
    f.compute_root();
    gpu_flat(f, f.dimensions());
  }
  for (int k = 0; k < g->noutputs; k++) {
    const hl_type &t = g->nodes[g->outputs[k]].type;
    /* an empty output is left to the host: a GPU kernel of no blocks fails to launch */
    if (hl_shape_size(t.ndim, t.shape) > 0) gpu_flat(L.outputs[k], t.ndim);
  }
}

/* ---- Halide's autoscheduler (opt-in) ---- */

/* The plugin lives beside Debian's libHalide, in its halide14/ directory. */
static void load_mullapudi(void) {
  static std::once_flag once;
  static std::string failure;
  std::call_once(once, [] {
    Dl_info info;
    std::string dir;
    if (dladdr((void *)&Halide::load_plugin, &info) && info.dli_fname) {
      dir = info.dli_fname;
      dir = dir.substr(0, dir.rfind('/') + 1);
    }
    for (const std::string &path : {dir + "halide14/libautoschedule_mullapudi2016.so", std::string("libautoschedule_mullapudi2016.so")}) {
      try {
        load_plugin(path);
        failure.clear();
        return;
      } catch (const std::exception &e) {
        failure = e.what();
      }
    }
  });
  if (!failure.empty()) throw CompileError("halua: the Mullapudi2016 autoscheduler plugin did not load: " + failure);
}

static Region estimate_of(const hl_node &n) {
  Region r;
  for (int d = n.type.ndim - 1; d >= 0; d--) r.push_back(Range(0, (int)n.type.shape[d]));
  return r;
}

void hl_schedule_auto(hl_lowered &L, const Target &t) {
  const hl_graph *g = L.g;
  /* Mullapudi2016 in Halide 14 fails on extern stages (an undefined buffer in its bounds pass) */
  for (int i = 0; i < g->nnodes; i++) {
    if (hl_prims[g->nodes[i].prim].stage == HL_S_EXTERN)
      throw CompileError(std::string("schedule \"auto\" cannot schedule ") + hl_prims[g->nodes[i].prim].name +
                         " (an extern stage the Mullapudi2016 autoscheduler does not handle); leave the schedule option out");
  }
  load_mullapudi();
  for (int i = 0; i < g->nnodes; i++)
    if (g->nodes[i].prim == HL_P_PARAM) L.params[g->nodes[i].attrs.i[0]].set_estimates(estimate_of(g->nodes[i]));
  for (int k = 0; k < g->noutputs; k++) L.outputs[k].set_estimates(estimate_of(g->nodes[g->outputs[k]]));
  unsigned cores = std::thread::hardware_concurrency();
  /* the machine: its cores, a 32 MiB last-level cache, loads 40x an arithmetic op (Halide's
   * generic balance) */
  MachineParams machine((int)(cores ? cores : 1), 32ull << 20, 40);
  Pipeline(L.outputs).auto_schedule("Mullapudi2016", t, machine);
}
