// The reference interpreter's machine, shared by the files that define it: interp.cpp (blocks,
// threads and statements), memory.cpp (values, variables, memory and its checks), eval.cpp
// (expressions; values.cpp: their operations), intrinsics.cpp (lane exchanges, atomics, cp.async, mma and the other
// intrinsics), and the Measurement's measure.cpp (counting requests and branches as they run). Private to jit/interp.
#pragma once

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <random>
#include <string>
#include <tuple>
#include <unordered_map>
#include <vector>

#include "jit/interp/fibers.h"
#include "jit/interp/interp.h"
#include "jit/ir/collective.h"
#include "jit/ir/eval.h"
#include "jit/ir/holds.h"
#include "jit/ir/intrinsics.h"
#include "jit/ir/range.h"
#include "jit/ir/request_cost.h"
#include "jit/ir/visit.h"
#include "support/float16.h"
#include "support/float8.h"

namespace vantage::interp::detail {

using namespace ir;

// ------------------------------------------------------------------ scalar values
struct V {
  std::int64_t i = 0;
  double f = 0;
};

/// A float value rounded to what type `t` holds.
double round_to(ScalarType t, double x);
/// A 16-bit float's bits as the value the interpreter holds.
double from_16bit(ScalarType t, std::uint16_t bits);

/// Float to integer: truncate toward zero, saturate, NaN gives 0 (PTX cvt.rzi).
std::int64_t float_to_int(double x, ScalarType to);

/// An index of type `t` as the exact number it stands for (past INT64_MAX: INT64_MAX).
std::int64_t exact_index(ScalarType t, std::int64_t v);
/// docs/semantics.md's operations on values.
V binary_value(const Binary& n, V a, V b);
/// An integer operation of type t on operands held as eval_binary holds them: eval_binary's result.
std::int64_t int_binary(BinOp op, ScalarType t, std::int64_t a, std::int64_t b);
V cast_value(ScalarType from, ScalarType to, V a);
/// `x` holds the call's arguments' values, n.args.size() of them.
V math_value(const MathCall& n, const V* x);
/// What an atomic of `kind` leaves in an element of type `e` that held `old` (Load aside).
V atomic_value(AtomicKind kind, ScalarType e, V old, V x, V compare);

// ------------------------------------------------------------------ memory
/// How an access is made: plainly, by an atomic of the device's (or the system's) scope, or by one of
/// the block's scope, which excludes only the same block's atomics.
inline constexpr std::uint8_t kPlain = 0, kAtomic = 1, kBlockAtomic = 2;
/// What holds an element in flight (Region::inflight, in Access::atomic's place): a cp.async or a
/// wgmma that will write it, or a TMA store that may still read it.
inline constexpr std::uint8_t kCopyWrite = 0, kWgmmaWrite = 1, kStoreRead = 2;
/// One access, 16 bytes: shadows hold one or more per element, and every checked access reads them.
struct Access {
  std::int32_t block = -1;
  std::uint16_t thread = 0;  ///< a block has at most 1024 threads
  std::uint8_t atomic = kPlain;
  std::uint32_t clock = 0;
  std::uint32_t site = 0;  ///< its line: Checks::loc(site)
};
/// An element's racecheck and initcheck state, 24 bytes (an element of 4 bytes had a 64-byte line of
/// its own, and the wgmma and GEMM sweeps waited on those lines more than on anything else).
struct Shadow {
  Access write;
  std::uint32_t reads = 0;  ///< its reads since that write: Region::reads[reads - 1], or none (0)
  bool init = false;
};
struct Region {
  std::string name;
  ScalarType elem = ScalarType::F32;
  MemSpace space = MemSpace::Global;
  unsigned char* data = nullptr;
  std::int64_t length = 0;  ///< elements that may be touched
  bool track = true;        ///< racecheck (off for memory nothing writes)
  bool initcheck = false;
  std::vector<unsigned char> own;  ///< storage of shared and local arrays
  std::vector<Shadow> shadow;
  /// The reads of elements since their last write, a list for each element that has some; a write
  /// empties its element's list and leaves it to the next element read (`spare`).
  std::vector<std::vector<Access>> reads;
  std::vector<std::uint32_t> spare;
  /// The first read of each element before any write to it (initcheck, reported when the block
  /// ends, the lowest element first): rare, so kept apart from the shadow.
  std::map<std::int64_t, Access> uninit;
  /// Elements a cp.async or wgmma will write when its thread waits for it (until then nobody may
  /// touch them), or a TMA store may still read (nobody may write them).
  std::unordered_map<std::int64_t, Access> inflight;
  std::int64_t at = 0;            ///< shared: its first byte in the block's shared memory
  std::vector<Region*> reused;    ///< shared: the block's other arrays over some of the same bytes
  const MemNode* node = nullptr;  ///< shared: the allocation, and the base of its call's shared memory
  std::int64_t base = 0;
};
struct Ref {
  Region* region = nullptr;
  std::int64_t offset = 0;
};

/// Dense indices 0, 1, 2... for the variables or memories a run meets, in the order it meets them,
/// so that a thread's values are a vector indexed by them. A node is found by its id (its order of
/// creation in its builder) in a table checked against the node's address, which is a load and a
/// compare; a node whose id another node already holds there (a device function's builder counts
/// from 0 too) is found in a hash map.
template <class Node>
class NodeIndex {
 public:
  [[gnu::always_inline]] int operator()(const Node* n) {
    const auto id = static_cast<std::size_t>(n->id);
    if (n->id >= 0 && id < direct_.size() && direct_[id].node == n) return direct_[id].index;
    return slow(n);
  }

