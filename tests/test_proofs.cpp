// Bounds proofs as the generated code shows them: an access proven inside its buffer is plain, one
// that cannot be proven is checked as it runs (and its failure caught), on every backend.
#include <gtest/gtest.h>

#include <limits>
#include <regex>

#include "kernels/paper_kernels.hpp"
#include "kernels/stages.hpp"
#include "reject_helpers.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

using test_support::count;
// The bounds proof asks for the range of an index's value, not of its intermediates: (t % 32) % 8
// is in [0, 8) though t % 32 is not. Taking the envelope of both would leave every warp's read of the
// block reduction's 8 partials checked as it runs.
TEST(Codegen, AnIndexIsProvenByItsValueNotItsIntermediates) {
  KernelBuilder k("rem_of_rem");
  auto out = k.param<GlobalPtr<int>>("out", extent(256));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 256, [&](Scope& b, Expr, View out_b) {
      View s = b.shared<int>("s", 8);
      b.claim(s, thread(1), [&](Scope& b, View one) {
        b.split(Level::Thread, {{1, [&](Scope&) {
                                   for (int i = 0; i < 8; ++i) one[i] = i * 3;
                                 }}});
      });
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) { b.group(thread(1), [&](Scope&) { o[0] = s[(t % 32) % 8]; }); });
    });
  });
  Kernel kernel = k.build();
  std::string lowered = kernel.lowered(Spec{});
  EXPECT_NE(lowered.find("s[((t % 32) % 8)];"), std::string::npos) << lowered;
  EXPECT_EQ(lowered.find("% 8) if <"), std::string::npos) << "the read is checked as it runs:\n" << lowered;
  std::vector<int> got(256);
  kernel.launch(Device::interpreter(), Grid{1, 256}, got);
  for (int t = 0; t < 256; ++t) EXPECT_EQ(got[static_cast<std::size_t>(t)], (t % 8) * 3) << t;
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
/// `if (r < rows && c + 4 <= cols) m[r * cols + c + d]` for d in 0..3, or with the given condition:
/// the 2-D bounds of a row-major matrix, where the proof scales the row's condition by the row length.
Kernel row_access(const char* name, int cols, const std::function<Expr(Expr r, Expr c, Expr rows)>& cond, int d) {
  KernelBuilder k(name);
  auto rows = k.param<int>("rows");
  auto m = k.param<GlobalPtr<const float>>("m", extent(rows * cols));
  auto out = k.param<GlobalPtr<float>>("out", extent(256));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 256, [&](Scope& b, Expr blk, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) {
            b.group(thread(1), [&](Scope& th) {
              Expr r = blk * 16 + t / 16, c = t % 16 * 4;
              th.if_(cond(r, c, rows), [&](Scope&) { o[0] = m[r * cols + c + d]; });
            });
          });
    });
  });
  return k.build();
}

// The bounds proof combines two conditions: r < rows scaled by the row length, and c + 4 <= cols.
// One condition at a time would leave every 2-D access that a tile kernel guards this way checked as
// it runs, and no vector copy of a matrix row proven.
TEST(Codegen, ARowMajorAccessIsProvenByItsRowAndColumnConditionsTogether) {
  auto ok = [](Expr r, Expr c, Expr rows) { return r < rows && c + 4 <= 64; };
  // The read of m, to the end of its line: " if < " there would be its run-time check.
  auto read_of_m = [](const std::string& ir) {
    auto at = ir.find("= m[");
    return at == std::string::npos ? std::string("(no read of m)") : ir.substr(at, ir.find('\n', at) - at);
  };
  std::string proven = row_access("rows_ok", 64, ok, 3).lowered(Spec{});
  EXPECT_EQ(read_of_m(proven).find(" if < "), std::string::npos) << "the read is checked as it runs:\n" << proven;
  // In i64: with the grid not fixed, the row (blk * 16 + t / 16) times 64 may pass 2^31.
  EXPECT_NE(read_of_m(proven).find("+ 3l)]"), std::string::npos) << proven;
  // Conditions that do not imply the bound leave the check in place.
  auto row_le = [](Expr r, Expr c, Expr rows) { return r <= rows && c + 4 <= 64; };  // one row too many
  std::string row_le_ir = row_access("row_le", 64, row_le, 3).lowered(Spec{});
  EXPECT_NE(read_of_m(row_le_ir).find(" if < "), std::string::npos) << row_le_ir;
  std::string over_ir = row_access("col_past", 64, ok, 4).lowered(Spec{});  // c + 4 reaches the next row
  EXPECT_NE(read_of_m(over_ir).find(" if < "), std::string::npos) << over_ir;
  // Both read the last row's element past the matrix when rows is the block's last row: the checks
  // catch it as the kernel runs.
  std::vector<float> m(2 * 64, 1.0f), out(256);
  EXPECT_THROW(
      row_access("row_le_run", 64, row_le, 3).launch(Device::interpreter(), Grid{1, 256}, 2, std::as_const(m), out),
      ExecutionError);
}

