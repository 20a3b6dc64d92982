// The runtime without a GPU: devices and the best one, buffers on the interpreter device, typed
// kernels, prepare(), launch statistics, occupancy, and many threads launching many specializations
// at once (each made once, every result right).
#include <gtest/gtest.h>

#include <climits>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <thread>

#include "kernels/paper_kernels.hpp"
#include "vantage/graph.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

/// x[i] = 2 x[i] on 128 threads a block.
Kernel examples_scale() {
  KernelBuilder k("scale");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<float>>("x", extent(n));
  k.block_threads(128);
  k.body([&](Scope& g) { lib::for_each(g, x, n, [&](Scope&, Expr, ElemRef xi) { xi = 2.0f * xi; }); });
  return k.build();
}

TEST(Runtime, TheBestDeviceIsAGpuOrSaysWhyNot) {
  Device d = Device::best();
  if (Device::gpu_count() == 0) {
    // Without a GPU: the CPU backend where the build has it, else the interpreter.
    EXPECT_EQ(d.kind(), Device::cpu_available() ? DeviceKind::Cpu : DeviceKind::Interpreter);
    EXPECT_FALSE(Device::gpu_problem().empty()) << "no GPU, and no reason given";
    EXPECT_THROW(Device::gpu(0), DriverError);
    EXPECT_EQ(Device::all().size(), Device::cpu_available() ? 2u : 1u);
  } else {
    EXPECT_TRUE(d.is_gpu());
    EXPECT_EQ(Device::gpu_problem(), "");
  }
  EXPECT_EQ(Device::interpreter().name(), "interpreter");
  EXPECT_GT(Device::interpreter().properties().shared_per_block_optin, 48 * 1024);
}

TEST(Runtime, InterpreterBuffersRunKernels) {
  Device d = Device::interpreter();
  Kernel k = examples::saxpy();
  auto x = d.alloc<float>(300), y = d.alloc<float>(300);
  std::vector<float> hx(300), hy(300);
  for (int i = 0; i < 300; ++i) {
    hx[static_cast<std::size_t>(i)] = static_cast<float>(i);
    hy[static_cast<std::size_t>(i)] = 1.0f;
  }
  x.copy_from(hx);
  y.copy_from(hy);
  const auto& cx = x;
  k.launch(d, Grid{2, 256}, 300, 2.0f, cx, y);
  std::vector<float> got = y.to_vector();
  for (int i = 0; i < 300; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], 2.0f * static_cast<float>(i) + 1.0f);
  // A stream and events on a host device run and time at once.
  Stream s(d);
  Event a(d), b(d);
  a.record(s);
  k.launch(s, Grid{2, 256}, 300, 2.0f, cx, y);
  b.record(s);
  s.synchronize();
  EXPECT_GE(b.elapsed_ms(a), 0.0f);
  PinnedBuffer<float> pinned(300);
  y.copy_to(pinned);
  EXPECT_EQ(pinned[299], 4.0f * 299 + 1.0f);  // two launches: y = 2x + (2x + 1)
}

// A buffer moved from is empty: a launch that passes it where elements are needed is refused naming
// it (it kept its size and lost its memory, so the launch reached address 0).
TEST(Runtime, AMovedFromBufferIsEmptyAndALaunchOnItIsRefused) {
  Device d = Device::interpreter();
  auto x = d.alloc<float>(100), y = d.alloc<float>(100);
  auto taken = std::move(y);
  EXPECT_EQ(y.size(), 0);  // NOLINT(bugprone-use-after-move): what a moved-from buffer is, is the point
  EXPECT_EQ(y.view().size(), 0);
  EXPECT_EQ(taken.size(), 100);
  const auto& cx = x;
  try {
    examples::saxpy().launch(d, Grid{1, 256}, 100, 1.0f, cx, y);  // NOLINT(bugprone-use-after-move)
    ADD_FAILURE() << "a launch on a moved-from buffer ran";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.param(), "y") << e.what();
  }
  DeviceBuffer<float> z;
  z = std::move(taken);
  EXPECT_EQ(taken.size(), 0);  // NOLINT(bugprone-use-after-move)
  EXPECT_EQ(z.size(), 100);
}

