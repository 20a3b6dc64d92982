// The `vantage` command line: look at the example kernels (IR, lowered IR, CUDA, PTX), compile them,
// run them on the interpreter or a GPU with their result checked, list the devices, and manage the
// kernel cache.
#include <dlfcn.h>
#include <algorithm>
#include <chrono>
#include <climits>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <optional>
#include <string>
#include <thread>

#include <map>
#include <vector>

#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "kernels/tuning.hpp"
#include "tools/cache_cli.h"
#include "vantage/registry.hpp"

namespace {

constexpr const char* kHelp = R"(vantage - build, check and inspect GPU kernels

Usage:
  vantage examples              list the built-in example kernels (and those --load added)
  vantage check [NAME...]       build and check examples (all when none named); exit 1 if any fails
  vantage ir NAME               print the checked IR of an example
  vantage lower NAME [OPTIONS]  print its lowered IR (what every backend consumes)
  vantage cuda NAME [OPTIONS]   print the generated CUDA C++ of an example
  vantage ptx NAME [OPTIONS]    print the PTX NVRTC makes of it
  vantage llvm NAME [OPTIONS]   print the LLVM IR the CPU backend makes of it (llvm-opt: after O3)
  vantage compile [NAME...] [OPTIONS] [--cache] [--runs]
                                compile examples (all when none named) to cubins; print size, time,
                                barriers, guards; exit 1 if any fails. --cache: through the kernel
                                cache (read from it, or compile and store there); --runs: the
                                variants each example's runs launch (its default sizes' values and
                                size classes), not its plain one
  vantage run NAME [--size NAME=VALUE...] [--device DEVICE] [--order forward|reverse|random]
                 [--seed S] [--check | --no-check] [--against-interpreter] [--measure]
                                run an example (at its default sizes when no --size is given),
                                check its result against a C++ reference, print what it did; exit 1
                                on a wrong result or, on the interpreter, a memcheck, racecheck,
                                synccheck or initcheck finding (--check: those checks, the default),
                                or on the interpreter or the CPU at sizes whose buffers do not fit
                                in the memory the host has free
                                DEVICE: interpreter (the default), cpu, cpu:THREADS, gpu, gpu:N,
                                or best; --against-interpreter: on the CPU or a GPU, also run it on
                                the interpreter and compare the two results; --measure: on the
                                interpreter, count every memory request and branch as it runs, in
                                the units of `vantage report` (sectors, wavefronts, splits)
  vantage report NAME [--size NAME=VALUE...] [--blocks B] [--json] [--svg FILE] [--arch ARCH]
                 [--threads N] [--fitted]
                                the static cost report of a launch (docs/report.md): per access,
                                global sectors or shared wavefronts per request against the ideal,
                                with the builder line and a hint; divergent branches; global bytes,
                                FLOPs, work and span; where the launch runs faster (the CPU backend on
                                this host's threads, or an H200 with the copies). Sizes default to the
                                example's first run size, blocks to what its run launches; --json for
                                tools; --svg FILE writes the H200 roofline with the kernel on it. The
                                CPU side is timed on this host first (probe kernels, about a second);
                                --fitted uses the constants fitted on the development host instead
  vantage devices               list the devices of this host and which one Device::best() picks
  vantage tune NAME [OPTIONS]   tune an example over its configuration space (the sgemm rungs and
                                the tiled scan: vantage tune --help names them) on a device: every
                                configuration compiled in parallel, checked and timed, failures
                                scored as infinitely slow, results stored for the next run; a
                                table, CSV and an SVG heatmap
  vantage cache COMMAND         the on-disk kernel cache: path, ls, stat, verify, prune, clear,
                                export, import (see vantage cache --help)
  vantage version               print the version and the NVRTC found
  vantage --help                this text

Options:
  --arch ARCH                             target: ARCHS (default sm_90)
  --threads N                             threads per block when the kernel leaves it open
  --load LIBRARY                          open a kernel library first (repeatable, anywhere); the
                                          kernels it registers (VANTAGE_REGISTER_KERNEL, vantage/
                                          registry.hpp) join the examples in every command; run and
                                          tune take those that register a run (and a space)
  --size NAME=VALUE                       value of a specialized parameter, or a launch's value of
                                          another integer one: its size class picks the variant, as
                                          a launch's would (repeatable)
  --fast-math                             NVRTC's --use_fast_math (approximate math, denormals flushed)
  --line-info                             source lines in the cubin, for profilers
  --maxrregcount N                        at most N registers a thread (1 to 255)
  -I DIR, -D NAME[=VALUE]                 include paths and defines for unsafe blocks (repeatable)
  --nvrtc-option OPTION                   any other NVRTC option, as NVRTC spells it (repeatable)

Environment:
  VANTAGE_LOG   log level: trace, debug, info, warn (default), error, off
)";