// The same with the row length a parameter w: `if (r >= 0 && c >= 0 && r < h && c < w) m[r * w + c]`
// in h * w. The row's condition times w (w >= 0 from c's conditions) and the column's give the
// upper end; r * w, a product of two numbers at least 0, the lower. Without the product of two
// variables, every access of a matrix of run-time width would be checked as it runs.
TEST(Codegen, AnAccessToARowOfVariableLengthIsProvenByItsRowAndColumnConditions) {
  using Cond = std::function<Expr(Expr r, Expr c, Expr h, Expr w)>;
  auto kernel = [](const char* name, const Cond& cond) {
    KernelBuilder k(name);
    auto h = k.param<int>("h");
    auto w = k.param<int>("w");
    auto m = k.param<GlobalPtr<const int>>("m", extent(h * w));
    auto out = k.param<GlobalPtr<int>>("out", extent(256));
    k.block_threads(256);
    k.body([&](Scope& g) {
      lib::for_each(g, out, 256, [&](Scope& th, Expr i, ElemRef o) {
        auto r = th.let("r", i / 16 - 1), c = th.let("c", i % 16 - 2);
        th.if_(
            cond(r, c, h, w), [&](Scope&) { o = m[r * w + c]; }, [&](Scope&) { o = -1; });
      });
    });
    return k.build();
  };
  auto read_of_m = [](const std::string& ir) {
    auto at = ir.find("= m[");
    return at == std::string::npos ? std::string("(no read of m)") : ir.substr(at, ir.find('\n', at) - at);
  };
  const Cond inside = [](Expr r, Expr c, Expr h, Expr w) { return r >= 0 && c >= 0 && r < h && c < w; };
  std::string ir = kernel("rows_ok", inside).lowered(Spec{});
  EXPECT_EQ(read_of_m(ir).find(" if < "), std::string::npos) << "checked as it runs:\n" << ir;
  // A row too many, a column too many, or a side that may be negative: checked.
  const std::vector<std::pair<const char*, Cond>> nearly{
      {"row_le", [](Expr r, Expr c, Expr h, Expr w) { return r >= 0 && c >= 0 && r <= h && c < w; }},
      {"col_le", [](Expr r, Expr c, Expr h, Expr w) { return r >= 0 && c >= 0 && r < h && c <= w; }},
      {"r_any", [](Expr r, Expr c, Expr h, Expr w) { return c >= 0 && r < h && c < w; }},
      {"c_any", [](Expr r, Expr c, Expr h, Expr w) { return r >= 0 && r < h && c < w; }}};
  for (const auto& [name, cond] : nearly) {
    std::string near_ir = kernel(name, cond).lowered(Spec{});
    EXPECT_NE(read_of_m(near_ir).find(" if < "), std::string::npos) << name << ":\n" << near_ir;
  }
  // The proven one reads every element it should, on every backend, at sizes around the tile.
  for (auto [h, w] : {std::pair{3, 5}, std::pair{14, 14}, std::pair{1, 1}}) {
    std::vector<int> m(static_cast<std::size_t>(h * w)), want(256);
    for (std::size_t e = 0; e < m.size(); ++e) m[e] = static_cast<int>(e) * 3 + 1;
    for (int i = 0; i < 256; ++i) {
      int r = i / 16 - 1, c = i % 16 - 2;
      want[static_cast<std::size_t>(i)] =
          r >= 0 && c >= 0 && r < h && c < w ? m[static_cast<std::size_t>(r * w + c)] : -1;
    }
    std::vector<Device> devices{Device::interpreter()};
    if (Device::cpu_available()) devices.push_back(Device::cpu(1));
    for (const Device& d : devices) {
      std::vector<int> out(256, 0);
      kernel("rows_ok", inside).launch(d, Grid{1, 256}, h, w, std::as_const(m), out);
      EXPECT_EQ(out, want) << d.name() << ", " << h << " x " << w;
    }
  }
}

