// The autotuner (include/vantage/tune.hpp, docs/tune.md): workers build and compile candidates
// through the runtime's `prepare`, the calling thread times them, and every result is stored as
// JSON under the cache directory, one file per (tuner, problem, device, toolchain).
#include "vantage/tune.hpp"

#include <unistd.h>
#include <xxhash.h>

#include <algorithm>
#include <atomic>
#include <boost/timer/progress_display.hpp>
#include <chrono>
#include <cmath>
#include <condition_variable>
#include <cstdio>
#include <cstring>
#include <deque>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <mutex>
#include <nlohmann/json.hpp>
#include <random>
#include <set>
#include <sstream>
#include <thread>

#include <dlib/global_optimization.h>

#include "support/workers.h"
#include "vantage/cache.hpp"
#include "vantage/diagnostics.hpp"

namespace vantage::tune {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using Json = nlohmann::json;

std::string to_string(const Config& c) {
  std::string s;
  for (const auto& [k, v] : c) s += (s.empty() ? "" : " ") + k + "=" + std::to_string(v);
  return s;
}

const char* status_name(Result::Status s) {
  switch (s) {
    case Result::Status::Ok: return "ok";
    case Result::Status::CheckFailed: return "check failed";
    case Result::Status::CompileFailed: return "compile failed";
    case Result::Status::LaunchRefused: return "launch refused";
    case Result::Status::RunFailed: return "run failed";
    case Result::Status::Wrong: return "wrong answer";
    case Result::Status::NotMeasured: return "not measured";
  }
  return "?";
}

Space& Space::param(std::string name, std::vector<std::int64_t> values) {
  params_.emplace_back(std::move(name), std::move(values));
  return *this;
}
Space& Space::constraint(std::function<bool(const Config&)> holds) {
  constraints_.push_back(std::move(holds));
  return *this;
}
std::vector<Config> Space::configs() const {
  std::vector<Config> out;
  for (const auto& [name, values] : params_)
    if (values.empty()) return out;
  std::vector<std::size_t> at(params_.size(), 0);
  while (true) {
    Config c;
    for (std::size_t i = 0; i < params_.size(); ++i) c[params_[i].first] = params_[i].second[at[i]];
    if (std::all_of(constraints_.begin(), constraints_.end(), [&](const auto& f) { return f(c); }))
      out.push_back(std::move(c));
    std::size_t i = params_.size();
    while (i > 0 && ++at[i - 1] == params_[i - 1].second.size()) at[--i] = 0;
    if (i == 0) return out;
  }
}

namespace {

double ms_since(Clock::time_point t) { return std::chrono::duration<double, std::milli>(Clock::now() - t).count(); }

std::optional<Result::Status> status_from(const std::string& name) {
  for (auto s : {Result::Status::Ok, Result::Status::CheckFailed, Result::Status::CompileFailed,
                 Result::Status::LaunchRefused, Result::Status::RunFailed, Result::Status::Wrong})
    if (name == status_name(s)) return s;
  return std::nullopt;
}

/// The results of one (tuner, problem, device, toolchain), kept in one JSON file. Each put re-reads
/// the file and writes it whole through a temporary and a rename, so that a reader never sees half
/// a file and two processes tuning at once lose nothing but a race on the same configuration.
class Store {
 public:
  Store(std::string path, Json header) : path_(std::move(path)), header_(std::move(header)) {}
  const std::string& path() const { return path_; }

  std::map<std::string, Result> load() const {
    std::map<std::string, Result> out;
    Json doc = read();
    if (!doc.contains("results") || !doc["results"].is_object()) return out;
    for (const auto& [key, v] : doc["results"].items()) {
      if (!v.is_object() || !v.contains("status") || !v["status"].is_string()) continue;
      auto status = status_from(v["status"].get<std::string>());
      if (!status) continue;
      Result r;
      r.status = *status;
      if (r.status == Result::Status::Ok) {
        if (!v.contains("ms") || !v["ms"].is_number()) continue;
        r.ms = v["ms"].get<double>();
      }
      r.compile_ms = v.value("compile_ms", 0.0);
      r.detail = v.value("detail", std::string());
      r.stored = true;
      out.emplace(key, std::move(r));
    }
    return out;
  }

