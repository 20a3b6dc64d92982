// Vantage's CPU backend: the lowered kernel as LLVM IR, compiled for this host through the
// artifact cache (a second process skips LLVM), loaded through ORC, its blocks run on the host
// pool. Identical kernels (the same lowered IR) share their loaded code.
#include <chrono>
#include <cstdio>
#include <map>
#include <memory>
#include <mutex>

#include "backend/backend.h"
#include "backend/cpu_pool.h"
#include "support/log.h"
#include "support/strings.h"
#include "vantage/diagnostics.hpp"
#ifdef VANTAGE_HAVE_CPU_BACKEND
#include <xxhash.h>

#include "jit/cpu/cpu.h"
#include "jit/lower/lower.h"
#include "jit/pipeline/pipeline.h"
#include "vantage/cache.hpp"
#endif

namespace vantage::backend {
namespace {

#ifdef VANTAGE_HAVE_CPU_BACKEND
/// Identical kernels (the same lowered IR) share their loaded code: one symbol per content.
std::shared_ptr<cpu::Loaded> load_shared(const std::vector<char>& object, const std::string& entry) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<cpu::Loaded>> loaded;
  std::lock_guard lock(mu);
  if (auto it = loaded.find(entry); it != loaded.end())
    if (auto l = it->second.lock()) return l;
  auto l = std::make_shared<cpu::Loaded>(cpu::load(object, entry));
  loaded[entry] = l;
  return l;
}

class CpuExecutable final : public Executable {
 public:
  Outcome run(const Launch& l) const override {
    std::uint64_t record[8] = {};
    cpu::BlockFn fn = code_->fn();
    void** args = const_cast<void**>(l.pointers);
    const std::int64_t blocks = l.blocks;
    auto start = std::chrono::steady_clock::now();
    cpu_pool::run(blocks, l.host_threads, shared_, scratch_,
                  [&](std::int64_t first, std::int64_t last, void* shared, void* scratch) {
                    fn(args, first, last, blocks, shared, scratch, record);
                  });
    if (record[0]) raise(record);
    Outcome o;
    o.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    return o;
  }

  std::string kernel;
  std::shared_ptr<cpu::Loaded> code_;
  std::int64_t shared_ = 0, scratch_ = 0;
  std::vector<lower::CheckSite> sites_;

 private:
  /// A failed check the CPU code recorded (the record vt_cpu_fail writes), as the GPU's is reported.
  [[noreturn]] void raise(const std::uint64_t* r) const {
    std::uint64_t site = r[1];
    auto index = static_cast<std::int64_t>(r[4]), bound = static_cast<std::int64_t>(r[5]);
    std::string what = "an access";
    std::vector<SourceLoc> locs;
    if (site < sites_.size()) {
      const lower::CheckSite& c = sites_[site];
      what = std::string(c.write ? "writes" : "reads") + " '" + c.memory + "'[" + std::to_string(index) + "]";
      if (c.loc.known()) locs.push_back(c.loc);
      if (c.assertion)
        throw ExecutionError("assert",
                             strings::failed_assertion("on the CPU, kernel '" + kernel + "'", r[2], r[3], c.memory,
                                                       c.loc.known() ? c.loc.str() : ""),
                             locs);
    }
    throw ExecutionError("memcheck",
                         "on the CPU, kernel '" + kernel + "': block " + std::to_string(r[2]) + " thread " +
                             std::to_string(r[3]) + " " + what + " at " +
                             (locs.empty() ? std::string("<unknown line>") : locs[0].str()) + ", outside its " +
                             std::to_string(bound) + " elements (the access was skipped)",
                         locs);
  }
};
#endif

class CpuBackend final : public Backend {
 public:
  std::unique_ptr<Executable> make(const Kernel& kernel, Spec spec, const Target& target) const override {
#ifdef VANTAGE_HAVE_CPU_BACKEND
    (void)target;
    auto lowered = pipeline::lower_for(kernel, spec);
    auto e = std::make_unique<CpuExecutable>();
    e->kernel = kernel.name();
    e->guards = std::move(lowered.specialized.guards);
    e->block_threads = lowered.specialized.threads;
    e->alignment.assign(lowered.lowered.user_params, 0);
    for (const auto& [i, bytes] : lowered.lowered.param_alignment) e->alignment[static_cast<std::size_t>(i)] = bytes;
    std::string text = lower::print(lowered.lowered);
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(text.data(), text.size())));
    std::string entry = pipeline::entry_symbol("vt_cpu_", e->kernel, hex);
    cpu::Module m = cpu::generate(lowered.lowered, entry);
    e->scratch_ = m.scratch_bytes();
    e->shared_ = lowered.lowered.shared_bytes;
    e->sites_ = lowered.lowered.checks;
    e->sites_.insert(e->sites_.end(), m.extra_sites().begin(), m.extra_sites().end());
    std::string ir = m.ir(), origin;
    auto object = KernelCache::global().artifact(
        "cpu-object", {ir, cpu::host_fingerprint(), "O3"}, [&] { return cpu::compile(std::move(m), 3); }, &origin);
    e->code_ = load_shared(*object, entry);
    logging::get().debug("cpu: kernel '{}' ({} threads per block): object from {}, {} bytes of scratch", e->kernel,
                         e->block_threads, origin, e->scratch_);
    return e;
#else
    (void)kernel;
    (void)spec;
    (void)target;
    throw ToolchainError("this build of Vantage has no CPU backend");
#endif
  }
  std::string toolchain() const override {
#ifdef VANTAGE_HAVE_CPU_BACKEND
    return cpu::host_fingerprint();
#else
    return "no CPU backend";
#endif
  }
};

}  // namespace

const Backend& cpu() {
  static const CpuBackend b;
  return b;
}

bool cpu_available() {
#ifdef VANTAGE_HAVE_CPU_BACKEND
  return true;
#else
  return false;
#endif
}

}  // namespace vantage::backend
