// Vantage launches: see vantage/launch.hpp and DESIGN.md section 7.
//
// Each kernel owns a table (made on its first launch) of the specializations it has been launched
// with: one entry per (device, threads per block, values of the specialized parameters), in a list
// that only grows. A launch walks the list comparing integers, so a hit takes no lock, hashes
// nothing and allocates nothing; a miss inserts an entry under the table's mutex and makes it
// outside any lock (compile through the kernel cache and load the module on a GPU, lower for the
// interpreter), while other threads that want the same entry wait for it: one compile however many
// threads launch at once. What the checks need from the kernel's signature (kinds, types,
// constness, extents as small programs over parameter indices) is computed once per table.
#include "vantage/launch.hpp"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstring>
#include <deque>
#include <functional>
#include <mutex>
#include <optional>
#include <thread>

#ifdef VANTAGE_HAVE_CPU_BACKEND
#include "jit/cpu/cpu.h"
#endif
#include <xxhash.h>

#include <cctype>
#include <cstdio>
#include <map>

#include "jit/cuda/emit.h"
#include "jit/interp/interp.h"
#include "jit/ir/eval.h"
#include "jit/ir/printer.h"
#include "jit/pipeline/handles.h"
#include "jit/pipeline/pipeline.h"
#include "runtime/cpu_pool.h"
#include "runtime/driver.h"
#include "runtime/gpu.h"
#include "runtime/launch_internal.h"
#include "support/float16.h"
#include "support/log.h"
#include "vantage/cache.hpp"

namespace vantage {
namespace runtime {
namespace {

std::string describe_arg(const LaunchArg& a) {
  switch (a.kind()) {
    case LaunchArg::Kind::Scalar: return std::string("scalar ") + type_name(a.type());
    case LaunchArg::Kind::HostMemory:
      return std::string(a.is_const() ? "read-only " : "") + "host buffer of " + type_name(a.type());
    case LaunchArg::Kind::DeviceMemory:
      return std::string(a.is_const() ? "read-only " : "") + "buffer of " + type_name(a.type()) + " on " +
             (a.device_kind() == DeviceKind::Gpu ? "GPU " + std::to_string(a.device_ordinal())
                                                 : std::string(device_kind_name(a.device_kind())));
  }
  return "argument";
}

/// A worker pool for `prepare`: tasks hold a Kernel, so a kernel's table may be destroyed on a worker,
/// never while a thread waits on it. Joined at exit.
class Pool {
 public:
  static Pool& get() {
    static Pool p;
    return p;
  }
  void post(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      if (workers_.empty()) {
        unsigned n = std::max(2u, std::thread::hardware_concurrency());
        for (unsigned i = 0; i < n; ++i) workers_.emplace_back([this] { work(); });
      }
      tasks_.push_back(std::move(task));
    }
    cv_.notify_one();
  }
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void work() {
    while (true) {
      std::function<void()> task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !tasks_.empty(); });
        if (tasks_.empty()) return;
        task = std::move(tasks_.front());
        tasks_.pop_front();
      }
      task();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::function<void()>> tasks_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
};

}  // namespace

// ---------------------------------------------------------------- extents as programs
namespace {
bool integral(ScalarType t) { return is_integer(t) || t == ScalarType::Bool; }
}  // namespace

bool ExtentProgram::compile(const ir::ExprPtr& e, const std::vector<ir::ParamNode>& params) {
  using namespace ir;
  if (!e) return false;
  return dispatch(*e,
                  Overloaded{
                      [&](const Literal& n) {
                        if (!integral(n.type)) return false;
                        ops.push_back({Op::Const, {}, n.type, n.type, -1, n.i});
                        return true;
                      },
                      [&](const VarRef& n) {
                        for (std::size_t i = 0; i < params.size(); ++i)
                          if (params[i].var.get() == n.var.get() && is_integer(n.type)) {
                            ops.push_back({Op::Param, {}, n.type, n.type, static_cast<int>(i), 0});
                            return true;
                          }
                        return false;
                      },
                      [&](const Unary& n) {
                        if (!compile(n.a, params)) return false;
                        ops.push_back({Op::Unary, static_cast<std::uint8_t>(n.op), n.type, n.type, -1, 0});
                        return true;
                      },
                      [&](const Binary& n) {
                        if (!integral(n.type) || !integral(n.a->type) || !compile(n.a, params) || !compile(n.b, params))
                          return false;
                        ops.push_back({Op::Binary, static_cast<std::uint8_t>(n.op), n.a->type, n.type, -1, 0});
                        return true;
                      },
                      [&](const Cast& n) {
                        if (!integral(n.type) || !integral(n.a->type) || !compile(n.a, params)) return false;
                        ops.push_back({Op::Cast, {}, n.type, n.a->type, -1, 0});
                        return true;
                      },
                      [](const auto&) { return false; },
                  }) &&
         ops.size() <= kMaxOps;
}

std::vector<int> ExtentProgram::params() const {
  std::vector<int> out;
  for (const Op& op : ops)
    if (op.code == Op::Param && std::find(out.begin(), out.end(), op.param) == out.end()) out.push_back(op.param);
  return out;
}

