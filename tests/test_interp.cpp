// The reference interpreter and the launch API: each bug of issue 8 as a kernel that runs, the four
// checks finding what they exist for (at the user's builder lines), and launches refused before they
// run, naming the parameter.
#include <gtest/gtest.h>

#include <string>
#include <vector>

#include "jit/interp/interp.h"
#include "jit/ir/mutate.h"
#include "jit/ir/visit.h"
#include "jit/pipeline/pipeline.h"
#include "kernels/paper_kernels.hpp"
#include "kernels/runs.hpp"
#include "test_support.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

Device interp(ThreadOrder o = ThreadOrder::Forward) { return Device::interpreter({o, 7, true}); }

// Issue 8: a group(thread(512)) with 256 threads per block spans two blocks; id(thread(1)) inside it
// must count 0..511, not 0..255.
TEST(Interp, UnitWiderThanABlockCountsAcrossBlocks) {
  KernelBuilder k("wide_unit");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return gid + i; },
        [&](Scope& g, View out_t) {
          g.group(thread(512), [&](Scope& w) {
            auto u = w.let("u", w.id(thread(1)));
            w.group(thread(1), [&](Scope&) { out_t[0] = u; });
          });
        });
  });
  Kernel kernel = k.build();
  std::vector<int> got(1024, -1);
  kernel.launch(interp(), Grid{4, 256}, got);
  for (int i = 0; i < 1024; ++i) ASSERT_EQ(got[static_cast<std::size_t>(i)], i % 512) << "thread " << i;
}

/// A block of 128 threads: thread t stores s[t], then s[(t+1) % 128] (another partition hands that
/// element to the next thread), then reads s[t].
Kernel ownership_change() {
  KernelBuilder k("ownership_change");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(128);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        out, block(1), [&](Expr i) { return blk * 128 + i; },
        [&](Scope& g, View out) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<int>("s", 128);
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                s, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = t; }); });
            b.partition(
                s, thread(1), [&](Expr i) { return (t + 1) % 128 + i; },
                [&](Scope& b, View s_n) { b.group(thread(1), [&](Scope&) { s_n[0] = t * 10; }); });
            b.partition(
                out, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[t]; }); });
          });
        });
  });
  return k.build();
}

TEST(Interp, OwnershipChangeBetweenPartitionsGetsItsBarrier) {
  Kernel kernel = ownership_change();
  // One between the two partitions (the second hands s[t] to thread t - 1), one before the read.
  EXPECT_EQ(specialize_for(kernel, Spec{}).barriers, 2);
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
    std::vector<int> got(128, -1);
    kernel.launch(interp(order), Grid{1, 128}, got);
    for (int t = 0; t < 128; ++t) ASSERT_EQ(got[static_cast<std::size_t>(t)], ((t + 127) % 128) * 10) << "thread " << t;
  }
}

/// One thread writes s[0] in a one-thread split branch (a claim); then every thread reads it.
Kernel broadcast() {
  KernelBuilder k("broadcast");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(64);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        out, block(1), [&](Expr i) { return blk * 64 + i; },
        [&](Scope& g, View out) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<int>("s", 1);
            auto t = b.let("t", b.id(thread(1)));
            b.claim(s, thread(1), [&](Scope& b, View s_one) {
              b.split(Level::Thread, {{1, [&](Scope&) { s_one[0] = 42; }}});
            });
            b.partition(
                out, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[0] + t; }); });
          });
        });
  });
  return k.build();
}

TEST(Interp, BroadcastFromOneThreadGetsItsBarrier) {
  Kernel kernel = broadcast();
  EXPECT_EQ(specialize_for(kernel, Spec{}).barriers, 1);
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
    std::vector<int> got(64, -1);
    kernel.launch(interp(order), Grid{1, 64}, got);
    for (int t = 0; t < 64; ++t) ASSERT_EQ(got[static_cast<std::size_t>(t)], 42 + t);
  }
}

/// A partition inside a loop whose shares move with the counter: thread t owns s[(t + r) % 64] in
/// iteration r, which thread t + 1 owned in iteration r - 1. Each iteration needs a barrier before
/// its stores (the sync pass used to take the one textual share as one owner for all iterations,
/// and placed none: two threads wrote one element with nothing between them).
Kernel rotating_shares() {
  KernelBuilder k("rotating_shares");
  auto out = k.param<GlobalPtr<int>>("out", extent(Expr(64)));
  k.block_threads(64);
  k.grid_blocks(1);
  k.body([&](Scope& g) {
    g.partition(
        out, block(1), [&](Expr i) { return i; },
        [&](Scope& g, View out) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<int>("s", 64);
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                s, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = t * 10; }); });
            b.for_("r", 0, 3, [&](Scope& b, Expr r) {
              b.partition(
                  s, thread(1), [&](Expr i) { return (t + r) % 64 + i; },
                  [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = t * 100 + r; }); });
            });
            b.partition(
                out, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[t]; }); });
          });
        });
  });
  return k.build();
}

TEST(Interp, SharesThatMoveBetweenIterationsGetABarrierEachIteration) {
  Kernel kernel = rotating_shares();
  EXPECT_NE(kernel.lowered(Spec{}).find("for r in [0, 3) {\n      barrier block;"), std::string::npos)
      << kernel.lowered(Spec{});
  for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
    std::vector<int> got(64, -1);
    kernel.launch(interp(order), Grid{1, 64}, got);
    // The last iteration wrote element e, through thread e - 2.
    for (int e = 0; e < 64; ++e)
      ASSERT_EQ(got[static_cast<std::size_t>(e)], (e + 62) % 64 * 100 + 2) << "element " << e;
  }
}

