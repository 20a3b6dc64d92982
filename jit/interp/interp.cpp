// Vantage reference interpreter: see interp.h.
#include "jit/interp/interp.h"

#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstring>
#include <deque>
#include <map>
#include <random>
#include <unordered_map>

#include "jit/ir/collective.h"
#include "jit/ir/eval.h"
#include "jit/ir/range.h"
#include "jit/ir/request_cost.h"
#include "jit/ir/visit.h"
#include "support/float16.h"

namespace vantage::interp {
namespace {

using namespace ir;

// ------------------------------------------------------------------ scalar values
struct V {
  std::int64_t i = 0;
  double f = 0;
};

/// A float value rounded to what type `t` holds.
double round_to(ScalarType t, double x) {
  switch (t) {
    case ScalarType::F32: return static_cast<float>(x);
    case ScalarType::F16: return float16::half_to_float(float16::float_to_half(static_cast<float>(x)));
    case ScalarType::BF16: return float16::bf16_to_float(float16::float_to_bf16(static_cast<float>(x)));
    default: return x;
  }
}
bool integral(ScalarType t) { return is_integer(t) || t == ScalarType::Bool; }
/// A 16-bit float's bits as the value the interpreter holds.
double from_16bit(ScalarType t, std::uint16_t bits) {
  return t == ScalarType::F16 ? float16::half_to_float(bits) : float16::bf16_to_float(bits);
}

/// Float to integer: truncate toward zero, saturate, NaN gives 0 (PTX cvt.rzi).
std::int64_t float_to_int(double x, ScalarType to) {
  if (x != x) return 0;
  Range r = Range::of(to);
  double t = std::trunc(x);
  if (t <= static_cast<double>(r.lo)) return wrap(to, r.lo);
  if (t >= static_cast<double>(r.hi)) return wrap(to, r.hi);
  return wrap(to, static_cast<__int128>(t));
}

// ------------------------------------------------------------------ memory
struct Access {
  std::int32_t block = -1, thread = -1;
  std::uint32_t clock = 0;
  SourceLoc loc;
  bool atomic = false;
};
struct Shadow {
  Access write;
  std::vector<Access> reads;
  Access uninit;  ///< the first read before any write (initcheck, reported when the block ends)
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
  /// Elements a cp.async will write when its thread waits for it: until then nobody may touch them.
  std::unordered_map<std::int64_t, Access> inflight;
  std::int64_t at = 0;          ///< shared: its first byte in the block's shared memory
  std::vector<Region*> reused;  ///< shared: the block's other arrays over some of the same bytes
};
struct Ref {
  Region* region = nullptr;
  std::int64_t offset = 0;
};

V load_raw(const Region& r, std::int64_t i) {
  const unsigned char* p = r.data + i * type_bytes(r.elem);
  V v;
  switch (r.elem) {
    case ScalarType::Bool: v.i = *p != 0; break;
    case ScalarType::I32: {
      std::int32_t x;
      std::memcpy(&x, p, 4);
      v.i = x;
      break;
    }
    case ScalarType::U32: {
      std::uint32_t x;
      std::memcpy(&x, p, 4);
      v.i = x;
      break;
    }
    case ScalarType::I64:
    case ScalarType::U64: std::memcpy(&v.i, p, 8); break;
    case ScalarType::F16:
    case ScalarType::BF16: {
      std::uint16_t x;
      std::memcpy(&x, p, 2);
      v.f = r.elem == ScalarType::F16 ? float16::half_to_float(x) : float16::bf16_to_float(x);
      break;
    }
    case ScalarType::F32: {
      float x;
      std::memcpy(&x, p, 4);
      v.f = x;
      break;
    }
    case ScalarType::F64: std::memcpy(&v.f, p, 8); break;
  }
  return v;
}
void store_raw(Region& r, std::int64_t i, V v) {
  unsigned char* p = r.data + i * type_bytes(r.elem);
  switch (r.elem) {
    case ScalarType::Bool: *p = v.i != 0; break;
    case ScalarType::I32:
    case ScalarType::U32: {
      auto x = static_cast<std::uint32_t>(v.i);
      std::memcpy(p, &x, 4);
      break;
    }
    case ScalarType::I64:
    case ScalarType::U64: std::memcpy(p, &v.i, 8); break;
    case ScalarType::F16:
    case ScalarType::BF16: {
      std::uint16_t x = r.elem == ScalarType::F16 ? float16::float_to_half(static_cast<float>(v.f))
                                                  : float16::float_to_bf16(static_cast<float>(v.f));
      std::memcpy(p, &x, 2);
      break;
    }
    case ScalarType::F32: {
      float x = static_cast<float>(v.f);
      std::memcpy(p, &x, 4);
      break;
    }
    case ScalarType::F64: std::memcpy(p, &v.f, 8); break;
  }
}

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
struct Frame {
  std::int64_t tid = 0, bid = 0;  ///< what Builtin reads here
  std::int64_t smem = 0;          ///< where a device function's shared memory starts in the block's
  bool returned = false;
  VarPtr result;
  V value;
};
struct Thread {
  std::int32_t tid = 0;  ///< threadIdx.x
  bool exited = false;
  std::vector<V> vars;
  std::vector<Frame> frames;
  std::unordered_map<const MemNode*, Ref> mems;
  std::unordered_map<const MemNode*, std::unique_ptr<Region>> locals;
  std::vector<AsyncCopy> async;  ///< cp.async copies issued and not yet complete, oldest first
  std::int64_t groups = 0;       ///< cp.async groups committed so far
  /// A break (1) or continue (2) on its way out of the loop body; the loop clears it.
  std::int8_t jump = 0;
  /// Measuring: where the thread is, as the iteration of each loop around it and each call it is in;
  /// the lanes of a warp at the same place make one request of an access.
  std::vector<std::int64_t> path;
  bool stopped() const { return exited || frames.back().returned || jump != 0; }
  /// After a loop's body: true when a break ends the loop (a continue is just cleared).
  bool take_jump() {
    bool brk = jump == 1;
    jump = 0;
    return brk;
  }
};

std::string where(const SourceLoc& l) { return l.known() ? l.str() : std::string("<unknown line>"); }

class Machine {
 public:
  Machine(const lower::Lowered& k, std::int64_t blocks, const std::vector<Arg>& args, const Options& o)
      : k_(k), blocks_(blocks), opt_(o), rng_(o.seed) {
    T_ = k.options.threads;
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
        params_[p.var.get()] = v;
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
      globals_[p.mem.get()] = r.get();
      lengths.push_back(r->length);
      regions_.push_back(std::move(r));
    }
    for (std::size_t i = args.size(), j = 0; i < k.kernel.params.size() && j < lengths.size(); ++i, ++j)
      params_[k.kernel.params[i].var.get()].i = lengths[j];
  }

  Stats run() {
    for (std::int64_t b = 0; b < blocks_; ++b) run_block(b);
    if (opt_.measure) *opt_.measure = measured();
    return stats_;
  }

