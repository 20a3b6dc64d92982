// Vantage launches: each kernel's table of specializations (see launch.cpp): an entry claimed under
// the table's mutex, made through the device's backend outside any lock (on the caller's thread, or
// on the library's background workers for `prepare`), and published to everyone waiting for it.
#include <chrono>
#include <functional>
#include <mutex>

#include "backend/backend.h"
#include "runtime/launch_internal.h"
#include "support/log.h"
#include "support/workers.h"

namespace vantage::runtime {

Table::Table(const Kernel& kernel) : pipeline::Signature(pipeline::signature_of(kernel)) {
  if (params.size() > kMaxParams)
    throw LaunchError("", "kernel '" + name + "' has " + std::to_string(params.size()) +
                              " parameters; a launch takes at most " + std::to_string(kMaxParams));
  if (maps.size() > kMaxTensorMaps)
    throw LaunchError("", "kernel '" + name + "' has " + std::to_string(maps.size()) +
                              " tensor maps; a launch takes at most " + std::to_string(kMaxTensorMaps));
}

Table::~Table() {
  for (Entry* e = head.load(std::memory_order_acquire); e;) {
    Entry* next = e->next;
    delete e;
    e = next;
  }
}

Table& table_of(const Kernel& kernel) {
  return static_cast<Table&>(detail::kernel_slot(
      kernel, [](const Kernel& k) -> std::unique_ptr<detail::KernelSlot> { return std::make_unique<Table>(k); }));
}

/// `prepare` makes entries on the library's background workers: tasks hold a Kernel, so a
/// kernel's table may be destroyed on a worker, never while a thread waits on it.
void post(std::function<void()> task) {
  support::background().post([task = std::move(task)](int) { task(); }, 0);
}

/// The assumption of a class.
Assumption assumption_of(std::uint64_t code) {
  Assumption a;
  if (code == 2) a.multiple = 16;
  return a;
}

/// The device as the backends see it.
static backend::Target target_of(const Device& device) {
  return {device.kind(), device.ordinal(), &device.properties(), device.name()};
}

/// Makes the specialization of `e` on its device through the device's backend: compiled (or read
/// from the cache) and loaded.
static void make(Entry& e, const Kernel& kernel, const Device& device, Table& t) {
  Spec spec;
  spec.threads = e.threads;
  spec.arch = device.properties().arch;
  spec.compiler = kernel.compiler();
  for (std::size_t i = 0; i < t.specialized.size(); ++i)
    spec.sizes[t.params[static_cast<std::size_t>(t.specialized[i])].name] = e.values[i];
  for (std::size_t i = 0; i < t.classified.size(); ++i)
    if (std::uint64_t code = (e.classes >> (2 * i)) & 3)
      spec.assume[t.params[static_cast<std::size_t>(t.classified[i])].name] = assumption_of(code);
  try {
    e.exec = backend::for_kind(device.kind()).make(kernel, std::move(spec), target_of(device));
    e.exec->alignment.resize(t.params.size(), 0);
  } catch (const CheckError& err) {
    if (!err.has("V1004")) throw;
    // The launch shape is what the kernel's rules refuse: name it, and the count that would run.
    std::string fix;
    if (t.declared_threads && t.declared_threads != e.threads)
      fix = "; launch it with Grid{blocks, " + std::to_string(t.declared_threads) +
            "} (or 0 threads: the declared count)";
    throw LaunchError("grid.threads", "kernel '" + t.name + "' cannot run with " + std::to_string(e.threads) +
                                          " threads per block" + fix + ":\n" + render_all(err.diagnostics(), false));
  }
}

/// The entry for this key, and whether this call created it (then the caller must fill it).
std::pair<Entry*, bool> claim(Table& t, const Device& device, std::int64_t threads,
                              std::span<const std::int64_t> values, std::uint64_t classes) {
  std::lock_guard lock(t.mu);
  if (Entry* e = find(t, device, threads, values, classes)) return {e, false};
  auto* e = new Entry;
  e->kind = device.kind();
  e->ordinal = device.ordinal();
  e->threads = threads;
  e->values.assign(values.begin(), values.end());
  e->classes = classes;
  e->done = e->promise.get_future().share();
  e->next = t.head.load(std::memory_order_relaxed);
  t.head.store(e, std::memory_order_release);
  return {e, true};
}

/// Makes a claimed entry and publishes the outcome to everyone waiting for it.
void fill(Entry& e, const Kernel& kernel, const Device& device, Table& t) {
  auto start = std::chrono::steady_clock::now();
  bool ok = true;
  try {
    make(e, kernel, device, t);
  } catch (...) {
    e.error = std::current_exception();
    ok = false;
  }
  // The statistics first: whoever the outcome wakes sees them counted.
  t.compile_ns +=
      std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now() - start).count();
  ++(ok ? t.compiles : t.failures);
  logging::get().debug("launch: kernel '{}' for {} with {} threads per block: {}", t.name, device.name(), e.threads,
                       ok ? "ready" : "failed");
  e.state.store(ok ? Entry::kReady : Entry::kFailed, std::memory_order_release);
  if (ok)
    e.promise.set_value();
  else
    e.promise.set_exception(e.error);
}

/// The entry for this key, made by this thread or another; rethrows the error of a failed one.
Entry& entry_for(Table& t, const Kernel& kernel, const Device& device, std::int64_t threads,
                 std::span<const std::int64_t> values, std::uint64_t classes) {
  auto [e, created] = claim(t, device, threads, values, classes);
  if (created)
    fill(*e, kernel, device, t);
  else
    e->done.wait();
  if (e->state.load(std::memory_order_acquire) == Entry::kFailed) std::rethrow_exception(e->error);
  return *e;
}

}  // namespace vantage::runtime
