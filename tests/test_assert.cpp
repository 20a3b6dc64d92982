// `Scope::assert_that`: each thread that runs it checks its condition, and a false one fails the
// launch with ExecutionError "assert" naming the text, the user's line, the block and the thread, on
// every device (at once on the interpreter; recorded as a failed access is on the CPU backend and a
// GPU, whose threads go on); a true one changes nothing; a condition that is not a bool is refused.
#include <gtest/gtest.h>

#include <bit>
#include <cstdint>
#include <string>
#include <vector>

#include "host_cuda.hpp"
#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

int assert_line = 0;

/// y[i] = sqrt(x[i]) for every i < n, each thread asserting its x[i] is not negative first.
Kernel checked_sqrt() {
  KernelBuilder k("checked_sqrt");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::for_each(g, y, n, [&](Scope& th, Expr i, ElemRef e) {
      assert_line = __LINE__ + 1;
      th.assert_that(x[i] >= 0.0f, "x is not \"negative\"");
      e = sqrt(x[i]);
    });
  });
  return k.build();
}

std::vector<float> squares(int n) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>(i * i);
  return v;
}

// Every condition true: the launch runs as it would without the assertion, on every device.
TEST(Assert, ATrueConditionChangesNothing) {
  const Kernel kernel = checked_sqrt();
  for (const Device& d : test_support::every_device()) {
    const std::vector<float> x = squares(100);
    std::vector<float> y(100, -1.0f);
    EXPECT_NO_THROW({
      test_support::launch_on(kernel, d, Grid{4, 32}, 100, x, y);
      d.synchronize();
    }) << d.name();
    for (int i = 0; i < 100; ++i) EXPECT_EQ(y[static_cast<std::size_t>(i)], static_cast<float>(i)) << d.name();
  }
  // Every stage shows it: the lowered IR with its text and site, the cost report with its read.
  const std::string lowered = kernel.lowered(Spec{});
  EXPECT_NE(lowered.find("assert_that(\"x is not \\\"negative\\\"\""), std::string::npos) << lowered;
  const CostReport report = kernel.report(Spec{}, {{"n", 100}}, 4);
  EXPECT_GT(report.global_bytes, 0);
}

// One element negative: the launch fails naming the text, the line, its block and its thread.
TEST(Assert, AFalseConditionFailsTheLaunchAtTheUsersLineOnEveryDevice) {
  const Kernel kernel = checked_sqrt();
  for (const Device& d : test_support::every_device()) {
    std::vector<float> x = squares(100);
    x[37] = -2.0f;  // block 1, thread 5
    std::vector<float> y(100, -1.0f);
    try {
      test_support::launch_on(kernel, d, Grid{4, 32}, 100, x, y);
      d.synchronize();
      ADD_FAILURE() << "the false assertion was not reported on " << d.name();
    } catch (const ExecutionError& e) {
      const std::string what = e.what();
      EXPECT_EQ(e.check(), "assert") << d.name() << ": " << what;
      EXPECT_NE(
          what.find("kernel 'checked_sqrt': block 1 thread 5: assert_that(\"x is not \\\"negative\\\"\") failed at "),
          std::string::npos)
          << d.name() << ": " << what;
      EXPECT_NE(what.find("test_assert.cpp:" + std::to_string(assert_line)), std::string::npos) << what;
      ASSERT_EQ(e.locs().size(), 1u) << what;
      EXPECT_EQ(static_cast<int>(e.locs()[0].line), assert_line) << d.name();
    }
    EXPECT_NO_THROW(d.synchronize()) << d.name() << ": the failure was reported twice";
    // The device is still usable: the next launch runs and is right.
    const std::vector<float> good = squares(100);
    EXPECT_NO_THROW({
      test_support::launch_on(kernel, d, Grid{4, 32}, 100, good, y);
      d.synchronize();
    }) << d.name();
    EXPECT_EQ(y[99], 99.0f) << d.name();
  }
}

// The generated CUDA records a failure as a failed access is (its own site, a bound of -1) and
// nothing when every condition holds: run as C++ on host threads.
TEST(Assert, TheGeneratedCudaRecordsAFailureOnHostThreads) {
  const Kernel kernel = checked_sqrt();
  const Specialized s = specialize_for(kernel, Spec{});
  ASSERT_NE(s.source.find("vt_fail(vt_err, 0, 0, -1)"), std::string::npos) << s.source;
  ASSERT_EQ(s.checks.size(), 1u);
  EXPECT_TRUE(s.checks[0].assertion);
  EXPECT_EQ(s.checks[0].memory, "x is not \"negative\"");
  EXPECT_EQ(static_cast<int>(s.checks[0].line), assert_line);
  ASSERT_TRUE(test_support::runs_on_host(s.source)) << s.source;
  std::vector<test_support::HostLaunch> launches;
  for (bool bad : {false, true}) {
    std::vector<float> x = squares(70);
    if (bad) x[69] = -1.0f;
    test_support::HostLaunch l{s.source, s.entry, 3, 32, {}};
    l.args = {test_support::HostArg::of("int", 70.0), test_support::HostArg::of("float", x),
              test_support::HostArg::of("float", std::vector<double>(70, -1.0))};
    launches.push_back(l);
  }
  const test_support::HostLaunches run = test_support::run_launches_on_host(launches);
  ASSERT_TRUE(run.ok) << run.problem;
  EXPECT_FALSE(run.results[0].check_failed);
  EXPECT_TRUE(run.results[1].check_failed);
  // The thread went on: its y is the square root of its x (NaN), the others' right.
  EXPECT_EQ(std::bit_cast<float>(static_cast<std::uint32_t>(run.results[1].buffers[1][68])), 68.0f);
  REQUIRE_NVRTC();
  EXPECT_EQ(compile(kernel, Spec{}).log, "");
}

