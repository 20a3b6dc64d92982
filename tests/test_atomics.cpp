// Atomic loads and stores, the wrapping counters (Inc, Dec) and the orderings (docs/semantics.md,
// "Atomics"): the same values on every device (the interpreter both ways round, the CPU backend, a
// GPU where present), as generated CUDA on host threads, and compiled by NVRTC; and each misuse
// refused at the user's line.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <string>
#include <vector>

#include "host_cuda.hpp"
#include "kernels/stages.hpp"
#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

using test_support::HostArg;
using test_support::HostLaunch;

/// 64 threads, each with its own element of `a` and `d` holding its id: Inc and Dec with bound 31
/// there (every edge: below, at and past the bound, and 0), the old values exchanged into `olds`;
/// and all 64 on two shared counters (Inc from 0 and Dec from 3, bound 9), whose final values do
/// not depend on the order.
Kernel wrapping(Atomicity how) {
  KernelBuilder k("wrapping");
  auto a = k.param<GlobalPtr<std::uint32_t>>("a", extent(64));
  auto d = k.param<GlobalPtr<std::uint32_t>>("d", extent(64));
  auto olds = k.param<GlobalPtr<std::uint32_t>>("olds", extent(128));
  auto counters = k.param<GlobalPtr<std::uint32_t>>("counters", extent(2));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.group(thread(1), [&](Scope& th) {
      Var up = th.atomic("up", AtomicOp::Inc, a, t, 31u, how);
      Var down = th.atomic("down", AtomicOp::Dec, d, t, 31u, how);
      th.atomic_store(olds, t, up, how.order == MemoryOrder::Release ? how : Atomicity(how.scope));
      th.atomic(AtomicOp::Exch, olds, t + 64, down, how);
      th.atomic(AtomicOp::Inc, counters, 0, 9u, how);
      th.atomic(AtomicOp::Dec, counters, 1, 9u, how);
    });
  });
  return k.build();
}

struct Wrapped {
  std::vector<std::uint32_t> a, d, olds, counters;
};
Wrapped wrapped_start() {
  Wrapped w{
      std::vector<std::uint32_t>(64), std::vector<std::uint32_t>(64), std::vector<std::uint32_t>(128, 7), {0u, 3u}};
  for (std::uint32_t t = 0; t < 64; ++t) w.a[t] = w.d[t] = t;
  return w;
}