/// vec_copy as it was: the 4-element loop guarded only by gid * 4 < n.
Kernel old_vec_copy(int* line) {
  KernelBuilder k("old_vec_copy");
  auto n = k.param<int>("n");
  auto in = k.param<GlobalPtr<const float>>("in", extent(n));
  auto out = k.param<GlobalPtr<float>>("out", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) {
    auto gid = g.let("gid", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return gid * 4 + i; },
        [&](Scope& g, View out_t) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(gid * 4 < n, [&](Scope& th) {
              th.for_("i", 0, 4, [&](Scope&, Expr i) {
                *line = __LINE__ + 1;
                out_t[i] = in[gid * 4 + i];
              });
            });
          });
        });
  });
  return k.build();
}

TEST(Interp, VectorCopyIsNotMadeWithoutABoundsProofAndMemcheckNamesTheLine) {
  int line = 0;
  Kernel kernel = old_vec_copy(&line);
  // No float4 where the vector is not proven inside n.
  EXPECT_EQ(kernel.source(Spec{}).find("float4"), std::string::npos);
  std::vector<float> in(6, 1.0f), out(6, 0.0f);
  const auto& cin = in;
  try {
    kernel.launch(interp(), Grid{1, 256}, 6, cin, out);
    FAIL() << "the read past n was not reported";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "memcheck") << e.what();
    ASSERT_FALSE(e.locs().empty());
    EXPECT_EQ(static_cast<int>(e.locs()[0].line), line) << e.what();
    EXPECT_NE(std::string(e.what()).find("'in'[6]"), std::string::npos) << e.what();
  }
}

TEST(Interp, SgemmSmemIsRightAtSizesThatAreNotMultiplesOfItsTile) {
  for (auto size : std::vector<std::map<std::string, std::int64_t>>{{{"M", 33}, {"N", 31}, {"K", 5}},
                                                                    {{"M", 1}, {"N", 40}, {"K", 33}}}) {
    auto r = examples::run_example("sgemm_smem", size, interp());
    EXPECT_TRUE(r.ok) << r.summary;
  }
}

// ---------------------------------------------------------------- the checks on lowered IR
/// The lowered kernel with its `nth` automatic barrier taken out (or wrapped by `wrap`).
lower::Lowered without_barrier(const Kernel& k, const Spec& spec, int nth,
                               std::function<ir::StmtPtr(const ir::StmtPtr&)> wrap = nullptr) {
  lower::Lowered l = pipeline::lower_for(k, spec).lowered;
  struct Drop : ir::IRMutator {
    int nth, seen = 0;
    std::function<ir::StmtPtr(const ir::StmtPtr&)> wrap;
    using IRMutator::mutate;
    ir::StmtPtr mutate(const ir::StmtPtr& s) override {
      if (s && s->kind == ir::StmtKind::Barrier && seen++ == nth)
        return wrap ? wrap(s) : ir::make<ir::Seq>(std::vector<ir::StmtPtr>{}, s->loc);
      return IRMutator::mutate(s);
    }
  } drop;
  drop.nth = nth;
  drop.wrap = std::move(wrap);
  l.kernel.body = drop.mutate(l.kernel.body);
  EXPECT_EQ(drop.seen > nth, true) << "no barrier " << nth;
  return l;
}

using interp::Arg;

/// Expects a racecheck finding naming two builder lines of the examples' source.
void expect_race(const std::function<void()>& run) {
  try {
    run();
    FAIL() << "the missing barrier went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "racecheck") << e.what();
    ASSERT_EQ(e.locs().size(), 2u) << e.what();
    for (const auto& l : e.locs()) {
      EXPECT_TRUE(l.known()) << e.what();
      EXPECT_NE(std::string(l.file).find("examples/kernels/"), std::string::npos) << e.what();
    }
  }
}

TEST(Interp, RacecheckFindsABarrierRemovedFromBlockReduce) {
  // The library form (its one barrier) and the primitive form (the first of its three).
  for (const Kernel& k : {examples::block_reduce(), examples::block_reduce_primitive()}) {
    auto l = without_barrier(k, Spec{}, 0);
    std::vector<float> x(300, 1.0f), out(2, 0.0f);
    expect_race([&] {
      // Reverse order: the threads that write run before the ones that read what they wrote.
      interp::run(l, 2, {Arg::integer(300), Arg::buffer(x.data(), 300), Arg::buffer(out.data(), 2)},
                  {interp::Order::Reverse});
    });
  }
}

TEST(Interp, RacecheckFindsABarrierRemovedFromSgemmSmem) {
  for (const Kernel& k : {examples::sgemm_smem(), examples::sgemm_smem_primitive()})
    for (int nth : {0, 1}) {
      auto l = without_barrier(k, Spec{}, nth);
      std::vector<float> A(40 * 40, 1.0f), B(40 * 40, 1.0f), C(40 * 40, 0.0f);
      expect_race([&] {
        interp::run(l, 4,
                    {Arg::integer(40), Arg::integer(40), Arg::integer(40), Arg::real(1.0), Arg::real(0.0),
                     Arg::buffer(A.data(), 1600), Arg::buffer(B.data(), 1600), Arg::buffer(C.data(), 1600)},
                    {interp::Order::Reverse});
      });
    }
}