 private:
  [[gnu::noinline]] int slow(const Node* n) {
    auto [it, added] = others_.try_emplace(n, static_cast<int>(others_.size()));
    const auto id = static_cast<std::size_t>(n->id);
    if (n->id >= 0 && id < kDirect) {
      if (id >= direct_.size()) direct_.resize(id + 1);
      if (direct_[id].node == nullptr) direct_[id] = {n, it->second};
    }
    return it->second;
  }
  struct Entry {
    const Node* node = nullptr;
    int index = -1;
  };
  static constexpr std::size_t kDirect = std::size_t{1} << 16;
  std::vector<Entry> direct_;
  std::unordered_map<const Node*, int> others_;  ///< every node met, with its index
};

V load_raw(const Region& r, std::int64_t i);
void store_raw(Region& r, std::int64_t i, V v);

// ------------------------------------------------------------------ threads
/// A cp.async in flight: the source was read when it was issued; the destination is written when
/// its thread waits for it (docs/semantics.md).
struct AsyncCopy {
  Ref dst;
  std::int64_t index = 0;
  std::vector<V> values;
  SourceLoc loc;
  std::int64_t group = -1;  ///< the commit group, -1 while uncommitted
};
/// A wgmma a thread has issued and not yet waited for: it reads its tiles and adds to the
/// accumulators when the thread's wgmma_wait covers its group (docs/semantics.md).
struct WgmmaOp {
  Ref acc, a, b;
  std::int64_t a_first = 0, b_first = 0;  ///< each tile's first element (before the swizzle)
  int n = 0;                              ///< m64nNk16
  std::int64_t group = -1;                ///< its commit group, -1 while uncommitted
  SourceLoc loc;
};
/// A TMA store a thread has issued and not yet waited for: the hardware may still read its source
/// elements (a bulk group each: docs/semantics.md).
struct BulkStore {
  Region* src = nullptr;
  std::vector<std::int64_t> elements;
  SourceLoc loc;
};
/// An mbarrier's state (PTX ISA, mbarrier): arrivals and transaction bytes its current phase still
/// waits for, the phases completed so far, and for racecheck what the threads that completed each
/// parity's last phase had done (their vector clocks, joined).
struct Mbarrier {
  bool init = false;
  std::int64_t count = 0, pending = 0, tx = 0, phases = 0;
  std::vector<std::uint32_t> gathered;
  std::array<std::vector<std::uint32_t>, 2> done;
};
struct Frame {
  std::int64_t tid = 0, bid = 0;  ///< what Builtin reads here
  std::int64_t smem = 0;          ///< where a device function's shared memory starts in the block's
  bool returned = false;
  VarPtr result;
  V value;
};
struct Thread {
  std::int32_t tid = 0;  ///< threadIdx.x
  /// Its block's rank among the blocks that run together (a cluster's; 0 without clusters), and its
  /// place among their threads (rank * T + tid): what vector clocks are indexed by.
  std::int32_t rank = 0, run = 0;
  bool exited = false;
  std::vector<V> vars;
  std::vector<Frame> frames;
  std::vector<Ref> mems;  ///< the memories it has made or been passed, by Machine::mems_ index
  std::unordered_map<const MemNode*, std::unique_ptr<Region>> locals;
  std::vector<AsyncCopy> async;  ///< cp.async copies issued and not yet complete, oldest first
  std::int64_t groups = 0;       ///< cp.async groups committed so far
  std::vector<WgmmaOp> wgmma;    ///< wgmma issued and not yet complete, oldest first
  std::int64_t wgmma_groups = 0;
  std::vector<BulkStore> stores;  ///< TMA stores whose source may still be read, oldest first
  /// A break (1) or continue (2) on its way out of the loop body; the loop clears it.
  std::int8_t jump = 0;
  /// Measuring: where the thread is, as the iteration of each loop around it and each call it is in;
  /// the lanes of a warp at the same place make one request of an access.
  std::vector<std::int64_t> path;
  bool stopped() const { return exited || frames.back().returned || jump != 0; }
  /// Its warp, told apart from the other blocks' warps that run with it.
  std::int64_t warp_key() const { return std::int64_t{rank} * 65536 + tid / 32; }
  /// After a loop's body: true when a break ends the loop (a continue is just cleared).
  bool take_jump() {
    bool brk = jump == 1;
    jump = 0;
    return brk;
  }
};

std::string where(const SourceLoc& l);

/// What the names in a kernel's statements stand for (memory.cpp): its scalar parameters and
/// buffers, the same for every thread, and each thread's variables and the memories it has made or
/// been passed.
class Bindings {
 public:
  V& var(Thread& t, const VarNode* v);
  V read_var(Thread& t, const VarNode* v);
  /// A scalar parameter's value (or a buffer's hidden length), set before the threads start.
  std::optional<V>& param(const VarNode* v);
  void add_buffer(const MemNode* m, Region* r);
  Ref mem(Thread& t, const MemNode* m, SourceLoc l);
  /// What `m` names in this thread from now on (a shared or local array it made, a function's
  /// parameter).
  void bind(Thread& t, const MemNode* m, Ref r);
  /// The kernel's buffer `m`.
  Region* global(const MemNode* m);

