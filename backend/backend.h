// Vantage backends: one interface in front of the three ways a kernel runs. Each backend turns a
// kernel specialized on a Spec into an Executable for one device (the CUDA backend: emitted CUDA
// C++, NVRTC through the kernel cache, the module loaded by the driver; the CPU backend: LLVM IR,
// host code through the artifact cache, loaded through ORC; the interpreter: the lowered kernel
// itself), and the Executable runs launches whose arguments the runtime has checked and packed.
// The runtime (runtime/launch.cpp) keeps the table of specializations, the checks and the packing,
// and reaches the pipeline's stages only through this interface.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "vantage/device.hpp"
#include "vantage/kernel.hpp"
#include "vantage/report.hpp"
#include "vantage/spec.hpp"

namespace vantage::backend {

/// The device a backend makes code for: the runtime's Device, as values.
struct Target {
  DeviceKind kind = DeviceKind::Interpreter;
  int ordinal = 0;
  const DeviceProperties* properties = nullptr;
  std::string name;  ///< for messages ("GPU 0 (NVIDIA H100 ..., sm_90)")
};

/// One launch as a backend runs it: the arguments packed in the entry point's ABI (each parameter's
/// bytes, one length per pointer, the error record, the tensor maps; null after the last), already
/// checked against the kernel's signature.
struct Launch {
  void* const* pointers = nullptr;
  std::span<const std::int64_t> extents;  ///< per parameter: elements a pointer may touch (-1: its length)
  std::int64_t blocks = 1;
  void* stream = nullptr;                           ///< GPUs: the CUstream (null: the default stream)
  int host_threads = 1;                             ///< the CPU backend: threads that run blocks
  const InterpreterOptions* interpreter = nullptr;  ///< the interpreter's options
};

/// What one launch did, as far as the backend knows (the runtime adds the threads).
struct Outcome {
  std::int64_t thread_statements = 0;  ///< the interpreter's statements, summed over threads
  double seconds = 0;                  ///< host backends: how long it ran
  std::shared_ptr<const CostReport> measured;
};

/// A kernel specialized, compiled and loaded for one device: what a launch checks before it runs
/// (the residual guards, the block size, the alignment vector accesses need) and how it runs.
class Executable {
 public:
  virtual ~Executable() = default;
  /// Runs one launch; throws ExecutionError (the CPU backend's and interpreter's checks as they
  /// run) or DriverError. A GPU launch returns when it is queued.
  virtual Outcome run(const Launch& launch) const = 0;

  std::int64_t block_threads = 0;
  std::vector<Guard> guards;
  std::vector<int> alignment;             ///< per parameter: bytes its vector accesses need (0: none)
  std::uint64_t* error_record = nullptr;  ///< GPUs: where a failed check is recorded (packed after the lengths)
  // GPUs, for the launch benchmark's raw driver call and the tuner's reports.
  void* function = nullptr;  ///< the CUfunction
  std::int64_t dynamic_shared = 0;
  int registers = 0;
};

/// Makes Executables for one kind of device.
class Backend {
 public:
  virtual ~Backend() = default;
  /// Specializes `kernel` on `spec` (spec.arch is the target's), compiles or reads it from the
  /// cache, and loads it on `target`. Throws CheckError, CompileError, LaunchError (the kernel does
  /// not fit the device), DriverError or ToolchainError.
  virtual std::unique_ptr<Executable> make(const Kernel& kernel, Spec spec, const Target& target) const = 0;
  /// What compiles for this backend, for cache keys and reports ("NVRTC 13.0 ...", the LLVM host).
  virtual std::string toolchain() const = 0;
};

/// The backend of a kind of device. The CPU backend's make throws ToolchainError in a build
/// without LLVM (cpu_available() is false).
const Backend& for_kind(DeviceKind kind);
/// Whether this build has the CPU backend.
bool cpu_available();

}  // namespace vantage::backend
