// The math functions past the first thirteen (tan, asin, acos, atan, sinh, cosh, erf, erfc, expm1,
// log1p, log10, cbrt, trunc, round, rint, atan2, fmod, hypot, copysign) and the float predicates
// (isnan, isinf, isfinite): on the interpreter and the CPU backend the host's C library in double,
// rounded once to the type (the same bits on both); as generated CUDA, CUDA's functions, within
// their documented error bounds, on host threads (the host's float functions stand for them) and on a
// GPU where there is one; and refused for operands they are not defined for.
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
#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

struct Fn {
  const char* name;
  std::function<Expr(Expr, Expr)> make;       ///< the builder's call (`y`, the second operand, where it takes one)
  std::function<double(double, double)> ref;  ///< C's function in double
  bool exact;                                 ///< every device gives the correctly rounded value
};

const std::vector<Fn>& functions() {
  static const std::vector<Fn> fns = {
      {"tan", [](Expr x, Expr) { return tan(x); }, [](double x, double) { return std::tan(x); }, false},
      {"asin", [](Expr x, Expr) { return asin(x); }, [](double x, double) { return std::asin(x); }, false},
      {"acos", [](Expr x, Expr) { return acos(x); }, [](double x, double) { return std::acos(x); }, false},
      {"atan", [](Expr x, Expr) { return atan(x); }, [](double x, double) { return std::atan(x); }, false},
      {"sinh", [](Expr x, Expr) { return sinh(x); }, [](double x, double) { return std::sinh(x); }, false},
      {"cosh", [](Expr x, Expr) { return cosh(x); }, [](double x, double) { return std::cosh(x); }, false},
      {"erf", [](Expr x, Expr) { return erf(x); }, [](double x, double) { return std::erf(x); }, false},
      {"erfc", [](Expr x, Expr) { return erfc(x); }, [](double x, double) { return std::erfc(x); }, false},
      {"expm1", [](Expr x, Expr) { return expm1(x); }, [](double x, double) { return std::expm1(x); }, false},
      {"log1p", [](Expr x, Expr) { return log1p(x); }, [](double x, double) { return std::log1p(x); }, false},
      {"log10", [](Expr x, Expr) { return log10(x); }, [](double x, double) { return std::log10(x); }, false},
      {"cbrt", [](Expr x, Expr) { return cbrt(x); }, [](double x, double) { return std::cbrt(x); }, false},
      {"trunc", [](Expr x, Expr) { return trunc(x); }, [](double x, double) { return std::trunc(x); }, true},
      {"round", [](Expr x, Expr) { return round(x); }, [](double x, double) { return std::round(x); }, true},
      {"rint", [](Expr x, Expr) { return rint(x); }, [](double x, double) { return std::nearbyint(x); }, true},
      {"atan2", [](Expr x, Expr y) { return atan2(x, y); }, [](double x, double y) { return std::atan2(x, y); }, false},
      {"fmod", [](Expr x, Expr y) { return fmod(x, y); }, [](double x, double y) { return std::fmod(x, y); }, true},
      {"hypot", [](Expr x, Expr y) { return hypot(x, y); }, [](double x, double y) { return std::hypot(x, y); }, false},
      {"copysign", [](Expr x, Expr y) { return copysign(x, y); },
       [](double x, double y) { return std::copysign(x, y); }, true},
  };
  return fns;
}
constexpr int kPredicates = 3;  // isnan, isinf, isfinite

const float kInf = std::numeric_limits<float>::infinity();
const float kNan = std::numeric_limits<float>::quiet_NaN();
const float kMax = std::numeric_limits<float>::max();
// Edges of every function: signed zeros, halves (round against rint), the domains' ends (asin past
// 1, log1p at -1, log10 of a negative), overflow (sinh, cosh), subnormal and huge arguments, NaN and
// the infinities; paired with second operands that are zero, infinite, negative and NaN.
const std::vector<float> kX = {0.0f,       -0.0f,    1.0f,    -1.0f,  0.5f,   -0.5f,  2.5f,  -2.5f, 1.5f,   -7.0f,
                               7.0f,       3.14159f, -7.25f,  1e-30f, 1e30f,  -1e30f, 3e38f, 1e-8f, 0.999f, 1.001f,
                               12345.678f, 100.0f,   -100.0f, 88.5f,  1e-40f, kNan,   kInf,  -kInf, kMax};
