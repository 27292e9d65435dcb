/* Mends for Halide 14's code generator (hl_codegen_mends.h). Both faults came with constant
 * extents (declared bounds: declare_bounds, hl_lower.cpp), where a vector's start is a constant.
 *
 * 1. A load's alignment. Halide annotates every load with what it knows of its index, modulo a
 * modulus; a modulus of 0 means the index is a known constant (the remainder). The code
 * generator turns a load of stride 2, 3 or 4 into dense loads from an aligned start: it moves
 * the start down by the index's offset within the stride and takes the offset off the remainder
 * with mod_imp(r - offset, modulus), which for a modulus of 0 is 0 (Halide's division by zero),
 * not r - offset. A constant start then passes for aligned to the whole vector. The last vector
 * of a stage that shifts inwards starts at a constant where the stage's extent is known, so
 * reading the imaginary parts of a complex buffer there (stride 2, offset 1) emitted an aligned
 * 32-byte load 16 bytes into the buffer (vmovapd: a crash; CodeGen_LLVM.cpp, visit(const Load *)).
 * The same fact with a power of two as the modulus says as much to the code generator's uses of
 * it (none looks at more than a vector's width of it) and goes through that arithmetic right.
 * (The code generator's own simplify() calls on expressions around a load, a float mod or a
 * division by a variable, would work a modulus of 0 out again; halua's lowering gives them no
 * strided loads of a constant start that we know of.)
 *
 * 2. A guarded vector that starts before its buffer. A vectorised reduction's last vector is
 * guarded (its lanes past the end masked off); reading a flipped input, its lanes run
 * backwards, so the masked lanes of a constant start lie before the buffer's first element. The
 * code generator loads such a vector whole, masked, and its alias metadata asserts that a
 * constant start is not negative (CodeGen_LLVM.cpp:1899, add_tbaa_metadata): a jitted
 * sum(flip(x) * 2, 2) of a [1, n] failed to compile. That load becomes one scalar load per lane
 * under the lane's condition, as the code generator does itself with a guarded load it cannot
 * vectorise. (Stores need nothing: every store is at its own Func's coordinates, which start at
 * its buffer's first element.) */
#include "hl_codegen_mends.h"

using namespace Halide;
using namespace Halide::Internal;

namespace {

/* more than any vector's lanes: the modulus stands for "exactly", for every width */
const int64_t EXACT_MODULUS = (int64_t)1 << 20;

/* a load whose predicate masks lanes off and whose index, of constant start and stride, has a
 * lane before the buffer's first element. Only masked loads: an unmasked lane before the buffer
 * would be a fault of the schedule, which the code generator's assert should still report. */
bool masked_before(const Load *l) {
  const Ramp *ramp = l->index.as<Ramp>();
  if (!ramp || is_const_one(l->predicate)) return false;
  const int64_t *base = as_const_int(ramp->base), *stride = as_const_int(ramp->stride);
  return base && stride && *base + std::min<int64_t>(0, *stride * (ramp->lanes - 1)) < 0;
}

struct Mends : IRMutator {
  using IRMutator::visit;
  Expr visit(const Load *op) override {
    Expr e = IRMutator::visit(op);
    const Load *l = e.as<Load>();
    if (!l) return e;
    ModulusRemainder align = l->alignment;   /* (1) */
    if (align.modulus == 0) {
      int64_t r = align.remainder % EXACT_MODULUS;
      align = ModulusRemainder(EXACT_MODULUS, r < 0 ? r + EXACT_MODULUS : r);
    }
    if (masked_before(l)) {   /* (2) */
      Expr whole = Load::make(l->type, l->name, l->index, l->image, l->param, const_true(l->type.lanes()), align);
      return Call::make(l->type, Call::if_then_else, {l->predicate, whole}, Call::PureIntrinsic);
    }
    if (align == l->alignment) return e;
    return Load::make(l->type, l->name, l->index, l->image, l->param, l->predicate, align);
  }
};

}  // namespace

void hl_add_codegen_mends(Pipeline &p) { p.add_custom_lowering_pass(new Mends); }