  void put(const Result& r) {
    std::lock_guard lock(mutex_);
    Json doc = read();
    if (!doc.is_object()) doc = Json::object();
    for (const auto& [k, v] : header_.items()) doc[k] = v;
    Json e = {{"status", status_name(r.status)}, {"compile_ms", r.compile_ms}};
    if (r.ok()) e["ms"] = r.ms;
    if (!r.detail.empty()) e["detail"] = r.detail;
    doc["results"][to_string(r.config)] = e;
    std::error_code ec;
    fs::create_directories(fs::path(path_).parent_path(), ec);
    std::string tmp = path_ + ".tmp." + std::to_string(::getpid());
    {
      std::ofstream out(tmp, std::ios::trunc);
      out << doc.dump(1) << "\n";
      if (!out) {
        fs::remove(tmp, ec);
        return;  // an unwritable directory costs only the reuse of this result
      }
    }
    fs::rename(tmp, path_, ec);
    if (ec) fs::remove(tmp, ec);
  }

 private:
  Json read() const {
    std::ifstream in(path_);
    if (!in) return Json::object();
    Json doc = Json::parse(in, nullptr, /*allow_exceptions=*/false);
    return doc.is_discarded() ? Json::object() : doc;
  }
  std::string path_;
  Json header_;
  std::mutex mutex_;
};

std::string file_name(const std::string& tuner, const std::string& key) {
  std::string safe;
  for (char c : tuner) safe += std::isalnum(static_cast<unsigned char>(c)) || c == '_' || c == '-' ? c : '_';
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(XXH3_64bits(key.data(), key.size())));
  return safe + "-" + hex + ".json";
}

/// Where the results of (tuner, problem, device, toolchain) are stored: under `directory`, else the
/// kernel cache's directory + "/tune"; "" when there is neither.
std::string store_path(std::string directory, const std::string& tuner, const std::string& problem,
                       const std::string& device, const std::string& toolchain) {
  if (directory.empty()) {
    std::string cache = KernelCache::global().directory();
    if (!cache.empty()) directory = cache + "/tune";
  }
  if (directory.empty()) return "";
  return directory + "/" + file_name(tuner, tuner + "\n" + problem + "\n" + device + "\n" + toolchain);
}

/// The configuration `to_string` printed; nullopt for text it does not write.
std::optional<Config> config_from(const std::string& text) {
  Config c;
  std::istringstream in(text);
  std::string item;
  while (in >> item) {
    const auto eq = item.find('=');
    if (eq == std::string::npos || eq == 0) return std::nullopt;
    char* end = nullptr;
    const long long v = std::strtoll(item.c_str() + eq + 1, &end, 10);
    if (!end || *end) return std::nullopt;
    c[item.substr(0, eq)] = v;
  }
  return c;
}

/// Workers: as many as asked (or one per core), no more than there is work, and no more than free
/// memory allows at about 512 MiB per compile (NVRTC and LLVM at O3 on a large kernel).
int worker_count(int asked, std::size_t work) {
  int cores = static_cast<int>(std::max(1u, std::thread::hardware_concurrency()));
  int n = asked > 0 ? asked : cores;
  long pages = ::sysconf(_SC_AVPHYS_PAGES), page = ::sysconf(_SC_PAGESIZE);
  if (pages > 0 && page > 0) {
    long long free_mib = static_cast<long long>(pages) * page / (1024 * 1024);
    n = static_cast<int>(std::min<long long>(n, std::max<long long>(1, free_mib / 512)));
  }
  return std::max(1, std::min<int>(n, static_cast<int>(std::max<std::size_t>(work, 1))));
}

/// A candidate built and compiled (or failed on the way).
struct Built {
  std::size_t index = 0;
  std::optional<Candidate> candidate;
  Result::Status status = Result::Status::Ok;
  std::string detail;
  double compile_ms = 0;
};

/// Classifies what a build, compile or launch threw.
void classify(std::exception_ptr e, Result::Status& status, std::string& detail) {
  try {
    std::rethrow_exception(e);
  } catch (const CheckError& x) {
    status = Result::Status::CheckFailed, detail = x.what();
  } catch (const CompileError& x) {
    status = Result::Status::CompileFailed, detail = x.what();
  } catch (const ToolchainError& x) {
    status = Result::Status::CompileFailed, detail = x.what();
  } catch (const LaunchError& x) {
    status = Result::Status::LaunchRefused, detail = x.what();
  } catch (const ExecutionError& x) {
    status = Result::Status::RunFailed, detail = x.what();
  } catch (const std::exception& x) {
    status = Result::Status::CheckFailed, detail = std::string("the factory threw: ") + x.what();
  } catch (...) {
    status = Result::Status::CheckFailed, detail = "the factory threw something that is not a std::exception";
  }
  // One line is enough in a table; the first line of a diagnostic names the rule and the line.
  if (auto nl = detail.find('\n'); nl != std::string::npos && nl + 1 < detail.size()) {
    std::string rest = detail.substr(nl + 1);
    if (auto n2 = rest.find('\n'); n2 != std::string::npos) rest.resize(n2);
    detail = detail.substr(0, nl) + ": " + rest;
  }
}

/// Writes past the last-level cache so that no repetition reads what the previous one left there.
class Flusher {
 public:
  explicit Flusher(const Device& d) : device_(d) {
    if (d.is_gpu()) {
      std::int64_t bytes = std::max<std::int64_t>(2 * d.properties().l2_bytes, 64ll << 20);
      gpu_.emplace(d.alloc<std::uint8_t>(bytes));
    } else {
      host_.assign(std::size_t{128} << 20, 0);
    }
  }
  void operator()() {
    if (gpu_) {
      gpu_->zero();
      device_.synchronize();
    } else {
      std::memset(host_.data(), ++round_, host_.size());
      sink_ = sink_ + host_[host_.size() / 2];
    }
  }

