// Test support shared by the test files that need NVRTC.
#pragma once

#include <gtest/gtest.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "vantage/vantage.hpp"

/// Skips (with the reason) on a host without NVRTC; CI installs it, so there these tests run.
#define REQUIRE_NVRTC()                                    \
  if (!::vantage::nvrtc_available()) {                     \
    GTEST_SKIP() << "NVRTC is not available on this host"; \
  }                                                        \
  static_assert(true)

namespace vantage::test_support {

/// The sizes a sweep over every example runs at: all its default sizes, or under a sanitizer only
/// the first. The sanitizer is there for memory safety, and the example.run.* tests, which run under
/// it too, run every example at every default size on the interpreter and the CPU backend; the
/// plain pass keeps the sweep's breadth.
template <class Sizes>
Sizes sweep_sizes(Sizes sizes) {
#ifdef VANTAGE_TEST_SANITIZED
  if (sizes.size() > 1) sizes.resize(1);
#endif
  return sizes;
}

/// Whether the tests run under a sanitizer, whose pass checks memory safety on fewer sizes (see
/// sweep_sizes).
#ifdef VANTAGE_TEST_SANITIZED
inline constexpr bool kSanitized = true;
#else
inline constexpr bool kSanitized = false;
#endif

/// How many times `what` occurs in `text` (overlapping ones too): barriers in a generated source.
inline int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

namespace detail {
/// A launch argument as launch_on passes it to a GPU: scalars as they are, host vectors in buffers.
template <class T>
struct Staged {
  T value;
  T& arg() { return value; }
  void back() {}
};
template <class T>
struct Staged<const std::vector<T>&> {
  DeviceBuffer<T> buffer;
  const DeviceBuffer<T>& arg() const { return buffer; }
  void back() {}
};
template <class T>
struct Staged<std::vector<T>&> {
  std::vector<T>* host;
  DeviceBuffer<T> buffer;
  DeviceBuffer<T>& arg() { return buffer; }
  void back() { buffer.copy_to(*host); }
};
template <class T>
struct IsVector : std::false_type {};
template <class T>
struct IsVector<std::vector<T>> : std::true_type {};
template <class A>
auto stage(const Device& d, A&& a) {
  using V = std::decay_t<A>;
  if constexpr (IsVector<V>::value) {
    auto b = d.alloc<typename V::value_type>(static_cast<std::int64_t>(a.size()));
    b.copy_from(a);
    if constexpr (std::is_lvalue_reference_v<A> && !std::is_const_v<std::remove_reference_t<A>>)
      return Staged<V&>{&a, std::move(b)};
    else
      return Staged<const V&>{std::move(b)};
  } else {
    return Staged<V>{a};
  }
}
}  // namespace detail

/// Every device a kernel's result is checked on: the interpreter in two thread orders, the CPU backend
/// (two threads) where this build has it, and a GPU where there is one (the GPU bundle's check).
inline std::vector<Device> every_device() {
  std::vector<Device> d{Device::interpreter({.order = ThreadOrder::Forward}),
                        Device::interpreter({.order = ThreadOrder::Reverse})};
  if (Device::cpu_available()) d.push_back(Device::cpu(2));
  if (Device::gpu_count() > 0) d.push_back(Device::gpu(0));
  return d;
}

/// `k.launch(d, g, args...)` with host vectors standing for buffers of `d`: the interpreter and the
/// CPU backend take them as they are; on a GPU each is copied to a buffer of its own, and those the
/// caller may change are copied back after the launch. So one test runs on every device.
template <class... A>
void launch_on(const Kernel& k, const Device& d, Grid g, A&&... args) {
  if (d.kind() != DeviceKind::Gpu) {
    k.launch(d, g, std::forward<A>(args)...);
    return;
  }
  auto staged = std::make_tuple(detail::stage(d, std::forward<A>(args))...);
  std::apply([&](auto&... s) { k.launch(d, g, s.arg()...); }, staged);
  std::apply([](auto&... s) { (s.back(), ...); }, staged);
}

/// Runs a shell command; its standard output, and its status in `rc` (as pclose gives it).
inline std::string run_command(const std::string& cmd, int* rc) {
  std::string out;
  FILE* p = ::popen(cmd.c_str(), "r");
  if (!p) {
    *rc = -1;
    return out;
  }
  char buf[4096];
  std::size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  *rc = ::pclose(p);
  return out;
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
