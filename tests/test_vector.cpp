// Vector types (include/vantage/vector.hpp, docs/semantics.md "Vector types"): lane-wise kernels
// over f32x4, f64x2, i32x4, i16x4, u8x16, f16x2, f16x8 and bf16x2 equal to C++ on every device (the
// interpreter both ways round, the CPU backend, a GPU where present) and, as generated CUDA, on host
// threads; whole vectors emitted as one access of their bytes (NVRTC-compiled), counted so by the
// cost report; bits moved exactly; an unproven vector kept checked; each misuse refused at the
// user's line.
#include <gtest/gtest.h>

#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <functional>
#include <limits>
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

constexpr int kThreads = 64;

/// y = a * x + y over n elements in vectors of `t` (f16 and bf16 lanes computed in f32, `a` of the
/// compute type), by `lib::for_each_vector`.
Kernel axpy(VecType t) {
  const bool narrow_float = t.elem == ScalarType::F16 || t.elem == ScalarType::BF16;
  const ScalarType c = narrow_float ? ScalarType::F32 : t.elem;
  KernelBuilder k("axpy_" + t.name());
  auto n = k.param<int>("n");
  auto a = k.scalar_param("a", c);
  auto x = k.pointer_param("x", t.elem, MemSpace::Global, true, extent(n));
  auto y = k.pointer_param("y", t.elem, MemSpace::Global, false, extent(n));
  k.block_threads(kThreads);
  k.body([&](Scope& g) {
    lib::for_each_vector(g, y, n, t, [&](Scope& th, const VecRef& y_v) {
      Vec xv = lib::load(th, "xv", y_v.like(x));
      Vec yv = lib::load(th, "yv", y_v);
      if (narrow_float) {
        lib::store(th, y_v, cast(t.elem, a * cast(c, xv) + cast(c, yv)));
      } else {
        lib::store(th, y_v, a * xv + yv);
      }
    });
  });
  return k.build();
}

/// The exact small integers the axpy tests use: x in [-30, 30], y in [0, 16], a = 3.
std::int64_t x_at(std::int64_t i) { return (i * 7) % 61 - 30; }
std::int64_t y_at(std::int64_t i) { return (i * 3) % 17; }

/// An exact small integer as f16 or bf16 bits.
std::uint16_t f16_bits(float v) {
  const std::uint32_t b = std::bit_cast<std::uint32_t>(v);
  if ((b & 0x7fffffffu) == 0) return static_cast<std::uint16_t>(b >> 16);
  const std::uint32_t sign = b >> 31, exp = (b >> 23) & 0xff, mant = b & 0x7fffff;
  return static_cast<std::uint16_t>(sign << 15 | (exp - 127 + 15) << 10 | mant >> 13);
}
std::uint16_t bf16_bits(float v) { return static_cast<std::uint16_t>(std::bit_cast<std::uint32_t>(v) >> 16); }

/// Elements of C++ type E made from the integers: floats, integers (wrapped), or 16-bit float bits.
template <class E>
E element(std::int64_t v) {
  if constexpr (std::is_same_v<E, half>)
    return half{f16_bits(static_cast<float>(v))};
  else if constexpr (std::is_same_v<E, bfloat16>)
    return bfloat16{bf16_bits(static_cast<float>(v))};
  else
    return static_cast<E>(v);
}
template <class E>
bool same(const E& a, const E& b) {
  if constexpr (std::is_same_v<E, half> || std::is_same_v<E, bfloat16>)
    return a.bits == b.bits;
  else
    return a == b;
}

/// axpy over `type` at sizes around the tiles, on every device, against C++.
template <class E>
void axpy_on_every_device(VecType t) {
  const Kernel k = axpy(t);
  for (std::int64_t n : {0, 1, t.lanes - 1, kThreads * t.lanes - 1, kThreads * t.lanes, 3 * kThreads * t.lanes + 5}) {
    if (n < 0) continue;
    std::vector<E> x(static_cast<std::size_t>(n)), y0(static_cast<std::size_t>(n)), want(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) {
      x[static_cast<std::size_t>(i)] = element<E>(x_at(i));
      y0[static_cast<std::size_t>(i)] = element<E>(y_at(i));
      want[static_cast<std::size_t>(i)] = element<E>(3 * x_at(i) + y_at(i));
    }
    const Grid grid{lib::blocks_for(n, kThreads, lib::Tile{t.lanes}), kThreads};
    for (const Device& dev : test_support::every_device()) {
      std::vector<E> y = y0;
      if (t.elem == ScalarType::F16 || t.elem == ScalarType::BF16)
        test_support::launch_on(k, dev, grid, static_cast<int>(n), 3.0f, std::as_const(x), y);
      else
        test_support::launch_on(k, dev, grid, static_cast<int>(n), element<E>(3), std::as_const(x), y);
      for (std::size_t i = 0; i < y.size(); ++i)
        ASSERT_TRUE(same(y[i], want[i])) << t.name() << " n = " << n << " element " << i << " on " << dev.name();
    }
  }
}

