// How the CUDA C++ emitter spells types, names and literals, and the helper functions it prints on
// demand (their integer semantics are docs/semantics.md's). See emitter.h.
#include "jit/cuda/emitter.h"

#include <cctype>
#include <iterator>

namespace vantage::cuda::detail {

const char* ctype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I8: return "signed char";
    case ScalarType::U8: return "unsigned char";
    case ScalarType::I16: return "short";
    case ScalarType::U16: return "unsigned short";
    case ScalarType::I32: return "int";
    case ScalarType::U32: return "unsigned";
    case ScalarType::I64: return "long long";
    case ScalarType::U64: return "unsigned long long";
    case ScalarType::F16: return "__half";
    case ScalarType::BF16: return "__nv_bfloat16";
    case ScalarType::F32: return "float";
    case ScalarType::F64: return "double";
    case ScalarType::F8E4M3: return "__nv_fp8_e4m3";
    case ScalarType::F8E5M2: return "__nv_fp8_e5m2";
  }
  return "int";
}

const char* math_name(MathFn fn) {
  static const char* const kNames[] = {"sqrt", "rsqrt", "exp",   "exp2", "log",   "log2",  "sin",   "cos",
                                       "tanh", "fabs",  "floor", "ceil", "fma",   "tan",   "asin",  "acos",
                                       "atan", "sinh",  "cosh",  "erf",  "erfc",  "expm1", "log1p", "log10",
                                       "cbrt", "trunc", "round", "rint", "atan2", "fmod",  "hypot", "copysign"};
  static_assert(std::size(kNames) == static_cast<std::size_t>(MathFn::Copysign) + 1);
  const auto i = static_cast<std::size_t>(fn);
  return i < std::size(kNames) ? kNames[i] : nullptr;
}

namespace {
/// The functions the printer calls by a name a user could give a variable: the math functions in
/// both precisions, the others it prints (min and max are keywords above), and CUDA's atomics.
bool calls(const std::string& s) {
  static const std::set<std::string> kCalled = [] {
    std::set<std::string> names = {"pow", "powf", "fmin", "fminf", "fmax", "fmaxf", "llabs", "printf"};
    for (std::size_t i = 0; i <= static_cast<std::size_t>(MathFn::Copysign); ++i) {
      const std::string base = math_name(static_cast<MathFn>(i));
      names.insert(base);
      names.insert(base + "f");
    }
    return names;
  }();
  return kCalled.count(s) > 0 ||
         (s.rfind("atomic", 0) == 0 && s.size() > 6 && std::isupper(static_cast<unsigned char>(s[6])));
}
}  // namespace

bool is_reserved(const std::string& s) {
  static const std::set<std::string> kWords = {
      "auto",      "bool",     "break",    "case",      "char",     "const",         "continue",  "default",
      "do",        "double",   "else",     "enum",      "extern",   "float",         "for",       "goto",
      "if",        "int",      "long",     "register",  "return",   "short",         "signed",    "sizeof",
      "static",    "struct",   "switch",   "typedef",   "union",    "unsigned",      "void",      "volatile",
      "while",     "class",    "new",      "delete",    "this",     "template",      "typename",  "namespace",
      "using",     "true",     "false",    "operator",  "private",  "public",        "protected", "virtual",
      "friend",    "inline",   "mutable",  "explicit",  "throw",    "try",           "catch",     "asm",
      "threadIdx", "blockIdx", "blockDim", "gridDim",   "warpSize", "min",           "max",       "abs",
      "sqrt",      "exp",      "log",      "sin",       "cos",      "pow",           "floor",     "ceil",
      "fma",       "tanh",     "nullptr",  "constexpr", "decltype", "static_assert", "alignas",   "alignof",
      "export",    "concept",  "requires", "co_await",  "co_yield", "co_return",     "char8_t",   "consteval",
      "constinit"};
  return kWords.count(s) > 0 || calls(s) || s.rfind("vt_", 0) == 0 || s.rfind("__", 0) == 0;
}

