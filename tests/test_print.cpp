// `Scope::print`: one line from each thread that runs it, with printf's conversions, the same text on
// every device (the interpreter and the CPU backend write the line the GPU's printf writes), its
// values' reads checked as everywhere, and a format that cannot be read refused at the user's line.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <sstream>
#include <string>
#include <vector>

#include "host_cuda.hpp"
#include "kernels/paper_kernels.hpp"
#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

/// What `launch` wrote to standard output on `d`, its lines sorted where the device sets no order
/// between threads (a GPU) unless `one_thread`: one thread's lines come in its order on every device.
template <class F>
std::string printed(const Device& d, F launch, bool one_thread = false) {
  ::testing::internal::CaptureStdout();
  launch();
  d.synchronize();
  std::string out = ::testing::internal::GetCapturedStdout();
  if (!d.is_gpu() || one_thread) return out;
  std::vector<std::string> lines;
  std::istringstream in(out);
  for (std::string line; std::getline(in, line);) lines.push_back(line + "\n");
  std::sort(lines.begin(), lines.end());
  std::string sorted;
  for (const auto& l : lines) sorted += l;
  return sorted;
}

// Every scalar type, in its default conversion and in printf's, from one thread: the same text on
// every device, and the text printf writes.
TEST(Print, EveryDeviceWritesTheLinePrintfWrites) {
  KernelBuilder k("print_types");
  auto a = k.param<int>("a");
  auto l = k.param<std::int64_t>("l");
  auto f = k.param<float>("f");
  auto d = k.param<double>("d");
  auto out = k.param<GlobalPtr<int>>("out", extent(1));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::by_one_thread(g, out, [&](Scope& th, View one) {
      th.print("i8 {} u8 {} i16 {} u16 {} i32 {} u32 {} i64 {} u64 {}",
               {cast<std::int8_t>(a), cast<std::uint8_t>(a), cast<std::int16_t>(a), cast<std::uint16_t>(a), a,
                cast<std::uint32_t>(a), l, cast<std::uint64_t>(l)});
      th.print("hex {:x} {:X} {:o} {:#x} {:+d} [{:5d}] [{:-5d}] [{:05d}]",
               {a, cast<std::int16_t>(a), cast<std::uint8_t>(a), 255, 5, a, a, a});
      th.print("f32 {} {:.3f} {:e} f64 {} {:.17g} f16 {} bf16 {} fp8 {} [{:8.2f}]",
               {f, f, f, d, d, cast(ScalarType::F16, f), cast(ScalarType::BF16, f), cast(ScalarType::F8E4M3, f), d});
      th.print("bool {} {} as int {:d} {{braces}} 100% done", {a<0, a> 0, a < 0});
      one[0] = 1;
    });
  });
  Kernel kernel = k.build();
  const std::string want =
      "i8 -7 u8 249 i16 -7 u16 65529 i32 -7 u32 4294967289 i64 -5000000000 u64 18446744068709551616\n"
      "hex fffffff9 FFF9 371 0xff +5 [   -7] [-7   ] [-0007]\n"
      "f32 0.1 0.100 1.000000e-01 f64 0.333333 0.33333333333333331 f16 0.0999756 bf16 0.100098 fp8 0.101562 "
      "[    0.33]\n"
      "bool true false as int 1 {braces} 100% done\n";
  for (const Device& dev : test_support::every_device()) {
    std::vector<int> o(1, 0);
    // One thread prints the four lines: in its order on a GPU too (sorted, as for many threads, they
    // came back in another order on the H200 of 2026-11-30).
    const std::string got = printed(
        dev,
        [&] {
          test_support::launch_on(kernel, dev, Grid{1, 32}, -7, std::int64_t{-5000000000LL}, 0.1f, 1.0 / 3.0, o);
        },
        /*one_thread=*/true);
    EXPECT_EQ(got, want) << dev.name();
    EXPECT_EQ(o[0], 1) << dev.name();
  }
  // The CUDA: printf with the same conversions, widened arguments, the % doubled.
  const std::string src = specialize_for(kernel, Spec{}).source;
  EXPECT_NE(src.find("printf(\"bool %s %s as int %lld {braces} 100%% done\\n\""), std::string::npos) << src;
  EXPECT_NE(src.find("printf(\"hex %llx %llX %llo %#llx %+lld [%5lld] [%-5lld] [%05lld]\\n\""), std::string::npos)
      << src;
  REQUIRE_NVRTC();
  const Compiled c = compile(kernel, Spec{});
  EXPECT_EQ(c.log, "");
  EXPECT_NE(kernel.ptx(Spec{}).find("vprintf"), std::string::npos);
}