 private:
  Device device_;
  std::optional<DeviceBuffer<std::uint8_t>> gpu_;
  std::vector<unsigned char> host_;
  unsigned char round_ = 0;
  volatile unsigned sink_ = 0;
};

bool is_terminal(const std::ostream* os) {
  if (os == &std::cerr || os == &std::clog) return ::isatty(2) != 0;
  if (os == &std::cout) return ::isatty(1) != 0;
  return false;
}

double median(std::vector<double> v) {
  std::sort(v.begin(), v.end());
  std::size_t n = v.size();
  return n % 2 ? v[n / 2] : 0.5 * (v[n / 2 - 1] + v[n / 2]);
}

/// Builds, compiles and times batches of configurations of one tuning run: the machinery the
/// searches share. Workers build and compile (through `prepare`); the calling thread times; every
/// result is stored as it comes. After the time budget runs out, what is left is NotMeasured.
class Measurer {
 public:
  Measurer(const std::string& name, Report& report, const std::function<Candidate(const Config&)>& make,
           const Problem& problem, const Device& device, const Options& options, Store* store, Clock::time_point start,
           std::size_t expected)
      : name_(name),
        report_(report),
        make_(make),
        problem_(problem),
        device_(device),
        options_(options),
        store_(store),
        start_(start),
        expected_(expected),
        workers_(worker_count(options.compile_threads, expected)) {
    report.compile_threads = workers_;
    for (const auto& r : report.results)
      if (r.ok()) best_ms_ = std::min(best_ms_, r.ms);
    if (options.progress && expected > 0 && is_terminal(options.progress))
      bar_.emplace(static_cast<unsigned long>(expected), *options.progress,
                   "tune " + name + ": " + std::to_string(expected) + " configuration(s) on " + report.device + "\n");
  }

  int workers() const { return workers_; }

