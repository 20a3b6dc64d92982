// The interpreter's fibers (jit/interp/fibers.cpp) on their own: the run handed on where a fiber
// waits, fibers inside fibers stopped by a sibling's error with their frames unwound, waits nothing
// can end reported as stuck, and stacks as deep as an OS thread's, reused from run to run.
#include <gtest/gtest.h>

#include <functional>
#include <stdexcept>
#include <string>
#include <vector>

#include "jit/interp/fibers.h"

namespace vantage::interp::detail {
namespace {

struct Stuck : std::runtime_error {
  explicit Stuck(std::vector<Fibers::Wait> w) : std::runtime_error("stuck"), waits(std::move(w)) {}
  std::vector<Fibers::Wait> waits;
};

Fibers make_fibers() {
  return Fibers([](const std::vector<Fibers::Wait>& waits) { return std::make_exception_ptr(Stuck(waits)); });
}

/// Counts the frames that were entered and have not been left (unwound or returned).
struct Frame {
  explicit Frame(int& live) : live_(live) { ++live_; }
  ~Frame() { --live_; }
  Frame(const Frame&) = delete;
  Frame& operator=(const Frame&) = delete;

 private:
  int& live_;
};

TEST(Fibers, EachWaitHandsTheRunToTheNextAndTheRunEndsWhenEveryFiberHas) {
  // A producer and two consumers: each consumer takes item i only once the producer has made it,
  // and the producer makes item i + 1 only once both consumers took item i.
  Fibers f = make_fibers();
  int made = 0, taken[2] = {0, 0};
  std::string log;
  auto consumer = [&](int c) {
    return [&, c] {
      for (int i = 1; i <= 3; ++i) {
        f.wait_until([&] { return made >= i; }, [c] { return Fibers::Wait{c, "item"}; });
        taken[c] = i;
        log += static_cast<char>('a' + c);
        f.progress();
      }
    };
  };
  auto producer = [&] {
    for (int i = 1; i <= 3; ++i) {
      f.wait_until([&] { return taken[0] >= i - 1 && taken[1] >= i - 1; }, [] { return Fibers::Wait{2, "slot"}; });
      made = i;
      log += 'p';
      f.progress();
    }
  };
  f.run_all({consumer(0), consumer(1), producer});
  EXPECT_EQ(taken[0], 3);
  EXPECT_EQ(taken[1], 3);
  EXPECT_EQ(log, "pabpabpab");  // the fibers in their order, each to its next wait
}

TEST(Fibers, FibersInsideFibersAreStoppedByASiblingsErrorAndTheirFramesUnwound) {
  // Two fibers each run fibers of their own that wait for what never comes; a third fails. The run
  // throws the failure once every fiber, at every depth, has been stopped and unwound.
  Fibers f = make_fibers();
  int live = 0, started = 0;
  bool never = false;
  auto waiting = [&](int who) {
    return [&, who] {
      Frame frame(live);
      ++started;
      f.wait_until([&] { return never; }, [who] { return Fibers::Wait{who, "never"}; });
    };
  };
  auto parent = [&](int first) {
    return [&, first] {
      Frame frame(live);
      f.run_all({waiting(first), waiting(first + 1)});
    };
  };
  auto failing = [&] {
    Frame frame(live);
    throw std::runtime_error("the third fails");
  };
  try {
    f.run_all({parent(0), parent(10), failing});
    FAIL() << "the failure was not thrown";
  } catch (const std::runtime_error& e) {
    EXPECT_STREQ(e.what(), "the third fails");
  }
  EXPECT_EQ(started, 4);
  EXPECT_EQ(live, 0) << "a stopped fiber left frames that were never unwound";
  // The same Fibers runs again, on the stacks those fibers left.
  int sum = 0;
  f.run_all({[&] { sum += 1; }, [&] { sum += 2; }});
  EXPECT_EQ(sum, 3);
}

TEST(Fibers, WaitsNothingCanEndAreReportedWithWhatEachWaitsFor) {
  Fibers f = make_fibers();
  bool never = false;
  auto waiting = [&](int who) {
    return [&, who] {
      f.wait_until([&] { return never; }, [who] { return Fibers::Wait{who, "w" + std::to_string(who)}; });
    };
  };
  try {
    f.run_all({waiting(0), waiting(1), waiting(2)});
    FAIL() << "a run whose fibers all wait for nothing ended";
  } catch (const Stuck& s) {
    ASSERT_EQ(s.waits.size(), 3u);
    for (int i = 0; i < 3; ++i) {
      EXPECT_EQ(s.waits[static_cast<std::size_t>(i)].who, i);
      EXPECT_EQ(s.waits[static_cast<std::size_t>(i)].what, "w" + std::to_string(i));
    }
  }
}

/// A recursion `depth` frames deep, each with a kilobyte of its own.
int deep(int depth) {
  volatile char pad[1024];
  pad[0] = static_cast<char>(depth % 2);
  return depth == 0 ? 0 : deep(depth - 1) + pad[0];
}

TEST(Fibers, AFiberRecursesAsDeepAsAThreadAndManyRunInTurnOnReusedStacks) {
  Fibers f = make_fibers();
  int result = -1;
  f.run_all({[&] { result = deep(2000); }});  // two megabytes and more
  EXPECT_EQ(result, 1000);
  // A block's worth of fibers, twice: the second run takes the first's stacks.
  for (int round = 0; round < 2; ++round) {
    int turns = 0;
    std::vector<std::function<void()>> bodies;
    for (int i = 0; i < 1024; ++i)
      bodies.push_back([&, i] {
        f.wait_until([&] { return turns >= i; }, nullptr);
        ++turns;
        f.progress();
      });
    f.run_all(std::move(bodies));
    EXPECT_EQ(turns, 1024);
  }
}

}  // namespace
}  // namespace vantage::interp::detail
