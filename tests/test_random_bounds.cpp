// Random programs for the bounds proofs. Lowering proves some accesses inside their memory and
// leaves them unchecked on the GPU and the CPU backend; the rest are checked as they run
// (docs/semantics.md). A wrong proof is an access outside the buffer that nothing reports. The
// generator here writes thread code whose indices are NOT masked: reads and stores of global,
// shared and thread-local memory at random index expressions, some clamped, some under conditions
// that keep them inside (or nearly: off by one, or no longer true after an assignment or a store),
// in loops, with variables assigned between a condition and the access it guards. Each program runs
// on the interpreter at several sizes, and a sample on the CPU backend. Allowed outcomes: a clean run,
// or a memcheck finding (the user's access outside, caught). The interpreter checks every access,
// proven or not, and reports a proven one outside as an InternalError; that, any other finding, or
// the CPU backend disagreeing (a clean run against a finding, or different results) fails the test.
// VANTAGE_BOUNDS_RUNS overrides the number of programs (default 300), VANTAGE_BOUNDS_FIRST the first
// seed; VANTAGE_BOUNDS_VERBOSE prints each program.
#include <gtest/gtest.h>

#include <cstdlib>
#include <random>
#include <utility>

#include "host_cuda.hpp"
#include "random_pick.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

constexpr int kW = 48;    // elements of `w` (no extent: its bound is the buffer's length)
constexpr int kAcc = 16;  // elements of `acc` (a constant extent)
constexpr int kVec = 8;   // elements of `sv` each thread owns

class BoundsGen : test_support::Picker {
 public:
  /// `shaped_copies`: the copy loops' rounds now and then take other shapes than `k` (below). Off,
  /// the generator draws exactly what it drew before the option existed, so every seed still names
  /// the program it named then.
  /// `wrapping`: guarded accesses and rows whose index is the condition's value through arithmetic
  /// that may wrap at its type (a let of `v - 3u`, a widening cast of it).
  /// `clamps`: reads of `in` clamped or wrapped into [0, n) in many shapes (right, and one past),
  /// half the programs requiring n >= 1; they run at n = 1 and n = 0 as well.
  explicit BoundsGen(std::uint64_t seed, bool shaped_copies = false, bool variable_rows = false, bool wrapping = false,
                     bool clamps = false)
      : Picker(seed),
        shaped_copies_(shaped_copies),
        variable_rows_(variable_rows),
        wrapping_(wrapping),
        clamps_(clamps) {}

  ScalarType type = ScalarType::I32;  ///< every integer of the program (i32 or u32)
  int threads = 32, blocks = 1, shared_len = 64, local_len = 8, rows = 4, cols = 8;
  bool specialized = false;

  Kernel build() {
    type = chance(2) || wrapping_ ? ScalarType::U32 : ScalarType::I32;  // (only u32 wraps near 0)
    threads = chance(2) ? 32 : 64;
    blocks = 1 + pick(2);
    shared_len = threads * (1 + pick(2));
    local_len = 4 << pick(2);
    rows = 2 + pick(4);
    cols = 4 << pick(2);
    specialized = chance(2);
    KernelBuilder k("random_bounds");
    n_ = k.scalar_param("n", type, specialized);
    m_ = k.scalar_param("m", type);
    in_ = k.pointer_param("in", type, MemSpace::Global, true, extent(n_));
    w_ = k.pointer_param("w", type, MemSpace::Global, false);
    grid2_ = k.pointer_param("grid2", type, MemSpace::Global, true, extent(lit(rows * cols)));
    gv_ = k.pointer_param("gv", type, MemSpace::Global, true, extent(n_ * m_));
    acc_ = k.pointer_param("acc", type, MemSpace::Global, false, extent(lit(kAcc)));
    auto out = k.pointer_param("out", type, MemSpace::Global, false);
    if (chance(4)) k.require(n_ >= lit(8) && m_ <= lit(40));
    if (clamps_ && chance(2)) k.require(n_ >= lit(1));
    k.block_threads(threads);
    k.body([&](Scope& g) {
      auto blk = g.let("blk", g.id(block(1)));
      const int T = threads;
      g.partition(
          out, block(1), [&](Expr i) { return blk * T + i; },
          [&](Scope& g, View out_b) {
            g.group(block(1), [&](Scope& b) {
              shared_ = b.shared("s", type, shared_len);
              auto t = b.let("t", b.id(thread(1)));
              const int per = shared_len / T;
              b.partition(
                  shared_, thread(1), [&](Expr i) { return t * per + i; },
                  [&](Scope& b, View s_t) {
                    b.group(thread(1), [&](Scope& th) {
                      th.for_("i", 0, per, [&](Scope&, Expr i) { s_t[i] = as_p(t * per + i) * lit(3); });
                    });
                  });
              // Each thread's own kVec elements of `sv`: the destination of copy loops (vector copies).
              auto sv = b.shared("sv", type, T * kVec);
              b.partition(
                  sv, thread(1), [&](Expr i) { return t * kVec + i; },
                  [&](Scope& b, View sv_t) {
                    b.partition(
                        out_b, thread(1), [&](Expr i) { return t + i; },
                        [&](Scope& b, View o_t) {
                          b.group(thread(1), [&](Scope& th) {
                            vec_ = sv_t;
                            th.for_("i", lit(0), lit(kVec), [&](Scope&, Expr i) { vec_[i] = lit(0); });
                            local_ = th.local_array("l", type, local_len);
                            th.for_("i", 0, local_len, [&](Scope&, Expr i) { local_[i] = as_p(i); });
                            sum_ = th.let("sum", lit(0));
                            stable_ = {as_p(t), as_p(blk), n_, m_};
                            changing_ = {th.let("v", as_p(t) + lit(pick(5))), th.let("u", n_ - lit(1 + pick(3)))};
                            stmts(th, 0);
                            o_t[0] = sum_;
                          });
                        });
                  });
            });
          });
    });
    return k.build();
  }