// On a host device a graph is its function: run when captured, run again on each launch.
// A launch with a thread count the kernel does not declare says which count runs, on every device,
// without naming a GPU target or advising a declaration the kernel already has (V1004 on a CPU launch
// talked about sm_90a and suggested declaring block_threads).
TEST(Runtime, AWrongThreadCountIsRefusedWithTheCountThatRuns) {
  auto scale = [](bool declared) {
    KernelBuilder k("scale");
    auto n = k.param<int>("n");
    auto x = k.param<GlobalPtr<float>>("x", extent(n));
    if (declared) {
      k.block_threads(128);
      k.body([&](Scope& g) { lib::for_each(g, x, n, [&](Scope&, Expr, ElemRef xi) { xi = 2.0f * xi; }); });
    } else {
      k.body([&](Scope& g) { g.let("m", n + 1); });  // lib::for_each needs a declared count
    }
    return k.build();
  };
  auto refusal = [](const Kernel& k, const Device& d, std::int64_t threads) {
    std::vector<float> v(1000, 1.0f);
    try {
      k.launch(d, Grid{4, threads}, 1000, v);
    } catch (const LaunchError& e) {
      return std::string(e.what());
    }
    return std::string("launched");
  };
  std::vector<Device> devices{Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    for (std::int64_t threads : {256, 2048}) {
      const std::string said = refusal(scale(true), d, threads);
      EXPECT_NE(said.find("cannot run with " + std::to_string(threads) +
                          " threads per block; launch it with Grid{blocks, 128} (or 0 threads: the declared count)"),
                std::string::npos)
          << d.name() << ": " << said;
      EXPECT_NE(said.find("declares 128 threads per block; this specialization asks for " + std::to_string(threads)),
                std::string::npos)
          << said;
      EXPECT_EQ(said.find("sm_90"), std::string::npos) << said;
      EXPECT_EQ(said.find("declare block_threads"), std::string::npos) << said;
    }
    EXPECT_NE(refusal(scale(false), d, 2048).find("cannot have 2048 threads per block: a block has 1 to 1024"),
              std::string::npos);
    EXPECT_EQ(refusal(scale(false), d, 0), "kernel 'scale' leaves its threads per block open: give Grid::threads");
    EXPECT_EQ(refusal(scale(true), d, 0), "launched");
  }
}

// A buffer allocated on one host device is refused by a launch on the other, naming the argument
// (the interpreter's buffers were taken by CPU launches); host memory is taken by both.
TEST(Runtime, ABufferOfOneHostDeviceIsRefusedOnTheOther) {
  if (!Device::cpu_available()) GTEST_SKIP() << "this build has no CPU backend";
  Kernel k = examples_scale();
  Device interp = Device::interpreter(), cpu = Device::cpu(1);
  for (auto [from, on] : {std::pair{interp, cpu}, std::pair{cpu, interp}}) {
    auto x = from.alloc<float>(256);
    try {
      k.launch(on, Grid{2, 128}, 256, x);
      ADD_FAILURE() << "a buffer of the " << from.name() << " was taken on the " << on.name();
    } catch (const LaunchError& e) {
      EXPECT_EQ(e.param(), "x");
      EXPECT_NE(
          std::string(e.what()).find("was given, but the kernel runs on the " + on.name() + ": allocate it there"),
          std::string::npos)
          << e.what();
    }
    auto own = on.alloc<float>(256);
    own.copy_from(std::vector<float>(256, 1.0f));
    k.launch(on, Grid{2, 128}, 256, own);
    EXPECT_EQ(own.to_vector()[255], 2.0f);
    std::vector<float> host(256, 1.0f);
    k.launch(on, Grid{2, 128}, 256, host);
    EXPECT_EQ(host[255], 2.0f);
  }
}

TEST(Runtime, AGraphOnAHostDeviceRunsItsFunctionAgain) {
  Device d = Device::interpreter();
  Stream s(d);
  auto x = d.alloc<float>(64), y = d.alloc<float>(64);
  x.copy_from(std::vector<float>(64, 1.0f));
  y.copy_from(std::vector<float>(64, 0.0f));
  const auto& cx = x;
  Kernel k = examples::saxpy();
  Graph g = Graph::capture(s, [&](const Stream& st) { k.launch(st, Grid{1, 256}, 64, 1.0f, cx, y); });
  EXPECT_EQ(y.to_vector()[0], 1.0f);
  g.launch(s);
  g.launch(s);
  EXPECT_EQ(y.to_vector()[63], 3.0f);
  g.update(s, [&](const Stream& st) { k.launch(st, Grid{1, 256}, 64, 10.0f, cx, y); });
  g.launch(s);
  EXPECT_EQ(y.to_vector()[0], 13.0f);
  Stream other(Device::cpu_available() ? Device::cpu() : Device::interpreter(InterpreterOptions{}));
  if (!(other.device() == d)) {
    EXPECT_THROW(g.launch(other), LaunchError);
  }
}