// What an index's own operations give: min(a, b) is at most a and b, and at least 0 when both are;
// a % b is in [0, b) for a >= 0 and b >= 1. So a read clamped into [0, n - 1], or wrapped by `% n`,
// is proven once n >= 1 is known (a requirement here), and checked where it is not (n = 0 makes
// n - 1 = -1, and i % 0 is i) or where the dividend may be negative. Each kernel runs where it is
// proven, at the smallest n, on every backend.
TEST(Codegen, AClampedOrWrappedReadIsProvenWhenTheBoundIsKnownToBePositive) {
  using Index = std::function<Expr(Expr i, Expr n)>;
  auto kernel = [](const char* name, const Index& index, bool positive) {
    KernelBuilder k(name);
    auto n = k.param<int>("n");
    auto x = k.param<GlobalPtr<const int>>("x", extent(n));
    auto out = k.param<GlobalPtr<int>>("out", extent(64));
    if (positive) k.require(n >= 1);
    k.block_threads(64);
    k.body([&](Scope& g) {
      lib::for_each(g, out, 64, [&](Scope& th, Expr i, ElemRef o) {
        auto v = th.let("v", i - 20);
        o = x[index(v, n)];
      });
    });
    return k.build();
  };
  auto read_of_x = [](const std::string& ir) {
    auto at = ir.find("= x[");
    return at == std::string::npos ? std::string("(no read of x)") : ir.substr(at, ir.find('\n', at) - at);
  };
  const std::vector<std::pair<const char*, Index>> proven{
      {"clamp", [](Expr v, Expr n) { return min(max(v, 0), n - 1); }},
      {"clamp_other_way", [](Expr v, Expr n) { return max(min(v, n - 1), 0); }},
      {"wrap", [](Expr v, Expr n) { return max(v, 0) % n; }},
      {"wrap_offset", [](Expr v, Expr n) { return (v + 20) % n; }}};
  for (const auto& [name, index] : proven) {
    Kernel k = kernel(name, index, true);
    std::string ir = k.lowered(Spec{});
    EXPECT_EQ(read_of_x(ir).find(" if < "), std::string::npos) << name << ": checked as it runs:\n" << ir;
    for (int n : {1, 7, 100}) {
      std::vector<int> xs(static_cast<std::size_t>(n)), want(64);
      for (int e = 0; e < n; ++e) xs[static_cast<std::size_t>(e)] = e * 5 + 2;
      for (int i = 0; i < 64; ++i) {
        int v = i - 20;
        bool clamp = std::string(name).rfind("clamp", 0) == 0;
        int at = clamp ? std::min(std::max(v, 0), n - 1) : std::string(name) == "wrap" ? std::max(v, 0) % n : i % n;
        want[static_cast<std::size_t>(i)] = xs[static_cast<std::size_t>(at)];
      }
      std::vector<Device> devices{Device::interpreter()};
      if (Device::cpu_available()) devices.push_back(Device::cpu(1));
      for (const Device& d : devices) {
        std::vector<int> o(64, 0);
        k.launch(d, Grid{1, 64}, n, std::as_const(xs), o);
        EXPECT_EQ(o, want) << name << ", n = " << n << ", " << d.name();
      }
    }
  }
  // Without n >= 1, or with a dividend that may be negative, or a clamp one past: checked.
  const std::vector<std::tuple<const char*, Index, bool>> checked{
      {"clamp_any_n", [](Expr v, Expr n) { return min(max(v, 0), n - 1); }, false},
      {"wrap_any_n", [](Expr v, Expr n) { return max(v, 0) % n; }, false},
      {"wrap_negative", [](Expr v, Expr n) { return v % n; }, true},
      {"clamp_to_n", [](Expr v, Expr n) { return min(max(v, 0), n); }, true},
      {"clamp_no_floor", [](Expr v, Expr n) { return min(v, n - 1); }, true}};
  for (const auto& [name, index, positive] : checked) {
    std::string ir = kernel(name, index, positive).lowered(Spec{});
    EXPECT_NE(read_of_x(ir).find(" if < "), std::string::npos) << name << ":\n" << ir;
  }
}

// A product counts as at least 0 for an index's lower end only where it is added: `x[t % 8 - (t % 4)
// * (t / 16)]` is -9 at its least though both factors are at least 0, so it is checked and caught
// (upper end proven by its range, lower end not), never left unchecked.
TEST(Codegen, AProductSubtractedFromAnIndexIsNotTakenAsAtLeastZero) {
  KernelBuilder k("minus_product");
  auto x = k.param<GlobalPtr<const int>>("x", extent(16));
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) {
            b.group(thread(1), [&](Scope& th) {
              th.if_(t % 8 >= 0 && t % 4 >= 0 && t / 16 >= 0, [&](Scope&) { o[0] = x[t % 8 - (t % 4) * (t / 16)]; });
            });
          });
    });
  });
  Kernel kernel = k.build();
  std::string ir = kernel.lowered(Spec{});
  EXPECT_NE(ir.find("x[((t % 8) - ((t % 4) * (t / 16))) if < 16l]"), std::string::npos) << ir;
  std::vector<int> xs(16, 1), o(64, 0);
  try {
    kernel.launch(Device::interpreter(), Grid{1, 64}, std::as_const(xs), o);
    FAIL() << "x[-1] (thread 17) went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "memcheck") << e.what();
  }
}

