// Vantage static cost report: what a launch of a kernel costs, computed from its lowered IR at one
// specialization before it ever runs (docs/report.md). For each memory access: global sectors per
// request against the ideal for its width, shared-memory wavefronts and bank-conflict ways,
// predicated-off lanes; for each branch and loop: how often it splits a warp; for the kernel: global
// bytes, floating-point work, and work and span in warp steps. The units are Nsight Compute's
// (32-byte sectors, shared wavefronts), so the two compare line by line.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "vantage/diagnostics.hpp"
#include "vantage/types.hpp"

namespace vantage {

/// One memory access of the kernel (a load, a store, an atomic or a vector copy) over the launch.
struct AccessCost {
  SourceLoc loc;       ///< the builder line
  std::string memory;  ///< the buffer or shared array
  MemSpace space = MemSpace::Global;
  bool write = false;
  int bytes = 4;                ///< bytes per lane per request
  std::int64_t requests = 0;    ///< warp-level requests over the launch
  double lanes = 0;             ///< active lanes per request (32 less the predicated-off ones)
  double sectors = 0;           ///< global: 32-byte sectors per request
  double ideal_sectors = 0;     ///< global: what the active lanes' bytes need, contiguous and aligned
  double wavefronts = 0;        ///< shared: wavefronts per request
  double ideal_wavefronts = 0;  ///< shared: what the active lanes' bytes need without conflicts
  int conflict_ways = 1;        ///< shared: the worst request's lanes on one bank (distinct words)
  bool exact = true;            ///< false: sampled (an index the report could not follow exactly)
  /// A shared load the CUDA compiler may merge with a neighbour's into one wider load (adjacent
  /// elements): its requests and wavefronts, exact for the kernel as written, are an upper bound on
  /// what a GPU counts (docs/report.md).
  bool compiler_may_merge = false;
  /// One side of a cp.async copy: Nsight Compute counts its global side with the loads and its shared
  /// side under no load or store operation of its own.
  bool async_copy = false;
  std::string hint;  ///< what to do about it, when anything
};

/// A branch or loop whose condition may differ between the lanes of a warp.
struct BranchCost {
  SourceLoc loc;
  std::string what;             ///< "if", "for" or "while"
  std::int64_t executions = 0;  ///< warp-level evaluations of the condition over the launch
  std::int64_t divergent = 0;   ///< of those, the ones that split the warp
  bool exact = true;
};

/// A global buffer the launch uses: its size (the length given) and whether it is read or written.
struct BufferUse {
  std::string name;
  double bytes = 0;
  bool read = false, written = false;
};

/// What the placement advice knows of the two devices (paper 003's primitive cost providers). The CPU
/// figures were measured on the development machine (docs/report.md); the GPU's are an H200's from
/// its data sheet, with the transfers over PCIe 5.
struct PlacementModel {
  double cpu_ns_per_step = 1.0;                 ///< CPU backend, one host thread: per warp step
  double cpu_ns_per_byte_cached = 0.002;        ///< ... per byte of global traffic when the buffers fit the cache
  double cpu_ns_per_byte = 0.015;               ///< ... and when they do not
  double cpu_cache_bytes = 32.0 * 1024 * 1024;  ///< the last-level cache
  double cpu_launch_us = 0.2;                   ///< a launch's fixed cost (the pool, the argument checks)
  double cpu_ns_per_loop_step = 0;              ///< ... a step inside a loop's cost beyond a step's
  double cpu_ns_per_exchange = 0;               ///< ... a lane exchange's cost beyond a step's
  double cpu_ns_per_barrier = 0;                ///< ... a barrier's, per warp, beyond a step's
  /// Where the CPU figures come from: "fitted" (the constants above, fitted on the development host,
  /// docs/report.md) or "measured" (tune::measured_placement_model, on this host).
  std::string cpu_figures = "fitted";
  int cpu_threads = 1;  ///< host threads the CPU backend uses
  std::string gpu = "H200";
  double gpu_bytes_per_s = 4.8e12;  ///< HBM bandwidth
  double gpu_flops = 6.7e13;        ///< f32 FMA peak without tensor cores
  double gpu_steps_per_s = 2.6e11;  ///< warp steps: 132 SMs x 4 schedulers x 1.98 GHz / 4 instructions a step
  double gpu_step_s = 2.0e-9;       ///< one warp step of one warp: 4 instructions at 1.98 GHz
  int gpu_sms = 132;
  int gpu_threads_per_sm = 2048;
  double gpu_launch_us = 5;          ///< a launch's latency
  double pcie_bytes_per_s = 2.5e10;  ///< host to device and back, each way
  double transfer_us = 10;           ///< a copy's fixed cost
  /// Where the copies' and the launch's figures come from: "assumed" (the three above) or "measured"
  /// (tune::measured_placement_model, on this host's GPU 0).
  std::string gpu_figures = "assumed";
};

/// Where a launch of this size runs faster, counting the copies a GPU needs (inputs in, outputs out).
struct Placement {
  double cpu_ms = 0;         ///< the CPU backend, everything included
  double gpu_kernel_ms = 0;  ///< the kernel alone: max(bytes / bandwidth, flops / peak, W / P + S) + launch
  double transfer_ms = 0;    ///< the inputs to the GPU and the outputs back
  double gpu_ms = 0;         ///< the two together
  bool gpu_faster = false;
  std::string cpu_figures;  ///< the model's: "fitted" or "measured" (on this host)
  std::string gpu_figures;  ///< the model's copies and launch: "assumed" or "measured" (on this host's GPU)
  std::string text() const;
};

struct CostReport {
  std::string kernel;
  std::int64_t blocks = 0, threads_per_block = 0;
  std::vector<AccessCost> accesses;  ///< in order of first execution
  std::vector<BranchCost> branches;  ///< those that are ever evaluated
  std::vector<BufferUse> buffers;    ///< the global buffers, in parameter order
  double global_bytes = 0;           ///< sectors moved from and to global memory, in bytes
  double flops = 0;                  ///< floating-point operations (an fma counts 2) over the launch
  double work = 0;                   ///< warp steps (statements a warp executes) over the launch
  double looped = 0;                 ///< of those, steps inside loops (a loop's body runs per iteration)
  double exchanges = 0;              ///< of those, shuffles, votes and ballots (lanes exchange values)
  double barriers = 0;               ///< of those, block barriers (each warp's arrival is one)
  double span = 0;                   ///< per block: the sum over barrier intervals of its slowest warp's steps
  int sampled_blocks = 0;            ///< blocks followed (the rest take their measure from them)
  bool exact = true;                 ///< every number above exact
  /// Counted as a launch ran on the interpreter (InterpreterOptions::measure), every request and
  /// branch of it; work, span and flops are not counted then.
  bool measured = false;
  double analysis_ms = 0;

  /// Floating-point operations per byte moved from global memory.
  double intensity() const { return global_bytes > 0 ? flops / global_bytes : 0; }
  /// The bytes a CPU moves for the launch's global accesses: global_bytes, and the stores to a
  /// buffer the launch never reads once more, since a CPU reads a cache line before it writes into it
  /// (a copy into a fresh buffer moves as many bytes as an update of one in place).
  double cpu_bytes() const;
  /// A table: one row per access and per divergent branch, with the line, the metric, the ideal and
  /// the hint; then the kernel's totals.
  std::string text() const;
  std::string json() const;
  /// The placement advice (docs/report.md): the CPU backend's time, the GPU's with the copies.
  Placement placement(const PlacementModel& model = {}) const;
  /// An SVG roofline of the model's GPU with the kernel's point (its intensity and the FLOP/s the
  /// estimate gives it).
  std::string roofline_svg(const PlacementModel& model = {}) const;
};

}  // namespace vantage
