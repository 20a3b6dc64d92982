// Vantage CPU backend: lowered IR as native code through LLVM ORC (docs/design.md section 6, docs/cpu.md).
//
// One launch runs its blocks on host threads. The checker guarantees that a block barrier is only
// reached in control flow that is uniform across the block, and between two barriers the threads of
// different warps do not meet in a race-free kernel; so the code between block barriers runs as a
// loop over the block's warps, each warp's statements as loops over its 32 lanes that LLVM
// vectorizes across threads, with loops every thread runs around them. Values the same for every
// thread stay scalars; values that vary per thread live in per-thread arrays (or are recomputed where
// they are pure functions of the thread's position). Warp collectives (shuffles, votes, ballot,
// mma.sync, ldmatrix) run over the lanes of each warp with the interpreter's semantics; atomics are
// atomic across host threads; an access lowering could not prove in bounds is checked as it runs and
// recorded, as on the GPU.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "jit/lower/lower.h"

namespace vantage::cpu {

/// The entry point of a compiled block: `args` as cuLaunchKernel takes them (pointers to each
/// argument's value: the kernel's parameters, then one i64 length per pointer parameter), the
/// blocks [first, last) to run one after the other, the blocks of the launch, the shared memory and
/// the scratch memory (per-thread values) they reuse, and the error record (the same words the
/// GPU's vt_fail writes).
using BlockFn = void (*)(void** args, std::int64_t first, std::int64_t last, std::int64_t blocks, void* shared,
                         void* scratch, std::uint64_t* error);

/// A kernel as LLVM IR, not yet compiled.
class Module {
 public:
  ~Module();
  Module(Module&&) noexcept;
  Module& operator=(Module&&) noexcept;
  /// The LLVM IR as text (FileCheck tests, `vantage cpu NAME`).
  std::string ir() const;
  /// Bytes of scratch memory one block needs (per-thread values, local arrays, masks).
  std::int64_t scratch_bytes() const;
  /// The entry symbol.
  const std::string& entry() const;
  /// Checked accesses of the CPU backend's own (atomics, copies, ldmatrix rows), numbered after
  /// lowering's sites.
  const std::vector<lower::CheckSite>& extra_sites() const;

  struct Impl;  ///< jit/cpu/module_impl.h
  explicit Module(std::unique_ptr<Impl> impl);

 private:
  friend std::vector<char> compile(Module&&, int);
  friend std::string optimized_ir(Module&&, int);
  std::unique_ptr<Impl> impl_;
};

/// Lowered IR to LLVM IR. Throws UnsupportedOnDevice at the user's line for what the CPU backend
/// cannot run (wgmma, TMA, mbarriers, unsafe CUDA text).
Module generate(const lower::Lowered& lowered, const std::string& entry);

/// LLVM's optimization pipeline (O`level`) and code generation for this host: an object file.
std::vector<char> compile(Module&& module, int level = 3);
/// The module after the optimization pipeline, as text (what the vectorizer made of the thread loops).
std::string optimized_ir(Module&& module, int level = 3);

/// What a compiled object depends on beyond its IR: the LLVM version, the host CPU and its features.
std::string host_fingerprint();

/// A compiled block loaded into the process. Unloads its code when destroyed.
class Loaded {
 public:
  Loaded() = default;
  ~Loaded();
  Loaded(Loaded&&) noexcept;
  Loaded& operator=(Loaded&&) noexcept;
  BlockFn fn() const { return fn_; }

 private:
  friend Loaded load(const std::vector<char>&, const std::string&);
  BlockFn fn_ = nullptr;
  std::shared_ptr<void> tracker_;  ///< the ORC resource tracker of its code
};

/// Links an object file into the process's JIT and finds `entry` in it. Throws ToolchainError.
Loaded load(const std::vector<char>& object, const std::string& entry);

}  // namespace vantage::cpu
