// Example kernels' generated CUDA run on host threads (tests/host_cuda.hpp), against the interpreter:
// the CUDA C++ a GPU would compile, executed, with every thread a host thread and every buffer at
// exactly its length under AddressSanitizer. Inputs are small integers (as floats where the kernel
// takes floats), so that every sum is exact and the two must agree to the bit. Examples with inline
// PTX (tensor cores, cp.async, named barriers) are left to the GPU.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <utility>

#include "host_cuda.hpp"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

using test_support::HostArg;
using test_support::HostLaunch;

HostArg scalar(const char* type, double v) { return HostArg::of(type, v); }
template <class T>
HostArg buffer(const std::vector<T>& v) {
  return HostArg::of(std::is_same_v<T, float> ? "float" : std::is_same_v<T, std::uint32_t> ? "unsigned" : "int", v);
}
/// A buffer's words as the host run prints them (floats as their bits).
template <class T>
std::vector<long long> words(const std::vector<T>& v) {
  std::vector<long long> out;
  for (const T& x : v) {
    if constexpr (std::is_same_v<T, float>) {
      std::int32_t bits;
      std::memcpy(&bits, &x, 4);
      out.push_back(bits);
    } else {
      out.push_back(x);
    }
  }
  return out;
}
std::vector<float> small_floats(std::int64_t n, int seed) {
  std::vector<float> v(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) v[static_cast<std::size_t>(i)] = static_cast<float>((i * 7 + seed) % 9 - 4);
  return v;
}

/// One example launch: what the host run gets, and the interpreter's result for its last buffer.
struct Case {
  std::string name;
  HostLaunch launch;
  std::vector<long long> want;
};

Case make(const std::string& name, const Kernel& k, Grid g) {
  Case c;
  c.name = name;
  Specialized s = specialize_for(k, Spec{});
  c.launch.source = s.source;
  c.launch.entry = s.entry;
  c.launch.blocks = static_cast<int>(g.blocks);
  c.launch.threads = static_cast<int>(g.threads);
  return c;
}