/// The help text, with the architectures of the target table.
std::string help() {
  std::string h = kHelp;
  auto at = h.find("ARCHS");
  return h.replace(at, 5, vantage::arch_names());
}

/// The help of one command: its lines of the usage above (from "  vantage CMD" to the next command),
/// then where the options are described. Empty for a command the usage does not list.
std::string command_help(const std::string& cmd) {
  const std::string h = help();
  std::string out;
  std::size_t at = 0;
  while ((at = h.find("\n  vantage " + cmd, at)) != std::string::npos) {
    const std::size_t start = at + 1;
    const char next = h[start + 10 + cmd.size()];
    at = start;
    if (next != ' ' && next != '\n') continue;  // "vantage llvm" is not "vantage llvm-opt"'s line
    std::size_t end = h.find("\n  vantage ", start + 1);
    const std::size_t blank = h.find("\n\n", start);
    if (end == std::string::npos || blank < end) end = blank;
    out += h.substr(start, end - start + 1);
  }
  if (!out.empty()) out = "usage:\n" + out + "(vantage --help: the options and the environment)\n";
  return out;
}

const vantage::examples::Example* find_builtin(const std::string& name) {
  for (const auto& ex : vantage::examples::all())
    if (ex.name == name) return &ex;
  return nullptr;
}

/// The kernels of libraries `--load` opened, as examples the tools take.
std::vector<vantage::examples::Example>& loaded() {
  static std::vector<vantage::examples::Example> kernels;
  return kernels;
}

/// The built-in examples, then the loaded kernels.
std::vector<vantage::examples::Example> every_kernel() {
  std::vector<vantage::examples::Example> all = vantage::examples::all();
  all.insert(all.end(), loaded().begin(), loaded().end());
  return all;
}

/// Opens each `--load FILE` (the libraries' static initializers register their kernels) and drops
/// the options from argv; false (after a message) when one cannot be opened or registers nothing
/// usable.
bool load_libraries(int& argc, char** argv) {
  int out = 1;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--load") != 0) {
      argv[out++] = argv[i];
      continue;
    }
    if (i + 1 >= argc) {
      std::fprintf(stderr, "vantage: --load wants a shared library (a kernel library that registers kernels)\n");
      return false;
    }
    const char* file = argv[++i];
    const std::size_t before = vantage::registered_kernels().size();
    try {
      if (!::dlopen(file, RTLD_NOW | RTLD_GLOBAL)) {
        std::fprintf(stderr, "vantage: --load %s: %s\n", file, ::dlerror());
        return false;
      }
    } catch (const std::exception& e) {  // a registration refused in its static initializer
      std::fprintf(stderr, "vantage: --load %s: %s\n", file, e.what());
      return false;
    }
    const auto all = vantage::registered_kernels();
    if (all.size() == before)
      std::fprintf(stderr, "vantage: --load %s: the library registered no kernel (VANTAGE_REGISTER_KERNEL)\n", file);
    for (std::size_t k = before; k < all.size(); ++k) {
      if (find_builtin(all[k].name)) {
        std::fprintf(stderr, "vantage: --load %s: '%s' is the name of a built-in example\n", file, all[k].name.c_str());
        return false;
      }
      vantage::examples::Example ex;
      ex.name = all[k].name;
      ex.what = all[k].what + " (" + file + ")";
      ex.build = all[k].build;
      ex.sizes = all[k].sizes;
      ex.arch = all[k].arch;
      ex.run = all[k].run;
      ex.space = all[k].space;
      ex.candidate = all[k].candidate;
      loaded().push_back(std::move(ex));
    }
  }
  argc = out;
  argv[argc] = nullptr;
  return true;
}

const vantage::examples::Example* find(const std::string& name) {
  for (const auto& ex : loaded())
    if (ex.name == name) return &ex;
  for (const auto& ex : vantage::examples::all())
    if (ex.name == name) return &ex;
  return nullptr;
}

int unknown(const std::string& name) {
  std::fprintf(stderr, "vantage: no example named '%s' (see 'vantage examples')\n", name.c_str());
  return 2;
}