 private:
  NodeIndex<VarNode> slots_;              ///< a variable's place in Thread::vars and params_
  NodeIndex<MemNode> mems_;               ///< a memory's place in Thread::mems and globals_
  std::vector<Region*> globals_;          ///< the kernel's buffers (null elsewhere)
  std::vector<std::optional<V>> params_;  ///< the kernel's scalar parameters and buffer lengths
};

/// A block's shared arrays (memory.cpp), each made the first time a thread reaches its allocation
/// (per call of a device function: by the base of the call's shared memory), zeroed, with its place
/// among the block's bytes and the arrays it shares bytes with.
class SharedArrays {
 public:
  void clear() { arrays_.clear(); }
  Region& get(const SharedAlloc& n, std::int64_t base, const std::unordered_map<const MemNode*, std::int64_t>& offsets,
              bool checks);
  template <class F>
  void each(F f) const {
    for (const auto& [key, r] : arrays_) f(*r);
  }
  /// The array that `r` (another block's) is in this block, if a thread of it has reached it.
  Region* same_as(const Region& r) const {
    auto it = arrays_.find({r.node, r.base});
    return it == arrays_.end() ? nullptr : it->second.get();
  }

 private:
  std::map<std::pair<const MemNode*, std::int64_t>, std::unique_ptr<Region>> arrays_;
};
/// Thread t's local array (memory.cpp), made the first time it reaches its allocation.
Region& local_region(Thread& t, const LocalAlloc& n, bool checks);

/// A for loop's bounds as evaluated once (docs/semantics.md): the counter never passes `end`.
struct Loop {
  std::int64_t end = 0, step = 0;
  ScalarType type = ScalarType::I32;
  bool going(std::int64_t v) const { return step > 0 ? v < end : step < 0 && v > end; }
  /// The next value; false when the loop is over (the counter never passes `end`).
  bool advance(std::int64_t& v) const {
    __int128 left = step > 0 ? ir::exact(type, end) - ir::exact(type, v) : ir::exact(type, v) - ir::exact(type, end);
    __int128 by = step > 0 ? step : -static_cast<__int128>(step);
    if (left <= by) {
      v = end;
      return false;
    }
    v = wrap(type, ir::exact(type, v) + (step > 0 ? by : -by));
    return true;
  }
};
// ------------------------------------------------------------------ checks
/// memcheck, racecheck and initcheck of the accesses of the blocks that run together (one block, or
/// a cluster's). Each thread has a vector clock (what it has seen of every other thread of those
/// blocks, by Thread::run), joined where threads meet (barriers, collectives, mbarriers); each
/// element's shadow holds the accesses a later one must be ordered after.
class Checks {
 public:
  Checks(std::int64_t threads, std::int64_t cluster, bool on) : T_(threads), C_(cluster), on_(on) {
    if (threads > 65536) throw InternalError("the interpreter's racecheck keeps a thread's index in 16 bits");
  }
  /// New blocks from `b`: every thread has seen only itself.
  void start_block(std::int64_t b) {
    block_ = b;
    const auto n = static_cast<std::size_t>(T_ * C_);
    seen_.assign(n, nullptr);
    own_.assign(n, 1);
  }
  /// What thread `of` has seen of thread `about` (both Thread::run).
  std::uint32_t clock(std::int64_t of, std::int64_t about) const {
    const auto o = static_cast<std::size_t>(of);
    if (of == about) return own_[o];
    return seen_[o] ? (*seen_[o])[static_cast<std::size_t>(about)] : 0;
  }
  /// The block of t.
  std::int32_t block_of(const Thread& t) const { return static_cast<std::int32_t>(block_ + t.rank); }
  /// The access t makes now, for a shadow.
  Access access(const Thread& t, SourceLoc l, std::uint8_t atomic) {
    return {block_of(t), static_cast<std::uint16_t>(t.tid), atomic, clock(t.run, t.run), site(l)};
  }
  /// The line of an access's site.
  const SourceLoc& loc(const Access& a) const { return sites_[a.site]; }
  /// Every thread in `members` has seen everything any of them did before.
  void join(const std::vector<Thread*>& members);
  /// An mbarrier arrival: what t has done joins `into` (T entries), and t's later accesses are new.
  void release(const Thread& t, std::vector<std::uint32_t>& into);
  /// A wait that saw a phase complete: t has seen what `from` holds.
  void acquire(const Thread& t, const std::vector<std::uint32_t>& from);