TEST(Interp, SynccheckFindsABarrierReachedByHalfTheBlock) {
  Kernel k = examples::block_reduce();
  auto l = without_barrier(k, Spec{}, 0, [](const ir::StmtPtr& b) {
    using namespace ir;
    auto tid = make<Builtin>(ScalarType::I32, BuiltinKind::ThreadInBlock, b->loc);
    auto cond = make<Binary>(ScalarType::Bool, BinOp::Lt, tid, int_literal(ScalarType::I32, 128, b->loc), b->loc);
    return make<If>(cond, b, nullptr, b->loc);
  });
  std::vector<float> x(256, 1.0f), out(1, 0.0f);
  try {
    interp::run(l, 1, {Arg::integer(256), Arg::buffer(x.data(), 256), Arg::buffer(out.data(), 1)}, {});
    FAIL() << "the divergent barrier went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "synccheck") << e.what();
    EXPECT_NE(std::string(e.what()).find("thread 128"), std::string::npos) << e.what();
  }
}

// Lowering leaves an access it proved in bounds unchecked on the GPU and the CPU backend, so a wrong
// proof is a silent access outside the buffer there. The interpreter checks those accesses too, and
// reports one outside as a bug in Vantage, not as the user's memcheck finding.
TEST(Interp, AnAccessLoweringWronglyProvedIsReportedAsAVantageBug) {
  KernelBuilder k("unproven_store");
  auto n = k.param<int>("n");
  auto out = k.param<GlobalPtr<int>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    g.claim(out, thread(1), [&](Scope& g, View o) { g.split(Level::Thread, {{1, [&](Scope&) { o[n] = 9; }}}); });
  });
  lower::Lowered l = pipeline::lower_for(k.build(), Spec{}).lowered;
  std::vector<int> got(4, 0);
  auto run = [&](int index) { interp::run(l, 1, {Arg::integer(index), Arg::buffer(got.data(), 4)}, {}); };
  // As lowered, the store is checked: the user's memcheck finding.
  try {
    run(4);
    FAIL() << "the store to out[4] went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "memcheck") << e.what();
  }
  // The same store as if lowering had proved it (its bound taken away).
  struct Unbound : ir::IRMutator {
    int stores = 0;
    using IRMutator::mutate;
    ir::StmtPtr mutate(const ir::StmtPtr& s) override {
      if (s && s->kind == ir::StmtKind::Store) {
        const auto& st = static_cast<const ir::Store&>(*s);
        ++stores;
        return ir::make<ir::Store>(st.mem, st.indices, st.value, nullptr, -1, st.loc);
      }
      return IRMutator::mutate(s);
    }
  } unbound;
  l.kernel.body = unbound.mutate(l.kernel.body);
  ASSERT_EQ(unbound.stores, 1);
  run(3);
  EXPECT_EQ(got[3], 9);
  try {
    run(4);
    FAIL() << "the wrongly proved store to out[4] went unnoticed";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("a wrong bounds proof"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("'out'[4]"), std::string::npos) << e.what();
  }
}

// Every backend but the interpreter runs a vector copy as one wide load and store; the interpreter
// runs the loop it stands for, as written, and checks that each round copies the vector's element.
// A vector copy lowering got wrong (here: shifted by one vector) is a bug in Vantage, not a result.
TEST(Interp, AVectorCopyThatIsNotItsLoopIsReportedAsAVantageBug) {
  KernelBuilder k("copies_in_fours");
  auto in = k.param<GlobalPtr<const float>>("in", extent(64));
  auto out = k.param<GlobalPtr<float>>("out", extent(32));
  k.block_threads(8);
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return t * 4 + i; },
        [&](Scope& g, View mine) {
          g.group(thread(1), [&](Scope& th) {
            th.if_(t < 8, [&](Scope& th) { th.for_("e", 0, 4, [&](Scope&, Expr e) { mine[e] = in[t * 4 + e]; }); });
          });
        });
  });
  lower::Lowered l = pipeline::lower_for(k.build(), Spec{}).lowered;
  std::vector<float> xs(64), got(32, 0.0f);
  for (int i = 0; i < 64; ++i) xs[static_cast<std::size_t>(i)] = static_cast<float>(i);
  auto run = [&] { interp::run(l, 1, {Arg::buffer(xs.data(), 64), Arg::buffer(got.data(), 32)}, {}); };
  run();  // as lowered: one vector copy per thread, the same as its loop
  for (int i = 0; i < 32; ++i) EXPECT_EQ(got[static_cast<std::size_t>(i)], static_cast<float>(i));
  struct Shift : ir::IRMutator {
    int copies = 0;
    using IRMutator::mutate;
    ir::StmtPtr mutate(const ir::StmtPtr& s) override {
      if (s && s->kind == ir::StmtKind::VectorCopy) {
        const auto& v = static_cast<const ir::VectorCopy&>(*s);
        ++copies;
        auto later = ir::make<ir::Binary>(v.src_index->type, ir::BinOp::Add, v.src_index,
                                          ir::int_literal(v.src_index->type, 4, v.loc), v.loc);
        return ir::make<ir::VectorCopy>(v.dst, v.dst_index, v.src, later, v.count, v.loc, v.written);
      }
      return IRMutator::mutate(s);
    }
  } shift;
  l.kernel.body = shift.mutate(l.kernel.body);
  ASSERT_EQ(shift.copies, 1) << lower::print(l);
  try {
    run();
    FAIL() << "a vector copy of in[t*4 + 4 ..] for the loop over in[t*4 ..] went unnoticed";
  } catch (const InternalError& e) {
    EXPECT_NE(std::string(e.what()).find("that is not its loop: round 0 copies 'in'[0] to 'out'[0], the vector "
                                         "'in'[4] to 'out'[0]"),
              std::string::npos)
        << e.what();
  }
}

