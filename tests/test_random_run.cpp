// Random programs that the checker accepts, run on the reference interpreter. The generator builds
// kernels whose own accesses are in bounds and race-free by construction: every read index is masked
// into its buffer, every store goes through a partition whose shares are a permutation of the threads
// (or through a claim handed to one thread), and atomics only add, so their order does not matter.
// What such a kernel still needs from Vantage is the barriers: thread t writes a shared element that
// thread u reads later, a partition hands an element to another thread, a block-level branch reads
// what the threads just stored. So a racecheck, initcheck or synccheck finding here is a barrier the
// sync pass failed to place (or one lowering lost), and two thread orders giving different results
// is the same bug seen in the data. Every program runs under forward and reverse order with every
// check on. VANTAGE_RANDOM_RUNS overrides the number of programs (default 300), VANTAGE_RANDOM_FIRST
// the first seed (default 0); VANTAGE_RANDOM_VERBOSE prints each program (and why one was rejected);
// VANTAGE_RANDOM_HOST_EVERY runs one program in that many (default 10) as CUDA on host threads.
#include <gtest/gtest.h>

#include <cstdlib>
#include <cstring>
#include <functional>
#include <random>

#include "host_cuda.hpp"
#include "random_pick.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

constexpr int kIn = 256;   // elements of the read-only inputs (a power of two: reads mask into it)
constexpr int kSlots = 4;  // elements of `out` and `fout` each thread owns
constexpr int kAtomics = 16;

class SafeGen : test_support::Picker {
 public:
  /// `positions`: thread bodies are now and then put under a condition on the thread's position
  /// (below). Off, the generator draws exactly what it drew before the option existed, so every
  /// seed still names the program it named then.
  /// `scratch`: now and then a block statement is a scope with a shared array of its own, or a call
  /// of a function with one (scratch_pass). Off, nothing more is drawn, as for `positions`.
  /// `loops`: now and then a block statement is a loop over shared state (loop_pass): a `while` or a
  /// `for` with a step rule whose condition reads shared counters its body writes, a `for` whose
  /// bound or step is read from shared memory, or a loop of atomics on a shared array; thread bodies
  /// then also add to that array. Off, nothing more is drawn, as for `positions`.
  explicit SafeGen(std::uint64_t seed, bool positions = false, bool scratch = false, bool loops = false)
      : Picker(seed), positions_(positions), scratch_(scratch), loops_(loops) {}

  int threads = 64;
  int blocks = 2;
  int shared_len = 0;  ///< elements of the shared array `s` (a power of two, at least 2 per thread)

  Kernel build() {
    threads = std::vector<int>{32, 64, 128}[static_cast<std::size_t>(pick(3))];
    blocks = 1 + pick(3);
    per_thread_ = 2 << pick(2);  // 2 or 4 shared elements per thread
    shared_len = threads * per_thread_;
    KernelBuilder k("random_run");
    auto n = k.param<int>("n");
    auto a = k.param<float>("a");
    in_ = k.param<GlobalPtr<const int>>("in", extent(Expr(kIn)));
    fin_ = k.param<GlobalPtr<const float>>("fin", extent(Expr(kIn)));
    out_ = k.param<GlobalPtr<int>>("out");
    fout_ = k.param<GlobalPtr<float>>("fout");
    acc_ = k.param<GlobalPtr<int>>("acc", extent(Expr(kAtomics)));
    k.block_threads(threads);
    k.body([&](Scope& g) {
      auto blk = g.let("blk", g.id(block(1)));
      uniform_ = {n, blk, Expr(3)};
      funiform_ = {a};
      const int tile = threads * kSlots;
      g.partition(
          out_, block(1), [&](Expr i) { return blk * tile + i; },
          [&](Scope& g, View out_b) {
            g.partition(
                fout_, block(1), [&](Expr i) { return blk * tile + i; },
                [&](Scope& g, View fout_b) { g.group(block(1), [&](Scope& b) { block_body(b, out_b, fout_b); }); });
          });
    });
    return k.build();
  }

 private:
  // ---------------------------------------------------------------- expressions
  /// An int expression made of `ints` (values the code may read here) and masked loads.
  Expr int_expr(const std::vector<Expr>& ints, int depth) {
    if (depth > 2) return chance(4) ? Expr(pick(9)) : any(ints);
    switch (pick(11)) {
      case 0: return int_expr(ints, depth + 1) + int_expr(ints, depth + 1);
      case 1: return int_expr(ints, depth + 1) - int_expr(ints, depth + 1);
      case 2: return int_expr(ints, depth + 1) * (1 + pick(5));
      case 3: return int_expr(ints, depth + 1) ^ int_expr(ints, depth + 1);
      case 4: return min(int_expr(ints, depth + 1), int_expr(ints, depth + 1));
      case 5: return in_[int_expr(ints, depth + 1) & (kIn - 1)];
      case 6:
        if (shared_usable_) return shared_[int_expr(ints, depth + 1) & (shared_len - 1)];
        return any(ints);
      case 7: return select(int_expr(ints, depth + 1) < int_expr(ints, depth + 1), int_expr(ints, depth + 1), 1);
      case 8: return (int_expr(ints, depth + 1) >> (1 + pick(3)));
      default: return chance(3) ? Expr(pick(9)) : any(ints);
    }
  }
  Expr float_expr(const std::vector<Expr>& ints, const std::vector<Expr>& floats, int depth) {
    if (depth > 2) return chance(3) ? Expr(0.5f * static_cast<float>(pick(5))) : any(floats);
    switch (pick(6)) {
      case 0: return float_expr(ints, floats, depth + 1) * float_expr(ints, floats, depth + 1);
      case 1: return float_expr(ints, floats, depth + 1) + float_expr(ints, floats, depth + 1);
      case 2: return fin_[int_expr(ints, depth + 1) & (kIn - 1)];
      case 3: return cast<float>(int_expr(ints, depth + 1));
      case 4: return fma(float_expr(ints, floats, depth + 1), any(floats), 1.0f);
      default: return any(floats);
    }
  }

