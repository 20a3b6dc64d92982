// Vantage autotuner: a kernel factory over a space of configurations, measured on one device for one
// problem. Candidates are built and compiled in parallel on worker threads (how many: bounded by the
// host's cores and its free memory); on a GPU the main thread times finished candidates while later
// ones compile, on a host device (whose cores the compiler would share) after the last one compiles.
// A configuration that does not build (CheckError), compile (CompileError), load or launch
// (LaunchError: resources over the device's limits), run (ExecutionError) or give the right answer
// is scored as infinitely slow, reported with its reason, and never stops the run. Timing: warm-up
// launches, the last-level cache flushed before each repetition, the median of the repetitions
// (events on a GPU, the host clock on host devices). Every result is stored, per (tuner, problem key,
// device, toolchain) and configuration, under the cache directory, so a second run measures only the
// configurations it has no result for, and a run cut short resumes. docs/tune.md says more.
#pragma once
#include <cstdint>
#include <functional>
#include <iosfwd>
#include <limits>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "vantage/kernel.hpp"
#include "vantage/launch.hpp"
#include "vantage/runtime.hpp"

namespace vantage::tune {

/// One point of the space: a value for each parameter, by name.
using Config = std::map<std::string, std::int64_t>;
/// "BM=64 TM=4", in parameter-name order: how results are stored and printed.
std::string to_string(const Config& c);

/// The parameters and their values, and constraints a configuration must meet.
class Space {
 public:
  Space& param(std::string name, std::vector<std::int64_t> values);
  /// A configuration is in the space only if every constraint holds for it.
  Space& constraint(std::function<bool(const Config&)> holds);
  /// Every configuration that meets the constraints, the last parameter varying fastest.
  std::vector<Config> configs() const;
  const std::vector<std::pair<std::string, std::vector<std::int64_t>>>& params() const { return params_; }

 private:
  std::vector<std::pair<std::string, std::vector<std::int64_t>>> params_;
  std::vector<std::function<bool(const Config&)>> constraints_;
};

/// What the factory makes of one configuration.
struct Candidate {
  Kernel kernel;
  Grid grid;
  /// The specialization a launch on `grid` uses; by default the grid's threads and the device's
  /// architecture (set it when the kernel specializes sizes).
  std::optional<Spec> spec;
};

/// The problem every candidate is measured on.
struct Problem {
  /// Names the problem in the stored results ("M=N=K=1024"): a result is reused only for the same key.
  std::string key;
  /// One launch of a candidate with the problem's arguments; the tuner times it (and synchronizes).
  std::function<void(const Kernel&, const Device&, Grid)> run;
  /// The integer arguments `run` passes, by parameter name: the tuner compiles the variant a launch
  /// with them uses (launch_spec), not a second one at the first launch.
  std::map<std::string, std::int64_t> sizes;
  /// Whether the output of the last `run` is right; `why` says what is wrong. Empty: not checked.
  std::function<bool(std::string& why)> check;
  /// Where set, a timed repetition calls this instead of `run` and takes the milliseconds it returns:
  /// for a problem measured its own way (a simulator's cycles, a profiler's counter, a cost model, a
  /// replay of times measured elsewhere). `run` still makes the checked launch and the warm-ups.
  std::function<double(const Kernel&, const Device&, Grid)> measure;
};

/// How the space is searched.
enum class Search : std::uint8_t {
  Exhaustive,  ///< every configuration
  Random,      ///< `samples` configurations drawn at random (seeded), the rest left unmeasured
  /// `samples` configurations chosen by a model of the times measured so far (dlib's
  /// global_function_search: a Lipschitz upper bound explored globally, a quadratic model refined
  /// around the best), each parameter an axis of its values' positions; a few random ones first.
  /// Stored results count as measured points of the model.
  Model,
};
/// "exhaustive", "random", "model"; the parse of those names (nullopt for another).
const char* search_name(Search s);
std::optional<Search> search_from(const std::string& name);

struct Options {
  Search search = Search::Exhaustive;
  int samples = 0;         ///< Random, Model: configurations to measure (0: a quarter of the space, at least one)
  std::uint64_t seed = 1;  ///< Random, Model: the same seed draws the same configurations
  /// Early stopping: after `early_repetitions` timed launches, a configuration whose median so far is
  /// more than this fraction slower than the best so far (0.5: 50%) is not timed further; its figure
  /// is that median. 0: every configuration gets all its repetitions.
  double early_stop = 0;
  int early_repetitions = 2;
  int compile_threads = 0;  ///< workers building and compiling candidates; 0: one per core (memory allowing)
  int warmup = 1;           ///< launches before the timed ones (after the checked one)
  int repetitions = 5;      ///< timed launches; the median is the result
  bool flush_cache = true;  ///< write a buffer larger than the last-level cache before each repetition
  double budget_s = 0;      ///< stop measuring after this many seconds (0: no limit); the best so far stays
  std::string directory;    ///< where results are stored; default: the kernel cache's directory + "/tune"
  bool store = true;        ///< false: neither read nor write stored results
  /// Progress: a bar on a terminal, a line per configuration otherwise; null for none.
  std::ostream* progress = nullptr;
};

/// What became of one configuration.
struct Result {
  enum class Status : std::uint8_t {
    Ok,             ///< measured
    CheckFailed,    ///< the factory's kernel was rejected (CheckError) or the factory threw
    CompileFailed,  ///< NVRTC or LLVM refused it, or it could not be loaded
    LaunchRefused,  ///< its launch shape or resources are over the device's limits (LaunchError)
    RunFailed,      ///< it stopped with an ExecutionError (memcheck, unsupported on this device)
    Wrong,          ///< it ran and `check` said the answer is wrong
    NotMeasured,    ///< the time budget ran out first (not stored: a later run measures it)
  };
  Config config;
  Status status = Status::NotMeasured;
  double ms = std::numeric_limits<double>::infinity();  ///< median; infinity unless Ok
  double compile_ms = 0;
  std::string detail;   ///< the error's message, for a failure
  bool stored = false;  ///< read from an earlier run's results rather than measured now
  bool ok() const { return status == Status::Ok; }
};
const char* status_name(Result::Status s);

struct Report {
  std::string tuner, problem, device, toolchain;
  std::vector<Result> results;  ///< in the space's order
  int measured = 0;             ///< configurations measured in this run
  int reused = 0;               ///< configurations whose stored result was used
  int failed = 0;               ///< configurations scored as infinitely slow (this run or stored)
  int compile_threads = 0;
  double compile_wall_ms = 0;  ///< from the first compile started to the last one finished
  double total_ms = 0;
  std::string store_path;  ///< the results file ("" when not stored)