 private:
  /// A constant of the program's type.
  Expr lit(int v) const { return type == ScalarType::U32 ? Expr(static_cast<unsigned>(v)) : Expr(v); }
  Expr as_p(const Expr& e) const { return type == ScalarType::I32 ? e : cast(type, e); }

  // ---------------------------------------------------------------- expressions
  Expr atom() {
    switch (pick(6)) {
      case 0: return lit(pick(12));
      case 1:
      case 2: return any(changing_);
      default: return any(stable_);
    }
  }
  /// An index-like value: sums, scales, clamps, divisions and reads, none of them masked.
  Expr value(int depth) {
    if (depth > 2) return atom();
    switch (pick(13)) {
      case 0: return value(depth + 1) + value(depth + 1);
      case 1: return value(depth + 1) - value(depth + 1);
      case 2: return value(depth + 1) * lit(1 + pick(4));
      case 3: return value(depth + 1) / lit(1 + pick(8));
      case 4: return value(depth + 1) % lit(1 + pick(16));
      case 5: return min(value(depth + 1), value(depth + 1));
      case 6: return max(value(depth + 1), value(depth + 1));
      case 7: return value(depth + 1) >> lit(1 + pick(3));
      case 8: return select(value(depth + 1) < value(depth + 1), value(depth + 1), value(depth + 1));
      case 9: return read(depth + 1);
      default: return atom();
    }
  }
  /// One of the memories, with the bound its accesses must stay below.
  struct Mem {
    View view;
    Expr bound;
    bool writable = false;
  };
  Mem memory(bool write) {
    if (write) return {local_, lit(local_len), true};
    switch (pick(5)) {
      case 0: return {in_, n_};
      case 1: return {w_, lit(kW)};
      case 2: return {shared_, lit(shared_len)};
      case 3: return {grid2_, lit(rows * cols)};
      default: return {local_, lit(local_len), true};
    }
  }
  /// A read in one of the forms the proofs meet: raw, clamped into the bound, or off by a constant.
  Expr read(int depth) {
    if (clamps_ && chance(2)) return clamped(value(depth + 1));
    Mem mem = memory(false);
    Expr i = value(depth + 1);
    switch (pick(4)) {
      case 0: return mem.view[i];
      case 1: return mem.view[min(max(i, lit(0)), mem.bound - lit(1))];
      case 2: return mem.view[min(i, mem.bound - lit(1 + pick(2)) + lit(pick(2)))];
      default: return mem.view[i % mem.bound];  // negative for a negative i32
    }
  }