TEST(Vector, LaneWiseAxpyOverEveryVectorTypeEqualsCppOnEveryDevice) {
  axpy_on_every_device<float>(f32x4);
  axpy_on_every_device<double>(f64x2);
  axpy_on_every_device<std::int32_t>(i32x4);
  axpy_on_every_device<std::int16_t>(i16x4);
  axpy_on_every_device<std::uint8_t>(u8x16);  // 3 * x + y wraps modulo 256 as u8 arithmetic does
  axpy_on_every_device<half>(f16x2);
  axpy_on_every_device<half>(f16x8);
  axpy_on_every_device<bfloat16>(bf16x2);
}

/// A kernel (n, x, y) over n elements of `t`: `body(th, y_v, x)` for each thread's vector y_v of y
/// (lib::for_each_vector), x read-only.
Kernel vector_loop(const std::string& name, VecType t,
                   const std::function<void(Scope&, const VecRef&, const View&)>& body) {
  KernelBuilder k(name);
  auto n = k.param<int>("n");
  auto x = k.pointer_param("x", t.elem, MemSpace::Global, true, extent(n));
  auto y = k.pointer_param("y", t.elem, MemSpace::Global, false, extent(n));
  k.block_threads(kThreads);
  k.body([&](Scope& g) { lib::for_each_vector(g, y, n, t, [&](Scope& th, const VecRef& y_v) { body(th, y_v, x); }); });
  return k.build();
}

// The remainder, bit operators and shifts lane by lane on integer vectors, with vectors and scalars
// on either side: y = ((x ^ y) | (x & 3)) + ((x << 2) >> 1) + x % 5 + (7 - x % 3) on u32x4 and i32x4.
TEST(Vector, IntegerLanesTakeRemaindersBitOperatorsAndShifts) {
  for (const VecType t : {u32x4, i32x4}) {
    const Kernel kernel = vector_loop("bits_" + t.name(), t, [](Scope& th, const VecRef& y_v, const View& x) {
      Vec xv = lib::let(th, "x", lib::load(th, "xv", y_v.like(x)));
      Vec yv = lib::load(th, "yv", y_v);
      lib::store(th, y_v, ((xv ^ yv) | (xv & 3)) + ((xv << 2) >> 1) + xv % 5 + (7 - xv % 3));
    });
    const int n0 = kThreads * 4 * 2 + 3;
    std::vector<std::int32_t> xs(n0), ys(n0), want(n0);
    for (int i = 0; i < n0; ++i) {
      xs[i] = i * 2654435 % 100003;  // positive: the same bits and results signed and unsigned
      ys[i] = i * 40503 % 65521;
      const std::int32_t a = xs[i], b = ys[i];
      want[i] = ((a ^ b) | (a & 3)) + ((a << 2) >> 1) + a % 5 + (7 - a % 3);
    }
    for (const Device& dev : test_support::every_device()) {
      std::vector<std::int32_t> got = ys;
      if (t == u32x4) {
        std::vector<std::uint32_t> ux(xs.begin(), xs.end()), uy(ys.begin(), ys.end());
        test_support::launch_on(kernel, dev, Grid{lib::blocks_for(n0, kThreads, lib::Tile{4}), kThreads}, n0,
                                std::as_const(ux), uy);
        got.assign(uy.begin(), uy.end());
      } else {
        test_support::launch_on(kernel, dev, Grid{lib::blocks_for(n0, kThreads, lib::Tile{4}), kThreads}, n0,
                                std::as_const(xs), got);
      }
      EXPECT_EQ(got, want) << t.name() << " on " << dev.name();
    }
  }
}