// The registry `vantage --load` reads: names are identifiers, each registered once, in order.
TEST(Registry, AKernelIsRegisteredOnceUnderANameThatIsAnIdentifier) {
  const std::size_t before = registered_kernels().size();
  register_kernel({"registry_test_saxpy", "saxpy again", [] { return examples::saxpy(); }});
  auto all = registered_kernels();
  ASSERT_EQ(all.size(), before + 1);
  EXPECT_EQ(all.back().name, "registry_test_saxpy");
  EXPECT_EQ(all.back().build().name(), "saxpy");
  auto refused = [](RegisteredKernel k, const std::string& says) {
    try {
      register_kernel(std::move(k));
      ADD_FAILURE() << says;
    } catch (const std::invalid_argument& e) {
      EXPECT_NE(std::string(e.what()).find(says), std::string::npos) << e.what();
    }
  };
  refused({"registry_test_saxpy", "", [] { return examples::saxpy(); }}, "'registry_test_saxpy' is registered already");
  refused({"9lives", "", [] { return examples::saxpy(); }}, "'9lives' is not a name");
  refused({"has space", "", [] { return examples::saxpy(); }}, "is not a name");
  refused({"no_factory", "", nullptr}, "'no_factory' has no factory");
  EXPECT_EQ(registered_kernels().size(), before + 1);
}

TEST(Runtime, TypedKernelsCheckTheirSignatureWhenMade) {
  Kernel k = examples::saxpy();
  using Good = TypedKernel<void(int, float, Buffer<const float>, Buffer<float>)>;
  Good typed(k);
  Device d = Device::interpreter();
  auto x = d.alloc<float>(10), y = d.alloc<float>(10);
  x.zero();
  y.zero();
  typed.launch(d, Grid{1, 256}, 10, 3.0f, x, y);
  try {
    TypedKernel<void(int, float, Buffer<float>, Buffer<float>)> wrong(k);
    FAIL() << "a writable Buffer<float> for the read-only x was accepted";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.param(), "x");
    EXPECT_NE(std::string(e.what()).find("Buffer<const f32>"), std::string::npos) << e.what();
  }
  try {
    TypedKernel<void(int, double, Buffer<const float>, Buffer<float>)> wrong(k);
    FAIL() << "double for the f32 a was accepted";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.param(), "a");
    EXPECT_NE(std::string(e.what()).find("parameter 2 is f64"), std::string::npos) << e.what();
  }
  EXPECT_THROW((TypedKernel<void(int, float, Buffer<const float>)>(k)), LaunchError);
}

// An extent is computed at its parameters' types, in the kernel as at launch; one that wraps (m * n
// at i32 for m = n = 65536) would be a bound of 0 in the kernel, so the launch is refused, naming
// the buffer and what to do.
TEST(Runtime, AnExtentWhoseArithmeticWrapsIsRefusedNamingTheBuffer) {
  KernelBuilder k("wrapping_extent");
  auto m = k.param<int>("m");
  auto n = k.param<int>("n");
  auto a = k.param<GlobalPtr<float>>("a", extent(m * n));
  k.block_threads(32);
  k.body([&](Scope& g) { lib::for_each(g, a, m * n, [&](Scope&, Expr, ElemRef e) { e = 1.0f; }); });
  Kernel kernel = k.build();
  std::vector<float> small(4, 0.0f);
  kernel.launch(Device::interpreter(), Grid{1, 32}, 2, 2, small);
  EXPECT_EQ(small, std::vector<float>(4, 1.0f));
  try {
    kernel.launch(Device::interpreter(), Grid{1, 32}, 65536, 65536, small);
    FAIL() << "an extent of 65536 * 65536 at i32 was accepted";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.param(), "a");
    EXPECT_NE(std::string(e.what()).find("wraps at the parameters' types"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("i64 sizes"), std::string::npos) << e.what();
  }
}