// An index one below its buffer at its least (`s[t - 1]` under `t < 64`: -1 for thread 0) is not
// proven: its upper end is inside, its lower end is not. Under `t >= 1` as well it is proven.
TEST(Codegen, AnIndexThatCanBeMinusOneIsCheckedAndCaught) {
  auto kernel = [](const char* name, bool from_one) {
    KernelBuilder k(name);
    auto x = k.param<GlobalPtr<const int>>("x", extent(64));
    auto out = k.param<GlobalPtr<int>>("out", extent(256));
    k.block_threads(256);
    k.body([&](Scope& g) {
      lib::for_each_block(g, out, 256, [&](Scope& b, Expr, View out_b) {
        auto t = b.let("t", b.id(thread(1)));
        b.partition(
            out_b, thread(1), [&](Expr i) { return t + i; },
            [&](Scope& b, View o) {
              b.group(thread(1), [&](Scope& th) {
                th.if_(from_one ? t >= 1 && t < 64 : t < 64, [&](Scope&) { o[0] = x[t - 1]; });
              });
            });
      });
    });
    return k.build();
  };
  auto read_of_x = [](const std::string& ir) {
    auto at = ir.find("= x[");
    return at == std::string::npos ? std::string("(no read of x)") : ir.substr(at, ir.find('\n', at) - at);
  };
  Kernel below = kernel("minus_one", false), inside = kernel("from_one", true);
  std::string below_ir = below.lowered(Spec{}), inside_ir = inside.lowered(Spec{});
  EXPECT_NE(read_of_x(below_ir).find(" if < "), std::string::npos) << "x[t - 1] was taken as proven:\n" << below_ir;
  EXPECT_EQ(read_of_x(inside_ir).find(" if < "), std::string::npos) << "the read is checked as it runs:\n" << inside_ir;
  std::vector<int> x(64, 5), out(256, 0);
  try {
    below.launch(Device::interpreter(), Grid{1, 256}, std::as_const(x), out);
    FAIL() << "the read of x[-1] went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "memcheck") << e.what();
  }
  inside.launch(Device::interpreter(), Grid{1, 256}, std::as_const(x), out);
  for (int t = 0; t < 256; ++t) EXPECT_EQ(out[static_cast<std::size_t>(t)], t >= 1 && t < 64 ? 5 : 0) << t;
}

// A three-point stencil under `i >= 1 && i + 1 < n`: the left neighbour proven inside x by the first
// condition (not only from the index's own range), the centre by the for_each's
// `i < n`. The right neighbour stays checked: as far as range analysis knows, i + 1 may wrap, so
// `i + 1 < n` proves nothing; so does the last element under `n > 0`. All give the reference's
// result.
TEST(Codegen, AStencilsNeighboursAreProvenByItsConditions) {
  KernelBuilder k("stencil3");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto y = k.param<GlobalPtr<int>>("y", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each(g, y, n, [&](Scope& th, Expr i, ElemRef yi) {
      th.if_(i >= 1 && i + 1 < n, [&](Scope&) { yi = x[i - 1] + x[i] * 2 + x[i + 1]; });
      th.if_(n > 0 && i == 0, [&](Scope&) { yi = x[n - 1]; });
    });
  });
  Kernel kernel = k.build();
  std::string ir = kernel.lowered(Spec{});
  // Each read as a whole, up to its `]`: a checked one has ` if < bound` before it.
  for (const char* read : {"x[(((blk * 256) + t) - 1)]", "x[((blk * 256) + t)]"})
    EXPECT_NE(ir.find(read), std::string::npos) << read << " is checked as it runs:\n" << ir;
  // In i64: i + 1 reaches 2^31 for the last thread of a grid of 2^31 threads.
  EXPECT_NE(ir.find("x[(i64(((blk * 256) + t)) + 1l) if < "), std::string::npos) << ir;
  const int len = 1000;
  std::vector<int> xs(len), want(len, -1);
  for (int i = 0; i < len; ++i) xs[static_cast<std::size_t>(i)] = (i * 37) % 101 - 50;
  for (int i = 1; i + 1 < len; ++i)
    want[static_cast<std::size_t>(i)] =
        xs[static_cast<std::size_t>(i - 1)] + xs[static_cast<std::size_t>(i)] * 2 + xs[static_cast<std::size_t>(i + 1)];
  want[0] = xs[len - 1];
  std::vector<Device> devices{Device::interpreter({ThreadOrder::Forward, 1, true}),
                              Device::interpreter({ThreadOrder::Reverse, 1, true})};
  if (Device::cpu_available()) devices.push_back(Device::cpu(2));
  for (const Device& d : devices) {
    std::vector<int> got(len, -1);
    kernel.launch(d, Grid{(len + 255) / 256, 256}, len, std::as_const(xs), got);
    EXPECT_EQ(got, want) << d.name();
  }
}

