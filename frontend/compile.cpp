// Vantage frontend: specialization and compilation of checked kernels (specialize -> sync -> emit
// -> NVRTC), the parallel compile API, guards and compile errors.
#include <xxhash.h>

#include <atomic>
#include <chrono>
#include <cstdio>
#include <thread>

#include "jit/cuda/emit.h"
#include "jit/nvrtc/nvrtc.h"
#include "jit/specialize/specialize.h"
#include "support/log.h"
#include "vantage/compile.hpp"

namespace vantage {

const char* arch_name(Arch arch) {
  switch (arch) {
    case Arch::SM_80: return "sm_80";
    case Arch::SM_86: return "sm_86";
    case Arch::SM_89: return "sm_89";
    case Arch::SM_90: return "sm_90";
    case Arch::SM_90a: return "sm_90a";
  }
  return "?";
}

int arch_number(Arch arch) {
  switch (arch) {
    case Arch::SM_80: return 80;
    case Arch::SM_86: return 86;
    case Arch::SM_89: return 89;
    case Arch::SM_90:
    case Arch::SM_90a: return 90;
  }
  return 0;
}

bool Guard::accepts(std::int64_t blocks, const std::vector<std::int64_t>& scalars) const {
  switch (kind) {
    case Kind::BlocksDivisibleBy: return value > 0 && blocks % value == 0;
    case Kind::BlocksAtLeast: return blocks >= value;
    case Kind::BlocksEqual: return blocks == value;
    case Kind::ParamEquals:
      return param >= 0 && static_cast<std::size_t>(param) < scalars.size() && scalars[param] == value;
  }
  return false;
}

CompileError::CompileError(std::string message, std::string log, std::vector<std::string> options, std::string source,
                           std::vector<Diagnostic> diagnostics)
    : std::runtime_error(std::move(message)),
      log_(std::move(log)),
      options_(std::move(options)),
      source_(std::move(source)),
      diagnostics_(std::move(diagnostics)) {}

namespace {

std::string entry_name(const Kernel& k, const Spec& spec, std::int64_t threads) {
  std::string key = std::to_string(k.structural_hash()) + "/" + std::to_string(threads) + "/" +
                    std::to_string(spec.blocks.value_or(-1)) + "/" + arch_name(spec.arch);
  for (const auto& [name, v] : spec.sizes) key += "/" + name + "=" + std::to_string(v);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%08llx",
                static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size()) & 0xffffffffULL));
  std::string base;
  for (char c : k.name()) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  return "vt_" + base + "_" + hex;
}

}  // namespace

Specialized specialize_for(const Kernel& kernel, const Spec& spec) {
  if (!kernel.ir()) throw CheckError({{"V0905", "specialize() needs a built kernel", {}, {}}});
  auto s = specialization::run(*kernel.ir(), kernel.obligations(), spec);
  cuda::EmitOptions opt;
  opt.threads = s.threads;
  opt.arch = spec.arch;
  opt.entry = entry_name(kernel, spec, s.threads);
  auto e = cuda::emit(*s.kernel, opt);
  std::int64_t limit = specialization::shared_limit(spec.arch);
  if (e.shared_bytes > limit)
    e.problems.push_back({"V0404",
                          "kernel '" + kernel.name() + "' uses " + std::to_string(e.shared_bytes) +
                              " bytes of shared memory; " + arch_name(spec.arch) + " allows " + std::to_string(limit),
                          kernel.ir()->budget_loc,
                          {}});
  if (!e.problems.empty()) throw CheckError(std::move(e.problems));
  Specialized out;
  out.entry = opt.entry;
  out.source = std::move(e.source);
  out.guards = std::move(s.guards);
  out.params = std::move(s.params);
  for (const auto& [index, bytes] : e.param_alignment) out.params[static_cast<std::size_t>(index)].alignment = bytes;
  out.threads = s.threads;
  out.static_shared_bytes = e.dynamic_shared ? 0 : e.shared_bytes;
  out.dynamic_shared_bytes = e.dynamic_shared ? e.shared_bytes : 0;
  out.arch = spec.arch;
  out.barriers = e.barriers;
  return out;
}

Compiled compile(const Kernel& kernel, const Spec& spec, Output output) {
  Compiled c;
  c.spec = specialize_for(kernel, spec);
  auto start = std::chrono::steady_clock::now();
  auto r = nvrtc::compile(c.spec.source, c.spec.entry + ".cu", spec.arch, output);
  c.compile_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - start).count();
  c.cubin = std::move(r.cubin);
  c.ptx = std::move(r.ptx);
  c.log = std::move(r.log);
  c.options = std::move(r.options);
  logging::get().debug("compiled {} for {} in {:.1f} ms", c.spec.entry, arch_name(spec.arch), c.compile_ms);
  if (!c.log.empty()) logging::get().warn("NVRTC log for {}:\n{}", c.spec.entry, c.log);
  return c;
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
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(worker);
  worker();
  for (auto& t : pool) t.join();
  return out;
}

std::string Kernel::source(const Spec& spec) const { return specialize_for(*this, spec).source; }
std::string Kernel::ptx(const Spec& spec) const { return compile(*this, spec, Output::Ptx).ptx; }
std::vector<char> Kernel::cubin(const Spec& spec) const { return compile(*this, spec, Output::Cubin).cubin; }

}  // namespace vantage