TEST(Interp, InitcheckFindsASharedReadNothingWrote) {
  KernelBuilder k("uninit");
  auto out = k.param<GlobalPtr<float>>("out");
  k.block_threads(32);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        out, block(1), [&](Expr i) { return blk * 32 + i; },
        [&](Scope& g, View out) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<float>("s", 32);
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                out, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[t]; }); });
          });
        });
  });
  std::vector<float> got(32);
  try {
    k.build().launch(interp(), Grid{1, 32}, got);
    FAIL() << "the uninitialised read went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "initcheck") << e.what();
    EXPECT_NE(std::string(e.what()).find("shared 's'[0]"), std::string::npos) << e.what();
  }
}

// Each example's runs, clean in every thread order, on the grid the speed benchmarks and the report
// assume for it (examples::default_grid). Under a sanitizer, which checks memory safety (the same
// code in every order), in the random order alone.
TEST(Interp, EveryExampleRunsCleanUnderEveryThreadOrderOnItsDefaultGrid) {
  std::vector<ThreadOrder> orders{ThreadOrder::Random};
  if (!test_support::kSanitized) orders = {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random};
  for (const auto& ex : examples::all()) {
    const Kernel kernel = ex.build();  // lowered once a size, run in every order
    for (auto order : orders)
      for (const auto& size : test_support::sweep_sizes(examples::default_sizes(ex.name))) {
        auto r = examples::run_kernel(ex.name, kernel, size, interp(order));
        EXPECT_TRUE(r.ok) << r.summary;
        const Grid g = examples::default_grid(ex.name, size);
        EXPECT_EQ(r.report.threads, g.blocks * g.threads) << ex.name << " " << r.summary;
      }
  }
  EXPECT_THROW(examples::default_grid("no_such_example", {}), std::invalid_argument);
}

// ---------------------------------------------------------------- cp.async, ldmatrix, the limit
/// 64 threads copy 4 floats each into shared memory with cp.async, then each thread writes the
/// element its neighbour copied (the sync pass puts a barrier that also waits for the copies).
Kernel async_neighbours(bool explicit_wait, int offset = 0) {
  KernelBuilder k("async_neighbours");
  auto x = k.param<GlobalPtr<const float>>("x", extent(Expr(256 + offset)));
  auto out = k.param<GlobalPtr<float>>("out", extent(Expr(64)));
  k.block_threads(64);
  k.grid_blocks(1);
  k.body([&](Scope& g) {
    g.partition(
        out, block(1), [&](Expr i) { return i; },
        [&](Scope& g, View out) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<float>("s", 256);
            auto t = b.let("t", b.id(thread(1)));
            b.async(s, [&](Scope& b, View s_async) {
              b.partition(
                  s_async, thread(1), [&](Expr i) { return t * 4 + i; },
                  [&](Scope& b, View s_t) {
                    b.group(thread(1), [&](Scope& th) {
                      th.cp_async(s_t, 0, x, t * 4 + offset, 16);
                      th.cp_async_commit();
                      if (explicit_wait) th.cp_async_wait(0);
                    });
                  });
            });
            b.partition(
                out, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[((t + 1) % 64) * 4 + 3]; }); });
          });
        });
  });
  return k.build();
}

TEST(Interp, CpAsyncCompletesAtItsWait) {
  std::vector<float> x(256);
  for (int i = 0; i < 256; ++i) x[static_cast<std::size_t>(i)] = static_cast<float>(i);
  const auto& cx = x;
  for (bool explicit_wait : {true, false})
    for (auto order : {ThreadOrder::Forward, ThreadOrder::Reverse, ThreadOrder::Random}) {
      std::vector<float> out(64, -1.0f);
      async_neighbours(explicit_wait).launch(interp(order), Grid{1, 64}, cx, out);
      for (int t = 0; t < 64; ++t)
        ASSERT_EQ(out[static_cast<std::size_t>(t)], static_cast<float>(((t + 1) % 64) * 4 + 3)) << "thread " << t;
    }
}

TEST(Interp, ReadingACpAsyncDestinationBeforeTheWaitIsReported) {
  // The barrier placed before the read waits for the copies; without that wait the copy is still in
  // flight when the neighbour reads it.
  Kernel k = async_neighbours(false);
  auto l = without_barrier(k, Spec{}, 0, [](const ir::StmtPtr& s) {
    const auto& b = static_cast<const ir::Barrier&>(*s);
    EXPECT_EQ(b.async_wait, ir::kAsyncWaitAll);
    return ir::make<ir::Barrier>(b.over, b.how, b.threads, b.id_base, ir::kNoAsyncWait, b.loc);
  });
  std::vector<float> x(256, 1.0f), out(64, 0.0f);
  try {
    interp::run(l, 1, {Arg::buffer(x.data(), 256), Arg::buffer(out.data(), 64)}, {});
    FAIL() << "the read of an in-flight copy went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "racecheck") << e.what();
    EXPECT_NE(std::string(e.what()).find("has not written yet"), std::string::npos) << e.what();
    ASSERT_EQ(e.locs().size(), 2u);
  }
}

