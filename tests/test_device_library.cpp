// The device library's device-wide operations (lib::device_*): each computes what a loop in C++
// computes, on the interpreter in both thread orders (every check on) and on the CPU backend with one
// and two threads, at tile shapes of 32 x 4 and 256 x 8 and at sizes no tile divides, including more
// tiles than one look-back window of 32; a launch leaves its temporary storage zero, so the next
// launch may reuse it; a misuse is refused at the caller's line with the fix named.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <limits>
#include <string>
#include <type_traits>
#include <vector>

#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

/// The interpreter in both thread orders, the CPU backend, and a GPU where there is one.
std::vector<Device> devices() { return test_support::every_device(); }

struct Shape {
  int threads, items;
  int backoff_ns = 0;  // the look-back's sleep before a poll: the GPU's alone, the same results
};
constexpr Shape kShapes[] = {{32, 4, 500}, {256, 8}};

/// Sizes for a tile of `per` elements: none, one, a tile less one, a few tiles and a part, and more
/// tiles than a look-back window (32) sees at once.
/// None, one, a tile less one, a few tiles and some, and many (look-backs across 37 tiles); under a
/// sanitizer, which checks memory safety (the same code at every size), not the many.
std::vector<int> sizes(int per) {
  if (test_support::kSanitized) return {0, 1, per - 1, 3 * per + 5};
  return {0, 1, per - 1, 3 * per + 5, 37 * per + 3};
}

std::vector<int> inputs(int n) {
  std::vector<int> x(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = static_cast<int>((i * 7919L) % 201) - 100;
  return x;
}

/// The "later non-zero" operator: op(a, b) = b unless b is 0. Associative, not commutative, with
/// identity 0; a scan with it gives each element the last non-zero value up to it.
Expr later_non_zero(const Expr& a, const Expr& b) { return select(b != 0, b, a); }
int later_non_zero(int a, int b) { return b != 0 ? b : a; }

/// Affine maps x -> p x + q (mod 2^16) as p << 16 | q, composed in order (a, then b): associative,
/// not commutative, with identity 1 << 16, and every element changes the result, wherever it is.
Expr then_affine(const Expr& a, const Expr& b) {
  const Expr ua = cast<std::uint32_t>(a), ub = cast<std::uint32_t>(b);
  const Expr pa = ua >> 16u, qa = ua & 0xffffu, pb = ub >> 16u, qb = ub & 0xffffu;
  return cast<int>((((pa * pb) & 0xffffu) << 16u) | ((qa * pb + qb) & 0xffffu));
}
int then_affine(int a, int b) {
  const auto ua = static_cast<std::uint32_t>(a), ub = static_cast<std::uint32_t>(b);
  const std::uint32_t pa = ua >> 16, qa = ua & 0xffffu, pb = ub >> 16, qb = ub & 0xffffu;
  return static_cast<int>((((pa * pb) & 0xffffu) << 16) | ((qa * pb + qb) & 0xffffu));
}

enum class ScanKind { Inclusive, Exclusive };

/// A scan kernel: `op` an Op (sum) or, with `user`, the later-non-zero operator.
Kernel scan_kernel(Shape s, ScanKind kind, bool user) {
  KernelBuilder k(std::string(kind == ScanKind::Inclusive ? "incl" : "excl") + (user ? "_user_" : "_sum_") +
                  std::to_string(s.threads) + "x" + std::to_string(s.items));
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  const lib::DeviceTile tile{s.items, s.backoff_ns};
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, s.threads, tile)));
  k.block_threads(s.threads);
  k.body([&](Scope& g) {
    if (kind == ScanKind::Inclusive) {
      if (user)
        lib::device_inclusive_scan(
            g, y, x, n, [](const Expr& a, const Expr& b) { return later_non_zero(a, b); }, 0, temp, tile);
      else
        lib::device_inclusive_scan(g, y, x, n, lib::Op::Sum, temp, tile);
    } else {
      if (user)
        lib::device_exclusive_scan(
            g, y, x, n, [](const Expr& a, const Expr& b) { return later_non_zero(a, b); }, 0, temp, tile);
      else
        lib::device_exclusive_scan(g, y, x, n, lib::Op::Sum, temp, tile);
    }
  });
  return k.build();
}

std::vector<int> scan_reference(const std::vector<int>& x, ScanKind kind, bool user) {
  std::vector<int> y(x.size());
  int acc = 0;  // the identity of both operators
  for (std::size_t i = 0; i < x.size(); ++i) {
    if (kind == ScanKind::Exclusive) y[i] = acc;
    acc = user ? later_non_zero(acc, x[i])
               : static_cast<int>(static_cast<unsigned>(acc) + static_cast<unsigned>(x[i]));  // i32 sums wrap
    if (kind == ScanKind::Inclusive) y[i] = acc;
  }
  return y;
}

TEST(DeviceLibrary, ScansGiveEveryElementItsPrefixInTheElementsOrderAndLeaveTheirStorageZero) {
  for (Shape s : kShapes)
    for (ScanKind kind : {ScanKind::Inclusive, ScanKind::Exclusive})
      for (bool user : {false, true}) {
        Kernel kernel = scan_kernel(s, kind, user);
        const lib::DeviceTile tile{s.items};
        for (int n : sizes(s.threads * s.items)) {
          auto x = inputs(n);
          if (user)  // mostly zeros, so that the operator's order shows
            for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = i % 7 == 3 ? i + 1 : 0;
          const auto want = scan_reference(x, kind, user);
          for (const Device& d : devices()) {
            std::vector<std::uint64_t> temp(static_cast<std::size_t>(lib::device_temp_words(n, s.threads, tile)), 0);
            for (int launch = 0; launch < 2; ++launch) {  // the second reuses the storage as the first left it
              std::vector<int> y(static_cast<std::size_t>(n), -7);
              test_support::launch_on(kernel, d, Grid{lib::device_blocks(n, s.threads, tile), s.threads}, n, x, y,
                                      temp);
              EXPECT_EQ(y, want) << kernel.name() << " n=" << n << " launch " << launch << " on " << d.name();
              EXPECT_EQ(std::count(temp.begin(), temp.end(), 0u), static_cast<long>(temp.size()))
                  << kernel.name() << " n=" << n << " left its storage non-zero on " << d.name();
            }
          }
        }
      }
}

TEST(DeviceLibrary, ScansOfUnsignedIntegersTakeTheirOwnIdentities) {
  // Min over u32: identity 0xffffffff (what the elements past n count as).
  KernelBuilder k("min_scan_u32");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const std::uint32_t>>("x", extent(n));
  auto y = k.param<GlobalPtr<std::uint32_t>>("y", extent(n));
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, 64, {4})));
  k.block_threads(64);
  k.body([&](Scope& g) { lib::device_inclusive_scan(g, y, x, n, lib::Op::Min, temp, {4}); });
  Kernel kernel = k.build();
  for (int n : {1, 255, 1000}) {
    std::vector<std::uint32_t> x(static_cast<std::size_t>(n)), want(x.size());
    std::uint32_t m = 0xffffffffu;
    for (int i = 0; i < n; ++i) {
      x[static_cast<std::size_t>(i)] = 0xf0000000u - static_cast<std::uint32_t>(i % 97) * 12345u;
      m = std::min(m, x[static_cast<std::size_t>(i)]);
      want[static_cast<std::size_t>(i)] = m;
    }
    for (const Device& d : devices()) {
      std::vector<std::uint64_t> temp(static_cast<std::size_t>(lib::device_temp_words(n, 64, {4})), 0);
      std::vector<std::uint32_t> y(x.size(), 1);
      test_support::launch_on(kernel, d, Grid{lib::device_blocks(n, 64, {4}), 64}, n, x, y, temp);
      EXPECT_EQ(y, want) << "n=" << n << " on " << d.name();
    }
  }
}

