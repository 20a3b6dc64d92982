// Vantage GPUs: see gpu.h.
#include "backend/gpu.h"

#include <atomic>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <unordered_map>

#include "support/log.h"
#include "support/strings.h"
#include "vantage/diagnostics.hpp"

namespace vantage::gpu {
namespace {

struct Gpu {
  driver::CUdevice device = 0;
  DeviceProperties props;
  std::once_flag ctx_once;
  driver::CUcontext ctx = nullptr;
  std::once_flag record_once;
  // Published by error_record's call_once and read without it by raise_recorded_error, which
  // runs on every launch from any thread: atomic so that the read is not a race.
  std::atomic<std::uint64_t*> record{nullptr};
  std::mutex record_mutex;  // reading and clearing the record is one step
};

struct Registry {
  std::string problem;
  std::deque<Gpu> gpus;  // stable addresses
};

std::string gpu_name(int ordinal) { return "GPU " + std::to_string(ordinal); }

DeviceProperties read_properties(const driver::Table& d, driver::CUdevice dev, int ordinal) {
  DeviceProperties p;
  char name[256] = {};
  driver::check(d.device_get_name(name, sizeof name, dev), "cuDeviceGetName", gpu_name(ordinal));
  p.name = name;
  auto attr = [&](int a) {
    int v = 0;
    driver::check(d.device_get_attribute(&v, a, dev), "cuDeviceGetAttribute", gpu_name(ordinal));
    return v;
  };
  p.compute_major = attr(driver::kComputeMajor);
  p.compute_minor = attr(driver::kComputeMinor);
  p.multiprocessors = attr(driver::kMultiprocessors);
  p.warp_size = attr(driver::kWarpSize);
  p.max_threads_per_block = attr(driver::kMaxThreadsPerBlock);
  p.max_threads_per_multiprocessor = attr(driver::kMaxThreadsPerMultiprocessor);
  p.max_blocks_per_multiprocessor = attr(driver::kMaxBlocksPerMultiprocessor);
  p.max_grid_blocks = attr(driver::kMaxGridDimX);
  p.shared_per_block = attr(driver::kMaxSharedPerBlock);
  p.shared_per_block_optin = attr(driver::kMaxSharedPerBlockOptin);
  p.shared_per_multiprocessor = attr(driver::kMaxSharedPerMultiprocessor);
  p.registers_per_block = attr(driver::kMaxRegistersPerBlock);
  p.registers_per_multiprocessor = attr(driver::kMaxRegistersPerMultiprocessor);
  p.l2_bytes = attr(driver::kL2Bytes);
  p.clock_khz = attr(driver::kClockRateKhz);
  p.memory_clock_khz = attr(driver::kMemoryClockKhz);
  p.memory_bus_bits = attr(driver::kMemoryBusBits);
  std::size_t total = 0;
  driver::check(d.device_total_mem(&total, dev), "cuDeviceTotalMem", gpu_name(ordinal));
  p.total_memory = static_cast<std::int64_t>(total);
  p.arch = arch_for(p.compute_major, p.compute_minor, p.name);
  p.runs_ptx = !runs_natively(p.arch, p.compute_major, p.compute_minor);
  return p;
}

/// Made once and never destroyed: the contexts and error records it holds live as long as the
/// process (the driver may be gone by the time static destructors run).
Registry& registry() {
  static Registry& r = *[] {
    auto* made = new Registry;
    Registry& r = *made;
    const driver::Table& d = driver::table();
    if (!d.loaded()) {
      r.problem = d.error;
      return made;
    }
    if (driver::CUresult e = d.init(0); e != driver::kSuccess) {
      r.problem = "the CUDA driver did not start: cuInit: " + driver::describe(e);
      return made;
    }
    int n = 0;
    if (driver::CUresult e = d.device_get_count(&n); e != driver::kSuccess) {
      r.problem = "cuDeviceGetCount: " + driver::describe(e);
      return made;
    }
    if (n == 0) {
      r.problem = "the CUDA driver reports no GPU";
      return made;
    }
    try {
      for (int i = 0; i < n; ++i) {
        Gpu& g = r.gpus.emplace_back();
        driver::check(d.device_get(&g.device, i), "cuDeviceGet", gpu_name(i));
        g.props = read_properties(d, g.device, i);
      }
    } catch (const std::exception& e) {
      r.gpus.clear();
      r.problem = e.what();
    }
    return made;
  }();
  return r;
}

Gpu& at(int ordinal) {
  Registry& r = registry();
  if (ordinal < 0 || static_cast<std::size_t>(ordinal) >= r.gpus.size())
    throw DriverError("cuDeviceGet", 101,
                      "there is no GPU " + std::to_string(ordinal) + " on this host (" +
                          (r.gpus.empty() ? r.problem : std::to_string(r.gpus.size()) + " GPU(s)") + ")");
  return r.gpus[static_cast<std::size_t>(ordinal)];
}

}  // namespace

int count() { return static_cast<int>(registry().gpus.size()); }
const std::string& problem() { return registry().problem; }
const DeviceProperties& properties(int ordinal) { return at(ordinal).props; }

void make_current(int ordinal) {
  thread_local driver::CUcontext current = nullptr;
  Gpu& g = at(ordinal);
  std::call_once(g.ctx_once, [&] {
    driver::check(driver::table().primary_ctx_retain(&g.ctx, g.device), "cuDevicePrimaryCtxRetain", gpu_name(ordinal));
  });
  if (current == g.ctx) return;
  driver::check(driver::table().ctx_set_current(g.ctx), "cuCtxSetCurrent", gpu_name(ordinal));
  current = g.ctx;
}

driver::CUcontext context(int ordinal) {
  make_current(ordinal);
  return at(ordinal).ctx;
}

Arch arch_for(int major, int minor, const std::string& device_name) {
  Arch best = Arch::SM_80, newest = Arch::SM_80;
  bool found = false;
  for (Arch a : all_archs()) {
    if (a == Arch::SM_90a) continue;  // chosen per kernel, for the Hopper-only instructions
    newest = a;
    if (runs_natively(a, major, minor)) {
      best = a;
      found = true;
    }
  }
  if (found) return best;
  if (major * 10 + minor > arch_number(newest)) return newest;  // the driver compiles its PTX
  throw DriverError("cuDeviceGetAttribute", 0,
                    device_name + " has compute capability " + std::to_string(major) + "." + std::to_string(minor) +
                        "; Vantage compiles for " + arch_names() + " and GPUs newer than those");
}

bool runs_natively(Arch built, int major, int minor) {
  // A cubin runs on GPUs of its major version and a minor version at least its own; an `a` target's
  // on its own GPU only.
  const int n = arch_number(built);
  if (built == Arch::SM_90a) return major * 10 + minor == n;
  return n / 10 == major && n % 10 <= minor;
}

namespace {
struct Sites {
  std::string kernel;
  std::vector<CheckedAccess> sites;
};
std::mutex& sites_mutex() {
  static std::mutex m;
  return m;
}
std::unordered_map<std::uint64_t, Sites>& all_sites() {
  static std::unordered_map<std::uint64_t, Sites> s;
  return s;
}
constexpr std::size_t kRecordWords = 8;
}  // namespace

std::uint64_t* error_record(int ordinal) {
  Gpu& g = at(ordinal);
  std::call_once(g.record_once, [&] {
    make_current(ordinal);
    void* p = nullptr;
    driver::check(driver::table().mem_alloc_host(&p, kRecordWords * sizeof(std::uint64_t)), "cuMemAllocHost",
                  "the error record of " + gpu_name(ordinal));
    std::memset(p, 0, kRecordWords * sizeof(std::uint64_t));
    g.record.store(static_cast<std::uint64_t*>(p), std::memory_order_release);
  });
  return g.record.load(std::memory_order_acquire);
}

void register_checks(std::uint64_t tag, const std::string& kernel, const std::vector<CheckedAccess>& sites) {
  std::lock_guard lock(sites_mutex());
  all_sites()[tag] = Sites{kernel, sites};
}

void raise_recorded_error(int ordinal) {
  Gpu& g = at(ordinal);
  volatile std::uint64_t* r = g.record.load(std::memory_order_acquire);
  if (!r) return;
  std::uint64_t tag = 0, site = 0, block = 0, thread = 0;
  std::int64_t index = 0, bound = 0;
  {
    // Two threads launching on one GPU both look at its record; one of them takes and clears it.
    std::lock_guard lock(g.record_mutex);
    if (r[0] == 0) return;
    tag = r[0], site = r[1], block = r[2], thread = r[3];
    index = static_cast<std::int64_t>(r[4]), bound = static_cast<std::int64_t>(r[5]);
    for (std::size_t i = 1; i < kRecordWords; ++i) r[i] = 0;
    r[0] = 0;
  }
  std::string kernel = "a kernel", what = "an access";
  SourceLoc loc;
  std::optional<std::string> assertion;
  {
    std::lock_guard lock(sites_mutex());
    if (auto it = all_sites().find(tag); it != all_sites().end()) {
      kernel = "kernel '" + it->second.kernel + "'";
      if (site < it->second.sites.size()) {
        const CheckedAccess& c = it->second.sites[site];
        loc = SourceLoc{strings::intern(c.file), c.line, c.column};
        what = std::string(c.write ? "writes" : "reads") + " '" + c.memory + "'[" + std::to_string(index) + "]";
        if (c.assertion) assertion = c.memory;
      }
    }
  }
  const std::vector<SourceLoc> locs = loc.known() ? std::vector<SourceLoc>{loc} : std::vector<SourceLoc>{};
  if (assertion || bound < 0)
    throw ExecutionError("assert",
                         strings::failed_assertion("on " + gpu_name(ordinal) + ", " + kernel, block, thread,
                                                   assertion.value_or(""), loc.known() ? loc.str() : ""),
                         locs);
  throw ExecutionError("memcheck",
                       "on " + gpu_name(ordinal) + ", " + kernel + ": block " + std::to_string(block) + " thread " +
                           std::to_string(thread) + " " + what + " at " +
                           (loc.known() ? loc.str() : std::string("<unknown line>")) + ", outside its " +
                           std::to_string(bound) + " elements (the access was skipped)",
                       locs);
}

}  // namespace vantage::gpu