  // ---------------------------------------------------------------- block level
  /// Statements at block(1): lets, loops and branches on block-uniform values, passes over the
  /// shared array through partitions (each a permutation of the threads), claims for one thread,
  /// stores to the block's slice of `out`, and explicit barriers now and then.
  void block_body(Scope& b, View out_b, View fout_b) {
    shared_ = b.shared<int>("s", shared_len);
    t_ = b.let("t", b.id(thread(1)));
    // Initialise the whole shared array first (initcheck would report a read of an unwritten element).
    const int per = per_thread_;
    b.partition(
        shared_, thread(1), [&](Expr i) { return t_ * per + i; },
        [&](Scope& b, View s_t) {
          b.group(thread(1), [&](Scope& th) {
            th.for_("i", 0, per, [&](Scope&, Expr i) { s_t[i] = in_[(t_ * per + i) & (kIn - 1)]; });
          });
        });
    out_b_ = out_b;
    fout_b_ = fout_b;
    shared_usable_ = true;
    if (loops_) {
      // The loops' counters (thread t's is ctl[t]) and the shared atomics, zeroed first.
      ctl_ = b.shared<int>("ctl", threads);
      sh_acc_ = b.shared<int>("sh_acc", kAtomics);
      b.partition(
          ctl_, thread(1), [&](Expr i) { return t_ + i; },
          [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = 0; }); });
      b.partition(
          sh_acc_, thread(1), [&](Expr i) { return t_ + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope& th) { th.if_(t_ < kAtomics, [&](Scope&) { mine[0] = 0; }); });
          });
    }
    block_stmts(b, 0);
    if (loops_) loop_out(b);
  }

  void block_stmts(Scope& b, int depth) {
    int count = 1 + pick(depth == 0 ? 6 : 3);
    for (int i = 0; i < count; ++i) block_stmt(b, depth);
  }

  void block_stmt(Scope& b, int depth) {
    if (scratch_ && chance(3)) {
      scratch_pass(b);
      return;
    }
    if (loops_ && depth < 3 && chance(3)) {
      loop_pass(b, depth);
      return;
    }
    switch (pick(depth < 2 ? 9 : 6)) {
      case 0: uniform_.push_back(b.let("u", int_expr(uniform_, 1))); break;
      case 1: shared_pass(b); break;
      case 2:
        if (chance(2))
          unit_pass(b);
        else
          shared_pass(b);
        break;
      case 3:
        if (chance(3))
          block_call(b);
        else
          out_pass(b);
        break;
      case 4: one_thread_writes(b); break;
      case 5:
        if (chance(4))
          b.sync_threads();
        else
          warp_pass(b);
        break;
      case 6: {
        auto saved = uniform_;
        b.for_("r", 0, 1 + pick(3), [&](Scope& b, Expr r) {
          uniform_.push_back(r);
          block_stmts(b, depth + 1);
        });
        uniform_ = saved;
        break;
      }
      case 7: {
        auto saved = uniform_;
        // A block-uniform branch, possibly on shared data the threads just wrote.
        b.if_(
            int_expr(uniform_, 1) < int_expr(uniform_, 1), [&](Scope& b) { block_stmts(b, depth + 1); },
            [&](Scope& b) {
              uniform_ = saved;
              block_stmts(b, depth + 1);
            });
        uniform_ = saved;
        break;
      }
      default: {
        // A counted while loop at block level.
        auto saved = uniform_;
        auto c = b.let("c", 0);
        int bound = 1 + pick(2);
        b.while_(c < bound, [&](Scope& b) {
          block_stmts(b, depth + 1);
          b.assign(c, c + 1);
        });
        uniform_ = saved;
        break;
      }
    }
  }

  /// A partition of the shared array whose shares are a permutation of the threads: thread t owns
  /// the `per` elements of share perm(t). Each thread reads anything (masked) and stores its share.
  void shared_pass(Scope& b) {
    const int T = threads, per = per_thread_;
    int kind = pick(5), k = 1 + pick(T - 1);
    // A rotation by a block-uniform value (a loop counter, say): shares that move between iterations.
    Expr by = any(uniform_) & (T - 1);
    auto perm = [kind, k, T, by](const Expr& t) -> Expr {
      switch (kind) {
        case 0: return t;
        case 1: return (t + k) % T;
        case 2: return t ^ (k & (T - 1));
        case 3: return (t + by) % T;
        default: return (T - 1) - t;
      }
    };
    shared_usable_ = false;
    b.partition(
        shared_, thread(1), [&](Expr i) { return perm(t_) * per + i; },
        [&](Scope& b, View s_t) {
          mine_space_ = MemSpace::Shared;
          b.group(thread(1),
                  [&](Scope& th) { on_position(th, {t_}, [&](Scope& th) { thread_stmts(th, s_t, per, 0); }); });
        });
    shared_usable_ = true;
  }

  /// Each thread stores its own slots of the block's slice of `out` and `fout`.
  void out_pass(Scope& b) {
    b.partition(
        out_b_, thread(1), [&](Expr i) { return t_ * kSlots + i; },
        [&](Scope& b, View o_t) {
          b.group(thread(1), [&](Scope& th) {
            on_position(th, {t_}, [&](Scope& th) {
              if (chance(2)) {
                mine_space_ = MemSpace::Global;
                thread_stmts(th, o_t, kSlots, 0);
              } else {
                auto v = th.let("v", int_expr(thread_ints(), 0));
                o_t[v & (kSlots - 1)] = v;
              }
            });
          });
        });
    if (chance(2))
      b.partition(
          fout_b_, thread(1), [&](Expr i) { return t_ * kSlots + i; },
          [&](Scope& b, View f_t) {
            b.group(thread(1), [&](Scope&) {
              auto ints = thread_ints();
              f_t[int_expr(ints, 1) & (kSlots - 1)] = float_expr(ints, funiform_, 0);
            });
          });
  }

  /// One thread writes shared elements that every thread may read next (the broadcast).
  void one_thread_writes(Scope& b) {
    // The writer is thread 0 or thread p after an idle branch of p threads (p a power of two, so
    // that both branches are aligned).
    int first = chance(3) ? 0 : 1 << pick(threads == 32 ? 5 : 6);
    shared_usable_ = false;
    b.claim(shared_, thread(1), [&](Scope& b, View s_one) {
      std::vector<SplitBranch> branches;
      if (first > 0) branches.push_back(SplitBranch(first, [](Scope&) {}));
      branches.push_back(
          SplitBranch(1, [&](Scope&) { s_one[int_expr(uniform_, 1) & (shared_len - 1)] = int_expr(uniform_, 0); }));
      b.split(Level::Thread, std::move(branches));
    });
    shared_usable_ = true;
  }

  /// A warp-level pass: a shuffle across each warp, then each lane stores its own slot of `out`.
  void warp_pass(Scope& b) {
    b.partition(
        out_b_, thread(1), [&](Expr i) { return t_ * kSlots + i; },
        [&](Scope& b, View o_t) {
          b.group(warp(), [&](Scope& w) {
            auto lane = w.let("lane", w.id(thread(1)));
            std::vector<Expr> ints = thread_ints();
            ints.push_back(lane);
            auto v = w.let("wv", int_expr(ints, 1), at(thread(1)));
            Var got;
            switch (pick(4)) {
              case 0: got = w.shfl_xor("x", v, 1 << pick(5)); break;
              case 1: got = w.shfl_down("x", v, 1 + pick(16)); break;
              case 2: got = w.shfl_idx("x", v, pick(32)); break;
              default: got = w.ballot("x", v > 2); break;
            }
            Expr value = got.type() == ScalarType::I32 ? Expr(got) : cast<int>(got);
            w.group(thread(1), [&](Scope& th) {
              on_position(th, {lane, t_}, [&](Scope&) { o_t[lane & (kSlots - 1)] = value + v; });
            });
          });
        });
  }

  /// Units of U threads (a warp or two) each take their own part of the shared array; inside a unit
  /// every thread stores its share, then reads elements its unit's other threads stored (a barrier
  /// over the unit: __syncwarp, or a named barrier for 64 threads) and stores the result to `out`.
  void unit_pass(Scope& b) {
    const int U = threads >= 64 && chance(2) ? 64 : 32, per = per_thread_, units = threads / U;
    const int flip = pick(units);
    const int lane_flip = pick(U);
    shared_usable_ = false;
    b.partition(
        out_b_, thread(1), [&](Expr i) { return t_ * kSlots + i; },
        [&](Scope& b, View o_t) {
          auto unit = b.let("unit", b.id(thread(U)));
          b.partition(
              shared_, thread(U), [&](Expr i) { return (unit ^ flip) * (U * per) + i; },
              [&](Scope& b, View s_u) {
                b.group(thread(U), [&](Scope& u) {
                  auto lane = u.let("lane", u.id(thread(1)));
                  u.partition(
                      s_u, thread(1), [&](Expr i) { return (lane ^ lane_flip) * per + i; },
                      [&](Scope& u, View s_l) {
                        u.group(thread(1), [&](Scope&) {
                          auto ints = thread_ints();
                          ints.push_back(lane);
                          s_l[int_expr(ints, 1) & (per - 1)] = int_expr(ints, 0);
                          if (chance(2)) s_l[(lane + 1) & (per - 1)] = lane;
                        });
                      });
                  auto ints = thread_ints();
                  ints.push_back(lane);
                  auto got = u.let("got", s_u[int_expr(ints, 1) & (U * per - 1)], at(thread(1)));
                  u.group(thread(1), [&](Scope&) { o_t[lane & (kSlots - 1)] = got; });
                });
              });
        });
    shared_usable_ = true;
  }

  /// A block(1) device function over the shared array: each thread stores into its neighbour's
  /// share, then reads an element another thread stored, into a thread-local array the caller then
  /// stores to `out`. The barriers it needs are inside the function, and before the call (the
  /// caller's own stores and reads of `s`).
  void block_call(Scope& b) {
    const int per = per_thread_, len = shared_len;
    const int pick_k = pick(len);
    FunctionBuilder f("neighbours");
    f.requires_perspective(block(1));
    auto buf = f.param<SharedPtr<int>>("buf", at(block(1)));
    auto res = f.param<LocalPtr<int>>("res", at(thread(1)));
    f.body([&](Scope& fb) {
      auto t = fb.let("ft", fb.id(thread(1)));
      fb.partition(
          buf, thread(1), [&](Expr i) { return (t ^ 1) * per + i; },
          [&](Scope& fb, View b_t) { fb.group(thread(1), [&](Scope&) { b_t[t & (per - 1)] = t * 7 + 1; }); });
      fb.group(thread(1), [&](Scope&) { res[0] = buf[(t * per + pick_k) & (len - 1)]; });
    });
    DeviceFunction fn = f.build();
    auto items = b.local_array("items", ScalarType::I32, 1, at(thread(1)));
    b.call(fn, {shared_, items});
    b.partition(
        out_b_, thread(1), [&](Expr i) { return t_ * kSlots + i; },
        [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[items[0] & (kSlots - 1)] = items[0]; }); });
  }

  /// (With `scratch`.) A scope with a shared array `x` of its own, or a call of a block(1) device
  /// function that allocates one: each thread stores its share of x (a rotation of the threads),
  /// then reads an element another thread stored into its slot of `out`. Scopes and calls one after
  /// another, in loops and in branches, get the same bytes (shared memory is reused when its scope
  /// ends, jit/ir/shared_layout), so the barrier each reuse needs is the sync pass's to place, and
  /// the interpreter checks every access against those of the arrays that held its bytes before.
  void scratch_pass(Scope& b) {
    const int T = threads, per = 1 + pick(2), len = T * per, rot = pick(T), k = pick(len), mul = 1 + pick(9);
    auto to_out = [&](Scope& b, const Expr& value) {
      b.partition(
          out_b_, thread(1), [&](Expr i) { return t_ * kSlots + i; },
          [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[value & (kSlots - 1)] = value; }); });
    };
    if (chance(3)) {
      halo_pass(b);
      return;
    }
    if (chance(3)) {
      FunctionBuilder f("scratch" + std::to_string(functions_++));
      f.requires_perspective(block(1));
      f.shared_budget(len * 4);
      auto res = f.param<LocalPtr<int>>("res", at(thread(1)));
      auto v = f.param<int>("v");
      f.body([&](Scope& fb) {
        View x = fb.shared<int>("x", len);
        auto t = fb.let("ft", fb.id(thread(1)));
        fb.partition(
            x, thread(1), [&](Expr i) { return (t + rot) % T * per + i; },
            [&](Scope& fb, View mine) {
              fb.group(thread(1),
                       [&](Scope& th) { th.for_("i", 0, per, [&](Scope&, Expr i) { mine[i] = t * mul + i + v; }); });
            });
        fb.group(thread(1), [&](Scope&) { res[0] = x[(t * 3 + k) % len]; });
      });
      DeviceFunction fn = f.build();
      auto got = b.local_array("got", ScalarType::I32, 1, at(thread(1)));
      b.call(fn, {got, int_expr(uniform_, 1)});
      to_out(b, got[0]);
      return;
    }
    b.group(block(1), [&](Scope& b) {
      View x = b.shared<int>("x", len);
      b.partition(
          x, thread(1), [&](Expr i) { return (t_ + rot) % T * per + i; },
          [&](Scope& b, View mine) {
            b.group(thread(1), [&](Scope& th) {
              th.for_("i", 0, per, [&](Scope&, Expr i) { mine[i] = int_expr(thread_ints(), 1) + i; });
            });
          });
      auto got = b.let("got", x[(t_ * 3 + k) % len], at(thread(1)));
      to_out(b, got);
    });
  }

  /// (With `scratch`.) A scope with a shared array `x` of T + 2h elements: a few steps in random
  /// order, each a store of the middle T through a partition (thread t at h + t), a store of one
  /// element by one thread (a claim: in a halo, or at an edge of the middle, or inside it), or a read
  /// by every thread of x[t + d] into its slot of `out`. The sync pass leaves out the barrier between
  /// two steps whose elements lie apart (a halo store after the middle's), and must keep it where
  /// they meet, at the edges included (docs/sync.md).
  void halo_pass(Scope& b) {
    const int T = threads, h = 1 + pick(3), len = T + 2 * h;
    b.group(block(1), [&](Scope& b) {
      View x = b.shared<int>("x", len);
      // Every element is written first (initcheck), by the middle's partition and a claim each.
      auto middle = [&](Scope& b) {
        b.partition(
            x, thread(1), [&](Expr i) { return t_ + h + i; },
            [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = int_expr(thread_ints(), 1); }); });
      };
      auto one = [&](Scope& b, int at) {
        int first = chance(2) ? 0 : 1 << pick(threads == 32 ? 5 : 6);
        b.claim(x, thread(1), [&](Scope& b, View only) {
          std::vector<SplitBranch> branches;
          if (first > 0) branches.push_back(SplitBranch(first, [](Scope&) {}));
          branches.push_back(SplitBranch(1, [&](Scope&) { only[at] = int_expr(uniform_, 1); }));
          b.split(Level::Thread, std::move(branches));
        });
      };
      auto halo = [&] { return chance(2) ? pick(h) : T + h + pick(h); };
      auto edge = [&] { return std::vector<int>{h - 1, h, T + h - 1, T + h}[static_cast<std::size_t>(pick(4))]; };
      middle(b);
      for (int j = 0; j < h; ++j) {
        one(b, j);
        one(b, T + h + j);
      }
      for (int step = 0, steps = 1 + pick(4); step < steps; ++step) {
        switch (pick(4)) {
          case 0: middle(b); break;
          case 1: one(b, chance(3) ? edge() : chance(2) ? halo() : h + pick(T)); break;
          default: {
            const int d = pick(2 * h + 1);
            auto got = b.let("got", x[t_ + d], at(thread(1)));
            b.partition(
                out_b_, thread(1), [&](Expr i) { return t_ * kSlots + i; },
                [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[got & (kSlots - 1)] = got; }); });
            break;
          }
        }
      }
    });
  }

  // ---------------------------------------------------------------- loops over shared state
  /// (With `loops`.) A block-level loop that reads shared memory where its threads decide whether to
  /// go on: every thread must see the same value there, so the barrier between the body's last
  /// writes and the next read of the condition is the sync pass's to place (docs/sync.md). Every
  /// loop ends: a counter it reads only grows, by at least one per iteration, and its other shared
  /// reads are true whatever they read (`(s[i] | 1) != 0`).
  void loop_pass(Scope& b, int depth) {
    const int k = pick(threads);
    auto saved = uniform_;
    auto body = [&](Scope& b) {
      bool early = chance(2);
      if (early) bump(b, k);
      block_stmts(b, depth + 1);
      if (!early) bump(b, k);
    };
    switch (pick(6)) {
      case 0:
      case 1: {
        // while (ctl[k] < start + bound [&& (s[i] | 1) != 0]) { ... ctl[k] grows ... }
        auto start = b.let("start", ctl_[k]);
        Expr cond = ctl_[k] < start + (1 + pick(3));
        if (chance(2)) cond = cond && (shared_[int_expr(uniform_, 1) & (shared_len - 1)] | 1) != 0;
        b.while_(cond, body);
        break;
      }
      case 2: {
        // for (q = 1; q < (ctl[k] & 7) + 2; q = q * 2): a step rule, so a while on the condition.
        b.for_(
            "q", 1, [&](Expr q) { return q < (ctl_[k] & 7) + 2; }, [](Expr q) { return q * 2; },
            [&](Scope& b, Expr q) {
              uniform_.push_back(q);
              body(b);
            });
        break;
      }
      case 3: {
        // A bound read from shared memory (once, before the first iteration), which the body writes.
        Expr bound = (ctl_[k] & 3) + (shared_[int_expr(uniform_, 1) & (shared_len - 1)] & 1) + 1;
        b.for_("r", 0, bound, [&](Scope& b, Expr r) {
          uniform_.push_back(r);
          body(b);
        });
        break;
      }
      case 4: {
        // A step read from shared memory.
        Expr step = (shared_[int_expr(uniform_, 1) & (shared_len - 1)] & 1) + 1;
        b.for_("r", 0, 1 + pick(5), step, [&](Scope& b, Expr r) {
          uniform_.push_back(r);
          body(b);
        });
        break;
      }
      default: {
        // Atomics on a shared array, iteration after iteration, and what else the body does.
        b.for_("r", 0, 1 + pick(4), [&](Scope& b, Expr r) {
          uniform_.push_back(r);
          b.group(thread(1), [&](Scope& th) { shared_atomic(th, thread_ints()); });
          if (chance(2)) block_stmts(b, depth + 1);
        });
        break;
      }
    }
    uniform_ = saved;
  }

  /// The loops' counters grow: every thread's by one or two through a partition (a rotation of the
  /// threads), or counter k by one thread (a claim).
  void bump(Scope& b, int k) {
    const int T = threads, rot = pick(T);
    if (chance(3)) {
      int first = chance(2) ? 0 : 1 << pick(threads == 32 ? 5 : 6);
      b.claim(ctl_, thread(1), [&](Scope& b, View one) {
        std::vector<SplitBranch> branches;
        if (first > 0) branches.push_back(SplitBranch(first, [](Scope&) {}));
        branches.push_back(SplitBranch(1, [&](Scope&) { one[k] = one[k] + 1; }));
        b.split(Level::Thread, std::move(branches));
      });
      return;
    }
    b.partition(
        ctl_, thread(1), [&](Expr i) { return (t_ + rot) % T + i; },
        [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = mine[0] + 1 + (t_ & 1); }); });
  }

  /// An atomic on the shared array: adds to its first half, maxima in its second (each commutes
  /// with itself, not with the other).
  void shared_atomic(Scope& th, const std::vector<Expr>& ints) {
    bool add = chance(2);
    Expr slot = (int_expr(ints, 1) & (kAtomics / 2 - 1)) + (add ? 0 : kAtomics / 2);
    th.atomic(add ? AtomicOp::Add : AtomicOp::Max, sh_acc_, slot, int_expr(ints, 1));
  }

  /// What the loops left: each thread stores its counter and a slot of the shared atomics.
  void loop_out(Scope& b) {
    b.partition(
        out_b_, thread(1), [&](Expr i) { return t_ * kSlots + i; },
        [&](Scope& b, View o_t) {
          b.group(thread(1), [&](Scope&) { o_t[kSlots - 1] = ctl_[t_] * 1000 + sh_acc_[t_ & (kAtomics - 1)]; });
        });
  }

  // ---------------------------------------------------------------- thread level
  /// `body`, or (with `positions` on, half the time) `if (position OP k) body`: the conditions the
  /// CPU backend turns into ranges of a thread loop (docs/cpu.md). The position is the thread's
  /// (`t`, one of `ts`), its lane (`t % 32`, `t & 31`; or not: `t % 64`, `t & 15`), or an offset
  /// one (`c + t`, c the same for the block or for the warp, up to values whose sum wraps); k is
  /// the same for the block, or for a warp, or nearly (`t / 16`), or varies by thread; either may be
  /// on either side.
  void on_position(Scope& th, const std::vector<Expr>& ts, const std::function<void(Scope&)>& body) {
    // Nothing is drawn with `positions` off (the seeds' programs stay as they were).
    if (!positions_ || chance(2)) {
      body(th);
      return;
    }
    const Expr& t = any(ts);
    Expr pos;
    switch (pick(7)) {
      case 0: pos = t; break;
      case 1: pos = t % 32; break;
      case 2: pos = t & 31; break;
      case 3: pos = any(uniform_) * threads + t; break;
      case 4:
        pos = t + Expr(std::vector<int>{INT32_MAX - 40, INT32_MIN, -200, 96}[static_cast<std::size_t>(pick(4))]);
        break;
      case 5: pos = (t / 32) * 32 + t; break;  // an offset the same for each warp, not the block
      default: pos = chance(2) ? t % (chance(2) ? 16 : 64) : t & (chance(2) ? 15 : 63); break;  // not the lane
    }
    Expr k;
    switch (pick(6)) {
      case 0: k = Expr(pick(threads + 8) - 4); break;
      case 1:
        k = Expr(std::vector<int>{INT32_MAX, INT32_MIN, INT32_MAX - 20, 0}[static_cast<std::size_t>(pick(4))]);
        break;
      case 2: k = int_expr(uniform_, 1); break;
      case 3: k = (t / 32) * 7 + pick(40); break;      // the same for the lanes of a warp
      case 4: k = (t / 16) * 7 + pick(40); break;      // not: t / 16 differs within a warp
      default: k = int_expr(thread_ints(), 1); break;  // not the same for the lanes: no range
    }
    Expr cond;
    bool left = chance(2);
    switch (pick(4)) {
      case 0: cond = left ? pos < k : k < pos; break;
      case 1: cond = left ? pos <= k : k <= pos; break;
      case 2: cond = left ? pos > k : k > pos; break;
      default: cond = left ? pos >= k : k >= pos; break;
    }
    th.if_(cond, body);
  }

  std::vector<Expr> thread_ints() {
    std::vector<Expr> ints = uniform_;
    ints.push_back(t_);
    return ints;
  }

  /// Statements of one thread that owns `len` elements through `mine`.
  void thread_stmts(Scope& th, View mine, int len, int depth) {
    std::vector<Expr> ints = thread_ints();
    int count = 1 + pick(3);
    for (int i = 0; i < count; ++i) {
      switch (pick(depth < 2 ? 7 : 4)) {
        case 0:
        case 1: mine[int_expr(ints, 1) & (len - 1)] = int_expr(ints, 0); break;
        case 2: ints.push_back(th.let("x", int_expr(ints, 0))); break;
        case 3: {
          if (loops_ && chance(2)) {
            shared_atomic(th, ints);
            break;
          }
          // Adds to the first half, maxima in the second: each commutes with itself, not with the other.
          bool add = chance(2);
          Expr slot = (int_expr(ints, 1) & (kAtomics / 2 - 1)) + (add ? 0 : kAtomics / 2);
          // Half of them keep the old value, half do not (the form without a result).
          if (chance(2))
            th.atomic("old", add ? AtomicOp::Add : AtomicOp::Max, acc_, slot, int_expr(ints, 1));
          else
            th.atomic(add ? AtomicOp::Add : AtomicOp::Max, acc_, slot, int_expr(ints, 1));
          break;
        }
        case 4:
          th.if_(int_expr(ints, 1) < int_expr(ints, 1), [&](Scope& th) { thread_stmts(th, mine, len, depth + 1); });
          break;
        case 5:
          if (chance(3)) {
            thread_call(th, mine, len, ints);
            break;
          }
          [[fallthrough]];
        default:
          th.for_("j", 0, 1 + pick(3), [&](Scope& th, Expr j) {
            mine[j & (len - 1)] = int_expr(ints, 1) + j;
            if (chance(3)) {
              // A thread leaves the loop, or this iteration, on a value of its own; what follows then
              // differs by thread.
              bool brk = chance(2);
              th.if_((int_expr(ints, 1) + j) % 3 == 0, [&](Scope& th) { brk ? th.break_() : th.continue_(); });
              mine[(j + 1) & (len - 1)] = int_expr(ints, 0) - j;
            }
            if (chance(2)) thread_stmts(th, mine, len, depth + 1);
          });
          break;
      }
    }
  }

  /// A thread(1) device function that writes through the thread's own share (passed as a pointer).
  void thread_call(Scope& th, View mine, int len, const std::vector<Expr>& ints) {
    FunctionBuilder f("bump");
    f.requires_perspective(thread(1));
    auto p = f.pointer_param("p", ScalarType::I32, mine_space_, false);
    auto v = f.param<int>("v");
    const int l = len;
    f.body([&](Scope& fs) {
      (void)fs;
      p[v & (l - 1)] = v + 1;
    });
    DeviceFunction fn = f.build();
    th.call(fn, {mine, int_expr(ints, 1)});
  }

  bool positions_ = false, scratch_ = false, loops_ = false;
  int functions_ = 0;  ///< device functions made by scratch_pass (each named apart)
  int per_thread_ = 2;
  View in_, fin_, out_, fout_, acc_, shared_, out_b_, fout_b_;
  View ctl_, sh_acc_;  ///< (with `loops`) the loops' counters and the shared atomics
  bool shared_usable_ = false;
  MemSpace mine_space_ = MemSpace::Global;  ///< where the memory thread_stmts stores to lives  ///< false inside a
                                            ///< partition or claim of `s` (its name is unusable there)
  Expr t_;
  std::vector<Expr> uniform_, funiform_;
};

