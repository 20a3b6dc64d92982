// The interpreter's memory: raw loads and stores, variables, and every access's checks (bounds, races by vector clocks,
// initialisation, copies in flight). See machine.h.
#include "jit/interp/machine.h"

namespace vantage::interp::detail {

namespace {
/// The value of type T at p, as the IR holds it (integers sign- or zero-extended by T).
template <class T>
std::int64_t read_as(const unsigned char* p) {
  T x;
  std::memcpy(&x, p, sizeof x);
  return static_cast<std::int64_t>(x);
}
/// The low bytes of `v` at p, as a T.
template <class T>
void write_as(unsigned char* p, std::int64_t v) {
  auto x = static_cast<T>(v);
  std::memcpy(p, &x, sizeof x);
}
}  // namespace

V load_raw(const Region& r, std::int64_t i) {
  const unsigned char* p = r.data + i * type_bytes(r.elem);
  V v;
  switch (r.elem) {
    case ScalarType::Bool: v.i = *p != 0; break;
    case ScalarType::I8: v.i = read_as<std::int8_t>(p); break;
    case ScalarType::U8: v.i = read_as<std::uint8_t>(p); break;
    case ScalarType::I16: v.i = read_as<std::int16_t>(p); break;
    case ScalarType::U16: v.i = read_as<std::uint16_t>(p); break;
    case ScalarType::I32: v.i = read_as<std::int32_t>(p); break;
    case ScalarType::U32: v.i = read_as<std::uint32_t>(p); break;
    case ScalarType::I64:
    case ScalarType::U64: v.i = read_as<std::int64_t>(p); break;
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
    case ScalarType::F8E4M3:
    case ScalarType::F8E5M2: v.f = float8::decode(*p, r.elem == ScalarType::F8E5M2); break;
  }
  return v;
}

void store_raw(Region& r, std::int64_t i, V v) {
  unsigned char* p = r.data + i * type_bytes(r.elem);
  switch (r.elem) {
    case ScalarType::Bool: *p = v.i != 0; break;
    case ScalarType::F8E4M3:
    case ScalarType::F8E5M2: *p = float8::encode(v.f, r.elem == ScalarType::F8E5M2); break;
    case ScalarType::I8:
    case ScalarType::U8: write_as<std::uint8_t>(p, v.i); break;
    case ScalarType::I16:
    case ScalarType::U16: write_as<std::uint16_t>(p, v.i); break;
    case ScalarType::I32:
    case ScalarType::U32: write_as<std::uint32_t>(p, v.i); break;
    case ScalarType::I64:
    case ScalarType::U64: write_as<std::int64_t>(p, v.i); break;
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

Region& SharedArrays::get(const SharedAlloc& n, std::int64_t base,
                          const std::unordered_map<const MemNode*, std::int64_t>& offsets, bool checks) {
  auto key = std::make_pair(n.mem.get(), base);
  auto it = arrays_.find(key);
  if (it != arrays_.end()) return *it->second;
  auto r = std::make_unique<Region>();
  r->name = n.mem->name;
  r->elem = n.mem->elem;
  r->space = MemSpace::Shared;
  r->length = const_int(n.count).value_or(0);
  r->own.assign(static_cast<std::size_t>(r->length * type_bytes(r->elem)), 0);
  r->data = r->own.data();
  r->track = checks;
  r->initcheck = checks;
  r->shadow.resize(static_cast<std::size_t>(r->length));
  r->node = n.mem.get();
  r->base = base;
  // Arrays of scopes that ended, and earlier calls' arrays, leave their bytes to later ones
  // (jit/ir/shared_layout): an access here must also be ordered after theirs (check_reused).
  if (auto o = offsets.find(n.mem.get()); o != offsets.end()) {
    r->at = base + o->second;
    const std::int64_t end = r->at + r->length * type_bytes(r->elem);
    for (auto& [other_key, q] : arrays_)
      if (r->at < q->at + q->length * type_bytes(q->elem) && q->at < end) {
        r->reused.push_back(q.get());
        q->reused.push_back(r.get());
      }
  }
  return *arrays_.emplace(key, std::move(r)).first->second;
}

Region& local_region(Thread& t, const LocalAlloc& n, bool checks) {
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
    slot->initcheck = checks;
    slot->shadow.resize(static_cast<std::size_t>(n.count));
  }
  return *slot;
}

std::string where(const SourceLoc& l) { return l.known() ? l.str() : std::string("<unknown line>"); }

auto Bindings::var(Thread& t, const VarNode* v) -> V& {
  const auto s = static_cast<std::size_t>(slots_(v));
  if (s >= t.vars.size()) t.vars.resize(s + 16);
  return t.vars[s];
}

auto Bindings::param(const VarNode* v) -> std::optional<V>& {
  const auto s = static_cast<std::size_t>(slots_(v));
  if (s >= params_.size()) params_.resize(s + 1);
  return params_[s];
}

auto Bindings::read_var(Thread& t, const VarNode* v) -> V {
  const auto s = static_cast<std::size_t>(slots_(v));
  if (s < params_.size() && params_[s]) return *params_[s];
  if (s >= t.vars.size()) t.vars.resize(s + 16);
  return t.vars[s];
}

auto Bindings::mem(Thread& t, const MemNode* m, SourceLoc l) -> Ref {
  const auto i = static_cast<std::size_t>(mems_(m));
  if (i < t.mems.size() && t.mems[i].region) return t.mems[i];
  if (i < globals_.size() && globals_[i]) return {globals_[i], 0};
  throw InternalError("interp: memory '" + m->name + "' used before it exists (" + where(l) + ")");
}

void Bindings::add_buffer(const MemNode* m, Region* r) {
  const auto i = static_cast<std::size_t>(mems_(m));
  if (i >= globals_.size()) globals_.resize(i + 1, nullptr);
  globals_[i] = r;
}

void Bindings::bind(Thread& t, const MemNode* m, Ref r) {
  const auto i = static_cast<std::size_t>(mems_(m));
  if (i >= t.mems.size()) t.mems.resize(i + 1);
  t.mems[i] = r;
}

auto Bindings::global(const MemNode* m) -> Region* {
  const auto i = static_cast<std::size_t>(mems_(m));
  if (i < globals_.size() && globals_[i]) return globals_[i];
  throw InternalError("interp: '" + m->name + "' is not one of the kernel's buffers");
}

void Machine::check_index(Thread& t, const Ref& r, std::int64_t index, const ExprPtr& bound, bool writing,
                          SourceLoc l) {
  if (!bound) return checks_.proven(t, r, index, writing, l);
  const std::int64_t limit = eval(bound, t).i;
  if (index >= 0 && index < limit) return;
  throw ExecutionError("memcheck",
                       checks_.describe(t) + (writing ? " writes " : " reads ") + checks_.element(*r.region, index) +
                           " at " + where(l) + ", outside its " + std::to_string(limit) + " elements",
                       {l});
}

auto Machine::read(Thread& t, const Ref& ref, std::int64_t index, SourceLoc l, std::uint8_t atomic) -> V {
  const std::int64_t i = checks_.bounds(t, ref, index, l, "reads");
  checks_.read(t, *ref.region, i, l, atomic);
  ++stats_.thread_statements;
  return load_raw(*ref.region, i);
}

void Machine::write(Thread& t, const Ref& ref, std::int64_t index, V v, SourceLoc l, std::uint8_t atomic) {
  const std::int64_t i = checks_.bounds(t, ref, index, l, "writes");
  checks_.write(t, *ref.region, i, l, atomic);
  store_raw(*ref.region, i, v);
}

}  // namespace vantage::interp::detail
