// 8-bit floats (f8e4m3, f8e5m2; docs/semantics.md): the conversions support/float8.h defines, against
// the CUDA toolkit's own host conversion where it is installed; the same values from kernels on every
// device; and what the checker refuses (they are for storage: no arithmetic, no integer casts, no
// shuffles, no atomics), each at the user's line with what to write.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <limits>

#include "reject_helpers.hpp"
#include "support/float8.h"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

#ifdef VANTAGE_HAVE_CUDA_FP8
#include <cuda_fp8.h>
#endif

namespace vantage {
namespace {

using float8::decode;
using float8::encode;

TEST(Float8, ConversionsRoundToNearestEvenAndHoldAtTheLargestFiniteValue) {
  // e4m3: 1 is 0x38, 448 the largest (0x7e), 464 a tie that stays at 448 (even), beyond it 448.
  EXPECT_EQ(encode(1.0, false), 0x38);
  EXPECT_EQ(encode(448.0, false), 0x7e);
  EXPECT_EQ(encode(464.0, false), 0x7e);
  EXPECT_EQ(encode(1e9, false), 0x7e);
  EXPECT_EQ(encode(-1e9, false), 0xfe);
  EXPECT_EQ(encode(INFINITY, false), 0x7e) << "no infinity in e4m3: held at 448";
  EXPECT_EQ(encode(-3.3, false), 0xc5);
  EXPECT_EQ(encode(std::ldexp(1.0, -9), false), 0x01) << "the smallest subnormal";
  EXPECT_EQ(encode(std::ldexp(1.0, -10), false), 0x00) << "half of it: a tie, to even (zero)";
  EXPECT_EQ(encode(std::ldexp(3.0, -10), false), 0x02) << "1.5 of it: a tie, to even (2)";
  EXPECT_EQ(encode(std::ldexp(3.0, -11), false), 0x01) << "0.75 of it: up";
  EXPECT_TRUE(std::isnan(decode(encode(NAN, false), false)));
  EXPECT_TRUE(std::isnan(decode(0x7f, false)));
  EXPECT_EQ(decode(0x7e, false), 448.0);
  // e5m2: 57344 the largest; infinity and beyond held there; 1e-4 is a subnormal.
  EXPECT_EQ(encode(1.0, true), 0x3c);
  EXPECT_EQ(encode(57344.0, true), 0x7b);
  EXPECT_EQ(encode(61440.0, true), 0x7b) << "the tie past the largest is held, not infinity";
  EXPECT_EQ(encode(INFINITY, true), 0x7b);
  EXPECT_EQ(encode(1e-4, true), 0x07);
  EXPECT_EQ(encode(-3.3, true), 0xc3);
  EXPECT_EQ(decode(0x7c, true), INFINITY) << "e5m2 has an infinity (never produced by a conversion)";
  // Every finite pattern is its own value's conversion.
  for (bool e5m2 : {false, true})
    for (int b = 0; b < 256; ++b) {
      const double v = decode(static_cast<std::uint8_t>(b), e5m2);
      if (std::isfinite(v) && v != 0) {
        EXPECT_EQ(encode(v, e5m2), b) << (e5m2 ? "e5m2 " : "e4m3 ") << b;
      }
    }
}

// The public host conversions (vantage/types.hpp) are the same.
TEST(Float8, TheHostConversionsAreTheKernels) {
  for (double x : {0.0, 1.0, -3.3, 464.0, 1e9, 1e-4, 57344.0, 61440.0}) {
    EXPECT_EQ(to_fp8_e4m3(x).bits, encode(x, false)) << x;
    EXPECT_EQ(to_fp8_e5m2(x).bits, encode(x, true)) << x;
    EXPECT_EQ(value_of(to_fp8_e4m3(x)), decode(encode(x, false), false)) << x;
    EXPECT_EQ(value_of(to_fp8_e5m2(x)), decode(encode(x, true), true)) << x;
  }
  EXPECT_EQ(value_of(fp8_e4m3{0x7e}), 448.0);
}

#ifdef VANTAGE_HAVE_CUDA_FP8
// The toolkit's host conversion (what __nv_fp8_e4m3's constructor computes off the GPU) on one f32
// pattern in every 4099, and every pattern back: the same bits, but for the NaNs' payloads.
TEST(Float8, ConversionsAreTheToolkitsOnASweepOfEveryFloat) {
  int differ = 0;
  for (std::uint64_t u = 0; u < (std::uint64_t{1} << 32); u += 4099) {
    const auto bits = static_cast<std::uint32_t>(u);
    float f;
    std::memcpy(&f, &bits, 4);
    for (bool e5m2 : {false, true}) {
      const auto theirs = __nv_cvt_double_to_fp8(f, __NV_SATFINITE, e5m2 ? __NV_E5M2 : __NV_E4M3);
      const auto ours = encode(f, e5m2);
      if (std::isnan(f) ? !std::isnan(decode(ours, e5m2)) : theirs != ours)
        if (++differ <= 10)
          ADD_FAILURE() << std::hexfloat << f << (e5m2 ? " e5m2: " : " e4m3: ") << +theirs << " " << +ours;
    }
  }
  EXPECT_EQ(differ, 0);
  for (bool e5m2 : {false, true})
    for (int b = 0; b < 256; ++b) {
      const __half_raw h = __nv_cvt_fp8_to_halfraw(static_cast<__nv_fp8_storage_t>(b), e5m2 ? __NV_E5M2 : __NV_E4M3);
      const float theirs = __half2float(__half(h)),
                  ours = static_cast<float>(decode(static_cast<std::uint8_t>(b), e5m2));
      if (std::isnan(theirs))
        EXPECT_TRUE(std::isnan(ours)) << b;
      else
        EXPECT_EQ(theirs, ours) << (e5m2 ? "e5m2 " : "e4m3 ") << b;
    }
}
#endif

/// A kernel converting each x[i] (f32) and y[i] (f64) to both 8-bit formats and back to f32.
Kernel round_trips() {
  KernelBuilder k("fp8_round_trips");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<const double>>("y", extent(n));
  auto a = k.param<GlobalPtr<fp8_e4m3>>("a", extent(n));
  auto b = k.param<GlobalPtr<fp8_e5m2>>("b", extent(n));
  auto back = k.param<GlobalPtr<float>>("back", extent(4 * n));
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        a, thread(1), [&](Expr j) { return i + j; },
        [&](Scope& g, View ai) {
          g.partition(
              b, thread(1), [&](Expr j) { return i + j; },
              [&](Scope& g, View bi) {
                g.partition(
                    back, thread(1), [&](Expr j) { return i * 4 + j; },
                    [&](Scope& g, View o) {
                      g.group(thread(1), [&](Scope& th) {
                        th.if_(i < n, [&](Scope&) {
                          ai[0] = cast(ScalarType::F8E4M3, x[i]);
                          bi[0] = cast(ScalarType::F8E5M2, x[i]);
                          o[0] = cast<float>(ai[0]);
                          o[1] = cast<float>(bi[0]);
                          o[2] = cast<float>(cast(ScalarType::F8E4M3, y[i]));  // from f64: one rounding
                          o[3] = cast<float>(cast(ScalarType::F8E5M2, cast(ScalarType::F8E4M3, x[i])));
                        });
                      });
                    });
              });
        });
  });
  return k.build();
}

