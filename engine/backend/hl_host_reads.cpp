/* The host copies of a CUDA pipeline's host-read inputs (hl_host_reads.h). */
#include "hl_host_reads.h"
#include <set>
#include <string>

using namespace Halide;
using namespace Halide::Internal;

namespace {

/* the inputs host code loads, or copies to the host for a host stage, outside the GPU loops */
struct HostReads : IRVisitor {
  const std::set<std::string> &inputs;
  std::set<std::string> read;
  explicit HostReads(const std::set<std::string> &in) : inputs(in) {}
  using IRVisitor::visit;
  void visit(const For *op) override {
    if (op->for_type == ForType::GPUBlock || op->for_type == ForType::GPUThread || op->for_type == ForType::GPULane ||
        op->device_api == DeviceAPI::CUDA) {
      op->min.accept(this);   /* (the body is a kernel: it reads device memory) */
      op->extent.accept(this);
      return;
    }
    IRVisitor::visit(op);
  }
  void visit(const Load *op) override {
    if (inputs.count(op->name)) read.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Call *op) override {
    if (op->name == "halide_copy_to_host" && op->args.size() == 1)
      if (const Variable *v = op->args[0].as<Variable>()) {
        const std::string suffix = ".buffer";
        if (v->name.size() > suffix.size() && v->name.compare(v->name.size() - suffix.size(), suffix.size(), suffix) == 0) {
          std::string name = v->name.substr(0, v->name.size() - suffix.size());
          if (inputs.count(name)) read.insert(name);
        }
      }
    IRVisitor::visit(op);
  }
};

/* a custom lowering pass: runs once, on the whole lowered statement (before the GPU loops are
 * split off into kernels, after the buffers' fields were unpacked into lets at its top) */
struct CopyHostReads : IRMutator {
  std::set<std::string> inputs;
  using IRMutator::mutate;
  Stmt mutate(const Stmt &s) override {
    HostReads r(inputs);
    s.accept(&r);
    Stmt out = s;
    /* the rest runs only when the copy was made: a failure (recorded by the stage, which fails
     * the call) must not go on to the host loads (the pipeline's asserts are compiled out) */
    for (auto it = r.read.rbegin(); it != r.read.rend(); ++it) {
      Expr buf = Variable::make(type_of<halide_buffer_t *>(), *it + ".buffer");
      std::string name = *it + ".host_copy_result";
      Expr copied = Call::make(Int(32), "hl_input_host_copy", {buf}, Call::Extern);
      out = LetStmt::make(name, copied, IfThenElse::make(Variable::make(Int(32), name) == 0, out));
    }
    return out;
  }
};

}  // namespace

void hl_copy_host_read_inputs(Pipeline &p, const std::vector<ImageParam> &inputs) {
  CopyHostReads *pass = new CopyHostReads;
  for (const ImageParam &in : inputs) pass->inputs.insert(in.name());
  p.add_custom_lowering_pass(pass);
}
