// Vantage pipeline: see pipeline.h.
#include "jit/pipeline/pipeline.h"
#include "support/workers.h"

#include <xxhash.h>

#include <atomic>
#include <cctype>
#include <chrono>
#include <cstdio>
#include <thread>

#include "jit/cuda/emit.h"
#include "jit/nvrtc/nvrtc.h"
#include "jit/pipeline/handles.h"
#include "jit/specialize/specialize.h"
#include "jit/target/target.h"
#include "support/log.h"

namespace vantage {
namespace {

std::string entry_name(const Kernel& k, const Spec& spec, std::int64_t threads) {
  std::string key = std::to_string(k.structural_hash()) + "/" + std::to_string(threads) + "/" +
                    std::to_string(spec.blocks.value_or(-1)) + "/" + arch_name(spec.arch);
  for (const auto& [name, v] : spec.sizes) key += "/" + name + "=" + std::to_string(v);
  for (const auto& [name, a] : spec.assume)
    key += "/" + name + ":" + std::to_string(a.min) + ":" + std::to_string(a.max) + ":" + std::to_string(a.multiple);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08llx",
                static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size()) & 0xffffffffULL));
  return pipeline::entry_symbol("vt_", k.name(), hex);
}

}  // namespace

namespace pipeline {
std::string entry_symbol(std::string_view prefix, std::string_view kernel, std::string_view hash) {
  std::string s(prefix);
  for (char c : kernel) s += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return s.append("_").append(hash);
}

LoweredKernel lower_for(const Kernel& kernel, const Spec& spec) {
  const ir::KernelNode& k = detail::KernelAccess::ir(kernel);
  LoweredKernel out{specialization::run(k, kernel.obligations(), spec), {}};
  const auto& s = out.specialized;
  lower::Options lo;
  lo.threads = s.threads;
  lo.blocks = s.blocks;
  lo.max_blocks = s.max_blocks;
  lo.arch = spec.arch;
  lo.param_ranges = s.param_ranges;
  lo.param_multiples = s.param_multiples;
  out.lowered = lower::lower(*s.kernel, lo);
  if (!out.lowered.problems.empty()) throw CheckError(out.lowered.problems);
  out.specialized.guards.insert(out.specialized.guards.end(), out.lowered.guards.begin(), out.lowered.guards.end());
  return out;
}
}  // namespace pipeline

Specialized specialize_for(const Kernel& kernel, const Spec& spec) {
  return pipeline::emit(kernel, spec, pipeline::lower_for(kernel, spec));
}

namespace pipeline {

Specialized emit(const Kernel& kernel, const Spec& spec, LoweredKernel stage) {
  const ir::KernelNode& k = detail::KernelAccess::ir(kernel);
  auto& [s, lowered] = stage;
  cuda::EmitOptions opt;
  opt.threads = s.threads;
  opt.blocks = s.blocks;
  opt.max_blocks = s.max_blocks;
  opt.arch = spec.arch;
  opt.entry = entry_name(kernel, spec, s.threads);
  opt.max_registers = spec.compiler.max_registers;
  auto e = cuda::emit(lowered, opt);
  const target::Info& arch = target::info(spec.arch);
  if (e.shared_bytes > arch.shared_optin_bytes)
    e.problems.push_back({"V0404",
                          "kernel '" + kernel.name() + "' uses " + std::to_string(e.shared_bytes) +
                              " bytes of shared memory; " + arch.name + " allows " +
                              std::to_string(arch.shared_optin_bytes),
                          k.budget_loc,
                          {}});
  if (!e.problems.empty()) throw CheckError(std::move(e.problems));
  Specialized out;
  out.entry = opt.entry;
  out.source = std::move(e.source);
  out.guards = std::move(s.guards);
  out.params = std::move(s.params);
  for (const auto& [index, bytes] : lowered.param_alignment)
    out.params[static_cast<std::size_t>(index)].alignment = bytes;
  out.threads = s.threads;
  out.static_shared_bytes = e.dynamic_shared ? 0 : e.shared_bytes;
  out.dynamic_shared_bytes = e.dynamic_shared ? e.shared_bytes : 0;
  out.arch = spec.arch;
  out.fp_contract = spec.fp_contract;
  out.compiler = spec.compiler;
  out.barriers = lowered.barriers;
  for (const auto& c : lowered.checks)
    out.checks.push_back({c.loc.file ? c.loc.file : "", c.loc.line, c.loc.column, c.memory, c.write, c.assertion});
  return out;
}

Compiled compile_specialized(Specialized spec, Output output) {
  Compiled c;
  c.options = nvrtc::canonical_options(spec.arch, output, spec.fp_contract, spec.compiler);
  auto start = std::chrono::steady_clock::now();
  auto r = nvrtc::compile(spec.source, spec.entry + ".cu", c.options);
  c.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  c.cubin = std::move(r.cubin);
  c.ptx = std::move(r.ptx);
  c.log = std::move(r.log);
  logging::get().debug("compiled {} for {} in {:.1f} ms", spec.entry, arch_name(spec.arch), c.compile_ms);
  if (!c.log.empty()) logging::get().warn("NVRTC log for {}:\n{}", spec.entry, c.log);
  c.spec = std::move(spec);
  return c;
}

}  // namespace pipeline

Compiled compile(const Kernel& kernel, const Spec& spec, Output output) {
  return pipeline::compile_specialized(specialize_for(kernel, spec), output);
}

std::vector<CompileOutcome> compile_many(const std::vector<CompileJob>& jobs, int threads) {
  std::vector<CompileOutcome> out(jobs.size());
  if (threads <= 0) threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  threads = std::min<int>(threads, static_cast<int>(std::max<std::size_t>(jobs.size(), 1)));
  std::atomic<std::size_t> next{0};
  auto worker = [&] {
    for (std::size_t i = next++; i < jobs.size(); i = next++) {
      try {
        out[i].compiled = compile(jobs[i].kernel, jobs[i].spec, jobs[i].output);
      } catch (const std::exception& e) {
        out[i].error = e.what();
      }
    }
  };
  support::TaskGroup helpers;
  for (int t = 1; t < threads; ++t) helpers.run(worker);
  worker();
  helpers.wait();
  return out;
}

}  // namespace vantage