const std::vector<float> kY = {-0.0f, 3.0f,  -3.0f, 1.0f,   2.0f, -1.0f, 0.0f,  kInf, -2.0f, 3.0f,
                               -3.0f, 2.0f,  0.5f,  1e-30f, 7.0f, -7.0f, 1e30f, 1.0f, kNan,  -kInf,
                               0.25f, 10.0f, 1e-3f, -5.0f,  2.0f, 1.0f,  -0.0f, 4.0f, 0.5f};

/// out[i * K + f] = function f of (x[i], y[i]) computed in `t`, as T; flags[i * 3 + p] = predicate
/// p of x[i] in `t`. T is float (t f32, f16 or bf16) or double (t f64).
template <class T>
Kernel math_kernel_of(ScalarType t) {
  const int K = static_cast<int>(functions().size());
  KernelBuilder k(std::string("math_") + type_name(t));
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const T>>("x", extent(n));
  auto y = k.param<GlobalPtr<const T>>("y", extent(n));
  auto out = k.param<GlobalPtr<T>>("out", extent(n * K));
  auto flags = k.param<GlobalPtr<int>>("flags", extent(n * kPredicates));
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr j) { return i * K + j; },
        [&](Scope& g, View o) {
          g.partition(
              flags, thread(1), [&](Expr j) { return i * kPredicates + j; },
              [&](Scope& g, View f) {
                g.group(thread(1), [&](Scope& th) {
                  th.if_(i < n, [&](Scope&) {
                    const bool as_stored = t == scalar_of<T>;
                    Expr a = as_stored ? Expr(x[i]) : cast(t, x[i]);
                    Expr b = as_stored ? Expr(y[i]) : cast(t, y[i]);
                    for (int j = 0; j < K; ++j) {
                      Expr r = functions()[static_cast<std::size_t>(j)].make(a, b);
                      o[j] = as_stored ? r : cast<T>(r);
                    }
                    f[0] = cast<int>(isnan(a));
                    f[1] = cast<int>(isinf(a));
                    f[2] = cast<int>(isfinite(a));
                  });
                });
              });
        });
  });
  return k.build();
}
Kernel math_kernel(ScalarType t) { return math_kernel_of<float>(t); }
Kernel math_kernel_f64() { return math_kernel_of<double>(ScalarType::F64); }

/// Distance in units in the last place between two floats of one type (NaNs equal to each other,
/// far from anything else).
template <class F, class U>
std::uint64_t ulps(F a, F b) {
  if (std::isnan(a) || std::isnan(b)) return std::isnan(a) && std::isnan(b) ? 0 : UINT64_MAX;
  if (a == b) return 0;  // +0 and -0 too
  auto key = [](F v) {
    const U u = std::bit_cast<U>(v);
    const U sign = U{1} << (sizeof(U) * 8 - 1);
    return static_cast<std::int64_t>(u & sign ? -static_cast<std::int64_t>(u & ~sign) : static_cast<std::int64_t>(u));
  };
  const std::int64_t d = key(a) - key(b);
  return static_cast<std::uint64_t>(d < 0 ? -d : d);
}
std::uint64_t ulps(float a, float b) { return ulps<float, std::uint32_t>(a, b); }
std::uint64_t ulps(double a, double b) { return ulps<double, std::uint64_t>(a, b); }

bool same_bits(float a, float b) { return std::bit_cast<std::uint32_t>(a) == std::bit_cast<std::uint32_t>(b); }
bool same_bits(double a, double b) { return std::bit_cast<std::uint64_t>(a) == std::bit_cast<std::uint64_t>(b); }

template <class T>
struct Results {
  std::vector<T> out;
  std::vector<int> flags;
};

template <class T>
Results<T> run(const Kernel& kernel, const Device& d, const std::vector<T>& x, const std::vector<T>& y) {
  const int n = static_cast<int>(x.size());
  Results<T> r{std::vector<T>(x.size() * functions().size(), T(-12345)), std::vector<int>(x.size() * kPredicates, -1)};
  test_support::launch_on(kernel, d, Grid{1, 32}, n, x, y, r.out, r.flags);
  return r;
}