Kernel reduce_kernel(Shape s, const std::string& which) {
  KernelBuilder k("reduce_" + which + "_" + std::to_string(s.threads));
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(1));
  const lib::DeviceTile tile{s.items, s.backoff_ns};
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, s.threads, tile)));
  k.block_threads(s.threads);
  k.body([&](Scope& g) {
    if (which == "sum")
      lib::device_reduce(g, out, x, n, lib::Op::Sum, temp, tile);
    else if (which == "max")
      lib::device_reduce(g, out, x, n, lib::Op::Max, temp, tile);
    else if (which == "affine")
      lib::device_reduce(
          g, out, x, n, [](const Expr& a, const Expr& b) { return then_affine(a, b); }, 1 << 16, temp, tile);
    else
      lib::device_reduce(
          g, out, x, n, [](const Expr& a, const Expr& b) { return later_non_zero(a, b); }, 0, temp, tile);
  });
  return k.build();
}

// A reduction chains no tiles: every tile but the last publishes its total and ends; only the last
// waits, for each word in turn (one loop), with no look-back's ballots and no count of finished
// tiles. With the scans' look-back, device_sum ran at 0.38 to 0.53 of CUB's reduce on an H200.
TEST(DeviceLibrary, AReductionsTilesWaitForNoOtherTileButTheLastForAll) {
  for (const std::string which : {"sum", "user"}) {
    const std::string src = specialize_for(reduce_kernel({256, 8}, which), Spec{}).source;
    EXPECT_EQ(src.find("__ballot_sync"), std::string::npos) << src;
    EXPECT_EQ(src.find("__nv_atomic_fetch_add"), std::string::npos) << src;
    EXPECT_EQ(test_support::count(src, "while ("), 1) << src;
  }
}

// A reduction's launch: a block a tile up to about 2^20 threads, no more.
TEST(DeviceLibrary, AReductionIsLaunchedWithABlockATileUpToAboutAMillionThreads) {
  EXPECT_EQ(lib::reduce_blocks(1, 1024), 1);
  EXPECT_EQ(lib::reduce_blocks(80003, 1024), lib::device_blocks(80003, 1024));
  EXPECT_EQ(lib::reduce_blocks(std::int64_t{1} << 28, 1024), 1024);
  EXPECT_EQ(lib::reduce_blocks(std::int64_t{1} << 28, 256, {4}), 4096);
  EXPECT_GE(lib::reduce_blocks(1000, 0), 1);  // no division by a block of no threads
}

TEST(DeviceLibrary, ReductionsCombineEveryElementInOrderAndGiveTheIdentityForNone) {
  for (Shape s : kShapes)
    for (const std::string which : {"sum", "max", "user", "affine"}) {
      Kernel kernel = reduce_kernel(s, which);
      const lib::DeviceTile tile{s.items};
      for (int n : sizes(s.threads * s.items)) {
        auto x = inputs(n);
        if (which == "user")
          for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = i % 11 == 4 ? i : 0;
        if (which == "affine")  // odd multipliers, so that no map forgets what came before it
          for (int i = 0; i < n; ++i) x[static_cast<std::size_t>(i)] = ((2 * (i % 7) + 3) << 16) | (i * 37 % 1000);
        int want = which == "max" ? std::numeric_limits<int>::min() : which == "affine" ? 1 << 16 : 0;
        for (int v : x)
          want = which == "sum"      ? static_cast<int>(static_cast<unsigned>(want) + static_cast<unsigned>(v))
                 : which == "max"    ? std::max(want, v)
                 : which == "affine" ? then_affine(want, v)
                                     : later_non_zero(want, v);
        // A block a tile, and fewer blocks, each its share of consecutive tiles (some with none).
        const std::int64_t tiles = lib::device_blocks(n, s.threads, tile);
        for (std::int64_t blocks : {tiles, std::int64_t{1}, std::int64_t{3}}) {
          if (blocks > tiles || (blocks < tiles && test_support::kSanitized && n > 4 * s.threads * s.items)) continue;
          for (const Device& d : devices()) {
            std::vector<std::uint64_t> temp(static_cast<std::size_t>(lib::device_temp_words(n, s.threads, tile)), 0);
            for (int launch = 0; launch < 2; ++launch) {
              std::vector<int> out{12345};
              test_support::launch_on(kernel, d, Grid{blocks, s.threads}, n, x, out, temp);
              EXPECT_EQ(out[0], want) << kernel.name() << " n=" << n << " on " << blocks << " blocks, launch " << launch
                                      << " on " << d.name();
            }
            EXPECT_EQ(std::count(temp.begin(), temp.end(), 0u), static_cast<long>(temp.size()));
          }
        }
      }
    }
}

// ---- values of other types: f32 in the status word by its bits, 64-bit values in words of their own

/// Inputs of type T whose sums are exact in T (small integers, scaled into 64 bits for the integers
/// of 64 bits, so that their sums pass 32 bits, and by 1/8 for f64).
template <class T>
std::vector<T> typed_inputs(int n) {
  std::vector<T> x(static_cast<std::size_t>(n));
  for (int i = 0; i < n; ++i) {
    const long long small = (i * 7919L) % 201 - 100;
    if constexpr (std::is_same_v<T, float>)
      x[static_cast<std::size_t>(i)] = static_cast<float>(small);
    else if constexpr (std::is_same_v<T, double>)
      x[static_cast<std::size_t>(i)] = static_cast<double>(small) / 8.0;
    else
      x[static_cast<std::size_t>(i)] = static_cast<T>(small * (1LL << 40) + i);
  }
  return x;
}

/// An inclusive scan (Op::Sum), an exclusive scan (Op::Max), a reduction (Op::Sum) and one by
/// Op::Min of T, in one kernel each.
template <class T>
std::vector<Kernel> typed_kernels(Shape s) {
  std::vector<Kernel> out;
  for (int which = 0; which < 4; ++which) {
    KernelBuilder k(std::string("typed_") + type_name(scalar_of<T>) + "_" + std::to_string(which) + "_" +
                    std::to_string(s.threads));
    auto n = k.param<int>("n");
    auto x = k.param<GlobalPtr<const T>>("x", extent(n));
    auto y = k.param<GlobalPtr<T>>("y", extent(which < 2 ? Expr(n) : Expr(1)));
    const lib::DeviceTile tile{s.items};
    auto temp =
        k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, s.threads, tile, scalar_of<T>)));
    k.block_threads(s.threads);
    k.body([&](Scope& g) {
      if (which == 0) lib::device_inclusive_scan(g, y, x, n, lib::Op::Sum, temp, tile);
      if (which == 1) lib::device_exclusive_scan(g, y, x, n, lib::Op::Max, temp, tile);
      if (which == 2) lib::device_reduce(g, y, x, n, lib::Op::Sum, temp, tile);
      if (which == 3) lib::device_reduce(g, y, x, n, lib::Op::Min, temp, tile);
    });
    out.push_back(k.build());
  }
  return out;
}