  /// Measures the configurations at `batch` (indices into the report's results) and stores them.
  void measure(const std::vector<std::size_t>& batch) {
    if (batch.empty()) return;
    std::mutex m;
    std::condition_variable ready_cv;
    std::deque<Built> ready;
    std::atomic<std::size_t> next{0};
    auto work = [&] {
      for (std::size_t k; (k = next++) < batch.size();) {
        Built b;
        b.index = batch[k];
        if (stop_ || over_budget()) {  // handed on unmeasured, so that the timing loop sees every one
          b.status = Result::Status::NotMeasured;
          b.detail = "the time budget ran out";
          std::lock_guard lock(m);
          ready.push_back(std::move(b));
          ready_cv.notify_one();
          continue;
        }
        auto t0 = Clock::now();
        try {
          Candidate c = make_(report_.results[b.index].config);
          Spec spec = launch_spec(
              c.kernel, c.spec.value_or(Spec{}.with_threads(c.grid.threads).with_arch(device_.properties().arch)),
              problem_.sizes);
          prepare(c.kernel, device_, spec).get();
          b.candidate = std::move(c);
        } catch (...) {
          classify(std::current_exception(), b.status, b.detail);
        }
        b.compile_ms = ms_since(t0);
        std::lock_guard lock(m);
        if (!compiled_any_ || t0 < first_compile_) first_compile_ = t0;
        compiled_any_ = true;
        last_compile_ = Clock::now();
        ready.push_back(std::move(b));
        ready_cv.notify_one();
      }
    };
    // The compiles run on the library's background workers (each waits for its `prepare`, which
    // runs there too: the workers grow so that it never waits behind them).
    support::TaskGroup compiles;
    for (int i = 0; i < std::min<int>(workers_, static_cast<int>(batch.size())); ++i) compiles.run(work);
    // Host devices share their cores with the compiler: time only once every candidate is compiled.
    if (!device_.is_gpu()) compiles.wait();
    for (std::size_t measured = 0; measured < batch.size(); ++measured) {
      Built b;
      {
        std::unique_lock lock(m);
        ready_cv.wait(lock, [&] { return !ready.empty(); });
        b = std::move(ready.front());
        ready.pop_front();
      }
      time(b);
    }
    compiles.wait();
  }

  /// Once every batch is measured: the compile wall time.
  void finish() {
    if (compiled_any_)
      report_.compile_wall_ms = std::chrono::duration<double, std::milli>(last_compile_ - first_compile_).count();
  }

 private:
  bool over_budget() const { return options_.budget_s > 0 && ms_since(start_) > options_.budget_s * 1000.0; }

  void time(Built& b) {
    Result& r = report_.results[b.index];
    r.compile_ms = b.compile_ms;
    r.status = b.status;
    r.detail = b.detail;
    if (r.ok() && over_budget()) {
      r.status = Result::Status::NotMeasured;
      r.detail = "the time budget ran out";
      stop_ = true;
    } else if (r.ok()) {
      const Candidate& c = *b.candidate;
      try {
        problem_.run(c.kernel, device_, c.grid);
        device_.synchronize();
        std::string why;
        if (problem_.check && !problem_.check(why)) {
          r.status = Result::Status::Wrong;
          r.detail = why.empty() ? "the check failed" : why;
        } else {
          for (int w = 0; w < options_.warmup; ++w) problem_.run(c.kernel, device_, c.grid);
          device_.synchronize();
          if (options_.flush_cache && !flush_) flush_.emplace(device_);
          std::vector<double> times;
          const int reps = std::max(1, options_.repetitions);
          for (int rep = 0; rep < reps; ++rep) {
            if (options_.early_stop > 0 && rep >= std::max(1, options_.early_repetitions) && std::isfinite(best_ms_) &&
                median(times) > best_ms_ * (1 + options_.early_stop)) {
              r.detail = "stopped after " + std::to_string(rep) + " of " + std::to_string(reps) +
                         " repetitions: more than " + std::to_string(static_cast<int>(options_.early_stop * 100)) +
                         "% slower than the best";
              break;
            }
            if (flush_) (*flush_)();
            if (problem_.measure) {
              times.push_back(problem_.measure(c.kernel, device_, c.grid));
            } else if (device_.is_gpu()) {
              Stream s = Stream::default_for(device_);
              Event a(device_), e(device_);
              a.record(s);
              problem_.run(c.kernel, device_, c.grid);
              e.record(s);
              e.synchronize();
              times.push_back(e.elapsed_ms(a));
            } else {
              auto t0 = Clock::now();
              problem_.run(c.kernel, device_, c.grid);
              device_.synchronize();
              times.push_back(ms_since(t0));
            }
          }
          r.ms = median(times);
          best_ms_ = std::min(best_ms_, r.ms);
        }
      } catch (...) {
        classify(std::current_exception(), r.status, r.detail);
      }
    }
    if (!r.ok()) r.ms = std::numeric_limits<double>::infinity();
    if (r.status != Result::Status::NotMeasured) {
      ++report_.measured;
      if (store_) store_->put(r);
    }
    progress(r);
  }

