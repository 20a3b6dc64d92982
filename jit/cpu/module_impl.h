// Vantage CPU backend: what a cpu::Module holds (shared by codegen.cpp and jit.cpp).
#pragma once

#include <llvm/IR/LLVMContext.h>
#include <llvm/IR/Module.h>

#include <memory>
#include <string>
#include <vector>

#include "jit/cpu/cpu.h"

namespace vantage::cpu {

struct Module::Impl {
  std::unique_ptr<llvm::LLVMContext> ctx;
  std::unique_ptr<llvm::Module> mod;
  std::string entry;
  std::int64_t scratch = 0;
  /// Checked accesses of the CPU backend's own (atomics, copies), numbered after lowering's.
  std::vector<lower::CheckSite> extra_sites;
};

}  // namespace vantage::cpu