  /// (clamps) A read of `in` (extent n) at i clamped or wrapped into [0, n), or nearly (one past, no
  /// floor, a dividend that may be negative): proven from the min, max and % themselves where n >= 1
  /// is required, checked otherwise.
  Expr clamped(const Expr& i) {
    const Expr zero = lit(0), one = lit(1);
    switch (pick(9)) {
      case 0: return in_[min(max(i, zero), n_ - one)];
      case 1: return in_[max(min(i, n_ - one), zero)];
      case 2: return in_[max(i, zero) % n_];
      case 3: return in_[i % n_];
      case 4: return in_[min(i, n_ - one)];
      case 5: return in_[min(max(i, zero), n_)];
      case 6: return in_[max(min(i, n_), zero)];
      case 7: return in_[min(max(i, one), n_) - one];
      default: return in_[(max(i, zero) + lit(pick(4))) % n_];
    }
  }

  // ---------------------------------------------------------------- statements
  void stmts(Scope& th, int depth) {
    int count = 1 + pick(depth == 0 ? 5 : 3);
    for (int i = 0; i < count; ++i) stmt(th, depth);
  }
  void stmt(Scope& th, int depth) {
    if (variable_rows_ && chance(3)) {
      row_access(th);
      return;
    }
    switch (pick(depth < 3 ? 11 : 5)) {
      case 0: th.assign(sum_, sum_ + read(1)); break;
      case 1: th.assign(any(changing_), value(1)); break;
      case 2: {
        Mem mem = memory(true);
        mem.view[value(1)] = value(1);
        break;
      }
      case 3: stable_.push_back(th.let("x", value(1))); break;
      case 4: th.atomic(AtomicOp::Add, acc_, value(1), lit(1)); break;
      case 5: guarded(th, depth); break;
      case 6: guarded(th, depth); break;
      case 7:
        if (chance(2))
          two_facts(th);
        else
          copy(th);
        break;
      case 8: {
        // A counted loop up to a memory's bound (the outermost loops) or a few rounds, its counter
        // indexing. Trip counts stay small: the interpreter runs every thread.
        Mem mem = memory(chance(3));
        Expr begin = chance(2) ? lit(0) : value(2) % lit(8);
        Expr end = depth == 0 && chance(2) ? mem.bound - lit(pick(3)) : begin + value(2) % lit(6);
        const int off = pick(3);
        auto saved = stable_;
        th.for_("j", begin, end, [&](Scope& th, Expr j) {
          stable_.push_back(j);
          if (mem.writable && chance(2))
            mem.view[j + lit(off)] = j;
          else
            th.assign(sum_, sum_ + mem.view[j + lit(off)]);
          if (chance(3)) jump(th, j);
          if (chance(2)) stmts(th, depth + 1);
        });
        stable_ = saved;
        break;
      }
      case 9: {
        auto c = th.let("c", lit(0));
        const int rounds = 1 + pick(3);
        auto saved = stable_;
        th.while_(c < lit(rounds), [&](Scope& th) {
          stmts(th, depth + 1);
          th.assign(c, c + lit(1));
        });
        stable_ = saved;
        break;
      }
      default: {
        auto saved = stable_;
        th.if_(value(1) < value(1), [&](Scope& th) { stmts(th, depth + 1); });
        stable_ = saved;
        break;
      }
    }
  }
  /// An access under a condition on its index: right (`i < bound`, with `i >= 0` where needed),
  /// off by one, or made stale by what runs between the condition and the access (the variable the
  /// condition reads assigned, a let of it taken before, the element it reads stored to).
  void guarded(Scope& th, int depth) {
    Mem mem = memory(chance(3));
    Var moved = any(changing_);
    Expr i, cond_on;
    int shape = pick(wrapping_ ? 8 : 4);
    if (shape == 0) {
      i = cond_on = moved;
    } else if (shape == 1) {
      i = th.let("before", moved);  // the variable's value now; the condition reads it later
      if (chance(2)) th.assign(moved, moved - lit(1 + pick(3)));
      cond_on = moved;
    } else if (shape == 2) {
      i = cond_on = local_[lit(pick(local_len))];
    } else if (shape == 3) {
      i = cond_on = value(2);
    } else {
      // (wrapping) The condition on v, the index v - k: below k, a u32 difference wraps to near 2^32.
      // v mostly of values nothing assigns (t, n, a counter), which the proofs may put in.
      cond_on = chance(4) ? Expr(moved) : any(stable_) + lit(pick(3));
      i = th.let("d", cond_on - lit(1 + pick(6)));
    }
    // off -1: one below the buffer where the index is at its least (lowering must not prove it).
    const int slack = chance(2) ? 0 : pick(3), off = chance(6) ? -1 : pick(3);
    Expr cond = cond_on + lit(slack) < mem.bound;
    if (chance(3)) cond = cond_on >= lit(0) && cond;
    auto saved = stable_;
    th.if_(cond, [&](Scope& th) {
      // What runs between the condition and the access may change what i reads.
      if (chance(2)) th.assign(moved, moved + lit(1 + pick(3)));
      if (shape == 2 && chance(2)) local_[lit(pick(local_len))] = value(2);
      if (chance(4)) stmt(th, depth + 1);
      Expr at = shape >= 4 && shape % 2 ? cast(ScalarType::I64, i + lit(off)) : i + lit(off);
      if (mem.writable && chance(2))
        mem.view[at] = i;
      else
        th.assign(sum_, sum_ + mem.view[at]);
      if (chance(3)) stmts(th, depth + 1);
    });
    stable_ = saved;
  }
  /// A row and a column under two conditions, read from the rows x cols matrix `grid2`: the proof
  /// that scales the first condition by the row length.
  void two_facts(Scope& th) {
    Expr r = value(2), c = value(2);
    const int width = 1 + pick(4), k = pick(width + 1);
    th.if_(r >= lit(0) && c >= lit(0) && r < lit(rows) && c + lit(width) <= lit(cols),
           [&](Scope& th) { th.assign(sum_, sum_ + grid2_[r * lit(cols) + c + lit(k)]); });
  }
  /// A copy loop of 2 or 4 elements into the thread's part of `sv`, from a memory at a multiple of
  /// the count, under a condition that keeps the whole run inside (or misses by one): lowering
  /// makes it one vector copy only where it proves both runs inside.
  void copy(Scope& th) {
    const int count = chance(2) ? 2 : 4;
    Mem src = memory(false);
    if (src.view.name() == "l" || src.view.name() == "w") src = {in_, n_};  // vector copies need an extent
    Expr base = (chance(4) ? value(2) : value(2) & lit(15)) * lit(count);
    const int to = pick(kVec / count) * count, miss = chance(4) ? 1 : 0;
    Expr cond = base + lit(count - miss) <= src.bound;
    if (chance(2)) cond = base >= lit(0) && cond;
    th.if_(cond, [&](Scope& th) {
      th.for_("k", lit(0), lit(count), [&](Scope&, Expr k) {
        Expr into = round(k, count, to, true);
        vec_[lit(to) + into] = src.view[base + round(k, count, to, false)];
      });
      th.assign(sum_, sum_ + vec_[lit(to + pick(count))]);
    });
  }
  /// The element round k of a copy loop reads (`into`: stores, within the run, so in the thread's
  /// own part of `sv`): k, the one vector copy's shape, or (with `shaped_copies`, half the time) a
  /// shape that is no vector copy although some of it looks like one: pairs swapped, reversed, a
  /// stride, aligned ends with k once but not contiguous, a term that reads what round 0 stored.
  Expr round(const Expr& k, int count, int to, bool into) {
    if (!shaped_copies_ || chance(2)) return k;
    switch (pick(into ? 2 : 5)) {
      case 0: return k ^ lit(1);
      case 1: return lit(count - 1) - k;
      case 2: return k * lit(2);
      case 3: return (k / lit(2)) * lit(count) + k;
      default: return k + (vec_[lit(to)] & lit(1)) * lit(count);
    }
  }
  /// (With `variable_rows`.) A read of the n x m row-major matrix `gv` (extent n * m, the row
  /// length m a parameter) at row r and column c, under conditions that keep it inside (lowering
  /// proves `r * m + c < n * m` from `r < n` times m and `c < m`) or nearly: a row or a column too
  /// many, a side that may be negative, the next row.
  void row_access(Scope& th) {
    // Kept below a few rows and columns past the matrix (and, for i32, as far below 0), so that
    // r * m fits 64 bits for a u32 m: a product of two unknown u32 values may not (V1006).
    Expr r = value(2) % lit(40 + pick(100)), c = value(2) % lit(40 + pick(20));
    const Expr zero = lit(0);
    Expr cond;
    switch (pick(7)) {
      case 0:
      case 1: cond = r >= zero && c >= zero && r < n_ && c < m_; break;
      case 2: cond = r >= zero && c >= zero && r <= n_ && c < m_; break;
      case 3: cond = r >= zero && c >= zero && r < n_ && c <= m_; break;
      case 4: cond = c >= zero && r < n_ && c < m_; break;
      case 5: cond = r >= zero && r < n_ && c < m_; break;
      default: cond = r >= zero && c >= zero && r + lit(1) < n_ && c < m_; break;
    }
    Expr index;
    switch (pick(wrapping_ ? 6 : 4)) {
      case 0: index = r * m_ + c; break;
      case 1: index = m_ * r + c; break;
      case 2: index = c + r * m_; break;
      case 3: index = (r + lit(1)) * m_ + c; break;
      // (wrapping) In 64 bits from arithmetic at the program's type: wraps where c < k (u32).
      case 4: index = cast(ScalarType::I64, r * m_ + (c - lit(1 + pick(2)))); break;
      default: index = cast(ScalarType::I64, r * m_ + c); break;
    }
    th.if_(cond, [&](Scope& th) { th.assign(sum_, sum_ + gv_[index]); });
  }
  void jump(Scope& th, const Expr& j) {
    bool brk = chance(2);
    th.if_(j % lit(3) == lit(1), [&](Scope& th) { brk ? th.break_() : th.continue_(); });
  }