// Each thread writes its own line: all of them, each whole, on every device (in thread order on the
// interpreter's forward order and the CPU backend's one block; a GPU's are compared sorted).
TEST(Print, EachThreadThatRunsItWritesItsLine) {
  KernelBuilder k("print_threads");
  auto n = k.param<int>("n");
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each(g, y, n, [&](Scope& th, Expr i, ElemRef e) {
      th.print("thread {:02d} sees {}", {i, i * i});
      e = i;
    });
  });
  Kernel kernel = k.build();
  std::vector<std::string> lines;
  for (int i = 0; i < 50; ++i) {
    char line[64];
    std::snprintf(line, sizeof line, "thread %02d sees %d\n", i, i * i);
    lines.push_back(line);
  }
  for (const Device& dev : test_support::every_device()) {
    std::vector<int> y(50, -1);
    std::string got = printed(dev, [&] { test_support::launch_on(kernel, dev, Grid{1, 64}, 50, y); });
    std::vector<std::string> want = lines;
    if (dev.kind() == DeviceKind::Interpreter && got.rfind("thread 49", 0) == 0) std::reverse(want.begin(), want.end());
    std::string joined;
    for (const auto& l : want) joined += l;
    EXPECT_EQ(got, joined) << dev.name();
  }
}

/// `text`'s lines, sorted.
std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// The generated CUDA's printf, run: compiled as C++ on host threads (under AddressSanitizer and
// UndefinedBehaviorSanitizer), each thread's line is the interpreter's, to the byte. The format holds
// what its C string literal must escape (quotes, a backslash, a question mark pair, a byte past
// ASCII, a percent sign) and the conversions that widen and mask.
TEST(Print, TheGeneratedPrintfWritesTheInterpretersLines) {
  KernelBuilder k("print_on_host");
  auto n = k.param<int>("n");
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::for_each(g, y, n, [&](Scope& th, Expr i, ElemRef e) {
      th.print("\"t\\{}\" ??= 100% caf\xc3\xa9 {:x} {:#o} [{:+5d}] {} {} {:X}",
               {i, 0 - i, cast<std::uint8_t>(i * 37), i - 3, i % 2 == 0, cast<std::int64_t>(i) * -3000000000LL,
                cast<std::int16_t>(0 - i)});
      e = i;
    });
  });
  Kernel kernel = k.build();
  const std::int64_t count = 40;
  std::vector<int> ys(static_cast<std::size_t>(count), -1);
  const std::string want = printed(Device::interpreter(), [&] {
    kernel.launch(Device::interpreter(), Grid{2, 32}, 40, ys);
  });
  ASSERT_EQ(sorted_lines(want).size(), 40u) << want;
  const Specialized s = specialize_for(kernel, Spec{});
  ASSERT_TRUE(test_support::runs_on_host(s.source)) << s.source;
  test_support::HostLaunch l{s.source, s.entry, 2, 32, {}};
  l.args = {test_support::HostArg::of("int", static_cast<double>(count)),
            test_support::HostArg::of("int", std::vector<double>(static_cast<std::size_t>(count), -1.0))};
  const test_support::HostLaunches run = test_support::run_launches_on_host({l});
  ASSERT_TRUE(run.ok) << run.problem;
  EXPECT_EQ(sorted_lines(run.printed), sorted_lines(want)) << s.source;
}