// Automatic specialization: a launch uses the variant for the size classes of its integer arguments
// (a value in [0, 2^30], and a multiple of 16 or not; none outside), compiled the first time a class
// is seen; each variant gives the right result, and the same class finds its variant again.
TEST(Runtime, ALaunchUsesTheVariantForTheSizeClassesOfItsArguments) {
  KernelBuilder b("shifted_copy");
  auto n = b.param<int>("n");
  auto shift = b.param<int>("shift");
  auto x = b.param<GlobalPtr<const int>>("x", extent(n));
  auto y = b.param<GlobalPtr<int>>("y", extent(n));
  b.block_threads(64);
  b.body([&](Scope& g) { lib::for_each(g, y, n, [&](Scope&, Expr i, ElemRef e) { e = x[i] + shift; }); });
  Kernel k = b.build();
  std::vector<int> in(100), out(100);
  for (int i = 0; i < 100; ++i) in[static_cast<std::size_t>(i)] = i * 3;
  const auto& cin = in;
  auto run = [&](int count, int s) {
    std::fill(out.begin(), out.end(), -1);
    k.launch(Device::interpreter(), Grid{2, 64}, count, s, cin, out);
    for (int i = 0; i < count; ++i) EXPECT_EQ(out[static_cast<std::size_t>(i)], i * 3 + s) << count << " " << s;
  };
  run(100, 5);   // n: [0, 2^30]; shift: [0, 2^30]
  run(100, -5);  // shift: no class
  run(96, 32);   // both multiples of 16
  run(100, 7);   // the first variant again
  LaunchStats st = launch_stats(k);
  EXPECT_EQ(st.compiles, 3);
  EXPECT_EQ(st.launches, 1) << "the fourth launch found the first one's variant";
  // launch_spec names a launch's classes: prepare makes that variant, which a launch then finds.
  Spec s = launch_spec(k, Spec{}, {{"n", 100}, {"shift", -9}, {"other", 1}});
  ASSERT_EQ(s.assume.size(), 1u);
  EXPECT_EQ(s.assume.at("n"), *Assumption::of(100));
  prepare(k, Device::interpreter(), launch_spec(k, Spec{}, {{"n", 48}, {"shift", 48}})).get();
  EXPECT_EQ(launch_stats(k).compiles, 3) << "n and shift multiples of 16: the third variant";
  // A value no launch can pass (n is an int) names no variant: refused, naming the parameter, where
  // it was put in a class as if it were an argument.
  try {
    launch_spec(k, Spec{}, {{"n", std::int64_t{1} << 40}});
    ADD_FAILURE() << "a value past an int's range was given a size class";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("the value 1099511627776 of 'n' does not fit its type i32"), std::string::npos)
        << e.what();
  }
  EXPECT_NO_THROW(launch_spec(k, Spec{}, {{"n", INT32_MIN}, {"shift", INT32_MAX}}));
}

TEST(Runtime, PrepareMakesASpecializationAheadOfItsFirstLaunch) {
  Kernel k = examples::sgemm_smem();
  // The variant a launch with M = N = K = 40 uses (their size class: launch_spec).
  std::shared_future<void> ready =
      prepare(k, Device::interpreter(), launch_spec(k, Spec{}, {{"M", 40}, {"N", 40}, {"K", 40}}));
  ready.get();
  LaunchStats before = launch_stats(k);
  EXPECT_EQ(before.compiles, 1);
  std::vector<float> A(40 * 40, 1.0f), B(40 * 40, 1.0f), C(40 * 40, 0.0f);
  const auto& cA = A;
  const auto& cB = B;
  k.launch(Device::interpreter(), Grid{4, 1024}, 40, 40, 40, 1.0f, 0.0f, cA, cB, C);
  LaunchStats after = launch_stats(k);
  EXPECT_EQ(after.compiles, 1);
  EXPECT_EQ(after.launches, before.launches + 1) << "the launch did not find the prepared specialization";
  EXPECT_EQ(C[0], 40.0f);
  // A specialization that cannot be made holds its error in the future.
  auto bad = prepare(examples::saxpy(), Device::interpreter(), Spec{}.with_threads(100));
  EXPECT_THROW(bad.get(), LaunchError);
}