/// The buffers of one run, filled the same way for every order.
struct Buffers {
  std::vector<int> in, out, acc;
  std::vector<float> fin, fout;
  Buffers(int blocks, int threads) {
    for (int i = 0; i < kIn; ++i) {
      in.push_back((i * 37 + 11) % 23 - 7);
      fin.push_back(static_cast<float>(i % 13) * 0.25f - 1.0f);
    }
    out.assign(static_cast<std::size_t>(blocks * threads * kSlots), -1);
    fout.assign(out.size(), -1.0f);
    acc.assign(kAtomics, 0);
  }
  /// Where this and `o` first differ, for a failure's message.
  std::string diff(const Buffers& o) const {
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i] != o.out[i])
        return "out[" + std::to_string(i) + "] " + std::to_string(out[i]) + " vs " + std::to_string(o.out[i]);
    for (std::size_t i = 0; i < acc.size(); ++i)
      if (acc[i] != o.acc[i])
        return "acc[" + std::to_string(i) + "] " + std::to_string(acc[i]) + " vs " + std::to_string(o.acc[i]);
    for (std::size_t i = 0; i < fout.size(); ++i)
      if (std::memcmp(&fout[i], &o.fout[i], sizeof(float)) != 0)
        return "fout[" + std::to_string(i) + "] " + std::to_string(fout[i]) + " vs " + std::to_string(o.fout[i]);
    return "no difference";
  }
  bool same(const Buffers& o) const {
    return out == o.out && acc == o.acc && std::memcmp(fout.data(), o.fout.data(), fout.size() * sizeof(float)) == 0;
  }
};

