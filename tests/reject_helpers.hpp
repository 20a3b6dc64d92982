// Test helpers: build a kernel or device function that must be rejected and assert that one
// diagnostic has the expected code and points at the expected line of the test's own file.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <source_location>
#include <string>

#include "vantage/vantage.hpp"

namespace vantage::testing {

inline std::string describe(const std::vector<Diagnostic>& ds) { return render_all(ds, false); }

/// Finds a diagnostic with `code` at `line` of a file whose name ends with `file`.
inline ::testing::AssertionResult has_diag(const CheckError& e, const std::string& code, int line,
                                           const std::string& file) {
  for (const auto& d : e.diagnostics()) {
    std::string f = d.loc.file ? d.loc.file : "";
    bool file_ok = f.size() >= file.size() && f.compare(f.size() - file.size(), file.size(), file) == 0;
    if (d.code == code && static_cast<int>(d.loc.line) == line && file_ok) return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "no " << code << " at line " << line << " of " << file << "; got:\n"
                                       << describe(e.diagnostics());
}

/// Runs `make` on a fresh kernel builder (128 threads per block unless it says otherwise), builds it
/// and expects rejection with `code` at `line` (read after `make` ran, so the body can set it).
inline ::testing::AssertionResult rejects_kernel(const std::string& code, const int& line,
                                                 const std::function<void(KernelBuilder&)>& make,
                                                 const std::string& file) {
  KernelBuilder k("under_test");
  k.block_threads(128);
  make(k);
  try {
    k.build();
  } catch (const CheckError& e) {
    return has_diag(e, code, line, file);
  }
  return ::testing::AssertionFailure() << "kernel was accepted; expected " << code << " at line " << line;
}

/// Builds `k` and expects rejection with some diagnostic at `line` (a misuse whose code depends on
/// which rule meets it first: a helper called from the wrong perspective).
inline ::testing::AssertionResult rejected_at(KernelBuilder& k, int line) {
  try {
    k.build();
  } catch (const CheckError& e) {
    for (const auto& d : e.diagnostics())
      if (static_cast<int>(d.loc.line) == line) return ::testing::AssertionSuccess();
    return ::testing::AssertionFailure() << "nothing at line " << line << " in:\n" << describe(e.diagnostics());
  }
  return ::testing::AssertionFailure() << "kernel was accepted; expected a diagnostic at line " << line;
}

/// Builds `k` and expects rejection with `code` at `line` of `file`, its message containing `says`
/// (the fix it names).
inline ::testing::AssertionResult rejected_saying(KernelBuilder& k, const std::string& code, const int& line,
                                                  const std::string& file, const std::string& says) {
  try {
    k.build();
  } catch (const CheckError& e) {
    auto r = has_diag(e, code, line, file);
    if (!r) return r;
    if (describe(e.diagnostics()).find(says) == std::string::npos)
      return ::testing::AssertionFailure() << "no '" << says << "' in:\n" << describe(e.diagnostics());
    return ::testing::AssertionSuccess();
  }
  return ::testing::AssertionFailure() << "kernel was accepted; expected " << code << " at line " << line;
}

inline ::testing::AssertionResult rejects_function(const std::string& code, const int& line,
                                                   const std::function<void(FunctionBuilder&)>& make,
                                                   const std::string& file) {
  FunctionBuilder f("under_test");
  make(f);
  try {
    f.build();
  } catch (const CheckError& e) {
    return has_diag(e, code, line, file);
  }
  return ::testing::AssertionFailure() << "function was accepted; expected " << code << " at line " << line;
}

}  // namespace vantage::testing

// Plain functions, not macros: code inside a macro argument gets the macro's line from
// std::source_location, which would hide the lines these tests check.
// The expected line is in the caller's file.
inline void expect_kernel_rejected(const std::string& code, const int& line,
                                   const std::function<void(vantage::KernelBuilder&)>& make,
                                   std::source_location caller = std::source_location::current()) {
  EXPECT_TRUE(::vantage::testing::rejects_kernel(code, line, make, caller.file_name()));
}
inline void expect_function_rejected(const std::string& code, const int& line,
                                     const std::function<void(vantage::FunctionBuilder&)>& make,
                                     std::source_location caller = std::source_location::current()) {
  EXPECT_TRUE(::vantage::testing::rejects_function(code, line, make, caller.file_name()));
}