// A condition whose sides may wrap says nothing about exact values: `t * 64 + C < n + C` (C near
// INT_MAX) holds for the threads whose left side wraps to a negative number, far past n. So x[t * 64]
// stays checked, and those threads' reads are memcheck's finding, not an access nothing checks.
TEST(Codegen, AConditionWhoseSidesMayWrapProvesNothing) {
  const int big = std::numeric_limits<int>::max() - 999;
  KernelBuilder k("wrapping_condition");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const int>>("x", extent(n));
  auto out = k.param<GlobalPtr<int>>("out", extent(256));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 256, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) {
            b.group(thread(1), [&](Scope& th) { th.if_(t * 64 + big < n + big, [&](Scope&) { o[0] = x[t * 64]; }); });
          });
    });
  });
  Kernel kernel = k.build();
  std::string ir = kernel.lowered(Spec{});
  auto at = ir.find("= x[");
  ASSERT_NE(at, std::string::npos) << ir;
  EXPECT_NE(ir.substr(at, ir.find('\n', at) - at).find(" if < "), std::string::npos)
      << "x[t * 64] was taken as proven:\n"
      << ir;
  std::vector<int> xs(100, 5), got(256, 0);
  try {
    kernel.launch(Device::interpreter(), Grid{1, 256}, 100, std::as_const(xs), got);
    FAIL() << "the reads past x went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "memcheck") << e.what();
  }
}

