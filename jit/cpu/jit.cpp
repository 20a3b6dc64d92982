// Vantage CPU backend: compiling LLVM IR for this host and loading it through ORC (see cpu.h). One
// LLJIT for the process; each loaded kernel has its own resource tracker, so destroying it unloads
// its code. The helpers generated code calls (checked-access failures, 16-bit float conversions, the
// mma and ldmatrix of a warp) are defined as absolute symbols; libm comes from the process.
#include <llvm/ExecutionEngine/Orc/ExecutionUtils.h>
#include <llvm/ExecutionEngine/Orc/LLJIT.h>
#include <llvm/IR/LegacyPassManager.h>
#include <llvm/MC/TargetRegistry.h>
#include <llvm/Passes/PassBuilder.h>
#include <llvm/Support/CommandLine.h>
#include <llvm/Support/MemoryBuffer.h>
#include <llvm/Support/TargetSelect.h>
#include <llvm/Support/raw_ostream.h>
#include <llvm/Target/TargetMachine.h>
#include <llvm/TargetParser/Host.h>

#include <mutex>

#include "jit/cpu/cpu.h"
#include "jit/cpu/helpers.h"
#include "jit/cpu/module_impl.h"
#include "vantage/diagnostics.hpp"

namespace vantage::cpu {
namespace {

std::string message(llvm::Error e) {
  std::string s;
  llvm::raw_string_ostream os(s);
  os << e;
  return s;
}

/// LLVM 19's loop vectorizer miscompiles a strided read whose index wraps inside a vector: with
/// s[(6t) & 127] for t = 16..31 it loads s[96..191] as one interleaved group, as if 6t & 127 did not
/// wrap (its interleaved-access analysis assumes the narrow index has no wrap and never checks it).
/// Vantage kernels index with such masks, and the read is proven in bounds, so nothing would catch
/// it (Regression.AStridedIndexThatWrapsInsideAVectorIsReadWhereItWraps). Interleaved groups are
/// turned off: those reads become gathers. LLVM's options are global to the process; this one only
/// changes how loops are vectorized. Where it cannot be set the backend refuses to start.
constexpr const char* kNoInterleavedGroups = "enable-interleaved-mem-accesses";

void init_llvm() {
  static std::once_flag once;
  std::call_once(once, [] {
    llvm::InitializeNativeTarget();
    llvm::InitializeNativeTargetAsmPrinter();
    auto& options = llvm::cl::getRegisteredOptions();
    auto it = options.find(kNoInterleavedGroups);
    if (it == options.end())
      throw ToolchainError(std::string("this LLVM has no option '") + kNoInterleavedGroups +
                           "', which the CPU backend needs to avoid a vectorizer miscompile (LLVM 19)");
    if (it->second->addOccurrence(0, kNoInterleavedGroups, "false"))  // e.g. the host program set it already
      throw ToolchainError(std::string("the CPU backend cannot set LLVM's option '") + kNoInterleavedGroups +
                           "=false', which it needs to avoid a vectorizer miscompile (LLVM 19)");
  });
}

std::string host_features() {
  std::string fs;
  for (const auto& kv : llvm::sys::getHostCPUFeatures())
    if (kv.second) fs += "+" + kv.first().str() + ",";
  return fs;
}

/// A target machine for this host: its CPU and every feature it has.
std::unique_ptr<llvm::TargetMachine> host_machine(int level) {
  init_llvm();
  std::string triple = llvm::sys::getProcessTriple(), err;
  const llvm::Target* target = llvm::TargetRegistry::lookupTarget(triple, err);
  if (!target) throw ToolchainError("LLVM has no target for this host (" + triple + "): " + err);
  llvm::TargetOptions options;  // no fast math, no contraction: every float operation rounds on its own
  options.AllowFPOpFusion = llvm::FPOpFusion::Strict;
  auto opt = level >= 3   ? llvm::CodeGenOptLevel::Aggressive
             : level == 2 ? llvm::CodeGenOptLevel::Default
                          : llvm::CodeGenOptLevel::Less;
  std::unique_ptr<llvm::TargetMachine> tm(target->createTargetMachine(
      triple, llvm::sys::getHostCPUName(), host_features(), options, llvm::Reloc::PIC_, std::nullopt, opt));
  if (!tm) throw ToolchainError("LLVM could not make a target machine for " + triple);
  return tm;
}

/// A JIT for this process, with libm and the process's symbols reachable and the helpers defined;
/// an error as a value.
llvm::Expected<std::unique_ptr<llvm::orc::LLJIT>> make_jit() {
  init_llvm();
  auto made = llvm::orc::LLJITBuilder().create();
  if (!made) return made.takeError();
  auto& dylib = (*made)->getMainJITDylib();
  auto process =
      llvm::orc::DynamicLibrarySearchGenerator::GetForCurrentProcess((*made)->getDataLayout().getGlobalPrefix());
  if (!process) return process.takeError();
  dylib.addGenerator(std::move(*process));
  llvm::orc::SymbolMap helpers;
  llvm::orc::MangleAndInterner mangle((*made)->getExecutionSession(), (*made)->getDataLayout());
  for (const auto& [name, address] : helper_symbols())
    helpers[mangle(name)] = {llvm::orc::ExecutorAddr::fromPtr(address), llvm::JITSymbolFlags::Exported};
  if (auto e = dylib.define(llvm::orc::absoluteSymbols(std::move(helpers)))) return e;
  return made;
}

/// The process's JIT, made on first use (a failure is a ToolchainError, and the next use tries again).
// The JIT and its lock live to the end of the process, never destroyed: code loaded into it is
// unloaded when the last kernel holding it goes, which for a kernel held in a static is at exit,
// possibly after any static of this file would have been destroyed.
llvm::orc::LLJIT& jit() {
  static llvm::orc::LLJIT* j = [] {
    auto made = make_jit();
    if (!made) throw ToolchainError("LLVM ORC could not start: " + message(made.takeError()));
    return made->release();
  }();
  return *j;
}

std::mutex& jit_mutex() {
  static auto* m = new std::mutex;
  return *m;
}

}  // namespace

Module::Module(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
Module::~Module() = default;
Module::Module(Module&&) noexcept = default;
Module& Module::operator=(Module&&) noexcept = default;
std::string Module::ir() const {
  std::string s;
  llvm::raw_string_ostream os(s);
  impl_->mod->print(os, nullptr);
  return s;
}
std::int64_t Module::scratch_bytes() const { return impl_->scratch; }
const std::string& Module::entry() const { return impl_->entry; }
const std::vector<lower::CheckSite>& Module::extra_sites() const { return impl_->extra_sites; }

namespace {
void optimize(llvm::Module& m, llvm::TargetMachine& tm, int level) {
  m.setDataLayout(tm.createDataLayout());
  m.setTargetTriple(tm.getTargetTriple().str());
  llvm::LoopAnalysisManager lam;
  llvm::FunctionAnalysisManager fam;
  llvm::CGSCCAnalysisManager cam;
  llvm::ModuleAnalysisManager mam;
  llvm::PassBuilder pb(&tm);
  pb.registerModuleAnalyses(mam);
  pb.registerCGSCCAnalyses(cam);
  pb.registerFunctionAnalyses(fam);
  pb.registerLoopAnalyses(lam);
  pb.crossRegisterProxies(lam, fam, cam, mam);
  auto o = level >= 3   ? llvm::OptimizationLevel::O3
           : level == 2 ? llvm::OptimizationLevel::O2
                        : llvm::OptimizationLevel::O1;
  pb.buildPerModuleDefaultPipeline(o).run(m, mam);
}
}  // namespace

std::string optimized_ir(Module&& module, int level) {
  auto tm = host_machine(level);
  optimize(*module.impl_->mod, *tm, level);
  return module.ir();
}

std::vector<char> compile(Module&& module, int level) {
  auto tm = host_machine(level);
  llvm::Module& m = *module.impl_->mod;
  optimize(m, *tm, level);
  llvm::SmallVector<char, 0> object;
  llvm::raw_svector_ostream os(object);
  llvm::legacy::PassManager pm;
  if (tm->addPassesToEmitFile(pm, os, nullptr, llvm::CodeGenFileType::ObjectFile))
    throw ToolchainError("LLVM cannot emit an object file for this host");
  pm.run(m);
  return std::vector<char>(object.begin(), object.end());
}

std::string host_fingerprint() {
  init_llvm();
  // The pipeline's own settings are part of what the code depends on: objects compiled with
  // interleaved groups on (before this setting) are not reused.
  return std::string("llvm ") + LLVM_VERSION_STRING + " " + llvm::sys::getProcessTriple() + " " +
         llvm::sys::getHostCPUName().str() + " " + host_features() + " no-interleaved-groups";
}

Loaded::~Loaded() = default;
Loaded::Loaded(Loaded&& o) noexcept : fn_(o.fn_), tracker_(std::move(o.tracker_)) { o.fn_ = nullptr; }
Loaded& Loaded::operator=(Loaded&& o) noexcept {
  fn_ = o.fn_;
  tracker_ = std::move(o.tracker_);
  o.fn_ = nullptr;
  return *this;
}

Loaded load(const std::vector<char>& object, const std::string& entry) {
  std::lock_guard lock(jit_mutex());
  auto& j = jit();
  auto rt = j.getMainJITDylib().createResourceTracker();
  auto buffer = llvm::MemoryBuffer::getMemBufferCopy(llvm::StringRef(object.data(), object.size()), entry);
  if (auto e = j.addObjectFile(rt, std::move(buffer)))
    throw ToolchainError("LLVM ORC could not load kernel '" + entry + "': " + message(std::move(e)));
  auto sym = j.lookup(entry);
  if (!sym) {
    (void)rt->remove();
    throw ToolchainError("LLVM ORC could not find '" + entry + "': " + message(sym.takeError()));
  }
  Loaded out;
  out.fn_ = sym->toPtr<BlockFn>();
  // Removing the tracker unloads the code; errors then have nowhere to go and are dropped.
  out.tracker_ = std::shared_ptr<void>(new llvm::orc::ResourceTrackerSP(std::move(rt)), [](void* p) {
    auto* t = static_cast<llvm::orc::ResourceTrackerSP*>(p);
    std::lock_guard lock(jit_mutex());
    llvm::consumeError((*t)->remove());
    delete t;
  });
  return out;
}

}  // namespace vantage::cpu