std::optional<std::int64_t> ExtentProgram::eval(std::span<const std::int64_t> scalars) const {
  std::int64_t stack[kMaxOps];
  ScalarType types[kMaxOps];
  int top = 0;
  bool wrapped = false;
  for (const Op& op : ops) {
    switch (op.code) {
      case Op::Const:
        types[top] = op.type;
        stack[top++] = op.value;
        break;
      case Op::Param:
        types[top] = op.type;
        stack[top++] = scalars[static_cast<std::size_t>(op.param)];
        break;
      case Op::Unary:
        stack[top - 1] = ir::eval_unary(static_cast<ir::UnOp>(op.op), op.type, stack[top - 1], &wrapped);
        break;
      case Op::Binary: {
        std::int64_t b = stack[--top];
        stack[top - 1] = ir::eval_binary(static_cast<ir::BinOp>(op.op), op.type, stack[top - 1], b, &wrapped);
        types[top - 1] = op.result;
        break;
      }
      case Op::Cast:
        stack[top - 1] = ir::eval_cast(op.result, op.type, stack[top - 1], &wrapped);
        types[top - 1] = op.type;
        break;
    }
  }
  if (wrapped || top != 1) return std::nullopt;
  __int128 v = ir::exact(types[0], stack[0]);
  if (v < 0 || v > INT64_MAX) return std::nullopt;
  return static_cast<std::int64_t>(v);
}

// ---------------------------------------------------------------- the table
Entry::~Entry() {
  if (module) {
    try {
      gpu::make_current(ordinal);
      driver::table().module_unload(static_cast<driver::CUmodule>(module));
    } catch (...) {  // a destructor never throws
    }
  }
}

Table::Table(const Kernel& kernel) {
  const ir::KernelNode& k = detail::KernelAccess::ir(kernel);
  name = k.name;
  declared_threads = k.threads.value_or(0);
  for (std::size_t i = 0; i < k.params.size(); ++i) {
    const ir::ParamNode& p = k.params[i];
    ParamCheck c;
    c.name = p.name;
    c.pointer = p.mem != nullptr;
    c.type = p.var ? p.var->type : p.mem->elem;
    c.is_const = p.mem && p.mem->is_const;
    if (p.extent) {
      c.extent_text = ir::print(p.extent);
      c.has_extent = c.extent.compile(p.extent, k.params);
      if (!c.has_extent)
        throw InternalError("launch: the extent of '" + p.name + "' (" + c.extent_text +
                            ") is not an integer expression over the kernel's parameters");
    }
    if (p.specialized && p.var) specialized.push_back(static_cast<int>(i));
    if (!p.specialized && p.var && is_integer(p.var->type) && classified.size() < 32)
      classified.push_back(static_cast<int>(i));
    params.push_back(std::move(c));
  }
  for (const auto& r : k.requirements) {
    RequirementCheck c;
    c.text = ir::print(r.cond);
    c.loc = r.loc;
    if (!c.program.compile(r.cond, k.params))
      throw InternalError("launch: the requirement " + c.text + " is not an integer condition on the parameters");
    c.params = c.program.params();
    requirements.push_back(std::move(c));
  }
  if (params.size() > kMaxParams)
    throw LaunchError("", "kernel '" + name + "' has " + std::to_string(params.size()) +
                              " parameters; a launch takes at most " + std::to_string(kMaxParams));
  for (const auto& m : k.tensor_maps) {
    TensorMapCheck c;
    c.name = m.name;
    for (std::size_t i = 0; i < k.params.size(); ++i)
      if (k.params[i].mem == m.mem) c.param = static_cast<int>(i);
    c.rows_text = ir::print(m.rows);
    c.cols_text = ir::print(m.cols);
    if (!c.rows.compile(m.rows, k.params) || !c.cols.compile(m.cols, k.params))
      throw InternalError("launch: the shape of tensor map '" + m.name + "' is not an integer expression");
    c.box_rows = m.box_rows;
    c.box_cols = m.box_cols;
    c.elem = m.mem->elem;
    c.loc = m.loc;
    maps.push_back(std::move(c));
  }
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
  const detail::KernelData& d = detail::KernelAccess::data(kernel);
  std::call_once(d.launch_once, [&] { d.launch = std::make_unique<Table>(kernel); });
  return static_cast<Table&>(*d.launch);
}