// Every function of an f32 on the interpreter is C's in double rounded once to f32, and the CPU
// backend gives the same bits; the predicates say what C's do.
TEST(Math, TheFunctionsOfAnF32AreCsInDoubleRoundedOnceOnTheInterpreterAndTheCpu) {
  const Kernel kernel = math_kernel(ScalarType::F32);
  const std::size_t K = functions().size();
  std::vector<Device> devices{Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(2));
  for (const Device& d : devices) {
    const Results<float> r = run(kernel, d, kX, kY);
    for (std::size_t i = 0; i < kX.size(); ++i) {
      for (std::size_t f = 0; f < K; ++f) {
        const float want = static_cast<float>(functions()[f].ref(kX[i], kY[i]));
        const float got = r.out[i * K + f];
        EXPECT_TRUE(same_bits(got, want) || (std::isnan(got) && std::isnan(want)))
            << d.name() << ": " << functions()[f].name << "(" << kX[i] << ", " << kY[i] << ") is " << got << ", not "
            << want;
      }
      EXPECT_EQ(r.flags[i * 3 + 0], std::isnan(kX[i]) ? 1 : 0) << d.name() << " isnan(" << kX[i] << ")";
      EXPECT_EQ(r.flags[i * 3 + 1], std::isinf(kX[i]) ? 1 : 0) << d.name() << " isinf(" << kX[i] << ")";
      EXPECT_EQ(r.flags[i * 3 + 2], std::isfinite(kX[i]) ? 1 : 0) << d.name() << " isfinite(" << kX[i] << ")";
    }
  }
}

// The values a user meets at the edges, written out: halves (round away from zero, rint to even),
// signs of zero, the remainder's sign, the domains' ends.
TEST(Math, TheEdgesAreWhatCSays) {
  const Kernel kernel = math_kernel(ScalarType::F32);
  const std::size_t K = functions().size();
  auto at = [&](const Results<float>& r, float x, const char* fn) {
    std::size_t i = 0, f = 0;
    while (i < kX.size() && !same_bits(kX[i], x)) ++i;
    while (f < K && std::string(functions()[f].name) != fn) ++f;
    EXPECT_LT(i, kX.size());
    EXPECT_LT(f, K);
    return r.out[i * K + f];
  };
  std::vector<Device> devices{Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(2));
  for (const Device& d : devices) {
    const Results<float> r = run(kernel, d, kX, kY);
    SCOPED_TRACE(d.name());
    EXPECT_EQ(at(r, 2.5f, "round"), 3.0f);
    EXPECT_EQ(at(r, -2.5f, "round"), -3.0f);
    EXPECT_EQ(at(r, 2.5f, "rint"), 2.0f);
    EXPECT_EQ(at(r, 1.5f, "rint"), 2.0f);
    EXPECT_TRUE(std::signbit(at(r, -0.5f, "rint"))) << "rint(-0.5) is -0";
    EXPECT_EQ(at(r, -0.5f, "round"), -1.0f);
    EXPECT_EQ(at(r, -7.25f, "trunc"), -7.0f);
    EXPECT_EQ(at(r, -7.0f, "fmod"), -1.0f);  // fmod(-7, 3): the sign of the dividend
    EXPECT_EQ(at(r, 7.0f, "fmod"), 1.0f);    // fmod(7, -3)
    EXPECT_TRUE(std::isnan(at(r, 0.0f, "fmod"))) << "fmod(0, -0) is NaN";
    EXPECT_EQ(at(r, 1.0f, "copysign"), -1.0f);  // copysign(1, -3)
    EXPECT_EQ(at(r, 0.0f, "copysign"), 0.0f);
    EXPECT_TRUE(std::signbit(at(r, 0.0f, "copysign"))) << "copysign(0, -0) is -0";
    EXPECT_EQ(at(r, -1.0f, "log1p"), -kInf);
    EXPECT_TRUE(std::isnan(at(r, -100.0f, "log10")));
    EXPECT_TRUE(std::isnan(at(r, 1.001f, "asin")));
    EXPECT_EQ(at(r, 100.0f, "sinh"), kInf);
    EXPECT_EQ(at(r, -kInf, "erf"), -1.0f);
    EXPECT_EQ(at(r, 100.0f, "erfc"), 0.0f);
    EXPECT_EQ(at(r, -1.0f, "cbrt"), -1.0f);
    EXPECT_EQ(at(r, 3e38f, "hypot"), 3e38f);  // hypot(3e38, 1): no overflow
    EXPECT_EQ(at(r, 1.0f, "atan2"), static_cast<float>(std::atan2(1.0, -3.0)));
    EXPECT_EQ(at(r, 1e-8f, "expm1"), 1e-8f);  // exp(x) - 1 would give 0
  }
}