  std::string describe(const Thread& t) const;
  static std::string element(const Region& r, std::int64_t i);

  /// The element at `ref + index` after memcheck.
  std::int64_t bounds(const Thread& t, const Ref& ref, std::int64_t index, SourceLoc l, const char* what) const;
  /// An access lowering proved inside its memory, so no backend checks it: the interpreter does,
  /// and an index outside is a wrong proof (a bug in Vantage that the GPU and CPU code would turn
  /// into an access outside the buffer), never the user's error.
  void proven(const Thread& t, const Ref& ref, std::int64_t index, bool writing, SourceLoc l) const;
  /// Element i of r (inside it) read or written by t: races, initialisation, copies in flight.
  /// `record` false: checked against earlier writes, but not kept for later writes to be checked
  /// against (a read another thread records for it: a warp's wgmma operands, recorded by lane 0).
  void read(const Thread& t, Region& r, std::int64_t i, SourceLoc l, std::uint8_t atomic, bool record = true);
  void write(const Thread& t, Region& r, std::int64_t i, SourceLoc l, std::uint8_t atomic);
  /// Whether an atomic access (`atomic`) by this block and the earlier access `a` exclude each other.
  bool exclusive(const Thread& t, const Access& a, std::uint8_t atomic) const {
    return atomic && a.atomic && ((atomic != kBlockAtomic && a.atomic != kBlockAtomic) || a.block == block_of(t));
  }
  /// An element of r read before this block wrote it (initcheck, when the block ends).
  void uninitialised(const Region& r) const;
  /// Element i of r (inside it) is the destination of t's cp.async (or of its wgmma), off limits
  /// until t waits for it; or (kStoreRead) the source of t's TMA store, not to be written until then.
  void in_flight(const Thread& t, Region& r, std::int64_t i, SourceLoc l, std::uint8_t kind = kCopyWrite) {
    check_inflight(t, r, i, kind != kStoreRead, l);
    r.inflight[i] = access(t, l, kind);
  }
  /// synccheck: a collective or barrier some of the threads it covers do not reach.
  [[noreturn]] void diverged(const std::string& what, SourceLoc l, const Thread& missing) const {
    throw ExecutionError("synccheck",
                         what + " at " + where(l) + " is reached by some of the threads it covers but not by " +
                             describe(missing) + " (block " + std::to_string(block_of(missing)) + ")",
                         {l});
  }