  void progress(const Result& r) {
    ++done_;
    if (bar_) {
      if (done_ <= expected_) ++*bar_;
    } else if (options_.progress) {
      *options_.progress << "tune " << name_ << " [" << done_ << "/" << expected_ << "] " << to_string(r.config) << ": "
                         << (r.ok() ? std::to_string(r.ms) + " ms" : std::string(status_name(r.status))) << "\n";
    }
  }

  const std::string& name_;
  Report& report_;
  const std::function<Candidate(const Config&)>& make_;
  const Problem& problem_;
  const Device& device_;
  const Options& options_;
  Store* store_;
  Clock::time_point start_;
  std::size_t expected_;
  int workers_;
  double best_ms_ = std::numeric_limits<double>::infinity();
  std::optional<Flusher> flush_;
  std::optional<boost::timer::progress_display> bar_;
  std::size_t done_ = 0;
  std::atomic<bool> stop_{false};
  bool compiled_any_ = false;
  Clock::time_point first_compile_{}, last_compile_{};
};

/// The model-based search: dlib's global_function_search over the positions of each parameter's
/// values (an integer axis per parameter with more than one value), maximizing -log(ms). Stored
/// results are its first points; then `want / 4` random ones (at least two) are measured; then it
/// asks for one point at a time, until `want` are measured. A point outside
/// the space (a constraint fails) or failed is told a penalty (four times the slowest time so far)
/// and costs no measurement; a point it asks for again is told its known value.
void model_search(const Space& space, Report& report, Measurer& m, const std::vector<std::size_t>& fresh,
                  std::size_t want, std::uint64_t seed) {
  const auto& params = space.params();
  std::vector<std::size_t> axes;  // the parameters with more than one value
  for (std::size_t p = 0; p < params.size(); ++p)
    if (params[p].second.size() > 1) axes.push_back(p);
  // Each configuration by the positions of its values on the axes.
  std::map<std::vector<long>, std::size_t> at;
  auto position = [&](const Config& c) {
    std::vector<long> pos;
    for (std::size_t p : axes) {
      const auto& values = params[p].second;
      pos.push_back(std::find(values.begin(), values.end(), c.at(params[p].first)) - values.begin());
    }
    return pos;
  };
  for (std::size_t i = 0; i < report.results.size(); ++i) at.emplace(position(report.results[i].config), i);

  // The random start.
  std::vector<std::size_t> order = fresh;
  std::mt19937_64 rng(seed);
  std::shuffle(order.begin(), order.end(), rng);
  const std::size_t start = std::min({order.size(), want, std::max<std::size_t>(2, want / 4)});
  m.measure(std::vector<std::size_t>(order.begin(), order.begin() + static_cast<std::ptrdiff_t>(start)));
  std::size_t measured = start;
  if (axes.empty() || measured >= want || measured >= fresh.size()) return;

  auto known = [&](std::size_t i) { return report.results[i].status != Result::Status::NotMeasured; };
  auto penalty = [&] {
    double slowest = 0;
    for (const auto& r : report.results)
      if (r.ok()) slowest = std::max(slowest, r.ms);
    return -std::log(4 * (slowest > 0 ? slowest : 1e3));
  };
  auto value = [&](std::size_t i) {
    const Result& r = report.results[i];
    return r.ok() ? -std::log(std::max(r.ms, 1e-9)) : penalty();
  };
  auto point = [&](const std::vector<long>& pos) {
    dlib::matrix<double, 0, 1> x(static_cast<long>(pos.size()));
    for (std::size_t d = 0; d < pos.size(); ++d) x(static_cast<long>(d)) = static_cast<double>(pos[d]);
    return x;
  };
  std::vector<dlib::function_evaluation> initial;
  for (const auto& [pos, i] : at)
    if (known(i)) initial.emplace_back(point(pos), value(i));
  dlib::matrix<double, 0, 1> lower(static_cast<long>(axes.size())), upper(static_cast<long>(axes.size()));
  for (std::size_t d = 0; d < axes.size(); ++d) {
    lower(static_cast<long>(d)) = 0;
    upper(static_cast<long>(d)) = static_cast<double>(params[axes[d]].second.size() - 1);
  }
  dlib::global_function_search opt({dlib::function_spec(lower, upper, std::vector<bool>(axes.size(), true))},
                                   {initial});
  opt.set_seed(static_cast<time_t>(seed));

  // One point at a time: with several requests outstanding, all but one are global exploration
  // steps, which found worse configurations on the landscapes of tests/test_tune.cpp. Asks are
  // bounded: the optimizer may keep proposing points it has seen or that are outside the space.
  std::size_t asks = 0;
  const std::size_t max_asks = 50 * report.results.size() + 200;
  while (measured < want && asks < max_asks) {
    dlib::function_evaluation_request req = opt.get_next_x();
    ++asks;
    std::vector<long> pos;
    for (long d = 0; d < req.x().size(); ++d)
      pos.push_back(std::clamp(std::lround(req.x()(d)), 0L,
                               static_cast<long>(params[axes[static_cast<std::size_t>(d)]].second.size() - 1)));
    auto it = at.find(pos);
    if (it == at.end()) {
      req.set(penalty());
      continue;
    }
    if (!known(it->second)) {
      m.measure({it->second});
      ++measured;
    }
    req.set(known(it->second) ? value(it->second) : penalty());
  }
}

}  // namespace