// f64 computes in double: C's functions themselves. f16 and bf16 compute in f32 and round to
// their type: on the CPU backend the interpreter's bits.
TEST(Math, F64AndTheSixteenBitFloatsAgreeOnTheInterpreterAndTheCpu) {
  const std::vector<double> x(kX.begin(), kX.end()), y(kY.begin(), kY.end());
  const Kernel k64 = math_kernel_f64();
  const Results<double> ref = run(k64, Device::interpreter(), x, y);
  const std::size_t K = functions().size();
  for (std::size_t i = 0; i < x.size(); ++i)
    for (std::size_t f = 0; f < K; ++f) {
      const double want = functions()[f].ref(x[i], y[i]), got = ref.out[i * K + f];
      EXPECT_TRUE(same_bits(got, want) || (std::isnan(got) && std::isnan(want)))
          << functions()[f].name << "(" << x[i] << ", " << y[i] << ") is " << got << ", not " << want;
    }
  if (!Device::cpu_available()) GTEST_SKIP() << "this build has no CPU backend (VANTAGE_CPU_BACKEND=OFF)";
  const Results<double> cpu = run(k64, Device::cpu(2), x, y);
  for (std::size_t i = 0; i < cpu.out.size(); ++i)
    EXPECT_TRUE(same_bits(cpu.out[i], ref.out[i]) || (std::isnan(cpu.out[i]) && std::isnan(ref.out[i])))
        << functions()[i % K].name << " of f64 " << x[i / K] << ": " << cpu.out[i] << " on the CPU, " << ref.out[i];
  EXPECT_EQ(cpu.flags, ref.flags);
  for (ScalarType t : {ScalarType::F16, ScalarType::BF16}) {
    const Kernel k = math_kernel(t);
    const Results<float> a = run(k, Device::interpreter(), kX, kY), b = run(k, Device::cpu(2), kX, kY);
    for (std::size_t i = 0; i < a.out.size(); ++i)
      EXPECT_TRUE(same_bits(a.out[i], b.out[i]) || (std::isnan(a.out[i]) && std::isnan(b.out[i])))
          << type_name(t) << " " << functions()[i % K].name << " of " << kX[i / K] << ": " << b.out[i]
          << " on the CPU, " << a.out[i] << " on the interpreter";
    EXPECT_EQ(a.flags, b.flags) << type_name(t);
  }
}

/// Whether a device's f32 result is within CUDA's documented bound of the interpreter's (C's in
/// double, rounded once: within half an ulp of the true value): the exact functions to the bit, the
/// others within 5 ulp (CUDA's largest bound among them, tanf's and erfcf's 4, and that half).
::testing::AssertionResult within_cudas_bound(const Fn& f, float got, float want) {
  const std::uint64_t d = ulps(got, want);
  if (f.exact ? d == 0 : d <= 5) return ::testing::AssertionSuccess();
  return ::testing::AssertionFailure() << f.name << ": " << got << " against " << want << ", " << d << " ulp apart";
}