 private:
  bool ordered_before(const Access& a, const Thread& t) const;
  /// l's index in sites_: a few lines make most accesses, so a small table keyed by the line's hash
  /// finds it, and a map the others.
  [[gnu::always_inline]] std::uint32_t site(const SourceLoc& l) {
    const auto h =
        (reinterpret_cast<std::uintptr_t>(l.file) >> 4 ^ l.line * 0x9E3779B1u ^ l.column * 0x85EBCA77u) % kSiteCache;
    const Site& c = site_cache_[h];
    if (c.loc.line == l.line && c.loc.column == l.column && c.loc.file == l.file) return c.index;
    return new_site(l, h);
  }
  [[gnu::noinline]] std::uint32_t new_site(const SourceLoc& l, std::size_t h);
  [[noreturn]] void race(const Thread& t, const Region& r, std::int64_t i, bool writing, SourceLoc l,
                         const Access& other, bool other_writes) const {
    throw ExecutionError("racecheck",
                         describe(t) + (writing ? " writes " : " reads ") + element(r, i) + " at " + where(l) +
                             ", which block " + std::to_string(other.block) + " thread " +
                             std::to_string(other.thread) + (other_writes ? " wrote" : " read") + " at " +
                             where(loc(other)) + " with no barrier between them covering both threads",
                         {l, loc(other)});
  }
  /// Element i of shared array r lies over bytes another array of the block held or holds (a scope
  /// that ended, an earlier call): every access of theirs to those bytes must be ordered before this
  /// one as for one element (a read after their reads excepted), or the GPU's threads may see each
  /// other's values. The interpreter keeps the arrays apart, so this is where a barrier the sync
  /// pass left out at the reuse shows.
  void check_reused(const Thread& t, const Region& r, std::int64_t i, bool writing, SourceLoc l) const;
  /// An element a cp.async has not yet written (its thread has not waited for it) is off limits.
  void check_inflight(const Thread& t, const Region& r, std::int64_t i, bool writing, SourceLoc l) const;

  std::int64_t T_, C_, block_ = 0;
  bool on_;
  /// The vector clocks, a row per thread (Thread::run): what it has seen of the others, in a row
  /// that the threads that met at the same barrier share (null: nothing), and its own entry, the
  /// only one that moves without a meeting. A barrier of the whole block is then O(T), not O(T^2),
  /// and a block starts without T^2 entries to clear.
  std::vector<std::shared_ptr<const std::vector<std::uint32_t>>> seen_;
  std::vector<std::uint32_t> own_;
  /// The lines accesses were made at (Access::site), found by site().
  struct Site {
    SourceLoc loc;
    std::uint32_t index = 0;
  };
  static constexpr std::size_t kSiteCache = 256;
  std::vector<SourceLoc> sites_{SourceLoc{}};
  std::array<Site, kSiteCache> site_cache_{};
  std::map<std::tuple<const char*, std::uint32_t, std::uint32_t>, std::uint32_t> site_index_;
};

// ------------------------------------------------------------------ Hopper
/// Hopper's asynchronous instructions in the blocks that run together (one, or a cluster's;
/// hopper.cpp): the mbarriers with their phases and racecheck, TMA loads into the 128-byte swizzle
/// (a multicast's into each block it names), and each thread's wgmma in flight.
class Hopper {
 public:
  explicit Hopper(Checks& checks) : c_(checks) {}
  void start_block(Fibers* fibers) {
    mbarriers_.clear();
    remote_.clear();
    fibers_ = fibers;
  }
  /// At the end of the block: a TMA store t never waited for would read shared memory that is gone.
  void end_thread(const Thread& t) const;
  /// At the end of a cluster's blocks (`threads`, by Thread::run, T a block): each block's shared
  /// memory ends with it, so every access another block made to it (a multicast, an arrival) must
  /// be ordered before some thread of it, or on a GPU the block may exit while the access is on its
  /// way (synccheck; a cluster_sync at the end orders them).
  void end_blocks(const std::vector<Thread>& threads, std::int64_t T) const;
  /// What a TMA load reads: the rows x cols matrix `src` its tensor map covers; for a multicast, the
  /// destination and the mbarriers in each block it writes (by rank).
  struct Source {
    const TensorMapNode* map = nullptr;
    const Region* src = nullptr;
    std::int64_t rows = 0, cols = 0;
    std::vector<std::pair<std::int64_t, std::pair<Ref, Ref>>> blocks;
  };
  /// Whether op is one of Hopper's: mbarriers, TMA, wgmma, setmaxnreg.
  static bool runs(IntrinsicOp op) {
    const auto f = info(op).feature;
    return f == target::Feature::Wgmma || f == target::Feature::Tma || f == target::Feature::Mbarrier ||
           f == target::Feature::MbarrierTry || f == target::Feature::Cluster;
  }
  /// Intrinsic n by thread t, given its memory operands and its arguments' values (and a TMA
  /// load's source).
  void run(const Intrinsic& n, Thread& t, const std::vector<Ref>& mems, const std::vector<std::int64_t>& args,
           const Source& tma);