 private:
  // ------------------------------------------------------------ blocks and clocks
  void run_block(std::int64_t b) {
    block_ = b;
    shared_.clear();
    threads_.clear();
    threads_.resize(static_cast<std::size_t>(T_));
    clocks_.assign(static_cast<std::size_t>(T_ * T_), 0);
    std::vector<Thread*> all;
    for (std::int64_t t = 0; t < T_; ++t) {
      Thread& th = threads_[static_cast<std::size_t>(t)];
      th.tid = static_cast<std::int32_t>(t);
      th.frames.push_back(Frame{t, b, 0, false, nullptr, {}});
      clock(t, t) = 1;
      all.push_back(&th);
    }
    exec_all(k_.kernel.body, all);
    flush_requests();
    for (const auto& [key, r] : shared_) uninitialised(*r);
    for (auto& t : threads_)
      for (const auto& [m, r] : t.locals) uninitialised(*r);
  }
  void uninitialised(const Region& r) {
    for (std::size_t i = 0; i < r.shadow.size(); ++i) {
      const Access& a = r.shadow[i].uninit;
      if (a.block < 0) continue;
      throw ExecutionError("initcheck",
                           "block " + std::to_string(a.block) + " thread " + std::to_string(a.thread) + " reads " +
                               element(r, static_cast<std::int64_t>(i)) + " at " + where(a.loc) +
                               ", which nothing in this block wrote before",
                           {a.loc});
    }
  }
  std::uint32_t& clock(std::int64_t of, std::int64_t about) {
    return clocks_[static_cast<std::size_t>(of * T_ + about)];
  }
  /// Every thread in `members` has seen everything any of them did before.
  void join(const std::vector<Thread*>& members) {
    if (!opt_.checks) return;
    std::vector<std::uint32_t> m(static_cast<std::size_t>(T_), 0);
    for (const auto* t : members)
      for (std::int64_t u = 0; u < T_; ++u)
        m[static_cast<std::size_t>(u)] = std::max(m[static_cast<std::size_t>(u)], clock(t->tid, u));
    for (const auto* t : members) {
      for (std::int64_t u = 0; u < T_; ++u) clock(t->tid, u) = m[static_cast<std::size_t>(u)];
      ++clock(t->tid, t->tid);
    }
  }

  std::vector<Thread*> ordered(std::vector<Thread*> ts) {
    if (opt_.order == Order::Reverse) std::reverse(ts.begin(), ts.end());
    if (opt_.order == Order::Random) std::shuffle(ts.begin(), ts.end(), rng_);
    return ts;
  }

  // ------------------------------------------------------------ which statements are collective
  bool collective(const StmtPtr& s) {
    if (!s) return false;
    auto it = collective_.find(s.get());
    if (it != collective_.end()) return it->second;
    bool c = false;
    if (s->kind == StmtKind::Barrier) {
      c = true;
    } else if (const auto* n = as<Intrinsic>(*s)) {
      switch (n->op) {
        case IntrinsicOp::ShflXor:
        case IntrinsicOp::ShflDown:
        case IntrinsicOp::ShflUp:
        case IntrinsicOp::ShflIdx:
        case IntrinsicOp::VoteAll:
        case IntrinsicOp::VoteAny:
        case IntrinsicOp::Ballot:
        case IntrinsicOp::MmaSync:
        case IntrinsicOp::Ldmatrix:
        case IntrinsicOp::SyncThreads:
        case IntrinsicOp::SyncWarp:
        case IntrinsicOp::NamedBarrier: c = true; break;
        default: break;
      }
    } else if (const auto* call = as<Call>(*s)) {
      c = collective(call->fn->body);
    } else {
      for_each_child_stmt(*s, [&](const StmtPtr& child) { c = c || collective(child); });
    }
    collective_[s.get()] = c;
    return c;
  }

  // ------------------------------------------------------------ variables and memory
  int slot(const VarNode* v) {
    auto it = slots_.find(v);
    if (it != slots_.end()) return it->second;
    int n = static_cast<int>(slots_.size());
    slots_[v] = n;
    return n;
  }
  V& var(Thread& t, const VarNode* v) {
    int s = slot(v);
    if (static_cast<std::size_t>(s) >= t.vars.size()) t.vars.resize(static_cast<std::size_t>(s) + 16);
    return t.vars[static_cast<std::size_t>(s)];
  }
  V read_var(Thread& t, const VarNode* v) {
    if (auto it = params_.find(v); it != params_.end()) return it->second;
    return var(t, v);
  }
  Ref mem(Thread& t, const MemNode* m, SourceLoc l) {
    if (auto it = t.mems.find(m); it != t.mems.end()) return it->second;
    if (auto it = globals_.find(m); it != globals_.end()) return {it->second, 0};
    throw InternalError("interp: memory '" + m->name + "' used before it exists (" + where(l) + ")");
  }

  std::string describe(const Thread& t) const {
    return "block " + std::to_string(block_) + " thread " + std::to_string(t.tid);
  }
  std::string element(const Region& r, std::int64_t i) const {
    const char* space = r.space == MemSpace::Shared ? "shared" : r.space == MemSpace::Local ? "local" : "global";
    return std::string(space) + " '" + r.name + "'[" + std::to_string(i) + "]";
  }