// A 16-byte cp.async needs both addresses 16-byte aligned: on the interpreter a misaligned one is a
// memcheck error naming the line, and the specialization has the launch check the source's address.
TEST(Interp, AMisalignedSixteenByteCpAsyncIsAMemcheckErrorAndTheLaunchChecksTheSource) {
  std::vector<float> x(257, 1.0f), out(64, 0.0f);
  try {
    async_neighbours(true, 1).launch(interp(), Grid{1, 64}, std::as_const(x), out);
    FAIL() << "a copy from x[1] of 16 bytes went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "memcheck") << e.what();
    EXPECT_NE(std::string(e.what()).find("misaligned 16-byte cp.async"), std::string::npos) << e.what();
  }
  Specialized s = specialize_for(async_neighbours(true), Spec{});
  ASSERT_FALSE(s.params.empty());
  EXPECT_EQ(s.params[0].name, "x");
  EXPECT_EQ(s.params[0].alignment, 16);
}

TEST(Interp, LdmatrixGivesEachLaneItsFragment) {
  KernelBuilder k("ldm");
  auto out = k.param<GlobalPtr<unsigned>>("out", extent(Expr(128)));
  k.block_threads(32);
  k.grid_blocks(1);
  k.body([&](Scope& g) {
    g.partition(
        out, block(1), [&](Expr i) { return i; },
        [&](Scope& g, View out) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<unsigned>("s", 128);
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                s, thread(1), [&](Expr i) { return t * 4 + i; },
                [&](Scope& b, View s_t) {
                  b.group(thread(1), [&](Scope& th) {
                    th.for_("i", 0, 4, [&](Scope&, Expr i) { s_t[i] = cast<unsigned>(t * 4 + i) * 65537u + 7u; });
                  });
                });
            b.partition(
                out, thread(1), [&](Expr i) { return t * 4 + i; },
                [&](Scope& b, View o_t) {
                  b.group(warp(), [&](Scope& w) {
                    auto frag = w.local_array("frag", ScalarType::U32, 4, at(thread(1)));
                    auto lane = w.let("lane", w.id(thread(1)));
                    w.ldmatrix(4, frag, s, lane * 4);
                    w.group(thread(1),
                            [&](Scope& th) { th.for_("m", 0, 4, [&](Scope&, Expr m) { o_t[m] = frag[m]; }); });
                  });
                });
          });
        });
  });
  Kernel kernel = k.build();
  std::vector<unsigned> got(128, 0);
  kernel.launch(interp(), Grid{1, 32}, got);
  for (unsigned l = 0; l < 32; ++l)
    for (unsigned m = 0; m < 4; ++m) {
      unsigned elem = (m * 8 + l / 4) * 4 + l % 4;  // row l/4 of matrix m, bytes 4 (l % 4) ..
      ASSERT_EQ(got[l * 4 + m], elem * 65537u + 7u) << "lane " << l << " register " << m;
    }
}

TEST(Interp, ALoopThatNeverEndsStopsAtTheStatementLimit) {
  KernelBuilder k("spin");
  auto out = k.param<GlobalPtr<int>>("out", extent(Expr(32)));
  k.block_threads(32);
  int line = 0;
  k.body([&](Scope& g) {
    auto t = g.let("t", g.id(thread(1)));
    g.partition(
        out, thread(1), [&](Expr i) { return t + i; },
        [&](Scope& g, View o) {
          g.group(thread(1), [&](Scope& th) {
            auto v = th.let("v", 0);
            line = __LINE__ + 1;
            th.while_(v < 10, [&](Scope& th) { th.assign(v, v * 2); });
            o[0] = v;
          });
        });
  });
  std::vector<int> got(32);
  InterpreterOptions o;
  o.max_statements = 100000;
  try {
    k.build().launch(Device::interpreter(o), Grid{1, 32}, got);
    FAIL() << "the endless loop was not stopped";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "limit") << e.what();
    ASSERT_FALSE(e.locs().empty());
    EXPECT_NE(std::string(e.what()).find("max_statements"), std::string::npos) << e.what();
  }
}