const char* search_name(Search s) {
  switch (s) {
    case Search::Exhaustive: return "exhaustive";
    case Search::Random: return "random";
    case Search::Model: return "model";
  }
  return "?";
}

std::optional<Search> search_from(const std::string& name) {
  for (auto s : {Search::Exhaustive, Search::Random, Search::Model})
    if (name == search_name(s)) return s;
  return std::nullopt;
}

Report tune(const std::string& name, const Space& space, const std::function<Candidate(const Config&)>& make,
            const Problem& problem, const Device& device, const Options& options) {
  auto start = Clock::now();
  Report report;
  report.tuner = name;
  report.problem = problem.key;
  report.device = device.name();
  report.toolchain = device.toolchain();
  for (auto& c : space.configs()) report.results.push_back(Result{std::move(c)});

  // Stored results of this tuner, problem, device and toolchain.
  std::optional<Store> store;
  if (options.store) {
    if (std::string path = store_path(options.directory, name, problem.key, report.device, report.toolchain);
        !path.empty()) {
      store.emplace(
          path,
          Json{{"tuner", name}, {"problem", problem.key}, {"device", report.device}, {"toolchain", report.toolchain}});
      report.store_path = store->path();
    }
  }
  // The configurations with no stored result.
  std::vector<std::size_t> fresh;
  {
    auto known = store ? store->load() : std::map<std::string, Result>{};
    for (std::size_t i = 0; i < report.results.size(); ++i) {
      Result& r = report.results[i];
      if (auto it = known.find(to_string(r.config)); it != known.end()) {
        Config c = std::move(r.config);
        r = it->second;
        r.config = std::move(c);
        ++report.reused;
      } else {
        fresh.push_back(i);
      }
    }
  }
  const std::size_t want = options.search == Search::Exhaustive ? fresh.size()
                           : options.samples > 0                ? static_cast<std::size_t>(options.samples)
                                                                : std::max<std::size_t>(1, report.results.size() / 4);
  Measurer m(name, report, make, problem, device, options, store ? &*store : nullptr, start,
             std::min(want, fresh.size()));
  switch (options.search) {
    case Search::Exhaustive: m.measure(fresh); break;
    case Search::Random: {
      // A seeded random sample of the configurations.
      std::vector<std::size_t> order = fresh;
      std::mt19937_64 rng(options.seed);
      std::shuffle(order.begin(), order.end(), rng);
      order.resize(std::min(want, order.size()));
      m.measure(order);
      break;
    }
    case Search::Model: model_search(space, report, m, fresh, want, options.seed); break;
  }
  m.finish();
  for (auto& r : report.results)
    if (r.status == Result::Status::NotMeasured && r.detail.empty())
      r.detail = std::string("not chosen by the ") + search_name(options.search) + " search";
  for (const auto& r : report.results)
    if (!r.ok() && r.status != Result::Status::NotMeasured) ++report.failed;
  report.total_ms = ms_since(start);
  return report;
}

