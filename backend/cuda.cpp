// Vantage's CUDA backend: the kernel emitted as CUDA C++ and compiled by NVRTC through the kernel
// cache (sm_90a where Hopper-only instructions need it), its module loaded by the driver, its
// launches queued on a stream. On a GPU whose machine code no target of Vantage's is (one newer than
// them all, or an entry built for an older one), the entry's PTX is compiled by the driver once and
// the result kept in the cache under that GPU's own target.
#include <memory>

#include "backend/backend.h"
#include "backend/driver.h"
#include "backend/gpu.h"
#include "jit/lower/lower.h"
#include "vantage/cache.hpp"
#include "vantage/compile.hpp"
#include "vantage/diagnostics.hpp"

namespace vantage::backend {
namespace {

class CudaExecutable final : public Executable {
 public:
  explicit CudaExecutable(int ordinal, std::string kernel, std::string device)
      : ordinal_(ordinal), kernel_(std::move(kernel)), device_(std::move(device)) {}
  ~CudaExecutable() override {
    if (!module_) return;
    try {
      gpu::make_current(ordinal_);
      driver::table().module_unload(module_);
    } catch (...) {  // a destructor never throws
    }
  }

  void load(const CachedKernel& c, const DeviceProperties& p) {
    const Specialized& s = c.spec;
    gpu::register_checks(lower::check_tag(s.entry), kernel_, s.checks);
    error_record = gpu::error_record(ordinal_);  // made before the first launch, not on it
    std::int64_t shared = s.static_shared_bytes + s.dynamic_shared_bytes;
    if (shared > p.shared_per_block_optin)
      throw LaunchError("", "kernel '" + kernel_ + "' needs " + std::to_string(shared) +
                                " bytes of shared memory per block; " + device_ + " allows " +
                                std::to_string(p.shared_per_block_optin));
    if (s.threads > p.max_threads_per_block)
      throw LaunchError("grid.threads", "kernel '" + kernel_ + "' runs " + std::to_string(s.threads) +
                                            " threads per block; " + device_ + " allows " +
                                            std::to_string(p.max_threads_per_block));
    gpu::make_current(ordinal_);
    const driver::Table& d = driver::table();
    const std::vector<char>* image = &c.cubin;
    std::shared_ptr<const std::vector<char>> compiled;
    if (!gpu::runs_natively(s.arch, p.compute_major, p.compute_minor)) {
      const std::string target = "sm_" + std::to_string(p.compute_major) + std::to_string(p.compute_minor);
      if (c.ptx.empty())
        throw LaunchError("", "kernel '" + kernel_ + "' was built for " + arch_name(s.arch) + ", whose machine code " +
                                  device_ +
                                  " cannot run, and its cache entry carries no PTX for the driver to "
                                  "compile (an entry made before entries carried PTX): compile it here, or rebuild "
                                  "the bundle with this Vantage");
      int version = 0;
      d.driver_get_version(&version);
      compiled = KernelCache::global().artifact("sass-" + target, {c.key, std::to_string(version)}, [&] {
        return driver::compile_ptx(c.ptx, "kernel '" + kernel_ + "' for " + target + " on " + device_);
      });
      image = compiled.get();
    }
    driver::check(d.module_load_data(&module_, image->data()), "cuModuleLoadData",
                  "kernel '" + kernel_ + "' (" + arch_name(s.arch) + ") on " + device_);
    driver::CUfunction fn = nullptr;
    driver::check(d.module_get_function(&fn, module_, s.entry.c_str()), "cuModuleGetFunction", s.entry);
    function = fn;
    driver::check(d.func_get_attribute(&registers, driver::kFuncNumRegs, fn), "cuFuncGetAttribute", s.entry);
    if (static_cast<std::int64_t>(registers) * s.threads > p.registers_per_block)
      throw LaunchError("grid.threads", "kernel '" + kernel_ + "' uses " + std::to_string(registers) +
                                            " registers per thread; " + std::to_string(s.threads) +
                                            " threads per block need " +
                                            std::to_string(static_cast<std::int64_t>(registers) * s.threads) +
                                            ", and " + device_ + " has " + std::to_string(p.registers_per_block));
    if (dynamic_shared > 0)
      driver::check(d.func_set_attribute(fn, driver::kFuncMaxDynamicShared, static_cast<int>(dynamic_shared)),
                    "cuFuncSetAttribute", s.entry + " (dynamic shared memory " + std::to_string(dynamic_shared) + ")");
  }

  Outcome run(const Launch& l) const override {
    gpu::make_current(ordinal_);
    driver::CUresult r =
        driver::table().launch_kernel(static_cast<driver::CUfunction>(function), static_cast<unsigned>(l.blocks), 1, 1,
                                      static_cast<unsigned>(block_threads), 1, 1, static_cast<unsigned>(dynamic_shared),
                                      static_cast<driver::CUstream>(l.stream), const_cast<void**>(l.pointers), nullptr);
    if (r != driver::kSuccess)
      driver::check(r, "cuLaunchKernel",
                    "kernel '" + kernel_ + "', " + std::to_string(l.blocks) + " blocks of " +
                        std::to_string(block_threads) + " threads on " + device_);
    return {};
  }

 private:
  int ordinal_;
  std::string kernel_, device_;
  driver::CUmodule module_ = nullptr;
};

class CudaBackend final : public Backend {
 public:
  std::unique_ptr<Executable> make(const Kernel& kernel, Spec spec, const Target& target) const override {
    std::shared_ptr<const CachedKernel> c;
    try {
      c = KernelCache::global().get(kernel, spec);
    } catch (const CheckError& err) {
      // Hopper-only instructions (wgmma) need the arch-specific target of the same GPU.
      if (!err.has("V1008") || spec.arch != Arch::SM_90) throw;
      const DeviceProperties& p = *target.properties;
      if (!gpu::runs_natively(Arch::SM_90a, p.compute_major, p.compute_minor))
        throw LaunchError("", "kernel '" + kernel.name() +
                                  "' uses instructions only sm_90a has (wgmma), whose code "
                                  "runs on compute capability 9.0 alone; " +
                                  target.name + " cannot run it");
      spec.arch = Arch::SM_90a;
      c = KernelCache::global().get(kernel, spec);
    }
    const Specialized& s = c->spec;
    auto e = std::make_unique<CudaExecutable>(target.ordinal, kernel.name(), target.name);
    e->guards = s.guards;
    e->block_threads = s.threads;
    e->alignment.assign(s.params.size(), 0);
    for (std::size_t i = 0; i < s.params.size(); ++i) e->alignment[i] = s.params[i].alignment;
    e->dynamic_shared = s.dynamic_shared_bytes;
    e->load(*c, *target.properties);
    return e;
  }
  std::string toolchain() const override { return compiler_fingerprint(); }
};

}  // namespace

const Backend& cuda() {
  static const CudaBackend b;
  return b;
}

}  // namespace vantage::backend