// sgemm rung 6 copies A and B in 16-byte vectors where K and N are multiples of 4, element by element
// with checked, clamped reads otherwise; both give the reference's result.
TEST(Codegen, TheVectorizedSgemmCopiesRowsAsVectorsOnlyWhereTheyAreAligned) {
  Kernel k = examples::sgemm_vec();
  std::string aligned = specialize_for(k, Spec{}.with_size("N", 68).with_size("K", 36)).source;
  EXPECT_EQ(count(aligned, "*reinterpret_cast<float4*>(&As["), 1) << aligned;
  EXPECT_EQ(count(aligned, "*reinterpret_cast<float4*>(&Bs["), 1) << aligned;
  std::string odd = specialize_for(k, Spec{}.with_size("N", 65).with_size("K", 19)).source;
  EXPECT_EQ(count(odd, "float4"), 0) << odd;
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// A cp.async whose source or destination lowering cannot prove inside its memory is checked as it
// runs, as a load or store is: the copy that would leave its memory is reported at its line and
// not made. One proven inside is not checked.
TEST(Codegen, ACpAsyncThatCannotBeProvenInsideIsCheckedAsItRuns) {
  auto kernel = [](bool offset_param) {
    KernelBuilder k("copy_at");
    auto off = k.param<int>("off");
    auto x = k.param<GlobalPtr<const float>>("x", extent(Expr(4 * 64 + 64)));
    auto out = k.param<GlobalPtr<float>>("out", extent(Expr(64)));
    k.block_threads(64);
    k.grid_blocks(1);
    k.body([&](Scope& g) {
      lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
        auto s = b.shared<float>("s", 256);
        auto t = b.let("t", b.id(thread(1)));
        b.async(s, [&](Scope& b, View s_async) {
          b.partition(
              s_async, thread(1), [&](Expr i) { return t * 4 + i; },
              [&](Scope& b, View mine) {
                b.group(thread(1), [&](Scope& th) {
                  th.cp_async(mine, 0, x, offset_param ? t * 4 + off * 4 : t * 4, 16);
                  th.cp_async_commit();
                  th.cp_async_wait(0);
                });
              });
        });
        b.partition(
            out_b, thread(1), [&](Expr i) { return t + i; },
            [&](Scope& b, View o) { b.group(thread(1), [&](Scope&) { o[0] = s[((t + 1) % 64) * 4]; }); });
      });
    });
    return k.build();
  };
  Specialized unproven = specialize_for(kernel(true), Spec{});
  ASSERT_EQ(unproven.checks.size(), 1u) << unproven.source;
  EXPECT_EQ(unproven.checks[0].memory, "x");
  EXPECT_NE(unproven.source.find("+ 4 <= ("), std::string::npos) << unproven.source;
  EXPECT_NE(unproven.source.find("else asm volatile(\"cp.async.cg.shared.global"), std::string::npos)
      << unproven.source;
  Specialized proven = specialize_for(kernel(false), Spec{});
  EXPECT_TRUE(proven.checks.empty()) << proven.source;
  EXPECT_EQ(proven.source.find("vt_fail(vt_err"), std::string::npos) << proven.source;
  if (nvrtc_available()) {
    EXPECT_FALSE(compile(kernel(true), Spec{}).cubin.empty());
  }
  // The interpreter and the CPU backend check the copy themselves, and report it at its line.
  std::vector<float> x(320, 1.0f), out(64, 0.0f);
  std::vector<Device> devices{Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    EXPECT_THROW(kernel(true).launch(d, Grid{1, 64}, 20, std::as_const(x), out), ExecutionError) << d.name();
    kernel(true).launch(d, Grid{1, 64}, 16, std::as_const(x), out);
    EXPECT_EQ(out[0], 1.0f) << d.name();
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// A loop that copies 4 elements between memory and a thread's registers (a local array) becomes one
// 16-byte vector load or store where lowering proves the vector inside the buffer and aligned, as a
// copy between two memories does; the local array is declared aligned to the vector. Each thread
// loads 4 ints, reverses them in registers, and stores them back as a vector.
TEST(Codegen, VectorCopiesBetweenMemoryAndRegistersAreOneLoadOrStore) {
  KernelBuilder k("reverse4");
  auto x = k.param<GlobalPtr<const int>>("x", extent(Expr(4 * 128)));
  auto y = k.param<GlobalPtr<int>>("y", extent(Expr(4 * 128)));
  k.block_threads(128);
  k.grid_blocks(1);
  k.body([&](Scope& g) {
    lib::for_each_block(g, y, 4 * 128, [&](Scope& b, Expr, View y_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          y_b, thread(1), [&](Expr i) { return t * 4 + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope& th) {
              auto in = th.local_array("in", ScalarType::I32, 4, at(thread(1)));
              auto out = th.local_array("out", ScalarType::I32, 4, at(thread(1)));
              th.for_("v", 0, 4, [&](Scope&, Expr v) { in[v] = x[t * 4 + v]; });
              for (int v = 0; v < 4; ++v) out[v] = in[3 - v];
              th.for_("w", 0, 4, [&](Scope&, Expr w) { mine[w] = out[w]; });
            });
          });
    });
  });
  Kernel kernel = k.build();
  Specialized s = specialize_for(kernel, Spec{});
  EXPECT_NE(s.source.find("alignas(16) int in[4];"), std::string::npos) << s.source;
  EXPECT_NE(s.source.find("alignas(16) int out[4];"), std::string::npos) << s.source;
  EXPECT_NE(s.source.find("*reinterpret_cast<int4*>(&in[0]) = *reinterpret_cast<const int4*>(&x["), std::string::npos)
      << s.source;
  EXPECT_NE(s.source.find("= *reinterpret_cast<const int4*>(&out[0]);"), std::string::npos) << s.source;
  EXPECT_TRUE(s.checks.empty()) << s.source;
  if (nvrtc_available()) {
    EXPECT_FALSE(compile(kernel, Spec{}).cubin.empty());
  }
  std::vector<int> xs(512), want(512);
  for (int i = 0; i < 512; ++i) xs[static_cast<std::size_t>(i)] = i * 3 - 7;
  for (int i = 0; i < 512; ++i) want[static_cast<std::size_t>(i)] = xs[static_cast<std::size_t>(i / 4 * 4 + 3 - i % 4)];
  std::vector<Device> devices{Device::interpreter()};
  if (Device::cpu_available()) devices.push_back(Device::cpu(2));
  for (const Device& d : devices) {
    std::vector<int> ys(512, -1);
    kernel.launch(d, Grid{1, 128}, std::as_const(xs), ys);
    EXPECT_EQ(ys, want) << d.name();
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// Lowering drops a comparison `x >= 0` from a branch's condition where x, computed exactly, is proven
// at least 0 there (a library tile copy tests a halo's negative rows; a tile at a block's multiple
// pays nothing for it), and `x < y` where a bounds proof gives it, and keeps every comparison it
// cannot decide: one that may be false, one whose arithmetic may wrap, one on memory. Each branch
// takes the same threads on every device.
TEST(Codegen, AComparisonWithZeroIsDroppedOnlyWhereTheProofDecidesIt) {
  KernelBuilder k("decided");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const int>>("in", extent(Expr(256)));
  auto out = k.param<GlobalPtr<int>>("out", extent(256));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 256, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) {
            b.group(thread(1), [&](Scope& th) {
              auto acc = th.let("acc", 0);
              th.if_(t >= 0 && t < n, [&](Scope& th) { th.assign(acc, acc + 1); });  // dropped
              th.if_(t % 7 >= 0, [&](Scope& th) { th.assign(acc, acc + 2); });       // the whole if
              th.if_(t - 3 >= 0, [&](Scope& th) { th.assign(acc, acc + 4); });       // kept: t may be 0
              // kept: t << 24 wraps below 0 from t = 128
              th.if_(t * 16777216 >= 0, [&](Scope& th) { th.assign(acc, acc + 8); });
              th.if_(in[t] >= 0, [&](Scope& th) { th.assign(acc, acc + 16); });          // kept: memory
              th.if_(!(t >= 0 && t < n), [&](Scope& th) { th.assign(acc, acc + 32); });  // dropped inside !
              th.if_(t < 256 && 256 > t, [&](Scope& th) { th.assign(acc, acc + 64); });  // the whole if
              th.if_(t + 1 < 256, [&](Scope& th) { th.assign(acc, acc + 128); });        // kept: t may be 255
              o[0] = acc;
            });
          });
    });
  });
  Kernel kernel = k.build();
  const std::string lowered = kernel.lowered(Spec{});
  EXPECT_EQ(lowered.find("t >= 0"), std::string::npos) << lowered;
  EXPECT_EQ(lowered.find("(t % 7) >= 0"), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("(t - 3) >= 0"), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("(t * 16777216) >= 0"), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("] >= 0"), std::string::npos) << lowered;
  EXPECT_EQ(lowered.find("t < 256"), std::string::npos) << lowered;
  EXPECT_EQ(lowered.find("256 > t"), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("(t + 1) < 256"), std::string::npos) << lowered;
  std::vector<int> src(256);
  for (int t = 0; t < 256; ++t) src[static_cast<std::size_t>(t)] = t % 3 - 1;
  for (const Device& d : test_support::every_device()) {
    std::vector<int> got(256, -1);
    test_support::launch_on(kernel, d, Grid{1, 256}, 100, std::as_const(src), got);
    for (int t = 0; t < 256; ++t) {
      const int wraps = static_cast<int>(static_cast<std::uint32_t>(t) << 24);
      const int want = (t < 100 ? 1 : 32) + 2 + (t >= 3 ? 4 : 0) + (wraps >= 0 ? 8 : 0) +
                       (src[static_cast<std::size_t>(t)] >= 0 ? 16 : 0) + 64 + (t + 1 < 256 ? 128 : 0);
      EXPECT_EQ(got[static_cast<std::size_t>(t)], want) << "thread " << t << " on " << d.name();
    }
  }
}
}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
/// One block of 64 threads, each writing `rows` rows of 4 of a flat share of a 256-wide matrix, as a
/// GEMM's epilogue writes its tiles: thread t's element i is row i / 4, column t * 4 + i % 4.
/// `element(j, e, k)` is the element a thread writes for its row j's column e (k: a parameter, 4).
Kernel rows_of_four(const char* name, const std::function<Expr(Expr j, int e, Expr k)>& element) {
  KernelBuilder k(name);
  auto rows = k.param<int>("rows");
  auto four = k.param<int>("k");
  auto out = k.param<GlobalPtr<int>>("out", extent(rows * 256));
  k.block_threads(64);
  k.body([&](Scope& g) {
    g.partition(
        out, block(1), [](Expr i) { return i; },
        [&](Scope& g, View share) {
          g.group(block(1), [&](Scope& b) {
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                share, thread(1), [&](Expr i) { return i / 4 * 256 + t * 4 + i % 4; },
                [&](Scope& b, View mine) {
                  b.group(thread(1), [&](Scope& th) {
                    th.for_("j", 0, rows, [&](Scope&, Expr j) {
                      for (int e = 0; e < 4; ++e) mine[element(j, e, four)] = j * 10 + e;
                    });
                  });
                });
          });
        });
  });
  return k.build();
}