std::string identifier(const std::string& name) {
  std::string s;
  for (char c : name) s += (std::isalnum(static_cast<unsigned char>(c)) || c == '_') ? c : '_';
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0]))) s = "v_" + s;
  if (is_reserved(s)) s += "_";
  return s;
}

std::string quote_path(const char* file) {
  std::string out = "\"";
  for (const char* c = file; *c; ++c) {
    if (*c == '"' || *c == '\\') out += '\\';
    out += *c;
  }
  return out + "\"";
}

std::string float_text(double v, bool single) {
  if (v != v) return single ? "__int_as_float(0x7fffffff)" : "__longlong_as_double(0x7fffffffffffffffLL)";
  if (v == 1.0 / 0.0) return single ? "__int_as_float(0x7f800000)" : "__longlong_as_double(0x7ff0000000000000LL)";
  if (v == -1.0 / 0.0) return single ? "__int_as_float(0xff800000)" : "__longlong_as_double(0xfff0000000000000LL)";
  char buf[64];
  std::snprintf(buf, sizeof buf, single ? "%.9g" : "%.17g", v);
  std::string s = buf;
  if (s.find_first_of(".eE") == std::string::npos) s += ".0";
  return single ? s + "f" : s;
}

/// Integer literal text of exactly the C++ type `t` maps to.
std::string int_text(ScalarType t, std::int64_t v) {
  switch (t) {
    case ScalarType::Bool: return v ? "true" : "false";
    case ScalarType::I32:
      if (v == INT32_MIN) return "(-2147483647 - 1)";
      return v < 0 ? "(" + std::to_string(v) + ")" : std::to_string(v);
    case ScalarType::U32: return std::to_string(static_cast<std::uint32_t>(v)) + "u";
    case ScalarType::I64:
      if (v == INT64_MIN) return "(-9223372036854775807LL - 1)";
      return v < 0 ? "(" + std::to_string(v) + "LL)" : std::to_string(v) + "LL";
    case ScalarType::U64: return std::to_string(static_cast<std::uint64_t>(v)) + "ULL";
    case ScalarType::I8:
    case ScalarType::U8:
    case ScalarType::I16:
    case ScalarType::U16: return "static_cast<" + std::string(ctype_name(t)) + ">(" + std::to_string(v) + ")";
    default: break;
  }
  throw InternalError("int_text: not an integer type");
}

// ---------------------------------------------------------------- helpers printed on demand
/// The definition of one helper function (named `vt_<op>` for the C++ type of `t`); the integer
/// ones give the results docs/semantics.md defines where plain C++ would be undefined.
std::string helper_definition(const std::string& op, ScalarType t) {
  const std::string c = ctype_name(t);
  const bool is64 = type_bytes(t) == 8;
  const std::string u = is64 ? "unsigned long long" : "unsigned";
  const std::string width = is64 ? "64ull" : "32ull";
  const std::string head = "static __device__ __forceinline__ " + c + " vt_" + op + "(";
  const std::string zero = "static_cast<" + c + ">(0)", minus_one = "static_cast<" + c + ">(-1)";
  auto wrap = [&](const std::string& expr) { return "static_cast<" + c + ">(" + expr + ")"; };
  auto as_u = [&](const char* v) { return "static_cast<" + u + ">(" + v + ")"; };
  if (op == "add" || op == "sub" || op == "mul") {
    const char* sym = op == "add" ? " + " : op == "sub" ? " - " : " * ";
    return head + c + " a, " + c + " b) { return " + wrap(as_u("a") + sym + as_u("b")) + "; }\n";
  }
  if (op == "neg")
    return head + c + " a) { return " + wrap("0" + std::string(is64 ? "ull" : "u") + " - " + as_u("a")) + "; }\n";
  // div0 and mod0: where the range analysis excludes MIN / -1, only the zero divisor needs defining.
  if (op == "div0") return head + c + " a, " + c + " b) { return b == 0 ? " + minus_one + " : a / b; }\n";
  if (op == "mod0") return head + c + " a, " + c + " b) { return b == 0 ? a : a % b; }\n";
  // div and mod: signed types whose dividend may be MIN and divisor -1 as well as 0.
  if (op == "div")
    return head + c + " a, " + c + " b) { return b == 0 ? " + minus_one + " : (b == -1 ? vt_neg(a) : a / b); }\n";
  if (op == "mod") return head + c + " a, " + c + " b) { return b == 0 ? a : (b == -1 ? " + zero + " : a % b); }\n";
  if (op == "shl")
    return head + c + " a, unsigned long long b) { return b >= " + width + " ? " + zero + " : " +
           wrap(as_u("a") + " << b") + "; }\n";
  if (op == "shr") {
    if (is_signed(t))
      return head + c + " a, unsigned long long b) { return b >= " + width + " ? (a < 0 ? " + minus_one + " : " + zero +
             ") : a >> b; }\n";
    return head + c + " a, unsigned long long b) { return b >= " + width + " ? " + zero + " : a >> b; }\n";
  }
  if (op == "abs") return head + c + " a) { return a < 0 ? vt_neg(a) : a; }\n";
  throw InternalError("emit: unknown helper " + op);
}

