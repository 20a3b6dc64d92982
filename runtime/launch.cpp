// Vantage launches: see vantage/launch.hpp and docs/design.md section 7.
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
#include <cstdint>
#include <cstring>
#include <functional>
#include <mutex>
#include <optional>
#include <stdexcept>
#include <thread>

#include "backend/backend.h"
#include "backend/driver.h"
#include "backend/gpu.h"
#include "jit/pipeline/signature.h"
#include "runtime/launch_internal.h"
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
    case ScalarType::Bool:
    case ScalarType::I8:  // TMA moves bytes: the signedness is the kernel's reading of them
    case ScalarType::U8:
    case ScalarType::F8E4M3:
    case ScalarType::F8E5M2: return driver::kTensorUint8;
    case ScalarType::I16:
    case ScalarType::U16: return driver::kTensorUint16;
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
  for (const Guard& g : e->exec->guards)
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
    } else if (a.kind() == LaunchArg::Kind::DeviceMemory && a.device_kind() != device.kind()) {
      // Host memory either way, but a buffer belongs to the device that made it (docs/runtime.md).
      refuse(t, i,
             "a " + describe_arg(a) + " was given, but the kernel runs on the " + device.name() +
                 ": allocate it there (device.alloc<T>(n)), or pass host memory (a std::vector or a span)");
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
    if (int al = e->exec->alignment[i]; al > 0 && a.address() % static_cast<std::uint64_t>(al) != 0)
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
        case ScalarType::I8:
        case ScalarType::U8:
        case ScalarType::F8E4M3:
        case ScalarType::F8E5M2: {
          auto v = static_cast<std::uint8_t>(a.int_value());
          std::memcpy(&slot, &v, sizeof v);
          break;
        }
        case ScalarType::I16:
        case ScalarType::U16: {
          auto v = static_cast<std::uint16_t>(a.int_value());
          std::memcpy(&slot, &v, sizeof v);
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
  out.slots[k] = reinterpret_cast<std::uint64_t>(e->exec->error_record);  // GPUs only; 0 on the host
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

LaunchReport run(const Kernel& kernel, const Device& device, void* stream, Grid grid, std::span<const LaunchArg> args) {
  Prepared p;
  const Entry& e = prepare(kernel, device, grid, args, p);
  backend::Launch l;
  l.pointers = p.pointers.data();
  l.extents = std::span<const std::int64_t>(p.extents.data(), args.size());
  l.blocks = p.blocks;
  l.stream = stream;
  l.host_threads = device.host_threads();
  l.interpreter = &device.interpreter_options();
  backend::Outcome o = e.exec->run(l);
  LaunchReport rep;
  rep.threads = e.exec->block_threads * p.blocks;
  rep.thread_statements = o.thread_statements;
  rep.seconds = o.seconds;
  rep.measured = std::move(o.measured);
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
  std::int64_t threads = spec.threads ? spec.threads : t.declared_threads;
  if (threads <= 0)
    throw LaunchError("grid.threads", "kernel '" + t.name + "' leaves its threads per block open: set Spec::threads");
  std::vector<std::int64_t> values;
  for (int i : t.specialized) {
    const std::string& name = t.params[static_cast<std::size_t>(i)].name;
    auto it = spec.sizes.find(name);
    if (it == spec.sizes.end())
      throw LaunchError(
          name, "kernel '" + t.name + "': parameter '" + name + "' is specialized; give its value in Spec::sizes");
    values.push_back(it->second);
  }
  // The size classes the Spec's assumptions name (a class's assumption exactly; none otherwise).
  std::uint64_t classes = 0;
  for (std::size_t i = 0; i < t.classified.size(); ++i) {
    auto it = spec.assume.find(t.params[static_cast<std::size_t>(t.classified[i])].name);
    if (it == spec.assume.end()) continue;
    for (std::uint64_t code : {1, 2})
      if (it->second == runtime::assumption_of(code)) classes |= code << (2 * i);
  }
  auto [e, created] = runtime::claim(t, device, threads, values, classes);
  if (created) {
    ++t.misses;
    // Made on a worker; the task holds the kernel (and so its table and the entry) until it is done.
    runtime::post([kernel, device, e = e] { runtime::fill(*e, kernel, device, runtime::table_of(kernel)); });
  }
  return e->done;
}

Spec launch_spec(const Kernel& kernel, Spec spec, const std::map<std::string, std::int64_t>& values) {
  const runtime::Table& t = runtime::table_of(kernel);
  for (int i : t.classified) {
    const pipeline::ParamCheck& p = t.params[static_cast<std::size_t>(i)];
    const std::string& name = p.name;
    auto it = values.find(name);
    if (it == values.end()) continue;
    // A value its parameter cannot hold names no launch: a launch's argument has the parameter's type
    // (64-bit values are taken as their bits, a u64's past 2^63 negative).
    const std::int64_t v = it->second;
    const bool fits = p.type == ScalarType::I32   ? v >= INT32_MIN && v <= INT32_MAX
                      : p.type == ScalarType::U32 ? v >= 0 && v <= static_cast<std::int64_t>(UINT32_MAX)
                                                  : true;
    if (!fits)
      throw std::invalid_argument("launch_spec: kernel '" + kernel.name() + "': the value " + std::to_string(v) +
                                  " of '" + name + "' does not fit its type " + type_name(p.type));
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
