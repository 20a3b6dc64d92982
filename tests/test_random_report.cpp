// Random programs for the cost report (docs/report.md). The report follows a few blocks and loop
// iterations and counts the rest from them; a number it calls exact must be what the launch does.
// The generator writes thread code whose reads of global and shared memory (2-, 4- and 8-byte
// elements) take indices built from the thread, the block, loop counters and a value carried across
// iterations, through sums, scalings, divisions, remainders, shifts, masks and clamps; under
// branches on those (and, rarely, on loaded data), in counted loops whose bounds may differ between
// lanes or blocks, with breaks, and in while loops. Each runs on the interpreter with every request
// measured (InterpreterOptions::measure), and every number its report calls exact must equal the
// measurement. So that the test cannot pass by calling everything an estimate, most accesses must
// come out exact over the sweep. VANTAGE_REPORT_RUNS overrides the number of programs (default 120,
// 30 under a sanitizer), VANTAGE_REPORT_FIRST the first seed; VANTAGE_REPORT_VERBOSE prints each
// program's two reports.
#include <gtest/gtest.h>

#include <cstdlib>
#include <vector>

#include "random_pick.hpp"
#include "report_oracle.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

class ReportGen : test_support::Picker {
 public:
  explicit ReportGen(std::uint64_t seed) : Picker(seed) {}

  int threads = 64;
  std::int64_t blocks = 1;
  int shared_len = 64;
  std::int64_t len[3] = {1, 1, 1};  ///< elements each of x16, x32, x64 needs

  Kernel build() {
    threads = any(std::vector<int>{32, 48, 64, 96, 128});
    blocks = any(std::vector<std::int64_t>{1, 3, 8, 9, 12, 20, 33});
    if (threads * blocks > 1600) blocks = 12;
    shared_len = threads * any(std::vector<int>{1, 2, 4, 8});
    KernelBuilder k("random_report");
    n_ = k.param<int>("n");
    x_[0] = k.param<GlobalPtr<const half>>("x16");
    x_[1] = k.param<GlobalPtr<const float>>("x32");
    x_[2] = k.param<GlobalPtr<const double>>("x64");
    auto out = k.param<GlobalPtr<float>>("out", extent(n_));
    k.block_threads(threads);
    k.body([&](Scope& g) {
      auto blk = g.let("blk", g.id(block(1)));
      const int T = threads;
      g.partition(
          out, block(1), [&](Expr i) { return blk * T + i; },
          [&](Scope& g, View out_b) {
            g.group(block(1), [&](Scope& b) {
              shared_ = b.shared<float>("s", shared_len);
              auto t = b.let("t", b.id(thread(1)));
              const int per = shared_len / T;
              b.partition(
                  shared_, thread(1), [&](Expr i) { return t * per + i; },
                  [&](Scope& b, View s_t) {
                    b.group(thread(1), [&](Scope& th) {
                      th.for_("i", 0, per, [&](Scope&, Expr i) { s_t[i] = cast(ScalarType::F32, t + i); });
                    });
                  });
              b.partition(
                  out_b, thread(1), [&](Expr i) { return t + i; },
                  [&](Scope& b, View o_t) {
                    b.group(thread(1), [&](Scope& th) {
                      acc_ = th.let("acc", 0.0f);
                      carried_ = th.let("ci", 0);
                      terms_ = {{t, threads - 1}, {blk, blocks - 1}, {carried_ % 16, 15}};
                      stmts(th, 0);
                      o_t[0] = acc_;
                    });
                  });
            });
          });
    });
    return k.build();
  }

 private:
  struct Term {
    Expr e;
    std::int64_t max;  ///< the largest value it takes (it never goes below 0)
  };