namespace {

bool same_key(const Entry& e, const Device& device, std::int64_t threads, const Table& t,
              std::span<const std::int64_t> values, std::uint64_t classes) {
  if (e.kind != device.kind() || e.ordinal != device.ordinal() || e.threads != threads || e.classes != classes)
    return false;
  for (std::size_t k = 0; k < t.specialized.size(); ++k)
    if (e.values[k] != values[k]) return false;
  return true;
}

Entry* find(Table& t, const Device& device, std::int64_t threads, std::span<const std::int64_t> values,
            std::uint64_t classes) {
  for (Entry* e = t.head.load(std::memory_order_acquire); e; e = e->next)
    if (same_key(*e, device, threads, t, values, classes)) return e;
  return nullptr;
}

/// The size class of a value (Table::classified): 0 none, 1 [0, 2^30], 2 that and a multiple of 16.
std::uint64_t class_of(std::int64_t value) {
  auto a = Assumption::of(value);
  return !a ? 0 : a->multiple == 16 ? 2 : 1;
}
/// The assumption of a class.
Assumption assumption_of(std::uint64_t code) {
  Assumption a;
  if (code == 2) a.multiple = 16;
  return a;
}

#ifdef VANTAGE_HAVE_CPU_BACKEND
/// Identical kernels (the same lowered IR) share their loaded code: one symbol per content.
std::shared_ptr<cpu::Loaded> load_cpu(const std::vector<char>& object, const std::string& entry) {
  static std::mutex mu;
  static std::map<std::string, std::weak_ptr<cpu::Loaded>> loaded;
  std::lock_guard lock(mu);
  if (auto it = loaded.find(entry); it != loaded.end())
    if (auto l = it->second.lock()) return l;
  auto l = std::make_shared<cpu::Loaded>(cpu::load(object, entry));
  loaded[entry] = l;
  return l;
}
#endif

/// The CPU backend: lowered, as LLVM IR, compiled for this host (through the cache: a second
/// process skips LLVM), loaded through ORC.
void make_cpu(Entry& e, const Kernel& kernel, Table& t, const Spec& spec) {
#ifdef VANTAGE_HAVE_CPU_BACKEND
  auto lowered = pipeline::lower_for(kernel, spec);
  e.guards = std::move(lowered.specialized.guards);
  e.block_threads = lowered.specialized.threads;
  e.alignment.assign(t.params.size(), 0);
  for (const auto& [i, bytes] : lowered.lowered.param_alignment) e.alignment[static_cast<std::size_t>(i)] = bytes;
  std::string text = lower::print(lowered.lowered);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(text.data(), text.size())));
  std::string base;
  for (char c : t.name) base += std::isalnum(static_cast<unsigned char>(c)) ? c : '_';
  std::string entry = "vt_cpu_" + base + "_" + hex;
  cpu::Module m = cpu::generate(lowered.lowered, entry);
  e.cpu_scratch = m.scratch_bytes();
  e.cpu_shared = lowered.lowered.shared_bytes;
  e.sites = lowered.lowered.checks;
  e.sites.insert(e.sites.end(), m.extra_sites().begin(), m.extra_sites().end());
  std::string ir = m.ir(), origin;
  auto object = KernelCache::global().artifact(
      "cpu-object", {ir, cpu::host_fingerprint(), "O3"}, [&] { return cpu::compile(std::move(m), 3); }, &origin);
  auto code = load_cpu(*object, entry);
  e.cpu_fn = reinterpret_cast<void*>(code->fn());
  e.cpu_code = std::move(code);
  logging::get().debug("cpu: kernel '{}' ({} threads per block): object from {}, {} bytes of scratch", t.name,
                       e.block_threads, origin, e.cpu_scratch);
#else
  (void)e;
  (void)kernel;
  (void)t;
  (void)spec;
  throw ToolchainError("this build of Vantage has no CPU backend");
#endif
}