// A whole vector is one access of its bytes in the CUDA (NVRTC compiles it), read and written
// without a run-time check: lowering proves it inside both buffers and aligned, and the launch
// checks the buffers' alignment.
TEST(Vector, AWholeVectorIsOneAccessOfItsBytesWithNoCheck) {
  struct Case {
    VecType t;
    std::string load, store;
  };
  for (const Case& c : {Case{f32x4, "*reinterpret_cast<const float4*>(&x[", "*reinterpret_cast<float4*>(&y["},
                        Case{f64x2, "*reinterpret_cast<const double2*>(&x[", "*reinterpret_cast<double2*>(&y["},
                        Case{i32x4, "*reinterpret_cast<const int4*>(&x[", "*reinterpret_cast<int4*>(&y["},
                        Case{f16x2, "*reinterpret_cast<const unsigned*>(&x[", "*reinterpret_cast<unsigned*>(&y["},
                        Case{f16x8, "*reinterpret_cast<const uint4*>(&x[", "*reinterpret_cast<uint4*>(&y["},
                        Case{bf16x2, "*reinterpret_cast<const unsigned*>(&x[", "*reinterpret_cast<unsigned*>(&y["},
                        Case{u8x16, "*reinterpret_cast<const uint4*>(&x[", "*reinterpret_cast<uint4*>(&y["},
                        Case{i16x4, "*reinterpret_cast<const uint2*>(&x[", "*reinterpret_cast<uint2*>(&y["}}) {
    const Kernel k = axpy(c.t);
    const std::string cuda = k.source(Spec{});
    EXPECT_NE(cuda.find(c.load), std::string::npos) << c.t.name() << "\n" << cuda;
    EXPECT_NE(cuda.find(c.store), std::string::npos) << c.t.name() << "\n" << cuda;
    EXPECT_EQ(cuda.find("vt_ld("), std::string::npos) << c.t.name() << ": a read is checked as it runs\n" << cuda;
    EXPECT_EQ(cuda.find("vt_st("), std::string::npos) << c.t.name() << ": a write is checked as it runs\n" << cuda;
    if (nvrtc_available()) {
      EXPECT_EQ(compile(k, Spec{}).log, "") << c.t.name();
    }
  }
}

// The cost report counts a whole vector's bytes per lane: 16 for an f32x4 load of x, so a warp's
// request is 512 contiguous bytes, 16 sectors.
TEST(Vector, TheCostReportCountsAVectorsBytesPerLane) {
  const std::int64_t n = kThreads * 4 * 64;
  const CostReport r = axpy(f32x4).report(Spec{}, {{"n", n}}, 64);
  bool seen = false;
  for (const AccessCost& a : r.accesses)
    if (a.memory == "x" && a.space == MemSpace::Global) {
      seen = true;
      EXPECT_EQ(a.bytes, 16) << r.text();
      EXPECT_EQ(a.requests, n / 4 / 32) << r.text();
      EXPECT_DOUBLE_EQ(a.sectors, 16.0) << r.text();
    }
  EXPECT_TRUE(seen) << r.text();
  EXPECT_DOUBLE_EQ(r.global_bytes, 3.0 * n * 4) << r.text();
}