// ---------------------------------------------------------------- dispatch

Dispatcher::Dispatcher(std::string tuner, const Device& device, std::function<std::string(const Sizes&)> key_class,
                       Config fallback, std::string directory)
    : tuner_(std::move(tuner)),
      device_(device.name()),
      toolchain_(device.toolchain()),
      key_class_(std::move(key_class)),
      fallback_(std::move(fallback)),
      directory_(std::move(directory)) {}

Dispatcher::Pick Dispatcher::pick(const Sizes& sizes) const {
  const std::string key = key_class_(sizes);
  {
    std::lock_guard lock(mu_);
    if (auto it = picks_.find(key); it != picks_.end()) return it->second;
  }
  Pick p{fallback_, key, false, std::numeric_limits<double>::infinity()};
  if (std::string path = store_path(directory_, tuner_, key, device_, toolchain_); !path.empty()) {
    for (const auto& [text, r] : Store(path, Json::object()).load()) {
      auto c = config_from(text);
      if (!c || !r.ok() || r.ms >= p.ms) continue;
      p.config = std::move(*c);
      p.ms = r.ms;
      p.tuned = true;
    }
  }
  std::lock_guard lock(mu_);
  return picks_.emplace(key, std::move(p)).first->second;
}

// ---------------------------------------------------------------- reports

const Result* Report::best() const {
  const Result* b = nullptr;
  for (const auto& r : results)
    if (r.ok() && (!b || r.ms < b->ms)) b = &r;
  return b;
}

std::string Report::table() const {
  const Result* b = best();
  std::size_t w = 13;
  for (const auto& r : results) w = std::max(w, to_string(r.config).size());
  std::ostringstream os;
  char line[512];
  std::snprintf(line, sizeof line, "%-*s  %-14s  %10s  %7s  %s\n", static_cast<int>(w), "configuration", "status", "ms",
                "x best", "");
  os << line;
  for (const auto& r : results) {
    char ms[32] = "inf", ratio[32] = "-";
    if (r.ok()) std::snprintf(ms, sizeof ms, "%.4f", r.ms);
    if (r.ok() && b) std::snprintf(ratio, sizeof ratio, "%.2f", r.ms / b->ms);
    std::string note = r.detail.substr(0, 100);
    if (r.stored) note = "(stored) " + note;
    if (&r == b) note = "<- best " + note;
    std::snprintf(line, sizeof line, "%-*s  %-14s  %10s  %7s  %s\n", static_cast<int>(w), to_string(r.config).c_str(),
                  status_name(r.status), ms, ratio, note.c_str());
    os << line;
  }
  return os.str();
}

namespace {
std::string csv_field(const std::string& s) {
  if (s.find_first_of(",\"\n") == std::string::npos) return s;
  std::string q = "\"";
  for (char c : s) q += c == '"' ? std::string("\"\"") : std::string(1, c == '\n' ? ' ' : c);
  return q + "\"";
}
std::string xml(const std::string& s) {
  std::string o;
  for (char c : s) {
    switch (c) {
      case '<': o += "&lt;"; break;
      case '>': o += "&gt;"; break;
      case '&': o += "&amp;"; break;
      case '"': o += "&quot;"; break;
      default: o += c;
    }
  }
  return o;
}
}  // namespace

std::string Report::csv() const {
  std::set<std::string> names;
  for (const auto& r : results)
    for (const auto& [k, v] : r.config) names.insert(k);
  std::ostringstream os;
  for (const auto& n : names) os << csv_field(n) << ",";
  os << "status,ms,compile_ms,stored,detail\n";
  for (const auto& r : results) {
    for (const auto& n : names) {
      auto it = r.config.find(n);
      if (it != r.config.end()) os << it->second;
      os << ",";
    }
    os << csv_field(status_name(r.status)) << "," << (r.ok() ? std::to_string(r.ms) : "inf") << "," << r.compile_ms
       << "," << (r.stored ? 1 : 0) << "," << csv_field(r.detail) << "\n";
  }
  return os.str();
}