template <class T>
std::vector<T> typed_reference(const std::vector<T>& x, int which) {
  const T lowest =
      std::numeric_limits<T>::has_infinity ? -std::numeric_limits<T>::infinity() : std::numeric_limits<T>::lowest();
  const T highest =
      std::numeric_limits<T>::has_infinity ? std::numeric_limits<T>::infinity() : std::numeric_limits<T>::max();
  std::vector<T> y;
  T acc = which == 1 ? lowest : which == 3 ? highest : T(0);
  for (const T& v : x) {
    if (which == 1) y.push_back(acc);
    acc = which == 1 ? std::max(acc, v) : which == 3 ? std::min(acc, v) : static_cast<T>(acc + v);
    if (which == 0) y.push_back(acc);
  }
  if (which >= 2) y = {acc};
  return y;
}

template <class T>
void check_typed(Shape s) {
  const std::vector<Kernel> kernels = typed_kernels<T>(s);
  if (nvrtc_available()) {
    for (const Kernel& k : kernels) EXPECT_EQ(compile(k, Spec{}).log, "") << k.name();
  }
  const lib::DeviceTile tile{s.items};
  for (int n : sizes(s.threads * s.items)) {
    const auto x = typed_inputs<T>(n);
    const std::int64_t tiles = lib::device_blocks(n, s.threads, tile);
    for (int which = 0; which < 4; ++which) {
      const Kernel& kernel = kernels[static_cast<std::size_t>(which)];
      const auto want = typed_reference(x, which);
      for (const Device& d : devices()) {
        std::vector<std::uint64_t> temp(
            static_cast<std::size_t>(lib::device_temp_words(n, s.threads, tile, scalar_of<T>)), 0);
        ASSERT_EQ(static_cast<std::int64_t>(temp.size()), tiles + 1 + (sizeof(T) == 8 ? 2 * tiles : 0));
        for (int launch = 0; launch < 2; ++launch) {  // the second reuses the storage as the first left it
          std::vector<T> y(which < 2 ? x.size() : 1, T(7));
          test_support::launch_on(kernel, d, Grid{tiles, s.threads}, n, x, y, temp);
          EXPECT_EQ(y, want) << kernel.name() << " n=" << n << " launch " << launch << " on " << d.name();
          // The tiles' words and the count are zero again; 64-bit values' words are only ever read
          // after their tile's status says they are written.
          EXPECT_EQ(std::count(temp.begin(), temp.begin() + tiles + 1, 0u), tiles + 1)
              << kernel.name() << " n=" << n << " left its storage non-zero on " << d.name();
        }
      }
    }
  }
}

TEST(DeviceLibrary, ScansAndReductionsOfF32GiveTheirReference) {
  for (Shape s : kShapes) check_typed<float>(s);
}
TEST(DeviceLibrary, ScansAndReductionsOfF64GiveTheirReference) {
  for (Shape s : kShapes) check_typed<double>(s);
}
TEST(DeviceLibrary, ScansAndReductionsOfI64GiveTheirReference) {
  for (Shape s : kShapes) check_typed<std::int64_t>(s);
}
TEST(DeviceLibrary, ScansAndReductionsOfU64GiveTheirReference) {
  for (Shape s : kShapes) check_typed<std::uint64_t>(s);
}

template <class T>
Kernel select_kernel(Shape s) {
  KernelBuilder k(std::string("select_") + type_name(scalar_of<T>) + "_" + std::to_string(s.threads));
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const T>>("x", extent(n));
  auto out = k.param<GlobalPtr<T>>("out", extent(n));
  auto count = k.param<GlobalPtr<int>>("count", extent(1));
  const lib::DeviceTile tile{s.items, s.backoff_ns};
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, s.threads, tile)));
  k.block_threads(s.threads);
  k.body([&](Scope& g) {
    lib::device_select(
        g, out, count, x, n, [](const Expr& v) { return v > cast(scalar_of<T>, 0); }, temp, tile);
  });
  return k.build();
}

// A select writes a warp's kept items to neighbouring places: the tile's kept items are staged in
// shared memory and written out striped. Straight from their threads (8 items a thread, about half
// kept), a warp's stores fell 4 items apart: 0.64 sectors a kept item on the interpreter's count,
// under 0.2 now (4.8 sectors for 32 lanes).
TEST(DeviceLibrary, ASelectWritesEachWarpsKeptItemsCoalesced) {
  const Kernel kernel = select_kernel<int>({256, 8});
  const int n = 4 * 256 * 8;
  std::vector<int> x(n), out(n), count{-1};
  for (int i = 0; i < n; ++i) x[i] = (i * 2654435761u >> 13) % 2 == 0 ? i + 1 : -i;
  std::vector<std::uint64_t> temp(static_cast<std::size_t>(lib::device_temp_words(n, 256, {8})), 0);
  InterpreterOptions io;
  io.measure = true;
  const LaunchReport run = kernel.launch(Device::interpreter(io), Grid{lib::device_blocks(n, 256, {8}), 256}, n,
                                         std::as_const(x), out, count, temp);
  ASSERT_TRUE(run.measured);
  double sectors = 0;
  for (const AccessCost& a : run.measured->accesses)
    if (a.memory == "out" && a.write) sectors += a.sectors * static_cast<double>(a.requests);
  ASSERT_GT(count[0], n / 4);
  EXPECT_LT(sectors / count[0], 0.2) << run.measured->text();
}

template <class T>
void check_select(Shape s) {
  Kernel kernel = select_kernel<T>(s);
  const lib::DeviceTile tile{s.items};
  for (int n : sizes(s.threads * s.items)) {
    std::vector<T> x(static_cast<std::size_t>(n)), want;
    for (int i = 0; i < n; ++i) {
      x[static_cast<std::size_t>(i)] = static_cast<T>((i * 37 % 23) - 11) * static_cast<T>(i + 1);
      if (x[static_cast<std::size_t>(i)] > 0) want.push_back(x[static_cast<std::size_t>(i)]);
    }
    for (const Device& d : devices()) {
      std::vector<std::uint64_t> temp(static_cast<std::size_t>(lib::device_temp_words(n, s.threads, tile)), 0);
      for (int launch = 0; launch < 2; ++launch) {
        std::vector<T> out(x.size(), T(-1));
        std::vector<int> count{-1};
        test_support::launch_on(kernel, d, Grid{lib::device_blocks(n, s.threads, tile), s.threads}, n, x, out, count,
                                temp);
        ASSERT_EQ(count[0], static_cast<int>(want.size())) << kernel.name() << " n=" << n << " on " << d.name();
        out.resize(want.size());
        EXPECT_EQ(out, want) << kernel.name() << " n=" << n << " launch " << launch << " on " << d.name();
      }
    }
  }
}