// A value is an expression every backend evaluates: a read in it outside its buffer is a memcheck
// finding at the user's line on the interpreter and the CPU backend, as it is on a GPU.
TEST(Print, ItsValuesReadsAreCheckedOnEveryDevice) {
  KernelBuilder k("print_a_read");
  auto n = k.param<int>("n");
  auto xs = k.param<GlobalPtr<const int>>("xs");
  k.block_threads(32);
  int line = 0;
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    line = __LINE__ + 1;
    g.group(thread(1), [&](Scope& th) { th.print("{}", {xs[t + n]}); });
  });
  Kernel kernel = k.build();
  const std::vector<int> x(32, 5);
  for (const Device& d : test_support::every_device()) {
    if (d.is_gpu()) continue;  // on a GPU the check reports at the next synchronize, as test_gpu's do
    ::testing::internal::CaptureStdout();
    try {
      kernel.launch(d, Grid{1, 32}, 1, x);  // thread 31 reads xs[32]
      d.synchronize();
      ADD_FAILURE() << "the read outside 'xs' was not reported on " << d.name();
    } catch (const ExecutionError& e) {
      EXPECT_EQ(e.check(), "memcheck") << d.name() << ": " << e.what();
      ASSERT_FALSE(e.locs().empty()) << e.what();
      EXPECT_EQ(static_cast<int>(e.locs()[0].line), line) << d.name() << ": " << e.what();
    }
    (void)::testing::internal::GetCapturedStdout();
  }
}

// A value is checked as any expression is: a variable out of its scope (a handle kept past the
// group that declared it) is V0207 at the print, as it is at a let; the print took it unchecked, and
// its generated CUDA named a variable that did not exist there.
TEST(Print, AValueOutOfItsScopeIsRefusedAsAnyExpressionIs) {
  KernelBuilder k("print_leaked");
  auto out = k.param<GlobalPtr<int>>("out", extent(32));
  k.block_threads(32);
  int line = 0;
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    Expr leaked;
    g.partition(
        out, thread(1), [&](Expr i) { return t + i; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            leaked = th.let("v", t * 2);
            o[0] = leaked;
          });
        });
    line = __LINE__ + 1;
    g.print("{}", {leaked});
  });
  EXPECT_TRUE(testing::rejected_saying(k, "V0207", line, "test_print.cpp", "variable 'v' is not in scope here"));
}

// A format that cannot be read, one whose places do not match its values, a conversion for another
// kind of value, or more than 16 values: V0503 at the user's line, naming what is wrong.
TEST(Print, AFormatThatCannotBeReadIsRefusedAtTheUsersLine) {
  struct Bad {
    std::string format;
    int values;   // i32 values given
    bool floats;  // an f32 value instead
    const char* says;
  };
  const std::vector<Bad> bad = {
      {"a lone { here", 0, false, "the '{' at character 8 is not closed (write '{{' for a brace)"},
      {"a lone } here", 0, false, "a '}' at character 8 closes no '{' (write '}}' for a brace)"},
      {"{x}", 1, false, "'{x}' is not '{}' or '{:SPEC}'"},
      {"{:q}", 1, false, "'{:q}' is not a spec"},
      {"{:123d}", 1, false, "'{:123d}' is not a spec"},
      {"{} and {}", 1, false, "has 2 places for values, and 1 value is given"},
      {"none", 2, false, "has 0 places for values, and 2 values are given"},
      {"{:f}", 1, false, "value 1 is i32, which '%f' does not print (d i u x X o do)"},
      {"{:d}", 1, true, "value 1 is f32, which '%d' does not print (e E f F g G do)"},
      {"{:#d}", 1, false, "puts '#' on '%d'"},
      {"{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}{}", 17, false, "a print takes at most 16 values, not 17"},
  };
  for (const Bad& b : bad) {
    SCOPED_TRACE(b.format);
    int line = 0;
    KernelBuilder k("bad_print");
    k.block_threads(32);
    k.body([&](Scope& g) {
      std::vector<ExprArg> values;
      for (int i = 0; i < b.values; ++i) values.push_back(b.floats ? ExprArg(1.5f) : ExprArg(g.id(thread(1))));
      switch (values.size()) {
        case 0: line = __LINE__, g.print(b.format); break;
        case 1: line = __LINE__, g.print(b.format, {values[0]}); break;
        case 2: line = __LINE__, g.print(b.format, {values[0], values[1]}); break;
        default:
          line = __LINE__, g.print(b.format, {values[0], values[1], values[2], values[3], values[4], values[5],
                                              values[6], values[7], values[8], values[9], values[10], values[11],
                                              values[12], values[13], values[14], values[15], values[16]});
      }
    });
    EXPECT_TRUE(testing::rejected_saying(k, "V0503", line, "tests/test_print.cpp", b.says));
  }
}

}  // namespace
}  // namespace vantage
