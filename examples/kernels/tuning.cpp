// The tuner of the tunable examples (kernels/tuning.hpp).
#include "kernels/tuning.hpp"

#include <sys/resource.h>

#include <algorithm>
#include <charconv>
#include <climits>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <random>

#include "kernels/workloads.hpp"

namespace vantage::examples {

std::optional<std::int64_t> integer_in(std::string_view text, std::int64_t lo, std::int64_t hi) {
  if (!text.empty() && text.front() == '+') text.remove_prefix(1);
  std::int64_t v = 0;
  const char* end = text.data() + text.size();
  auto [at, ec] = std::from_chars(text.data(), end, v);
  if (text.empty() || ec != std::errc() || at != end || v < lo || v > hi) return std::nullopt;
  return v;
}

std::optional<Device> device_named(const std::string& name, std::string& error) {
  try {
    if (name == "interpreter") return Device::interpreter();
    if (name == "best") return Device::best();
    // cpu:THREADS (0: one a core, as Device::cpu); gpu:N, an ordinal the driver reports (Device::gpu
    // says when not).
    const std::string_view number = name.size() > 4 ? std::string_view(name).substr(4) : std::string_view();
    if (name == "cpu") return Device::cpu();
    if (name.rfind("cpu:", 0) == 0) {
      if (auto threads = integer_in(number, 0, 1 << 16)) return Device::cpu(static_cast<int>(*threads));
      error = "cpu:THREADS wants a count of host threads from 1 to 65536 (0: one a core), not '" + std::string(number) +
              "'";
      return std::nullopt;
    }
    if (name == "gpu") return Device::gpu();
    if (name.rfind("gpu:", 0) == 0) {
      if (auto ordinal = integer_in(number, 0, 1 << 16)) return Device::gpu(static_cast<int>(*ordinal));
      error = "gpu:N wants a GPU's ordinal (0 for the first), not '" + std::string(number) + "'";
      return std::nullopt;
    }
    error = "the device is interpreter, cpu, cpu:THREADS, gpu, gpu:N or best, not '" + name + "'";
  } catch (const std::exception& e) {
    error = e.what();
  }
  return std::nullopt;
}

std::vector<std::string> tunable_examples() {
  std::vector<std::string> out;
  for (const auto& e : all())
    if (e.tunable()) out.push_back(e.name);
  return out;
}

namespace {

std::string joined(const std::vector<std::string>& names) {
  std::string s;
  for (const auto& n : names) s += (s.empty() ? "" : ", ") + n;
  return s;
}

const Example& tunable(const std::string& name) {
  const std::string real = name == "sgemm" ? "sgemm_reg1d" : name;
  for (const auto& e : all())
    if (e.name == real) {
      if (!e.tunable())
        throw std::invalid_argument("example '" + real + "' declares no configuration space; the tunable ones are " +
                                    joined(tunable_examples()));
      return e;
    }
  throw std::invalid_argument("no example named '" + name + "' (the tunable ones are " + joined(tunable_examples()) +
                              ")");
}

std::string sizes_text(const std::map<std::string, std::int64_t>& s) {
  std::string t;
  for (const auto& [k, v] : s) t += (t.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return t;
}

const char* kUsage =
    "usage: %s NAME [--size N | --size NAME=VALUE ...] [--device DEVICE]\n"
    "          [--search exhaustive|random|model] [--samples N] [--seed N] [--early-stop FRACTION]\n"
    "          [--repetitions N] [--budget SECONDS] [--compile-threads N] [--csv FILE] [--svg FILE]\n"
    "          [--results DIR] [--fresh]\n"
    "\n"
    "Tunes an example that declares a configuration space on one device: the GEMMs for C = A B, the\n"
    "scan for n ints. Those that do:\n"
    "  %s (\"sgemm\" is rung 4, sgemm_reg1d).\n"
    "Every configuration is built, compiled on worker threads, checked against a reference and timed\n"
    "(median of 5, caches flushed); one that fails at any stage is reported and scored as infinitely slow.\n"
    "Results are stored per configuration, problem, device and toolchain, so a second run measures\n"
    "only what is new.\n"
    "\n"
    "  --size N             every size the example takes: M = N = K = N for the GEMMs (default 1024 on a\n"
    "                       GPU, 256 on the CPU, 32 on the interpreter), n = N for the scan (default 2^24,\n"
    "                       2^20, 8192); or each as --size NAME=VALUE; a kernel of a --load library takes\n"
    "                       its own sizes by name (default: those it registered)\n"
    "  --device DEVICE      interpreter, cpu, cpu:THREADS, gpu, gpu:N or best (the default)\n"
    "  --search HOW         exhaustive (the default: every configuration), random (a seeded sample) or\n"
    "                       model (dlib's global search over the times measured so far)\n"
    "  --samples N          random, model: configurations to measure (default: a quarter of the space)\n"
    "  --seed N             random, model: the same seed chooses the same configurations (default 1)\n"
    "  --early-stop F       stop timing a configuration more than F slower than the best (0.5: 50%%)\n"
    "                       after two repetitions (default 0: every one gets all its repetitions)\n"
    "  --repetitions N      timed launches per configuration, the median kept (default 5)\n"
    "  --budget SECONDS     stop measuring after this long and keep the best so far\n"
    "  --compile-threads N  workers compiling candidates (default: one per core, memory allowing)\n"
    "  --csv FILE           write every configuration's result as CSV\n"
    "  --svg FILE           write a heatmap of the time over the first two parameters (best over the rest)\n"
    "  --results DIR        where results are stored (default: the kernel cache's directory/tune)\n"
    "  --fresh              neither read nor store results: measure everything\n";

bool write_file(const std::string& path, const std::string& text) {
  std::ofstream out(path, std::ios::trunc);
  out << text;
  return static_cast<bool>(out);
}

}  // namespace

tune::Report tune_example(const std::string& name, const std::map<std::string, std::int64_t>& size,
                          const Device& device, const tune::Options& options) {
  return tune_example(tunable(name), size, device, options);
}

tune::Report tune_example(const Example& e, const std::map<std::string, std::int64_t>& size, const Device& device,
                          const tune::Options& options) {
  if (!e.tunable()) throw std::invalid_argument("'" + e.name + "' declares no configuration space");
  tune::Problem problem;
  problem.sizes = size;
  std::optional<Workload> w;
  std::optional<KernelRun> run;
  if (e.run) {  // a loaded kernel: its own arguments and check
    run = e.run(device, size);
    problem.key = sizes_text(size) + " registered run";
    problem.run = [&](const Kernel& k, const Device& d, Grid g) { launch(k, d, g, run->args); };
    if (run->check)
      problem.check = [&](std::string& why) {
        why = run->check();
        return why.empty();
      };
  } else {
    w = make_workload(e.name, size, device);
    // The workload's data and checks are part of what a stored result means: "v1" names them.
    problem.key = sizes_text(size) + " workload v1";
    problem.run = [&](const Kernel& k, const Device& d, Grid g) {
      if (w->reset) w->reset();
      launch(k, d, g, w->args);
    };
    problem.check = [&](std::string& why) {
      why = w->check();
      return why.empty();
    };
  }
  return tune::tune(
      e.name, e.space(), [&](const tune::Config& c) { return e.candidate(c, size); }, problem, device, options);
}

int tune_main(const std::vector<std::string>& args, const std::string& program, const std::vector<Example>& loaded) {
  std::string name, device_name = "best", csv, svg;
  std::map<std::string, std::int64_t> size;
  std::int64_t square = 0;
  tune::Options options;
  options.progress = &std::cerr;
  std::vector<std::string> names = tunable_examples();
  for (const auto& e : loaded)
    if (e.tunable() && e.run) names.push_back(e.name);
  const std::string usage_names = joined(names);
  for (std::size_t i = 0; i < args.size(); ++i) {
    const std::string& a = args[i];
    auto value = [&](const char* what) -> std::optional<std::string> {
      if (i + 1 >= args.size()) {
        std::fprintf(stderr, "%s: %s needs %s\n", program.c_str(), a.c_str(), what);
        return std::nullopt;
      }
      return args[++i];
    };
    if (a == "--help" || a == "-h") {
      std::printf(kUsage, program.c_str(), usage_names.c_str());
      return 0;
    }
    std::optional<std::string> v;
    if (a == "--size") {
      if (!(v = value("a size"))) return 2;
      const auto eq = v->find('=');
      const std::string key = eq == std::string::npos ? "" : v->substr(0, eq);
      const std::int64_t n =
          integer_in(std::string_view(*v).substr(eq == std::string::npos ? 0 : eq + 1), 1, std::int64_t{1} << 40)
              .value_or(0);
      if ((eq != std::string::npos && key.empty()) || n < 1) {
        std::fprintf(stderr, "%s: --size is N (M = N = K for the examples) or NAME=N with N at least 1, not '%s'\n",
                     program.c_str(), v->c_str());
        return 2;
      }
      if (eq == std::string::npos)
        square = n;
      else
        size[key] = n;
    } else if (a == "--device") {
      if (!(v = value("a device"))) return 2;
      device_name = *v;
    } else if (a == "--search") {
      if (!(v = value("exhaustive, random or model"))) return 2;
      auto how = tune::search_from(*v);
      if (!how) {
        std::fprintf(stderr, "%s: --search is exhaustive, random or model, not '%s'\n", program.c_str(), v->c_str());
        return 2;
      }
      options.search = *how;
    } else if (a == "--samples" || a == "--repetitions") {
      if (!(v = value("a count"))) return 2;
      char* end = nullptr;
      const long n = std::strtol(v->c_str(), &end, 10);
      if (!end || *end || n < 1 || n > 1000000) {
        std::fprintf(stderr, "%s: %s wants a count of at least 1, not '%s'\n", program.c_str(), a.c_str(), v->c_str());
        return 2;
      }
      (a == "--samples" ? options.samples : options.repetitions) = static_cast<int>(n);
    } else if (a == "--seed") {
      if (!(v = value("a number"))) return 2;
      auto seed = integer_in(*v, 0, INT64_MAX);
      if (!seed) {
        std::fprintf(stderr, "%s: --seed wants a number of at least 0, not '%s'\n", program.c_str(), v->c_str());
        return 2;
      }
      options.seed = static_cast<std::uint64_t>(*seed);
    } else if (a == "--early-stop") {
      if (!(v = value("a fraction"))) return 2;
      char* end = nullptr;
      const double f = std::strtod(v->c_str(), &end);
      if (!end || *end || !(f >= 0) || f > 100) {
        std::fprintf(stderr, "%s: --early-stop wants a fraction such as 0.5, not '%s'\n", program.c_str(), v->c_str());
        return 2;
      }
      options.early_stop = f;
    } else if (a == "--budget") {
      if (!(v = value("seconds"))) return 2;
      char* end = nullptr;
      const double seconds = std::strtod(v->c_str(), &end);
      if (v->empty() || !end || *end || !(seconds > 0)) {
        std::fprintf(stderr, "%s: --budget wants a number of seconds above 0, not '%s'\n", program.c_str(), v->c_str());
        return 2;
      }
      options.budget_s = seconds;
    } else if (a == "--compile-threads") {
      if (!(v = value("a count"))) return 2;
      auto threads = integer_in(*v, 1, 1024);
      if (!threads) {
        std::fprintf(stderr, "%s: --compile-threads wants a count from 1 to 1024, not '%s'\n", program.c_str(),
                     v->c_str());
        return 2;
      }
      options.compile_threads = static_cast<int>(*threads);
    } else if (a == "--csv") {
      if (!(v = value("a file"))) return 2;
      csv = *v;
    } else if (a == "--svg") {
      if (!(v = value("a file"))) return 2;
      svg = *v;
    } else if (a == "--results") {
      if (!(v = value("a directory"))) return 2;
      options.directory = *v;
    } else if (a == "--fresh") {
      options.store = false;
    } else if (!a.empty() && a[0] != '-' && name.empty()) {
      name = a;
    } else {
      std::fprintf(stderr, "%s: unexpected '%s' (see --help)\n", program.c_str(), a.c_str());
      return 2;
    }
  }
  if (name.empty()) {
    std::fprintf(stderr, "%s: name the example to tune (%s; see --help)\n", program.c_str(), usage_names.c_str());
    return 2;
  }
  std::string error;
  auto device = device_named(device_name, error);
  if (!device) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), error.c_str());
    return 2;
  }
  const Example* from_library = nullptr;
  for (const auto& e : loaded)
    if (e.name == name) from_library = &e;
  if (from_library) {  // a loaded kernel: its own sizes where the command line gives none
    if (!from_library->tunable() || !from_library->run) {
      std::fprintf(stderr,
                   "%s: '%s' registers no configuration space, candidate and run (RegisteredKernel::space, "
                   "candidate and run; see docs/tune.md)\n",
                   program.c_str(), name.c_str());
      return 2;
    }
    if (square != 0) {
      std::fprintf(stderr, "%s: give a loaded kernel's sizes by name (--size NAME=VALUE)\n", program.c_str());
      return 2;
    }
    for (const auto& [k, v] : from_library->sizes) size.emplace(k, v);
  } else {
    // The sizes its workload takes: M, N and K for the GEMMs, n for the scan.
    std::vector<std::string> wants = workload_sizes(name == "sgemm" ? "sgemm_reg1d" : name);
    if (wants.empty()) wants = {"M", "N", "K"};  // no such example: tunable() says so below
    std::string listed;
    for (const auto& k : wants) listed += (listed.empty() ? "" : ", ") + k;
    for (const auto& [k, v] : size)
      if (std::find(wants.begin(), wants.end(), k) == wants.end()) {
        std::fprintf(stderr, "%s: the sizes of '%s' are %s, not '%s'\n", program.c_str(), name.c_str(), listed.c_str(),
                     k.c_str());
        return 2;
      }
    const bool gemm = wants.front() == "M";
    if (square == 0)
      square = device->is_gpu()                    ? (gemm ? 1024 : std::int64_t{1} << 24)
               : device->kind() == DeviceKind::Cpu ? (gemm ? 256 : std::int64_t{1} << 20)
                                                   : (gemm ? 32 : 8192);
    for (const auto& k : wants) size.emplace(k, square);
  }
  const std::uint64_t free = cap_data_at_free_memory(*device);
  try {
    const Example& e = from_library ? *from_library : tunable(name);
    std::printf("tune %s: %zu configurations, %s, on %s\n", e.name.c_str(), e.space().configs().size(),
                sizes_text(size).c_str(), device->name().c_str());
    tune::Report r = tune_example(e, size, *device, options);
    std::fputs(r.table().c_str(), stdout);
    std::printf(
        "%d measured now (%s search), %d from stored results (%s), %d failed; compiles on %d worker(s) took "
        "%.0f ms\n",
        r.measured, tune::search_name(options.search), r.reused,
        r.store_path.empty() ? "not stored" : r.store_path.c_str(), r.failed, r.compile_threads, r.compile_wall_ms);
    const tune::Space space = e.space();
    const auto& params = space.params();
    if (!csv.empty() && !write_file(csv, r.csv()))
      std::fprintf(stderr, "%s: cannot write %s\n", program.c_str(), csv.c_str());
    if (!svg.empty() && !write_file(svg, r.svg_heatmap(params.front().first, params.back().first)))
      std::fprintf(stderr, "%s: cannot write %s\n", program.c_str(), svg.c_str());
    const tune::Result* best = r.best();
    if (!best) {
      std::printf("no configuration was measured\n");
      return 1;
    }
    if (from_library || !(size.count("n") || (size.count("M") && size.count("N") && size.count("K")))) {
      std::printf("best: %s, %.4f ms\n", tune::to_string(best->config).c_str(), best->ms);
      return 0;
    }
    if (size.count("n")) {  // the scan: its elements a second
      std::printf("best: %s, %.4f ms, %.3g G elements/s\n", tune::to_string(best->config).c_str(), best->ms,
                  static_cast<double>(size.at("n")) / (best->ms * 1e6));
      return 0;
    }
    const double flops =
        2.0 * static_cast<double>(size.at("M")) * static_cast<double>(size.at("N")) * static_cast<double>(size.at("K"));
    std::printf("best: %s, %.4f ms, %.3g GFLOP/s\n", tune::to_string(best->config).c_str(), best->ms,
                flops / (best->ms * 1e6));
    return 0;
  } catch (const std::invalid_argument& e) {
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    say_out_of_memory(program, name, size, free);
    return 1;
  } catch (const std::exception& e) {  // the loaded kernel's run could not be made (its arguments, a launch check)
    std::fprintf(stderr, "%s: %s\n", program.c_str(), e.what());
    return 1;
  }
}