TEST(Atomics, IncrementAndDecrementWrapAtTheirBoundAsCudasDoOnEveryDevice) {
  std::vector<std::uint32_t> want_a(64), want_d(64), want_olds(128);
  for (std::uint32_t t = 0; t < 64; ++t) {
    want_a[t] = t >= 31 ? 0 : t + 1;
    want_d[t] = t == 0 || t > 31 ? 31 : t - 1;
    want_olds[t] = want_olds[t + 64] = t;
  }
  // 64 increments of a counter wrapping at 9 (ten values), and 64 decrements from 3.
  const std::vector<std::uint32_t> want_counters = {64 % 10, (3 + 10 * 7 - 64) % 10};
  std::vector<HostLaunch> launches;
  for (Atomicity how : {Atomicity(), Atomicity(AtomicScope::Block, MemoryOrder::AcqRel),
                        Atomicity(AtomicScope::System, MemoryOrder::Release)}) {
    const Kernel kernel = wrapping(how);
    for (const Device& dev : test_support::every_device()) {
      Wrapped w = wrapped_start();
      test_support::launch_on(kernel, dev, Grid{1, 64}, w.a, w.d, w.olds, w.counters);
      EXPECT_EQ(w.a, want_a) << dev.name();
      EXPECT_EQ(w.d, want_d) << dev.name();
      EXPECT_EQ(w.olds, want_olds) << dev.name();
      EXPECT_EQ(w.counters, want_counters) << dev.name();
    }
    const Specialized s = specialize_for(kernel, Spec{});
    if (how.order == MemoryOrder::Relaxed) {
      EXPECT_NE(s.source.find("atomicInc(&a["), std::string::npos) << s.source;
      EXPECT_NE(s.source.find("atomicDec(&d["), std::string::npos) << s.source;
    } else {
      const std::string order = how.order == MemoryOrder::AcqRel ? "__NV_ATOMIC_ACQ_REL" : "__NV_ATOMIC_RELEASE";
      const std::string scope =
          how.scope == AtomicScope::Block ? "__NV_THREAD_SCOPE_BLOCK" : "__NV_THREAD_SCOPE_SYSTEM";
      EXPECT_NE(s.source.find("vt_atomic_inc<" + order + ", " + scope + ">(&a["), std::string::npos) << s.source;
      EXPECT_NE(s.source.find("vt_atomic_dec<" + order + ", " + scope + ">(&d["), std::string::npos) << s.source;
    }
    if (nvrtc_available()) {
      EXPECT_EQ(compile(kernel, Spec{}).log, "");
    }
    Wrapped w = wrapped_start();
    HostLaunch l{s.source, s.entry, 1, 64, {}};
    l.args = {HostArg::of("unsigned", w.a), HostArg::of("unsigned", w.d), HostArg::of("unsigned", w.olds),
              HostArg::of("unsigned", w.counters)};
    launches.push_back(l);
  }
  // The generated CUDA on host threads: the same words.
  const test_support::HostLaunches run = test_support::run_launches_on_host(launches);
  ASSERT_TRUE(run.ok) << run.problem;
  for (const auto& r : run.results) {
    ASSERT_EQ(r.buffers.size(), 4u);
    EXPECT_FALSE(r.check_failed);
    EXPECT_EQ(r.buffers[0], std::vector<long long>(want_a.begin(), want_a.end()));
    EXPECT_EQ(r.buffers[1], std::vector<long long>(want_d.begin(), want_d.end()));
    EXPECT_EQ(r.buffers[2], std::vector<long long>(want_olds.begin(), want_olds.end()));
    EXPECT_EQ(r.buffers[3], std::vector<long long>(want_counters.begin(), want_counters.end()));
  }
}

/// A value handed from each block to the next: block b's thread 0 waits until block b - 1 has
/// released its flag (an acquire load), reads that block's value and sum (relaxed atomic loads, an
/// f32 and an i64), and publishes its own (relaxed stores), then releases its flag. Every other
/// thread of every block adds to a total with an ordered add, and the ordered forms of the other
/// read-modify-writes run on words of their own.
Kernel handed_on() {
  KernelBuilder k("handed_on");
  auto flags = k.param<GlobalPtr<int>>("flags", extent(8));
  auto vals = k.param<GlobalPtr<float>>("vals", extent(8));
  auto sums = k.param<GlobalPtr<std::int64_t>>("sums", extent(8));
  auto words = k.param<GlobalPtr<std::uint32_t>>("words", extent(6));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.group(block(1), [&](Scope& b) {
      auto t = b.let("t", b.id(thread(1)));
      b.group(thread(1), [&](Scope& th) {
        th.if_(
            t == 0,
            [&](Scope& th) {
              Var before = th.let("before", 1.5f);
              Var sum = th.let("sum", std::int64_t{0});
              th.if_(blk > 0, [&](Scope& th) {
                Var ready = th.atomic_load("ready", flags, blk - 1, MemoryOrder::Acquire);
                th.while_(ready == 0, [&](Scope& th) {
                  th.assign(ready, th.atomic_load("again", flags, blk - 1, MemoryOrder::Acquire));
                });
                th.assign(before, th.atomic_load("v", vals, blk - 1) + 1.0f);
                th.assign(sum, th.atomic_load("s", sums, blk - 1, AtomicScope::Device));
              });
              th.atomic_store(vals, blk, before);
              th.atomic_store(sums, blk, sum + cast<std::int64_t>(blk) * 1000000000000LL);
              th.atomic_store(flags, blk, 1, {AtomicScope::Device, MemoryOrder::Release});
            },
            [&](Scope& th) {
              const auto tu = cast<std::uint32_t>(t);
              th.atomic(AtomicOp::Add, words, 0, tu, MemoryOrder::AcqRel);
              th.atomic(AtomicOp::Max, words, 1, tu * 3u, MemoryOrder::Release);
              th.atomic(AtomicOp::Min, words, 2, tu + 5u, MemoryOrder::Acquire);
              th.atomic(AtomicOp::Or, words, 3, Expr(1u) << (tu % 32u), {AtomicScope::System, MemoryOrder::AcqRel});
              th.atomic(AtomicOp::Xor, words, 4, tu, MemoryOrder::Release);
              th.atomic_cas("won", words, 5, 0u, tu, MemoryOrder::AcqRel);
            });
      });
    });
  });
  return k.build();
}