  /// The element at `ref + index` after memcheck.
  std::int64_t check_bounds(Thread& t, const Ref& ref, std::int64_t index, SourceLoc l, const char* what) {
    std::int64_t i = ref.offset + index;
    if (index < 0 || i < 0 || i >= ref.region->length)
      throw ExecutionError("memcheck",
                           describe(t) + " " + what + " " + element(*ref.region, i) + " at " + where(l) +
                               ", outside its " + std::to_string(ref.region->length) + " elements",
                           {l});
    return i;
  }
  /// An access lowering could not prove inside its memory: index against its bound (what the GPU
  /// and CPU code check as they run).
  void checked(Thread& t, const MemPtr& m, std::int64_t index, std::int64_t bound, bool writing, SourceLoc l) {
    if (index >= 0 && index < bound) return;
    const Region& r = *mem(t, m.get(), l).region;
    throw ExecutionError("memcheck",
                         describe(t) + (writing ? " writes " : " reads ") + element(r, index) + " at " + where(l) +
                             ", outside its " + std::to_string(bound) + " elements",
                         {l});
  }
  /// An access lowering proved inside its memory, so no backend checks it: the interpreter does,
  /// and an index outside is a wrong proof (a bug in Vantage that the GPU and CPU code would turn
  /// into an access outside the buffer), never the user's error.
  void proven(Thread& t, const Ref& ref, std::int64_t index, bool writing, SourceLoc l) {
    std::int64_t i = ref.offset + index;
    if (index >= 0 && i >= 0 && i < ref.region->length) return;
    throw InternalError("lowering proved the " + std::string(writing ? "write to " : "read of ") +
                        element(*ref.region, i) + " at " + where(l) + " inside its " +
                        std::to_string(ref.region->length) + " elements, and left it unchecked; " + describe(t) +
                        " reaches it (a wrong bounds proof, a bug in Vantage)");
  }
  bool ordered_before(const Access& a, const Thread& t) {
    if (a.block != block_) return false;
    if (a.thread == t.tid) return true;
    return clock(t.tid, a.thread) >= a.clock;
  }
  [[noreturn]] void race(const Thread& t, const Region& r, std::int64_t i, bool writing, SourceLoc l,
                         const Access& other, bool other_writes) {
    throw ExecutionError("racecheck",
                         describe(t) + (writing ? " writes " : " reads ") + element(r, i) + " at " + where(l) +
                             ", which block " + std::to_string(other.block) + " thread " +
                             std::to_string(other.thread) + (other_writes ? " wrote" : " read") + " at " +
                             where(other.loc) + " with no barrier between them covering both threads",
                         {l, other.loc});
  }
  /// Element i of shared array r lies over bytes another array of the block held or holds (a scope
  /// that ended, an earlier call): every access of theirs to those bytes must be ordered before this
  /// one as for one element (a read after their reads excepted), or the GPU's threads may see each
  /// other's values. The interpreter keeps the arrays apart, so this is where a barrier the sync
  /// pass left out at the reuse shows.
  void check_reused(const Thread& t, const Region& r, std::int64_t i, bool writing, SourceLoc l) {
    const std::int64_t size = type_bytes(r.elem), lo = r.at + i * size, hi = lo + size;
    for (const Region* q : r.reused) {
      const std::int64_t qs = type_bytes(q->elem);
      if (q->shadow.empty() || hi <= q->at || lo >= q->at + q->length * qs) continue;
      const std::int64_t first = std::max<std::int64_t>(0, (lo - q->at) / qs);
      const std::int64_t last = std::min<std::int64_t>(q->length - 1, (hi - 1 - q->at) / qs);
      for (std::int64_t j = first; j <= last; ++j) {
        const Shadow& s = q->shadow[static_cast<std::size_t>(j)];
        auto reuse_race = [&](const Access& a, bool wrote) {
          throw ExecutionError("racecheck",
                               describe(t) + (writing ? " writes " : " reads ") + element(r, i) + " at " + where(l) +
                                   ", whose bytes are also " + element(*q, j) + ", which block " +
                                   std::to_string(a.block) + " thread " + std::to_string(a.thread) +
                                   (wrote ? " wrote" : " read") + " at " + where(a.loc) +
                                   " with no barrier between them covering both threads (shared memory reused)",
                               {l, a.loc});
        };
        if (s.write.block >= 0 && !ordered_before(s.write, t)) reuse_race(s.write, true);
        if (writing)
          for (const auto& a : s.reads)
            if (!ordered_before(a, t)) reuse_race(a, false);
      }
    }
  }
  /// An element a cp.async has not yet written (its thread has not waited for it) is off limits.
  void check_inflight(const Thread& t, const Region& r, std::int64_t i, bool writing, SourceLoc l) {
    if (r.inflight.empty()) return;
    auto it = r.inflight.find(i);
    if (it == r.inflight.end()) return;
    const Access& a = it->second;
    throw ExecutionError("racecheck",
                         describe(t) + (writing ? " writes " : " reads ") + element(r, i) + " at " + where(l) +
                             ", which the cp.async issued by block " + std::to_string(a.block) + " thread " +
                             std::to_string(a.thread) + " at " + where(a.loc) +
                             " has not written yet (that thread has not waited for it)",
                         {l, a.loc});
  }
  V read(Thread& t, const Ref& ref, std::int64_t index, SourceLoc l, bool atomic = false) {
    std::int64_t i = check_bounds(t, ref, index, l, "reads");
    Region& r = *ref.region;
    check_inflight(t, r, i, false, l);
    if (!r.shadow.empty()) {
      Shadow& s = r.shadow[static_cast<std::size_t>(i)];
      // A read before any write is reported when the block ends, unless another thread's write
      // in the same barrier interval turns it into a race first (the likelier missing barrier).
      if (r.initcheck && !s.init && s.uninit.block < 0)
        s.uninit = {static_cast<std::int32_t>(block_), t.tid, clock(t.tid, t.tid), l, atomic};
      if (r.track) {
        if (s.write.block >= 0 && !ordered_before(s.write, t) && !(atomic && s.write.atomic))
          race(t, r, i, false, l, s.write, true);
        std::erase_if(s.reads, [&](const Access& a) { return a.block == block_ && a.thread == t.tid; });
        s.reads.push_back({static_cast<std::int32_t>(block_), t.tid, clock(t.tid, t.tid), l, atomic});
        if (!r.reused.empty()) check_reused(t, r, i, false, l);
      }
    }
    ++stats_.thread_statements;
    return load_raw(r, i);
  }
  void write(Thread& t, const Ref& ref, std::int64_t index, V v, SourceLoc l, bool atomic = false) {
    std::int64_t i = check_bounds(t, ref, index, l, "writes");
    Region& r = *ref.region;
    check_inflight(t, r, i, true, l);
    if (!r.shadow.empty()) {
      Shadow& s = r.shadow[static_cast<std::size_t>(i)];
      s.init = true;
      if (r.track) {
        if (s.write.block >= 0 && !ordered_before(s.write, t) && !(atomic && s.write.atomic))
          race(t, r, i, true, l, s.write, true);
        for (const auto& a : s.reads)
          if (!ordered_before(a, t) && !(atomic && a.atomic)) race(t, r, i, true, l, a, false);
        s.reads.clear();
        s.write = {static_cast<std::int32_t>(block_), t.tid, clock(t.tid, t.tid), l, atomic};
        if (!r.reused.empty()) check_reused(t, r, i, true, l);
      }
    }
    store_raw(r, i, v);
  }

