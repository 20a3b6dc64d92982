// Vantage public device vocabulary: the kinds of device a kernel runs on, what a device can do
// (the limits a launch is checked against), and the interpreter device's options. The devices
// themselves (vantage/runtime.hpp) and the backends that make code for them read these.
#pragma once

#include <cstdint>
#include <string>

#include "vantage/target.hpp"

namespace vantage {

/// What the interpreter device does between barriers: which thread runs first.
enum class ThreadOrder : std::uint8_t { Forward, Reverse, Random };

struct InterpreterOptions {
  ThreadOrder order = ThreadOrder::Forward;
  std::uint64_t seed = 1;  ///< for ThreadOrder::Random
  bool checks = true;      ///< racecheck and initcheck (memcheck and synccheck are always on)
  /// Thread-statements a launch may run before it stops with an ExecutionError of check "limit".
  std::int64_t max_statements = std::int64_t{1} << 31;
  /// Measure every memory request and branch of each launch in the cost report's units
  /// (LaunchReport::measured; docs/report.md): what `kernel.report` predicts, counted as it runs.
  bool measure = false;
};

enum class DeviceKind : std::uint8_t { Interpreter, Cpu, Gpu };
const char* device_kind_name(DeviceKind kind);

/// What a device can do: the limits a launch is checked against and the figures the cost report
/// and the occupancy helper use. For the interpreter, the limits of the architecture it stands for.
struct DeviceProperties {
  std::string name;
  Arch arch = Arch::SM_90;  ///< what kernels are compiled for
  int compute_major = 0, compute_minor = 0;
  /// No target Vantage compiles for runs here as machine code (a GPU newer than them all): kernels
  /// are compiled for `arch`, and the driver compiles their PTX for this GPU once (kept in the cache).
  bool runs_ptx = false;
  int multiprocessors = 0;
  int warp_size = 32;
  int max_threads_per_block = 1024;
  int max_threads_per_multiprocessor = 2048;
  int max_blocks_per_multiprocessor = 32;
  std::int64_t max_grid_blocks = 2147483647;
  std::int64_t shared_per_block = 48 * 1024;        ///< without opting in
  std::int64_t shared_per_block_optin = 48 * 1024;  ///< the most a block can have
  std::int64_t shared_per_multiprocessor = 0;
  int registers_per_block = 65536;
  int registers_per_multiprocessor = 65536;
  std::int64_t total_memory = 0;  ///< bytes
  std::int64_t l2_bytes = 0;
  int clock_khz = 0, memory_clock_khz = 0, memory_bus_bits = 0;
  /// Peak memory bandwidth in GB/s from the memory clock and bus width (0 when unknown).
  double memory_bandwidth_gbs() const;
};

}  // namespace vantage