TEST(Atomics, AcquireAndReleaseHandEachBlocksValueToTheNextOnEveryDevice) {
  const Kernel kernel = handed_on();
  const int blocks = 8;
  std::vector<float> want_vals(blocks);
  std::vector<std::int64_t> want_sums(blocks);
  for (int b = 0; b < blocks; ++b) {
    want_vals[b] = 1.5f + static_cast<float>(b);
    want_sums[b] = (b == 0 ? 0 : want_sums[b - 1]) + static_cast<std::int64_t>(b) * 1000000000000LL;
  }
  // Threads 1..63 of each of the eight blocks: their ids summed, the largest tripled, the smallest
  // plus 5 (below the 1000 it starts at), every bit, an even number of each id xored (none left),
  // and one winner of the compare and swap from 0.
  std::uint32_t add = 0;
  for (std::uint32_t t = 1; t < 64; ++t) add += t;
  auto check = [&](const std::string& who, const std::vector<float>& vals, const std::vector<std::int64_t>& sums,
                   const std::vector<std::uint32_t>& words) {
    EXPECT_EQ(vals, want_vals) << who;
    EXPECT_EQ(sums, want_sums) << who;
    EXPECT_EQ(words[0], 8 * add) << who;
    EXPECT_EQ(words[1], 63u * 3u) << who;
    EXPECT_EQ(words[2], 6u) << who;
    EXPECT_EQ(words[3], 0xffffffffu) << who;
    EXPECT_EQ(words[4], 0u) << who;
    EXPECT_TRUE(words[5] >= 1u && words[5] <= 63u) << who << ": one thread's compare and swap wins, " << words[5];
  };
  for (const Device& dev : test_support::every_device()) {
    std::vector<int> flags(blocks, 0);
    std::vector<float> vals(blocks, -1.0f);
    std::vector<std::int64_t> sums(blocks, -1);
    std::vector<std::uint32_t> words = {0, 0, 1000, 0, 0, 0};
    test_support::launch_on(kernel, dev, Grid{blocks, 64}, flags, vals, sums, words);
    check(dev.name(), vals, sums, words);
    EXPECT_EQ(flags, std::vector<int>(blocks, 1)) << dev.name();
  }
  const Specialized s = specialize_for(kernel, Spec{});
  for (const char* form : {"vt_atomic_load<__NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE>(&flags[",
                           "vt_atomic_load<__NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE>(&vals[",
                           "vt_atomic_store<__NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE>(&flags[",
                           "__nv_atomic_fetch_add(&words[0], ", "__NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_SYSTEM)",
                           "vt_atomic_cas<__NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE_DEVICE>(&words[5]"})
    EXPECT_NE(s.source.find(form), std::string::npos) << form << " in\n" << s.source;
  if (nvrtc_available()) {
    EXPECT_EQ(compile(kernel, Spec{}).log, "");
  }
  if (Device::cpu_available()) {  // the CPU backend's orderings are LLVM's
    const std::string ir = kernel.llvm_ir(Spec{});
    for (const char* form : {"load atomic i32", "acquire, align 4", "store atomic i32", "release, align 4",
                             "atomicrmw add ptr", "acq_rel, align 4", "cmpxchg ptr", "acq_rel acquire"})
      EXPECT_NE(ir.find(form), std::string::npos) << form << " in\n" << ir;
  }
  // The generated CUDA on host threads (a host thread per GPU thread, the blocks in turn).
  HostLaunch l{s.source, s.entry, blocks, 64, {}};
  l.args = {HostArg::of("int", std::vector<int>(blocks, 0)), HostArg::of("float", std::vector<float>(blocks, -1.0f)),
            HostArg::of("long long", std::vector<std::int64_t>(blocks, -1)),
            HostArg::of("unsigned", std::vector<std::uint32_t>{0, 0, 1000, 0, 0, 0})};
  const test_support::HostLaunches run = test_support::run_launches_on_host({l});
  ASSERT_TRUE(run.ok) << run.problem;
  ASSERT_EQ(run.results.size(), 1u);
  const auto& got = run.results[0].buffers;
  ASSERT_EQ(got.size(), 4u);
  std::vector<float> vals;
  for (long long bits : got[1]) {
    const auto b = static_cast<std::int32_t>(bits);
    float f;
    std::memcpy(&f, &b, 4);
    vals.push_back(f);
  }
  std::vector<std::uint32_t> words(got[3].begin(), got[3].end());
  check("host threads", vals, std::vector<std::int64_t>(got[2].begin(), got[2].end()), words);
}

