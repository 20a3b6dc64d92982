// Vantage kernel handles: see vantage/kernel.hpp and handles.h.
#ifdef VANTAGE_HAVE_CPU_BACKEND
#include "jit/cpu/cpu.h"
#endif
#include "jit/cost/cost.h"
#include "jit/ir/eval.h"
#include "jit/ir/mutate.h"
#include "jit/ir/printer.h"
#include "jit/pipeline/handles.h"
#include "jit/pipeline/pipeline.h"
#include "vantage/compile.hpp"
#include "vantage/report.hpp"

namespace vantage {
namespace detail {

Kernel KernelAccess::make(std::shared_ptr<const ir::KernelNode> ir, std::vector<Obligation> obligations,
                          std::int64_t shared_bytes, CompilerOptions compiler) {
  Kernel k;
  auto data = std::make_shared<KernelData>();
  data->ir = std::move(ir);
  data->obligations = std::move(obligations);
  data->shared_bytes = shared_bytes;
  data->compiler = std::move(compiler);
  k.data_ = std::move(data);
  return k;
}

}  // namespace detail

Kernel Kernel::with_compiler(CompilerOptions options) const {
  const detail::KernelData& d = detail::KernelAccess::data(*this);
  return detail::KernelAccess::make(d.ir, d.obligations, d.shared_bytes, std::move(options));
}

const CompilerOptions& Kernel::compiler() const { return detail::KernelAccess::data(*this).compiler; }

namespace detail {

DeviceFunction KernelAccess::make(ir::FunctionPtr ir) {
  DeviceFunction f;
  f.data_ = std::make_shared<const FunctionData>(FunctionData{std::move(ir)});
  return f;
}

const KernelData& KernelAccess::data(const Kernel& k) {
  ir_ptr(k);  // the V0905 check
  return *k.data_;
}

// Here, beside `data`, so that the launch path's lookup of a kernel's table is one call.
// A made slot is read with one acquire load (call_once costs a thread-local lookup every call).
KernelSlot& kernel_slot(const Kernel& kernel, std::unique_ptr<KernelSlot> (*make)(const Kernel&)) {
  const KernelData& d = KernelAccess::data(kernel);
  if (KernelSlot* s = d.launch_ready.load(std::memory_order_acquire)) return *s;
  std::call_once(d.launch_once, [&] {
    d.launch = make(kernel);
    d.launch_ready.store(d.launch.get(), std::memory_order_release);
  });
  return *d.launch;
}

const std::shared_ptr<const ir::KernelNode>& KernelAccess::ir_ptr(const Kernel& k) {
  if (!k.data_) throw CheckError({{"V0905", "this Kernel was never built (a default-constructed handle)", {}, {}}});
  return k.data_->ir;
}
const ir::KernelNode& KernelAccess::ir(const Kernel& k) { return *ir_ptr(k); }

const ir::FunctionPtr& KernelAccess::ir(const DeviceFunction& f) {
  static const ir::FunctionPtr kNone;
  return f.data_ ? f.data_->ir : kNone;
}

}  // namespace detail

namespace {
const std::string kEmpty;
const std::vector<Obligation> kNoObligations;
}  // namespace

const std::string& Kernel::name() const { return data_ ? data_->ir->name : kEmpty; }
std::string Kernel::ir_text() const { return data_ ? ir::print(*data_->ir) : std::string(); }
std::uint64_t Kernel::structural_hash() const { return data_ ? data_->ir->hash : 0; }
bool Kernel::structurally_equal(const Kernel& other) const {
  if (!data_ || !other.data_) return data_ == other.data_;
  return ir::equal(*data_->ir, *other.data_->ir);
}
const std::vector<Obligation>& Kernel::obligations() const { return data_ ? data_->obligations : kNoObligations; }
std::int64_t Kernel::shared_bytes() const { return data_ ? data_->shared_bytes : 0; }

std::string Kernel::source(const Spec& spec) const { return specialize_for(*this, spec).source; }
std::string Kernel::lowered(const Spec& spec) const { return lower::print(pipeline::lower_for(*this, spec).lowered); }
std::string Kernel::llvm_ir(const Spec& spec, bool optimized) const {
#ifdef VANTAGE_HAVE_CPU_BACKEND
  auto m = cpu::generate(pipeline::lower_for(*this, spec).lowered, "vt_cpu_" + name());
  return optimized ? cpu::optimized_ir(std::move(m), 3) : m.ir();
#else
  (void)spec;
  (void)optimized;
  throw ToolchainError("this build of Vantage has no CPU backend");
#endif
}
CostReport Kernel::report(const Spec& spec, const std::map<std::string, std::int64_t>& values,
                          std::int64_t blocks) const {
  if (!data_) throw std::invalid_argument("report: an undefined kernel");
  if (blocks < 1) throw std::invalid_argument("report: a launch has at least one block, not " + std::to_string(blocks));
  for (const auto& [name, v] : values) {
    bool known = false;
    for (const auto& p : data_->ir->params) known = known || p.name == name;
    if (!known) throw std::invalid_argument("report: kernel '" + this->name() + "' has no parameter '" + name + "'");
  }
  // A specialized parameter's value given among the values specializes the kernel to it.
  Spec full = spec;
  for (const auto& p : data_->ir->params)
    if (p.specialized && values.count(p.name) && !full.sizes.count(p.name)) full.sizes[p.name] = values.at(p.name);
  auto lk = pipeline::lower_for(*this, full);
  const auto& params = data_->ir->params;
  ir::VarMap scalars;
  std::vector<std::int64_t> args(params.size(), 0);
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    if (!p.var) continue;
    auto given = values.find(p.name);
    auto fixed = full.sizes.find(p.name);
    if (given != values.end()) {
      args[i] = given->second;
    } else if (fixed != full.sizes.end()) {
      args[i] = fixed->second;
    } else if (!is_integer(p.var->type)) {
      continue;  // a float or bool value never decides an address or a trip count the report follows
    } else {
      throw std::invalid_argument("report: give a value for parameter '" + p.name + "' of kernel '" + this->name() +
                                  "' (its cost depends on it)");
    }
    scalars.emplace(p.var.get(), ir::int_literal(p.var->type, args[i], p.loc));
  }
  for (std::size_t i = 0; i < params.size(); ++i) {
    const auto& p = params[i];
    if (!p.mem) continue;
    auto given = values.find(p.name);
    std::optional<std::int64_t> ext;
    if (given != values.end()) {
      ext = given->second;
    } else if (p.extent) {
      ext = ir::const_int(ir::substitute(p.extent, scalars));
    }
    args[i] = ext.value_or(std::int64_t{1} << 40);
  }
  cost::Options o;
  o.blocks = blocks;
  return cost::analyze(lk.lowered, args, o);
}

std::string Kernel::ptx(const Spec& spec) const { return compile(*this, spec, Output::Ptx).ptx; }
std::vector<char> Kernel::cubin(const Spec& spec) const { return compile(*this, spec, Output::Cubin).cubin; }

const std::string& DeviceFunction::name() const { return data_ ? data_->ir->name : kEmpty; }
std::string DeviceFunction::ir_text() const { return data_ ? ir::print(*data_->ir) : std::string(); }

}  // namespace vantage