TEST(Float8, KernelsConvertAlikeOnEveryDevice) {
  const Kernel kernel = round_trips();
  const std::vector<float> xs = {0.0f,     -0.0f, 1.0f,    -3.3f,        448.0f,  464.0f,  465.0f,  1e9f, -1e9f,
                                 INFINITY, NAN,   0.0001f, 1.953125e-3f, 57344.f, 61440.f, 70000.f, 0.3f, 100.5f};
  std::vector<double> ys(xs.begin(), xs.end());
  ys[2] = 1.0 + std::ldexp(1.0, -4) + std::ldexp(1.0, -40);  // just above a tie: up, where f32 would tie and stay
  const int n = static_cast<int>(xs.size());
  const std::vector<Device> devices = test_support::every_device();
  auto same = [](double want, float got) { return std::isnan(want) ? std::isnan(got) : want == got; };
  for (const Device& dev : devices) {
    std::vector<fp8_e4m3> a(static_cast<std::size_t>(n), fp8_e4m3{0x55});
    std::vector<fp8_e5m2> b(static_cast<std::size_t>(n), fp8_e5m2{0x55});
    std::vector<float> back(static_cast<std::size_t>(4 * n), -1.0f);
    test_support::launch_on(kernel, dev, Grid{1, 32}, n, xs, ys, a, b, back);
    for (int i = 0; i < n; ++i) {
      SCOPED_TRACE(dev.name() + " of " + std::to_string(xs[static_cast<std::size_t>(i)]));
      const double x = xs[static_cast<std::size_t>(i)];
      const std::uint8_t wa = encode(x, false), wb = encode(x, true);
      if (std::isnan(x)) {
        EXPECT_TRUE(std::isnan(decode(a[static_cast<std::size_t>(i)].bits, false)));
        EXPECT_TRUE(std::isnan(decode(b[static_cast<std::size_t>(i)].bits, true)));
      } else {
        EXPECT_EQ(a[static_cast<std::size_t>(i)].bits, wa);
        EXPECT_EQ(b[static_cast<std::size_t>(i)].bits, wb);
      }
      EXPECT_TRUE(same(decode(wa, false), back[static_cast<std::size_t>(4 * i)]));
      EXPECT_TRUE(same(decode(wb, true), back[static_cast<std::size_t>(4 * i + 1)]));
      EXPECT_TRUE(same(decode(encode(ys[static_cast<std::size_t>(i)], false), false),
                       back[static_cast<std::size_t>(4 * i + 2)]));
      EXPECT_TRUE(same(decode(encode(decode(wa, false), true), true), back[static_cast<std::size_t>(4 * i + 3)]));
    }
  }
  const std::string src = specialize_for(kernel, Spec{}).source;
  EXPECT_NE(src.find("#include <cuda_fp8.h>"), std::string::npos) << src;
  EXPECT_NE(src.find("__nv_fp8_e4m3("), std::string::npos) << src;
  if (nvrtc_available()) {
    EXPECT_EQ(compile(kernel, Spec{}).log, "") << src;
  }
}