 private:
  /// The mbarrier `bars[slot]`, its element checked as written (`init`) or accessed atomically.
  Mbarrier& mbarrier(const Thread& t, const Ref& bars, std::int64_t slot, SourceLoc loc, bool init);
  void arrive(const Thread& t, Mbarrier& m, std::int64_t bytes, SourceLoc loc);
  void wait(Thread& t, Mbarrier& m, const Ref& bars, std::int64_t slot, std::int64_t parity, SourceLoc loc);
  void complete_tx(const Thread& t, Mbarrier& m, std::int64_t bytes);
  void complete_phase(Mbarrier& m);
  /// Runs t's wgmma of commit groups below `group`.
  void complete_wgmma(Thread& t, std::int64_t group);
  /// t's TMA store of the box whose first element is (row0, col0) of the matrix tma.map covers, from
  /// `src` at its element `first`, into `dst` (the matrix's root); the source stays in flight.
  void tma_store(Thread& t, const Source& tma, const Ref& src, std::int64_t first, const Ref& dst, std::int64_t row0,
                 std::int64_t col0, SourceLoc loc);
  /// Lets t's TMA stores but the newest `keep` finish reading their sources.
  void complete_stores(Thread& t, std::size_t keep);

  /// An access of t to block `rank`'s shared memory (`what`), for end_blocks: the latest of each
  /// thread to each block, since a thread's clock only grows.
  void remote(const Thread& t, std::int64_t rank, const char* what, SourceLoc loc);
  struct Remote {
    std::uint32_t clock = 0;
    std::int32_t block = 0, thread = 0;
    const char* what = "";
    SourceLoc loc;
  };

  Checks& c_;
  Fibers* fibers_ = nullptr;
  std::map<std::pair<const Region*, std::int64_t>, Mbarrier> mbarriers_;
  std::map<std::pair<std::int64_t, std::int64_t>, Remote> remote_;  ///< by (Thread::run, rank)
};

/// The threads `ts` of the blocks from `block` (`threads`, by Thread::run; T a block) meet at barrier
/// b (interp.cpp): synccheck where one it covers is missing; their clocks joined.
void meet(const ir::Barrier& b, const std::vector<Thread*>& ts, const std::vector<Thread>& threads, Checks& checks,
          std::int64_t T, std::int64_t block);
/// `ref` (t's block's shared array) in the block of rank `rank` of t's cluster, for n
/// (intrinsics.cpp): synccheck where no thread of that block has reached it yet.
Ref peer(const std::vector<SharedArrays>& shared, const Checks& checks, std::int64_t block, const Thread& t,
         const Ref& ref, std::int64_t rank, const Intrinsic& n);

/// A Hopper instruction's memory in the blocks of t's cluster (intrinsics.cpp): a TMA load's
/// destination and mbarriers in each block it writes (tma.blocks), an arrival's in the block it names.
void in_cluster(const std::vector<SharedArrays>& shared, const Checks& checks, std::int64_t block, const Thread& t,
                const Intrinsic& n, std::vector<Ref>& mems, const std::vector<std::int64_t>& args, Hopper::Source& tma);

/// The error of a block none of whose threads can go on (hopper.cpp): the threads, by what they
/// wait for.
std::exception_ptr hang(std::int64_t block, std::int64_t cluster, std::int64_t threads,
                        const std::vector<Fibers::Wait>& waits);

// ------------------------------------------------------------------ measurement
/// The measurement of a launch (Options::measure): each thread notes its accesses and decisions
/// under its place (its path: the iteration of each loop around it, each call it is in). The lanes
/// of a warp at one place make one request, or one evaluation of a condition; a block's are summed
/// when it ends, in the units of the cost report (vantage run --measure).
class Measurement {
 public:
  explicit Measurement(bool on) : on_(on) {}
  bool on() const { return on_; }
  /// A thread's place: into a loop or call, at its iteration k, out of it.
  void enter(Thread& t);
  void at(Thread& t, std::int64_t k);
  void leave(Thread& t);
  /// Element `index` of `ref` (after its checks), `bytes` of it, touched by thread t at access `node`.
  void request(const Thread& t, const void* node, int part, const Ref& ref, std::int64_t index, int bytes, bool write,
               SourceLoc loc);
  /// Thread t evaluated the condition of branch or loop `node` here: `go` for the body.
  void decision(const Thread& t, const void* node, const char* what, SourceLoc loc, bool go);
  /// The block's requests and decisions added to the launch's totals.
  void flush();
  /// The totals as a report of the kernel's launch.
  CostReport report(const std::string& kernel, std::int64_t blocks, std::int64_t threads) const;
  /// Inside a vector copy's scalar rounds, which are not what a GPU runs: nothing counted.
  int quiet = 0;