// ---------------------------------------------------------------- launch checks
template <class F>
void expect_launch_error(F&& f, const std::string& param, const std::string& words) {
  try {
    f();
    FAIL() << "the launch was not refused";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.param(), param) << e.what();
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(Launch, ARequirementTheArgumentsBreakIsRefusedNamingItsLine) {
  Kernel k = examples::mma_tf32_naive();
  std::vector<float> A(20 * 8, 1.0f), B(8 * 8, 1.0f), C(20 * 8, 0.0f);
  const auto& cA = A;
  const auto& cB = B;
  expect_launch_error([&] { k.launch(interp(), Grid{2, 32}, cA, cB, C, 20, 8, 8); }, "M", "requires");
  try {
    k.launch(interp(), Grid{2, 32}, cA, cB, C, 20, 8, 8);
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("M = 20, N = 8, K = 8"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("paper_kernels.cpp"), std::string::npos) << e.what();
  }
  EXPECT_EQ(C, std::vector<float>(20 * 8, 0.0f)) << "a refused launch ran";
}

TEST(Launch, BadArgumentsAreRefusedNamingTheParameter) {
  Kernel k = examples::saxpy();
  std::vector<float> x(100, 1.0f), y(100, 0.0f), small(10, 0.0f);
  std::vector<double> wrong(100);
  const auto& cx = x;
  const auto& cy = y;
  Device d = interp();
  expect_launch_error([&] { k.launch(d, Grid{1, 256}, 100, 2.0f, cx); }, "", "takes 4 arguments; 3 were given");
  expect_launch_error(
      [&] {
        k.launch(d, Grid{1, 256}, 100, 2.0, cx, y);
      },
      "a", "expected a scalar f32, given a scalar f64");
  expect_launch_error([&] { k.launch(d, Grid{1, 256}, 100, 2.0f, wrong, y); }, "x", "buffer of f64");
  expect_launch_error([&] { k.launch(d, Grid{1, 256}, 100, 2.0f, cx, cy); }, "y", "read-only buffer");
  expect_launch_error([&] { k.launch(d, Grid{1, 256}, 100, 2.0f, cx, small); }, "y", "holds 10");
  expect_launch_error([&] { k.launch(d, Grid{1, 256}, 100, 2.0f, y, y); }, "y", "overlaps the buffer given for 'x'");
  EXPECT_EQ(y, std::vector<float>(100, 0.0f)) << "a refused launch ran";
}

}  // namespace
}  // namespace vantage

namespace vantage {
namespace {
// ---------------------------------------------------------------- shared memory reused
// A shared array lives until the end of the scope that allocated it, and a later scope's array, or
// a later call's, gets the same bytes (jit/ir/shared_layout). The sync pass compared accesses by
// array, so thread t reading A[t + 1] and then storing B[t] over the same bytes got no barrier
// between the two: on a GPU, one warp's store to B can land before another warp's read of A. The
// interpreter kept the arrays apart and saw nothing. Now an access to reused bytes conflicts with
// every pending access of the arrays (or calls) that held them, and the interpreter checks each
// access against theirs (a race there says "shared memory reused").

/// `out[2t] = A[(t + 1) % 64] = 10 (t + 1)`, then in a sibling scope `out[2t + 1] = B[(t + 1) % 64]
/// = 100 (t + 1)`, A and B over the same 256 bytes.
Kernel sibling_scopes() {
  KernelBuilder k("sibling_scopes");
  auto out = k.param<GlobalPtr<int>>("out", extent(256));
  k.block_threads(64);
  k.body([&](Scope& g) {
    lib::for_each_block(g, out, 128, [&](Scope& b, Expr, View ob) {
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          ob, thread(1), [&](Expr i) { return t * 2 + i; },
          [&](Scope& b, View o) {
            for (int scope = 0; scope < 2; ++scope)
              b.group(block(1), [&](Scope& b) {
                View s = b.shared<int>(scope == 0 ? "A" : "B", 64);
                b.partition(
                    s, thread(1), [&](Expr i) { return t + i; },
                    [&](Scope& b, View mine) {
                      b.group(thread(1), [&](Scope&) { mine[0] = t * (scope ? 100 : 10); });
                    });
                b.group(thread(1), [&](Scope&) { o[scope] = s[(t + 1) % 64]; });
              });
          });
    });
  });
  return k.build();
}

/// The same through two device functions, each with a shared array of its own: their regions start
/// at the same byte.
Kernel two_calls() {
  auto rotate = [](const std::string& name) {
    FunctionBuilder f(name);
    f.requires_perspective(block(1));
    f.shared_budget(256);
    auto v = f.param<int>("v");
    auto o = f.param<GlobalPtr<int>>("o");
    f.body([&](Scope& b) {
      View s = b.shared<int>("s_" + name, 64);
      auto t = b.let("t", b.id(thread(1)));
      b.partition(
          s, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = t * v; }); });
      b.partition(
          o, thread(1), [&](Expr i) { return t + i; },
          [&](Scope& b, View mine) { b.group(thread(1), [&](Scope&) { mine[0] = s[(t + 1) % 64]; }); });
    });
    return f.build();
  };
  DeviceFunction first = rotate("first"), second = rotate("second");
  KernelBuilder k("two_calls");
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  auto out2 = k.param<GlobalPtr<int>>("out2", extent(64));
  k.block_threads(64);
  k.shared_budget(1024);
  k.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    // Two buffers: the calls share no argument a barrier would be placed for.
    g.partition(
        out2, block(1), [&](Expr i) { return blk * 64 + i; },
        [&](Scope& g, View o2) {
          g.partition(
              out, block(1), [&](Expr i) { return blk * 64 + i; },
              [&](Scope& g, View o1) {
                g.group(block(1), [&](Scope& b) {
                  b.call(first, {Expr(10), o1});
                  b.call(second, {Expr(100), o2});
                });
              });
        });
  });
  return k.build();
}

int syncthreads(const std::string& source) { return test_support::count(source, "__syncthreads()"); }

void expect_reuse_race(const std::function<void()>& run) {
  try {
    run();
    FAIL() << "the missing barrier at the reused shared memory went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "racecheck") << e.what();
    EXPECT_NE(std::string(e.what()).find("shared memory reused"), std::string::npos) << e.what();
  }
}