/// `--size NAME=VALUE` into `size`: a name and a whole integer (a kernel's parameter takes it, so its
/// type is checked where it is used); false after a message naming `cmd` (nullptr: none) otherwise.
bool add_size(const char* cmd, const std::string& v, std::map<std::string, std::int64_t>& size) {
  const std::string who = cmd ? std::string("vantage ") + cmd : std::string("vantage");
  const auto eq = v.find('=');
  auto value = eq == std::string::npos
                   ? std::nullopt
                   : vantage::examples::integer_in(std::string_view(v).substr(eq + 1), INT64_MIN, INT64_MAX);
  if (eq == std::string::npos || eq == 0 || !value) {
    std::fprintf(stderr, "%s: --size wants NAME=VALUE with a whole number for VALUE, not '%s'\n", who.c_str(),
                 v.c_str());
    return false;
  }
  size[v.substr(0, eq)] = *value;
  return true;
}

/// Parses --arch, --threads, --size; returns false (after a message) on a bad option.
bool parse_spec(int argc, char** argv, int first, vantage::Spec& spec, std::vector<std::string>& names,
                bool* through_cache = nullptr, bool* runs = nullptr) {
  for (int i = first; i < argc; ++i) {
    std::string a = argv[i];
    if (a == "--cache" && through_cache) {
      *through_cache = true;
      continue;
    }
    if (a == "--runs" && runs) {
      *runs = true;
      continue;
    }
    auto value = [&]() -> std::string {
      if (i + 1 >= argc) return "";
      return argv[++i];
    };
    if (a == "--arch") {
      auto v = value();
      auto arch = vantage::parse_arch(v);
      if (!arch) {
        std::fprintf(stderr, "vantage: unknown --arch '%s' (%s)\n", v.c_str(), vantage::arch_names());
        return false;
      }
      spec.arch = *arch;
    } else if (a == "--threads") {
      const std::string v = value();
      auto threads = vantage::examples::integer_in(v, 1, 1024);
      if (!threads) {
        std::fprintf(stderr, "vantage: --threads wants a count of threads a block from 1 to 1024, not '%s'\n",
                     v.c_str());
        return false;
      }
      spec.threads = *threads;
    } else if (a == "--fast-math") {
      spec.compiler.fast_math = true;
    } else if (a == "--line-info") {
      spec.compiler.line_info = true;
    } else if (a == "--maxrregcount") {
      const std::string v = value();
      char* end = nullptr;
      const long n = std::strtol(v.c_str(), &end, 10);
      if (v.empty() || *end || n < 1 || n > 255) {
        std::fprintf(stderr, "vantage: --maxrregcount wants a number from 1 to 255, not '%s'\n", v.c_str());
        return false;
      }
      spec.compiler.max_registers = static_cast<int>(n);
    } else if (a == "-I" || (a.rfind("-I", 0) == 0 && a.size() > 2)) {
      spec.compiler.include_paths.push_back(a.size() > 2 ? a.substr(2) : value());
    } else if (a == "-D" || (a.rfind("-D", 0) == 0 && a.size() > 2)) {
      const std::string v = a.size() > 2 ? a.substr(2) : value();
      const auto eq = v.find('=');
      spec.compiler.defines[v.substr(0, eq)] = eq == std::string::npos ? "" : v.substr(eq + 1);
    } else if (a == "--nvrtc-option") {
      const std::string v = value();
      if (v.empty()) {
        std::fprintf(stderr, "vantage: --nvrtc-option wants an option\n");
        return false;
      }
      spec.compiler.extra.push_back(v);
    } else if (a == "--size") {
      if (!add_size(nullptr, value(), spec.sizes)) return false;
    } else if (a.rfind("--", 0) == 0) {
      std::fprintf(stderr, "vantage: unknown option '%s' (see vantage --help)\n", a.c_str());
      return false;
    } else {
      names.push_back(a);
    }
  }
  return true;
}

/// `spec` for `kernel`, where `--size NAME=VALUE` of a parameter the kernel does not specialize names
/// the launch's value: the variant is the one for its size class (docs/runtime.md, automatic
/// specialization), as a launch with that value would get.
vantage::Spec with_launch_sizes(const vantage::Kernel& kernel, vantage::Spec spec) {
  std::map<std::string, std::int64_t> launch;
  for (auto it = spec.sizes.begin(); it != spec.sizes.end();) {
    // A parameter launch_spec classifies (0 is in a class) is an unspecialized integer one.
    if (vantage::launch_spec(kernel, {}, {{it->first, 0}}).assume.count(it->first)) {
      launch.insert(*it);
      it = spec.sizes.erase(it);
    } else {
      ++it;
    }
  }
  return vantage::launch_spec(kernel, std::move(spec), launch);
}