// An exchange whose old value is not taken only writes (docs/semantics.md): a relaxed or release one
// is printed as that atomic store (st.relaxed or st.release: a warp's neighbouring lanes write one
// coalesced request, where atomicExch is an L2 atomic a lane) and is LLVM's atomic store on the CPU;
// an acquiring one, or one whose old value is taken, stays an exchange. The same values everywhere.
TEST(Atomics, AnExchangeWhoseOldValueIsNotTakenIsAnAtomicStore) {
  KernelBuilder k("write_only_exchanges");
  auto ints = k.param<GlobalPtr<int>>("ints", extent(128));
  auto doubles = k.param<GlobalPtr<double>>("doubles", extent(64));
  auto words = k.param<GlobalPtr<std::uint32_t>>("words", extent(128));
  auto olds = k.param<GlobalPtr<int>>("olds", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.group(thread(1), [&](Scope& th) {
      th.atomic(AtomicOp::Exch, ints, t, t * 3);
      th.atomic(AtomicOp::Exch, doubles, t, cast<double>(t) + 0.5, AtomicScope::System);
      th.atomic(AtomicOp::Exch, words, t, cast<std::uint32_t>(t) + 7u, MemoryOrder::Release);
      th.atomic(AtomicOp::Exch, words, t + 64, cast<std::uint32_t>(t) + 9u, MemoryOrder::Acquire);
      Var old = th.atomic("old", AtomicOp::Exch, ints, t + 64, t + 1);
      th.atomic_store(olds, t, old);
    });
  });
  const Kernel kernel = k.build();
  std::vector<int> want_ints(128), want_olds(64);
  std::vector<double> want_doubles(64);
  std::vector<std::uint32_t> want_words(128);
  for (int t = 0; t < 64; ++t) {
    want_ints[t] = 3 * t;
    want_ints[64 + t] = t + 1;
    want_olds[t] = -t;
    want_doubles[t] = t + 0.5;
    want_words[t] = static_cast<std::uint32_t>(t) + 7u;
    want_words[64 + t] = static_cast<std::uint32_t>(t) + 9u;
  }
  for (const Device& dev : test_support::every_device()) {
    std::vector<int> ints_v(128), olds_v(64, 99);
    for (int t = 0; t < 64; ++t) ints_v[64 + t] = -t;
    std::vector<double> doubles_v(64, -1.0);
    std::vector<std::uint32_t> words_v(128, 0);
    test_support::launch_on(kernel, dev, Grid{1, 64}, ints_v, doubles_v, words_v, olds_v);
    EXPECT_EQ(ints_v, want_ints) << dev.name();
    EXPECT_EQ(doubles_v, want_doubles) << dev.name();
    EXPECT_EQ(words_v, want_words) << dev.name();
    EXPECT_EQ(olds_v, want_olds) << dev.name();
  }
  const std::string src = specialize_for(kernel, Spec{}).source;
  for (const char* form :
       {"vt_atomic_store<__NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_DEVICE>(&ints[",
        "vt_atomic_store<__NV_ATOMIC_RELAXED, __NV_THREAD_SCOPE_SYSTEM>(&doubles[",
        "vt_atomic_store<__NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE>(&words[",
        "vt_atomic_exchange<__NV_ATOMIC_ACQUIRE, __NV_THREAD_SCOPE_DEVICE>(&words[", "? atomicExch(&ints["})
    EXPECT_NE(src.find(form), std::string::npos) << form << " in\n" << src;
  EXPECT_EQ(src.find("atomicExch(&ints[t]"), std::string::npos) << src;
  if (nvrtc_available()) {
    EXPECT_EQ(compile(kernel, Spec{}).log, "");
  }
  if (Device::cpu_available()) {
    const std::string ir = kernel.llvm_ir(Spec{});
    for (const char* form : {"store atomic i32", "store atomic double", "release, align 4", "atomicrmw xchg ptr"})
      EXPECT_NE(ir.find(form), std::string::npos) << form << " in\n" << ir;
    std::size_t xchg = 0;
    for (auto at = ir.find("atomicrmw xchg"); at != std::string::npos; at = ir.find("atomicrmw xchg", at + 1)) ++xchg;
    EXPECT_EQ(xchg, 2u) << "the acquiring exchange and the one whose old value is taken\n" << ir;
  }
}

