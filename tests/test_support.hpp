// Test support shared by the test files that need NVRTC.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <string>

#include "vantage/vantage.hpp"

/// Skips (with the reason) on a host without NVRTC; CI installs it, so there these tests run.
#define REQUIRE_NVRTC()                                    \
  if (!::vantage::nvrtc_available()) {                     \
    GTEST_SKIP() << "NVRTC is not available on this host"; \
  }                                                        \
  static_assert(true)

namespace vantage::test_support {

/// How many times `what` occurs in `text` (overlapping ones too): barriers in a generated source.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

/// A fresh directory under /tmp named from `prefix`, removed with everything in it at scope exit.
struct TempDir {
  std::filesystem::path path;
  explicit TempDir(const std::string& prefix = "vantage_test") {
    std::string tmpl = "/tmp/" + prefix + "_XXXXXX";
    path = ::mkdtemp(tmpl.data());
  }
  ~TempDir() {
    std::error_code ec;
    std::filesystem::remove_all(path, ec);
  }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
};

}  // namespace vantage::test_support
