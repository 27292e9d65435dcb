/* The host copies of the buffers a CUDA pipeline's host code reads (hl_host_reads.h). */
#include "hl_host_reads.h"
#include <set>
#include <string>

using namespace Halide;
using namespace Halide::Internal;

namespace {

/* a loop of a GPU kernel: its body reads device memory */
bool kernel_loop(const For *op) {
  return op->for_type == ForType::GPUBlock || op->for_type == ForType::GPUThread || op->for_type == ForType::GPULane ||
         op->device_api == DeviceAPI::CUDA;
}

/* "NAME.buffer" names NAME's halide_buffer_t */
bool buffer_of(const std::string &var, std::string *name) {
  const std::string suffix = ".buffer";
  if (var.size() <= suffix.size() || var.compare(var.size() - suffix.size(), suffix.size(), suffix) != 0) return false;
  *name = var.substr(0, var.size() - suffix.size());
  return true;
}

Expr buffer_var(const std::string &name) { return Variable::make(type_of<halide_buffer_t *>(), name + ".buffer"); }

/* the buffers host code loads, or copies to the host for a host stage, outside the GPU loops */
struct HostReads : IRVisitor {
  std::set<std::string> read, buffers;   /* (buffers: those with a halide_buffer_t, "NAME.buffer") */
  using IRVisitor::visit;
  void visit(const For *op) override {
    if (kernel_loop(op)) {
      op->min.accept(this);   /* (the body is a kernel: it reads device memory) */
      op->extent.accept(this);
      return;
    }
    IRVisitor::visit(op);
  }
  void visit(const LetStmt *op) override {
    std::string name;
    if (buffer_of(op->name, &name)) buffers.insert(name);
    IRVisitor::visit(op);
  }
  void visit(const Load *op) override {
    read.insert(op->name);
    IRVisitor::visit(op);
  }
  void visit(const Call *op) override {
    std::string name;
    if (op->name == "halide_copy_to_host" && op->args.size() == 1)
      if (const Variable *v = op->args[0].as<Variable>())
        if (buffer_of(v->name, &name)) read.insert(name);
    IRVisitor::visit(op);
  }
};

/* a scratch buffer the host code reads gets halide_copy_to_host as soon as it is produced (a
 * no-op where it was not written on the device, or where Halide's own copy came first); only
 * where its halide_buffer_t is in scope, and never inside a kernel */
struct CopyAfterProduce : IRMutator {
  const std::set<std::string> &names;
  std::multiset<std::string> in_scope;   /* NAME of each enclosing "NAME.buffer" let */
  explicit CopyAfterProduce(const std::set<std::string> &n) : names(n) {}
  using IRMutator::visit;
  Stmt visit(const For *op) override { return kernel_loop(op) ? Stmt(op) : IRMutator::visit(op); }
  Stmt visit(const LetStmt *op) override {
    std::string name;
    bool buffer = buffer_of(op->name, &name);
    if (buffer) in_scope.insert(name);
    Stmt s = IRMutator::visit(op);
    if (buffer) in_scope.erase(in_scope.find(name));
    return s;
  }
  Stmt visit(const ProducerConsumer *op) override {
    Stmt s = IRMutator::visit(op);
    if (!op->is_producer || !names.count(op->name) || !in_scope.count(op->name)) return s;
    return Block::make(s, Evaluate::make(Call::make(Int(32), "halide_copy_to_host", {buffer_var(op->name)}, Call::Extern)));
  }
};

/* a custom lowering pass: runs once, on the whole lowered statement (before the GPU loops are
 * split off into kernels, after the buffers' fields were unpacked into lets at its top) */
struct CopyHostReads : IRMutator {
  std::set<std::string> inputs;
  using IRMutator::mutate;
  Stmt mutate(const Stmt &s) override {
    HostReads r;
    s.accept(&r);
    std::set<std::string> scratch, copied;
    for (const std::string &name : r.read) {
      if (inputs.count(name)) copied.insert(name);
      else if (r.buffers.count(name)) scratch.insert(name);
    }
    Stmt out = scratch.empty() ? s : CopyAfterProduce(scratch).mutate(s);
    /* the rest runs only when the copy was made: a failure (recorded by the stage, which fails
     * the call) must not go on to the host loads (the pipeline's asserts are compiled out) */
    for (auto it = copied.rbegin(); it != copied.rend(); ++it) {
      std::string name = *it + ".host_copy_result";
      Expr copy = Call::make(Int(32), "hl_input_host_copy", {buffer_var(*it)}, Call::Extern);
      out = LetStmt::make(name, copy, IfThenElse::make(Variable::make(Int(32), name) == 0, out));
    }
    return out;
  }
};

}  // namespace

void hl_copy_host_reads(Pipeline &p, const std::vector<ImageParam> &inputs) {
  CopyHostReads *pass = new CopyHostReads;
  for (const ImageParam &in : inputs) pass->inputs.insert(in.name());
  p.add_custom_lowering_pass(pass);
}
