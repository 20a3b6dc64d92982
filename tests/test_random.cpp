// Random programs through the public builder API: each must either check or be rejected with
// diagnostics at the user's lines (never inside the library); nothing may crash, hang or throw
// anything else. Every program that checks is specialized, which must agree with what its
// obligations say, then emitted and compiled by NVRTC, which must accept it. Handles are reused
// across scopes on purpose (stale variables and views), perspectives include invalid ones, and calls
// mix arguments. VANTAGE_RANDOM_PROGRAMS overrides the number of programs (default 4000).
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>

#include "random_pick.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

class Gen : test_support::Picker {
 public:
  explicit Gen(std::uint64_t seed) : Picker(seed) {}

  /// Threads per block the kernel declares (0: none), and its specialized parameters.
  int declared_threads = 0;
  std::vector<std::string> specialized;

  Kernel build() {
    KernelBuilder k("random");
    int shape = pick(6);
    if (shape < 4) {
      declared_threads = std::vector<int>{32, 64, 128, 256}[static_cast<std::size_t>(shape)];
      k.block_threads(declared_threads);
    }
    if (shape == 4) k.block_threads(pick(2) ? 0 : 96);
    if (chance(10)) k.grid_multiple_of(pick(4) + 1);
    if (chance(15)) k.shared_budget(std::vector<int>{0, 256, 4096, 300000}[static_cast<std::size_t>(pick(4))]);
    int nparams = 1 + pick(4);
    for (int i = 0; i < nparams; ++i) {
      std::string name = "p" + std::to_string(i);
      switch (pick(5)) {
        case 0:
          values_.push_back(k.param<int>(name, specialize));
          specialized.push_back(name);
          break;
        case 1: values_.push_back(k.param<float>(name)); break;
        case 2: views_.push_back(k.param<GlobalPtr<float>>(name)); break;
        case 3: views_.push_back(k.param<GlobalPtr<const float>>(name)); break;
        default: views_.push_back(k.param<GlobalPtr<int>>(name, extent(values_.empty() ? Expr(8) : values_[0])));
      }
    }
    k.body([&](Scope& g) { stmts(g, 0); });
    if (chance(3)) k.body([](Scope&) {});
    return k.build();
  }

 private:
  Perspective persp() {
    static const std::int64_t kCounts[] = {1, 1, 1, 2, 3, 4, 32, 32, 64, 128, 0};
    Level lv = static_cast<Level>(pick(3));
    return {lv, kCounts[pick(11)]};
  }

  Expr value() {
    if (values_.empty() || chance(4)) {
      switch (pick(4)) {
        case 0: return Expr(pick(100));
        case 1: return Expr(1.5f);
        case 2: return Expr(pick(2) == 0);
        default: return Expr();  // undefined on purpose
      }
    }
    return values_[static_cast<std::size_t>(pick(static_cast<int>(values_.size())))];
  }

  Expr expr(Scope& s, int depth) {
    if (depth > 3) return value();
    switch (pick(9)) {
      case 0: return expr(s, depth + 1) + expr(s, depth + 1);
      case 1: return expr(s, depth + 1) * 3;
      case 2: return expr(s, depth + 1) < expr(s, depth + 1);
      case 3: return s.id(persp());
      case 4: return select(expr(s, depth + 1), expr(s, depth + 1), expr(s, depth + 1));
      case 5: return cast<int>(expr(s, depth + 1));
      case 6:
        if (!views_.empty()) return view()[expr(s, depth + 1)];
        return value();
      case 7:  // math of one operand, of two, and a predicate: each of any type the generator makes
        switch (pick(4)) {
          case 0: return sqrt(expr(s, depth + 1));
          case 1: return erf(expr(s, depth + 1));
          case 2: return atan2(expr(s, depth + 1), expr(s, depth + 1));
          default: return isnan(expr(s, depth + 1));
        }
      default: return value();
    }
  }

  View view() {
    if (views_.empty() || chance(20)) return View();
    return views_[static_cast<std::size_t>(pick(static_cast<int>(views_.size())))];
  }

  void remember(const Var& v) {
    values_.push_back(v);
    vars_.push_back(v);
  }

  void stmts(Scope& s, int depth) {
    int n = 1 + pick(depth == 0 ? 6 : 3);
    for (int i = 0; i < n; ++i) stmt(s, depth);
  }

  void nested(Scope& s, int depth) {
    if (depth < 4) stmts(s, depth + 1);
  }