  /// A term of an index: a position, a counter or the carried value, maybe through an operation
  /// that makes it move other than by one step per step.
  Term term() {
    Term x = any(terms_);
    switch (pick(9)) {
      case 0: {
        const int q = any(std::vector<int>{2, 3, 4, 8, 32});
        return {x.e / q, x.max / q};
      }
      case 1: {
        const int q = any(std::vector<int>{2, 3, 4, 8, 32});
        return {x.e % q, std::min<std::int64_t>(x.max, q - 1)};
      }
      case 2: {
        const int c = any(std::vector<int>{2, 3, 8, 16, 32, 33, 64});
        return {x.e * c, x.max * c};
      }
      case 3: {
        const int c = pick(static_cast<int>(x.max) + 2);
        return {min(x.e, c), std::min<std::int64_t>(x.max, c)};
      }
      case 4: {
        const int s = 1 + pick(3);
        return {x.e >> s, x.max >> s};
      }
      case 5: {
        const int m = (1 << (1 + pick(4))) - 1;
        return {x.e & m, std::min<std::int64_t>(x.max, m)};
      }
      case 6: return {x.max - x.e, x.max};  // moves the other way
      default: return x;
    }
  }
  /// An index of at least 0 and at most `max`.
  Expr index(std::int64_t& max) {
    Term first = term();
    Expr e = first.e;
    max = first.max;
    for (int n = pick(3); n > 0; --n) {
      Term x = term();
      e = e + x.e;
      max += x.max;
    }
    if (chance(2)) {
      const int c = pick(40);
      e = e + c;
      max += c;
    }
    if (chance(4)) return cast(chance(2) ? ScalarType::I64 : ScalarType::U32, e);  // other index types
    return e;
  }
  /// A read of global or shared memory, added to the accumulator.
  Expr read() {
    std::int64_t max = 0;
    Expr i = index(max);
    if (chance(3)) {
      if (max < shared_len && chance(2)) return shared_[i];
      return chance(2) ? shared_[i % shared_len] : shared_[min(i, shared_len - 1)];
    }
    const int w = pick(3);
    len_[w] = std::max(len_[w], max + 1);
    len[w] = len_[w];
    return cast(ScalarType::F32, x_[w][i]);
  }
  /// A condition on the positions and counters (and, one time in eight, on loaded data).
  Expr condition() {
    if (chance(8)) {
      std::int64_t max = 0;
      Expr i = index(max);
      len_[1] = std::max(len_[1], max + 1);
      len[1] = len_[1];
      return x_[1][i] > 0.5f;
    }
    Term x = term();
    const int c = pick(static_cast<int>(x.max) + 2);
    switch (pick(6)) {
      case 5: return x.e < term().e;
      case 0: return x.e < c;
      case 1: return x.e >= c;
      case 2: return x.e % any(std::vector<int>{2, 3, 4}) == 0;
      case 3: return (x.e + term().e) % 4 < 2;
      default: return x.e == c;
    }
  }

  void stmts(Scope& th, int depth) {
    for (int n = 1 + pick(depth == 0 ? 4 : 3); n > 0; --n) stmt(th, depth);
  }
  void stmt(Scope& th, int depth) {
    switch (pick(depth < 3 ? 10 : 4)) {
      case 0:
      case 1:
      case 2: th.assign(acc_, acc_ + read()); break;
      case 3: {
        Term x = term();
        th.assign(carried_, carried_ + x.e % 8);
        break;
      }
      case 4:
        if (chance(2))
          th.if_(condition(), [&](Scope& th) { stmts(th, depth + 1); });
        else
          th.if_(
              condition(), [&](Scope& th) { stmts(th, depth + 1); }, [&](Scope& th) { stmts(th, depth + 1); });
        break;
      case 5:
      case 6:
      case 7: loop(th, depth); break;
      case 8: {  // a while loop whose lanes may leave at different rounds
        auto w = th.let("w", 0);
        const int rounds = 1 + pick(static_cast<int>(std::min<std::int64_t>(6, kWork / rounds_)));
        const std::int64_t outer = rounds_;
        rounds_ *= rounds;
        const std::int64_t saved = terms_.size();
        th.while_(w < rounds, [&](Scope& th) {
          terms_.push_back({w, rounds - 1});
          stmts(th, depth + 1);
          th.assign(w, w + 1 + (chance(2) ? Expr(0) : term().e % 2));
        });
        terms_.resize(static_cast<std::size_t>(saved));
        rounds_ = outer;
        break;
      }
      default: th.assign(acc_, acc_ + read()); break;
    }
  }
  /// A counted loop: short or long (long ones are counted from representatives), its bounds the same
  /// in every lane and block or not, now and then with a break.
  void loop(Scope& th, int depth) {
    std::vector<int> choices;  // the rounds of every loop, nested, stay few: the interpreter runs them all
    for (int c : {2, 3, 4, 5, 6, 9, 17, 33})
      if (rounds_ * (c + 3) <= kWork) choices.push_back(c);
    if (choices.empty()) return;
    const int trips = any(choices);
    Expr begin = 0, end = trips;
    std::int64_t most = trips;
    switch (pick(6)) {
      case 0: begin = terms_[0].e % 3; break;  // lanes start apart
      case 1:
        end = trips + terms_[0].e % 4;  // lanes stop apart
        most = trips + 3;
        break;
      case 2: end = trips - terms_[1].e % 3; break;  // blocks stop apart
      default: break;
    }
    const bool step2 = chance(6);
    const std::size_t saved = terms_.size();
    const std::int64_t outer = rounds_;
    rounds_ *= most;
    auto body = [&](Scope& th, Expr k) {
      terms_.push_back({k, most - 1});
      stmts(th, depth + 1);
      if (chance(5)) th.if_(condition(), [&](Scope& th) { chance(3) ? th.continue_() : th.break_(); });
    };
    if (step2)
      th.for_("k", begin, end, 2, body);
    else
      th.for_("k", begin, end, body);
    terms_.resize(saved);
    rounds_ = outer;
  }