/// Through the kernel cache (`--cache`): the entry is read or stored there, so that `vantage cache
/// export` can ship it.
int cache_one(const vantage::examples::Example& ex, const vantage::Spec& spec) {
  try {
    auto c = vantage::KernelCache::global().get(ex.build(), spec);
    std::printf("%-16s %-7s cubin %7zu B  %-8s  registers %d  key %s\n", ex.name.c_str(), vantage::arch_name(spec.arch),
                c->cubin.size(), c->origin.c_str(), c->registers, c->key.substr(0, 16).c_str());
    return 0;
  } catch (const vantage::CheckError& e) {
    std::printf("%-16s rejected\n%s", ex.name.c_str(), vantage::render_all(e.diagnostics()).c_str());
  } catch (const std::exception& e) {
    std::printf("%-16s failed: %s\n", ex.name.c_str(), e.what());
  }
  return 1;
}

int compile_one(const vantage::examples::Example& ex, const vantage::Spec& spec, bool through_cache) {
  if (through_cache) return cache_one(ex, with_launch_sizes(ex.build(), ex.spec(spec)));
  try {
    auto k = ex.build();
    auto c = vantage::compile(k, with_launch_sizes(k, ex.spec(spec)));
    std::printf("%-16s %-7s cubin %7zu B  %7.1f ms  barriers %d  shared %lld B", ex.name.c_str(),
                vantage::arch_name(spec.arch), c.cubin.size(), c.compile_ms, c.spec.barriers,
                static_cast<long long>(c.spec.static_shared_bytes + c.spec.dynamic_shared_bytes));
    for (const auto& g : c.spec.guards) std::printf("  guard %s", g.text.c_str());
    std::printf("%s\n", c.log.empty() ? "" : "  (NVRTC warnings)");
    if (!c.log.empty()) std::printf("%s\n", c.log.c_str());
    return c.log.empty() ? 0 : 1;
  } catch (const vantage::CheckError& e) {
    std::printf("%-16s rejected\n%s", ex.name.c_str(), vantage::render_all(e.diagnostics()).c_str());
  } catch (const std::exception& e) {
    std::printf("%-16s failed: %s\n", ex.name.c_str(), e.what());
  }
  return 1;
}

int check_one(const vantage::examples::Example& ex) {
  try {
    auto k = ex.build();
    std::printf("%-16s ok  (shared %lld B, %zu obligation(s))\n", ex.name.c_str(),
                static_cast<long long>(k.shared_bytes()), k.obligations().size());
    for (const auto& o : k.obligations()) std::printf("  obligation %s: %s\n", o.str().c_str(), o.description.c_str());
    return 0;
  } catch (const vantage::CheckError& e) {
    std::printf("%-16s rejected\n%s", ex.name.c_str(), vantage::render_all(e.diagnostics()).c_str());
    return 1;
  }
}

/// `vantage run` of a kernel a `--load` library registered: its RegisteredKernel::run at its sizes
/// (the command line's over those it registered), launched on `device` and checked by its check.
int run_loaded(const vantage::examples::Example& ex, std::map<std::string, std::int64_t> size,
               const vantage::Device& device, bool against_interpreter, std::uint64_t free) {
  if (!ex.run) {
    std::fprintf(stderr,
                 "vantage run: '%s' registers no run (RegisteredKernel::run: its launch's grid, arguments and "
                 "check; see docs/runtime.md)\n",
                 ex.name.c_str());
    return 2;
  }
  if (against_interpreter) {
    std::fprintf(stderr,
                 "vantage run: --against-interpreter compares the built-in examples' outputs; '%s' is "
                 "checked by its own check\n",
                 ex.name.c_str());
    return 2;
  }
  for (const auto& [k, v] : ex.sizes) size.emplace(k, v);
  try {
    vantage::KernelRun r = ex.run(device, size);
    vantage::Kernel k = ex.build();
    const auto t0 = std::chrono::steady_clock::now();
    vantage::launch(k, device, r.grid, r.args);
    device.synchronize();
    const double ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - t0).count();
    const std::string wrong = r.check ? r.check() : std::string();
    std::string sizes;
    for (const auto& [n, v] : size) sizes += (sizes.empty() ? "" : " ") + n + "=" + std::to_string(v);
    std::printf("%s %s: %lld x %lld threads on %s, %.3f ms [%s]\n", ex.name.c_str(), sizes.c_str(),
                static_cast<long long>(r.grid.blocks), static_cast<long long>(r.grid.threads), device.name().c_str(),
                ms,
                !r.check        ? "not checked"
                : wrong.empty() ? "ok"
                                : "FAIL");
    if (!wrong.empty()) std::printf("  %s\n", wrong.c_str());
    return wrong.empty() ? 0 : 1;
  } catch (const std::bad_alloc&) {
    vantage::examples::say_out_of_memory("vantage run", ex.name, size, free);
    return 1;
  } catch (const vantage::CheckError& e) {
    std::fprintf(stderr, "vantage run: %s is rejected:\n%s", ex.name.c_str(),
                 vantage::render_all(e.diagnostics()).c_str());
    return 1;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vantage run: %s: %s\n", ex.name.c_str(), e.what());
    return 1;
  }
}