/// Compiles (or reads from the cache) and loads the specialization of `e` on its device.
void make(Entry& e, const Kernel& kernel, const Device& device, Table& t) {
  const ir::KernelNode& k = detail::KernelAccess::ir(kernel);
  Spec spec;
  spec.threads = e.threads;
  spec.arch = device.properties().arch;
  for (std::size_t i = 0; i < t.specialized.size(); ++i)
    spec.sizes[k.params[static_cast<std::size_t>(t.specialized[i])].name] = e.values[i];
  for (std::size_t i = 0; i < t.classified.size(); ++i)
    if (std::uint64_t code = (e.classes >> (2 * i)) & 3)
      spec.assume[k.params[static_cast<std::size_t>(t.classified[i])].name] = assumption_of(code);
  try {
    if (device.kind() == DeviceKind::Cpu) {
      make_cpu(e, kernel, t, spec);
      return;
    }
    if (device.is_host()) {
      auto lowered = pipeline::lower_for(kernel, spec);
      e.guards = std::move(lowered.specialized.guards);
      e.block_threads = lowered.specialized.threads;
      e.alignment.assign(t.params.size(), 0);
      for (const auto& [i, bytes] : lowered.lowered.param_alignment) e.alignment[static_cast<std::size_t>(i)] = bytes;
      e.lowered = std::make_unique<lower::Lowered>(std::move(lowered.lowered));
      return;
    }
    std::shared_ptr<const CachedKernel> c;
    try {
      c = KernelCache::global().get(kernel, spec);
    } catch (const CheckError& err) {
      // Hopper-only instructions (wgmma) need the arch-specific target of the same GPU.
      if (!err.has("V1008") || spec.arch != Arch::SM_90) throw;
      spec.arch = Arch::SM_90a;
      c = KernelCache::global().get(kernel, spec);
    }
    const DeviceProperties& p = device.properties();
    const Specialized& s = c->spec;
    e.guards = s.guards;
    e.block_threads = s.threads;
    e.alignment.assign(t.params.size(), 0);
    for (std::size_t i = 0; i < s.params.size() && i < t.params.size(); ++i) e.alignment[i] = s.params[i].alignment;
    e.dynamic_shared = s.dynamic_shared_bytes;
    gpu::register_checks(lower::check_tag(s.entry), t.name, s.checks);
    gpu::error_record(device.ordinal());  // made before the first launch, not on it
    std::int64_t shared = s.static_shared_bytes + s.dynamic_shared_bytes;
    if (shared > p.shared_per_block_optin)
      throw LaunchError("", "kernel '" + t.name + "' needs " + std::to_string(shared) +
                                " bytes of shared memory per block; " + device.name() + " allows " +
                                std::to_string(p.shared_per_block_optin));
    if (s.threads > p.max_threads_per_block)
      throw LaunchError("grid.threads", "kernel '" + t.name + "' runs " + std::to_string(s.threads) +
                                            " threads per block; " + device.name() + " allows " +
                                            std::to_string(p.max_threads_per_block));
    gpu::make_current(device.ordinal());
    const driver::Table& d = driver::table();
    driver::CUmodule module = nullptr;
    driver::check(d.module_load_data(&module, c->cubin.data()), "cuModuleLoadData",
                  "kernel '" + t.name + "' (" + arch_name(s.arch) + ") on " + device.name());
    e.module = module;
    driver::CUfunction fn = nullptr;
    driver::check(d.module_get_function(&fn, module, s.entry.c_str()), "cuModuleGetFunction", s.entry);
    e.function = fn;
    int regs = 0;
    driver::check(d.func_get_attribute(&regs, driver::kFuncNumRegs, fn), "cuFuncGetAttribute", s.entry);
    e.registers = regs;
    if (static_cast<std::int64_t>(regs) * s.threads > p.registers_per_block)
      throw LaunchError("grid.threads", "kernel '" + t.name + "' uses " + std::to_string(regs) +
                                            " registers per thread; " + std::to_string(s.threads) +
                                            " threads per block need " +
                                            std::to_string(static_cast<std::int64_t>(regs) * s.threads) + ", and " +
                                            device.name() + " has " + std::to_string(p.registers_per_block));
    if (e.dynamic_shared > 0)
      driver::check(d.func_set_attribute(fn, driver::kFuncMaxDynamicShared, static_cast<int>(e.dynamic_shared)),
                    "cuFuncSetAttribute",
                    s.entry + " (dynamic shared memory " + std::to_string(e.dynamic_shared) + ")");
  } catch (const CheckError& err) {
    if (!err.has("V1004")) throw;
    // The launch shape is what the kernel's rules refuse: name it.
    throw LaunchError("grid.threads", "kernel '" + t.name + "' cannot run with " + std::to_string(e.threads) +
                                          " threads per block:\n" + render_all(err.diagnostics(), false));
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

[[noreturn]] void refuse(const Table& t, std::size_t i, const std::string& what) {
  throw LaunchError(t.params[i].name, "kernel '" + t.name + "', parameter '" + t.params[i].name + "': " + what);
}

bool host_memory(const LaunchArg& a) {
  return a.kind() == LaunchArg::Kind::HostMemory ||
         (a.kind() == LaunchArg::Kind::DeviceMemory && a.device_kind() != DeviceKind::Gpu);
}

}  // namespace

// ---------------------------------------------------------------- the launch path
namespace {
int tensor_data_type(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return driver::kTensorUint8;
    case ScalarType::I32: return driver::kTensorInt32;
    case ScalarType::U32: return driver::kTensorUint32;
    case ScalarType::I64: return driver::kTensorInt64;
    case ScalarType::U64: return driver::kTensorUint64;
    case ScalarType::F16: return driver::kTensorFloat16;
    case ScalarType::BF16: return driver::kTensorBfloat16;
    case ScalarType::F32: return driver::kTensorFloat32;
    case ScalarType::F64: return driver::kTensorFloat64;
  }
  return driver::kTensorUint8;
}

/// A tensor map over the buffer given for its parameter: refused where the matrix would not fit the
/// buffer, or where TMA cannot address it (a row not a multiple of 16 bytes, an unaligned buffer).
/// Allocates nothing unless it refuses (the launch path).
void encode_map(const Table& t, const TensorMapCheck& m, std::span<const LaunchArg> args,
                std::span<const std::int64_t> scalars, Prepared::MapBytes& out) {
  const auto p = static_cast<std::size_t>(m.param);
  const LaunchArg& a = args[p];
  auto what = [&] { return "tensor map '" + m.name + "' (" + m.loc.str() + ")"; };
  auto rows = m.rows.eval(scalars), cols = m.cols.eval(scalars);
  if (!rows || !cols || *rows < 1 || *cols < 1 || *rows > INT32_MAX || *cols > INT32_MAX)
    refuse(t, p, what() + ": its shape " + m.rows_text + " x " + m.cols_text + " must be positive 32-bit sizes");
  const std::int64_t eb = type_bytes(m.elem);
  if (*rows * *cols > a.length())
    refuse(t, p,
           what() + " covers " + std::to_string(*rows) + " x " + std::to_string(*cols) +
               " elements, but the buffer given holds " + std::to_string(a.length()));
  if ((*cols * eb) % 16 != 0)
    refuse(t, p, what() + ": a row is " + std::to_string(*cols * eb) + " bytes; TMA needs a multiple of 16");
  if (a.address() % 16 != 0) refuse(t, p, what() + ": TMA needs the buffer aligned to 16 bytes");
  const driver::Table& d = driver::table();
  if (!d.tensor_map_encode_tiled)
    throw LaunchError(t.params[p].name,
                      "kernel '" + t.name + "': " + what() +
                          " needs cuTensorMapEncodeTiled, which this CUDA driver lacks (CUDA 12 or newer has it)");
  const unsigned long long dims[2] = {static_cast<unsigned long long>(*cols), static_cast<unsigned long long>(*rows)};
  const unsigned long long strides[1] = {static_cast<unsigned long long>(*cols * eb)};
  const unsigned box[2] = {static_cast<unsigned>(m.box_cols), static_cast<unsigned>(m.box_rows)};
  const unsigned unit[2] = {1, 1};
  const driver::CUresult r =
      d.tensor_map_encode_tiled(&out, tensor_data_type(m.elem), 2, reinterpret_cast<void*>(a.address()), dims, strides,
                                box, unit, 0, driver::kSwizzle128B, driver::kL2Promotion256B, 0);
  if (r != driver::kSuccess) driver::check(r, "cuTensorMapEncodeTiled", what() + " over '" + t.params[p].name + "'");
}
}  // namespace