TEST(Runtime, OccupancyCountsThreadsRegistersAndSharedMemory) {
  DeviceProperties h100;
  h100.max_threads_per_block = 1024;
  h100.max_threads_per_multiprocessor = 2048;
  h100.max_blocks_per_multiprocessor = 32;
  h100.registers_per_block = 65536;
  h100.registers_per_multiprocessor = 65536;
  h100.shared_per_block_optin = 232448;
  h100.shared_per_multiprocessor = 233472;
  EXPECT_DOUBLE_EQ(occupancy(h100, 256, 32, 0), 1.0);
  EXPECT_DOUBLE_EQ(occupancy(h100, 256, 64, 0), 0.5);            // 4 blocks of 256 * 64 registers
  EXPECT_DOUBLE_EQ(occupancy(h100, 256, 32, 100 * 1024), 0.25);  // 2 blocks fit the shared memory
  EXPECT_DOUBLE_EQ(occupancy(h100, 1024, 128, 0), 0.0);          // 128 K registers for one block
  EXPECT_DOUBLE_EQ(occupancy(h100, 2048, 16, 0), 0.0);
}

TEST(Runtime, BestThreadsPicksAFittingCountForAKernelThatLeavesItOpen) {
  // A kernel with few registers and no shared memory: every count fills a multiprocessor.
  KernelBuilder k("open_threads");
  auto out = k.param<GlobalPtr<float>>("out");
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return gid + i; },
        [&](Scope& g, View o) { g.group(thread(1), [&](Scope&) { o[0] = 1.0f; }); });
  });
  Kernel kernel = k.build();
  std::int64_t t = best_threads(kernel, Device::interpreter());
  EXPECT_TRUE(t == 64 || t == 128 || t == 256 || t == 512 || t == 1024) << t;
  EXPECT_EQ(t, 256) << "every count gives full occupancy here; the tie goes to 256";
  EXPECT_EQ(best_threads(examples::saxpy(), Device::interpreter()), 256) << "a declared count is kept";
}

/// y[i] = x[i] * m + n for n specialized: each value of n is a specialization of its own.
Kernel affine(int m) {
  KernelBuilder k("affine_" + std::to_string(m));
  auto n = k.param<int>("n", specialize);
  auto x = k.param<GlobalPtr<const int>>("x", extent(Expr(256)));
  auto y = k.param<GlobalPtr<int>>("y", extent(Expr(256)));
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        y, thread(1), [&](Expr i) { return gid + i; },
        [&](Scope& g, View y_t) {
          g.group(thread(1), [&](Scope& th) { th.if_(gid < 256, [&](Scope&) { y_t[0] = x[gid] * m + n; }); });
        });
  });
  return k.build();
}

TEST(Concurrency, EightThreadsLaunchFourKernelsAtThreeSpecializationsEachMadeOnce) {
  std::vector<Kernel> kernels;
  for (int m = 1; m <= 4; ++m) kernels.push_back(affine(m));
  std::vector<int> x(256);
  for (int i = 0; i < 256; ++i) x[static_cast<std::size_t>(i)] = i;
  std::atomic<int> wrong{0};
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t)
    threads.emplace_back([&, t] {
      const auto& cx = x;
      std::vector<int> y(256);
      for (int r = 0; r < 3; ++r)
        for (int k = 0; k < 4; ++k)
          for (int n : {3, 5, 7}) {
            int kk = (k + t) % 4;  // the threads start on different kernels
            kernels[static_cast<std::size_t>(kk)].launch(Device::interpreter(), Grid{4, 64}, n, cx, y);
            for (int i = 0; i < 256; ++i)
              if (y[static_cast<std::size_t>(i)] != i * (kk + 1) + n) ++wrong;
          }
    });
  for (auto& th : threads) th.join();
  EXPECT_EQ(wrong.load(), 0);
  for (const auto& k : kernels) {
    LaunchStats s = launch_stats(k);
    EXPECT_EQ(s.compiles, 3) << k.name();
    EXPECT_EQ(s.failures, 0);
    EXPECT_EQ(s.launches + s.misses, 8 * 3 * 3);
  }
}

}  // namespace
}  // namespace vantage