TEST(Regression, AScopesSharedArrayOverTheBytesOfAnEndedOneWaitsForItsReads) {
  Kernel k = sibling_scopes();
  // A barrier after each scope's stores, and one where B takes A's bytes.
  EXPECT_EQ(syncthreads(k.source(Spec{})), 3) << k.source(Spec{});
  std::vector<int> want(256);
  for (int i = 0; i < 256; ++i) want[static_cast<std::size_t>(i)] = (i % 128 / 2 + 1) % 64 * (i % 2 ? 100 : 10);
  InterpreterOptions reverse;
  reverse.order = ThreadOrder::Reverse;
  std::vector<Device> devices{Device::interpreter(), Device::interpreter(reverse)};
  if (Device::cpu_available()) devices.push_back(Device::cpu(2));
  for (const Device& d : devices) {
    std::vector<int> out(256, -1);
    k.launch(d, Grid{2, 64}, out);
    EXPECT_EQ(out, want) << d.name();
  }
  // Without the barrier at the reuse (the second of three), the interpreter reports the race.
  auto l = without_barrier(k, Spec{}, 1);
  std::vector<int> out(256, -1);
  expect_reuse_race([&] { interp::run(l, 2, {Arg::buffer(out.data(), 256)}, {}); });
}

TEST(Regression, ACallsSharedMemoryOverTheBytesOfAnEarlierCallsWaitsForItsReads) {
  Kernel k = two_calls();
  // One in each function, between its stores and reads, and one between the calls.
  EXPECT_EQ(syncthreads(k.source(Spec{})), 3) << k.source(Spec{});
  std::vector<int> want(64), want2(64);
  for (int t = 0; t < 64; ++t) {
    want[static_cast<std::size_t>(t)] = (t + 1) % 64 * 10;
    want2[static_cast<std::size_t>(t)] = (t + 1) % 64 * 100;
  }
  InterpreterOptions reverse;
  reverse.order = ThreadOrder::Reverse;
  std::vector<Device> devices{Device::interpreter(), Device::interpreter(reverse)};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    std::vector<int> out(64, -1), out2(64, -1);
    k.launch(d, Grid{1, 64}, out, out2);
    EXPECT_EQ(out, want) << d.name();
    EXPECT_EQ(out2, want2) << d.name();
  }
  auto l = without_barrier(k, Spec{}, 0);
  std::vector<int> out(64, -1), out2(64, -1);
  expect_reuse_race([&] { interp::run(l, 1, {Arg::buffer(out.data(), 64), Arg::buffer(out2.data(), 64)}, {}); });
}

/// One block of 64 threads, a shared `s` of 64 ints, `tv` the thread, `ob` the block's share of
/// `out` (64 ints): what `body` does with them.
Kernel one_block(const char* name, const std::function<void(Scope& b, View s, Var tv, View ob)>& body) {
  KernelBuilder k(name);
  auto out = k.param<GlobalPtr<int>>("out", extent(64));
  k.block_threads(64);
  k.body([&](Scope& g) {
    g.partition(
        out, block(1), [&](Expr i) { return i; },
        [&](Scope& g, View ob) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<int>("s", 64);
            auto tv = b.let("tv", b.id(thread(1)));
            body(b, s, tv, ob);
          });
        });
  });
  return k.build();
}

/// `barriers` __syncthreads() in the CUDA, and out[t] = want(t) on every backend, both thread orders.
void expect_runs(const Kernel& kernel, int barriers, const std::function<int(int)>& want) {
  EXPECT_EQ(syncthreads(kernel.source(Spec{})), barriers) << kernel.source(Spec{});
  std::vector<int> w(64);
  for (int t = 0; t < 64; ++t) w[static_cast<std::size_t>(t)] = want(t);
  InterpreterOptions reverse;
  reverse.order = ThreadOrder::Reverse;
  std::vector<Device> devices{Device::interpreter(), Device::interpreter(reverse)};
  if (Device::cpu_available()) devices.push_back(Device::cpu(1));
  for (const Device& d : devices) {
    std::vector<int> o(64, -1);
    kernel.launch(d, Grid{1, 64}, o);
    EXPECT_EQ(o, w) << d.name();
  }
}

// `id(thread(1))` written inline means the thread of the block outside a group of warps and the lane
// inside it: the same text, another number. Thread t stores s[id] (its own element) and then, in a
// warp group, reads s[id], the element of lane t % 32, which thread t % 32 stored. Taken as the
// thread's own element, the read would need no barrier; seen from outside, a group's indices that
// hold ids compare with nothing, and the barrier is placed (docs/sync.md, `inner_ids`).
TEST(Sync, AnIdWrittenInlineInsideAGroupOfWarpsIsNotTheIndexItIsOutside) {
  Kernel k = one_block("inner_ids", [](Scope& b, View s, Var tv, View ob) {
    b.partition(
        s, thread(1), [&](Expr i) { return b.id(thread(1)) + i; },
        [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = tv * 3; }); });
    b.partition(
        ob, thread(1), [&](Expr i) { return tv + i; },
        [&](Scope& b, View o_t) {
          b.group(warp(), [&](Scope& w) {
            auto v = w.let("v", s[w.id(thread(1))], at(thread(1)));  // the lane's element
            w.group(thread(1), [&](Scope&) { o_t[0] = v; });
          });
        });
  });
  expect_runs(k, 1, [](int t) { return t % 32 * 3; });
}