  // ------------------------------------------------------------ measurement (Options::measure)
  // Each thread notes its accesses and decisions under its place (its path: the iteration of each
  // loop around it, each call it is in). The lanes of a warp at one place make one request, or one
  // evaluation of a condition; a block's are summed when it ends.
  bool measuring() const { return opt_.measure && !quiet_; }
  void enter(Thread& t) {
    if (opt_.measure) t.path.push_back(0);
  }
  void at(Thread& t, std::int64_t k) {
    if (opt_.measure) t.path.back() = k;
  }
  void leave(Thread& t) {
    if (opt_.measure) t.path.pop_back();
  }
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
  static std::uint64_t path_hash(const std::vector<std::int64_t>& path) {
    std::uint64_t h = 0x243f6a8885a308d3ull;
    for (const auto x : path) {
      h = (h ^ static_cast<std::uint64_t>(x)) * 0xbf58476d1ce4e5b9ull;
      h ^= h >> 29;
    }
    return h;
  }
  /// The entry of `map` for thread t at `node` (and `part`) where it is now; two paths of one hash
  /// would be a Vantage bug to hear of.
  template <class Map>
  auto& entry(Map& map, const void* node, int part, const Thread& t) {
    auto [it, fresh] = map.try_emplace(Place{node, part, t.tid / kWarpLanes, path_hash(t.path)});
    if (fresh)
      it->second.path = t.path;
    else if (it->second.path != t.path)
      throw InternalError("interp: two places of one hash in the measurement");
    return it->second;
  }
  /// Element `index` of `ref` (after its checks), `bytes` of it, touched by thread t at access `node`.
  void request(const Thread& t, const void* node, int part, const Ref& ref, std::int64_t index, int bytes, bool write,
               SourceLoc loc) {
    const Region& r = *ref.region;
    if (!measuring() || r.space == MemSpace::Local) return;
    auto [it, fresh] = sites_.try_emplace(std::make_pair(node, part));
    if (fresh) {
      it->second.order = next_order_++;
      AccessCost& c = it->second.c;
      c.loc = loc;
      c.memory = r.name;
      c.space = r.space;
      c.write = write;
      c.bytes = bytes;
    }
    Request& q = entry(requests_, node, part, t);
    const int lane = t.tid % kWarpLanes;
    q.addr[static_cast<std::size_t>(lane)] =
        (r.space == MemSpace::Shared ? r.at : 0) + (ref.offset + index) * type_bytes(r.elem);
    q.mask |= std::uint32_t{1} << lane;
  }
  /// Thread t evaluated the condition of branch or loop `node` here: `go` for the body.
  void decision(const Thread& t, const void* node, const char* what, SourceLoc loc, bool go) {
    if (!measuring()) return;
    auto [it, fresh] = branch_totals_.try_emplace(node);
    if (fresh) {
      it->second.order = next_order_++;
      it->second.c.loc = loc;
      it->second.c.what = what;
    }
    entry(outcomes_, node, 0, t).seen |= go ? 1 : 2;
  }
  void flush_requests() {
    if (!opt_.measure) return;
    for (const auto& [place, q] : requests_) {
      Site& s = sites_.at(std::make_pair(place.node, place.part));
      const RequestCost c = request_cost(q.addr, q.mask, s.c.bytes, s.c.space == MemSpace::Global);
      s.c.requests += 1;
      s.lanes += std::popcount(q.mask);
      s.metric += c.metric;
      s.ideal += c.ideal;
      s.c.conflict_ways = std::max(s.c.conflict_ways, c.ways);
    }
    requests_.clear();
    for (const auto& [place, o] : outcomes_) {
      BranchCost& b = branch_totals_.at(place.node).c;
      ++b.executions;
      if (o.seen == 3) ++b.divergent;  // some lanes went on and some did not
    }
    outcomes_.clear();
  }
  CostReport measured() {
    CostReport r;
    r.kernel = k_.kernel.name;
    r.blocks = blocks_;
    r.threads_per_block = T_;
    r.sampled_blocks = static_cast<int>(std::min<std::int64_t>(blocks_, INT32_MAX));
    r.measured = true;
    std::vector<std::pair<int, AccessCost>> accesses;
    for (auto& [key, s] : sites_) {
      AccessCost c = s.c;
      const double n = static_cast<double>(c.requests);
      if (n > 0) {
        c.lanes = s.lanes / n;
        (c.space == MemSpace::Global ? c.sectors : c.wavefronts) = s.metric / n;
        (c.space == MemSpace::Global ? c.ideal_sectors : c.ideal_wavefronts) = s.ideal / n;
      }
      if (c.space == MemSpace::Global) r.global_bytes += s.metric * 32.0;
      accesses.emplace_back(s.order, std::move(c));
    }
    std::sort(accesses.begin(), accesses.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [order, c] : accesses) r.accesses.push_back(std::move(c));
    std::vector<std::pair<int, BranchCost>> branches;
    for (auto& [node, b] : branch_totals_) branches.emplace_back(b.order, b.c);
    std::sort(branches.begin(), branches.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
    for (auto& [order, b] : branches) r.branches.push_back(std::move(b));
    return r;
  }

  // ------------------------------------------------------------ expressions
  V eval(const ExprPtr& e, Thread& t) {
    return dispatch(*e, Overloaded{
                            [&](const Literal& n) {
                              V v;
                              if (is_float(n.type))
                                v.f = round_to(n.type, n.f);
                              else
                                v.i = n.i;
                              return v;
                            },
                            [&](const VarRef& n) { return read_var(t, n.var.get()); },
                            [&](const Unary& n) {
                              V a = eval(n.a, t), v;
                              if (is_float(n.type))
                                v.f = n.op == UnOp::Neg ? -a.f : a.f;
                              else
                                v.i = eval_unary(n.op, n.type, a.i);
                              return v;
                            },
                            [&](const Binary& n) {
                              // Left operand first (a call's arguments have no order in C++), so that
                              // the access reported is the first the expression makes, on every build.
                              V a = eval(n.a, t), b = eval(n.b, t);
                              return binary(n, a, b);
                            },
                            [&](const Cast& n) { return cast(n.a->type, n.type, eval(n.a, t)); },
                            [&](const Select& n) {
                              V c = eval(n.c, t), a = eval(n.a, t), b = eval(n.b, t);
                              return c.i ? a : b;
                            },
                            [&](const MathCall& n) {
                              std::vector<V> xs;
                              for (const auto& a : n.args) xs.push_back(eval(a, t));
                              return math(n, xs);
                            },
                            [&](const Id&) -> V { throw InternalError("interp: an id() in lowered IR"); },
                            [&](const Builtin& n) {
                              V v;
                              v.i = n.which == BuiltinKind::ThreadInBlock ? t.frames.back().tid
                                    : n.which == BuiltinKind::BlockInGrid ? t.frames.back().bid
                                                                          : blocks_;
                              return v;
                            },
                            [&](const Load& n) {
                              V idx = eval(n.indices[0], t);
                              std::int64_t i = exact(n.indices[0]->type, idx.i);
                              Ref r = mem(t, n.mem.get(), n.loc);
                              if (n.bound)
                                checked(t, n.mem, i, eval(n.bound, t).i, false, n.loc);
                              else
                                proven(t, r, i, false, n.loc);
                              V v = read(t, r, i, n.loc);
                              request(t, &n, 0, r, i, type_bytes(n.mem->elem), false, n.loc);
                              return v;
                            },
                        });
  }
  static std::int64_t exact(ScalarType t, std::int64_t v) {
    __int128 x = ir::exact(t, v);
    return x > INT64_MAX ? INT64_MAX : static_cast<std::int64_t>(x);
  }

  static V binary(const Binary& n, V a, V b) {
    V v;
    ScalarType t = n.a->type;
    if (integral(t)) {
      v.i = eval_binary(n.op, t, a.i, n.op == BinOp::Shl || n.op == BinOp::Shr ? shift_amount(n.b->type, b.i) : b.i);
      return v;
    }
    double x = a.f, y = b.f;
    switch (n.op) {
      case BinOp::Add: v.f = x + y; break;
      case BinOp::Sub: v.f = x - y; break;
      case BinOp::Mul: v.f = x * y; break;
      case BinOp::Div: v.f = x / y; break;
      case BinOp::Mod: v.f = std::fmod(x, y); break;
      case BinOp::Min: v.f = std::fmin(x, y); break;
      case BinOp::Max: v.f = std::fmax(x, y); break;
      case BinOp::Pow: v.f = std::pow(x, y); break;
      case BinOp::Eq: v.i = x == y; return v;
      case BinOp::Ne: v.i = x != y; return v;
      case BinOp::Lt: v.i = x < y; return v;
      case BinOp::Le: v.i = x <= y; return v;
      case BinOp::Gt: v.i = x > y; return v;
      case BinOp::Ge: v.i = x >= y; return v;
      default: throw InternalError("interp: an integer operation on floats");
    }
    v.f = round_to(n.type, v.f);
    return v;
  }
  static V cast(ScalarType from, ScalarType to, V a) {
    V v;
    if (integral(from) && integral(to)) {
      v.i = eval_cast(from, to, a.i);
    } else if (from == ScalarType::F64 && is_16bit_float(to)) {
      v.f = from_16bit(to, float16::f64_to_16bit(a.f, to == ScalarType::BF16));  // one rounding
    } else if (is_float(from) && is_float(to)) {
      v.f = round_to(to, a.f);
    } else if (is_float(from)) {
      v.i = to == ScalarType::Bool ? a.f != 0 : float_to_int(a.f, to);
    } else if (is_16bit_float(to) && from != ScalarType::Bool) {  // one rounding, whatever the size
      v.f = from_16bit(to, float16::int_to_16bit(a.i, !is_signed(from), to == ScalarType::BF16));
    } else if (to == ScalarType::F32 && (from == ScalarType::I64 || from == ScalarType::U64)) {
      // One rounding, as cvt.rn.f32.s64 does (through double would round twice).
      v.f = from == ScalarType::I64 ? static_cast<float>(a.i) : static_cast<float>(static_cast<std::uint64_t>(a.i));
    } else {
      v.f = round_to(to, static_cast<double>(ir::exact(from, a.i)));  // exact in double, then one rounding
    }
    return v;
  }
  static V math(const MathCall& n, const std::vector<V>& x) {
    V v;
    if (is_bit_fn(n.fn)) {
      v.i = eval_bits(n.fn, n.args[0]->type, x[0].i);
      return v;
    }
    if (integral(n.type)) {  // abs: the identity on unsigned types (a u64 from 2^63 is held negative)
      v.i = is_signed(n.type) && x[0].i < 0 ? eval_unary(UnOp::Neg, n.type, x[0].i) : x[0].i;
      return v;
    }
    double a = x[0].f;
    switch (n.fn) {
      case MathFn::Sqrt: v.f = std::sqrt(a); break;
      case MathFn::Rsqrt: v.f = 1.0 / std::sqrt(a); break;
      case MathFn::Exp: v.f = std::exp(a); break;
      case MathFn::Exp2: v.f = std::exp2(a); break;
      case MathFn::Log: v.f = std::log(a); break;
      case MathFn::Log2: v.f = std::log2(a); break;
      case MathFn::Sin: v.f = std::sin(a); break;
      case MathFn::Cos: v.f = std::cos(a); break;
      case MathFn::Tanh: v.f = std::tanh(a); break;
      case MathFn::Abs: v.f = std::fabs(a); break;
      case MathFn::Floor: v.f = std::floor(a); break;
      case MathFn::Ceil: v.f = std::ceil(a); break;
      case MathFn::Fma: v.f = n.type == ScalarType::F64 ? std::fma(a, x[1].f, x[2].f) : a * x[1].f + x[2].f; break;
      case MathFn::Popc:
      case MathFn::Clz:
      case MathFn::Ffs:
      case MathFn::Brev: throw InternalError("interp: a bit function of a float (the checker refuses it)");
    }
    if (n.fn == MathFn::Fma && n.type == ScalarType::F32)
      v.f = std::fmaf(static_cast<float>(a), static_cast<float>(x[1].f), static_cast<float>(x[2].f));
    v.f = round_to(n.type, v.f);
    return v;
  }

  // ------------------------------------------------------------ one thread
  void exec_one(const StmtPtr& s, Thread& t) {
    if (!s || t.stopped()) return;
    if (++stats_.thread_statements > opt_.max_statements)
      throw ExecutionError("limit",
                           "the launch ran more than " + std::to_string(opt_.max_statements) + " thread-statements (" +
                               describe(t) + " is at " + where(s->loc) +
                               "); a loop that never ends? Raise the interpreter's max_statements for a longer run",
                           {s->loc});
    dispatch(*s, Overloaded{
                     [&](const Seq& n) {
                       for (const auto& c : n.stmts) {
                         if (t.stopped()) return;
                         exec_one(c, t);
                       }
                     },
                     [&](const Let& n) { var(t, n.var.get()) = eval(n.value, t); },
                     [&](const Assign& n) { var(t, n.var.get()) = eval(n.value, t); },
                     [&](const Store& n) {
                       V idx = eval(n.indices[0], t);
                       V v = eval(n.value, t);
                       std::int64_t i = exact(n.indices[0]->type, idx.i);
                       Ref r = mem(t, n.mem.get(), n.loc);
                       if (n.bound)
                         checked(t, n.mem, i, eval(n.bound, t).i, true, n.loc);
                       else
                         proven(t, r, i, true, n.loc);
                       write(t, r, i, v, n.loc);
                       request(t, &n, 0, r, i, type_bytes(n.mem->elem), true, n.loc);
                     },
                     [&](const If& n) {
                       const bool c = eval(n.cond, t).i != 0;
                       decision(t, &n, "if", n.loc, c);
                       exec_one(c ? n.then_body : n.else_body, t);
                     },
                     [&](const For& n) {
                       Loop lp = start(n, t);
                       enter(t);
                       bool go = lp.going(var(t, n.var.get()).i);
                       for (std::int64_t k = 0;; ++k) {
                         // Evaluation k of the condition; iteration k runs at the same place.
                         at(t, k);
                         decision(t, &n, "for", n.loc, go);
                         if (!go) break;
                         exec_one(n.body, t);
                         if (t.jump && t.take_jump()) break;
                         if (t.stopped()) break;
                         go = lp.advance(var(t, n.var.get()).i);
                       }
                       leave(t);
                     },
                     [&](const While& n) {
                       enter(t);
                       for (std::int64_t k = 0; !t.stopped(); ++k) {
                         at(t, k);
                         const bool go = eval(n.cond, t).i != 0;
                         decision(t, &n, "while", n.loc, go);
                         if (!go) break;
                         exec_one(n.body, t);
                         if (t.jump && t.take_jump()) break;
                       }
                       leave(t);
                     },
                     [&](const Jump& n) { t.jump = n.is_break ? 1 : 2; },
                     [&](const SharedAlloc& n) { t.mems[n.mem.get()] = shared(t, n); },
                     [&](const LocalAlloc& n) { t.mems[n.mem.get()] = local(t, n); },
                     [&](const Call& n) {
                       std::vector<Thread*> one{&t};
                       call(n, one);
                     },
                     [&](const Intrinsic& n) { intrinsic_one(n, t); },
                     [&](const Unsafe& n) -> void {
                       throw UnsupportedOnDevice("an unsafe block's CUDA text cannot run on the interpreter", {n.loc});
                     },
                     [&](const Return& n) {
                       Frame& f = t.frames.back();
                       if (n.value) f.value = eval(n.value, t);
                       f.returned = true;
                       if (t.frames.size() == 1) t.exited = true;
                     },
                     [&](const VectorCopy& n) {
                       Ref d = mem(t, n.dst.get(), n.loc), s = mem(t, n.src.get(), n.loc);
                       std::int64_t di = exact(n.dst_index->type, eval(n.dst_index, t).i);
                       std::int64_t si = exact(n.src_index->type, eval(n.src_index, t).i);
                       if ((d.offset + di) % n.count != 0 || (s.offset + si) % n.count != 0)
                         throw ExecutionError("memcheck",
                                              describe(t) + " makes a misaligned " + std::to_string(n.count) +
                                                  "-element vector access at " + where(n.loc),
                                              {n.loc});
                       ++quiet_;  // the loop it stands for is not what the GPU runs: the vector is
                       vector_copy_as_written(n, t, di, si);
                       --quiet_;
                       const int bytes = static_cast<int>(n.count * type_bytes(n.src->elem));
                       request(t, &n, 0, s, si, bytes, false, n.loc);
                       request(t, &n, 1, d, di, bytes, true, n.loc);
                     },
                     [&](const ir::Barrier&) { throw InternalError("interp: a barrier outside lockstep"); },
                     [&](const auto& n) -> void {
                       throw InternalError(std::string("interp: ") + name_of(n.kind) + " in lowered IR");
                     },
                 });
  }

  /// A vector copy runs as the loop it stands for, the program as written (the reads, the writes
  /// and their checks), and each round must copy the vector's element: round k from src[si + k] to
  /// dst[di + k]. Otherwise lowering miscompiled the loop, for every backend, and that is a bug of
  /// Vantage.
  void vector_copy_as_written(const VectorCopy& n, Thread& t, std::int64_t di, std::int64_t si) {
    const auto* loop = n.written ? as<For>(*n.written) : nullptr;
    const auto* body = loop ? as<Seq>(*loop->body) : nullptr;
    const auto* st = body && body->stmts.size() == 1 ? as<Store>(*body->stmts[0]) : nullptr;
    const auto* ld = st && st->value ? as<Load>(*st->value) : nullptr;
    if (!ld || st->mem.get() != n.dst.get() || ld->mem.get() != n.src.get())
      throw InternalError("interp: the vector copy at " + where(n.loc) + " does not carry the loop it stands for");
    auto rounds = [&](const std::string& how_many) {
      return InternalError("lowering made a vector copy of " + std::to_string(n.count) + " elements at " +
                           where(n.loc) + " of a loop with " + how_many + " rounds");
    };
    Loop lp = start(*loop, t);
    for (std::int64_t k = 0; k < n.count; ++k) {
      V& counter = var(t, loop->var.get());
      if (!lp.going(counter.i)) throw rounds(std::to_string(k));
      std::int64_t dk = exact(st->indices[0]->type, eval(st->indices[0], t).i);
      std::int64_t sk = exact(ld->indices[0]->type, eval(ld->indices[0], t).i);
      if (dk != di + k || sk != si + k)
        throw InternalError("lowering made a vector copy at " + where(n.loc) + " that is not its loop: round " +
                            std::to_string(k) + " copies '" + n.src->name + "'[" + std::to_string(sk) + "] to '" +
                            n.dst->name + "'[" + std::to_string(dk) + "], the vector '" + n.src->name + "'[" +
                            std::to_string(si + k) + "] to '" + n.dst->name + "'[" + std::to_string(di + k) + "]");
      exec_one(loop->body, t);
      if (!lp.advance(counter.i)) {
        if (k + 1 < n.count) throw rounds(std::to_string(k + 1));
        return;
      }
    }
    if (lp.going(var(t, loop->var.get()).i)) throw rounds("more");
  }

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
  Loop start(const For& n, Thread& t) {
    Loop lp;
    lp.type = n.var->type;
    V b = eval(n.begin, t), e = eval(n.end, t), s = eval(n.step, t);
    lp.end = e.i;
    __int128 st = ir::exact(lp.type, s.i);
    // A u64 step past INT64_MAX takes the loop past any end in one step, as INT64_MAX does.
    lp.step = static_cast<std::int64_t>(st > INT64_MAX ? INT64_MAX : st);
    var(t, n.var.get()).i = b.i;
    return lp;
  }

  Ref shared(Thread& t, const SharedAlloc& n) {
    std::int64_t base = t.frames.back().smem;
    auto key = std::make_pair(n.mem.get(), base);
    auto it = shared_.find(key);
    if (it == shared_.end()) {
      auto r = std::make_unique<Region>();
      r->name = n.mem->name;
      r->elem = n.mem->elem;
      r->space = MemSpace::Shared;
      r->length = const_int(n.count).value_or(0);
      r->own.assign(static_cast<std::size_t>(r->length * type_bytes(r->elem)), 0);
      r->data = r->own.data();
      r->track = opt_.checks;
      r->initcheck = opt_.checks;
      r->shadow.resize(static_cast<std::size_t>(r->length));
      // Arrays of scopes that ended, and earlier calls' arrays, leave their bytes to later ones
      // (jit/ir/shared_layout): an access here must also be ordered after theirs (check_reused).
      if (auto o = k_.shared_offsets.find(n.mem.get()); o != k_.shared_offsets.end()) {
        r->at = base + o->second;
        const std::int64_t end = r->at + r->length * type_bytes(r->elem);
        for (auto& [other_key, q] : shared_)
          if (r->at < q->at + q->length * type_bytes(q->elem) && q->at < end) {
            r->reused.push_back(q.get());
            q->reused.push_back(r.get());
          }
      }
      it = shared_.emplace(key, std::move(r)).first;
    }
    return {it->second.get(), 0};
  }
  Ref local(Thread& t, const LocalAlloc& n) {
    auto& slot = t.locals[n.mem.get()];
    if (!slot) {
      slot = std::make_unique<Region>();
      slot->name = n.mem->name;
      slot->elem = n.mem->elem;
      slot->space = MemSpace::Local;
      slot->length = n.count;
      slot->own.assign(static_cast<std::size_t>(n.count * type_bytes(n.mem->elem)), 0);
      slot->data = slot->own.data();
      slot->track = false;
      slot->initcheck = opt_.checks;
      slot->shadow.resize(static_cast<std::size_t>(n.count));
    }
    return {slot.get(), 0};
  }

  /// Completes the thread's cp.async copies of groups below `group` (all of them when `group` is
  /// INT64_MAX, uncommitted ones included): their destinations are written now, by this thread.
  void complete_async(Thread& t, std::int64_t group) {
    std::vector<AsyncCopy> left;
    for (auto& c : t.async) {
      bool done = group == INT64_MAX || (c.group >= 0 && c.group < group);
      if (!done) {
        left.push_back(std::move(c));
        continue;
      }
      for (std::size_t k = 0; k < c.values.size(); ++k) {
        std::int64_t i = c.dst.offset + c.index + static_cast<std::int64_t>(k);
        c.dst.region->inflight.erase(i);
        write(t, c.dst, c.index + static_cast<std::int64_t>(k), c.values[k], c.loc);
      }
    }
    t.async = std::move(left);
  }

  void intrinsic_one(const Intrinsic& n, Thread& t) {
    switch (n.op) {
      case IntrinsicOp::Atomic: {
        Ref r = mem(t, n.mems[0].get(), n.loc);
        std::int64_t i = exact(n.args[0]->type, eval(n.args[0], t).i);
        if (n.args.size() < 3) proven(t, r, i, true, n.loc);  // a third argument is the bound it is checked against
        V x = eval(n.args[1], t);
        V old = read(t, r, i, n.loc, true);
        V nv = old;
        ScalarType e = n.mems[0]->elem;
        bool fl = is_float(e);
        switch (static_cast<AtomicKind>(n.imms[0])) {
          case AtomicKind::Add:
            if (fl)
              nv.f = round_to(e, old.f + x.f);
            else
              nv.i = eval_binary(BinOp::Add, e, old.i, x.i);
            break;
          case AtomicKind::Min:
            if (fl)
              nv.f = std::fmin(old.f, x.f);
            else
              nv.i = eval_binary(BinOp::Min, e, old.i, x.i);
            break;
          case AtomicKind::Max:
            if (fl)
              nv.f = std::fmax(old.f, x.f);
            else
              nv.i = eval_binary(BinOp::Max, e, old.i, x.i);
            break;
          case AtomicKind::Exch: nv = x; break;
        }
        write(t, r, i, nv, n.loc, true);
        request(t, &n, 0, r, i, type_bytes(e), true, n.loc);
        if (!n.outputs.empty()) var(t, n.outputs[0].get()) = old;
        return;
      }
      case IntrinsicOp::CpAsync: {
        // The source is read now; the destination is written when this thread waits for the copy.
        Ref d = mem(t, n.mems[0].get(), n.loc), s = mem(t, n.mems[1].get(), n.loc);
        std::int64_t di = exact(n.args[0]->type, eval(n.args[0], t).i);
        std::int64_t si = exact(n.args[1]->type, eval(n.args[1], t).i);
        std::int64_t count = n.imms[0] / type_bytes(n.mems[0]->elem);
        // As on the GPU, a copy of more than one element needs both addresses aligned to its size.
        if (count > 1 && ((d.offset + di) % count != 0 || (s.offset + si) % count != 0))
          throw ExecutionError("memcheck",
                               describe(t) + " makes a misaligned " + std::to_string(n.imms[0]) + "-byte cp.async ('" +
                                   n.mems[1]->name + "'[" + std::to_string(si) + "] to '" + n.mems[0]->name + "'[" +
                                   std::to_string(di) + "]) at " + where(n.loc),
                               {n.loc});
        AsyncCopy c{d, di, {}, n.loc, -1};
        for (std::int64_t k = 0; k < count; ++k) c.values.push_back(read(t, s, si + k, n.loc));
        for (std::int64_t k = 0; k < count; ++k) {
          std::int64_t i = check_bounds(t, d, di + k, n.loc, "writes");
          check_inflight(t, *d.region, i, true, n.loc);
          d.region->inflight[i] = {static_cast<std::int32_t>(block_), t.tid, clock(t.tid, t.tid), n.loc, false};
        }
        t.async.push_back(std::move(c));
        request(t, &n, 0, s, si, static_cast<int>(n.imms[0]), false, n.loc);
        request(t, &n, 1, d, di, static_cast<int>(n.imms[0]), true, n.loc);
        return;
      }
      case IntrinsicOp::CpAsyncCommit:
        for (auto& c : t.async)
          if (c.group < 0) c.group = t.groups;
        ++t.groups;
        return;
      case IntrinsicOp::CpAsyncWait: {
        // cp.async.wait_group N: every committed group but the newest N is complete.
        std::int64_t keep = n.imms.empty() ? 0 : n.imms[0];
        complete_async(t, t.groups - keep);
        return;
      }
      default: break;
    }
    throw UnsupportedOnDevice(std::string(user_name(n.op)) + " cannot run on the interpreter", {n.loc});
  }

  // ------------------------------------------------------------ threads in lockstep
  void exec_all(const StmtPtr& s, const std::vector<Thread*>& in) {
    if (!s) return;
    std::vector<Thread*> ts;
    for (auto* t : in)
      if (!t->stopped()) ts.push_back(t);
    if (ts.empty()) return;
    if (!collective(s)) {
      for (auto* t : ordered(ts)) exec_one(s, *t);
      return;
    }
    if (const auto* seq = as<Seq>(*s)) {
      std::size_t i = 0;
      while (i < seq->stmts.size()) {
        if (collective(seq->stmts[i])) {
          exec_all(seq->stmts[i++], ts);
          continue;
        }
        std::size_t j = i;
        while (j < seq->stmts.size() && !collective(seq->stmts[j])) ++j;
        for (auto* t : ordered(ts))
          for (std::size_t k = i; k < j && !t->stopped(); ++k) exec_one(seq->stmts[k], *t);
        i = j;
      }
      return;
    }
    if (const auto* n = as<If>(*s)) {
      std::vector<Thread*> a, b;
      for (auto* t : ts) {
        const bool c = eval(n->cond, *t).i != 0;
        decision(*t, n, "if", n->loc, c);
        (c ? a : b).push_back(t);
      }
      exec_all(n->then_body, a);
      exec_all(n->else_body, b);
      return;
    }
    if (const auto* n = as<For>(*s)) {
      std::vector<std::pair<Thread*, Loop>> loops;
      for (auto* t : ts) {
        loops.emplace_back(t, start(*n, *t));
        enter(*t);
      }
      std::vector<char> in(loops.size(), 1);  // still evaluating the condition
      for (std::int64_t k = 0;; ++k) {
        std::vector<Thread*> act;
        for (std::size_t i = 0; i < loops.size(); ++i) {
          auto& [t, lp] = loops[i];
          if (!in[i] || t->stopped()) continue;
          const bool go = lp.going(var(*t, n->var.get()).i);
          at(*t, k);
          decision(*t, n, "for", n->loc, go);
          if (go)
            act.push_back(t);
          else
            in[i] = 0;
        }
        if (act.empty()) break;
        exec_all(n->body, act);
        no_jump(act, n->loc);
        for (auto& [t, lp] : loops)
          if (std::find(act.begin(), act.end(), t) != act.end() && !lp.advance(var(*t, n->var.get()).i))
            lp.step = 0;  // this thread's loop is over: a zero step never goes on
      }
      for (auto* t : ts) leave(*t);
      return;
    }
    if (const auto* n = as<While>(*s)) {
      for (auto* t : ts) enter(*t);
      std::vector<Thread*> act = ts;
      for (std::int64_t k = 0;; ++k) {
        std::vector<Thread*> go;
        for (auto* t : act) {
          if (t->stopped()) continue;
          at(*t, k);
          const bool c = eval(n->cond, *t).i != 0;
          decision(*t, n, "while", n->loc, c);
          if (c) go.push_back(t);
        }
        if (go.empty()) break;
        exec_all(n->body, go);
        no_jump(go, n->loc);
        act = std::move(go);
      }
      for (auto* t : ts) leave(*t);
      return;
    }
    if (const auto* n = as<ir::Barrier>(*s)) return barrier(*n, ts);
    if (const auto* n = as<Call>(*s)) return call(*n, ts);
    if (const auto* n = as<Intrinsic>(*s)) return warp_op(*n, ts);
    throw InternalError(std::string("interp: a collective ") + name_of(s->kind));
  }

  /// break and continue are thread(1) code's (the checker's V0212), never in a loop with collectives.
  static void no_jump(const std::vector<Thread*>& ts, SourceLoc l) {
    for (const auto* t : ts)
      if (t->jump) throw InternalError("interp: a break or continue in a loop with collectives at " + l.str());
  }

  /// The threads of the block that have not exited.
  std::vector<Thread*> live() {
    std::vector<Thread*> r;
    for (auto& t : threads_)
      if (!t.exited) r.push_back(&t);
    return r;
  }

  [[noreturn]] void diverged(const std::string& what, SourceLoc l, const Thread& missing) {
    throw ExecutionError("synccheck",
                         what + " at " + where(l) + " is reached by some of the threads it covers but not by " +
                             describe(missing) + " (block " + std::to_string(block_) + ")",
                         {l});
  }

  void barrier(const ir::Barrier& b, const std::vector<Thread*>& ts) {
    ++stats_.thread_statements;
    if (b.async_wait)  // cp.async.wait_all first: every copy of every arriving thread is complete
      for (auto* t : ts) complete_async(*t, INT64_MAX);
    std::vector<bool> here(static_cast<std::size_t>(T_), false);
    for (auto* t : ts) here[static_cast<std::size_t>(t->tid)] = true;
    if (b.how == BarrierKind::NamedFixed) {
      if (static_cast<std::int64_t>(ts.size()) != b.threads)
        throw ExecutionError("synccheck",
                             "named_barrier(" + std::to_string(b.id_base) + ", " + std::to_string(b.threads) + ") at " +
                                 where(b.loc) + " is reached by " + std::to_string(ts.size()) + " threads of block " +
                                 std::to_string(block_),
                             {b.loc});
      join(ts);
      return;
    }
    std::int64_t unit = b.how == BarrierKind::Block  ? T_
                        : b.how == BarrierKind::Warp ? std::min<std::int64_t>(32, T_)
                                                     : b.threads;
    std::map<std::int64_t, std::vector<Thread*>> groups;
    for (auto* t : ts) groups[t->tid / unit].push_back(t);
    for (auto& [g, members] : groups) {
      for (std::int64_t u = g * unit; u < std::min(T_, (g + 1) * unit); ++u) {
        const Thread& other = threads_[static_cast<std::size_t>(u)];
        if (!here[static_cast<std::size_t>(u)] && !other.exited)
          diverged("a barrier over " + std::to_string(unit) + " threads", b.loc, other);
      }
      join(members);
    }
  }

  void call(const Call& n, const std::vector<Thread*>& ts) {
    const FunctionNode& f = *n.fn;
    std::size_t user = n.args.size() - lower::kAbiArgs;
    for (auto* t : ts) {
      Frame fr;
      fr.tid = eval(n.args[user].value, *t).i;
      fr.bid = eval(n.args[user + 1].value, *t).i;
      std::int64_t smem = eval(n.args[user + 2].value, *t).i;
      fr.smem = t->frames.back().smem + std::max<std::int64_t>(smem, 0);
      fr.result = n.result;
      for (std::size_t i = 0; i < user && i < f.params.size(); ++i) {
        const auto& a = n.args[i];
        const ParamNode& p = f.params[i];
        if (a.mem) {
          Ref r = mem(*t, a.mem.get(), n.loc);
          r.offset += exact(a.value->type, eval(a.value, *t).i);
          t->mems[p.mem.get()] = r;
        } else {
          var(*t, p.var.get()) = eval(a.value, *t);
        }
      }
      t->frames.push_back(fr);
      enter(*t);
      at(*t, reinterpret_cast<std::intptr_t>(&n));  // a device function's accesses, per call
    }
    exec_all(f.body, ts);
    for (auto* t : ts) {
      leave(*t);
      Frame fr = t->frames.back();
      t->frames.pop_back();
      if (fr.result) var(*t, fr.result.get()) = fr.value;
    }
  }

  void warp_op(const Intrinsic& n, const std::vector<Thread*>& ts) {
    std::map<std::int64_t, std::vector<Thread*>> warps;
    for (auto* t : ts) warps[t->tid / 32].push_back(t);
    for (auto& [w, lanes] : warps) {
      std::int64_t first = w * 32, last = std::min(T_, first + 32);
      if (static_cast<std::int64_t>(lanes.size()) != last - first) {
        std::vector<bool> here(32, false);
        for (auto* t : lanes) here[static_cast<std::size_t>(t->tid - first)] = true;
        for (std::int64_t u = first; u < last; ++u)
          if (!here[static_cast<std::size_t>(u - first)])
            diverged(user_name(n.op), n.loc, threads_[static_cast<std::size_t>(u)]);
      }
      std::sort(lanes.begin(), lanes.end(), [](Thread* a, Thread* b) { return a->tid < b->tid; });
      stats_.thread_statements += static_cast<std::int64_t>(lanes.size());
      if (n.op == IntrinsicOp::MmaSync) {
        mma(n, lanes);
        continue;
      }
      if (n.op == IntrinsicOp::Ldmatrix) {
        ldmatrix(n, lanes);
        continue;
      }
      std::vector<V> x, y;
      for (auto* t : lanes) x.push_back(eval(n.args[0], *t));
      if (n.args.size() > 1)
        for (auto* t : lanes) y.push_back(eval(n.args[1], *t));
      std::size_t size = lanes.size();
      std::uint32_t ballot = 0;
      for (std::size_t l = 0; l < size; ++l)
        if (x[l].i) ballot |= 1u << l;
      for (std::size_t l = 0; l < size; ++l) {
        V out;
        auto lane = [&](std::int64_t src) {
          return src >= 0 && src < static_cast<std::int64_t>(size) ? x[static_cast<std::size_t>(src)] : x[l];
        };
        auto li = static_cast<std::int64_t>(l);
        switch (n.op) {
          case IntrinsicOp::ShflXor: out = lane(li ^ (y[l].i & 31)); break;
          case IntrinsicOp::ShflDown: out = lane(li + y[l].i); break;
          case IntrinsicOp::ShflUp: out = lane(li - y[l].i); break;
          case IntrinsicOp::ShflIdx: out = lane(y[l].i & 31); break;
          case IntrinsicOp::VoteAll: out.i = ballot == (size == 32 ? 0xffffffffu : ((1u << size) - 1)); break;
          case IntrinsicOp::VoteAny: out.i = ballot != 0; break;
          case IntrinsicOp::Ballot: out.i = ballot; break;
          default: throw InternalError("interp: not a warp operation");
        }
        var(*lanes[l], n.outputs[0].get()) = out;
      }
    }
  }

  /// ldmatrix.sync.aligned.m8n8.x{1,2,4}.shared.b16: lane 8m + r gives the address of row r of
  /// matrix m (16 bytes, 16-byte aligned); lane l receives, in register m, the two b16 elements of
  /// row l / 4 of matrix m at columns 2 (l % 4) and 2 (l % 4) + 1.
  void ldmatrix(const Intrinsic& n, const std::vector<Thread*>& lanes) {
    if (lanes.size() != 32) diverged("ldmatrix", n.loc, *lanes.front());
    const int count = static_cast<int>(n.imms[0]);
    const std::int64_t eb = type_bytes(n.mems[1]->elem);
    std::vector<std::array<unsigned char, 16>> rows(static_cast<std::size_t>(8 * count));
    for (int l = 0; l < 8 * count; ++l) {
      Thread& t = *lanes[static_cast<std::size_t>(l)];
      Ref src = mem(t, n.mems[1].get(), n.loc);
      std::int64_t first = exact(n.args[0]->type, eval(n.args[0], t).i);
      if (((src.offset + first) * eb) % 16 != 0)
        throw ExecutionError("memcheck",
                             describe(t) + " gives ldmatrix a row address (" +
                                 element(*src.region, src.offset + first) + ") that is not 16-byte aligned, at " +
                                 where(n.loc),
                             {n.loc});
      for (std::int64_t k = 0; k < 16 / eb; ++k) read(t, src, first + k, n.loc);  // the checks
      std::memcpy(rows[static_cast<std::size_t>(l)].data(), src.region->data + (src.offset + first) * eb, 16);
    }
    for (int l = 0; l < 32; ++l) {
      Thread& t = *lanes[static_cast<std::size_t>(l)];
      Ref dst = mem(t, n.mems[0].get(), n.loc);
      for (int m = 0; m < count; ++m) {
        std::uint32_t word;
        std::memcpy(&word, rows[static_cast<std::size_t>(8 * m + l / 4)].data() + 4 * (l % 4), 4);
        V v;
        v.i = word;
        write(t, dst, m, v, n.loc);
      }
    }
  }

  /// mma.sync (jit/ir/collective): the fragments read and D written with every check.
  void mma(const Intrinsic& n, const std::vector<Thread*>& lanes) {
    if (lanes.size() != 32) diverged("mma_sync", n.loc, *lanes.front());
    auto shape = static_cast<MmaShape>(n.imms[0]);
    ir::mma_sync(
        shape,
        [&](int l, int operand, int i) {
          Thread& t = *lanes[static_cast<std::size_t>(l)];
          return read(t, mem(t, n.mems[static_cast<std::size_t>(operand)].get(), n.loc), i, n.loc).f;
        },
        [&](int l, int i, float value) {
          Thread& t = *lanes[static_cast<std::size_t>(l)];
          V v;
          v.f = value;
          write(t, mem(t, n.mems[0].get(), n.loc), i, v, n.loc);
        });
  }

  const lower::Lowered& k_;
  std::int64_t blocks_, T_ = 0, block_ = 0;
  Options opt_;
  std::mt19937_64 rng_;
  Stats stats_;
  std::vector<std::unique_ptr<Region>> regions_;
  std::unordered_map<const MemNode*, Region*> globals_;
  std::unordered_map<const VarNode*, V> params_;
  std::unordered_map<const VarNode*, int> slots_;
  std::unordered_map<const StmtNode*, bool> collective_;
  std::map<std::pair<const MemNode*, std::int64_t>, std::unique_ptr<Region>> shared_;
  std::vector<Thread> threads_;
  std::vector<std::uint32_t> clocks_;
  // Measuring: a block's requests and decisions by place, and the launch's totals by access and branch.
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
  int quiet_ = 0;  ///< inside a vector copy's scalar rounds, which are not what a GPU runs
};

}  // namespace

Stats run(const lower::Lowered& kernel, std::int64_t blocks, const std::vector<Arg>& args, const Options& options) {
  return Machine(kernel, blocks, args, options).run();
}

}  // namespace vantage::interp
