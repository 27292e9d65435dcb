/* Mends for Halide 14's code generator (hl_codegen_mends.h).
 *
 * A load's alignment: Halide annotates every load with what it knows of its index, modulo a
 * modulus; a modulus of 0 means the index is a known constant (the remainder). The code generator
 * turns a load of stride 2, 3 or 4 into dense loads from an aligned start: it moves the start
 * down by the index's offset and takes the offset off the remainder with mod_imp(r - offset,
 * modulus), which for a modulus of 0 is 0 (Halide's division by zero), not r - offset. A constant
 * start then passes for aligned to the whole vector. The last vector of a stage that shifts
 * inwards starts at a constant where the stage's extent is known, so reading the imaginary
 * parts of a complex buffer there (stride 2, offset 1) emitted an aligned 32-byte load 16 bytes
 * into the buffer (vmovapd: a crash; CodeGen_LLVM.cpp, visit(const Load *)).
 *
 * The same fact with a power of two as the modulus says as much to every use of it (the code
 * generator never looks at more than the vector's width of it) and goes through that arithmetic
 * right. */
#include "hl_codegen_mends.h"

using namespace Halide;
using namespace Halide::Internal;

namespace {

/* more than any vector's lanes: the modulus stands for "exactly", for every width */
const int64_t EXACT_MODULUS = (int64_t)1 << 20;

struct ExactAlignment : IRMutator {
  using IRMutator::visit;
  Expr visit(const Load *op) override {
    Expr e = IRMutator::visit(op);
    const Load *l = e.as<Load>();
    if (!l || l->alignment.modulus != 0) return e;
    int64_t r = l->alignment.remainder % EXACT_MODULUS;
    ModulusRemainder same(EXACT_MODULUS, r < 0 ? r + EXACT_MODULUS : r);
    return Load::make(l->type, l->name, l->index, l->image, l->param, l->predicate, same);
  }
};

}  // namespace

void hl_add_codegen_mends(Pipeline &p) { p.add_custom_lowering_pass(new ExactAlignment); }
