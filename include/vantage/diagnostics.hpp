// Vantage public diagnostics: source locations, user errors with codes and notes, and the exception
// types: the user's error (CheckError, LaunchError), a bug in Vantage (InternalError), the
// toolchain's (CompileError, ToolchainError), the driver's (DriverError) and what a kernel did as it
// ran (ExecutionError).
#pragma once

#include <cstdint>
#include <source_location>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace vantage {

/// A place in the user's source, captured by every builder call.
struct SourceLoc {
  const char* file = "";  ///< static storage from std::source_location
  std::uint32_t line = 0;
  std::uint32_t column = 0;

  static SourceLoc from(const std::source_location& loc) { return {loc.file_name(), loc.line(), loc.column()}; }
  bool known() const { return line != 0; }
  /// "file:line:column", or "<unknown>".
  std::string str() const;
};

/// A related place shown under a diagnostic ("perspective narrowed here").
struct DiagnosticNote {
  std::string message;
  SourceLoc loc;
};

/// A user error found by the checker: a stable code (see docs/diagnostics.md), a message, the user's
/// line, and notes pointing at related lines.
struct Diagnostic {
  std::string code;
  std::string message;
  SourceLoc loc;
  std::vector<DiagnosticNote> notes;

  /// Compiler-style text: `file:line:col: error[V0101]: message`, the source line with a caret when
  /// the file is readable, then the notes.
  std::string render(bool with_source = true) const;
};

/// Thrown by `build()` when a kernel or device function does not check; carries every diagnostic.
class CheckError : public std::runtime_error {
 public:
  /// Repeats (the same code, message, line and notes) are kept once.
  explicit CheckError(std::vector<Diagnostic> diagnostics);
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }
  /// True when some diagnostic has this code.
  bool has(std::string_view code) const;

 private:
  CheckError(std::vector<Diagnostic> distinct, int);
  std::vector<Diagnostic> diagnostics_;
};

/// An invariant inside Vantage failed: a bug in Vantage, never the user's fault.
class InternalError : public std::logic_error {
 public:
  using std::logic_error::logic_error;
};

/// NVRTC rejected generated code. The diagnostics point at builder lines through `#line`.
class CompileError : public std::runtime_error {
 public:
  CompileError(std::string message, std::string log, std::vector<std::string> options, std::string source,
               std::vector<Diagnostic> diagnostics);
  const std::string& log() const { return log_; }
  const std::vector<std::string>& options() const { return options_; }
  const std::string& source() const { return source_; }
  const std::vector<Diagnostic>& diagnostics() const { return diagnostics_; }

 private:
  std::string log_;
  std::vector<std::string> options_;
  std::string source_;
  std::vector<Diagnostic> diagnostics_;
};

/// NVRTC (or another toolchain piece) is missing or failed to load.
class ToolchainError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// A kernel did something wrong while it ran on the interpreter: an access outside its buffer
/// (memcheck), two threads touching one address without a barrier between them (racecheck), a
/// barrier or warp collective reached by only some of its threads (synccheck), or a read of shared
/// memory nothing wrote (initcheck). `locs` are the user's builder lines involved.
class ExecutionError : public std::runtime_error {
 public:
  ExecutionError(std::string check, std::string message, std::vector<SourceLoc> locs)
      : std::runtime_error(check + ": " + message), check_(std::move(check)), locs_(std::move(locs)) {}
  /// "memcheck", "racecheck", "synccheck", "initcheck", "assert" (a false Scope::assert_that),
  /// "unsupported" or "limit" (the interpreter's statement budget ran out).
  const std::string& check() const { return check_; }
  const std::vector<SourceLoc>& locs() const { return locs_; }

 private:
  std::string check_;
  std::vector<SourceLoc> locs_;
};

/// A construct the device cannot run (the interpreter: wgmma, TMA, mbarriers, unsafe CUDA text).
class UnsupportedOnDevice : public ExecutionError {
 public:
  UnsupportedOnDevice(std::string message, std::vector<SourceLoc> locs)
      : ExecutionError("unsupported", std::move(message), std::move(locs)) {}
};

/// A launch was refused before anything ran: the message names the parameter (or the guard), what
/// was expected and what was given.
class LaunchError : public std::runtime_error {
 public:
  LaunchError(std::string param, const std::string& message) : std::runtime_error(message), param_(std::move(param)) {}
  /// The parameter's name, or "" when the launch as a whole was wrong.
  const std::string& param() const { return param_; }

 private:
  std::string param_;
};

/// A CUDA driver call failed: the message names the call, the object it was about and the result
/// code in words. `result()` is the CUresult.
class DriverError : public std::runtime_error {
 public:
  DriverError(std::string call, int result, const std::string& message)
      : std::runtime_error(message), call_(std::move(call)), result_(result) {}
  const std::string& call() const { return call_; }
  int result() const { return result_; }

 private:
  std::string call_;
  int result_;
};

/// Renders diagnostics one after the other, as `CheckError::what()` does.
std::string render_all(const std::vector<Diagnostic>& diagnostics, bool with_source = true);

}  // namespace vantage