TEST(DeviceLibrary, SelectKeepsTheElementsThatHoldInTheirOrderAndCountsThem) {
  for (Shape s : kShapes) {
    check_select<int>(s);
    check_select<float>(s);
  }
}

Kernel histogram_kernel(int threads, int items, int bins) {
  KernelBuilder k("histogram_" + std::to_string(bins));
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto hist = k.param<GlobalPtr<std::uint32_t>>("hist", extent(bins));
  k.block_threads(threads);
  // Negative values fall in no bin; the others in value % bins.
  k.body([&](Scope& g) {
    lib::device_histogram(g, hist, x, n, bins, [&](const Expr& v) { return select(v < 0, -1, v % bins); }, {items});
  });
  return k.build();
}

// With fewer blocks than tiles each block counts its share of the tiles and adds its counts once: at
// 2^28 bytes a block a tile made 16.8 million device atomics, and ran at 0.42 of CUB's histogram on an
// H200.
TEST(DeviceLibrary, HistogramAddsEachElementsBinToTheCounts) {
  for (auto [threads, items, bins] : {std::tuple{32, 4, 16}, std::tuple{256, 2, 300}, std::tuple{64, 3, 64}}) {
    Kernel kernel = histogram_kernel(threads, items, bins);
    for (int n : {0, 1, threads * items - 1, 9 * threads * items + 5}) {
      const auto x = inputs(n);
      std::vector<std::uint32_t> want(static_cast<std::size_t>(bins), 3);  // added to what is there
      for (int v : x)
        if (v >= 0) ++want[static_cast<std::size_t>(v % bins)];
      const std::int64_t tiles = lib::device_blocks(n, threads, {items});
      // A block a tile, and fewer blocks than tiles, each taking the tiles b, b + G, ...
      for (std::int64_t blocks : {tiles, std::int64_t{1}, std::min<std::int64_t>(tiles, 4)})
        for (const Device& d : devices()) {
          std::vector<std::uint32_t> hist(static_cast<std::size_t>(bins), 3);
          test_support::launch_on(kernel, d, Grid{blocks, threads}, n, x, hist);
          EXPECT_EQ(hist, want) << kernel.name() << " n=" << n << " on " << blocks << " blocks on " << d.name();
        }
    }
  }
}

// A bin of any integer type: the bytes themselves (u8, whose range holds no 256) and an i64 bin
// (2^32 + v, which as an i32 would wrap into range) count right on every device. A float bin is
// V0913 at the caller's line, once. Before, the u8 bin was a V0707 ("literal 256 does not fit in u8")
// at a line inside the library.
TEST(DeviceLibrary, HistogramBinsOfAnyIntegerTypeCountAndAFloatBinIsRefused) {
  for (bool wide : {false, true}) {
    KernelBuilder k(wide ? "histogram_i64" : "histogram_u8");
    auto n = k.param<int>("n");
    auto x = k.param<GlobalPtr<const std::uint8_t>>("x", extent(n));
    auto hist = k.param<GlobalPtr<std::uint32_t>>("hist", extent(256));
    k.block_threads(64);
    k.body([&](Scope& g) {
      lib::device_histogram(g, hist, x, n, 256, [&](const Expr& v) {
        // wide: odd bytes at 2^32 + v, past every bin
        return wide ? cast<std::int64_t>(v) + select(v % 2 == 1, std::int64_t{1} << 32, std::int64_t{0}) : v;
      });
    });
    Kernel kernel = k.build();
    for (int count : {1, 1000}) {
      std::vector<std::uint8_t> in(static_cast<std::size_t>(count));
      for (std::size_t i = 0; i < in.size(); ++i) in[i] = static_cast<std::uint8_t>(i * 37 % 256);
      std::vector<std::uint32_t> want(256, 0);
      for (std::uint8_t v : in)
        if (!wide || v % 2 == 0) ++want[v];
      for (const Device& d : devices()) {
        std::vector<std::uint32_t> got(256, 0);
        test_support::launch_on(kernel, d, Grid{lib::device_blocks(count, 64), 64}, count, in, got);
        EXPECT_EQ(got, want) << kernel.name() << " n=" << count << " on " << d.name();
      }
    }
  }
  KernelBuilder k("histogram_f32");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto hist = k.param<GlobalPtr<std::uint32_t>>("hist", extent(16));
  k.block_threads(64);
  int line = 0;
  k.body([&](Scope& g) {
    line = __LINE__ + 1;
    lib::device_histogram(g, hist, x, n, 16, [](const Expr& v) { return v * 2.0f; }, {4});
  });
  try {
    k.build();
    ADD_FAILURE() << "a float bin was accepted";
  } catch (const CheckError& e) {
    EXPECT_TRUE(testing::has_diag(e, "V0913", line, "tests/test_device_library.cpp")) << render_all(e.diagnostics());
    EXPECT_EQ(e.diagnostics().size(), 1u) << render_all(e.diagnostics());
    EXPECT_NE(testing::describe(e.diagnostics()).find("lib::device_histogram's bin_of gives f32"), std::string::npos);
  }
}

TEST(DeviceLibrary, TheGeneratedCudaCompilesCleanlyAndTheScanMovesWholeVectors) {
  REQUIRE_NVRTC();
  for (const Kernel& k : {scan_kernel({256, 8}, ScanKind::Inclusive, false), reduce_kernel({256, 8}, "user"),
                          select_kernel<float>({256, 8}), histogram_kernel(256, 4, 300)}) {
    auto c = compile(k, Spec{});
    EXPECT_EQ(c.log, "") << k.name();
  }
  // The scan's loads and stores are 16-byte vectors (the tile's threads' items are aligned).
  const std::string src = specialize_for(scan_kernel({256, 8}, ScanKind::Inclusive, false), Spec{}).source;
  EXPECT_NE(src.find("int4"), std::string::npos) << src;
  EXPECT_EQ(src.find("__nanosleep"), std::string::npos) << "a look-back that sleeps without a back-off";
  // With a back-off, the look-back's poll of a window not yet published sleeps first: once in the code.
  const Kernel slept = scan_kernel({32, 4, 500}, ScanKind::Inclusive, false);
  const std::string slept_src = specialize_for(slept, Spec{}).source;
  EXPECT_EQ(test_support::count(slept_src, "__nanosleep(static_cast<unsigned>(min(max(500, 0), 1000000)));"), 1)
      << slept_src;
  EXPECT_EQ(compile(slept, Spec{}).log, "");
}