/// A program's generated CUDA launched on host threads, and the interpreter's result.
struct HostCase {
  int seed;
  test_support::HostLaunch launch;
  Buffers want;
};

/// What a run of programs did.
struct Tally {
  int ran = 0, rejected = 0, on_cpu = 0, jumps = 0, reported = 0;
  std::int64_t statements = 0;
  std::vector<HostCase> host;  ///< the sample for host threads (run_host)
};

/// The launch run_seed makes, of the generated CUDA on host threads.
test_support::HostLaunch host_launch(const Specialized& s, const SafeGen& gen) {
  test_support::HostLaunch l;
  l.source = s.source;
  l.entry = s.entry;
  l.blocks = gen.blocks;
  l.threads = gen.threads;
  Buffers b(gen.blocks, gen.threads);
  using A = test_support::HostArg;
  l.args = {A::of("int", 5),     A::of("float", 1.5),    A::of("int", b.in), A::of("float", b.fin),
            A::of("int", b.out), A::of("float", b.fout), A::of("int", b.acc)};
  return l;
}

/// The sample's generated CUDA on host threads, in one program under ThreadSanitizer, against the
/// interpreter's results (integers exactly, floats to the bit).
void run_host(const Tally& t) {
  if (t.host.empty()) return;
  std::vector<test_support::HostLaunch> launches;
  for (const auto& c : t.host) launches.push_back(c.launch);
  // ThreadSanitizer: a barrier the generated code lacks is two host threads touching one element.
  test_support::HostLaunches run = test_support::run_launches_on_host(launches, test_support::HostSanitizer::Thread);
  EXPECT_TRUE(run.ok) << run.problem;
  for (std::size_t i = 0; i < run.results.size(); ++i) {
    const HostCase& c = t.host[i];
    const auto& r = run.results[i];
    EXPECT_FALSE(r.check_failed) << "seed " << c.seed << ": generated CUDA on host threads failed a check";
    ASSERT_EQ(r.buffers.size(), 5u);
    auto ints = [](const std::vector<long long>& v) { return std::vector<int>(v.begin(), v.end()); };
    auto bits = [](const std::vector<float>& v) {
      std::vector<int> b(v.size());
      std::memcpy(b.data(), v.data(), v.size() * sizeof(float));
      return b;
    };
    EXPECT_EQ(ints(r.buffers[2]), c.want.out) << "seed " << c.seed << ": generated CUDA's `out` differs";
    EXPECT_EQ(ints(r.buffers[3]), bits(c.want.fout)) << "seed " << c.seed << ": generated CUDA's `fout` differs";
    EXPECT_EQ(ints(r.buffers[4]), c.want.acc) << "seed " << c.seed << ": generated CUDA's atomics differ";
  }
  std::printf("random runs: %zu programs' generated CUDA ran on host threads\n", run.results.size());
}