std::string Report::svg_heatmap(const std::string& x, const std::string& y) const {
  std::set<std::int64_t> xs, ys;
  for (const auto& r : results) {
    if (auto i = r.config.find(x); i != r.config.end()) xs.insert(i->second);
    if (auto j = r.config.find(y); j != r.config.end()) ys.insert(j->second);
  }
  // The best result at each cell over the other parameters; failed when every one there failed.
  std::map<std::pair<std::int64_t, std::int64_t>, double> cell;
  for (const auto& r : results) {
    auto i = r.config.find(x), j = r.config.find(y);
    if (i == r.config.end() || j == r.config.end()) continue;
    auto key = std::make_pair(i->second, j->second);
    double ms = r.ok() ? r.ms : std::numeric_limits<double>::infinity();
    auto [it, fresh] = cell.emplace(key, ms);
    if (!fresh) it->second = std::min(it->second, ms);
  }
  double lo = std::numeric_limits<double>::infinity(), hi = 0;
  for (const auto& [k, ms] : cell)
    if (std::isfinite(ms)) lo = std::min(lo, ms), hi = std::max(hi, ms);
  const int cw = 90, ch = 44, left = 90, top = 60;
  std::string title = tuner + " on " + device + ": " + problem;
  int width = std::max(left + cw * static_cast<int>(xs.size()) + 20, 40 + 7 * static_cast<int>(title.size() + 56));
  int height = top + ch * static_cast<int>(ys.size()) + 20;
  std::ostringstream os;
  os << "<svg xmlns=\"http://www.w3.org/2000/svg\" width=\"" << width << "\" height=\"" << height
     << "\" font-family=\"sans-serif\" font-size=\"12\">\n";
  os << "<text x=\"10\" y=\"20\" font-size=\"14\">" << xml(title)
     << " (ms, best over other parameters; green is fastest)</text>\n";
  os << "<text x=\"" << left + cw * static_cast<int>(xs.size()) / 2 << "\" y=\"" << top - 24
     << "\" text-anchor=\"middle\">" << xml(x) << "</text>\n";
  os << "<text x=\"10\" y=\"" << top + ch * static_cast<int>(ys.size()) / 2 << "\">" << xml(y) << "</text>\n";
  int col = 0;
  for (auto xv : xs) {
    os << "<text x=\"" << left + col * cw + cw / 2 << "\" y=\"" << top - 6 << "\" text-anchor=\"middle\">" << xv
       << "</text>\n";
    ++col;
  }
  int row = 0;
  for (auto yv : ys) {
    os << "<text x=\"" << left - 8 << "\" y=\"" << top + row * ch + ch / 2 + 4 << "\" text-anchor=\"end\">" << yv
       << "</text>\n";
    col = 0;
    for (auto xv : xs) {
      int px = left + col * cw, py = top + row * ch;
      auto it = cell.find({xv, yv});
      std::string fill = "#ffffff", label;
      if (it == cell.end()) {
        label = "";
      } else if (!std::isfinite(it->second)) {
        fill = "#b0b0b0", label = "failed";
      } else {
        // Green (fastest) to red (slowest), on a log scale of the time.
        double t = hi > lo ? std::log(it->second / lo) / std::log(hi / lo) : 0;
        int red = static_cast<int>(60 + 195 * t), green = static_cast<int>(200 - 140 * t);
        char c[8];
        std::snprintf(c, sizeof c, "#%02x%02x50", red, green);
        fill = c;
        char ms[32];
        std::snprintf(ms, sizeof ms, "%.3g", it->second);
        label = ms;
      }
      os << "<rect x=\"" << px << "\" y=\"" << py << "\" width=\"" << cw - 2 << "\" height=\"" << ch - 2 << "\" fill=\""
         << fill << "\"/>\n";
      os << "<text x=\"" << px + cw / 2 << "\" y=\"" << py + ch / 2 + 4 << "\" text-anchor=\"middle\">" << label
         << "</text>\n";
      ++col;
    }
    ++row;
  }
  os << "</svg>\n";
  return os.str();
}

}  // namespace vantage::tune