  /// The fastest measured configuration; nullptr when none was.
  const Result* best() const;
  /// A table: configuration, status, milliseconds, ratio to the best.
  std::string table() const;
  /// `param...,status,ms,compile_ms,detail` with a header line.
  std::string csv() const;
  /// An SVG heatmap of milliseconds over parameters `x` and `y` (the best over the other
  /// parameters at each cell); failed cells are grey and marked.
  std::string svg_heatmap(const std::string& x, const std::string& y) const;
};

/// Picks, at launch, the configuration the tuner found best for the class of a problem: the problem's
/// sizes go through `key_class` (the user's rounding: "M=1024" for every M from 513 to 1024, say),
/// and the best stored result of `tuner` for that key on this device and toolchain is the pick, or
/// `fallback` where none is stored. Tune each class with `Problem::key` set to its key. Picks are
/// remembered per key; safe to call from several threads.
class Dispatcher {
 public:
  using Sizes = std::map<std::string, std::int64_t>;
  struct Pick {
    Config config;
    std::string key;  ///< the class
    bool tuned;       ///< from stored results (else the fallback)
    double ms;        ///< the stored time (infinity for the fallback)
  };
  Dispatcher(std::string tuner, const Device& device, std::function<std::string(const Sizes&)> key_class,
             Config fallback, std::string directory = "");
  Pick pick(const Sizes& sizes) const;

 private:
  std::string tuner_, device_, toolchain_;
  std::function<std::string(const Sizes&)> key_class_;
  Config fallback_;
  std::string directory_;
  mutable std::mutex mu_;
  mutable std::map<std::string, Pick> picks_;
};

/// The placement advice's model `base` with its CPU figures measured on this host (docs/report.md):
/// probe kernels (copies in and out of the cache, arithmetic rounds, shuffle butterflies, rounds of
/// shared memory between barriers) timed on the CPU backend on one thread and counted by their own
/// cost reports, and the costs of a launch, a warp step, a byte (cached or not), and a lane exchange
/// and a barrier beyond a step solved from them. Where there is a GPU, its side's copies (a fixed cost
/// and a bandwidth between pinned memory and GPU 0) and a launch's latency are measured too. About a
/// second the first time in a process (the figures are kept); each side unchanged where this build
/// has no CPU backend or the host no GPU.
PlacementModel measured_placement_model(PlacementModel base = {});

/// Tunes `make` over `space` on `device` for `problem` (see the header comment). `make` is called
/// on the worker threads, several at once: it must be safe to call concurrently (building kernels
/// is; a counter it keeps must be atomic). `problem.run` and `problem.check` are called on the
/// calling thread only.
Report tune(const std::string& name, const Space& space, const std::function<Candidate(const Config&)>& make,
            const Problem& problem, const Device& device, const Options& options = {});

}  // namespace vantage::tune