/// Program `seed`: built, run under two thread orders on the interpreter with every check on, on the
/// CPU backend (every fourth seed: each is an LLVM compile; every seed with `positions`), and its
/// cost report made; any difference or error is a test failure naming the seed.
void run_seed(int seed, Tally& t, bool positions = false, bool scratch = false, bool loops = false) {
  SafeGen gen(static_cast<std::uint64_t>(seed) * 0x2545f4914f6cdd1dULL + 7, positions, scratch, loops);
  const char* label = positions ? "seed (with conditions on positions) "
                      : scratch ? "seed (with scratch scopes) "
                      : loops   ? "seed (with loops over shared state) "
                                : "seed ";
  Kernel k;
  try {
    k = gen.build();
  } catch (const CheckError& e) {
    ++t.rejected;
    if (std::getenv("VANTAGE_RANDOM_VERBOSE")) std::printf("seed %d rejected:\n%s\n", seed, e.what());
    return;
  }
  {
    std::string ir = k.ir_text();
    t.jumps += ir.find("break;") != std::string::npos || ir.find("continue;") != std::string::npos;
  }
  if (std::getenv("VANTAGE_RANDOM_VERBOSE")) std::printf("seed %d:\n%s\n", seed, k.ir_text().c_str());
  std::vector<Buffers> results;
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse}) {
    Buffers buf(gen.blocks, gen.threads);
    const std::vector<int>& in = buf.in;
    const std::vector<float>& fin = buf.fin;
    try {
      auto rep = k.launch(Device::interpreter({order, 1, true}), Grid{gen.blocks, gen.threads}, 5, 1.5f, in, fin,
                          buf.out, buf.fout, buf.acc);
      t.statements += rep.thread_statements;
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << seed << ", " << (order == ThreadOrder::Forward ? "forward" : "reverse")
                    << " order: " << e.what() << "\n"
                    << k.lowered(Spec{});
      break;
    }
    results.push_back(std::move(buf));
  }
  if (results.size() == 2) {
    EXPECT_TRUE(results[0].same(results[1]))
        << label << seed << ": forward and reverse orders disagree (" << results[0].diff(results[1]) << ")\n"
        << k.lowered(Spec{});
  }
  // The CPU backend runs a sample of them (every fourth: each is an LLVM compile), on two host
  // threads, and must give the interpreter's result to the bit.
  if (Device::cpu_available() && results.size() == 2 && (positions || seed % 4 == 0)) {
    Buffers buf(gen.blocks, gen.threads);
    const std::vector<int>& in = buf.in;
    const std::vector<float>& fin = buf.fin;
    try {
      k.launch(Device::cpu(2), Grid{gen.blocks, gen.threads}, 5, 1.5f, in, fin, buf.out, buf.fout, buf.acc);
      ++t.on_cpu;
      EXPECT_TRUE(buf.same(results[0])) << label << seed
                                        << ": the CPU backend and the interpreter disagree (CPU vs interpreter: "
                                        << buf.diff(results[0]) << ")\n"
                                        << k.lowered(Spec{});
    } catch (const std::exception& e) {
      ADD_FAILURE() << label << seed << ", CPU backend: " << e.what() << "\n" << k.lowered(Spec{});
    }
  }
  // A tenth (VANTAGE_RANDOM_HOST_EVERY: one in that many): the generated CUDA on host threads
  // (run_host, after the last seed).
  static const int host_every = [] {
    const char* env = std::getenv("VANTAGE_RANDOM_HOST_EVERY");
    return env ? std::max(1, std::atoi(env)) : 10;
  }();
  if (results.size() == 2 && seed % host_every == 0) {
    Specialized s = specialize_for(k, Spec{}.with_fp_contract(false));
    if (test_support::runs_on_host(s.source)) t.host.push_back({seed, host_launch(s, gen), results[0]});
  }
  // The cost report follows every accepted program without failing (loops left early, calls,
  // returns, data-dependent branches: estimates, never an internal error).
  try {
    const std::int64_t slots = static_cast<std::int64_t>(gen.blocks) * gen.threads * kSlots;
    CostReport r = k.report(Spec{}, {{"n", 5}, {"out", slots}, {"fout", slots}}, gen.blocks);
    ++t.reported;
    for (const auto& a : r.accesses)
      EXPECT_TRUE(a.lanes >= 0 && a.lanes <= 32 && a.sectors >= 0 && a.wavefronts >= 0) << label << seed;
  } catch (const std::exception& e) {
    ADD_FAILURE() << label << seed << ", cost report: " << e.what() << "\n" << k.lowered(Spec{});
  }
  ++t.ran;
}

