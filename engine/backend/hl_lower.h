/* Internal to the backend: the Halide form of a graph, shared by lowering and scheduling. */
#ifndef HL_LOWER_H
#define HL_LOWER_H
#include <Halide.h>
#include <vector>
extern "C" {
#include "hl_ir.h"
}

/* Halide's dimension 0 is the innermost: numpy axis a of a rank-r node is Halide dim r-1-a. */
struct hl_lowered {
  const hl_graph *g = nullptr;
  std::vector<Halide::Func> funcs;        /* one per node */
  std::vector<Halide::Func> helpers;      /* per node: the reduction stage behind it, if any */
  std::vector<Halide::RDom> rdoms;        /* per node: its reduction domain, if any */
  std::vector<int> consumers;             /* per node */
  std::vector<Halide::ImageParam> params; /* one per PARAM, in argument order */
  std::vector<Halide::Func> outputs;      /* one per graph output */
  std::vector<Halide::Func> staged;       /* CUDA: copies of parameters that host stages read */
  /* per node: a CPU matmul's B operand read with its columns clamped, which the schedule packs
   * per tile of columns (a narrow product then computes whole vectors: hl_schedule.cpp) */
  std::vector<Halide::Func> panels;
  /* a polymorphic program's element count of each node, from its symbols at run time (the
   * schedules choose parallel loops by it); empty otherwise */
  std::vector<Halide::Expr> totals;
  /* for hl.export: every stage the pipeline calls must be linkable without the engine (a matmul
   * is a Halide definition, not a call to the engine's cached kernel) */
  bool exporting = false;
};

Halide::Type hl_halide_type(hl_dtype t);    /* a buffer's element type */
/* the same as a run's buffer descriptor holds it, from a table (it is on every run's path, where
 * building a Halide::Type was 5% of a small eager op); a complex dtype's is empty: such arrays
 * bind as their float pairs */
halide_type_t hl_buffer_type(hl_dtype t);
Halide::Type hl_compute_type(hl_dtype t);   /* a Func's value type: float32 for float16 and bfloat16 */
/* float16/bfloat16: float32 to the dtype's bits, bits to float32, any value to the float32 that
 * holds its nearest dtype value (see hl_lower.cpp) */
Halide::Expr hl_half_encode(Halide::Expr x, hl_dtype t);
Halide::Expr hl_half_decode(Halide::Expr bits, hl_dtype t);
Halide::Expr hl_half_round(Halide::Expr x, hl_dtype t);
const std::vector<Halide::Var> &hl_vars(int rank);   /* x0 .. x{rank-1} */

/* |x| of a float by its bits (Halide's abs keeps -0.0 without fast-math) */
Halide::Expr hl_fabs(Halide::Expr x);
/* NaN/Inf tests that survive LLVM's float optimisations (bit-pattern tests). */
Halide::Expr hl_is_nan(Halide::Expr x);
Halide::Expr hl_is_inf(Halide::Expr x);
Halide::Expr hl_is_finite(Halide::Expr x);

/* Node i of a CUDA pipeline holds no elements: it is lowered as a constant, and computed (when an
 * extern stage needs its buffer) on the host. */
bool hl_empty_on_cuda(const hl_graph *g, int i);

/* A CPU product of dtype dt in g is the engine's cached matmul kernel, called as an extern stage,
 * rather than Halide's own definition (2-byte floats, eager kernels, the autoscheduler's and
 * exported programs, HALUA_FUSED_MATMUL). */
bool hl_matmul_is_kernel(const hl_graph *g, hl_dtype dt, bool exporting);

/* IEEE arithmetic for a CPU program of several operations (jitted, autoscheduled or exported; not
 * an eager kernel, one operation with nothing to cancel; CUDA not yet), after its schedule
 * (rfactor must see the plain updates); nothing for other programs. Under fast-math Halide's
 * simplifier cancels float terms (x - x is 0, x / x is 1, (x + 2) - x is 2) and LLVM folds
 * comparisons as if no value were inf or NaN, so such programs gave other results than eagerly
 * and than NumPy. Every float value of every definition in the pipeline becomes strict (Halide's
 * strict_float: no algebra in the simplifier, no fast-math flags in LLVM), except two kinds,
 * which consumers then read strictly: the transcendental functions, whose polynomials
 * hl_vmath.cpp writes for fast-math, and the sums of a product Halide computes itself, which
 * need fused multiply-adds (the engine's matmul kernel, an extern stage, keeps them too). Run
 * time: nothing measurable in paired runs (docs/halide.md). Halide 14's own StrictFloat target
 * wraps every subexpression of every definition, with no exceptions: twice the IR for its passes
 * (1.4x the compile of a chain of tanh), and no fused multiply-adds in products. */
void hl_lower_ieee(hl_lowered &L);
/* Build the algorithm (no schedule). Throws Halide::Error on failure. */
void hl_lower_graph(const hl_graph *g, hl_lowered &L);
/* Give every Func a CPU schedule for target t. */
void hl_schedule_cpu(hl_lowered &L, const Halide::Target &t);
/* ... or a CUDA schedule: every materialised Func becomes GPU kernels. */
void hl_schedule_cuda(hl_lowered &L, const Halide::Target &t);
/* The pipeline of a lowered and scheduled graph, with its arguments appended to args: IEEE
 * arithmetic (hl_lower_ieee, after the schedule: rfactor must see the plain updates) and the
 * mends of Halide's code generator (hl_codegen_mends.h). Every pipeline halua compiles is made
 * here. */
Halide::Pipeline hl_pipeline(hl_lowered &L, std::vector<Halide::Argument> &args);
/* hl.jit(f, {schedule = "auto"}): Halide's Mullapudi2016 autoscheduler on the whole CPU pipeline,
 * with the traced shapes as its estimates, for comparison with halua's own schedules */
void hl_schedule_auto(hl_lowered &L, const Halide::Target &t);
#endif