  void stmt(Scope& s, int depth) {
    switch (pick(24)) {
      case 0: remember(s.let("v", expr(s, 0))); break;
      case 1: remember(s.let("w", expr(s, 0), at(persp()))); break;
      case 2:
        if (!vars_.empty()) s.assign(vars_[static_cast<std::size_t>(pick(static_cast<int>(vars_.size())))], expr(s, 0));
        break;
      case 3:
        s.if_(
            expr(s, 0), [&](Scope& t) { nested(t, depth); }, [&](Scope& e) { nested(e, depth); });
        break;
      case 4:
        s.for_("i", 0, expr(s, 0), [&](Scope& b, Expr i) {
          values_.push_back(i);
          nested(b, depth);
        });
        break;
      case 5: s.while_(expr(s, 0), [&](Scope& b) { nested(b, depth); }); break;
      case 6: s.group(persp(), [&](Scope& b) { nested(b, depth); }); break;
      case 7: {
        std::vector<SplitBranch> branches;
        int nb = 1 + pick(3);
        Level lv = static_cast<Level>(pick(3));
        for (int b = 0; b < nb; ++b)
          branches.emplace_back(std::vector<int>{1, 2, 32, 32, 64, 0}[static_cast<std::size_t>(pick(6))],
                                [&, depth](Scope& br) { nested(br, depth); });
        s.split(lv, std::move(branches));
        break;
      }
      case 8: s.destruct([&](Scope& b) { nested(b, depth); }); break;
      case 9:
        s.partition(
            view(), persp(), [&](Expr i) { return i + value(); },
            [&](Scope& b, View v) {
              views_.push_back(v);
              nested(b, depth);
            });
        break;
      case 10:
        s.partition(
            view(), persp(), [&](Expr r, Expr c) { return r * 4 + c; },
            [&](Scope& b, View v) {
              views_.push_back(v);
              nested(b, depth);
            });
        break;
      case 11:
        s.claim(view(), persp(), [&](Scope& b, View v) {
          views_.push_back(v);
          nested(b, depth);
        });
        break;
      case 12:
        s.lower(view(), [&](Scope& b, View v) {
          views_.push_back(v);
          nested(b, depth);
        });
        break;
      case 13:
        s.async(view(), [&](Scope& b, View v) {
          views_.push_back(v);
          nested(b, depth);
        });
        break;
      case 14: views_.push_back(s.shared<float>("s", chance(5) ? expr(s, 0) : Expr(pick(4096)))); break;
      case 15:
        views_.push_back(
            s.local_array("l", ScalarType::F32, pick(5), chance(2) ? std::optional<At>(at(persp())) : std::nullopt));
        break;
      case 16: view()[expr(s, 0)] = expr(s, 0); break;
      case 17: intrinsic(s); break;
      case 18: call(s); break;
      case 19: s.unsafe(persp(), "/* raw */", {{"a", expr(s, 0)}}); break;
      case 20:
        if (chance(4)) s.ret();
        break;
      case 21: remember(s.shfl_xor("x", expr(s, 0), pick(32))); break;
      case 22: remember(s.vote_any("any", expr(s, 0))); break;
      default: s.sync_threads(); break;
    }
  }

  void intrinsic(Scope& s) {
    switch (pick(12)) {
      case 0: s.sync_warp(); break;
      case 8: s.setmaxnreg(8 * pick(40), chance(2)); break;
      case 9: s.mbarrier_arrive_expect_tx(view(), expr(s, 0), pick(1 << 21)); break;
      case 10: s.mbarrier_init(view(), expr(s, 0), expr(s, 0)); break;
      case 1: s.named_barrier(pick(17), 32 * pick(5)); break;
      case 2: s.mma_sync(MmaKind::TF32_M16N8K8, view(), view(), view(), view()); break;
      case 3: s.wgmma(8 * pick(40), view(), view(), expr(s, 0), view(), expr(s, 0)); break;
      case 4: s.cp_async(view(), expr(s, 0), view(), expr(s, 0), 4 * pick(5)); break;
      case 5: s.tma_load(view(), expr(s, 0), TensorMap(), expr(s, 0), 0, view(), expr(s, 0)); break;
      case 6: remember(s.atomic("old", AtomicOp::Add, view(), expr(s, 0), expr(s, 0))); break;
      case 7: s.ldmatrix(pick(5), view(), view(), expr(s, 0)); break;
      default: s.mbarrier_wait(view(), expr(s, 0), expr(s, 0)); break;
    }
  }

  DeviceFunction function() {
    FunctionBuilder f("helper");
    f.requires_perspective(persp());
    if (chance(3)) f.shared_budget(pick(1024));
    auto out = f.param<GlobalPtr<float>>("out", chance(2) ? std::optional<At>(at(persp())) : std::nullopt);
    auto v = f.param<float>("v");
    f.body([&](Scope& s) {
      if (chance(2))
        s.partition(
            out, thread(1), [&](Expr i) { return i; }, [&](Scope&, View o) { o[0] = v; });
    });
    return f.build();
  }