TEST(RandomPrograms, AcceptedOnesRunCleanAndAlikeUnderTwoThreadOrders) {
#ifdef VANTAGE_TEST_SANITIZED
  int programs = 100, first = 0;  // under a sanitizer a third, for memory safety; the plain pass runs 300
#else
  int programs = 300, first = 0;
#endif
  if (const char* env = std::getenv("VANTAGE_RANDOM_RUNS")) programs = std::max(1, std::atoi(env));
  if (const char* env = std::getenv("VANTAGE_RANDOM_FIRST")) first = std::max(0, std::atoi(env));
  Tally t;
  for (int seed = first; seed < first + programs; ++seed) run_seed(seed, t);
  run_host(t);
  EXPECT_EQ(t.reported, t.ran);
  std::printf(
      "random runs: %d programs ran under two orders (%lld thread-statements), %d also on the CPU "
      "backend, %d rejected, %d leave a loop early\n",
      t.ran, static_cast<long long>(t.statements), t.on_cpu, t.rejected, t.jumps);
  // The generator aims at programs the checker accepts: most must be.
  EXPECT_GE(t.ran, programs * 9 / 10) << t.rejected << " of " << programs << " rejected";
  EXPECT_GE(t.jumps, programs / 20) << "too few programs exercise break and continue";
}