// Lane-wise f16 arithmetic on an f16x8 vector compiles, on sm_90, to packed half2 math: the CUDA
// compiler pairs the lanes' __half operations, so `a * x + y` over eight lanes is four HFMA2 between
// one 128-bit load of each input and one 128-bit store.
TEST(Vector, HalfLanesCompileToPackedHalfMathBetweenWideAccesses) {
  REQUIRE_NVRTC();
  if (examples::find_cuobjdump().empty()) GTEST_SKIP() << "cuobjdump not found (scripts/setup installs it)";
  KernelBuilder k("haxpy");
  auto n = k.param<int>("n");
  auto a = k.param<half>("a");
  auto x = k.param<GlobalPtr<const half>>("x", extent(n));
  auto y = k.param<GlobalPtr<half>>("y", extent(n));
  k.block_threads(kThreads);
  k.body([&](Scope& g) {
    lib::for_each_vector(g, y, n, f16x8, [&](Scope& th, const VecRef& y_v) {
      lib::store(th, y_v, a * lib::load(th, "xv", y_v.like(x)) + lib::load(th, "yv", y_v));
    });
  });
  const std::string sass = examples::sass(k.build().cubin(Spec{}.with_arch(Arch::SM_90)));
  auto count = [](const std::string& text, const std::string& what) {
    int c = 0;
    for (std::size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++c;
    return c;
  };
  EXPECT_EQ(count(sass, "LDG.E.128"), 2) << sass;
  ASSERT_EQ(count(sass, "STG.E.128"), 1) << sass;
  // Between the whole vector's loads and its store: 4 packed FMAs (eight scalar ones, unpaired).
  const std::size_t from = sass.find("LDG.E.128"), to = sass.find("STG.E.128");
  ASSERT_LT(from, to) << sass;
  EXPECT_EQ(count(sass.substr(from, to - from), "HFMA2"), 4) << sass;
}

/// out = in by f32x4 and f16x8 vectors, no arithmetic: the lanes' bits as they were.
Kernel move_bits(VecType t) {
  return vector_loop("move_" + t.name(), t, [](Scope& th, const VecRef& v, const View& in) {
    lib::store(th, v, lib::load(th, "v", v.like(in)));
  });
}

// Infinities, -0, subnormals and quiet NaNs with payloads move through a vector's lanes with their
// bits, in order, on every device.
TEST(Vector, LanesMoveTheirBitsExactlyAndInOrder) {
  const std::vector<std::uint32_t> words = {0x7f800000u, 0xff800000u, 0x80000000u, 0x00000001u, 0x807fffffu,
                                            0x7fc00001u, 0xffc12345u, 0x3f800000u, 0x12345678u, 0xbf000000u};
  std::vector<float> in;
  for (std::uint32_t w : words) in.push_back(std::bit_cast<float>(w));
  const std::vector<std::uint16_t> halves = {0x7c00, 0xfc00, 0x8000, 0x0001, 0x83ff, 0x7e01, 0xfe55, 0x3c00, 0x1234};
  std::vector<half> hin;
  for (std::uint16_t h : halves) hin.push_back(half{h});
  const Kernel kf = move_bits(f32x4), kh = move_bits(f16x8);
  for (const Device& dev : test_support::every_device()) {
    std::vector<float> out(in.size(), 0.0f);
    test_support::launch_on(kf, dev, Grid{1, kThreads}, static_cast<int>(in.size()), std::as_const(in), out);
    for (std::size_t i = 0; i < in.size(); ++i)
      EXPECT_EQ(std::bit_cast<std::uint32_t>(out[i]), words[i]) << "f32 lane " << i << " on " << dev.name();
    std::vector<half> hout(hin.size(), half{0});
    test_support::launch_on(kh, dev, Grid{1, kThreads}, static_cast<int>(hin.size()), std::as_const(hin), hout);
    for (std::size_t i = 0; i < hin.size(); ++i)
      EXPECT_EQ(hout[i].bits, halves[i]) << "f16 lane " << i << " on " << dev.name();
  }
}

// The generated CUDA on host threads: the same elements as the interpreter, for the types the host
// compiler has (f32x4, i32x4, u8x16, i16x4).
TEST(Vector, GeneratedCudaOnHostThreadsEqualsCpp) {
  const std::int64_t n = 3 * kThreads * 4 + 5;
  std::vector<HostLaunch> launches;
  std::vector<std::vector<long long>> want;
  auto add = [&](VecType t, const char* type) {
    const Specialized s = specialize_for(axpy(t), Spec{});
    const std::int64_t m = t.lanes == 16 ? 3 * kThreads * 16 + 5 : n;
    std::vector<double> x(static_cast<std::size_t>(m)), y(static_cast<std::size_t>(m));
    std::vector<long long> w(static_cast<std::size_t>(m));
    for (std::int64_t i = 0; i < m; ++i) {
      x[static_cast<std::size_t>(i)] = static_cast<double>(x_at(i));
      y[static_cast<std::size_t>(i)] = static_cast<double>(y_at(i));
      std::int64_t v = 3 * x_at(i) + y_at(i);
      if (t.elem == ScalarType::U8) v = static_cast<std::uint8_t>(v);
      if (t.elem == ScalarType::I16) v = static_cast<std::int16_t>(v);
      w[static_cast<std::size_t>(i)] =
          t.elem == ScalarType::F32 ? std::bit_cast<std::int32_t>(static_cast<float>(v)) : v;
    }
    if (t.elem == ScalarType::U8)
      for (auto& v : x) v = static_cast<std::uint8_t>(static_cast<std::int64_t>(v));
    HostLaunch l{s.source, s.entry, static_cast<int>(lib::blocks_for(m, kThreads, lib::Tile{t.lanes})), kThreads, {}};
    l.args = {HostArg::of("int", static_cast<double>(m)), HostArg::of(type, 3.0), HostArg::of(type, x),
              HostArg::of(type, y)};
    launches.push_back(l);
    want.push_back(w);
  };
  add(f32x4, "float");
  add(i32x4, "int");
  add(u8x16, "unsigned char");
  add(i16x4, "short");
  // An f32x4 move of -0, subnormals and the largest and smallest normals: their bits (the host
  // launch passes values as decimal text, which holds no NaN or infinity).
  const std::vector<std::uint32_t> words = {0x80000000u, 0x00000001u, 0x807fffffu, 0x3f800000u, 0x12345678u,
                                            0xbf000000u, 0x7f7fffffu, 0x00800000u, 0xff7fffffu};
  std::vector<double> in;
  std::vector<long long> bits;
  for (std::uint32_t w : words) {
    in.push_back(static_cast<double>(std::bit_cast<float>(w)));
    bits.push_back(std::bit_cast<std::int32_t>(w));
  }
  const Specialized mv = specialize_for(move_bits(f32x4), Spec{});
  HostLaunch l{mv.source, mv.entry, 1, kThreads, {}};
  l.args = {HostArg::of("int", static_cast<double>(words.size())), HostArg::of("float", in),
            HostArg::of("float", std::vector<double>(words.size(), 0.0))};
  launches.push_back(l);
  want.push_back(bits);
  const test_support::HostLaunches run = test_support::run_launches_on_host(launches);
  ASSERT_TRUE(run.ok) << run.problem;
  ASSERT_EQ(run.results.size(), want.size());
  for (std::size_t c = 0; c < want.size(); ++c) {
    EXPECT_FALSE(run.results[c].check_failed) << c;
    ASSERT_EQ(run.results[c].buffers.size(), 2u);
    EXPECT_EQ(run.results[c].buffers[1], want[c]) << "case " << c;
  }
}

/// lib::copy over elements of `E`.
template <class E>
Kernel copy_of(const char* name) {
  KernelBuilder k(name);
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const E>>("in", extent(n));
  auto out = k.param<GlobalPtr<E>>("out", extent(n));
  k.block_threads(kThreads);
  k.body([&](Scope& g) { lib::copy(g, out, in, n); });
  return k.build();
}

// lib::copy moves elements of 1 and 2 bytes 16 bytes at a time too (a uint4 of sixteen u8 or eight
// f16), proven, with the tail element by element, at sizes around the vectors and the tiles.
template <class E>
void copies_narrow(const char* name, int per_vector) {
  const Kernel k = copy_of<E>(name);
  const std::string cuda = k.source(Spec{});
  EXPECT_NE(cuda.find("*reinterpret_cast<uint4*>(&out["), std::string::npos) << cuda;
  EXPECT_EQ(cuda.find("vt_ld("), std::string::npos) << cuda;
  for (int n : {1, per_vector - 1, per_vector, per_vector + 1, kThreads * per_vector * 3 + 5}) {
    std::vector<E> in(static_cast<std::size_t>(n));
    for (int i = 0; i < n; ++i) in[static_cast<std::size_t>(i)] = element<E>(i % 120);
    for (const Device& dev : test_support::every_device()) {
      std::vector<E> out(in.size(), element<E>(-1));
      test_support::launch_on(k, dev, Grid{lib::blocks_for(n, kThreads, lib::Tile{per_vector}), kThreads}, n,
                              std::as_const(in), out);
      for (std::size_t i = 0; i < in.size(); ++i)
        ASSERT_TRUE(same(out[i], in[i])) << name << " n = " << n << " element " << i << " on " << dev.name();
    }
  }
}

TEST(Vector, LibCopyMovesNarrowElementsSixteenBytesAtATime) {
  copies_narrow<std::uint8_t>("copy_u8", 16);
  copies_narrow<half>("copy_f16", 8);
}

// Vectors of shared memory: each thread stores its f32x4 of the input into a shared tile, and after
// the barrier the sync pass places, reads another thread's (the block's tile reversed by vectors)
// and stores it to its share of the output: 128-bit shared accesses, on every device.
TEST(Vector, SharedMemoryVectorsAreWideAccessesOrderedByTheBarrier) {
  constexpr int T = 64, L = 4, per_block = T * L, blocks = 3;
  KernelBuilder k("shared_vectors");
  auto in = k.param<GlobalPtr<const float>>("in", extent(per_block * blocks));
  auto out = k.param<GlobalPtr<float>>("out", extent(per_block * blocks));
  k.block_threads(T);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, per_block, [&](Scope& b, Expr blk, View out_b) {
      View tile = b.shared("tile", ScalarType::F32, per_block);
      Var t = b.let("t", b.id(thread(1)));
      b.partition(
          tile, thread(1), [&](Expr i) { return t * L + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope& th) {
              lib::store(th, VecRef(mine, f32x4, 0), lib::load(th, "v", VecRef(in, f32x4, blk * T + t)));
            });
          });
      b.partition(
          out_b, thread(1), [&](Expr i) { return t * L + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope& th) {
              lib::store(th, VecRef(mine, f32x4, 0), lib::load(th, "w", VecRef(tile, f32x4, T - 1 - t)));
            });
          });
    });
  });
  const Kernel kernel = k.build();
  const std::string cuda = kernel.source(Spec{});
  EXPECT_NE(cuda.find("*reinterpret_cast<float4*>(&tile["), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("*reinterpret_cast<const float4*>(&tile["), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("__syncthreads()"), std::string::npos) << cuda;
  std::vector<float> x(per_block * blocks);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  for (const Device& dev : test_support::every_device()) {
    std::vector<float> y(x.size(), -1.0f);
    test_support::launch_on(kernel, dev, Grid{blocks, T}, std::as_const(x), y);
    for (int b = 0; b < blocks; ++b)
      for (int t = 0; t < T; ++t)
        for (int e = 0; e < L; ++e)
          ASSERT_EQ(y[static_cast<std::size_t>(b * per_block + t * L + e)],
                    x[static_cast<std::size_t>(b * per_block + (T - 1 - t) * L + e)])
              << "block " << b << " thread " << t << " lane " << e << " on " << dev.name();
  }
}