// An index composed over a flat share: row j's element e of a thread's rows of 4 is (j * 4 + e) / 4
// and (j * 4 + e) % 4 of the partition, which lowering makes j and e (the index is computed exactly,
// j is at least 0 and e in [0, 4)). Where that is not proven the division stays: e * k / 4, for a
// k of no known range, may be negative or reach the next row; and (j * 4 + 1) / 4 is not j for j below
// 0, where division truncates. The persistent wgmma GEMM computed two divisions for each element it stored, 28,000 SASS
// instructions in its epilogue.
TEST(Codegen, ADivisionOfAFlatIndexIsItsRowWhereTheRestIsProvenInsideOneRow) {
  const Kernel rows = rows_of_four("rows", [](Expr j, int e, Expr) { return j * 4 + e; });
  const std::string lowered = rows.lowered(Spec{});
  EXPECT_EQ(lowered.find(" / 4)"), std::string::npos) << lowered;
  EXPECT_EQ(lowered.find(" % 4)"), std::string::npos) << lowered;
  EXPECT_NE(lowered.find("out[(((i64(j) * 256l) + i64((t * 4))) + 2l)]"), std::string::npos) << lowered;
  const Kernel next = rows_of_four("next", [](Expr j, int e, Expr k) { return j * 4 + e * k / 4; });
  EXPECT_NE(next.lowered(Spec{}).find(" / 4)"), std::string::npos) << next.lowered(Spec{});
  for (const Device& d : test_support::every_device()) {
    for (int n : {1, 3}) {
      std::vector<int> got(static_cast<std::size_t>(n) * 256, -1), want(got.size(), -1);
      for (int t = 0; t < 64; ++t)
        for (int j = 0; j < n; ++j)
          for (int e = 0; e < 4; ++e) want[static_cast<std::size_t>(j * 256 + t * 4 + e)] = j * 10 + e;
      test_support::launch_on(rows, d, Grid{1, 64}, n, 4, got);
      EXPECT_EQ(got, want) << n << " rows on " << d.name();
      std::fill(got.begin(), got.end(), -1);
      test_support::launch_on(next, d, Grid{1, 64}, n, 4, got);
      EXPECT_EQ(got, want) << n << " rows, e * k / 4, on " << d.name();
    }
  }

  KernelBuilder k("truncates");
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 64, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View o) {
            b.group(thread(1), [&](Scope& th) {
              auto same = th.let("same", 0);
              th.for_("j", -3, 4, [&](Scope& th, Expr j) {
                th.if_((j * 4 + 1) / 4 == j, [&](Scope& th) { th.assign(same, same + 1); });
              });
              o[0] = same;
            });
          });
    });
  });
  const Kernel truncates = k.build();
  EXPECT_NE(truncates.lowered(Spec{}).find(" / 4)"), std::string::npos) << truncates.lowered(Spec{});
  for (const Device& d : test_support::every_device()) {
    std::vector<int> got(64, -1);
    test_support::launch_on(truncates, d, Grid{1, 64}, got);
    EXPECT_EQ(got, std::vector<int>(64, 4)) << "j = 0 to 3 only, on " << d.name();
  }
}