// The seeds beyond the 300 CI runs that found bugs, run every time (each failed before its fix):
//  - 7648: the CPU backend read past a shared array (LLVM 19's interleaved access groups on a
//    wrapping strided index; docs/cpu.md);
//  - 25548: two nested while loops whose sync analysis never reached a fixed point, so the compile
//    hung (the loop's state is now joined, not replaced, at each round; jit/sync/sync.cpp).
TEST(RandomPrograms, TheSeedsThatFoundBugsRunClean) {
  Tally t;
  for (int seed : {7648, 25548}) run_seed(seed, t);
  EXPECT_EQ(t.ran, 2);
  EXPECT_EQ(t.on_cpu, Device::cpu_available() ? 2 : 0);
}

// The same generator with thread bodies under conditions on the thread's position (`t < k`,
// `t % 32 >= k`, `c + t <= k`, ...), which the CPU backend runs as ranges of its thread loops rather
// than as per-thread branches: every program also runs on the CPU backend and must give the
// interpreter's result. VANTAGE_POSITIONS_RUNS and VANTAGE_POSITIONS_FIRST set the seeds (default
// 0 to 59).
TEST(RandomPrograms, ConditionsOnThePositionGiveTheInterpretersResultOnTheCpu) {
  int programs = 60, first = 0;
  if (const char* env = std::getenv("VANTAGE_POSITIONS_RUNS")) programs = std::max(1, std::atoi(env));
  if (const char* env = std::getenv("VANTAGE_POSITIONS_FIRST")) first = std::max(0, std::atoi(env));
  Tally t;
  for (int seed = first; seed < first + programs; ++seed) run_seed(seed, t, true);
  run_host(t);
  EXPECT_EQ(t.reported, t.ran);
  std::printf("random runs with conditions on positions: %d programs ran, %d also on the CPU backend, %d rejected\n",
              t.ran, t.on_cpu, t.rejected);
  EXPECT_GE(t.ran, programs * 9 / 10) << t.rejected << " of " << programs << " rejected";
  if (Device::cpu_available()) {
    EXPECT_EQ(t.on_cpu, t.ran);
  }
}