// Each misuse at the user's line: a load that releases, a store that acquires (V0506), an ordering
// on a 16-bit float and a counter on anything but u32 (V0505), an atomic load of const memory and
// a store asked for a value.
TEST(Atomics, OrderingsAndOperationsThatDoNotFitAreRefusedAtTheUsersLine) {
  struct Case {
    const char* code;
    const char* says;
    std::function<void(Scope&, const View&, const View&, const View&, int&)> body;
  };
  const std::vector<Case> cases = {
      {"V0506", "an atomic load cannot be release",
       [](Scope& th, const View& w, const View&, const View&, int& line) {
         line = __LINE__, th.atomic_load("x", w, 0, MemoryOrder::Release);
       }},
      {"V0506", "an atomic store cannot be acq_rel",
       [](Scope& th, const View& w, const View&, const View&, int& line) {
         line = __LINE__, th.atomic_store(w, 0, 1u, MemoryOrder::AcqRel);
       }},
      {"V0505", "the acquire ordering is not supported on f16",
       [](Scope& th, const View&, const View& h, const View&, int& line) {
         line = __LINE__, th.atomic(AtomicOp::Add, h, 0, cast(ScalarType::F16, Expr(1.0f)), MemoryOrder::Acquire);
       }},
      {"V0505", "atomic Inc is not supported on i32 by any target (it is for u32)",
       [](Scope& th, const View&, const View&, const View& i, int& line) {
         line = __LINE__, th.atomic(AtomicOp::Inc, i, 0, 5);
       }},
      {"V0505", "atomic Load is not supported on f16",
       [](Scope& th, const View&, const View& h, const View&, int& line) {
         line = __LINE__, th.atomic_load("x", h, 0);
       }},
      {"V0503", "an atomic store yields no value",
       [](Scope& th, const View& w, const View&, const View&, int& line) {
         line = __LINE__, th.atomic("x", AtomicOp::Store, w, 0, 1u);
       }},
  };
  for (const Case& c : cases) {
    int line = 0;
    KernelBuilder k("misfit");
    auto w = k.param<GlobalPtr<std::uint32_t>>("w", extent(1));
    auto h = k.param<GlobalPtr<half>>("h", extent(1));
    auto i = k.param<GlobalPtr<int>>("i", extent(1));
    k.block_threads(32);
    k.body([&](Scope& g) { g.group(thread(1), [&](Scope& th) { c.body(th, w, h, i, line); }); });
    auto refused = testing::rejected_saying(k, c.code, line, "tests/test_atomics.cpp", c.says);
    EXPECT_TRUE(refused) << c.says;
  }
  int line = 0;
  KernelBuilder k("const_load");
  auto in = k.param<GlobalPtr<const int>>("in", extent(1));
  k.block_threads(32);
  k.body([&](Scope& g) { g.group(thread(1), [&](Scope& th) { line = __LINE__, th.atomic_load("x", in, 0); }); });
  auto refused =
      testing::rejected_saying(k, "V0310", line, "tests/test_atomics.cpp", "no atomic load of 'in' is needed");
  EXPECT_TRUE(refused);
}