  bool shaped_copies_ = false, variable_rows_ = false, wrapping_ = false, clamps_ = false;
  Expr n_, m_;
  View in_, w_, grid2_, gv_, acc_, shared_, local_, vec_;
  Var sum_;
  std::vector<Expr> stable_;
  std::vector<Var> changing_;
};

/// One launch's outcome: a clean run with its outputs, or the kind of finding that stopped it.
struct Outcome {
  std::string finding;  ///< empty: ran clean; "memcheck", ...; "internal: ..." for a Vantage bug
  std::string message;
  std::vector<std::int32_t> out, acc;
  bool refused = false;  ///< the launch's requirement or specialization refused these sizes
};

/// The read-only inputs of a launch: `in` (`len` elements), `w`, `grid2` and `gv` (`cells`).
struct Inputs {
  std::vector<std::int32_t> in, w, grid2, gv;
  Inputs(const BoundsGen& gen, int len, int cells)
      : in(static_cast<std::size_t>(len)),
        w(kW),
        grid2(static_cast<std::size_t>(gen.rows * gen.cols)),
        gv(static_cast<std::size_t>(cells)) {
    for (std::size_t i = 0; i < gv.size(); ++i) gv[i] = static_cast<std::int32_t>(i % 7 + 1);
    for (int i = 0; i < len; ++i)
      in[static_cast<std::size_t>(i)] = (i * 7 + 3) % 19 - (gen.type == ScalarType::I32 ? 5 : 0);
    for (int i = 0; i < kW; ++i) w[static_cast<std::size_t>(i)] = (i * 5 + 1) % 13;
    for (std::size_t i = 0; i < grid2.size(); ++i) grid2[i] = static_cast<std::int32_t>(i % 11);
  }
};

