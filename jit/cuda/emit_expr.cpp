// How the CUDA C++ emitter prints expressions: the integer semantics made explicit, 32-bit
// arithmetic where the ranges prove it, and indices computed exactly in 32 or 64 bits. See emitter.h.
#include "jit/cuda/emitter.h"

namespace vantage::cuda::detail {

auto ExprPrinter::expr(const ExprPtr& e) -> std::string {
  if (!e) throw InternalError("emit: a null expression reached the emitter");
  return dispatch(*e, [&](const auto& n) { return text(n); });
}

auto ExprPrinter::text(const Literal& l) -> std::string {
  if (is_integer(l.type) || l.type == ScalarType::Bool) {
    if (!fits(l.type, l.i)) throw InternalError("emit: literal out of range for its type reached the emitter");
    return int_text(l.type, l.i);
  }
  switch (l.type) {
    case ScalarType::F32: return float_text(l.f, true);
    case ScalarType::F64: return float_text(l.f, false);
    case ScalarType::F16: v_.note(l.type); return "__float2half(" + float_text(l.f, true) + ")";
    case ScalarType::BF16: v_.note(l.type); return "__float2bfloat16(" + float_text(l.f, true) + ")";
    default: break;
  }
  throw InternalError("emit: literal of an unknown type");
}

auto ExprPrinter::text(const VarRef& n) -> std::string {
  // A 64-bit variable held in an int (narrowed_): widened where it is read, so that every
  // expression keeps its 64-bit meaning and NVCC sees a sign-extended 32-bit value.
  if (narrowed_.count(n.var.get())) return "static_cast<long long>(" + v_.name(n.var) + ")";
  return v_.name(n.var);
}

auto ExprPrinter::narrow32(const ExprPtr& e, int depth) -> std::optional<std::string> {
  if (!e || e->type != ScalarType::I64 || depth > 8) return std::nullopt;
  const Range i32 = Range::of(ScalarType::I32);
  if (auto k = const_int(e); k && i32.contains(*k)) return int_text(ScalarType::I32, *k);
  if (const auto* v = as<VarRef>(*e)) {
    if (narrowed_.count(v->var.get())) return v_.name(v->var);
    return std::nullopt;
  }
  if (const auto* c = as<Cast>(*e)) {
    if (c->a->type == ScalarType::I32) return expr(c->a);
    return std::nullopt;
  }
  const auto* b = as<Binary>(*e);
  if (!b || !(b->op == BinOp::Add || b->op == BinOp::Sub || b->op == BinOp::Mul)) return std::nullopt;
  if (!value_range(e, env_).within(i32) || !value_range(b->a, env_).within(i32) || !value_range(b->b, env_).within(i32))
    return std::nullopt;
  auto x = narrow32(b->a, depth + 1), y = narrow32(b->b, depth + 1);
  if (!x || !y) return std::nullopt;
  return "(" + *x + " " + name_of(b->op) + " " + *y + ")";
}

auto ExprPrinter::widened(const ExprPtr& x) -> ExprPtr {
  return is_narrow_integer(x->type) ? make<Cast>(ScalarType::I32, x, x->loc) : x;
}

auto ExprPrinter::narrowed(const std::string& i32_result, ScalarType t) -> std::string {
  return "static_cast<" + std::string(v_.ctype(t)) + ">(" + unparenthesized(i32_result) + ")";
}

auto ExprPrinter::text(const Unary& n) -> std::string {
  if (is_narrow_integer(n.type))
    return narrowed(text(*make<Unary>(ScalarType::I32, n.op, widened(n.a), n.loc)), n.type);
  std::string a = expr(n.a);
  if (n.op == UnOp::Neg && is_signed(n.type) && is_integer(n.type) && may_overflow(n, env_))
    return v_.helper("neg", n.type) + "(" + a + ")";
  return std::string("(") + name_of(n.op) + a + ")";
}

auto ExprPrinter::widen(const std::string& x, ScalarType t) -> std::string {
  v_.note(t);
  return (t == ScalarType::F16 ? "__half2float(" : "__bfloat162float(") + x + ")";
}

auto ExprPrinter::narrow(const std::string& x, ScalarType t) -> std::string {
  v_.note(t);
  return (t == ScalarType::F16 ? "__float2half(" : "__float2bfloat16(") + x + ")";
}

auto ExprPrinter::masked(const ExprPtr& e) -> std::optional<std::string> {
  const auto* m = as<Binary>(*e);
  if (!m || m->op != BinOp::Mod || !is_integer(m->type) || !is_signed(m->type)) return std::nullopt;
  auto k = const_int(m->b);
  if (!k || *k < 2 || (*k & (*k - 1)) != 0 || value_range(m->a, env_).lo < 0) return std::nullopt;
  return "(" + expr(m->a) + " & " + int_text(m->type, *k - 1) + ")";
}

auto ExprPrinter::text(const Binary& n) -> std::string {
  if (is_narrow_integer(n.a->type) || is_narrow_integer(n.b->type)) {
    const auto wide =
        make<Binary>(is_narrow_integer(n.type) ? ScalarType::I32 : n.type, n.op, widened(n.a), widened(n.b), n.loc);
    return is_narrow_integer(n.type) ? narrowed(text(*wide), n.type) : text(*wide);
  }
  ScalarType t = n.a->type;
  const bool compare = n.op == BinOp::Lt || n.op == BinOp::Le || n.op == BinOp::Gt || n.op == BinOp::Ge ||
                       n.op == BinOp::Eq || n.op == BinOp::Ne;
  // A comparison of 64-bit values that are 32-bit values widened, and 64-bit arithmetic whose
  // value fits an int: done in int (one instruction where 64 bits take two or three).
  if (t == ScalarType::I64 && compare)
    if (auto x = narrow32(n.a), y = narrow32(n.b); x && y) return "(" + *x + " " + name_of(n.op) + " " + *y + ")";
  if (compare && is_integer(t))
    if (auto x = masked(n.a), y = masked(n.b); x || y)
      return "(" + x.value_or(expr(n.a)) + " " + name_of(n.op) + " " + y.value_or(expr(n.b)) + ")";
  std::string a = expr(n.a), b = expr(n.b);
  bool integer = is_integer(n.type);
  switch (n.op) {
    case BinOp::Add:
    case BinOp::Sub:
    case BinOp::Mul:
      if (integer && is_signed(n.type) && may_overflow(n, env_))
        return v_.helper(n.op == BinOp::Add   ? "add"
                         : n.op == BinOp::Sub ? "sub"
                                              : "mul",
                         n.type) +
               "(" + a + ", " + b + ")";
      break;
    case BinOp::Div:
    case BinOp::Mod:
      if (integer) {
        Range d = value_range(n.b, env_);
        // Both operands provably non-negative and the divisor a positive value known only at run
        // time: an unsigned division, the same value without the sign's corrections (`block /
        // tiles_per_row`).
        if (is_signed(n.type) && d.lo >= 1 && value_range(n.a, env_).lo >= 0 && !const_int(n.b)) {
          const std::string u = n.type == ScalarType::I64 ? "unsigned long long" : "unsigned";
          return "static_cast<" + std::string(v_.ctype(n.type)) + ">(static_cast<" + u + ">(" + unparenthesized(a) +
                 ")" + (n.op == BinOp::Div ? " / " : " % ") + "static_cast<" + u + ">(" + unparenthesized(b) + "))";
        }
        bool min_by_minus_one =
            is_signed(n.type) && d.contains(-1) && value_range(n.a, env_).contains(Range::of(n.type).lo);
        if (min_by_minus_one) return v_.helper(n.op == BinOp::Div ? "div" : "mod", n.type) + "(" + a + ", " + b + ")";
        if (d.contains(0)) {
          // Written out where the operands are names or constants (NVRTC compiles that faster than
          // a call), through vt_div0 / vt_mod0 where an operand would be evaluated twice.
          bool div = n.op == BinOp::Div;
          if (is_leaf(n.b) && (div || is_leaf(n.a)))
            return "(" + b + " == 0 ? " + (div ? int_text(n.type, ir::wrap(n.type, -1)) : a) + " : " + a +
                   (div ? " / " : " % ") + b + ")";
          return v_.helper(div ? "div0" : "mod0", n.type) + "(" + a + ", " + b + ")";
        }
        break;
      }
      if (n.op == BinOp::Mod) return std::string(n.type == ScalarType::F32 ? "fmodf(" : "fmod(") + a + ", " + b + ")";
      break;
    case BinOp::Shl:
    case BinOp::Shr: {
      int width = type_bytes(n.type) * 8;
      if (!value_range(n.b, env_).within(Range{0, width - 1}))
        return v_.helper(n.op == BinOp::Shl ? "shl" : "shr", n.type) + "(" + a + ", " + b + ")";
      break;
    }
    case BinOp::LAnd:
    case BinOp::LOr:
      if (has_load(n.b)) {  // the right operand is evaluated too (and may fault): call, not &&
        (n.op == BinOp::LAnd ? v_.uses_and : v_.uses_or) = true;
        return (n.op == BinOp::LAnd ? "vt_and(" : "vt_or(") + a + ", " + b + ")";
      }
      break;
    case BinOp::Min:
    case BinOp::Max: {
      bool is_min = n.op == BinOp::Min;
      if (is_16bit_float(t)) return std::string(is_min ? "__hmin(" : "__hmax(") + a + ", " + b + ")";
      const char* f = is_min ? "min" : "max";
      if (t == ScalarType::F32) f = is_min ? "fminf" : "fmaxf";
      if (t == ScalarType::F64) f = is_min ? "fmin" : "fmax";
      return std::string(f) + "(" + a + ", " + b + ")";
    }
    case BinOp::Pow:
      if (is_16bit_float(t)) return narrow("powf(" + widen(a, t) + ", " + widen(b, t) + ")", t);
      return std::string(t == ScalarType::F32 ? "powf(" : "pow(") + a + ", " + b + ")";
    default: break;
  }
  return "(" + a + " " + name_of(n.op) + " " + b + ")";
}

auto ExprPrinter::text(const Cast& n) -> std::string {
  ScalarType from = n.a->type, to = n.type;
  std::string a = expr(n.a);
  if (from == to) return a;
  v_.note(from);
  v_.note(to);
  // 8-bit floats: made from any float by their constructor (round to nearest even, satfinite), read
  // through float, where every one of their values is exact.
  if (is_fp8(to)) {
    const std::string x = is_fp8(from) ? "static_cast<float>(" + a + ")" : unparenthesized(a);
    return std::string(v_.ctype(to)) + "(" + x + ")";
  }
  if (is_fp8(from)) {
    if (to == ScalarType::F32) return "static_cast<float>(" + unparenthesized(a) + ")";
    return expr(make<Cast>(to, make<Cast>(ScalarType::F32, n.a, n.loc), n.loc));
  }
  if (to == ScalarType::Bool) {
    if (is_16bit_float(from)) return "(" + widen(a, from) + " != 0.0f)";
    return "(" + a + " != 0)";
  }
  if (is_narrow_integer(from) && is_float(to)) return expr(make<Cast>(to, widened(n.a), n.loc));  // exact
  if (is_float(from) && is_narrow_integer(to)) {
    // Through int (which saturates there), then clamped to the narrow type's range.
    const Range r = Range::of(to);
    return narrowed("max(" + int_text(ScalarType::I32, static_cast<std::int64_t>(r.lo)) + ", min(" +
                        int_text(ScalarType::I32, static_cast<std::int64_t>(r.hi)) + ", " +
                        expr(make<Cast>(ScalarType::I32, n.a, n.loc)) + "))",
                    to);
  }
  if (is_float(from) && is_integer(to)) {
    // Truncates toward zero and saturates at the type's range; NaN gives 0 (PTX cvt.rzi).
    static const std::map<std::pair<bool, ScalarType>, const char*> kFns = {
        {{false, ScalarType::I32}, "__float2int_rz"}, {{false, ScalarType::U32}, "__float2uint_rz"},
        {{false, ScalarType::I64}, "__float2ll_rz"},  {{false, ScalarType::U64}, "__float2ull_rz"},
        {{true, ScalarType::I32}, "__double2int_rz"}, {{true, ScalarType::U32}, "__double2uint_rz"},
        {{true, ScalarType::I64}, "__double2ll_rz"},  {{true, ScalarType::U64}, "__double2ull_rz"},
    };
    std::string x = is_16bit_float(from) ? widen(a, from) : a;
    return std::string(kFns.at({from == ScalarType::F64, to})) + "(" + x + ")";
  }
  if (is_16bit_float(to)) {
    const bool half = to == ScalarType::F16;
    if (is_16bit_float(from)) return narrow(widen(a, from), to);
    switch (from) {
      case ScalarType::F32: return narrow(a, to);
      case ScalarType::F64: return std::string(half ? "__double2half(" : "__double2bfloat16(") + a + ")";
      case ScalarType::I32: return std::string(half ? "__int2half_rn(" : "__int2bfloat16_rn(") + a + ")";
      case ScalarType::U32: return std::string(half ? "__uint2half_rn(" : "__uint2bfloat16_rn(") + a + ")";
      case ScalarType::I64: return std::string(half ? "__ll2half_rn(" : "__ll2bfloat16_rn(") + a + ")";
      case ScalarType::U64: return std::string(half ? "__ull2half_rn(" : "__ull2bfloat16_rn(") + a + ")";
      case ScalarType::Bool: return narrow(std::string("(") + a + " ? 1.0f : 0.0f)", to);
      default: break;
    }
  }
  if (is_16bit_float(from)) return "static_cast<" + std::string(v_.ctype(to)) + ">(" + widen(a, from) + ")";
  // Integer narrowing is modular (C++20); integer to float rounds to nearest.
  return std::string("static_cast<") + v_.ctype(to) + ">(" + unparenthesized(a) + ")";
}

auto ExprPrinter::text(const Select& n) -> std::string {
  std::string c = expr(n.c), a = expr(n.a), b = expr(n.b);
  if (has_load(n.a) || has_load(n.b)) {  // both arms are evaluated: make it a call
    v_.uses_select = true;
    return "vt_select<" + std::string(v_.ctype(n.type)) + ">(" + c + ", " + a + ", " + b + ")";
  }
  return "(" + c + " ? " + a + " : " + b + ")";
}

auto ExprPrinter::text(const MathCall& n) -> std::string {
  ScalarType t = n.type;
  std::vector<std::string> args;
  for (const auto& a : n.args) args.push_back(expr(a));
  if (n.fn == MathFn::Bitcast) {
    const ScalarType from = n.args[0]->type;
    const std::string to = v_.ctype(t);
    if (from == ScalarType::F32) return "static_cast<" + to + ">(__float_as_uint(" + args[0] + "))";
    if (from == ScalarType::F64) return "static_cast<" + to + ">(__double_as_longlong(" + args[0] + "))";
    if (t == ScalarType::F32) return "__uint_as_float(static_cast<unsigned>(" + args[0] + "))";
    if (t == ScalarType::F64) return "__longlong_as_double(static_cast<long long>(" + args[0] + "))";
    return "static_cast<" + to + ">(" + args[0] + ")";  // the same bits in two's complement
  }
  if (is_bit_fn(n.fn)) {
    // CUDA's intrinsics take int or unsigned (long long) and agree on the bits: cast the operand
    // to the one each takes, and brev's result back to the operand's type.
    const bool wide = type_bytes(n.args[0]->type) == 8;
    const std::string s = wide ? "long long" : "int", u = wide ? "unsigned long long" : "unsigned";
    const std::string ll = wide ? "ll" : "";
    switch (n.fn) {
      case MathFn::Popc: return "__popc" + ll + "(static_cast<" + u + ">(" + args[0] + "))";
      case MathFn::Clz: return "__clz" + ll + "(static_cast<" + s + ">(" + args[0] + "))";
      case MathFn::Ffs: return "__ffs" + ll + "(static_cast<" + s + ">(" + args[0] + "))";
      default:
        return "static_cast<" + std::string(v_.ctype(t)) + ">(__brev" + ll + "(static_cast<" + u + ">(" + args[0] +
               ")))";
    }
  }
  if (n.fn == MathFn::Abs && is_narrow_integer(t))
    return narrowed(text(*make<MathCall>(ScalarType::I32, n.fn, std::vector<ExprPtr>{widened(n.args[0])}, n.loc)), t);
  if (n.fn == MathFn::Abs && is_integer(t)) {
    if (!is_signed(t)) return args[0];
    if (value_range(n.args[0], env_).contains(Range::of(t).lo)) return v_.helper("abs", t) + "(" + args[0] + ")";
    return std::string(t == ScalarType::I64 ? "llabs(" : "abs(") + args[0] + ")";
  }
  if (is_float_predicate(n.fn)) {
    // As comparisons, which need no header (NVRTC's isnan comes with none) and which no NVRTC option
    // folds (fast math flushes denormals but keeps NaN unordered): NaN is the value unequal to
    // itself, an infinity the magnitude past the largest finite value.
    const ScalarType from = n.args[0]->type;
    const bool wide = from == ScalarType::F64;
    const std::string x = is_16bit_float(from) ? widen(args[0], from) : args[0];
    if (n.fn == MathFn::IsNan) return "(" + x + " != " + x + ")";
    const std::string largest = wide ? "1.7976931348623157e+308" : "3.40282347e+38f";
    return "(" + std::string(wide ? "fabs(" : "fabsf(") + x + (n.fn == MathFn::IsInf ? ") > " : ") <= ") + largest +
           ")";
  }
  std::string f = math_name(n.fn);
  if (is_16bit_float(t)) {
    if (n.fn == MathFn::Fma) {
      v_.note(t);
      return "__hfma(" + args[0] + ", " + args[1] + ", " + args[2] + ")";
    }
    std::string s = f + "f(";
    for (std::size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + widen(args[i], t);
    return narrow(s + ")", t);
  }
  if (t == ScalarType::F32) f += "f";
  std::string s = f + "(";
  for (std::size_t i = 0; i < args.size(); ++i) s += (i ? ", " : "") + args[i];
  return s + ")";
}

auto ExprPrinter::text(const Builtin& n) -> std::string {
  switch (n.which) {
    case BuiltinKind::ThreadInBlock: return "vt_tid";
    case BuiltinKind::BlockInGrid: return "vt_bid";
    case BuiltinKind::BlocksInGrid: return "static_cast<int>(gridDim.x)";
  }
  return "?";
}

auto ExprPrinter::text(const Load& n) -> std::string {
  if (!n.bound) return access(n.mem, n.indices, n.loc);
  v_.uses_checks = true;
  return "vt_ld(" + v_.name(n.mem) + ", " + index(n.indices[0], n.loc) + ", " + expr(n.bound) + ", " +
         std::to_string(n.site) + ", vt_err)";
}

auto ExprPrinter::access(const MemPtr& m, const std::vector<ExprPtr>& idx, SourceLoc loc) -> std::string {
  return v_.name(m) + "[" + index(idx.empty() ? nullptr : idx[0], loc) + "]";
}

auto ExprPrinter::index(const ExprPtr& e, SourceLoc loc) -> std::string {
  if (!e) return "0";
  // An index may load through another index (x[y[i] * K]): the inner one gets ranges of its own.
  struct Restore {
    ExactRanges& slot;
    ExactRanges saved;
    ~Restore() { slot = std::move(saved); }
  } restore{index_ranges_, std::exchange(index_ranges_, {})};
  auto r = exact_index_range(e, env_, &index_ranges_);
  if (r && r->within(Range::of(ScalarType::I32))) return exact_index(e, ScalarType::I32);
  if (r && r->within(Range::of(ScalarType::I64))) return exact_index(e, ScalarType::I64);
  problems_.push_back({"V1006",
                       "this index may not fit 64 bits (" + print(e) +
                           "); Vantage computes indices exactly and cannot here. Bound its operands (specialize "
                           "the sizes, or clamp with min)",
                       loc,
                       {}});
  return "0";
}

auto ExprPrinter::factored_sum(const ExprPtr& e) -> std::optional<std::string> {
  std::vector<ExprPtr> terms;
  std::function<bool(const ExprPtr&)> flatten = [&](const ExprPtr& x) {
    const auto* b = as<Binary>(*x);
    if (b && b->op == BinOp::Add && b->type == ScalarType::I64 && is_exact_index_op(*x))
      return flatten(b->a) && flatten(b->b);
    terms.push_back(x);
    return terms.size() <= 16;
  };
  if (!flatten(e) || terms.size() < 2) return std::nullopt;
  // Each product's factor that is not a constant, and its other factor.
  struct Product {
    ExprPtr factor, other;
  };
  auto product = [](const ExprPtr& x) -> std::optional<Product> {
    const auto* b = as<Binary>(*x);
    if (!b || b->op != BinOp::Mul || b->type != ScalarType::I64) return std::nullopt;
    if (!const_int(b->b)) return Product{b->b, b->a};
    if (!const_int(b->a)) return Product{b->a, b->b};
    return std::nullopt;
  };
  std::vector<bool> used(terms.size(), false);
  std::vector<std::string> parts;
  bool shared = false;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (used[i]) continue;
    auto p = product(terms[i]);
    if (!p) continue;
    ExprPtr sum = p->other;
    std::vector<std::size_t> group{i};
    for (std::size_t j = i + 1; j < terms.size(); ++j) {
      auto q = used[j] ? std::nullopt : product(terms[j]);
      if (!q || !ir::equal(q->factor, p->factor)) continue;
      sum = make<Binary>(ScalarType::I64, BinOp::Add, sum, q->other, e->loc);
      group.push_back(j);
    }
    if (group.size() < 2) continue;
    auto narrow = narrow32(sum);
    if (!narrow) continue;
    for (auto g : group) used[g] = true;
    parts.push_back("static_cast<long long>" + (narrow->front() == '(' ? *narrow : "(" + *narrow + ")") + " * " +
                    exact_index(p->factor, ScalarType::I64));
    shared = true;
  }
  if (!shared) return std::nullopt;
  // The other terms: those that are 32-bit values summed in int where that sum fits, as one.
  ExprPtr rest;
  std::vector<std::size_t> in_rest;
  for (std::size_t i = 0; i < terms.size(); ++i) {
    if (used[i] || !narrow32(terms[i])) continue;
    ExprPtr next = rest ? make<Binary>(ScalarType::I64, BinOp::Add, rest, terms[i], e->loc) : terms[i];
    if (!narrow32(next)) continue;
    rest = next;
    in_rest.push_back(i);
  }
  if (in_rest.size() >= 2) {
    for (auto i : in_rest) used[i] = true;
    parts.push_back("static_cast<long long>(" + unparenthesized(*narrow32(rest)) + ")");
  }
  for (std::size_t i = 0; i < terms.size(); ++i)
    if (!used[i]) parts.push_back(exact_index(terms[i], ScalarType::I64));
  std::string out = "(";
  for (std::size_t i = 0; i < parts.size(); ++i) out += (i ? " + " : "") + parts[i];
  return out + ")";
}

auto ExprPrinter::exact_index(const ExprPtr& e, ScalarType w) -> std::string {
  if (w == ScalarType::I64)
    if (auto f = factored_sum(e)) return *f;
  // In a 64-bit index, a part whose value and intermediates fit 32 bits is computed in int and
  // widened once: `static_cast<long long>(row * 32 + tr) * K` rather than four 64-bit operations.
  if (w == ScalarType::I64 && is_exact_index_op(*e))
    if (auto r = index_ranges_.find(e.get()); r != index_ranges_.end() && r->second.within(Range::of(ScalarType::I32)))
      return "static_cast<long long>(" + unparenthesized(exact_index(e, ScalarType::I32)) + ")";
  if (!is_exact_index_op(*e)) {
    if (auto k = const_int(e)) return int_text(w, static_cast<std::int64_t>(exact(e->type, *k)));
    if (const auto* v = as<VarRef>(*e); v && narrowed_.count(v->var.get()))
      return w == ScalarType::I32 ? v_.name(v->var) : "static_cast<long long>(" + v_.name(v->var) + ")";
    std::string v = expr(e);
    return e->type == w ? v : "static_cast<" + std::string(v_.ctype(w)) + ">(" + v + ")";
  }
  if (const auto* u = as<Unary>(*e)) return "(-" + exact_index(u->a, w) + ")";
  const auto& b = static_cast<const Binary&>(*e);
  std::string x = exact_index(b.a, w), y = exact_index(b.b, w);
  if (b.op == BinOp::Min || b.op == BinOp::Max)
    return std::string(b.op == BinOp::Min ? "min(" : "max(") + x + ", " + y + ")";
  if (b.op == BinOp::Shl) return "(" + x + " * " + int_text(w, std::int64_t{1} << *const_int(b.b)) + ")";
  return "(" + x + " " + name_of(b.op) + " " + y + ")";
}

auto Vocabulary::ctype(ScalarType t) -> const char* {
  note(t);
  return ctype_name(t);
}

void Vocabulary::note(ScalarType t) {
  if (is_fp8(t)) uses_fp8 = true;
  if (t == ScalarType::F16) uses_half = true;
  if (t == ScalarType::BF16) uses_bf16 = true;
}

auto Vocabulary::helper(std::string_view op, ScalarType t) -> std::string {
  if ((op == "div" || op == "abs") && is_signed(t)) helper("neg", t);
  if (helper_seen_.emplace(op, t).second) helper_text += cached_helper_definition(op, t);
  return "vt_" + std::string(op);
}

auto Vocabulary::name(const void* node, const std::string& base) -> const std::string& {
  auto it = names_.find(node);
  if (it != names_.end()) return it->second;
  std::string b = identifier(base);
  std::string n = b;
  for (int i = 1; taken_.count(n); ++i) n = b + "_" + std::to_string(i);
  taken_.insert(n);
  return names_.emplace(node, n).first->second;
}

}  // namespace vantage::cuda::detail