/// Block b is tile `offset + b` of a chain whose first `offset` tiles' words the test writes as it
/// likes (so that a look-back meets tiles that have published only their own totals, as on a GPU
/// where they are still looking back themselves): out[b] = tile_prefix of x[b].
Kernel prefix_kernel(bool user) {
  KernelBuilder k(user ? "tile_prefix_user" : "tile_prefix_sum");
  auto offset = k.param<int>("offset");
  auto blocks = k.param<int>("blocks");
  auto x = k.param<GlobalPtr<const int>>("x", extent(blocks));
  auto out = k.param<GlobalPtr<int>>("out", extent(blocks));
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(offset + blocks));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, [&](Scope& b, Expr blk, View out_b) {
      b.if_(blk < blocks, [&](Scope& b) {
        Var total = b.let("total", x[blk]);
        Var before = user ? lib::tile_prefix(
                                b, "before", temp, offset + blk, total,
                                [](const Expr& a, const Expr& c) { return later_non_zero(a, c); }, 0)
                          : lib::tile_prefix(b, "before", temp, offset + blk, total, lib::Op::Sum);
        lib::store_by_one(b, out_b, 0, before);
      });
    });
  });
  return k.build();
}

TEST(DeviceLibrary, TheLookBackCombinesWindowsOfTilesThatPublishedOnlyTheirOwnTotalsInOrder) {
  const std::uint64_t kAggregate = 1ull << 62, kInclusive = 2ull << 62;
  for (bool user : {false, true}) {
    Kernel kernel = prefix_kernel(user);
    // Tile 0 complete, tiles 1 .. offset - 1 only their own totals: the first block's look-back
    // crosses 32-tile windows (offset 40: two windows; 70: three), the later ones stop at the tile
    // before them.
    for (int offset : {1, 2, 33, 40, 70}) {
      const int blocks = 5;
      std::vector<int> seeded(static_cast<std::size_t>(offset)), x(blocks);
      for (int i = 0; i < offset; ++i)
        seeded[static_cast<std::size_t>(i)] = user ? (i % 13 == 3 ? 100 + i : 0) : i * 3 - 50;
      for (int b = 0; b < blocks; ++b) x[static_cast<std::size_t>(b)] = user ? (b == 2 ? 7 : 0) : b + 1;
      std::vector<int> want(blocks);
      int acc = 0;
      for (int v : seeded) acc = user ? later_non_zero(acc, v) : acc + v;
      for (int b = 0; b < blocks; ++b) {
        want[static_cast<std::size_t>(b)] = acc;
        acc = user ? later_non_zero(acc, x[static_cast<std::size_t>(b)]) : acc + x[static_cast<std::size_t>(b)];
      }
      for (const Device& d : devices()) {
        std::vector<std::uint64_t> temp(static_cast<std::size_t>(offset + blocks), 0);
        for (int i = 0; i < offset; ++i)
          temp[static_cast<std::size_t>(i)] =
              (i == 0 ? kInclusive : kAggregate) | static_cast<std::uint32_t>(seeded[static_cast<std::size_t>(i)]);
        std::vector<int> out(blocks, -1);
        test_support::launch_on(kernel, d, Grid{blocks, 64}, offset, blocks, x, out, temp);
        EXPECT_EQ(out, want) << kernel.name() << " offset " << offset << " on " << d.name();
        // Each tile published its inclusive value.
        int inclusive = want.back();
        inclusive = user ? later_non_zero(inclusive, x.back()) : inclusive + x.back();
        EXPECT_EQ(temp.back(), kInclusive | static_cast<std::uint32_t>(inclusive)) << kernel.name();
      }
    }
  }
}

/// A radix sort's three kernels at T threads and `tile`: the counts, their exclusive scan, the
/// scatter (with values or keys only).
struct RadixKernels {
  Kernel count, scan, scatter;
  int threads;
  lib::RadixTile tile;
  bool values;
};
RadixKernels radix_kernels(int threads, lib::RadixTile tile, bool values) {
  RadixKernels r{Kernel{}, Kernel{}, Kernel{}, threads, tile, values};
  {
    KernelBuilder k("radix_count");
    auto n = k.param<int>("n");
    auto shift = k.param<int>("shift");
    auto keys = k.param<GlobalPtr<const std::uint32_t>>("keys", extent(n));
    auto table = k.param<GlobalPtr<int>>("table", extent(lib::radix_table_extent(n, threads, tile)));
    k.block_threads(threads);
    k.body([&](Scope& g) { lib::radix_count(g, table, keys, n, shift, tile); });
    r.count = k.build();
  }
  {
    KernelBuilder k("radix_offsets");
    auto m = k.param<int>("m");
    auto table = k.param<GlobalPtr<const int>>("table", extent(m));
    auto offsets = k.param<GlobalPtr<int>>("offsets", extent(m));
    auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(m, threads)));
    k.block_threads(threads);
    k.body([&](Scope& g) { lib::device_exclusive_scan(g, offsets, table, m, lib::Op::Sum, temp); });
    r.scan = k.build();
  }
  KernelBuilder k(values ? "radix_scatter_pairs" : "radix_scatter_keys");
  auto n = k.param<int>("n");
  auto shift = k.param<int>("shift");
  auto keys_in = k.param<GlobalPtr<const std::uint32_t>>("keys_in", extent(n));
  auto vals_in = k.param<GlobalPtr<const std::uint32_t>>("vals_in", extent(n));
  auto offsets = k.param<GlobalPtr<const int>>("offsets", extent(lib::radix_table_extent(n, threads, tile)));
  auto keys_out = k.param<GlobalPtr<std::uint32_t>>("keys_out", extent(n));
  auto vals_out = k.param<GlobalPtr<std::uint32_t>>("vals_out", extent(n));
  k.block_threads(threads);
  k.body([&](Scope& g) {
    if (values)
      lib::radix_scatter(g, keys_out, vals_out, keys_in, vals_in, n, offsets, shift, tile);
    else
      lib::radix_scatter(g, keys_out, keys_in, n, offsets, shift, tile);
  });
  r.scatter = k.build();
  return r;
}

/// Sorts `keys` (and `vals`) on `d`: a pass a digit, from one pair of buffers to the other.
void radix_sort_on(const RadixKernels& r, const Device& d, std::vector<std::uint32_t>& keys,
                   std::vector<std::uint32_t>& vals) {
  const int n = static_cast<int>(keys.size()), T = r.threads;
  const std::int64_t m = lib::radix_table_size(n, T, r.tile);
  std::vector<int> table(static_cast<std::size_t>(m)), offsets(table.size());
  std::vector<std::uint64_t> temp(static_cast<std::size_t>(lib::device_temp_words(m, T)), 0);
  std::vector<std::uint32_t> keys2(keys.size()), vals2(vals.size());
  const Grid tiles{lib::radix_blocks(n, T, r.tile), T};
  for (int shift = 0; shift < 32; shift += r.tile.bits) {
    test_support::launch_on(r.count, d, tiles, n, shift, std::as_const(keys), table);
    test_support::launch_on(r.scan, d, Grid{lib::device_blocks(m, T), T}, static_cast<int>(m), std::as_const(table),
                            offsets, temp);
    test_support::launch_on(r.scatter, d, tiles, n, shift, std::as_const(keys), std::as_const(vals),
                            std::as_const(offsets), keys2, vals2);
    std::swap(keys, keys2);
    std::swap(vals, vals2);
  }
}