Outcome launch(const Kernel& k, const BoundsGen& gen, const Device& d, int n, int m) {
  Outcome o;
  // The buffer is longer than the extent: memcheck holds to the extent.
  Inputs inputs(gen, n + 8, n * m + 8);
  auto& [in, w, grid2, gv] = inputs;
  o.out.assign(static_cast<std::size_t>(gen.blocks * gen.threads), -1);
  o.acc.assign(kAcc, 0);
  const Grid grid{gen.blocks, gen.threads};
  try {
    if (gen.type == ScalarType::U32) {
      auto u = [](const std::vector<std::int32_t>& v) { return std::vector<std::uint32_t>(v.begin(), v.end()); };
      auto uin = u(in), uw = u(w), ug = u(grid2), ugv = u(gv), uout = u(o.out), uacc = u(o.acc);
      k.launch(d, grid, static_cast<unsigned>(n), static_cast<unsigned>(m), std::as_const(uin), uw, std::as_const(ug),
               std::as_const(ugv), uacc, uout);
      o.out.assign(uout.begin(), uout.end());
      o.acc.assign(uacc.begin(), uacc.end());
    } else {
      k.launch(d, grid, n, m, std::as_const(in), w, std::as_const(grid2), std::as_const(gv), o.acc, o.out);
    }
  } catch (const LaunchError& e) {
    o.refused = true;
    o.message = e.what();
  } catch (const CheckError& e) {
    o.refused = true;
    o.message = e.what();
  } catch (const ExecutionError& e) {
    o.finding = e.check();
    o.message = e.what();
  } catch (const std::exception& e) {
    o.finding = "internal";
    o.message = e.what();
  }
  return o;
}

/// A launch of a program's generated CUDA on host threads, and what the interpreter made of it.
struct HostCase {
  std::string where;
  test_support::HostLaunch launch;
  Outcome interpreter;
};