/// The definition of helper `vt_<op>` for `t`, built once per process: every kernel that needs it
/// prints the same text.
const std::string& cached_helper_definition(std::string_view op, ScalarType t) {
  static const auto table = [] {
    std::map<std::pair<std::string, ScalarType>, std::string, std::less<>> all;
    for (const char* op : {"add", "sub", "mul", "neg", "div", "mod", "div0", "mod0", "shl", "shr", "abs"})
      for (ScalarType t : {ScalarType::I32, ScalarType::U32, ScalarType::I64, ScalarType::U64}) {
        bool signed_only = std::string_view(op) == "div" || std::string_view(op) == "mod";
        if (is_signed(t) || !signed_only) all[{op, t}] = helper_definition(op, t);
      }
    return all;
  }();
  auto it = table.find(std::pair<std::string, ScalarType>(op, t));
  if (it == table.end()) throw InternalError("emit: no helper " + std::string(op) + " for " + type_name(t));
  return it->second;
}

/// A variable, parameter, id or constant: as cheap to print twice as once.
bool is_leaf(const ExprPtr& e) { return as<VarRef>(*e) || as<Literal>(*e) || as<Id>(*e); }

/// Whether an expression reads memory (then evaluating it is observable: it may fault).
bool has_load(const ExprPtr& e) {
  struct Scan : IRVisitor {
    bool found = false;
    void visit(const Load&) override { found = true; }
  } scan;
  scan.walk(e);
  return scan.found;
}

/// IR nodes in a statement: the size the unroll policy weighs.
std::int64_t node_count(const StmtPtr& s) {
  struct Count : IRVisitor {
    std::int64_t n = 0;
    void walk(const ExprPtr& e) override {
      ++n;
      IRVisitor::walk(e);
    }
    void walk(const StmtPtr& s) override {
      ++n;
      IRVisitor::walk(s);
    }
  } c;
  c.walk(s);
  return c.n;
}

/// `x` without the parentheses that enclose all of it, if they do.
std::string unparenthesized(const std::string& x) {
  if (x.size() < 2 || x.front() != '(' || x.back() != ')') return x;
  int depth = 0;
  for (std::size_t i = 0; i + 1 < x.size(); ++i) {
    depth += x[i] == '(' ? 1 : x[i] == ')' ? -1 : 0;
    if (depth == 0) return x;  // the first parenthesis closes before the end
  }
  return x.substr(1, x.size() - 2);
}

}  // namespace vantage::cuda::detail