/// n keys to sort, full 32-bit ones and many repeated ones (so that stability shows in the values,
/// their indices), and std::stable_sort's order of both.
struct SortCase {
  std::vector<std::uint32_t> keys, vals, want_keys, want_vals;
};
SortCase sort_case(int n) {
  SortCase c;
  for (int i = 0; i < n; ++i) {
    const std::uint32_t h = static_cast<std::uint32_t>(i) * 2654435761u;
    c.keys.push_back(i % 3 == 0 ? h : (h % 37) << 20);
    c.vals.push_back(static_cast<std::uint32_t>(i));
  }
  std::vector<std::size_t> order(c.keys.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::stable_sort(order.begin(), order.end(), [&](std::size_t a, std::size_t b) { return c.keys[a] < c.keys[b]; });
  for (std::size_t i : order) {
    c.want_keys.push_back(c.keys[i]);
    c.want_vals.push_back(c.vals[i]);
  }
  return c;
}

TEST(DeviceLibrary, RadixSortPassesSortKeysAndTheirValuesStably) {
  struct Shape {
    int threads;
    lib::RadixTile tile;
    bool values;
  };
  for (const Shape& sh : {Shape{256, {16, 8}, true}, Shape{32, {3, 4}, true}, Shape{64, {4, 5}, false}}) {
    const RadixKernels r = radix_kernels(sh.threads, sh.tile, sh.values);
    const int per = sh.threads * sh.tile.items;
    for (int n : {0, 1, per - 1, 2 * per + 5}) {
      const auto [keys, vals, want_keys, want_vals] = sort_case(n);
      for (const Device& d : devices()) {
        auto k = keys, v = vals;
        radix_sort_on(r, d, k, v);
        EXPECT_EQ(k, want_keys) << sh.threads << " threads, " << sh.tile.bits << "-bit digits, n=" << n << " on "
                                << d.name();
        if (sh.values) {
          EXPECT_EQ(v, want_vals) << "the values, n=" << n << " on " << d.name();
        }
      }
    }
    if (nvrtc_available()) {
      for (const Kernel* k : {&r.count, &r.scan, &r.scatter}) EXPECT_EQ(compile(*k, Spec{}).log, "") << k->name();
    }
  }
}

// A pass writes each warp's keys to neighbouring places: the tile is sorted by digit in shared memory
// first and read back striped, so that a warp's 32 keys lie in a few runs of their digits. Straight
// from the threads that ranked them, uniformly random 8-bit digits put each lane's key in its own
// run (32 sectors a store, 6.2 now, counted as the interpreter runs the scatter; CUB's onesweep sorts the
// tile first too).
TEST(DeviceLibrary, ARadixPassWritesEachWarpsKeysInAFewSectors) {
  const RadixKernels r = radix_kernels(256, {16, 8}, true);
  const int n = 4 * 256 * 16;
  std::vector<std::uint32_t> keys(n), vals(n), keys2(n), vals2(n);
  for (int i = 0; i < n; ++i) {
    keys[i] = static_cast<std::uint32_t>(i) * 2654435761u >> 7;
    vals[i] = static_cast<std::uint32_t>(i);
  }
  const std::int64_t m = lib::radix_table_size(n, 256, r.tile);
  std::vector<int> table(static_cast<std::size_t>(m)), offsets(table.size());
  std::vector<std::uint64_t> temp(static_cast<std::size_t>(lib::device_temp_words(m, 256)), 0);
  const Grid tiles{lib::radix_blocks(n, 256, r.tile), 256};
  const Device interp = Device::interpreter();
  r.count.launch(interp, tiles, n, 0, std::as_const(keys), table);
  r.scan.launch(interp, Grid{lib::device_blocks(m, 256), 256}, static_cast<int>(m), std::as_const(table), offsets,
                temp);
  InterpreterOptions io;
  io.measure = true;
  const LaunchReport run = r.scatter.launch(Device::interpreter(io), tiles, n, 0, std::as_const(keys),
                                            std::as_const(vals), std::as_const(offsets), keys2, vals2);
  ASSERT_TRUE(run.measured);
  for (const char* out : {"keys_out", "vals_out"}) {
    std::int64_t requests = 0;
    double sectors = 0;
    for (const AccessCost& a : run.measured->accesses)
      if (a.memory == out && a.write) {
        requests += a.requests;
        sectors += a.sectors * static_cast<double>(a.requests);
      }
    ASSERT_EQ(requests, n / 32) << out;
    EXPECT_LT(sectors / static_cast<double>(requests), 8.0) << out << "\n" << run.measured->text();
  }
  for (int i = 1; i < n; ++i) ASSERT_LE(keys2[i - 1] & 255u, keys2[i] & 255u) << i;
}

// ---- the one-sweep radix sort: a histogram launch, then one launch a pass

struct SweepKernels {
  Kernel histogram, pass;
  int threads;
  lib::RadixTile tile;
  bool values;
};
SweepKernels sweep_kernels(int threads, lib::RadixTile tile, bool values) {
  SweepKernels r{Kernel{}, Kernel{}, threads, tile, values};
  {
    KernelBuilder k("radix_histogram");
    auto n = k.param<int>("n");
    auto keys = k.param<GlobalPtr<const std::uint32_t>>("keys", extent(n));
    auto hist = k.param<GlobalPtr<int>>("hist", extent(lib::radix_hist_size(tile)));
    k.block_threads(threads);
    k.body([&](Scope& g) { lib::radix_histogram(g, hist, keys, n, tile); });
    r.histogram = k.build();
  }
  KernelBuilder k(values ? "radix_onesweep_pairs" : "radix_onesweep_keys");
  auto n = k.param<int>("n");
  auto shift = k.param<int>("shift");
  auto keys_in = k.param<GlobalPtr<const std::uint32_t>>("keys_in", extent(n));
  auto vals_in = k.param<GlobalPtr<const std::uint32_t>>("vals_in", extent(n));
  auto hist = k.param<GlobalPtr<int>>("hist", extent(lib::radix_hist_size(tile)));
  auto lookback = k.param<GlobalPtr<std::uint32_t>>("lookback", extent(lib::radix_lookback_extent(n, threads, tile)));
  auto keys_out = k.param<GlobalPtr<std::uint32_t>>("keys_out", extent(n));
  auto vals_out = k.param<GlobalPtr<std::uint32_t>>("vals_out", extent(n));
  k.block_threads(threads);
  k.body([&](Scope& g) {
    if (values)
      lib::radix_onesweep(g, keys_out, vals_out, keys_in, vals_in, n, hist, lookback, shift, tile);
    else
      lib::radix_onesweep(g, keys_out, keys_in, n, hist, lookback, shift, tile);
  });
  r.pass = k.build();
  return r;
}

// The count of finished tiles, after which the last tile zeroes the storage: every tile's add
// releases (its reads of the words come before it), and only the last tile acquires, by a load of
// the count. An add that acquired too made every tile invalidate its L1 (CCTL.IVALL on sm_90),
// where the hand-written twins' relaxed adds do not.
TEST(DeviceLibrary, EveryTileCountsItselfFinishedWithAReleaseAndOnlyTheLastAcquires) {
  const std::string scan = specialize_for(scan_kernel({256, 8}, ScanKind::Inclusive, false), Spec{}).source;
  const std::string sweep = specialize_for(sweep_kernels(256, {8, 8}, true).pass, Spec{}).source;
  for (const std::string* src : {&scan, &sweep}) {
    EXPECT_EQ(src->find(", __NV_ATOMIC_ACQ_REL, __NV_THREAD_SCOPE"), std::string::npos) << *src;
    const int adds = test_support::count(*src, "__nv_atomic_fetch_add(");
    EXPECT_EQ(adds, 1) << *src;  // the sweep's look-back words are zeroed by the pass's count
    EXPECT_EQ(test_support::count(*src, ", __NV_ATOMIC_RELEASE, __NV_THREAD_SCOPE_DEVICE)"), adds) << *src;
    // The acquires: a load of the count in each last tile's branch.
    EXPECT_EQ(test_support::count(*src, "_seen = "), adds) << *src;
    for (std::size_t at = src->find("_seen = "); at != std::string::npos; at = src->find("_seen = ", at + 1)) {
      EXPECT_EQ(src->compare(src->find('\n', at) - 1, 1, ";"), 0);
      EXPECT_NE(src->substr(at, src->find('\n', at) - at).find("vt_atomic_load<__NV_ATOMIC_ACQUIRE, "),
                std::string::npos)
          << src->substr(at, 200);
      const std::size_t branch = src->rfind("_last != 0) {", at);
      ASSERT_NE(branch, std::string::npos) << *src;
      EXPECT_EQ(src->substr(branch, at - branch).find("}"), std::string::npos) << src->substr(branch, at - branch);
    }
  }
}

// The count is off the tile's path from its look-back to its stores: the first warp's lane 0 adds
// after the tile's outputs are written, and no block barrier waits for it (the release add is a
// MEMBAR and an L2 round trip on sm_90; the block used to wait for both at the barrier that hands
// on the look-back's prefix). The last tile's first warp zeroes the words.
TEST(DeviceLibrary, ATilesCountComesAfterItsOutputsAndNoBarrierWaitsForIt) {
  const std::string scan = specialize_for(scan_kernel({256, 8}, ScanKind::Inclusive, false), Spec{}).source;
  const std::string sweep = specialize_for(sweep_kernels(256, {8, 8}, true).pass, Spec{}).source;
  for (const std::string* src : {&scan, &sweep}) {
    const std::size_t add = src->find("__nv_atomic_fetch_add(");
    ASSERT_NE(add, std::string::npos) << *src;
    EXPECT_EQ(src->find("__syncthreads();", add), std::string::npos) << src->substr(add);
    const std::string out = src == &scan ? "&y[" : "&keys_out[";
    const std::size_t last_store = src->rfind(out);
    ASSERT_NE(last_store, std::string::npos) << *src;
    EXPECT_LT(last_store, add) << *src;
    // Lane 0 of the first warp adds; the warp learns the result by a shuffle, not through shared memory.
    EXPECT_NE(src->find("__shfl_sync(0xffffffffu, ", add), std::string::npos) << src->substr(add);
  }
}

TEST(DeviceLibrary, OneSweepRadixSortSortsKeysAndValuesStablyOnReusedStorage) {
  struct Shape {
    int threads;
    lib::RadixTile tile;
    bool values;
  };
  for (const Shape& sh : {Shape{256, {8, 8}, true}, Shape{32, {3, 4}, true}, Shape{64, {5, 2}, false}}) {
    const SweepKernels r = sweep_kernels(sh.threads, sh.tile, sh.values);
    const int per = sh.threads * sh.tile.items;
    // Under a sanitizer the sizes no tile divides, up to four tiles' look-back.
    const std::vector<int> sizes = test_support::kSanitized
                                       ? std::vector<int>{1, per - 1, 3 * per + 5}
                                       : std::vector<int>{0, 1, per - 1, 3 * per + 5, 37 * per + 3};
    for (int n : sizes) {
      const auto [keys, vals, want_keys, want_vals] = sort_case(n);
      for (const Device& d : devices()) {
        std::vector<int> hist(static_cast<std::size_t>(lib::radix_hist_size(sh.tile)), 0);
        std::vector<std::uint32_t> lookback(static_cast<std::size_t>(lib::radix_lookback_words(n, sh.threads, sh.tile)),
                                            0);
        const Grid tiles{lib::radix_blocks(n, sh.threads, sh.tile), sh.threads};
        for (int sort = 0; sort < 2; ++sort) {  // the second on the storage as the first left it
          auto k = keys, v = vals;
          std::vector<std::uint32_t> k2(k.size()), v2(v.size());
          // The histogram a block a tile, then on three blocks each counting its share of the tiles.
          const Grid counting = sort == 0 ? tiles : Grid{std::min<std::int64_t>(3, tiles.blocks), sh.threads};
          test_support::launch_on(r.histogram, d, counting, n, std::as_const(k), hist);
          for (int shift = 0; shift < 32; shift += sh.tile.bits) {
            test_support::launch_on(r.pass, d, tiles, n, shift, std::as_const(k), std::as_const(v), hist, lookback, k2,
                                    v2);
            std::swap(k, k2);
            std::swap(v, v2);
          }
          const std::string at = std::to_string(sh.threads) + " threads, " + std::to_string(sh.tile.bits) +
                                 "-bit digits, n=" + std::to_string(n) + ", sort " + std::to_string(sort) + " on " +
                                 d.name();
          EXPECT_EQ(k, want_keys) << at;
          if (sh.values) {
            EXPECT_EQ(v, want_vals) << "the values, " << at;
          }
          EXPECT_EQ(std::count(hist.begin(), hist.end(), 0), static_cast<long>(hist.size())) << "the counts, " << at;
          // The first region is zero again; the second, the last pass's, the next sort's first pass zeroes.
          const auto half = static_cast<long>(lookback.size() / 2);
          EXPECT_EQ(std::count(lookback.begin(), lookback.begin() + half, 0u), half) << "the look-back words, " << at;
        }
      }
    }
    if (nvrtc_available()) {
      for (const Kernel* k : {&r.histogram, &r.pass}) EXPECT_EQ(compile(*k, Spec{}).log, "") << k->name();
    }
  }
}

TEST(DeviceLibrary, TheOneSweepHistogramIsLaunchedWithABlockATileUpTo1024Blocks) {
  EXPECT_EQ(lib::radix_histogram_blocks(1, 256), 1);
  EXPECT_EQ(lib::radix_histogram_blocks(20000, 256), lib::radix_blocks(20000, 256));
  EXPECT_EQ(lib::radix_histogram_blocks(std::int64_t{1} << 28, 256), 1024);
  EXPECT_GE(lib::radix_histogram_blocks(1000, 0), 1);
}

TEST(DeviceLibrary, OneSweepStorageForTwoToTheThirtyKeysOrMoreIsRefused) {
  EXPECT_EQ(lib::radix_lookback_words((std::int64_t{1} << 30) - 1, 256), 2 * lib::radix_table_size((1 << 30) - 1, 256));
  try {
    lib::radix_lookback_words(std::int64_t{1} << 30, 256);
    ADD_FAILURE() << "storage for 2^30 keys, whose counts the look-back's 30 bits cannot hold";
  } catch (const std::invalid_argument& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than 2^30 keys"), std::string::npos) << e.what();
  }
}

TEST(DeviceLibrary, OneSweepDigitsOfAnOddNumberOfPassesAreRefused) {
  KernelBuilder k("onesweep_3_bits");
  auto n = k.param<int>("n");
  auto keys = k.param<GlobalPtr<const std::uint32_t>>("keys", extent(n));
  auto hist = k.param<GlobalPtr<int>>("hist", extent(64));
  k.block_threads(64);
  int line = 0;
  k.body([&](Scope& g) {
    line = __LINE__ + 1;
    lib::radix_histogram(g, hist, keys, n, {4, 3});
  });
  EXPECT_TRUE(testing::rejected_saying(k, "V0913", line, "test_device_library.cpp", "1, 2, 4 or 8 bits"));
}

TEST(DeviceLibrary, RadixDigitsWiderThanTheBlockAreRefused) {
  KernelBuilder k("radix_wide");
  auto n = k.param<int>("n");
  auto keys = k.param<GlobalPtr<const std::uint32_t>>("keys", extent(n));
  auto table = k.param<GlobalPtr<int>>("table", extent(lib::radix_table_extent(n, 128)));
  k.block_threads(128);
  int line = 0;
  k.body([&](Scope& g) {
    line = __LINE__ + 1;
    lib::radix_count(g, table, keys, n, 0);  // 8-bit digits need 256 threads
  });
  EXPECT_TRUE(testing::rejected_saying(k, "V0913", line, "test_device_library.cpp", "at least 2^bits threads"));
}

TEST(DeviceLibrary, RadixKeysThatAreNotU32AreRefused) {
  KernelBuilder k("radix_i32");
  auto n = k.param<int>("n");
  auto keys = k.param<GlobalPtr<const int>>("keys", extent(n));
  auto table = k.param<GlobalPtr<int>>("table", extent(lib::radix_table_extent(n, 256)));
  k.block_threads(256);
  int line = 0;
  k.body([&](Scope& g) {
    line = __LINE__ + 1;
    lib::radix_count(g, table, keys, n, 0);
  });
  EXPECT_TRUE(testing::rejected_saying(k, "V0913", line, "test_device_library.cpp", "sorts u32 keys, not i32"));
}

// ---- misuse, refused at the caller's line

TEST(DeviceLibrary, AScanOfSixteenBitValuesIsRefusedNamingTheTypesItTakes) {
  KernelBuilder k("scan_i16");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const std::int16_t>>("x", extent(n));
  auto y = k.param<GlobalPtr<std::int16_t>>("y", extent(n));
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, 128)));
  k.block_threads(128);
  int line = 0;
  k.body([&](Scope& g) {
    line = __LINE__ + 1;
    lib::device_inclusive_scan(g, y, x, n, lib::Op::Sum, temp);
  });
  EXPECT_TRUE(testing::rejected_saying(k, "V0913", line, "test_device_library.cpp",
                                       "combines values of 32 or 64 bits (i32, u32, f32, i64, u64, f64), not i16"));
}

