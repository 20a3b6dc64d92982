// The interpreter's values and memory: scalar conversions, raw loads and stores, variables, and
// every access's checks (bounds, races by vector clocks, initialisation, copies in flight). See machine.h.
#include "jit/interp/machine.h"

namespace vantage::interp::detail {

double round_to(ScalarType t, double x) {
  switch (t) {
    case ScalarType::F32: return static_cast<float>(x);
    case ScalarType::F16: return float16::half_to_float(float16::float_to_half(static_cast<float>(x)));
    case ScalarType::BF16: return float16::bf16_to_float(float16::float_to_bf16(static_cast<float>(x)));
    default: return x;
  }
}

double from_16bit(ScalarType t, std::uint16_t bits) {
  return t == ScalarType::F16 ? float16::half_to_float(bits) : float16::bf16_to_float(bits);
}

std::int64_t float_to_int(double x, ScalarType to) {
  if (x != x) return 0;
  Range r = Range::of(to);
  double t = std::trunc(x);
  if (t <= static_cast<double>(r.lo)) return wrap(to, r.lo);
  if (t >= static_cast<double>(r.hi)) return wrap(to, r.hi);
  return wrap(to, static_cast<__int128>(t));
}

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

std::string where(const SourceLoc& l) { return l.known() ? l.str() : std::string("<unknown line>"); }

auto Machine::slot(const VarNode* v) -> int {
  auto it = slots_.find(v);
  if (it != slots_.end()) return it->second;
  int n = static_cast<int>(slots_.size());
  slots_[v] = n;
  return n;
}

auto Machine::var(Thread& t, const VarNode* v) -> V& {
  int s = slot(v);
  if (static_cast<std::size_t>(s) >= t.vars.size()) t.vars.resize(static_cast<std::size_t>(s) + 16);
  return t.vars[static_cast<std::size_t>(s)];
}

auto Machine::read_var(Thread& t, const VarNode* v) -> V {
  if (auto it = params_.find(v); it != params_.end()) return it->second;
  return var(t, v);
}

auto Machine::mem(Thread& t, const MemNode* m, SourceLoc l) -> Ref {
  if (auto it = t.mems.find(m); it != t.mems.end()) return it->second;
  if (auto it = globals_.find(m); it != globals_.end()) return {it->second, 0};
  throw InternalError("interp: memory '" + m->name + "' used before it exists (" + where(l) + ")");
}

auto Machine::describe(const Thread& t) const -> std::string {
  return "block " + std::to_string(block_) + " thread " + std::to_string(t.tid);
}

auto Machine::element(const Region& r, std::int64_t i) const -> std::string {
  const char* space = r.space == MemSpace::Shared ? "shared" : r.space == MemSpace::Local ? "local" : "global";
  return std::string(space) + " '" + r.name + "'[" + std::to_string(i) + "]";
}

auto Machine::check_bounds(Thread& t, const Ref& ref, std::int64_t index, SourceLoc l, const char* what)
    -> std::int64_t {
  std::int64_t i = ref.offset + index;
  if (index < 0 || i < 0 || i >= ref.region->length)
    throw ExecutionError("memcheck",
                         describe(t) + " " + what + " " + element(*ref.region, i) + " at " + where(l) +
                             ", outside its " + std::to_string(ref.region->length) + " elements",
                         {l});
  return i;
}

void Machine::checked(Thread& t, const MemPtr& m, std::int64_t index, std::int64_t bound, bool writing, SourceLoc l) {
  if (index >= 0 && index < bound) return;
  const Region& r = *mem(t, m.get(), l).region;
  throw ExecutionError("memcheck",
                       describe(t) + (writing ? " writes " : " reads ") + element(r, index) + " at " + where(l) +
                           ", outside its " + std::to_string(bound) + " elements",
                       {l});
}

void Machine::proven(Thread& t, const Ref& ref, std::int64_t index, bool writing, SourceLoc l) {
  std::int64_t i = ref.offset + index;
  if (index >= 0 && i >= 0 && i < ref.region->length) return;
  throw InternalError("lowering proved the " + std::string(writing ? "write to " : "read of ") +
                      element(*ref.region, i) + " at " + where(l) + " inside its " +
                      std::to_string(ref.region->length) + " elements, and left it unchecked; " + describe(t) +
                      " reaches it (a wrong bounds proof, a bug in Vantage)");
}

auto Machine::ordered_before(const Access& a, const Thread& t) -> bool {
  if (a.block != block_) return false;
  if (a.thread == t.tid) return true;
  return clock(t.tid, a.thread) >= a.clock;
}

void Machine::check_reused(const Thread& t, const Region& r, std::int64_t i, bool writing, SourceLoc l) {
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

void Machine::check_inflight(const Thread& t, const Region& r, std::int64_t i, bool writing, SourceLoc l) {
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

auto Machine::read(Thread& t, const Ref& ref, std::int64_t index, SourceLoc l, bool atomic) -> V {
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

void Machine::write(Thread& t, const Ref& ref, std::int64_t index, V v, SourceLoc l, bool atomic) {
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

}  // namespace vantage::interp::detail