// A thread reads back "its own" element only if one partition handed it out. In a group of warps,
// lane l stores s[w * 32 + l] through one partition and s[w * 32 + 31 - l] through another; seen
// from outside the group, the read of s[w * 32 + l] that follows has the text of a store's index,
// but lane 31 - l stored there last. Two shares in the group's stores: not the thread's own, and the
// barrier is placed (docs/sync.md, `one_share`).
TEST(Sync, AThreadsOwnElementComesFromOnePartitionShare) {
  Kernel k = one_block("one_share", [](Scope& b, View s, Var tv, View ob) {
    auto wv = b.let("wv", b.id(warp()));
    auto lane = b.let("lane", tv % 32);
    b.partition(
        s, warp(), [&](Expr i) { return wv * 32 + i; },
        [&](Scope& b, View s_w) {
          b.group(warp(), [&](Scope& w) {
            w.partition(
                s_w, thread(1), [&](Expr i) { return lane + i; },
                [&](Scope& w, View a) { w.group(thread(1), [&](Scope&) { a[0] = tv * 3; }); });
            w.partition(
                s_w, thread(1), [&](Expr i) { return 31 - lane + i; },
                [&](Scope& w, View a) { w.group(thread(1), [&](Scope&) { a[0] = tv * 5; }); });
          });
        });
    b.partition(
        ob, thread(1), [&](Expr i) { return tv + i; },
        [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[wv * 32 + lane]; }); });
  });
  expect_runs(k, 1, [](int t) { return (t / 32 * 32 + 31 - t % 32) * 5; });
}

// Issue 33: a block-level `while` whose condition reads s[0], which thread 0 increments in the body
// (each thread its own element). The condition is read again after every iteration: without a
// barrier at the end of the body, thread 1 can read s[0] before thread 0's store, and on a GPU the
// threads then leave the loop apart and wait at barriers the others never reach. The barrier is at
// the end of the body, one per iteration besides the one the body's store needs after the read.
Kernel counting_while() {
  return one_block("counting_while", [](Scope& b, View s, Var tv, View ob) {
    b.partition(
        s, thread(1), [&](Expr i) { return tv + i; },
        [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = tv % 4; }); });
    b.while_(s[0] < 10, [&](Scope& b) {
      b.partition(
          s, thread(1), [&](Expr i) { return tv + i; },
          [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = s_t[0] + 1; }); });
    });
    b.partition(
        ob, thread(1), [&](Expr i) { return tv + i; },
        [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[tv]; }); });
  });
}

TEST(Sync, AWhileWhoseConditionReadsWhatItsBodyWroteWaitsBeforeReadingItAgain) {
  Kernel k = counting_while();
  std::string src = k.source(Spec{});
  EXPECT_NE(src.find("    __syncthreads();\n  }\n"), std::string::npos) << "a barrier at the end of the body:\n" << src;
  // Ten iterations: every thread's element grows by ten.
  expect_runs(k, 3, [](int t) { return t % 4 + 10; });
  for (std::uint64_t seed : {1, 2, 3}) {
    std::vector<int> o(64, -1);
    k.launch(Device::interpreter({ThreadOrder::Random, seed, true}), Grid{1, 64}, o);
    EXPECT_EQ(o[63], 13) << "seed " << seed;
  }
  // The one at the end is the one that orders thread 0's store before the others' next reading.
  auto l = without_barrier(k, Spec{}, 2);
  std::vector<int> out(64, -1);
  try {
    interp::run(l, 1, {Arg::buffer(out.data(), 64)}, {});
    FAIL() << "the missing barrier went unnoticed";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "racecheck") << e.what();
    EXPECT_NE(std::string(e.what()).find("reads shared 's'[0]"), std::string::npos) << e.what();
  }
}

// The same through a `for_` with a step rule, which is a `while` on its condition, and through a
// `for_` whose bound is read from shared memory the body writes (read once, before the loop: the
// store in the body waits for the threads' reading of the bound, and nothing waits at the end).
TEST(Sync, LoopsWhoseConditionOrBoundReadsSharedMemoryTheyWriteAreOrdered) {
  Kernel tripling = one_block("tripling", [](Scope& b, View s, Var tv, View ob) {
    b.partition(
        s, thread(1), [&](Expr i) { return tv + i; },
        [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = 1; }); });
    b.for_(
        "q", 0, [&](Expr) { return s[0] < 100; }, [](Expr q) { return q + 1; },
        [&](Scope& b, Expr) {
          b.partition(
              s, thread(1), [&](Expr i) { return tv + i; },
              [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = s_t[0] * 3; }); });
        });
    b.partition(
        ob, thread(1), [&](Expr i) { return tv + i; },
        [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[tv]; }); });
  });
  expect_runs(tripling, 3, [](int) { return 243; });
  Kernel bounded = one_block("bounded", [](Scope& b, View s, Var tv, View ob) {
    b.partition(
        s, thread(1), [&](Expr i) { return tv + i; },
        [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = 3; }); });
    b.for_("r", 0, s[0], [&](Scope& b, Expr) {
      b.partition(
          s, thread(1), [&](Expr i) { return tv + i; },
          [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = s_t[0] + 1; }); });
    });
    b.partition(
        ob, thread(1), [&](Expr i) { return tv + i; },
        [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[tv]; }); });
  });
  expect_runs(bounded, 2, [](int) { return 6; });
}

}  // namespace
}  // namespace vantage