const Entry& prepare(const Kernel& kernel, const Device& device, Grid grid, std::span<const LaunchArg> args,
                     Prepared& out) {
  Table& t = table_of(kernel);
  const std::size_t n = t.params.size();
  if (device.is_gpu()) gpu::raise_recorded_error(device.ordinal());  // what an earlier launch did
  if (args.size() != n)
    throw LaunchError("", "kernel '" + t.name + "' takes " + std::to_string(n) + " arguments; " +
                              std::to_string(args.size()) + " were given");
  // Kinds, types and constness first: the key reads the values of specialized sizes.
  for (std::size_t i = 0; i < n; ++i) {
    const ParamCheck& p = t.params[i];
    const LaunchArg& a = args[i];
    if (a.is_buffer() != p.pointer || a.type() != p.type)
      refuse(t, i,
             std::string("expected a ") +
                 (p.pointer ? std::string(p.is_const ? "" : "writable ") + "buffer of " + type_name(p.type)
                            : std::string("scalar ") + type_name(p.type)) +
                 ", given a " + describe_arg(a));
    if (p.pointer && !p.is_const && a.is_const())
      refuse(t, i, "the kernel writes it, but a read-only buffer was given");
    out.scalars[i] = a.is_buffer() ? 0 : a.int_value();
  }
  std::span<const std::int64_t> scalars(out.scalars.data(), n);
  for (const RequirementCheck& r : t.requirements) {
    auto v = r.program.eval(scalars);
    if (v && *v != 0) continue;
    std::string given;
    for (int i : r.params)
      given += (given.empty() ? "" : ", ") + t.params[static_cast<std::size_t>(i)].name + " = " +
               std::to_string(out.scalars[static_cast<std::size_t>(i)]);
    throw LaunchError(r.params.empty() ? std::string() : t.params[static_cast<std::size_t>(r.params[0])].name,
                      "kernel '" + t.name + "' requires " + r.text + " (" + r.loc.str() + ")" +
                          (v ? "; this launch has " + given : "; it cannot be computed exactly for " + given));
  }
  const std::int64_t threads = grid.threads ? grid.threads : t.declared_threads;
  if (threads <= 0)
    throw LaunchError("grid.threads", "kernel '" + t.name + "' leaves its threads per block open: give Grid::threads");
  if (grid.blocks < 1)
    throw LaunchError("grid.blocks", "kernel '" + t.name + "': a grid needs at least 1 block; " +
                                         std::to_string(grid.blocks) + " given");
  std::array<std::int64_t, kMaxParams> values;
  for (std::size_t k = 0; k < t.specialized.size(); ++k)
    values[k] = out.scalars[static_cast<std::size_t>(t.specialized[k])];
  std::span<const std::int64_t> key(values.data(), t.specialized.size());
  // Automatic specialization: the variant for the size classes of these arguments.
  std::uint64_t classes = 0;
  for (std::size_t k = 0; k < t.classified.size(); ++k)
    classes |= class_of(out.scalars[static_cast<std::size_t>(t.classified[k])]) << (2 * k);

  Entry* e = find(t, device, threads, key, classes);
  if (e && e->state.load(std::memory_order_acquire) == Entry::kReady) {
    t.launches.fetch_add(1, std::memory_order_relaxed);
  } else {
    ++t.misses;
    e = &entry_for(t, kernel, device, threads, key, classes);
  }

  for (const Guard& g : e->guards)
    if (!g.accepts(grid.blocks, scalars))
      throw LaunchError(g.kind == Guard::Kind::ParamEquals ? t.params[static_cast<std::size_t>(g.param)].name
                                                           : std::string("grid.blocks"),
                        "kernel '" + t.name + "': this launch breaks the guard '" + g.text + "'" +
                            (g.loc.known() ? " (from " + g.loc.str() + ")" : "") + " with " +
                            std::to_string(grid.blocks) + " blocks");
  if (grid.blocks > device.properties().max_grid_blocks)
    throw LaunchError("grid.blocks", "kernel '" + t.name + "': " + std::to_string(grid.blocks) + " blocks; " +
                                         device.name() + " allows " +
                                         std::to_string(device.properties().max_grid_blocks));

  for (std::size_t i = 0; i < n; ++i) {
    const ParamCheck& p = t.params[i];
    const LaunchArg& a = args[i];
    out.extents[i] = -1;
    if (!p.pointer) continue;
    // Where the memory is.
    if (device.is_gpu()) {
      if (a.kind() == LaunchArg::Kind::HostMemory || a.device_kind() != DeviceKind::Gpu)
        refuse(t, i,
               "host memory was given, but the kernel runs on " + device.name() +
                   ": allocate it there (device.alloc<T>(n)) and copy the data in");
      if (a.device_ordinal() != device.ordinal())
        refuse(t, i,
               "a buffer on GPU " + std::to_string(a.device_ordinal()) + " was given, but the kernel runs on " +
                   device.name());
    } else if (!host_memory(a)) {
      refuse(t, i,
             "a " + describe_arg(a) + " was given, but the kernel runs on the " + device.name() +
                 ", which reads host memory: copy it to a host buffer");
    }
    if (p.has_extent) {
      auto ext = p.extent.eval(scalars);
      if (!ext)
        refuse(t, i,
               "its extent " + p.extent_text +
                   " is negative, or its arithmetic wraps at the parameters' types, for these arguments (an "
                   "extent past 2^31 needs i64 sizes)");
      if (*ext > a.length())
        refuse(t, i,
               "its extent " + p.extent_text + " is " + std::to_string(*ext) +
                   " elements, but the buffer given holds " + std::to_string(a.length()));
      out.extents[i] = *ext;
    }
    if (int al = e->alignment[i]; al > 0 && a.address() % static_cast<std::uint64_t>(al) != 0)
      refuse(t, i,
             "its vector accesses need " + std::to_string(al) +
                 "-byte alignment, and the buffer given is not aligned (address % " + std::to_string(al) + " = " +
                 std::to_string(a.address() % static_cast<std::uint64_t>(al)) + ")");
  }
  // No writable buffer may overlap another buffer argument (the kernel's pointers are __restrict__).
  for (std::size_t i = 0; i < n; ++i) {
    const LaunchArg& a = args[i];
    if (!t.params[i].pointer || t.params[i].is_const) continue;
    std::uint64_t lo = a.address(), hi = lo + static_cast<std::uint64_t>(a.length()) * type_bytes(a.type());
    for (std::size_t j = 0; j < n; ++j) {
      const LaunchArg& b = args[j];
      if (j == i || !t.params[j].pointer || host_memory(a) != host_memory(b)) continue;
      std::uint64_t lo2 = b.address(), hi2 = lo2 + static_cast<std::uint64_t>(b.length()) * type_bytes(b.type());
      if (lo < hi2 && lo2 < hi && lo < hi && lo2 < hi2)
        refuse(t, i, "the kernel writes it, and it overlaps the buffer given for '" + t.params[j].name + "'");
    }
  }
  // Packing: each argument's bytes in its own slot, exactly the C++ type of the parameter.
  for (std::size_t i = 0; i < n; ++i) {
    const ParamCheck& p = t.params[i];
    const LaunchArg& a = args[i];
    std::uint64_t& slot = out.slots[i];
    slot = 0;
    if (p.pointer) {
      slot = a.address();
    } else {
      switch (p.type) {
        case ScalarType::F32: {
          float f = static_cast<float>(a.float_value());
          std::memcpy(&slot, &f, sizeof f);
          break;
        }
        case ScalarType::F64: {
          double f = a.float_value();
          std::memcpy(&slot, &f, sizeof f);
          break;
        }
        case ScalarType::Bool: {
          bool b = a.int_value() != 0;
          std::memcpy(&slot, &b, sizeof b);
          break;
        }
        case ScalarType::I32:
        case ScalarType::U32: {
          auto v = static_cast<std::uint32_t>(a.int_value());
          std::memcpy(&slot, &v, sizeof v);
          break;
        }
        case ScalarType::F16:
        case ScalarType::BF16: {
          auto v = static_cast<std::uint16_t>(a.int_value());
          std::memcpy(&slot, &v, sizeof v);
          break;
        }
        case ScalarType::I64:
        case ScalarType::U64: {
          std::int64_t v = a.int_value();
          std::memcpy(&slot, &v, sizeof v);
          break;
        }
      }
    }
    out.pointers[i] = &slot;
  }
  // The hidden arguments: each pointer's length, then the error record (GPUs only).
  std::size_t k = n;
  for (std::size_t i = 0; i < n; ++i) {
    if (!t.params[i].pointer) continue;
    out.slots[k] = static_cast<std::uint64_t>(args[i].length());
    out.pointers[k] = &out.slots[k];
    ++k;
  }
  out.slots[k] = device.is_gpu() ? reinterpret_cast<std::uint64_t>(gpu::error_record(device.ordinal())) : 0;
  out.pointers[k] = &out.slots[k];
  ++k;
  for (std::size_t m = 0; m < t.maps.size(); ++m) {
    if (device.is_gpu()) encode_map(t, t.maps[m], args, scalars, out.maps[m]);
    out.pointers[k++] = &out.maps[m];
  }
  out.pointers[k] = nullptr;
  out.count = k;
  out.blocks = grid.blocks;
  return *e;
}