// A vector lowering cannot prove inside its buffer (a thread's own index, unguarded) stays a loop of
// checked elements: no vector access in the CUDA, and the interpreter reports the element past the
// end at the load's line.
TEST(Vector, AnUnprovenVectorStaysCheckedElementByElement) {
  KernelBuilder k("unguarded");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(kThreads));
  k.block_threads(kThreads);
  int load_line = 0;
  k.body([&](Scope& g) {
    lib::for_each(g, out, kThreads, [&](Scope& th, Expr i, ElemRef o) {
      load_line = __LINE__ + 1;
      Vec v = lib::load(th, "v", VecRef(x, f32x4, i));
      o = sum(v);
    });
  });
  const Kernel kernel = k.build();
  const std::string cuda = kernel.source(Spec{});
  EXPECT_EQ(cuda.find("reinterpret_cast<const float4*>"), std::string::npos) << cuda;
  EXPECT_NE(cuda.find("vt_ld("), std::string::npos) << cuda;
  // The cost report says why, at the load's line: its element reads of x carry the reason.
  const CostReport r = kernel.report(Spec{}, {{"n", kThreads * 4}}, 1);
  bool said = false;
  for (const AccessCost& a : r.accesses)
    if (a.memory == "x" && static_cast<int>(a.loc.line) == load_line) {
      EXPECT_EQ(a.bytes, 4) << r.text();
      said =
          a.hint.find("a copy of 4 f32 (16 bytes) kept element by element: not proven inside 'x'") != std::string::npos;
    }
  EXPECT_TRUE(said) << r.text();
  std::vector<float> xs(kThreads * 4), o(kThreads);
  for (std::size_t i = 0; i < xs.size(); ++i) xs[i] = static_cast<float>(i);
  kernel.launch(Device::interpreter(), Grid{1, kThreads}, kThreads * 4, std::as_const(xs), o);
  for (int t = 0; t < kThreads; ++t) EXPECT_EQ(o[static_cast<std::size_t>(t)], 16.0f * t + 6) << t;
  xs.resize(kThreads * 4 - 1);
  try {
    kernel.launch(Device::interpreter(), Grid{1, kThreads}, kThreads * 4 - 1, std::as_const(xs), o);
    ADD_FAILURE() << "the element past the end was read";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find(":" + std::to_string(load_line)), std::string::npos) << e.what();
  }
}

