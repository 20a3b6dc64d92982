// Vantage NVRTC binding: NVRTC loaded at run time (dlopen) through one typed table, canonical
// options, a compiler fingerprint, and compile errors mapped to builder locations via `#line`.
#pragma once

#include <string>
#include <vector>

#include "vantage/compile.hpp"

namespace vantage::nvrtc {

struct Result {
  std::vector<char> cubin;
  std::string ptx;
  std::string log;
  std::vector<std::string> options;
};

/// The options Vantage always passes, in a fixed order: language level, architecture (a real
/// `sm_XX` for cubin, `compute_XX` for PTX), and the toolkit include directory when one exists.
std::vector<std::string> canonical_options(Arch arch, Output output);

/// Compiles `source` (named `name` in NVRTC's log). Thread safe. Throws CompileError when NVRTC
/// reports errors, ToolchainError when NVRTC cannot be loaded.
Result compile(const std::string& source, const std::string& name, Arch arch, Output output);

/// "nvrtc 13.0 (libnvrtc.so.13, ...)"; throws ToolchainError when NVRTC is missing.
std::string fingerprint();
bool available();

/// Turns NVRTC log lines `file(line): error: text` into diagnostics (codes V1101 error, V1102
/// warning) at those files and lines.
std::vector<Diagnostic> parse_log(const std::string& log);

}  // namespace vantage::nvrtc