TEST(DeviceLibrary, ItemsThatAreNotWholeVectorsAreRefused) {
  KernelBuilder k("scan_items_6");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, 128, {6})));
  k.block_threads(128);
  int line = 0;
  k.body([&](Scope& g) {
    line = __LINE__ + 1;
    lib::device_exclusive_scan(g, y, x, n, lib::Op::Sum, temp, {6});
  });
  EXPECT_TRUE(testing::rejected_saying(k, "V0913", line, "test_device_library.cpp", "multiple of 4 from 4 to 32"));
}

TEST(DeviceLibrary, ABackOffOutsideWhatAThreadSleepsIsRefused) {
  for (int backoff : {-1, 1000001}) {
    KernelBuilder k("scan_backoff");
    auto n = k.param<int>("n");
    auto x = k.param<GlobalPtr<const int>>("x", extent(n));
    auto y = k.param<GlobalPtr<int>>("y", extent(n));
    auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, 128)));
    k.block_threads(128);
    int line = 0;
    k.body([&](Scope& g) {
      line = __LINE__ + 1;
      lib::device_inclusive_scan(g, y, x, n, lib::Op::Sum, temp, {8, backoff});
    });
    EXPECT_TRUE(
        testing::rejected_saying(k, "V0913", line, "test_device_library.cpp",
                                 "look-back sleeps 0 to 1000000 ns before a poll, not " + std::to_string(backoff)));
  }
}