// Misuses, each at the user's line: vectors of different lanes combined (at the operator's line), a
// vector type that is not the view's or is wider than 16 bytes, a vector of 3 lanes, a store to
// memory the thread does not own.
TEST(Vector, MisusesAreRefusedAtTheUsersLine) {
  auto kernel = [](const std::function<void(Scope&, View, View, Expr)>& body) {
    auto k = std::make_unique<KernelBuilder>("misuse");
    auto n = k->param<int>("n");
    auto x = k->param<GlobalPtr<const float>>("x", extent(n));
    auto y = k->param<GlobalPtr<float>>("y", extent(n));
    k->block_threads(kThreads);
    k->body([&](Scope& g) { body(g, x, y, n); });
    return k;
  };
  int line = 0;
  auto lanes = kernel([&](Scope& g, View x, View y, Expr n) {
    lib::for_each_vector(g, y, n, f32x4, [&](Scope& th, const VecRef& v) {
      Vec a = lib::load(th, "a", v.like(x));
      line = __LINE__ + 1;
      Vec bad = a + Vec::splat(2, 1.0f);
      lib::store(th, v, bad);
    });
  });
  EXPECT_TRUE(testing::rejected_saying(*lanes, "V0708", line, __FILE__, "different lanes (f32x4, f32x2)"));
  auto elem = kernel([&](Scope& g, View x, View y, Expr n) {
    lib::for_each_vector(g, y, n, f32x4, [&](Scope& th, const VecRef& v) {
      line = __LINE__ + 1;
      Vec a = lib::load(th, "a", VecRef(x, f16x4, v.index()));
      lib::store(th, v, a);
    });
  });
  EXPECT_TRUE(testing::rejected_saying(*elem, "V0708", line, __FILE__, "a view of f32"));
  auto wide = kernel([&](Scope& g, View, View y, Expr n) {
    line = __LINE__ + 1;
    lib::for_each_vector(g, y, n, VecType{ScalarType::F32, 8}, [&](Scope&, const VecRef&) {});
  });
  EXPECT_TRUE(testing::rejected_saying(*wide, "V0708", line, __FILE__, "not f32x8 (32 bytes)"));
  auto three = kernel([&](Scope& g, View, View y, Expr n) {
    line = __LINE__ + 1;
    lib::for_each_vector(g, y, n, VecType{ScalarType::F32, 3}, [&](Scope&, const VecRef&) {});
  });
  EXPECT_TRUE(testing::rejected_saying(*three, "V0708", line, __FILE__, "not f32x3"));
  auto stored = kernel([&](Scope& g, View x, View y, Expr n) {
    lib::for_each_vector(g, y, n, f32x4, [&](Scope& th, const VecRef& v) {
      Vec a = lib::load(th, "a", v.like(x));
      line = __LINE__ + 1;
      lib::store(th, v.like(y), a);  // y itself, not the thread's share of it
    });
  });
  EXPECT_TRUE(testing::rejected_at(*stored, line));
}