struct Tally {
  int ran = 0, rejected = 0, clean = 0, caught = 0, on_cpu = 0, refused = 0, nvrtc = 0;
  std::vector<HostCase> host;
};

/// The launch of the generated CUDA at these sizes on host threads: every buffer at exactly its
/// length (`in` at its extent), so that an unchecked access outside stops the sanitizers.
test_support::HostLaunch host_launch(const Specialized& s, const BoundsGen& gen, int n, int m) {
  test_support::HostLaunch l;
  l.source = s.source;
  l.entry = s.entry;
  l.blocks = gen.blocks;
  l.threads = gen.threads;
  const std::string type = gen.type == ScalarType::U32 ? "unsigned" : "int";
  auto scalar = [&](double v) { return test_support::HostArg::of(type, v); };
  auto buffer = [&](const std::vector<std::int32_t>& v) { return test_support::HostArg::of(type, v); };
  Inputs inputs(gen, n, n * m);
  l.args = {scalar(n),
            scalar(m),
            buffer(inputs.in),
            buffer(inputs.w),
            buffer(inputs.grid2),
            buffer(inputs.gv),
            buffer(std::vector<std::int32_t>(kAcc, 0)),
            buffer(std::vector<std::int32_t>(static_cast<std::size_t>(gen.blocks * gen.threads), -1))};
  return l;
}

/// The lowered kernel at these sizes, for a failure's message.
std::string lowered(const Kernel& k, const BoundsGen& gen, int n) {
  try {
    return k.lowered(gen.specialized ? Spec{}.with_size("n", n) : Spec{});
  } catch (const std::exception& e) {
    return std::string("(not lowered: ") + e.what() + ")";
  }
}

void run_seed(int seed, Tally& t, bool shaped_copies = false, bool variable_rows = false, bool wrapping = false,
              bool clamps = false) {
  BoundsGen gen(static_cast<std::uint64_t>(seed) * 0x9e3779b97f4a7c15ULL + 11, shaped_copies, variable_rows, wrapping,
                clamps);
  Kernel k;
  try {
    k = gen.build();
  } catch (const CheckError& e) {
    ++t.rejected;
    if (std::getenv("VANTAGE_BOUNDS_VERBOSE")) std::printf("seed %d rejected:\n%s\n", seed, e.what());
    return;
  }
  ++t.ran;
  const int T = gen.threads * gen.blocks;
  if (std::getenv("VANTAGE_BOUNDS_VERBOSE")) std::printf("seed %d:\n%s\n", seed, lowered(k, gen, T - 3).c_str());
  std::vector<std::pair<int, int>> sizes{{T - 3, 5}, {T + 9, 17}, {9, 40}};
  if (clamps) sizes = {{T - 3, 5}, {1, 3}, {0, 2}};
  // Generated CUDA for a sample: NVRTC compiles it, and it runs on host threads (below).
  const bool sampled = seed % 10 == 0;
  if (nvrtc_available() && sampled) {
    try {
      Compiled c = compile(k, gen.specialized ? Spec{}.with_size("n", T - 3) : Spec{});
      ++t.nvrtc;
      // A warning about the program itself ("set but never used") is the user's to read.
      EXPECT_FALSE(c.cubin.empty()) << "seed " << seed;
      EXPECT_EQ(c.log.find("error"), std::string::npos) << "seed " << seed << ": " << c.log << "\n" << c.spec.source;
    } catch (const std::exception& e) {
      ADD_FAILURE() << "seed " << seed << ", NVRTC: " << e.what();
    }
  }
  for (auto [n, m] : sizes) {
    Outcome a = launch(k, gen, Device::interpreter({ThreadOrder::Forward, 1, true}), n, m);
    if (a.refused) {
      ++t.refused;
      continue;
    }
    const std::string where = "seed " + std::to_string(seed) + ", n = " + std::to_string(n) +
                              ", m = " + std::to_string(m) + (gen.specialized ? " (n specialized)" : "");
    if (!a.finding.empty() && a.finding != "memcheck") {
      ADD_FAILURE() << where << ": the interpreter: " << a.message << "\n" << lowered(k, gen, n);
      continue;
    }
    (a.finding.empty() ? t.clean : t.caught)++;
    if (sampled) {
      Specialized s = specialize_for(k, gen.specialized ? Spec{}.with_size("n", n) : Spec{});
      if (test_support::runs_on_host(s.source)) t.host.push_back({where, host_launch(s, gen, n, m), a});
    }
    // The CPU backend on a sample (each program is an LLVM compile): the same outcome, the same
    // results when clean.
    if (Device::cpu_available() && seed % 4 == 0) {
      Outcome c = launch(k, gen, Device::cpu(1), n, m);
      ++t.on_cpu;
      EXPECT_FALSE(c.refused) << where << ": " << c.message;
      EXPECT_EQ(c.finding, a.finding) << where << ": the CPU backend: " << c.message << "\ninterpreter: " << a.message
                                      << "\n"
                                      << lowered(k, gen, n);
      if (a.finding.empty() && c.finding.empty()) {
        EXPECT_EQ(c.out, a.out) << where << ": the CPU backend's results differ\n" << lowered(k, gen, n);
        EXPECT_EQ(c.acc, a.acc) << where << ": the CPU backend's atomics differ\n" << lowered(k, gen, n);
      }
    }
  }
}