TEST(Float8, EightBitFloatsAreForStorageAndEachMisuseIsRefusedAtTheUsersLine) {
  int line = 0;
  auto rejects = [&](const std::string& code, const std::string& says,
                     const std::function<void(Scope&, const View&)>& body) -> ::testing::AssertionResult {
    KernelBuilder k("fp8_misuse");
    auto q = k.param<GlobalPtr<fp8_e4m3>>("q");
    k.block_threads(32);
    k.body([&](Scope& g) { body(g, q); });
    return testing::rejected_saying(k, code, line, "tests/test_float8.cpp", says);
  };
  auto sum = rejects("V0702", "is for storage: compute in f32, cast<float>(x)", [&](Scope& g, const View& q) {
    g.group(thread(1), [&](Scope& th) { line = __LINE__, th.let("s", q[0] + q[1]); });
  });
  EXPECT_TRUE(sum);
  auto mixed = rejects("V0701", "is for storage", [&](Scope& g, const View& q) {
    g.group(thread(1), [&](Scope& th) { line = __LINE__, th.let("s", q[0] * 2.0f); });
  });
  EXPECT_TRUE(mixed);
  auto to_int = rejects("V0702", "cast through f32", [&](Scope& g, const View& q) {
    g.group(thread(1), [&](Scope& th) { line = __LINE__, th.let("k", cast<int>(q[0])); });
  });
  EXPECT_TRUE(to_int);
  auto shuffle = rejects("V0503", "cannot shuffle a f8e4m3", [&](Scope& g, const View& q) {
    g.group(thread(32), [&](Scope& w) {
      Var v = w.let("v", q[0], at(thread(1)));
      line = __LINE__, w.shfl_xor("o", v, 1);
    });
  });
  EXPECT_TRUE(shuffle);
  auto atomic = rejects("V0505", "not supported on f8e4m3", [&](Scope& g, const View& q) {
    g.group(thread(1),
            [&](Scope& th) { line = __LINE__, th.atomic(AtomicOp::Exch, q, 0, cast(ScalarType::F8E4M3, Expr(1.0f))); });
  });
  EXPECT_TRUE(atomic);
}

}  // namespace
}  // namespace vantage
