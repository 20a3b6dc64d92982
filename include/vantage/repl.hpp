// Vantage's prelude for interactive use (docs/repl.md), included by scripts/repl into a clang-repl
// session: `using namespace vantage`, and helpers that print instead of throwing, so that a kernel
// the checker rejects, a bad launch or a missing toolkit leaves the session running. For a session,
// not for programs: it brings the whole API into the global namespace.
#pragma once

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <exception>
#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <string>
#include <type_traits>
#include <vector>

#include "vantage/vantage.hpp"

namespace vantage::repl {

/// Runs `f`, printing what it throws (a CheckError as its diagnostics) instead of letting it out.
/// Returns whether it succeeded.
template <class F>
bool guarded(F&& f) {
  try {
    f();
    return true;
  } catch (const CheckError& e) {
    std::printf("%s", render_all(e.diagnostics()).c_str());
  } catch (const std::exception& e) {
    std::printf("error: %s\n", e.what());
  } catch (...) {
    std::printf("error: an unknown exception\n");
  }
  std::fflush(stdout);
  return false;
}

/// Builds and checks a kernel: `Kernel k = show("saxpy", [](KernelBuilder& k) { ... });`. Prints
/// "checked" and its IR, or the diagnostics; returns the kernel (an undefined one when rejected).
inline Kernel show(const std::string& name, const std::function<void(KernelBuilder&)>& make, bool ir = true) {
  Kernel out;
  guarded([&] {
    KernelBuilder k(name);
    make(k);
    out = k.build();
    std::printf("kernel %s: checked\n%s", name.c_str(), ir ? out.ir_text().c_str() : "");
  });
  std::fflush(stdout);
  return out;
}

namespace detail {
inline bool usable(const Kernel& k) {
  if (!k.defined()) std::printf("error: no kernel (it was rejected, or never built)\n");
  return k.defined();
}
}  // namespace detail

/// The generated CUDA C++, the lowered IR, the PTX of one specialization.
inline void cuda(const Kernel& k, const Spec& spec = {}) {
  if (detail::usable(k)) guarded([&] { std::printf("%s", k.source(spec).c_str()); });
}
inline void lowered(const Kernel& k, const Spec& spec = {}) {
  if (detail::usable(k)) guarded([&] { std::printf("%s", k.lowered(spec).c_str()); });
}
inline void ptx(const Kernel& k, const Spec& spec = {}) {
  if (detail::usable(k)) guarded([&] { std::printf("%s", k.ptx(spec).c_str()); });
}
/// The SASS of the cubin, through cuobjdump (on PATH or where scripts/setup puts it).
inline void sass(const Kernel& k, const Spec& spec = {}) {
  if (!detail::usable(k)) return;
  guarded([&] {
    std::vector<char> cubin = k.cubin(spec);
    std::string tool = "cuobjdump";
    for (const char* p : {"/opt/vantage-tools/cuda/nvidia/cu13/bin/cuobjdump", "/usr/local/cuda/bin/cuobjdump"})
      if (std::filesystem::exists(p)) tool = p;
    auto file = std::filesystem::temp_directory_path() / ("vantage_repl_" + k.name() + ".cubin");
    std::ofstream(file, std::ios::binary).write(cubin.data(), static_cast<std::streamsize>(cubin.size()));
    std::string cmd = "'" + tool + "' -sass '" + file.string() + "' 2>&1";
    if (std::system(cmd.c_str()) != 0) std::printf("(cuobjdump failed or is missing: scripts/setup installs it)\n");
    std::filesystem::remove(file);
  });
}
/// The static cost report of a launch, and where it runs faster (docs/report.md).
inline void report(const Kernel& k, const std::map<std::string, std::int64_t>& values, std::int64_t blocks,
                   const Spec& spec = {}) {
  if (!detail::usable(k)) return;
  guarded([&] {
    CostReport r = k.report(spec, values, blocks);
    std::printf("%s  %s\n", r.text().c_str(), r.placement().text().c_str());
  });
}

namespace detail {
template <class T>
void print_vector(const std::vector<T>& v) {
  std::printf("[");
  const std::size_t n = std::min<std::size_t>(v.size(), 8);
  for (std::size_t i = 0; i < n; ++i) {
    if constexpr (std::is_floating_point_v<T>)
      std::printf("%s%g", i ? ", " : "", static_cast<double>(v[i]));
    else if constexpr (std::is_integral_v<T>)
      std::printf("%s%lld", i ? ", " : "", static_cast<long long>(v[i]));
    else
      std::printf("%s?", i ? ", " : "");
  }
  std::printf("%s] (%zu elements)\n", v.size() > n ? ", ..." : "", v.size());
}
template <class A>
void print_if_written(A& a) {
  using T = std::remove_reference_t<A>;
  if constexpr (!std::is_const_v<T>) {
    if constexpr (requires {
                    a.data();
                    a.size();
                    typename T::value_type;
                  })
      if constexpr (std::is_same_v<T, std::vector<typename T::value_type>>) {
        std::printf("  ");
        print_vector(a);
      }
  }
}
}  // namespace detail

/// Launches `k` on `device` with every argument checked, then prints what ran and the first values
/// of every writable host vector it was given: `run(k, Device::cpu(), Grid{4, 256}, n, 2.0f,
/// std::as_const(x), y)`.
template <class... A>
void run(const Kernel& k, const Device& device, Grid grid, A&&... args) {
  if (!detail::usable(k)) return;
  guarded([&] {
    LaunchReport r = k.launch(device, grid, args...);
    std::printf("ran %s on %s: %lld threads\n", k.name().c_str(), device.name().c_str(),
                static_cast<long long>(r.threads));
    (detail::print_if_written(args), ...);
  });
}

/// The median of `repeats` launches after one warm-up (host devices; on a GPU the launch is
/// asynchronous, so this times the call, not the kernel: use the runtime's events there).
template <class... A>
void time(const Kernel& k, const Device& device, Grid grid, A&&... args) {
  if (!detail::usable(k)) return;
  guarded([&] {
    k.launch(device, grid, args...);
    std::vector<double> ms;
    for (int i = 0; i < 9; ++i) {
      auto t0 = std::chrono::steady_clock::now();
      k.launch(device, grid, args...);
      ms.push_back(std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count());
    }
    std::sort(ms.begin(), ms.end());
    std::printf("%s on %s: median %.4g ms of 9 (fastest %.4g)\n", k.name().c_str(), device.name().c_str(), ms[4],
                ms[0]);
  });
}

}  // namespace vantage::repl

using namespace vantage;
using namespace vantage::repl;
