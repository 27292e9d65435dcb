/* A big program as several Halide pipelines run one after another, chained through buffers.
 *
 * Halide 14 nests each buffered stage's realization around everything after it, and several of
 * its passes walk that nest once per stage (fork_async_producers tightens every consume node by
 * scanning what follows it; bounds inference, inlining and LLVM's function passes grow with it):
 * a pipeline's compile time grows with the square or cube of its stages. A jitted training step
 * of a 16-layer MLP (160 stages) spent 19 s compiling where 4 layers took 2.5 s. Cut into parts
 * of a bounded size, the compile is linear in the program; each part is an ordinary pipeline of
 * its own sub-graph, lowered and scheduled as any other.
 *
 * Only CPU jit pipelines are cut (the buffers between parts live on the host): eager kernels are
 * one primitive, CUDA pipelines would need device buffers between parts, and an autoscheduled
 * pipeline is Mullapudi2016's to schedule whole. A polymorphic program (hl.jit's dynamic_axes) is
 * cut too: each part gets its share of the program's table of sizes and the parameters its
 * symbols are read from, and the buffers between parts are sized at each run from the call's
 * symbols. The plan is a function of the program alone, made in the graph's canonical order
 * (hl_graph_canonical), so a kernel loaded from the disk cache finds the parts it was compiled
 * with whatever order its program was traced in.
 *
 * A program that repeats itself (a deep network's layers, their gradients and updates) is cut
 * where its content repeats, so that its parts repeat too: parts with one program share one
 * compiled function (hl_plan::same_as). A 16-layer MLP's training step is 26 parts of 8 programs.
 * There, scalar constants that sums and products use are read from buffers (hl_plan::constants):
 * the rounds of an unrolled loop that differ in such a constant (i * 1e-6) are one program. */
#ifndef HL_PARTITION_H
#define HL_PARTITION_H
#include <vector>
extern "C" {
#include "hl_ir.h"
#include "hl_sym_table.h"
}

/* Most non-trivial nodes in one part (constants, parameters and views of them are copied into
 * each part that reads them and count for nothing). Measured on the 16-layer MLP step (411 nodes)
 * and 400 unrolled tanh rounds (1200): parts of 12 to 24 nodes compile fastest, 48 took 15% more,
 * one pipeline 2-3x more; the run time did not change. */
const int kPartNodes = 24;
/* A program that repeats itself is cut where its content says (hl_partition.cpp, cut_points): a
 * part ends at an anchor once it has kRepeatMin nodes, else at kPartMax; an anchor's hash is the
 * least within kAnchorReach places either side. Parts of 4 nodes made the 8-layer MLP step run
 * 10% slower (more buffers between parts); at 8 its run time does not change. */
const int kRepeatMin = 8, kPartMax = 40, kAnchorReach = 12;
/* ... and kept when its distinct parts, each compiled once, hold at most this share of its nodes */
const double kRepeatShare = 0.7;

/* A buffer of the run: slots 0..nparams-1 are the kernel's arguments, then its outputs, then the
 * values one part hands to a later one. */
struct hl_part {
  hl_graph g;                /* its program: PARAMs for what it reads from slots, its outputs */
  std::vector<int> slots;    /* the slot of each of g's parameters, then of each of its outputs */
};

/* an extent of a buffer between parts: the traced one, or for a polymorphic program (hl.jit's
 * dynamic_axes) its form in the symbols, which the run evaluates at the call's sizes */
struct hl_between_extent {
  bool symbolic = false;
  hl_sym_slot form{};
};

struct hl_plan {
  int nparams = 0, noutputs = 0;
  std::vector<hl_part> parts;
  std::vector<hl_type> between;   /* the type of each slot after the outputs */
  /* a polymorphic program's symbols (where they are read: parameter and numpy axis) and the
   * forms of its between buffers' extents (per slot, per numpy axis); nsym 0 otherwise */
  int nsym = 0, sym_param[HL_MAX_SYMS] = {0}, sym_axis[HL_MAX_SYMS] = {0};
  std::vector<std::vector<hl_between_extent>> between_extents;
  std::vector<int> born, dies;    /* per such slot: the part that writes it, the last that reads it */
  std::vector<int> same_as;       /* per part: the first part with the same program (itself if none) */
  /* constants a repeated program's parts read from buffers (hl_partition.cpp, liftable): slots
   * after the buffers between parts, each a scalar of its dtype */
  struct constant {
    hl_dtype dtype;
    union {   /* the value as its buffer holds it */
      float f32;
      double f64;
    } value;
  };
  std::vector<constant> constants;
  std::vector<int> distinct() const;   /* the parts whose program is their own: those compiled */
  /* the same, the costliest to compile first (by a part's stages: a matrix product is a tiled
   * kernel of many vector statements, a reduction has an update, an elementwise node is one
   * statement), so that workers taking them in turn finish together: the longest first */
  std::vector<int> distinct_costliest_first() const;
  hl_plan() = default;
  void clear();   /* (no parts, no buffers between them) */
  hl_plan(const hl_plan &) = delete;
  hl_plan &operator=(const hl_plan &) = delete;
  ~hl_plan();
};

/* Cuts g into parts when it is a CPU jit program larger than one part; false (plan untouched)
 * when it stays one pipeline. Throws std::runtime_error with the engine's message on failure. */
bool hl_plan_make(const hl_graph *g, hl_plan &plan);

#endif