TEST(DeviceLibrary, TemporaryStorageOfAnotherTypeIsRefused) {
  KernelBuilder k("reduce_temp_u32");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(1));
  auto temp = k.param<GlobalPtr<std::uint32_t>>("temp", extent(lib::device_temp_extent(n, 128)));
  k.block_threads(128);
  int line = 0;
  k.body([&](Scope& g) {
    line = __LINE__ + 1;
    lib::device_reduce(g, out, x, n, lib::Op::Sum, temp);
  });
  EXPECT_TRUE(testing::rejected_saying(k, "V0913", line, "test_device_library.cpp", "u64 words"));
}

// A device-wide operation is a kernel's whole body: from a block's code it is refused at the line.
TEST(DeviceLibrary, ADeviceScanFromABlocksCodeIsRefusedAtTheCallersLine) {
  KernelBuilder k("scan_in_block");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(lib::device_temp_extent(n, 128)));
  k.block_threads(128);
  int line = 0;
  k.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      line = __LINE__ + 1;
      lib::device_inclusive_scan(b, y, x, n, lib::Op::Sum, temp);  // b is a block, not the grid
    });
  });
  EXPECT_TRUE(testing::rejected_at(k, line));
}

// tile_prefix has no count of the tiles, so no room for words of 64-bit values after the statuses.
TEST(DeviceLibrary, ATilePrefixOf64BitValuesIsRefused) {
  KernelBuilder k("tile_prefix_f64");
  auto x = k.param<GlobalPtr<const double>>("x", extent(4));
  auto out = k.param<GlobalPtr<double>>("out", extent(4));
  auto temp = k.param<GlobalPtr<std::uint64_t>>("temp", extent(4));
  k.block_threads(64);
  int line = 0;
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, [&](Scope& b, Expr blk, View out_b) {
      Var total = b.let("total", x[min(blk, 3)]);
      line = __LINE__ + 1;
      Var before = lib::tile_prefix(b, "before", temp, blk, total, lib::Op::Sum);
      lib::store_by_one(b, out_b, 0, before);
    });
  });
  EXPECT_TRUE(testing::rejected_saying(k, "V0913", line, "test_device_library.cpp",
                                       "values of 32 bits (i32, u32 or f32) through u64 words, not f64"));
}

TEST(DeviceLibrary, AHistogramOfNoBinsIsRefused) {
  KernelBuilder k("histogram_0");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto hist = k.param<GlobalPtr<std::uint32_t>>("hist", extent(1));
  k.block_threads(128);
  int line = 0;
  k.body([&](Scope& g) {
    line = __LINE__ + 1;
    lib::device_histogram(g, hist, x, n, 0, [](const Expr& v) { return v; });
  });
  EXPECT_TRUE(testing::rejected_saying(k, "V0913", line, "test_device_library.cpp", "at least one"));
}

}  // namespace
}  // namespace vantage