namespace {

LaunchReport run_host(const Kernel& kernel, const Device& device, const Entry& e, const Prepared& p,
                      std::span<const LaunchArg> args) {
  const Table& t = table_of(kernel);
  std::vector<interp::Arg> run_args(args.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    const LaunchArg& a = args[i];
    interp::Arg& r = run_args[i];
    if (!t.params[i].pointer) {
      r.i = a.int_value();
      r.f = a.float_value();
      if (a.type() == ScalarType::F16) r.f = float16::half_to_float(static_cast<std::uint16_t>(a.int_value()));
      if (a.type() == ScalarType::BF16) r.f = float16::bf16_to_float(static_cast<std::uint16_t>(a.int_value()));
      continue;
    }
    r.is_buffer = true;
    r.data = a.data();
    r.length = a.length();
    r.extent = p.extents[i];
  }
  interp::Options o;
  const auto& io = device.interpreter_options();
  o.order = io.order == ThreadOrder::Forward   ? interp::Order::Forward
            : io.order == ThreadOrder::Reverse ? interp::Order::Reverse
                                               : interp::Order::Random;
  o.seed = io.seed;
  o.checks = io.checks;
  o.max_statements = io.max_statements;
  std::shared_ptr<CostReport> measured;
  if (io.measure) o.measure = (measured = std::make_shared<CostReport>()).get();
  auto start = std::chrono::steady_clock::now();
  interp::Stats st = interp::run(*e.lowered, p.blocks, run_args, o);
  LaunchReport rep;
  rep.measured = std::move(measured);
  rep.threads = e.block_threads * p.blocks;
  rep.thread_statements = st.thread_statements;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rep;
}

/// A failed check the CPU code recorded (the record vt_cpu_fail writes), as the GPU's is reported.
[[noreturn]] void raise_cpu(const Entry& e, const std::string& kernel, const std::uint64_t* r) {
  std::uint64_t site = r[1];
  auto index = static_cast<std::int64_t>(r[4]), bound = static_cast<std::int64_t>(r[5]);
  std::string what = "an access";
  std::vector<SourceLoc> locs;
  if (site < e.sites.size()) {
    const lower::CheckSite& c = e.sites[site];
    what = std::string(c.write ? "writes" : "reads") + " '" + c.memory + "'[" + std::to_string(index) + "]";
    if (c.loc.known()) locs.push_back(c.loc);
  }
  throw ExecutionError("memcheck",
                       "on the CPU, kernel '" + kernel + "': block " + std::to_string(r[2]) + " thread " +
                           std::to_string(r[3]) + " " + what + " at " +
                           (locs.empty() ? std::string("<unknown line>") : locs[0].str()) + ", outside its " +
                           std::to_string(bound) + " elements (the access was skipped)",
                       locs);
}

LaunchReport run_cpu(const Kernel& kernel, const Device& device, const Entry& e, Prepared& p) {
  std::uint64_t record[8] = {};
  // cpu::BlockFn (jit/cpu/cpu.h, absent from a build without the CPU backend, which never gets here)
  auto fn = reinterpret_cast<void (*)(void**, std::int64_t, std::int64_t, std::int64_t, void*, void*, std::uint64_t*)>(
      e.cpu_fn);
  void** args = p.pointers.data();
  const std::int64_t blocks = p.blocks;
  auto start = std::chrono::steady_clock::now();
  cpu_pool::run(p.blocks, device.host_threads(), e.cpu_shared, e.cpu_scratch,
                [&](std::int64_t first, std::int64_t last, void* shared, void* scratch) {
                  fn(args, first, last, blocks, shared, scratch, record);
                });
  if (record[0]) raise_cpu(e, table_of(kernel).name, record);
  LaunchReport rep;
  rep.threads = e.block_threads * p.blocks;
  rep.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  return rep;
}

LaunchReport run(const Kernel& kernel, const Device& device, void* stream, Grid grid, std::span<const LaunchArg> args) {
  Prepared p;
  const Entry& e = prepare(kernel, device, grid, args, p);
  if (device.kind() == DeviceKind::Cpu) return run_cpu(kernel, device, e, p);
  if (device.is_host()) return run_host(kernel, device, e, p, args);
  gpu::make_current(device.ordinal());
  driver::CUresult r = driver::table().launch_kernel(
      static_cast<driver::CUfunction>(e.function), static_cast<unsigned>(p.blocks), 1, 1,
      static_cast<unsigned>(e.block_threads), 1, 1, static_cast<unsigned>(e.dynamic_shared),
      static_cast<driver::CUstream>(stream), p.pointers.data(), nullptr);
  if (r != driver::kSuccess)
    driver::check(r, "cuLaunchKernel",
                  "kernel '" + table_of(kernel).name + "', " + std::to_string(p.blocks) + " blocks of " +
                      std::to_string(e.block_threads) + " threads on " + device.name());
  LaunchReport rep;
  rep.threads = e.block_threads * p.blocks;
  return rep;
}

}  // namespace
}  // namespace runtime