  Expr n_;
  View x_[3];
  View shared_;
  Var acc_, carried_;
  std::vector<Term> terms_;
  std::int64_t len_[3] = {1, 1, 1};
  static constexpr std::int64_t kWork = 240;  ///< rounds of the innermost loop body per thread, at most
  std::int64_t rounds_ = 1;                   ///< of the loops around the statement being written
};

// The sweep's breadth belongs to the plain pass; under a sanitizer (about ten times slower) a quarter
// of it checks the analyzer's memory safety.
#ifdef VANTAGE_TEST_SANITIZED
constexpr int kDefaultRuns = 30;
#else
constexpr int kDefaultRuns = 120;
#endif

int env_int(const char* name, int fallback) {
  const char* v = std::getenv(name);
  return v ? std::atoi(v) : fallback;
}

// Every number the report calls exact is the measured one, over random programs; and most accesses
// are exact (a report that called everything an estimate would pass the first part alone).
TEST(RandomReport, ExactNumbersAreWhatTheLaunchDoes) {
  const int runs = env_int("VANTAGE_REPORT_RUNS", kDefaultRuns), first = env_int("VANTAGE_REPORT_FIRST", 0);
  const bool verbose = std::getenv("VANTAGE_REPORT_VERBOSE") != nullptr;
  InterpreterOptions io;
  io.measure = true;
  io.checks = false;
  const Device interp = Device::interpreter(io);
  int accesses = 0, exact = 0, exact_reports = 0, sampled = 0;
  for (int seed = first; seed < first + runs; ++seed) {
    ReportGen gen(static_cast<std::uint64_t>(seed));
    const Kernel kernel = gen.build();
    const int n = gen.threads * static_cast<int>(gen.blocks);
    std::vector<half> x16(static_cast<std::size_t>(gen.len[0]));
    std::vector<float> x32(static_cast<std::size_t>(gen.len[1])), out(static_cast<std::size_t>(n));
    std::vector<double> x64(static_cast<std::size_t>(gen.len[2]));
    for (std::size_t i = 0; i < x32.size(); ++i) x32[i] = static_cast<float>(i % 3) * 0.5f;  // branches on data split
    const CostReport predicted =
        kernel.report(Spec{}, {{"n", n}, {"x16", gen.len[0]}, {"x32", gen.len[1]}, {"x64", gen.len[2]}}, gen.blocks);
    const LaunchReport run = kernel.launch(interp, Grid{gen.blocks, gen.threads}, n, std::as_const(x16),
                                           std::as_const(x32), std::as_const(x64), out);
    ASSERT_TRUE(run.measured);
    const std::string diff = test_support::report_mismatches(predicted, *run.measured);
    if (verbose || !diff.empty())
      std::printf("seed %d: %lld blocks of %d threads\n%s\n%s\nmeasured:\n%s\n", seed,
                  static_cast<long long>(gen.blocks), gen.threads, kernel.ir_text().c_str(), predicted.text().c_str(),
                  run.measured->text().c_str());
    ASSERT_EQ(diff, "") << "seed " << seed << " (VANTAGE_REPORT_FIRST=" << seed << " VANTAGE_REPORT_RUNS=1 "
                        << "VANTAGE_REPORT_VERBOSE=1 to see it)";
    for (const auto& a : predicted.accesses) {
      ++accesses;
      exact += a.exact;
    }
    exact_reports += predicted.exact;
    sampled += predicted.sampled_blocks < predicted.blocks;
  }
  std::printf("%d programs (%d with sampled blocks): %d of %d accesses exact, %d reports exact\n", runs, sampled, exact,
              accesses, exact_reports);
  EXPECT_GE(exact * 2, accesses) << "most accesses of these programs can be counted exactly";
}

}  // namespace
}  // namespace vantage