// ------------------------------------------------------------------ bit_cast
/// Each thread takes one word: its f32's bits as u32 and i32, and the f32 those bits make again;
/// an f64 likewise through u64; and an i32 seen as u32 and back.
Kernel bit_casts() {
  KernelBuilder k("bit_casts");
  auto words = k.param<GlobalPtr<std::uint32_t>>("words", extent(32));
  auto wide = k.param<GlobalPtr<std::uint64_t>>("wide", extent(32));
  auto out = k.param<GlobalPtr<std::uint32_t>>("out", extent(32 * 4));
  auto out64 = k.param<GlobalPtr<std::uint64_t>>("out64", extent(32));
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.group(thread(1), [&](Scope& th) {
      Var f = th.let("f", bit_cast<float>(words[t]));
      th.atomic_store(out, t * 4, bit_cast<std::uint32_t>(f));
      th.atomic_store(out, t * 4 + 1, cast<std::uint32_t>(bit_cast<int>(f) >> 31));  // the sign, arithmetic
      th.atomic_store(out, t * 4 + 2, bit_cast<std::uint32_t>(f * 2.0f));
      th.atomic_store(out, t * 4 + 3, bit_cast<std::uint32_t>(bit_cast<int>(words[t]) + 1));
      Var d = th.let("d", bit_cast<double>(wide[t]));
      th.atomic_store(out64, t, bit_cast<std::uint64_t>(bit_cast<std::int64_t>(d)));
    });
  });
  return k.build();
}