LaunchReport launch(const Kernel& kernel, const Device& device, Grid grid, std::span<const LaunchArg> args) {
  return runtime::run(kernel, device, nullptr, grid, args);
}

LaunchReport launch(const Kernel& kernel, const Stream& stream, Grid grid, std::span<const LaunchArg> args) {
  return runtime::run(kernel, stream.device(), stream.native(), grid, args);
}

LaunchStats launch_stats(const Kernel& kernel) {
  const runtime::Table& t = runtime::table_of(kernel);
  LaunchStats s;
  s.launches = t.launches.load();
  s.misses = t.misses.load();
  s.compiles = t.compiles.load();
  s.failures = t.failures.load();
  s.compile_ms = static_cast<double>(t.compile_ns.load()) / 1e6;
  return s;
}

std::shared_future<void> prepare(const Kernel& kernel, const Device& device, const Spec& spec) {
  runtime::Table& t = runtime::table_of(kernel);
  const ir::KernelNode& k = detail::KernelAccess::ir(kernel);
  std::int64_t threads = spec.threads ? spec.threads : t.declared_threads;
  if (threads <= 0)
    throw LaunchError("grid.threads", "kernel '" + t.name + "' leaves its threads per block open: set Spec::threads");
  std::vector<std::int64_t> values;
  for (int i : t.specialized) {
    const std::string& name = k.params[static_cast<std::size_t>(i)].name;
    auto it = spec.sizes.find(name);
    if (it == spec.sizes.end())
      throw LaunchError(
          name, "kernel '" + t.name + "': parameter '" + name + "' is specialized; give its value in Spec::sizes");
    values.push_back(it->second);
  }
  // The size classes the Spec's assumptions name (a class's assumption exactly; none otherwise).
  std::uint64_t classes = 0;
  for (std::size_t i = 0; i < t.classified.size(); ++i) {
    auto it = spec.assume.find(k.params[static_cast<std::size_t>(t.classified[i])].name);
    if (it == spec.assume.end()) continue;
    for (std::uint64_t code : {1, 2})
      if (it->second == runtime::assumption_of(code)) classes |= code << (2 * i);
  }
  auto [e, created] = runtime::claim(t, device, threads, values, classes);
  if (created) {
    ++t.misses;
    // Made on a worker; the task holds the kernel (and so its table and the entry) until it is done.
    runtime::Pool::get().post(
        [kernel, device, e = e] { runtime::fill(*e, kernel, device, runtime::table_of(kernel)); });
  }
  return e->done;
}