int run_main(int argc, char** argv) {
  vantage::InterpreterOptions io;
  std::map<std::string, std::int64_t> size;
  std::string name, device_name = "interpreter";
  bool against_interpreter = false;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--size") {
      if (!add_size("run", v, size)) return 2;
      ++i;
    } else if (a == "--order") {
      if (v == "forward") {
        io.order = vantage::ThreadOrder::Forward;
      } else if (v == "reverse") {
        io.order = vantage::ThreadOrder::Reverse;
      } else if (v == "random") {
        io.order = vantage::ThreadOrder::Random;
      } else {
        std::fprintf(stderr, "vantage run: --order is forward, reverse or random, not '%s'\n", v.c_str());
        return 2;
      }
      ++i;
    } else if (a == "--device") {
      device_name = v;
      ++i;
    } else if (a == "--seed") {
      auto seed = vantage::examples::integer_in(v, 0, INT64_MAX);
      if (!seed) {
        std::fprintf(stderr, "vantage run: --seed wants a number of at least 0, not '%s'\n", v.c_str());
        return 2;
      }
      io.seed = static_cast<std::uint64_t>(*seed);
      ++i;
    } else if (a == "--against-interpreter") {
      against_interpreter = true;
    } else if (a == "--check") {
      io.checks = true;
    } else if (a == "--no-check") {
      io.checks = false;
    } else if (a == "--measure") {
      io.measure = true;
    } else if (a.rfind("--", 0) == 0 || !name.empty()) {
      std::fprintf(stderr, "vantage run: unexpected '%s' (see vantage --help)\n", a.c_str());
      return 2;
    } else {
      name = a;
    }
  }
  if (name.empty()) {
    std::fprintf(stderr, "vantage run: give one example name\n");
    return 2;
  }
  if (!find(name)) return unknown(name);
  if (io.measure && device_name != "interpreter") {
    std::fprintf(stderr, "vantage run: --measure counts what a launch does on the interpreter only, not on '%s'\n",
                 device_name.c_str());
    return 2;
  }
  for (const auto& [size_name, value] : size)
    if (value < 0) {
      std::fprintf(stderr, "vantage run: --size %s=%lld: an example's sizes are counts, at least 0\n",
                   size_name.c_str(), static_cast<long long>(value));
      return 2;
    }
  std::optional<vantage::Device> chosen;
  if (device_name == "interpreter") {
    chosen = vantage::Device::interpreter(io);
  } else {
    std::string error;
    chosen = vantage::examples::device_named(device_name, error);
    if (!chosen) {  // a name it cannot read is a usage error (2), a device this host lacks a failure (1)
      std::fprintf(stderr, "vantage run: %s\n", error.c_str());
      return error.rfind("the device is", 0) == 0 || error.find(" wants ") != std::string::npos ? 2 : 1;
    }
  }
  // Left to choose, with no GPU to choose, an example the CPU backend cannot run (wgmma, TMA,
  // mbarriers) runs on the interpreter: say so.
  if (device_name == "best" && !chosen->is_gpu() && !find(name)->runs_on_cpu()) {
    std::printf("%s: uses Hopper instructions the CPU backend cannot run; no GPU here, so on the interpreter\n",
                name.c_str());
    chosen = vantage::Device::interpreter(io);
  }
  const vantage::Device& device = *chosen;
  const std::uint64_t free = vantage::examples::cap_data_at_free_memory(device);
  for (const auto& ex : loaded())
    if (ex.name == name) return run_loaded(ex, size, device, against_interpreter, free);
  std::vector<std::map<std::string, std::int64_t>> sizes;
  try {
    if (size.empty())
      sizes = vantage::examples::default_sizes(name);
    else
      sizes.push_back(size);
  } catch (const std::exception& e) {  // an example without a reference to check it against
    std::fprintf(stderr, "vantage run: %s\n", e.what());
    return 1;
  }
  int rc = 0;
  for (const auto& s : sizes) {
    try {
      auto r = vantage::examples::run_example(name, s, device);
      if (device.kind() != vantage::DeviceKind::Interpreter)
        std::printf("%s [%s] %lld threads on %s\n", r.summary.c_str(), r.ok ? "ok" : "FAIL",
                    static_cast<long long>(r.report.threads), device.name().c_str());
      else
        std::printf("%s [%s] %lld threads, %lld thread-statements, %.3f s\n", r.summary.c_str(), r.ok ? "ok" : "FAIL",
                    static_cast<long long>(r.report.threads), static_cast<long long>(r.report.thread_statements),
                    r.report.seconds);
      rc |= r.ok ? 0 : 1;
      if (r.report.measured) std::printf("%s", r.report.measured->text().c_str());
      if (against_interpreter && device.kind() != vantage::DeviceKind::Interpreter) {
        // The same run on the interpreter: the two devices must agree (within 1e-5, relative).
        auto ref = vantage::examples::run_example(name, s, vantage::Device::interpreter(io));
        std::size_t bad = ref.output.size() == r.output.size() ? 0 : 1;
        double worst = 0;
        for (std::size_t i = 0; !bad && i < ref.output.size(); ++i) {
          double d = std::fabs(ref.output[i] - r.output[i]) / std::max(1.0, std::fabs(ref.output[i]));
          worst = std::max(worst, d);
          if (!(d <= 1e-5)) bad = i + 1;
        }
        std::printf("  against the interpreter: %s (largest relative difference %.3g over %zu values)\n",
                    bad ? "DIFFERENT" : "agrees", worst, ref.output.size());
        rc |= bad ? 1 : 0;
      }
    } catch (const std::bad_alloc&) {
      vantage::examples::say_out_of_memory("vantage run", name, s, free);
      rc = 1;
    } catch (const vantage::CheckError& e) {
      std::printf("%s: rejected\n%s", name.c_str(), vantage::render_all(e.diagnostics()).c_str());
      rc = 1;
    } catch (const vantage::UnsupportedOnDevice& e) {
      std::printf("%s: %s (%s); it ran, checked, up to there\n", name.c_str(), e.what(),
                  e.locs().empty() ? "no line" : e.locs()[0].str().c_str());
      rc = 1;
    } catch (const std::exception& e) {
      std::printf("%s: %s\n", name.c_str(), e.what());
      rc = 1;
    }
  }
  return rc;
}

