// Test support shared by the test files that need NVRTC.
#pragma once

#include <gtest/gtest.h>

#include "vantage/vantage.hpp"

/// Skips (with the reason) on a host without NVRTC; CI installs it, so there these tests run.
#define REQUIRE_NVRTC()                                    \
  if (!::vantage::nvrtc_available()) {                     \
    GTEST_SKIP() << "NVRTC is not available on this host"; \
  }                                                        \
  static_assert(true)