Spec launch_spec(const Kernel& kernel, Spec spec, const std::map<std::string, std::int64_t>& values) {
  const runtime::Table& t = runtime::table_of(kernel);
  const ir::KernelNode& k = detail::KernelAccess::ir(kernel);
  for (int i : t.classified) {
    const std::string& name = k.params[static_cast<std::size_t>(i)].name;
    auto it = values.find(name);
    if (it == values.end()) continue;
    if (std::uint64_t code = runtime::class_of(it->second)) spec.assume[name] = runtime::assumption_of(code);
  }
  return spec;
}

std::int64_t best_threads(const Kernel& kernel, const Device& device, Spec spec) {
  const runtime::Table& t = runtime::table_of(kernel);
  if (t.declared_threads > 0) return t.declared_threads;
  const DeviceProperties& p = device.properties();
  spec.arch = p.arch;
  std::int64_t best = 0;
  double best_occ = -1;
  std::string why;
  for (std::int64_t threads : {64, 128, 256, 512, 1024}) {
    if (threads > p.max_threads_per_block) continue;
    spec.threads = threads;
    double occ = 0;
    try {
      Specialized s = specialize_for(kernel, spec);
      int registers = 0;
      if (nvrtc_available() || device.is_gpu()) registers = KernelCache::global().get(kernel, spec)->registers;
      occ = occupancy(p, threads, registers, s.static_shared_bytes + s.dynamic_shared_bytes);
    } catch (const std::exception& e) {
      if (why.empty()) why = e.what();
      continue;
    }
    auto distance = [](std::int64_t x) { return x > 256 ? x / 256 : 256 / x; };
    if (occ > best_occ || (occ == best_occ && distance(threads) < distance(best))) {
      best = threads;
      best_occ = occ;
    }
  }
  if (best == 0 || best_occ <= 0)
    throw LaunchError("grid.threads", "kernel '" + t.name + "': no threads per block of 64..1024 fits " +
                                          device.name() + (why.empty() ? "" : ": " + why));
  logging::get().debug("best_threads: kernel '{}' on {}: {} threads per block, occupancy {:.2f}", t.name, device.name(),
                       best, best_occ);
  return best;
}

namespace detail {
void check_typed_signature(const Kernel& kernel, std::span<const TypedParamInfo> params) {
  const runtime::Table& t = runtime::table_of(kernel);
  auto cpp = [](const TypedParamInfo& p) {
    std::string e = type_name(p.type);
    return p.pointer ? std::string("Buffer<") + (p.is_const ? "const " : "") + e + ">" : e;
  };
  auto ir = [](const runtime::ParamCheck& p) {
    std::string e = type_name(p.type);
    return p.pointer ? std::string(p.is_const ? "read-only" : "writable") + " buffer of " + e + " (Buffer<" +
                           (p.is_const ? "const " : "") + e + ">)"
                     : "scalar " + e;
  };
  if (params.size() != t.params.size())
    throw LaunchError("", "TypedKernel for kernel '" + t.name + "' lists " + std::to_string(params.size()) +
                              " parameters; the kernel has " + std::to_string(t.params.size()));
  for (std::size_t i = 0; i < params.size(); ++i) {
    const TypedParamInfo& p = params[i];
    const runtime::ParamCheck& q = t.params[i];
    if (p.pointer != q.pointer || p.type != q.type || (p.pointer && p.is_const != q.is_const))
      throw LaunchError(q.name, "TypedKernel for kernel '" + t.name + "': parameter " + std::to_string(i + 1) + " is " +
                                    cpp(p) + " in the C++ signature, but '" + q.name + "' is a " + ir(q));
  }
}
}  // namespace detail

}  // namespace vantage