 private:
  bool counting() const { return on_ && !quiet; }
  /// An access (or branch) of a warp at one place: the path by its hash, kept whole in the value.
  struct Place {
    const void* node;
    int part;
    std::int64_t warp;
    std::uint64_t path;
    bool operator==(const Place&) const = default;
  };
  struct PlaceHash {
    std::size_t operator()(const Place& p) const {
      std::uint64_t h = p.path + reinterpret_cast<std::uintptr_t>(p.node) * 0x9e3779b97f4a7c15ull +
                        static_cast<std::uint64_t>(p.warp * 4 + p.part) * 0xbf58476d1ce4e5b9ull;
      h = (h ^ (h >> 30)) * 0xbf58476d1ce4e5b9ull;  // splitmix64's finish: every bit moves every bit
      h = (h ^ (h >> 27)) * 0x94d049bb133111ebull;
      return static_cast<std::size_t>(h ^ (h >> 31));
    }
  };
  static std::uint64_t path_hash(const std::vector<std::int64_t>& path);
  /// The entry of `map` for thread t at `node` (and `part`) where it is now; two paths of one hash
  /// would be a Vantage bug to hear of.
  template <class Map>
  auto& entry(Map& map, const void* node, int part, const Thread& t) {
    auto [it, fresh] = map.try_emplace(Place{node, part, t.warp_key(), path_hash(t.path)});
    if (fresh)
      it->second.path = t.path;
    else if (it->second.path != t.path)
      throw InternalError("interp: two places of one hash in the measurement");
    return it->second;
  }
  // A block's requests and decisions by place, and the launch's totals by access and branch.
  struct Request {
    std::vector<std::int64_t> path;
    std::array<std::int64_t, kWarpLanes> addr{};
    std::uint32_t mask = 0;
  };
  struct Outcome {
    std::vector<std::int64_t> path;
    int seen = 0;  ///< bit 0: a lane went on; bit 1: a lane did not
  };
  struct Site {
    AccessCost c;
    int order = 0;
    double lanes = 0, metric = 0, ideal = 0;
  };
  struct Branch {
    BranchCost c;
    int order = 0;
  };
  std::unordered_map<Place, Request, PlaceHash> requests_;
  std::unordered_map<Place, Outcome, PlaceHash> outcomes_;
  std::map<std::pair<const void*, int>, Site> sites_;
  std::map<const void*, Branch> branch_totals_;
  int next_order_ = 0;
  bool on_;
};

class Machine {
 public:
  Machine(const lower::Lowered& k, std::int64_t blocks, const std::vector<Arg>& args, const Options& o)
      : k_(k),
        blocks_(blocks),
        opt_(o),
        rng_(o.seed),
        checks_(k.options.threads, std::max<std::int64_t>(k.kernel.cluster, 1), o.checks),
        measure_(o.measure != nullptr) {
    T_ = k.options.threads;
    C_ = std::max<std::int64_t>(k.kernel.cluster, 1);
    if (args.size() != k.user_params)
      throw InternalError("interp: " + std::to_string(args.size()) + " arguments for " + std::to_string(k.user_params) +
                          " parameters");
    std::vector<std::int64_t> lengths;  // each pointer's elements: the hidden length parameters
    for (std::size_t i = 0; i < args.size(); ++i) {
      const ParamNode& p = k.kernel.params[i];
      if (p.var) {
        V v;
        if (is_float(p.var->type))
          v.f = round_to(p.var->type, args[i].f);
        else
          v.i = args[i].i;
        names_.param(p.var.get()) = v;
        continue;
      }
      auto r = std::make_unique<Region>();
      r->name = p.name;
      r->elem = p.mem->elem;
      r->space = MemSpace::Global;
      r->data = static_cast<unsigned char*>(args[i].data);
      r->length = args[i].extent >= 0 ? std::min(args[i].extent, args[i].length) : args[i].length;
      r->track = opt_.checks && !p.mem->is_const;
      if (r->track) r->shadow.resize(static_cast<std::size_t>(r->length));
      names_.add_buffer(p.mem.get(), r.get());
      lengths.push_back(r->length);
      regions_.push_back(std::move(r));
    }
    for (std::size_t i = args.size(), j = 0; i < k.kernel.params.size() && j < lengths.size(); ++i, ++j)
      names_.param(k.kernel.params[i].var.get()) = V{.i = lengths[j]};
  }