  void call(Scope& s) {
    try {
      DeviceFunction fn = function();
      std::vector<CallArg> args;
      int n = pick(4);
      for (int i = 0; i < n; ++i) {
        if (pick(2))
          args.emplace_back(view());
        else
          args.emplace_back(ExprArg(expr(s, 0)));
      }
      s.call(fn, std::move(args));
    } catch (const CheckError&) {
      // the helper itself did not check: fine, that is a diagnostic too
    }
  }

  std::vector<Expr> values_;
  std::vector<Var> vars_;
  std::vector<View> views_;
};

/// Whether a diagnostic points into the library's own sources (it must point at the user's code).
bool in_library(const SourceLoc& loc) {
  if (!loc.known()) return false;
  static const std::string root = VANTAGE_SOURCE_DIR;
  std::string f = loc.file;
  for (const char* dir : {"/frontend/", "/jit/", "/cache/", "/support/", "/include/"})
    if (f.rfind(root + dir, 0) == 0) return true;
  return false;
}

void expect_user_locations(const std::vector<Diagnostic>& ds, int seed) {
  for (const auto& d : ds) {
    EXPECT_FALSE(in_library(d.loc)) << "seed " << seed << ": " << d.render(false);
    for (const auto& n : d.notes) EXPECT_FALSE(in_library(n.loc)) << "seed " << seed << ": note " << n.message;
  }
}

TEST(RandomPrograms, EachChecksOrYieldsDiagnostics) {
  int programs = 4000;
  if (const char* env = std::getenv("VANTAGE_RANDOM_PROGRAMS")) programs = std::max(1, std::atoi(env));
  int accepted = 0, rejected = 0, specialized = 0, compiled = 0;
  for (int seed = 0; seed < programs; ++seed) {
    Gen gen(static_cast<std::uint64_t>(seed) * 0x9e3779b97f4a7c15ULL + 1);
    Kernel k;
    try {
      k = gen.build();
    } catch (const CheckError& e) {
      ++rejected;
      ASSERT_FALSE(e.diagnostics().empty()) << "seed " << seed << ": CheckError without diagnostics";
      for (const auto& d : e.diagnostics()) {
        ASSERT_EQ(d.code.size(), 5u) << "seed " << seed << ": " << d.render(false);
        ASSERT_EQ(d.code[0], 'V');
        ASSERT_FALSE(d.message.empty());
      }
      expect_user_locations(e.diagnostics(), seed);
      EXPECT_NE(std::string(e.what()).find("error"), std::string::npos);
      continue;
    }
    ++accepted;
    EXPECT_FALSE(k.ir_text().empty());
    // Specialize at the declared shape (or 128 threads) with every specialized size set to 7: a
    // shape rule that does not hold must be reported with its code; one that holds must not be.
    std::int64_t t = gen.declared_threads ? gen.declared_threads : 128;
    Spec spec;
    if (!gen.declared_threads) spec.with_threads(t);
    for (const auto& name : gen.specialized) spec.with_size(name, 7);
    std::vector<std::string> broken;
    for (const auto& o : k.obligations()) {
      EXPECT_FALSE(o.code.empty());
      bool on_grid = o.lhs.blocks || o.rhs.blocks;
      if (!on_grid && !o.holds(t, 1)) broken.push_back(o.code);
    }
    std::optional<Specialized> s;
    try {
      s = specialize_for(k, spec);
      ++specialized;
      EXPECT_TRUE(broken.empty()) << "seed " << seed << ": " << broken[0] << " fails with T = " << t
                                  << " but specialization accepted\n"
                                  << k.ir_text();
    } catch (const CheckError& e) {
      for (const auto& code : broken) EXPECT_TRUE(e.has(code)) << "seed " << seed << ": " << code << " not reported";
      expect_user_locations(e.diagnostics(), seed);
    }
    if (!s || !nvrtc_available()) continue;
    try {
      Compiled c = compile(k, spec);
      EXPECT_FALSE(c.cubin.empty());
      ++compiled;
    } catch (const CompileError& e) {
      ADD_FAILURE() << "seed " << seed << ": NVRTC rejected a checked, specialized program:\n"
                    << e.what() << "\n"
                    << e.source();
    }
  }
  RecordProperty("accepted", accepted);
  RecordProperty("rejected", rejected);
  std::printf("random programs: %d accepted (%d specialized, %d compiled by NVRTC), %d rejected\n", accepted,
              specialized, compiled, rejected);
  EXPECT_GT(accepted, 0) << "the generator should also produce valid programs";
  EXPECT_GT(rejected, 0);
  if (nvrtc_available()) {
    EXPECT_GT(compiled, 0) << "some accepted programs must reach NVRTC";
  }
}

}  // namespace
}  // namespace vantage