// The generated CUDA calls CUDA's float functions (tanf, erff, rintf...) and tests NaN and the
// infinities by comparisons: run as C++ on host threads, where the C library's float functions stand
// for CUDA's, every result is within CUDA's bound of the interpreter's; NVRTC compiles it, with no
// header, for every float type.
TEST(Math, TheGeneratedCudaComputesWithinCudasBoundsOfTheInterpreterOnHostThreads) {
  const Kernel kernel = math_kernel(ScalarType::F32);
  const std::size_t K = functions().size();
  const Results<float> ref = run(kernel, Device::interpreter(), kX, kY);
  const Specialized s = specialize_for(kernel, Spec{});
  for (const char* call : {"erff(", "rintf(", "atan2f(", "copysignf(", "fabsf("})
    EXPECT_NE(s.source.find(call), std::string::npos) << call << " in\n" << s.source;
  ASSERT_TRUE(test_support::runs_on_host(s.source)) << s.source;
  test_support::HostLaunch l{s.source, s.entry, 1, 32, {}};
  l.args = {test_support::HostArg::of("int", static_cast<double>(kX.size())), test_support::HostArg::of("float", kX),
            test_support::HostArg::of("float", kY),
            test_support::HostArg::of("float", std::vector<double>(kX.size() * K, -1.0)),
            test_support::HostArg::of("int", std::vector<double>(kX.size() * kPredicates, -1.0))};
  const test_support::HostLaunches host = test_support::run_launches_on_host({l});
  ASSERT_TRUE(host.ok) << host.problem;
  const auto& out = host.results[0].buffers[2];  // the buffers in order: x, y, out, flags
  const auto& flags = host.results[0].buffers[3];
  ASSERT_EQ(out.size(), ref.out.size());
  for (std::size_t i = 0; i < out.size(); ++i) {
    const float got = std::bit_cast<float>(static_cast<std::uint32_t>(out[i]));
    EXPECT_TRUE(within_cudas_bound(functions()[i % K], got, ref.out[i]))
        << "on host threads, of (" << kX[i / K] << ", " << kY[i / K] << ")";
  }
  for (std::size_t i = 0; i < flags.size(); ++i)
    EXPECT_EQ(flags[i], ref.flags[i]) << "predicate " << i % 3 << " of " << kX[i / 3] << " on host threads";
  REQUIRE_NVRTC();
  for (ScalarType t : {ScalarType::F32, ScalarType::F16, ScalarType::BF16}) {
    const Compiled c = compile(math_kernel(t), Spec{});
    EXPECT_EQ(c.log, "") << type_name(t);
  }
  EXPECT_EQ(compile(math_kernel_f64(), Spec{}).log, "");
}

// On a GPU (the GPU bundle's check), every function of an f32 and an f64 is within CUDA's bound of
// the interpreter's value, and the exact ones and the predicates are the interpreter's.
TEST(Math, OnAGpuEachFunctionIsWithinCudasBoundOfTheInterpreter) {
  if (Device::gpu_count() == 0) GTEST_SKIP() << "no GPU here; the GPU bundle's check runs this";
  const Kernel kernel = math_kernel(ScalarType::F32);
  const std::size_t K = functions().size();
  const Results<float> ref = run(kernel, Device::interpreter(), kX, kY);
  const Device gpu = Device::gpu(0);
  const Results<float> g = run(kernel, gpu, kX, kY);
  for (std::size_t i = 0; i < g.out.size(); ++i)
    EXPECT_TRUE(within_cudas_bound(functions()[i % K], g.out[i], ref.out[i]))
        << "on " << gpu.name() << ", of (" << kX[i / K] << ", " << kY[i / K] << ")";
  EXPECT_EQ(g.flags, ref.flags);
  const std::vector<double> x(kX.begin(), kX.end()), y(kY.begin(), kY.end());
  const Kernel k64 = math_kernel_f64();
  const Results<double> r64 = run(k64, Device::interpreter(), x, y), g64 = run(k64, gpu, x, y);
  for (std::size_t i = 0; i < g64.out.size(); ++i) {
    const Fn& f = functions()[i % K];
    const std::uint64_t d = ulps(g64.out[i], r64.out[i]);
    EXPECT_TRUE(f.exact ? d == 0 : d <= 8)
        << f.name << " of f64 " << x[i / K] << " on " << gpu.name() << ": " << g64.out[i] << " against " << r64.out[i];
  }
  EXPECT_EQ(g64.flags, r64.flags);
}