  Stats run();

 private:
  // ------------------------------------------------------------ blocks and clocks
  /// Blocks b to b + C_ - 1 (a cluster, or block b alone), their threads together.
  void run_block(std::int64_t b);

  std::vector<Thread*> ordered(std::vector<Thread*> ts);

  // ------------------------------------------------------------ variables and memory

  /// A load's or store's index into `r`: against its `bound` where lowering left one
  /// (what the GPU and CPU code check as they run), else a proof the interpreter verifies.
  void check_index(Thread& t, const Ref& r, std::int64_t index, const ExprPtr& bound, bool writing, SourceLoc l);
  V read(Thread& t, const Ref& ref, std::int64_t index, SourceLoc l, std::uint8_t atomic = kPlain);
  void write(Thread& t, const Ref& ref, std::int64_t index, V v, SourceLoc l, std::uint8_t atomic = kPlain);

  // ------------------------------------------------------------ expressions
  V eval(const ExprPtr& e, Thread& t);

  // ------------------------------------------------------------ one thread
  void exec_one(const StmtPtr& s, Thread& t);

  /// A vector copy runs as the loop it stands for, the program as written (the reads, the writes
  /// and their checks), and each round must copy the vector's element: round k from src[si + k] to
  /// dst[di + k]. Otherwise lowering miscompiled the loop, for every backend, and that is a bug of
  /// Vantage.
  void vector_copy_as_written(const VectorCopy& n, Thread& t, std::int64_t di, std::int64_t si);

  Loop start(const For& n, Thread& t);

  /// Completes the thread's cp.async copies of groups below `group` (all of them when `group` is
  /// INT64_MAX, uncommitted ones included): their destinations are written now, by this thread.
  void complete_async(Thread& t, std::int64_t group);

  /// Throws UnsupportedOnDevice, naming it, for an intrinsic the interpreter does not run.

  void runs_here(const Intrinsic& n);

  void intrinsic_one(const Intrinsic& n, Thread& t);

  /// mbarriers, TMA loads and wgmma for thread t: their operands evaluated, for hopper_.
  void hopper(const Intrinsic& n, Thread& t);

  /// Runs `f(thread)` for each of ts, one after the other; where what they run `may_wait` (in a
  /// kernel that waits on mbarriers), as fibers, so that each may wait for the others.
  template <class F>
  void each_thread(const std::vector<Thread*>& ts, bool may_wait, F&& f);

  // ------------------------------------------------------------ threads in lockstep
  void exec_all(const StmtPtr& s, const std::vector<Thread*>& in);

  /// break and continue are thread(1) code's (the checker's V0212), never in a loop with collectives.
  static void no_jump(const std::vector<Thread*>& ts, SourceLoc l);

  /// The threads of the block that have not exited.
  std::vector<Thread*> live();

  void barrier(const ir::Barrier& b, const std::vector<Thread*>& ts);

  void call(const Call& n, const std::vector<Thread*>& ts);

  void warp_op(const Intrinsic& n, const std::vector<Thread*>& ts);

  /// ldmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16: lane 8m + r gives the address of row r of
  /// matrix m (16 bytes, 16-byte aligned); lane l receives, in register m, the two b16 elements of
  /// row l / 4 of matrix m at columns 2 (l % 4) and 2 (l % 4) + 1.
  void ldmatrix(const Intrinsic& n, const std::vector<Thread*>& lanes);

  /// mma.sync (jit/ir/collective): the fragments read and D written with every check.
  void mma(const Intrinsic& n, const std::vector<Thread*>& lanes);

  const lower::Lowered& k_;
  std::int64_t blocks_, T_ = 0, C_ = 1, block_ = 0;
  Options opt_;
  std::mt19937_64 rng_;
  Stats stats_;
  std::vector<std::unique_ptr<Region>> regions_;
  Bindings names_;
  Collectives collectives_;           ///< which statements run in lockstep
  std::vector<SharedArrays> shared_;  ///< each running block's
  std::vector<Thread> threads_;       ///< the running blocks', by Thread::run
  std::unique_ptr<Fibers> fibers_;    ///< for a kernel that waits on mbarriers
  Checks checks_;
  Hopper hopper_{checks_};
  Measurement measure_;
};

}  // namespace vantage::interp::detail