/// The sample's generated CUDA on host threads, in one program: the interpreter's outcome (a clean
/// run with its results, or a check that failed; the GPU code skips the access and records it).
/// Returns the number of launches.
int run_host(const Tally& t) {
  int on_host = 0;
  if (!t.host.empty()) {
    std::vector<test_support::HostLaunch> launches;
    for (const auto& c : t.host) launches.push_back(c.launch);
    test_support::HostLaunches run = test_support::run_launches_on_host(launches);
    EXPECT_TRUE(run.ok) << run.problem;
    for (std::size_t i = 0; i < run.results.size(); ++i) {
      const HostCase& c = t.host[i];
      const test_support::HostLaunchResult& r = run.results[i];
      ++on_host;
      EXPECT_EQ(r.check_failed, !c.interpreter.finding.empty())
          << c.where << ": generated CUDA on host threads " << (r.check_failed ? "failed a check" : "ran clean")
          << "; the interpreter: " << (c.interpreter.message.empty() ? "clean" : c.interpreter.message);
      if (r.check_failed || !c.interpreter.finding.empty() || r.buffers.size() != 6) continue;
      // Both as 32-bit words (a u32 program's host run prints unsigned values).
      auto words = [](const std::vector<long long>& v) {
        std::vector<std::int32_t> w;
        for (long long x : v) w.push_back(static_cast<std::int32_t>(static_cast<std::uint32_t>(x)));
        return w;
      };
      EXPECT_EQ(words(r.buffers[4]), c.interpreter.acc)
          << c.where << ": generated CUDA's atomics differ from the interpreter's";
      EXPECT_EQ(words(r.buffers[5]), c.interpreter.out)
          << c.where << ": generated CUDA's results differ from the interpreter's";
    }
  }
  return on_host;
}

TEST(RandomBounds, NoAcceptedAccessLeavesItsMemoryUnchecked) {
#ifdef VANTAGE_TEST_SANITIZED
  int programs = 100, first = 0;  // under a sanitizer a third, for memory safety; the plain pass runs 300
#else
  int programs = 300, first = 0;
#endif
  if (const char* env = std::getenv("VANTAGE_BOUNDS_RUNS")) programs = std::max(1, std::atoi(env));
  if (const char* env = std::getenv("VANTAGE_BOUNDS_FIRST")) first = std::max(0, std::atoi(env));
  Tally t;
  for (int seed = first; seed < first + programs; ++seed) run_seed(seed, t);
  const int on_host = run_host(t);
  std::printf(
      "random bounds: %d programs (%d rejected), launches: %d clean, %d stopped by memcheck, %d refused; "
      "%d on the CPU backend, %d compiled by NVRTC, %d launches of generated CUDA on host threads\n",
      t.ran, t.rejected, t.clean, t.caught, t.refused, t.on_cpu, t.nvrtc, on_host);
  // The generator aims at accepted programs, and at both outcomes.
  EXPECT_GE(t.ran, programs * 9 / 10) << t.rejected << " of " << programs << " rejected";
  EXPECT_GE(t.clean, programs / 4);
  EXPECT_GE(t.caught, programs / 4);
}