// The same generator with block statements that are scopes with a shared array of their own, or
// calls of functions with one (`scratch_pass`): their bytes are reused by the next such scope or
// call, and the sync pass must place the barrier between the old array's last reads and the new
// one's first stores (`Regression.AScopesSharedArrayOverTheBytesOfAnEndedOneWaitsForItsReads`).
// VANTAGE_SCRATCH_RUNS and VANTAGE_SCRATCH_FIRST set the seeds (default 0 to 59).
TEST(RandomPrograms, SharedMemoryReusedByLaterScopesAndCallsIsWaitedFor) {
  int programs = 60, first = 0;
  if (const char* env = std::getenv("VANTAGE_SCRATCH_RUNS")) programs = std::max(1, std::atoi(env));
  if (const char* env = std::getenv("VANTAGE_SCRATCH_FIRST")) first = std::max(0, std::atoi(env));
  Tally t;
  for (int seed = first; seed < first + programs; ++seed) run_seed(seed, t, false, true);
  run_host(t);
  EXPECT_EQ(t.reported, t.ran);
  std::printf("random runs with scratch scopes: %d programs ran, %d also on the CPU backend, %d rejected\n", t.ran,
              t.on_cpu, t.rejected);
  EXPECT_GE(t.ran, programs * 9 / 10) << t.rejected << " of " << programs << " rejected";
}

// The same generator with loops over shared state (`loop_pass`): `while` loops and step-rule `for`
// loops whose conditions read shared counters their bodies write (by every thread through a
// partition, or by one through a claim), `for` loops whose bound or step is read from shared memory
// the body writes, loops nested in each other, and loops of atomics on a shared array, which thread
// bodies also add to. A barrier missing between the body's last write and the next reading of the
// condition (issue 33's kernel) is a racecheck finding here, and on a GPU threads that leave the
// loop apart. VANTAGE_LOOPS_RUNS and VANTAGE_LOOPS_FIRST set the seeds (default 0 to 99).
TEST(RandomPrograms, LoopsOverSharedStateRunCleanAndAlike) {
#ifdef VANTAGE_TEST_SANITIZED
  int programs = 40, first = 0;
#else
  int programs = 100, first = 0;
#endif
  if (const char* env = std::getenv("VANTAGE_LOOPS_RUNS")) programs = std::max(1, std::atoi(env));
  if (const char* env = std::getenv("VANTAGE_LOOPS_FIRST")) first = std::max(0, std::atoi(env));
  Tally t;
  for (int seed = first; seed < first + programs; ++seed) run_seed(seed, t, false, false, true);
  run_host(t);
  EXPECT_EQ(t.reported, t.ran);
  std::printf(
      "random runs with loops over shared state: %d programs ran (%lld thread-statements), %d also on the "
      "CPU backend, %zu on host threads, %d rejected\n",
      t.ran, static_cast<long long>(t.statements), t.on_cpu, t.host.size(), t.rejected);
  EXPECT_GE(t.ran, programs * 9 / 10) << t.rejected << " of " << programs << " rejected";
}

}  // namespace
}  // namespace vantage
