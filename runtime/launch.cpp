// Vantage launches: see vantage/launch.hpp. Every check happens before anything runs, in the order
// of DESIGN.md section 7: the specialization, the residual guards, each argument against the
// signature (count, kind, type, constness, extent against the buffer's length, alignment), overlap
// of a writable buffer with any other, then the launch shape.
#include "vantage/launch.hpp"

#include <chrono>
#include <cstdint>

#include "jit/interp/interp.h"
#include "jit/ir/eval.h"
#include "jit/ir/mutate.h"
#include "jit/ir/printer.h"
#include "jit/pipeline/handles.h"
#include "jit/pipeline/pipeline.h"

namespace vantage {
namespace {

std::string kind_of(const LaunchArg& a) {
  return a.is_buffer() ? std::string(a.is_const() ? "read-only " : "") + "buffer of " + type_name(a.type())
                       : std::string("scalar ") + type_name(a.type());
}

}  // namespace

LaunchReport launch(const Kernel& kernel, const Device& device, Grid grid, const std::vector<LaunchArg>& args) {
  const ir::KernelNode& k = detail::KernelAccess::ir(kernel);
  const std::string who = "kernel '" + k.name + "'";
  if (args.size() != k.params.size())
    throw LaunchError("", who + " takes " + std::to_string(k.params.size()) + " arguments; " +
                              std::to_string(args.size()) + " were given");
  if (grid.blocks < 1)
    throw LaunchError("", who + ": a grid needs at least 1 block; " + std::to_string(grid.blocks) + " given");
  // Kinds and types first: the specialization reads the values of specialized sizes.
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ir::ParamNode& p = k.params[i];
    const LaunchArg& a = args[i];
    ScalarType want = p.var ? p.var->type : p.mem->elem;
    std::string expected = p.var ? std::string("scalar ") + type_name(want)
                                 : std::string(p.mem->is_const ? "" : "writable ") + "buffer of " + type_name(want);
    if (a.is_buffer() != (p.mem != nullptr) || a.type() != want)
      throw LaunchError(p.name,
                        who + ", parameter '" + p.name + "': expected a " + expected + ", given a " + kind_of(a));
    if (p.mem && !p.mem->is_const && a.is_const())
      throw LaunchError(p.name,
                        who + ", parameter '" + p.name + "': the kernel writes it, but a read-only buffer was given");
  }
  Spec spec;
  spec.threads = grid.threads;
  for (std::size_t i = 0; i < args.size(); ++i)
    if (k.params[i].specialized && k.params[i].var) spec.sizes[k.params[i].name] = args[i].int_value();
  auto [s, lowered] = pipeline::lower_for(kernel, spec);

  std::vector<std::int64_t> scalars(args.size(), 0);
  for (std::size_t i = 0; i < args.size(); ++i)
    if (!args[i].is_buffer()) scalars[i] = args[i].int_value();
  for (const auto& g : s.guards)
    if (!g.accepts(grid.blocks, scalars))
      throw LaunchError("", who + ": this launch breaks the guard '" + g.text + "'" +
                                (g.loc.known() ? " (from " + g.loc.str() + ")" : "") + " with " +
                                std::to_string(grid.blocks) + " blocks");

  // Extents: each pointer's declared extent, evaluated on the scalar arguments.
  ir::VarMap values;
  for (std::size_t i = 0; i < args.size(); ++i)
    if (const auto& v = k.params[i].var; v && is_integer(v->type))
      values[v.get()] = ir::int_literal(v->type, ir::wrap(v->type, args[i].int_value()), k.params[i].loc);
  std::vector<interp::Arg> run_args(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const ir::ParamNode& p = k.params[i];
    const LaunchArg& a = args[i];
    interp::Arg& r = run_args[i];
    if (!p.mem) {
      r.i = a.int_value();
      r.f = a.float_value();
      continue;
    }
    r.is_buffer = true;
    r.data = a.data();
    r.length = a.length();
    if (p.extent) {
      auto e = ir::eval_const(ir::substitute(p.extent, values));
      if (!e || !e->exact)
        throw LaunchError(p.name, who + ", parameter '" + p.name + "': its extent " + ir::print(p.extent) +
                                      " does not evaluate to a number for these arguments");
      if (e->value < 0 || e->value > a.length())
        throw LaunchError(p.name, who + ", parameter '" + p.name + "': its extent " + ir::print(p.extent) + " is " +
                                      std::to_string(e->value) + " elements, but the buffer given holds " +
                                      std::to_string(a.length()));
      r.extent = e->value;
    }
    if (auto al = lowered.param_alignment.find(static_cast<int>(i)); al != lowered.param_alignment.end())
      if (reinterpret_cast<std::uintptr_t>(a.data()) % static_cast<std::uintptr_t>(al->second) != 0)
        throw LaunchError(p.name, who + ", parameter '" + p.name + "': its vector accesses need " +
                                      std::to_string(al->second) + "-byte alignment; the buffer given is not aligned");
  }
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (!args[i].is_buffer() || args[i].is_const() || k.params[i].mem->is_const) continue;
    auto lo = reinterpret_cast<std::uintptr_t>(args[i].data());
    auto hi = lo + static_cast<std::uintptr_t>(args[i].length() * type_bytes(args[i].type()));
    for (std::size_t j = 0; j < args.size(); ++j) {
      if (j == i || !args[j].is_buffer()) continue;
      auto lo2 = reinterpret_cast<std::uintptr_t>(args[j].data());
      auto hi2 = lo2 + static_cast<std::uintptr_t>(args[j].length() * type_bytes(args[j].type()));
      if (lo < hi2 && lo2 < hi)
        throw LaunchError(k.params[i].name, who + ", parameter '" + k.params[i].name +
                                                "': the kernel writes it, and it overlaps the buffer given for '" +
                                                k.params[j].name + "'");
    }
  }
  interp::Options o;
  const auto& io = device.interpreter_options();
  o.order = io.order == ThreadOrder::Forward   ? interp::Order::Forward
            : io.order == ThreadOrder::Reverse ? interp::Order::Reverse
                                               : interp::Order::Random;
  o.seed = io.seed;
  o.checks = io.checks;
  o.max_statements = io.max_statements;
  auto start = std::chrono::steady_clock::now();
  interp::Stats st = interp::run(lowered, grid.blocks, run_args, o);
  LaunchReport rep;
  rep.threads = s.threads * grid.blocks;
  rep.thread_statements = st.thread_statements;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rep;
}

}  // namespace vantage