int report_main(int argc, char** argv) {
  std::map<std::string, std::int64_t> size;
  std::string name;
  std::int64_t blocks = 0;
  bool json = false, fitted = false;
  std::string svg;
  vantage::Spec spec;
  for (int i = 2; i < argc; ++i) {
    std::string a = argv[i];
    std::string v = i + 1 < argc ? argv[i + 1] : "";
    if (a == "--size") {
      if (!add_size("report", v, size)) return 2;
      ++i;
    } else if (a == "--blocks" || a == "--threads") {
      auto n = vantage::examples::integer_in(v, 1, a == "--blocks" ? INT32_MAX : 1024);
      if (!n) {
        std::fprintf(stderr, "vantage report: %s wants a count from 1 to %s, not '%s'\n", a.c_str(),
                     a == "--blocks" ? "2^31 - 1" : "1024", v.c_str());
        return 2;
      }
      (a == "--blocks" ? blocks : spec.threads) = *n;
      ++i;
    } else if (a == "--arch") {
      auto arch = vantage::parse_arch(v);
      if (!arch) {
        std::fprintf(stderr, "vantage report: --arch is one of %s, not '%s'\n", vantage::arch_names(), v.c_str());
        return 2;
      }
      spec.arch = *arch;
      ++i;
    } else if (a == "--json") {
      json = true;
    } else if (a == "--fitted") {
      fitted = true;
    } else if (a == "--svg") {
      svg = v;
      ++i;
    } else if (a.rfind("--", 0) == 0 || !name.empty()) {
      std::fprintf(stderr, "vantage report: unexpected '%s' (see vantage --help)\n", a.c_str());
      return 2;
    } else {
      name = a;
    }
  }
  if (name.empty()) {
    std::fprintf(stderr, "vantage report: give one example name\n");
    return 2;
  }
  const auto* ex = find(name);
  if (!ex) return unknown(name);
  const bool builtin = find_builtin(name) != nullptr;  // a loaded kernel has no run to take sizes from
  if (!builtin && blocks == 0) {
    std::fprintf(stderr, "vantage report: give --blocks B, the blocks a launch of '%s' runs\n", name.c_str());
    return 2;
  }
  try {
    auto defaults =
        builtin ? vantage::examples::default_sizes(name) : decltype(vantage::examples::default_sizes(name)){};
    if (!defaults.empty())
      for (const auto& [k, v] : defaults.front()) size.emplace(k, v);
    if (blocks == 0) blocks = vantage::examples::default_blocks(name, size);
    vantage::Spec full = ex->spec(spec);
    for (const auto& [k, v] : size) full.sizes.erase(k);  // given values win over the example's own
    vantage::CostReport r = ex->build().report(full, size, blocks);
    // The advice for this host: its GPU's figures where it has one, else the data sheet's H200.
    const int host_threads = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
    vantage::PlacementModel model = vantage::Device::gpu_count() > 0
                                        ? vantage::placement_model(vantage::Device::gpu().properties(), host_threads)
                                        : vantage::placement_model({}, host_threads);
    if (!fitted) model = vantage::tune::measured_placement_model(model);
    if (json) {
      std::printf("%s\n", r.json().c_str());
    } else {
      std::printf("%s  %s\n", r.text().c_str(), r.placement(model).text().c_str());
    }
    if (!svg.empty()) {
      std::ofstream f(svg);
      f << r.roofline_svg(model);
      if (!f) {
        std::fprintf(stderr, "vantage report: cannot write %s\n", svg.c_str());
        return 1;
      }
    }
    return 0;
  } catch (const vantage::CheckError& e) {
    std::fprintf(stderr, "%s", vantage::render_all(e.diagnostics()).c_str());
  } catch (const std::exception& e) {
    std::fprintf(stderr, "vantage report: %s\n", e.what());
  }
  return 1;
}