/// 100 programs (seeds from 0) of one of the generator's modes; PREFIX_RUNS and PREFIX_FIRST set
/// the number and the first seed.
void run_mode(const char* what, const std::string& prefix, bool shaped_copies, bool variable_rows,
              bool wrapping = false, bool clamps = false) {
  int programs = 100, first = 0;
  if (const char* env = std::getenv((prefix + "_RUNS").c_str())) programs = std::max(1, std::atoi(env));
  if (const char* env = std::getenv((prefix + "_FIRST").c_str())) first = std::max(0, std::atoi(env));
  Tally t;
  for (int seed = first; seed < first + programs; ++seed)
    run_seed(seed, t, shaped_copies, variable_rows, wrapping, clamps);
  const int on_host = run_host(t);
  std::printf(
      "random %s: %d programs (%d rejected), launches: %d clean, %d stopped by memcheck; %d on the CPU backend, %d "
      "launches of generated CUDA on host threads\n",
      what, t.ran, t.rejected, t.clean, t.caught, t.on_cpu, on_host);
  EXPECT_GE(t.ran, programs * 9 / 10) << t.rejected << " of " << programs << " rejected";
}

// The same generator with copy loops whose rounds take other shapes than k now and then (`k ^ 1`,
// `count - 1 - k`, `2 * k`, `(k / 2) * count + k`, `k + (sv[to] & 1) * count`): lowering must make
// a vector copy of none of them but the ones that are the same as k, and the interpreter runs every
// vector copy as its loop and reports one that copies other elements as a Vantage bug.
// VANTAGE_COPIES_RUNS and VANTAGE_COPIES_FIRST set the seeds (default 0 to 99).
TEST(RandomBounds, CopyLoopsOfOtherShapesAreCopiedAsWritten) { run_mode("copies", "VANTAGE_COPIES", true, false); }

// The same generator with reads of a row-major matrix whose row length is a parameter, `gv[r * m +
// c]` in n * m, under conditions that keep them inside (lowering proves those from `r < n` times m
// and `c < m`) or nearly (a row or a column too many, a side that may be negative). A wrong proof is
// an access outside that the interpreter reports as a Vantage bug. VANTAGE_ROWS_RUNS and
// VANTAGE_ROWS_FIRST set the seeds (default 0 to 99).
TEST(RandomBounds, RowsOfAVariableLengthAreReadInsideOrCaught) { run_mode("rows", "VANTAGE_ROWS", false, true); }

// The same generator (with rows) where guarded accesses and rows take their index through
// arithmetic that may wrap at the program's type: `if (v + s < bound) x[w + off]` with `let w = v -
// k`, or `x[i64(w + off)]`, and `gv[i64(r * m + (c - k))]`. For u32 below k these are near 2^32,
// not v - k: the proofs take a let's value, or look through a cast, only where it cannot wrap.
// VANTAGE_WRAPS_RUNS and VANTAGE_WRAPS_FIRST set the seeds (default 0 to 99).
TEST(RandomBounds, IndicesThroughArithmeticThatWrapsAreCheckedAsTheyWrap) {
  run_mode("wraps", "VANTAGE_WRAPS", false, true, true);
}

// The same generator with reads of `in` clamped or wrapped into [0, n) (`min(max(i, 0), n - 1)`,
// `max(min(i, n - 1), 0)`, `max(i, 0) % n`, and nearly: `i % n`, `min(i, n - 1)`, one past), half the
// programs requiring n >= 1, run at n = 1 and n = 0 too: lowering proves the right ones from what
// min, max and % are where n >= 1 is known, and must prove none where n = 0 can make them -1.
// VANTAGE_CLAMPS_RUNS and VANTAGE_CLAMPS_FIRST set the seeds (default 0 to 99).
TEST(RandomBounds, ClampedAndWrappedReadsAreProvenOnlyWhereTheBoundIsPositive) {
  run_mode("clamps", "VANTAGE_CLAMPS", false, false, false, true);
}

// The seeds beyond the 300 CI runs that found bugs, run every time (each failed before its fix):
//  - 22408: `let u = 58u; l[8u - u]` (l[-50]) taken as proven inside l: the proof of an index's
//    lower end from the conditions folded 8u - 58u at u32, to 4294967246 (the proof now takes the
//    index as written; jit/lower/lower.cpp, proven_nonnegative);
//  - 20880: a u32 index `l[3] + 4294967295u` (past 2^32, outside) wrapped to an element inside on
//    the interpreter and the CPU backend, while the generated CUDA reported it (lowering now
//    computes such an index in i64; Regression.AnUnsignedIndexPast2To32IsOutsideOnEveryBackend).
TEST(RandomBounds, TheSeedsThatFoundBugsRunClean) {
  Tally t;
  for (int seed : {22408, 20880}) run_seed(seed, t);
  run_host(t);
  EXPECT_EQ(t.ran, 2);
}

}  // namespace
}  // namespace vantage