// Inside a branch its condition narrows the ranges of the positions it compares and of the lets
// computed from them: a warpgroup's `t / 128` is 0 in the first and 1 in the second, and the row of a
// consumer's element `t / 128 * 64 + t % 128 / 32 * 16` is a division less. The persistent GEMM's
// stores were proven only through them.
TEST(Codegen, ABranchsConditionNarrowsThePositionsItCompares) {
  KernelBuilder k("halves");
  auto in = k.param<GlobalPtr<const int>>("in", extent(2));
  auto out = k.param<GlobalPtr<int>>("out", extent(256));
  k.block_threads(256);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 256, [&](Scope& b, Expr, View out_b) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          out_b, thread(1), [&](Expr i) { return t / 128 * 128 + t % 128 + i; },
          [&](Scope& b, View o) {
            b.group(thread(1), [&](Scope& th) {
              th.if_(
                  t < 128, [&](Scope&) { o[0] = in[t / 128]; }, [&](Scope&) { o[0] = in[t / 128] + 10; });
            });
          });
    });
  });
  Kernel kernel = k.build();
  const std::string lowered = kernel.lowered(Spec{});
  EXPECT_EQ(lowered.find("t / 128"), std::string::npos) << lowered;
  EXPECT_EQ(lowered.find("t % 128"), std::string::npos) << lowered;
  const std::vector<int> src{5, 7};
  for (const Device& d : test_support::every_device()) {
    std::vector<int> got(256, -1);
    test_support::launch_on(kernel, d, Grid{1, 256}, src, got);
    for (int t = 0; t < 256; ++t) EXPECT_EQ(got[static_cast<std::size_t>(t)], t < 128 ? 5 : 17) << t;
  }
}
}  // namespace
}  // namespace vantage