namespace {
#if defined(__SANITIZE_ADDRESS__) || defined(__SANITIZE_THREAD__)
constexpr bool kSanitized = true;  // the sanitizers map terabytes of shadow: no cap fits beside them
#else
constexpr bool kSanitized = false;
#endif

/// The number after `key` in a /proc file of "Key:   N kB" lines, in bytes; 0 when absent.
std::uint64_t proc_kib(const char* file, const std::string& key) {
  std::ifstream in(file);
  for (std::string line; std::getline(in, line);)
    if (line.rfind(key + ":", 0) == 0) return std::strtoull(line.c_str() + key.size() + 1, nullptr, 10) * 1024;
  return 0;
}

}  // namespace

std::uint64_t cap_data_at_free_memory(const Device& device) {
  if (kSanitized || device.is_gpu()) return 0;
  const std::uint64_t free = proc_kib("/proc/meminfo", "MemAvailable");
  const std::uint64_t held = proc_kib("/proc/self/status", "VmData");
  rlimit r{};
  if (free == 0 || held == 0 || getrlimit(RLIMIT_DATA, &r) != 0) return 0;
  const rlim_t cap = static_cast<rlim_t>(held + free);
  if (r.rlim_cur != RLIM_INFINITY && r.rlim_cur <= cap) return free;
  r.rlim_cur = cap;
  return setrlimit(RLIMIT_DATA, &r) == 0 ? free : 0;
}

void say_out_of_memory(const std::string& program, const std::string& name,
                       const std::map<std::string, std::int64_t>& size, std::uint64_t free) {
  std::string sizes;
  for (const auto& [n, v] : size) sizes += (sizes.empty() ? "" : " ") + n + "=" + std::to_string(v);
  std::fprintf(stderr, "%s: %s%s%s needs more memory than this host has", program.c_str(), name.c_str(),
               sizes.empty() ? "" : " at ", sizes.c_str());
  if (free) std::fprintf(stderr, " free (%.1f GiB when the run began)", static_cast<double>(free) / (1 << 30));
  std::fprintf(stderr, "; give it smaller sizes\n");
}

}  // namespace vantage::examples
