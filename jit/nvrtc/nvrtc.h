// Vantage NVRTC binding: NVRTC loaded at run time (dlopen) through one typed table, canonical
// options, a compiler fingerprint, and compile errors mapped to builder locations via `#line`.
#pragma once

#include <string>
#include <vector>

#include "vantage/diagnostics.hpp"
#include "vantage/spec.hpp"
#include "vantage/target.hpp"

namespace vantage::nvrtc {

struct Result {
  std::vector<char> cubin;
  std::string ptx;
  std::string log;
  std::vector<std::string> options;
};

/// The options that decide the bytes NVRTC produces, in a fixed order: language level, architecture
/// (a real `sm_XX` for a cubin, `compute_XX` for PTX), float contraction. The same list is the
/// cache key's and NVRTC's; it names nothing of the host.
/// The user's CompilerOptions follow Vantage's, in a fixed order; a register cap outside 1 to 255, an
/// include path that is not a directory or a define whose name is not an identifier throws
/// CompileError naming it.
std::vector<std::string> canonical_options(Arch arch, Output output, bool fp_contract = true,
                                           const CompilerOptions& compiler = {});

/// Compiles `source` (named `name` in NVRTC's log) with the canonical `options`; NVRTC is also told
/// where its own toolkit's headers are (a location, not an option: the fingerprint identifies that
/// toolkit). Thread safe. Throws CompileError when NVRTC reports errors, ToolchainError when NVRTC
/// cannot be loaded. Result::options holds the canonical options.
Result compile(const std::string& source, const std::string& name, const std::vector<std::string>& options);

/// The directory of the toolkit headers (cuda_fp16.h) next to the NVRTC found, or "".
std::string include_dir();

/// "nvrtc 13.0 (libnvrtc.so.13, ...)"; throws ToolchainError when NVRTC is missing.
std::string fingerprint();
bool available();

/// Turns NVRTC log lines `file(line): error: text` into diagnostics (codes V1101 error, V1102
/// warning) at those files and lines.
std::vector<Diagnostic> parse_log(const std::string& log);

}  // namespace vantage::nvrtc