// In a device function: its own line, reported from the kernel's launch on every device; and
// generated CUDA that NVRTC compiles (the function takes the error record too).
TEST(Assert, InADeviceFunctionItIsReportedAtTheFunctionsLine) {
  FunctionBuilder f("checked_half");
  f.requires_perspective(thread(1));
  f.returns(ScalarType::I32);
  auto x = f.param<int>("x");
  const int line = __LINE__ + 2;
  f.body([&](Scope& s) {
    s.assert_that(x % 2 == 0, "x is even");
    s.ret(x / 2);
  });
  DeviceFunction fn = f.build();
  KernelBuilder k("halves");
  auto n = k.param<int>("n");
  auto xs = k.param<GlobalPtr<const int>>("xs", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(n));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::for_each(g, out, n, [&](Scope& th, Expr i, ElemRef e) { e = th.call("h", fn, {xs[i]}); });
  });
  const Kernel kernel = k.build();
  for (const Device& d : test_support::every_device()) {
    std::vector<int> x(40, 8), y(40, 0);
    test_support::launch_on(kernel, d, Grid{2, 32}, 40, x, y);
    d.synchronize();
    EXPECT_EQ(y[39], 4) << d.name();
    x[33] = 7;
    try {
      test_support::launch_on(kernel, d, Grid{2, 32}, 40, x, y);
      d.synchronize();
      ADD_FAILURE() << "the false assertion was not reported on " << d.name();
    } catch (const ExecutionError& e) {
      EXPECT_EQ(e.check(), "assert") << e.what();
      EXPECT_NE(std::string(e.what()).find("block 1 thread 1: assert_that(\"x is even\")"), std::string::npos)
          << e.what();
      ASSERT_EQ(e.locs().size(), 1u) << e.what();
      EXPECT_EQ(static_cast<int>(e.locs()[0].line), line) << d.name();
    }
  }
  REQUIRE_NVRTC();
  EXPECT_EQ(compile(kernel, Spec{}).log, "");
}

// The condition's reads are ordered as any read: a barrier is placed between the neighbours' writes
// to shared memory and an assertion that reads them (racecheck on the interpreter would say so).
TEST(Assert, ItsReadsAreOrderedAsAnyReadIs) {
  KernelBuilder k("neighbour");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        out, block(1), [&](Expr i) { return blk * 64 + i; },
        [&](Scope& g, View out) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<int>("s", 64);
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                s, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = t * 3; }); });
            b.partition(
                out, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o_t) {
                  b.group(thread(1), [&](Scope& th) {
                    th.assert_that(s[(t + 1) % 64] == (t + 1) % 64 * 3, "the neighbour wrote its place");
                    o_t[0] = 1;
                  });
                });
          });
        });
  });
  const Kernel kernel = k.build();
  EXPECT_NE(specialize_for(kernel, Spec{}).source.find("__syncthreads()"), std::string::npos);
  for (const Device& d : test_support::every_device()) {
    std::vector<int> o(128, 0);
    EXPECT_NO_THROW({
      test_support::launch_on(kernel, d, Grid{2, 64}, o);
      d.synchronize();
    }) << d.name();
    EXPECT_EQ(o[127], 1) << d.name();
  }
}

// The condition is a bool: anything else is V0503 at the user's line.
TEST(Assert, AConditionThatIsNotABoolIsRefusedAtTheUsersLine) {
  int line = 0;
  auto not_bool = [&](KernelBuilder& k) {
    auto n = k.param<int>("n");
    auto out = k.param<GlobalPtr<int>>("out", extent(1));
    k.body([&](Scope& g) {
      lib::by_one_thread(g, out, [&](Scope& th, View o) {
        line = __LINE__ + 1;
        th.assert_that(n, "n is not zero");
        o[0] = n;
      });
    });
  };
  EXPECT_TRUE(testing::rejects_kernel("V0503", line, not_bool, "test_assert.cpp"));
}

}  // namespace
}  // namespace vantage