TEST(Semantics, BitCastGivesTheSameBitsOnEveryDevice) {
  const Kernel kernel = bit_casts();
  // 1, -0, +inf, -inf, a quiet NaN, the smallest subnormal, the largest finite, -1.5, and patterns.
  std::vector<std::uint32_t> words = {0x3f800000u, 0x80000000u, 0x7f800000u, 0xff800000u,
                                      0x7fc00000u, 0x00000001u, 0x7f7fffffu, 0xbfc00000u};
  std::vector<std::uint64_t> wide = {0x3ff0000000000000ull, 0x8000000000000000ull, 0x7ff0000000000000ull,
                                     0x7ff8000000000000ull, 0x0000000000000001ull, 0xc00921fb54442d18ull};
  for (std::uint32_t i = 0; words.size() < 32; ++i) words.push_back(0x40490fdbu + i * 0x01234567u % 0x3f000000u);
  for (std::uint64_t i = 0; wide.size() < 32; ++i) wide.push_back(0x400921fb54442d18ull + i * 0x0123456789abull);
  std::vector<std::uint32_t> want(32 * 4);
  std::vector<std::uint64_t> want64(32);
  for (int t = 0; t < 32; ++t) {
    const float f = std::bit_cast<float>(words[t]);
    want[t * 4] = words[t];
    want[t * 4 + 1] = static_cast<std::uint32_t>(std::bit_cast<std::int32_t>(f) >> 31);
    want[t * 4 + 2] = std::bit_cast<std::uint32_t>(f * 2.0f);
    want[t * 4 + 3] = static_cast<std::uint32_t>(static_cast<std::int32_t>(words[t] + 1u));
    want64[t] = wide[t];
  }
  for (const Device& dev : test_support::every_device()) {
    std::vector<std::uint32_t> out(32 * 4, 7);
    std::vector<std::uint64_t> out64(32, 7);
    test_support::launch_on(kernel, dev, Grid{1, 32}, words, wide, out, out64);
    // A NaN that arithmetic makes has the device's payload: on a GPU its canonical 0x7fffffff for the
    // quiet NaN times 2 (the H200 of 2026-11-30), a NaN whatever its bits; elsewhere the operand's,
    // quieted, bit for bit (docs/semantics.md).
    for (int t = 0; t < 32; ++t)
      if (dev.is_gpu() && std::isnan(std::bit_cast<float>(words[t]))) {
        EXPECT_TRUE(std::isnan(std::bit_cast<float>(out[t * 4 + 2]))) << dev.name() << ": " << out[t * 4 + 2];
        out[t * 4 + 2] = want[t * 4 + 2];
      }
    EXPECT_EQ(out, want) << dev.name();
    EXPECT_EQ(out64, want64) << dev.name();
  }
  const Specialized s = specialize_for(kernel, Spec{});
  for (const char* form : {"__uint_as_float(static_cast<unsigned>(", "static_cast<unsigned>(__float_as_uint(",
                           "static_cast<int>(__float_as_uint(", "__longlong_as_double(static_cast<long long>("})
    EXPECT_NE(s.source.find(form), std::string::npos) << form << " in\n" << s.source;
  if (nvrtc_available()) {
    EXPECT_EQ(compile(kernel, Spec{}).log, "");
  }
  // Sizes that differ, and bool, are refused at the user's line.
  for (int which = 0; which < 2; ++which) {
    int line = 0;
    KernelBuilder r("bad_bit_cast");
    auto o = r.param<GlobalPtr<float>>("o", extent(1));
    r.block_threads(32);
    r.body([&](Scope& g) {
      g.claim(o, thread(1), [&](Scope& g, View v) {
        g.split(Level::Thread, {{1, [&](Scope&) {
                                   if (which == 0)
                                     line = __LINE__, v[0] = bit_cast<float>(std::int64_t{1});
                                   else
                                     line = __LINE__, v[0] = cast<float>(bit_cast<bool>(1));
                                 }}});
      });
    });
    auto refused = testing::rejected_saying(r, "V0702", line, "tests/test_atomics.cpp",
                                            which == 0 ? "not i64 to f32" : "not i32 to bool");
    EXPECT_TRUE(refused);
  }
}

