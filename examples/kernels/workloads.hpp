// Example workloads: an example's buffers on one device at one size, made once and launched many
// times (the GPU speed benchmark, the tuner), with the arguments in the kernel's order and a check of
// the output against a reference. The inputs are small integers (quarters in bf16), so that every
// sum is exact in any order and the checks compare for equality. Unlike a run (runs.hpp), which
// copies in, launches once and copies back, a workload leaves its buffers on the device.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "vantage/vantage.hpp"

namespace vantage::examples {

struct Workload {
  std::vector<LaunchArg> args;               ///< in the kernel's parameter order
  std::vector<std::shared_ptr<void>> owned;  ///< the DeviceBuffers the arguments point into
  /// Before each launch (the scan's words, zero at launch); null where a launch needs nothing. Every
  /// workload's launch, after its reset, leaves the same output (a GEMM's beta is 0).
  std::function<void()> reset;
  std::function<void()> restore;              ///< the output back to its state before the first launch
  std::function<std::vector<char>()> output;  ///< the output's bytes
  std::function<std::string()> check;         ///< "" when the output is the reference's, else the first difference
  /// The GEMMs: their inputs refilled with random values (random mantissas in [-1, 1) for floats, every
  /// byte for int8), to time on data like the vendor baselines' after the check; `check` no longer
  /// holds after it. A tensor core on small integers, whose bits rarely change, draws less power and
  /// keeps a higher clock. Null for the rest.
  std::function<void()> randomize;
  double flops = 0, bytes = 0;  ///< per launch: the math, and the bytes the kernel must move
  std::int64_t copy_bytes = 0;  ///< kernels bound by memory: the bytes of their input (0: none)
  int input = -1;               ///< ...and which argument that input is
  /// A workload of several kernels (radix_sort's passes): launches them all, in order, on the stream;
  /// `args` are then unused. Null for one kernel launched with `args`.
  std::function<void(const Stream&)> run;
};

/// Whether example `name` has a workload: the GEMMs (sgemm rungs, mma_tf32, igemm_mma, gemm_wgmma_bf16), the
/// copy, saxpy_vec, the transposes, the block reduction, the scans, and the device-wide examples (device_sum,
/// compact, byte_histogram), and the radix sort (four passes of three kernels: Workload::run).
bool has_workload(const std::string& name);
/// The sizes example `name`'s workload takes, in the order M, N, K, n (none without a workload).
std::vector<std::string> workload_sizes(const std::string& name);
/// Example `name`'s workload at `size` (its run's size names: M, N, K or n) on `device`. Throws
/// std::invalid_argument for an example without one or a size it lacks.
Workload make_workload(const std::string& name, const std::map<std::string, std::int64_t>& size, const Device& device);

}  // namespace vantage::examples