// From the wrong perspective, at the caller's line: a vector loop from a block's code (it hands out
// the grid's elements), a vector store from the grid's code (every thread would write the vector).
TEST(Vector, HelpersFromTheWrongPerspectiveAreRefusedAtTheCallersLine) {
  int line = 0;
  {
    KernelBuilder k("loop_in_block");
    auto n = k.param<int>("n");
    auto y = k.param<GlobalPtr<float>>("y", extent(n));
    k.block_threads(kThreads);
    k.body([&](Scope& g) {
      g.group(block(1), [&](Scope& b) {
        line = __LINE__ + 1;
        lib::for_each_vector(b, y, n, f32x4,
                             [&](Scope& th, const VecRef& v) { lib::store(th, v, Vec::splat(v.type().lanes, 1.0f)); });
      });
    });
    EXPECT_TRUE(testing::rejected_saying(k, "V0303", line, __FILE__, "the code is at block(1)"));
  }
  {
    KernelBuilder k("store_from_grid");
    auto y = k.param<GlobalPtr<float>>("y", extent(64));
    k.block_threads(kThreads);
    k.body([&](Scope& g) {
      line = __LINE__ + 1;
      lib::store(g, VecRef(y, f32x4, 0), Vec::splat(4, 1.0f));
    });
    EXPECT_TRUE(testing::rejected_saying(k, "V0301", line, __FILE__, "narrow it to thread(1)"));
  }
}

}  // namespace
}  // namespace vantage