// Scope::nanosleep, a spin loop's back-off: CUDA's __nanosleep in the generated code (the duration
// clamped to what PTX takes where the checker could not see it), `nanosleep.u32` in the PTX and
// NANOSLEEP in the SASS; from any perspective; on the interpreter and the CPU backend the threads go
// on at once and the kernel computes what it computes without it.
TEST(Nanosleep, IsCudasSleepOnAGpuAndNothingElsewhere) {
  KernelBuilder k("sleepy");
  auto n = k.param<int>("n");
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    g.nanosleep(100);  // the block's threads, all of them
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return t + i; },
        [&](Scope& g, View mine) {
          g.group(thread(1), [&](Scope& th) {
            th.nanosleep(n * t);  // a duration known at run time only
            mine[0] = t * 3;
          });
        });
  });
  Kernel kernel = k.build();
  const std::string src = specialize_for(kernel, Spec{}).source;
  EXPECT_NE(src.find("__nanosleep(static_cast<unsigned>(min(max(100, 0), 1000000)));"), std::string::npos) << src;
  EXPECT_NE(src.find("__nanosleep(static_cast<unsigned>(min(max(vt_mul(n, t), 0), 1000000)));"), std::string::npos)
      << src;
  for (const Device& d : test_support::every_device()) {
    std::vector<int> o(64, -1), want(64);
    for (int t = 0; t < 64; ++t) want[static_cast<std::size_t>(t)] = 3 * t;
    test_support::launch_on(kernel, d, Grid{1, 64}, 1000, o);
    EXPECT_EQ(o, want) << d.name();
  }
  REQUIRE_NVRTC();
  EXPECT_NE(kernel.ptx(Spec{}).find("nanosleep.u32"), std::string::npos);
  const Compiled c = compile(kernel, Spec{});
  EXPECT_EQ(c.log, "");
  if (!examples::find_cuobjdump().empty()) {
    EXPECT_NE(examples::sass(c.cubin).find("NANOSLEEP"), std::string::npos);
  }
}

// The duration is an expression every backend evaluates: a read in it outside its buffer is found
// on the interpreter and the CPU backend as on a GPU (memcheck, at the user's line), not skipped with
// the sleep.
TEST(Nanosleep, ItsDurationsReadsAreCheckedOnEveryDevice) {
  KernelBuilder k("sleep_on_a_read");
  auto n = k.param<int>("n");
  auto waits = k.param<GlobalPtr<const int>>("waits");
  k.block_threads(32);
  int line = 0;
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    line = __LINE__ + 1;
    g.group(thread(1), [&](Scope& th) { th.nanosleep(waits[t + n]); });
  });
  Kernel kernel = k.build();
  const std::vector<int> w(32, 5);
  for (const Device& d : test_support::every_device()) {
    if (d.is_gpu()) continue;             // on a GPU the check reports at the next synchronize, as test_gpu's do
    kernel.launch(d, Grid{1, 32}, 0, w);  // every read inside
    d.synchronize();
    try {
      kernel.launch(d, Grid{1, 32}, 1, w);  // thread 31 reads waits[32]
      d.synchronize();
      ADD_FAILURE() << "the read outside 'waits' was not reported on " << d.name();
    } catch (const ExecutionError& e) {
      EXPECT_EQ(e.check(), "memcheck") << d.name() << ": " << e.what();
      ASSERT_FALSE(e.locs().empty()) << e.what();
      EXPECT_EQ(static_cast<int>(e.locs()[0].line), line) << d.name() << ": " << e.what();
    }
  }
}

// A constant duration outside 0 to 1 ms, or one that is not an i32, is V0503 at the user's line.
TEST(Nanosleep, RefusesADurationOutsideWhatTheHardwareSleeps) {
  for (int which = 0; which < 3; ++which) {
    int line = 0;
    KernelBuilder k("bad_sleep");
    k.block_threads(32);
    k.body([&](Scope& g) {
      if (which == 0) {
        line = __LINE__, g.nanosleep(-1);
      } else if (which == 1) {
        line = __LINE__, g.nanosleep(1000001);
      } else {
        line = __LINE__, g.nanosleep(cast<std::int64_t>(g.id(thread(1))));
      }
    });
    const char* says[] = {"a thread sleeps 0 to 1000000 ns, not -1", "a thread sleeps 0 to 1000000 ns, not 1000001",
                          "duration must be i32, not i64"};
    auto refused = testing::rejected_saying(k, "V0503", line, "tests/test_atomics.cpp", says[which]);
    EXPECT_TRUE(refused);
  }
}

}  // namespace
}  // namespace vantage