int devices_main() {
  const auto devices = vantage::Device::all();
  std::printf("%zu device(s):\n", devices.size());
  for (const auto& d : devices) {
    const auto& p = d.properties();
    if (d.is_gpu())
      std::printf("  %s: %d multiprocessors, %.1f GiB, %lld KiB shared per block, %.0f GB/s\n", d.name().c_str(),
                  p.multiprocessors, static_cast<double>(p.total_memory) / (1 << 30),
                  static_cast<long long>(p.shared_per_block_optin / 1024), p.memory_bandwidth_gbs());
    else
      std::printf(
          "  %s: runs every kernel on the host with memcheck, racecheck, synccheck and initcheck (limits of "
          "%s)\n",
          d.name().c_str(), vantage::arch_name(p.arch));
  }
  if (vantage::Device::gpu_count() == 0) std::printf("no GPU: %s\n", vantage::Device::gpu_problem().c_str());
  std::printf("best: %s\n", vantage::Device::best().name().c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (!load_libraries(argc, argv)) return 2;
  if (argc < 2 || !std::strcmp(argv[1], "--help") || !std::strcmp(argv[1], "-h") || !std::strcmp(argv[1], "help")) {
    std::fputs(help().c_str(), argc < 2 ? stderr : stdout);
    return argc < 2 ? 2 : 0;
  }
  std::string cmd = argv[1];
  // `vantage CMD --help`: the command's own lines (cache and tune have helps of their own).
  if (cmd != "cache" && cmd != "tune")
    for (int i = 2; i < argc; ++i)
      if (!std::strcmp(argv[i], "--help") || !std::strcmp(argv[i], "-h")) {
        const std::string h = command_help(cmd == "llvm-opt" ? "llvm" : cmd);
        if (h.empty()) {
          std::fprintf(stderr, "vantage: unknown command '%s' (see vantage --help)\n", cmd.c_str());
          return 2;
        }
        std::fputs(h.c_str(), stdout);
        return 0;
      }
  if (cmd == "cache") return vantage::tools::cache_main(std::vector<std::string>(argv + 2, argv + argc));
  if (cmd == "version") {
    std::printf("vantage %s\n", vantage::version());
    try {
      std::printf("%s\n", vantage::compiler_fingerprint().c_str());
    } catch (const vantage::ToolchainError& e) {
      std::printf("NVRTC: not available (%s)\n", e.what());
    }
    return 0;
  }
  if (cmd == "run") return run_main(argc, argv);
  if (cmd == "report") return report_main(argc, argv);
  if (cmd == "tune")
    return vantage::examples::tune_main(std::vector<std::string>(argv + 2, argv + argc), "vantage tune", loaded());
  if (cmd == "devices") return devices_main();
  if (cmd == "cuda" || cmd == "ptx" || cmd == "compile" || cmd == "lower" || cmd == "llvm" || cmd == "llvm-opt") {
    vantage::Spec spec;
    std::vector<std::string> names;
    bool through_cache = false, runs = false;
    if (!parse_spec(argc, argv, 2, spec, names, cmd == "compile" ? &through_cache : nullptr,
                    cmd == "compile" ? &runs : nullptr))
      return 2;
    if (cmd == "compile") {
      int rc = 0;
      // --runs: the variants the example's runs launch (each default size's values and classes).
      auto one = [&](const vantage::examples::Example& ex) {
        if (!runs) return compile_one(ex, spec, through_cache);
        int r = 0;
        std::vector<std::map<std::string, std::int64_t>> sizes;
        try {
          sizes = vantage::examples::default_sizes(ex.name);
        } catch (const std::invalid_argument&) {
          return compile_one(ex, spec, through_cache);  // no run: its plain variant
        }
        for (const auto& size : sizes) {
          vantage::Spec s = spec;
          for (const auto& [k, v] : size) s.sizes[k] = v;
          r |= compile_one(ex, s, through_cache);
        }
        return r;
      };
      if (names.empty())
        for (const auto& ex : every_kernel()) rc |= one(ex);
      for (const auto& n : names) {
        const auto* ex = find(n);
        if (!ex) return unknown(n);
        rc |= one(*ex);
      }
      return rc;
    }
    if (names.size() != 1) {
      std::fprintf(stderr, "vantage %s: give one example name\n", cmd.c_str());
      return 2;
    }
    const auto* ex = find(names[0]);
    if (!ex) return unknown(names[0]);
    try {
      auto k = ex->build();
      // Its default sizes where none is given; a size it does not specialize picks a size class.
      const vantage::Spec full = with_launch_sizes(k, ex->spec(spec));
      std::string text = cmd == "cuda"       ? k.source(full)
                         : cmd == "lower"    ? k.lowered(full)
                         : cmd == "llvm"     ? k.llvm_ir(full)
                         : cmd == "llvm-opt" ? k.llvm_ir(full, true)
                                             : k.ptx(full);
      std::printf("%s", text.c_str());
      return 0;
    } catch (const vantage::CheckError& e) {
      std::fprintf(stderr, "%s", vantage::render_all(e.diagnostics()).c_str());
    } catch (const std::exception& e) {
      std::fprintf(stderr, "vantage: %s\n", e.what());
    }
    return 1;
  }
  if (cmd == "examples") {
    for (const auto& ex : every_kernel()) std::printf("%-16s %s\n", ex.name.c_str(), ex.what.c_str());
    return 0;
  }
  if (cmd == "check") {
    int rc = 0;
    if (argc == 2) {
      for (const auto& ex : every_kernel()) rc |= check_one(ex);
      return rc;
    }
    for (int i = 2; i < argc; ++i) {
      const auto* ex = find(argv[i]);
      if (!ex) return unknown(argv[i]);
      rc |= check_one(*ex);
    }
    return rc;
  }
  if (cmd == "ir") {
    if (argc != 3) {
      std::fprintf(stderr, "vantage ir: give one example name\n");
      return 2;
    }
    const auto* ex = find(argv[2]);
    if (!ex) return unknown(argv[2]);
    try {
      std::printf("%s", ex->build().ir_text().c_str());
      return 0;
    } catch (const vantage::CheckError& e) {
      std::fprintf(stderr, "%s", vantage::render_all(e.diagnostics()).c_str());
      return 1;
    }
  }
  std::fprintf(stderr, "vantage: unknown command '%s'\n\n%s", cmd.c_str(), help().c_str());
  return 2;
}