// Each function takes floats of one type: an integer operand is V0702 naming the function, two
// float types V0701, an fp8 operand V0702 saying to convert it first.
TEST(Math, AnOperandTheFunctionIsNotDefinedForIsRefusedAtTheUsersLine) {
  int line = 0;
  auto int_erf = [&](KernelBuilder& k) {
    auto n = k.param<int>("n");
    auto out = k.param<GlobalPtr<float>>("out", extent(1));
    k.body([&](Scope& g) {
      lib::by_one_thread(g, out, [&](Scope&, View o) {
        line = __LINE__ + 1;
        o[0] = erf(cast<float>(n)) + erf(n);
      });
    });
  };
  EXPECT_TRUE(testing::rejects_kernel("V0702", line, int_erf, "test_math.cpp"));
  auto int_isnan = [&](KernelBuilder& k) {
    auto n = k.param<int>("n");
    auto out = k.param<GlobalPtr<int>>("out", extent(1));
    k.body([&](Scope& g) {
      lib::by_one_thread(g, out, [&](Scope&, View o) {
        line = __LINE__ + 1;
        o[0] = cast<int>(isnan(n));
      });
    });
  };
  EXPECT_TRUE(testing::rejects_kernel("V0702", line, int_isnan, "test_math.cpp"));
  auto two_types = [&](KernelBuilder& k) {
    auto a = k.param<float>("a");
    auto b = k.param<double>("b");
    auto out = k.param<GlobalPtr<float>>("out", extent(1));
    k.body([&](Scope& g) {
      lib::by_one_thread(g, out, [&](Scope&, View o) {
        line = __LINE__ + 1;
        o[0] = atan2(a, cast<float>(b)) + cast<float>(hypot(a, b));
      });
    });
  };
  EXPECT_TRUE(testing::rejects_kernel("V0701", line, two_types, "test_math.cpp"));
  KernelBuilder k("fp8_rint");
  auto a = k.param<float>("a");
  auto out = k.param<GlobalPtr<float>>("out", extent(1));
  k.block_threads(32);
  k.body([&](Scope& g) {
    lib::by_one_thread(g, out, [&](Scope&, View o) {
      line = __LINE__ + 1;
      o[0] = cast<float>(rint(cast(ScalarType::F8E4M3, a)));
    });
  });
  EXPECT_TRUE(testing::rejected_saying(k, "V0702", line, "test_math.cpp", "rint is not defined for f8e4m3"));
}

// A variable may be named as a function the generated CUDA calls (expf, rintf, fminf, printf...):
// the name is changed in the CUDA, not left to hide the function, and NVRTC compiles it.
TEST(Math, AVariableNamedAsACudaFunctionDoesNotHideIt) {
  KernelBuilder k("shadows");
  auto x = k.param<float>("x");
  auto d = k.param<double>("d");
  auto out = k.param<GlobalPtr<float>>("out", extent(1));
  k.block_threads(32);
  const std::vector<std::string> names = {"expf",  "rintf",  "erff", "fabsf", "fabs", "fminf", "fmaxf",     "powf",
                                          "llabs", "printf", "erf",  "round", "sinf", "atan2", "atomicAdd", "log1pf"};
  k.body([&](Scope& g) {
    lib::by_one_thread(g, out, [&](Scope& th, View o) {
      Expr sum = x;
      for (const auto& name : names) sum = sum + th.let(name, x + 1.0f);
      Expr r = exp(sum) + rint(x) + erf(x) + abs(x) + cast<float>(abs(d)) + min(x, sum) + max(x, sum) + pow(x, sum) +
               sin(x) + atan2(x, sum) + round(x) + log1p(x) + cast<float>(abs(cast<std::int64_t>(x)));
      th.print("{}", {r});
      o[0] = select(isnan(r), 0.0f, r);
    });
  });
  const Kernel kernel = k.build();
  const std::string src = specialize_for(kernel, Spec{}).source;
  for (const auto& name : names)
    EXPECT_EQ(src.find(" " + name + " = "), std::string::npos) << "a variable named " << name << " in\n" << src;
  REQUIRE_NVRTC();
  EXPECT_EQ(compile(kernel, Spec{}).log, "");
}

}  // namespace
}  // namespace vantage
