// The autotuner (include/vantage/tune.hpp) on a host device: every configuration of the space is
// built, compiled on worker threads and measured; a configuration that is rejected or gives a wrong
// answer is reported and scored as infinitely slow without stopping the run; results are stored, so
// a second run measures nothing and a run with one configuration added measures only that one; a
// time budget leaves configurations unmeasured and unstored; the reports say what happened.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>
#include <thread>

#include "vantage/vantage.hpp"

namespace vantage {
namespace {

namespace fs = std::filesystem;

Device host_device() { return Device::cpu_available() ? Device::cpu(2) : Device::interpreter(); }

/// A fresh directory for one test's stored results.
struct TempDir {
  fs::path path;
  explicit TempDir(const std::string& name) {
    path = fs::temp_directory_path() / ("vantage_tune_" + name + "_" + std::to_string(::getpid()));
    fs::remove_all(path);
    fs::create_directories(path);
  }
  ~TempDir() {
    std::error_code ec;
    fs::remove_all(path, ec);
  }
};

constexpr int kN = 5000;

/// y = 2 x + 1 with `threads` per block and `items` per thread. Two configurations are broken on
/// purpose: threads=512 items=8 writes to its const input (rejected by the checker), threads=64
/// items=8 computes 3 x + 1 (a wrong answer).
tune::Candidate make(const tune::Config& c) {
  const int threads = static_cast<int>(c.at("threads")), items = static_cast<int>(c.at("items"));
  KernelBuilder k("affine");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(threads);
  const bool wrong = threads == 64 && items == 8, broken = threads == 512 && items == 8;
  k.body([&](Scope& g) {
    lib::for_each(
        g, broken ? x : y, n, [&](Scope&, Expr i, ElemRef out) { out = x[i] * (wrong ? 3.0f : 2.0f) + 1.0f; },
        lib::Tile{items, lib::Layout::Striped});
  });
  lib::Tile tile{items, lib::Layout::Striped};
  return {k.build(), Grid{lib::blocks_for(kN, threads, tile), threads}, std::nullopt};
}

struct AffineProblem {
  std::vector<float> x = std::vector<float>(kN), y = std::vector<float>(kN);
  tune::Problem problem;
  AffineProblem() {
    for (int i = 0; i < kN; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i % 97) * 0.5f;
    problem.key = "n=" + std::to_string(kN);
    problem.run = [this](const Kernel& k, const Device& d, Grid g) { k.launch(d, g, kN, std::as_const(x), y); };
    problem.sizes = {{"n", kN}};
    problem.check = [this](std::string& why) {
      for (int i = 0; i < kN; ++i)
        if (y[static_cast<std::size_t>(i)] != 2.0f * x[static_cast<std::size_t>(i)] + 1.0f) {
          why = "y[" + std::to_string(i) + "] is " + std::to_string(y[static_cast<std::size_t>(i)]);
          return false;
        }
      return true;
    };
  }
};

tune::Space space(std::vector<std::int64_t> threads) {
  tune::Space s;
  s.param("threads", std::move(threads)).param("items", {1, 2, 4, 8});
  return s;
}

const tune::Result& result(const tune::Report& r, std::int64_t threads, std::int64_t items) {
  for (const auto& x : r.results)
    if (x.config.at("threads") == threads && x.config.at("items") == items) return x;
  throw std::runtime_error("no such configuration");
}

TEST(Tune, TheSpaceIsTheProductOfItsParametersUnderItsConstraints) {
  tune::Space s;
  s.param("a", {1, 2, 3}).param("b", {10, 20}).constraint([](const tune::Config& c) { return c.at("a") != 2; });
  auto cs = s.configs();
  ASSERT_EQ(cs.size(), 4u);
  EXPECT_EQ(tune::to_string(cs[0]), "a=1 b=10");
  EXPECT_EQ(tune::to_string(cs[1]), "a=1 b=20");
  EXPECT_EQ(tune::to_string(cs[2]), "a=3 b=10");
  EXPECT_EQ(tune::to_string(cs[3]), "a=3 b=20");
  EXPECT_TRUE(tune::Space{}.param("a", {}).configs().empty());
}

TEST(Tune, SixteenConfigurationsAreMeasuredAndFailuresScoredNotFatal) {
  TempDir dir("sixteen");
  AffineProblem p;
  tune::Options o;
  o.directory = dir.path.string();
  o.compile_threads = 2;
  o.repetitions = 3;
  std::ostringstream progress;
  o.progress = &progress;
  Device d = host_device();
  tune::Report r = tune::tune("affine", space({64, 128, 256, 512}), make, p.problem, d, o);
  ASSERT_EQ(r.results.size(), 16u);
  EXPECT_EQ(r.measured, 16);
  EXPECT_EQ(r.reused, 0);
  EXPECT_EQ(r.failed, 2);
  EXPECT_EQ(r.compile_threads, 2);
  const auto& broken = result(r, 512, 8);
  EXPECT_EQ(broken.status, tune::Result::Status::CheckFailed);
  EXPECT_TRUE(std::isinf(broken.ms));
  EXPECT_NE(broken.detail.find("error[V0302]"), std::string::npos) << broken.detail;  // x read in its own partition
  const auto& wrong = result(r, 64, 8);
  EXPECT_EQ(wrong.status, tune::Result::Status::Wrong);
  EXPECT_TRUE(std::isinf(wrong.ms));
  EXPECT_NE(wrong.detail.find("y[1] is 2.500000"), std::string::npos) << wrong.detail;
  for (const auto& x : r.results)
    if (&x != &broken && &x != &wrong) {
      EXPECT_TRUE(x.ok()) << tune::to_string(x.config) << ": " << x.detail;
      EXPECT_GT(x.ms, 0) << tune::to_string(x.config);
      EXPECT_TRUE(std::isfinite(x.ms));
    }
  ASSERT_NE(r.best(), nullptr);
  EXPECT_TRUE(r.best()->ok());
  for (const auto& x : r.results) {
    if (x.ok()) {
      EXPECT_LE(r.best()->ms, x.ms);
    }
  }
  EXPECT_TRUE(fs::exists(r.store_path)) << r.store_path;
  // A line per configuration when the progress stream is not a terminal.
  std::string lines = progress.str();
  EXPECT_NE(lines.find("[16/16]"), std::string::npos) << lines;
  EXPECT_NE(lines.find("threads=512: check failed"), std::string::npos) << lines;
}

// A random search measures its seeded sample of the space and leaves the rest unmeasured, saying why.
TEST(Tune, ARandomSearchMeasuresItsSampleOnly) {
  AffineProblem p;
  tune::Options o;
  o.store = false;
  o.compile_threads = 2;
  o.repetitions = 1;
  o.search = tune::Search::Random;
  o.samples = 4;
  o.seed = 7;
  Device d = host_device();
  tune::Report r = tune::tune("affine", space({64, 128, 256, 512}), make, p.problem, d, o);
  EXPECT_EQ(r.measured, 4);
  std::set<std::string> drawn;
  int left = 0;
  for (const auto& x : r.results) {
    if (x.status == tune::Result::Status::NotMeasured) {
      EXPECT_EQ(x.detail, "not drawn by the random search");
      ++left;
    } else {
      drawn.insert(tune::to_string(x.config));
    }
  }
  EXPECT_EQ(left, 12);
  tune::Report again = tune::tune("affine", space({64, 128, 256, 512}), make, p.problem, d, o);
  std::set<std::string> drawn_again;
  for (const auto& x : again.results)
    if (x.status != tune::Result::Status::NotMeasured) drawn_again.insert(tune::to_string(x.config));
  EXPECT_EQ(drawn, drawn_again) << "the same seed draws the same configurations";
  o.samples = 0;  // a quarter of the space
  EXPECT_EQ(tune::tune("affine", space({64, 128, 256, 512}), make, p.problem, d, o).measured, 4);
}

// Early stopping: configurations far slower than the best so far stop after two repetitions, so the
// run takes a fraction of the time and picks the same configuration. Each configuration's launch is
// padded by a sleep (1 ms for the fastest, 40 ms for the others) so that the times are not the host's
// noise.
TEST(Tune, EarlyStoppingCutsTheWallTimeWithTheSamePick) {
  AffineProblem p;
  tune::Problem slow = p.problem;
  slow.check = nullptr;
  slow.run = [&p](const Kernel& k, const Device& d, Grid g) {
    p.problem.run(k, d, g);
    std::this_thread::sleep_for(std::chrono::milliseconds(g.threads == 64 ? 1 : 40));
  };
  tune::Space s;
  s.param("threads", {64, 128, 256, 512}).param("items", {1});
  tune::Options o;
  o.store = false;
  o.compile_threads = 1;  // the configurations reach the timing loop in the space's order: the fast one first
  o.warmup = 0;
  o.flush_cache = false;
  Device d = host_device();
  o.repetitions = 1;
  tune::tune("warm", s, make, slow, d, o);  // every candidate compiled before the two timed runs
  o.repetitions = 10;
  o.early_stop = 0.5;
  tune::Report early = tune::tune("early", s, make, slow, d, o);
  o.early_stop = 0;
  tune::Report full = tune::tune("full", s, make, slow, d, o);
  ASSERT_NE(early.best(), nullptr);
  ASSERT_NE(full.best(), nullptr);
  EXPECT_EQ(tune::to_string(early.best()->config), tune::to_string(full.best()->config));
  EXPECT_EQ(early.best()->config.at("threads"), 64);
  int stopped = 0;
  for (const auto& x : early.results) stopped += x.detail.rfind("stopped after 2 of 10 repetitions", 0) == 0;
  EXPECT_EQ(stopped, 3);
  EXPECT_LE(early.total_ms * 2, full.total_ms) << "early " << early.total_ms << " ms, full " << full.total_ms << " ms";
}

// The dispatcher: each class of problem gets the configuration tuned best for it, a class never tuned
// the fallback. (Sleeps make threads=64 fastest for small problems and threads=256 for large ones.)
TEST(Tune, TheDispatcherPicksTheStoredBestForEachClassOfProblem) {
  TempDir dir("dispatch");
  AffineProblem p;
  auto key_class = [](const tune::Dispatcher::Sizes& s) {
    return std::string(s.at("n") <= 4096 ? "n<=4096" : "n>4096");
  };
  tune::Space space;
  space.param("threads", {64, 128, 256}).param("items", {1});
  tune::Options o;
  o.directory = dir.path.string();
  o.compile_threads = 1;
  o.repetitions = 2;
  o.warmup = 0;
  o.flush_cache = false;
  Device d = host_device();
  for (std::int64_t n : {1000, 100000}) {
    tune::Problem problem = p.problem;
    problem.check = nullptr;
    problem.key = key_class({{"n", n}});
    const std::int64_t fastest = n <= 4096 ? 64 : 256;
    problem.run = [&p, fastest](const Kernel& k, const Device& dev, Grid g) {
      p.problem.run(k, dev, g);
      std::this_thread::sleep_for(std::chrono::milliseconds(g.threads == fastest ? 1 : 15));
    };
    tune::tune("sleepy", space, make, problem, d, o);
  }
  tune::Dispatcher dispatch("sleepy", d, key_class, {{"threads", 128}, {"items", 1}}, dir.path.string());
  auto small = dispatch.pick({{"n", 3000}});
  EXPECT_TRUE(small.tuned);
  EXPECT_EQ(small.key, "n<=4096");
  EXPECT_EQ(small.config.at("threads"), 64);
  auto large = dispatch.pick({{"n", 1 << 20}});
  EXPECT_TRUE(large.tuned);
  EXPECT_EQ(large.config.at("threads"), 256);
  EXPECT_EQ(dispatch.pick({{"n", 17}}).config.at("threads"), 64) << "remembered per class";
  tune::Dispatcher untuned("never_tuned", d, key_class, {{"threads", 128}, {"items", 1}}, dir.path.string());
  auto fallback = untuned.pick({{"n", 3000}});
  EXPECT_FALSE(fallback.tuned);
  EXPECT_EQ(fallback.config.at("threads"), 128);
  EXPECT_TRUE(std::isinf(fallback.ms));
}

TEST(Tune, ASecondRunMeasuresOnlyTheConfigurationsItHasNoResultFor) {
  TempDir dir("resume");
  AffineProblem p;
  tune::Options o;
  o.directory = dir.path.string();
  o.repetitions = 2;
  Device d = host_device();
  std::atomic<int> made{0};  // the factory runs on the tuner's workers, several at once
  auto counting = [&](const tune::Config& c) {
    ++made;
    return make(c);
  };
  tune::Report first = tune::tune("affine", space({64, 128}), counting, p.problem, d, o);
  EXPECT_EQ(first.measured, 8);
  EXPECT_EQ(made, 8);

  made = 0;
  tune::Report again = tune::tune("affine", space({64, 128}), counting, p.problem, d, o);
  EXPECT_EQ(again.measured, 0);
  EXPECT_EQ(again.reused, 8);
  EXPECT_EQ(made, 0) << "nothing is built or compiled again";
  EXPECT_EQ(again.failed, 1) << "the stored wrong answer is still a failure";
  EXPECT_EQ(result(again, 64, 8).status, tune::Result::Status::Wrong);
  ASSERT_NE(again.best(), nullptr);
  ASSERT_NE(first.best(), nullptr);
  EXPECT_EQ(again.best()->config, first.best()->config);
  EXPECT_DOUBLE_EQ(again.best()->ms, first.best()->ms);

  // One configuration added (threads=256 items=1, through a constraint): only it is measured.
  made = 0;
  tune::Space grown = space({64, 128, 256});
  grown.constraint([](const tune::Config& c) { return c.at("threads") != 256 || c.at("items") == 1; });
  tune::Report grew = tune::tune("affine", grown, counting, p.problem, d, o);
  EXPECT_EQ(grew.results.size(), 9u);
  EXPECT_EQ(grew.measured, 1);
  EXPECT_EQ(grew.reused, 8);
  EXPECT_EQ(made, 1);
  EXPECT_FALSE(result(grew, 256, 1).stored);
  EXPECT_TRUE(result(grew, 64, 1).stored);

  // Another problem key is another set of results.
  tune::Problem other = p.problem;
  other.key = "n=5000 (another key)";
  made = 0;
  tune::Report fresh = tune::tune("affine", space({64}), counting, other, d, o);
  EXPECT_EQ(fresh.measured, 4);
  EXPECT_EQ(made, 4);
}

TEST(Tune, ATimeBudgetLeavesTheRestUnmeasuredAndUnstored) {
  TempDir dir("budget");
  AffineProblem p;
  tune::Options o;
  o.directory = dir.path.string();
  o.budget_s = 1e-9;  // spent before the first measurement
  tune::Report r = tune::tune("affine", space({64, 128}), make, p.problem, host_device(), o);
  EXPECT_EQ(r.measured, 0);
  EXPECT_EQ(r.best(), nullptr);
  for (const auto& x : r.results) EXPECT_EQ(x.status, tune::Result::Status::NotMeasured);
  o.budget_s = 0;
  tune::Report later = tune::tune("affine", space({64, 128}), make, p.problem, host_device(), o);
  EXPECT_EQ(later.reused, 0) << "nothing unmeasured was stored";
  EXPECT_EQ(later.measured, 8);
}

TEST(Tune, ReportsAreATableACsvAndAnSvgHeatmap) {
  TempDir dir("reports");
  AffineProblem p;
  tune::Options o;
  o.directory = dir.path.string();
  o.repetitions = 1;
  tune::Report r = tune::tune("affine", space({64, 512}), make, p.problem, host_device(), o);
  std::string table = r.table(), csv = r.csv(), svg = r.svg_heatmap("threads", "items");
  EXPECT_NE(table.find("<- best"), std::string::npos) << table;
  EXPECT_NE(table.find("check failed"), std::string::npos) << table;
  std::istringstream lines(csv);
  std::string header;
  std::getline(lines, header);
  EXPECT_EQ(header, "items,threads,status,ms,compile_ms,stored,detail");
  int rows = 0;
  for (std::string l; std::getline(lines, l);) ++rows;
  EXPECT_EQ(rows, 8);
  EXPECT_NE(csv.find("8,64,wrong answer,inf"), std::string::npos) << csv;
  EXPECT_EQ(svg.rfind("<svg", 0), 0u);
  EXPECT_NE(svg.find("failed"), std::string::npos);
  int rects = 0;
  for (std::size_t at = svg.find("<rect"); at != std::string::npos; at = svg.find("<rect", at + 1)) ++rects;
  EXPECT_EQ(rects, 8) << "one cell per (threads, items)";
}

}  // namespace
}  // namespace vantage