std::vector<Case> cases() {
  std::vector<Case> out;
  const Device interp = Device::interpreter();
  {
    const int n = 777;
    Grid g{4, 256};
    auto x = small_floats(n, 1), y = small_floats(n, 2);
    Case c = make("saxpy", examples::saxpy(), g);
    c.launch.args = {scalar("int", n), scalar("float", 2.0), buffer(x), buffer(y)};
    examples::saxpy().launch(interp, g, n, 2.0f, std::as_const(x), y);
    c.want = words(y);
    out.push_back(std::move(c));
  }
  {
    const int n = 700;
    Grid g{3, 256};
    auto x = small_floats(n, 3);
    std::vector<float> sums(3, 0.0f);
    Case c = make("block_reduce", examples::block_reduce(), g);
    c.launch.args = {scalar("int", n), buffer(x), buffer(sums)};
    examples::block_reduce().launch(interp, g, n, std::as_const(x), sums);
    c.want = words(sums);
    out.push_back(std::move(c));
  }
  {
    const int n = 1000;
    Grid g{2, 128};
    std::vector<int> in(n), copy(n, -1);
    for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = i * 3 - 7;
    Case c = make("block_load_copy", examples::block_load_copy(), g);
    c.launch.args = {scalar("int", n), buffer(in), buffer(copy)};
    examples::block_load_copy().launch(interp, g, n, std::as_const(in), copy);
    c.want = words(copy);
    out.push_back(std::move(c));
  }
  for (const auto& [name, kernel] :
       {std::pair{"transpose", examples::transpose()}, std::pair{"transpose_padded", examples::transpose_padded()}}) {
    const int M = 40, N = 70;
    Grid g = examples::default_grid(name, {{"M", M}, {"N", N}});
    auto in = small_floats(M * N, 4);
    std::vector<float> t(static_cast<std::size_t>(M * N), -1.0f);
    Case c = make(name, kernel, g);
    c.launch.args = {scalar("int", M), scalar("int", N), buffer(in), buffer(t)};
    kernel.launch(interp, g, M, N, std::as_const(in), t);
    c.want = words(t);
    out.push_back(std::move(c));
  }
  for (const auto& [name, kernel, tiled] : {std::tuple{"sgemm_naive", examples::sgemm_naive(), false},
                                            std::tuple{"sgemm_smem", examples::sgemm_smem(), true}}) {
    const int M = 33, N = 31, K = 20;
    Grid g = tiled ? Grid{((M + 31) / 32) * ((N + 31) / 32), 1024} : Grid{(M * N + 255) / 256, 256};
    auto A = small_floats(M * K, 5), B = small_floats(K * N, 6), C = small_floats(M * N, 7);
    Case c = make(name, kernel, g);
    c.launch.args = {scalar("int", M),     scalar("int", N), scalar("int", K), scalar("float", 1.0),
                     scalar("float", 2.0), buffer(A),        buffer(B),        buffer(C)};
    kernel.launch(interp, g, M, N, K, 1.0f, 2.0f, std::as_const(A), std::as_const(B), C);
    c.want = words(C);
    out.push_back(std::move(c));
  }
  {
    // 64-bit products of widened 32-bit values: the printer computes one in int where its value
    // fits (t + 1 times 100000), and keeps 64 bits where only its operands do (t + 40000 times
    // 60000 passes 2^31, in a let or a comparison), which an int would overflow
    // (UndefinedBehaviorSanitizer stops the run).
    KernelBuilder b("wide_products");
    auto dst = b.param<GlobalPtr<int>>("out", extent(64));
    b.block_threads(64);
    b.body([&](Scope& g) {
      lib::for_each_block(g, dst, 64, [&](Scope& b, Expr, View o) {
        auto t = b.let("t", b.id(thread(1)));
        auto small = b.let("small", cast<std::int64_t>(t + 1) * cast<std::int64_t>(Expr(100000)));
        auto large = b.let("large", cast<std::int64_t>(t + 40000) * cast<std::int64_t>(Expr(60000)));
        b.partition(
            o, thread(1), [&](Expr i) { return t + i; },
            [&](Scope& b, View mine) {
              b.group(thread(1), [&](Scope&) {
                // Compared without a let: 64 bits too, though both sides' operands fit an int.
                Expr over = cast<std::int64_t>(t + 40000) * cast<std::int64_t>(Expr(60000));
                mine[0] = cast<int>(large % std::int64_t{1000003}) + cast<int>(small % std::int64_t{977}) +
                          select(over < std::int64_t{2000000000}, 1, 0);
              });
            });
      });
    });
    Kernel kernel = b.build();
    Grid g{1, 64};
    std::vector<int> got(64, -1);
    Case c = make("wide_products", kernel, g);
    EXPECT_NE(c.launch.source.find("int small = (t + 1) * 100000;"), std::string::npos) << c.launch.source;
    EXPECT_NE(c.launch.source.find("long long large"), std::string::npos) << c.launch.source;
    c.launch.args = {buffer(got)};
    kernel.launch(interp, g, got);
    c.want = words(got);
    out.push_back(std::move(c));
  }
  {
    // Atomic or, and and xor from 64 threads (their words do not depend on the order).
    KernelBuilder b("bitwise_atomics");
    auto w = b.param<GlobalPtr<std::uint32_t>>("w", extent(3));
    b.block_threads(64);
    b.body([&](Scope& g) {
      auto t = g.let("t", cast<std::uint32_t>(g.id(thread(1))));
      g.group(thread(1), [&](Scope& th) {
        th.atomic(AtomicOp::Or, w, 0, Expr(1u) << (t % 32u));
        th.atomic(AtomicOp::And, w, 1, ~(Expr(1u) << (t % 31u)));
        th.atomic(AtomicOp::Xor, w, 2, t * 0x9E3779B9u);
      });
    });
    Kernel kernel = b.build();
    Grid g{1, 64};
    std::vector<std::uint32_t> words_in = {0u, 0xffffffffu, 0x12345678u}, got = words_in;
    Case c = make("bitwise_atomics", kernel, g);
    c.launch.args = {buffer(words_in)};
    kernel.launch(interp, g, got);
    c.want = words(got);
    out.push_back(std::move(c));
  }
  {
    // Compare and swap on each thread's own element: swapped where the compare holds (even ones).
    KernelBuilder b("compare_and_swap");
    auto own = b.param<GlobalPtr<int>>("own", extent(64));
    b.block_threads(64);
    b.body([&](Scope& g) {
      auto t = g.let("t", g.id(thread(1)));
      g.group(thread(1), [&](Scope& th) { th.atomic_cas("old", own, t, t, t * 10); });
    });
    Kernel kernel = b.build();
    Grid g{1, 64};
    std::vector<int> in(64);
    for (int i = 0; i < 64; ++i) in[static_cast<std::size_t>(i)] = i % 2 == 0 ? i : -1;
    std::vector<int> got = in;
    Case c = make("compare_and_swap", kernel, g);
    c.launch.args = {buffer(in)};
    kernel.launch(interp, g, got);
    c.want = words(got);
    out.push_back(std::move(c));
  }
  {
    // A block's radix sort (lib::block_radix_sort: exclusive scans, block-scope exchanges into shared
    // memory) of 8 bits, and the blocks' key sums added to a total with the system's scope.
    KernelBuilder b("radix_and_scopes");
    auto keys = b.param<GlobalPtr<const std::uint32_t>>("keys", extent(128));
    auto res = b.param<GlobalPtr<std::uint32_t>>("res", extent(129));  // the sorted keys, then the sum
    b.block_threads(64);
    b.body([&](Scope& g) {
      auto blk = g.let("blk", g.id(block(1)));
      g.group(block(1), [&](Scope& b) {
        auto t = b.let("t", b.id(thread(1)));
        Var key = b.let("key", keys[blk * 64 + t], at(thread(1)));
        Var sorted = lib::block_radix_sort(b, "s", key, 8);
        b.group(thread(1), [&](Scope& th) {
          th.atomic(AtomicOp::Exch, res, blk * 64 + t, sorted, AtomicScope::Block);
          th.atomic(AtomicOp::Add, res, 128, key & 0xffu, AtomicScope::System);
        });
      });
    });
    Kernel kernel = b.build();
    Grid g{2, 64};
    std::vector<std::uint32_t> in(128), got(129, 0);
    for (std::uint32_t i = 0; i < 128; ++i) in[i] = i * 2654435761u;
    Case c = make("radix_and_scopes", kernel, g);
    c.launch.args = {buffer(in), buffer(got)};
    kernel.launch(interp, g, in, got);
    c.want = words(got);
    out.push_back(std::move(c));
  }
  return out;
}

TEST(HostThreads, ExamplesGeneratedCudaGivesTheInterpretersResult) {
  std::vector<Case> cs = cases();
  std::vector<HostLaunch> launches;
  for (const auto& c : cs) {
    ASSERT_TRUE(test_support::runs_on_host(c.launch.source)) << c.name << " has inline PTX or 16-bit floats";
    launches.push_back(c.launch);
  }
  test_support::HostLaunches run = test_support::run_launches_on_host(launches);
  ASSERT_TRUE(run.ok) << run.problem;
  for (std::size_t i = 0; i < cs.size(); ++i) {
    EXPECT_FALSE(run.results[i].check_failed) << cs[i].name << ": a check failed on host threads";
    ASSERT_FALSE(run.results[i].buffers.empty());
    EXPECT_EQ(run.results[i].buffers.back(), cs[i].want)
        << cs[i].name << ": generated CUDA differs from the interpreter";
  }
}

}  // namespace
}  // namespace vantage
