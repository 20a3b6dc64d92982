// Vantage CUDA C++ emitter: see emit.h. It prints lowered IR (jit/lower) and decides nothing about
// what the kernel does: positions, accesses, barriers and vector copies are all explicit there.
//
// The integer semantics of docs/semantics.md are printed, not assumed: a signed +, -, * or negation
// that may overflow goes through a wrapping helper; a division or remainder that may see zero (or
// MIN / -1), and a shift whose amount may reach the width, go through helpers that give the defined
// result. Where the range analysis proves the edge cannot happen, the plain C++ operator is printed
// and is then defined. Index expressions are computed exactly, in 32 or 64 bits.
#include "jit/cuda/emit.h"

#include <cstdio>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <utility>

#include "jit/ir/eval.h"
#include "jit/ir/printer.h"
#include "jit/ir/range.h"
#include "jit/ir/visit.h"
#include "jit/target/target.h"

namespace vantage::cuda {
namespace {

using namespace ir;

const char* ctype_name(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return "bool";
    case ScalarType::I32: return "int";
    case ScalarType::U32: return "unsigned";
    case ScalarType::I64: return "long long";
    case ScalarType::U64: return "unsigned long long";
    case ScalarType::F16: return "__half";
    case ScalarType::BF16: return "__nv_bfloat16";
    case ScalarType::F32: return "float";
    case ScalarType::F64: return "double";
  }
  return "int";
}

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
  return kWords.count(s) > 0 || s.rfind("vt_", 0) == 0 || s.rfind("__", 0) == 0;
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

class Emitter {
 public:
  explicit Emitter(const EmitOptions& o) : opt_(o) {}

  EmitResult run(const lower::Lowered& lowered) {
    // Thread-local arrays a vector copy reads or writes are declared aligned to the vector.
    struct Vectors : IRVisitor {
      std::unordered_map<const MemNode*, std::int64_t>& align;
      explicit Vectors(std::unordered_map<const MemNode*, std::int64_t>& a) : align(a) {}
      void visit(const VectorCopy& n) override {
        const std::int64_t bytes = n.count * type_bytes(n.src->elem);
        for (const MemNode* m : {n.dst.get(), n.src.get()})
          if (m->space == MemSpace::Local) align[m] = std::max(align[m], bytes);
        IRVisitor::visit(n);
      }
    } vectors(local_align_);
    for (const auto& f : lowered.functions) vectors.walk(f->body);
    vectors.walk(lowered.kernel.body);
    lowered_ = &lowered;
    name_functions(lowered.functions);
    for (const auto& f : lowered.functions) function(*f);
    kernel(lowered.kernel);
    EmitResult r;
    std::ostringstream src;
    src << "// Generated by Vantage for kernel " << lowered.kernel.name << ", " << opt_.threads
        << " threads per block, " << arch_name(opt_.arch) << ". Do not edit.\n";
    if (uses_half_) src << "#include <cuda_fp16.h>\n";
    if (uses_bf16_) src << "#include <cuda_bf16.h>\n";
    if (uses_tf32_)
      src << "static __device__ __forceinline__ unsigned vt_tf32(float x) {\n"
             "  unsigned r;\n  asm(\"cvt.rna.tf32.f32 %0, %1;\" : \"=r\"(r) : \"f\"(x));\n  return r;\n}\n";
    if (!lowered.kernel.tensor_maps.empty())
      src << "// A TMA tensor map (CUtensorMap), made by the runtime at launch and passed by value.\n"
             "struct alignas(128) vt_tensor_map {\n  unsigned long long opaque[16];\n};\n";
    if (uses_wgmma_)
      src << "// The descriptor of a K-major wgmma tile in the 128-byte swizzle layout: start address / 16, the\n"
             "// leading byte offset (unused for this layout: 1), 8-row groups 1024 bytes apart, 128-byte swizzle.\n"
             "static __device__ __forceinline__ unsigned long long vt_wgmma_desc(const void* p) {\n"
             "  unsigned long long a = static_cast<unsigned long long>(__cvta_generic_to_shared(p));\n"
             "  return ((a & 0x3FFFFull) >> 4) | (1ull << 16) | (64ull << 32) | (1ull << 62);\n"
             "}\n";
    if (uses_select_)
      src << "// select evaluates both arms (docs/semantics.md): the arguments of a call all are.\n"
             "template <class T>\nstatic __device__ __forceinline__ T vt_select(bool c, T a, T b) { return c ? a : b; "
             "}\n";
    if (uses_and_) src << "static __device__ __forceinline__ bool vt_and(bool a, bool b) { return a && b; }\n";
    if (uses_or_) src << "static __device__ __forceinline__ bool vt_or(bool a, bool b) { return a || b; }\n";
    if (uses_checks_) {
      // Accesses lowering could not prove inside their memory (docs/runtime.md): the first that
      // leaves records the kernel's tag, the site, the block, the thread, the index and the bound.
      char tag[32];
      std::snprintf(tag, sizeof tag, "%lluull", static_cast<unsigned long long>(lower::check_tag(opt_.entry)));
      src << "static __device__ __noinline__ void vt_fail(unsigned long long* e, int site, long long i, long long n) "
             "{\n"
             "  if (e && atomicCAS(e, 0ull, "
          << tag
          << ") == 0ull) {\n"
             "    e[1] = static_cast<unsigned long long>(site);\n"
             "    e[2] = blockIdx.x;\n"
             "    e[3] = threadIdx.x;\n"
             "    e[4] = static_cast<unsigned long long>(i);\n"
             "    e[5] = static_cast<unsigned long long>(n);\n"
             "    __threadfence_system();\n"
             "  }\n"
             "}\n"
             "template <class T>\n"
             "static __device__ __forceinline__ T vt_fail_zero(unsigned long long* e, int site, long long i, long "
             "long n) {\n"
             "  vt_fail(e, site, i, n);\n"
             "  return T();\n"
             "}\n"
             "template <class T>\n"
             "static __device__ __forceinline__ T vt_ld(const T* p, long long i, long long n, int site, unsigned long "
             "long* "
             "e) {\n"
             "  if (i >= 0 && i < n) return p[i];\n"
             "  vt_fail(e, site, i, n);\n"
             "  return T();\n"
             "}\n"
             "template <class T, class V>\n"
             "static __device__ __forceinline__ void vt_st(T* p, long long i, long long n, V v, int site, unsigned "
             "long "
             "long* e) {\n"
             "  if (i >= 0 && i < n)\n"
             "    p[i] = v;\n"
             "  else\n"
             "    vt_fail(e, site, i, n);\n"
             "}\n";
    }
    if (!helper_text_.empty())
      src << "// Integer operations as docs/semantics.md defines them, where plain C++ would be undefined.\n"
          << helper_text_;
    src << functions_.str() << out_.str();
    r.source = src.str();
    r.shared_bytes = kernel_smem_;
    r.dynamic_shared = kernel_smem_ > target::info(opt_.arch).shared_static_bytes;
    r.problems = std::move(problems_);
    return r;
  }

 private:
  // ------------------------------------------------------------------ types and helpers in use
  /// The C++ type of `t`; notes the 16-bit float headers it needs.
  const char* ctype(ScalarType t) {
    note(t);
    return ctype_name(t);
  }
  void note(ScalarType t) {
    if (t == ScalarType::F16) uses_half_ = true;
    if (t == ScalarType::BF16) uses_bf16_ = true;
  }
  /// Registers helper `vt_<op>` for `t` (and what it calls) and returns its name.
  std::string helper(std::string_view op, ScalarType t) {
    if ((op == "div" || op == "abs") && is_signed(t)) helper("neg", t);
    if (helper_seen_.emplace(op, t).second) helper_text_ += cached_helper_definition(op, t);
    return "vt_" + std::string(op);
  }

  void name_functions(const std::vector<FunctionPtr>& fns) {
    std::set<std::string> taken;
    for (const auto& f : fns) {
      std::string base = "vt_fn_" + identifier(f->name);
      std::string name = base;
      for (int i = 1; taken.count(name); ++i) name = base + "_" + std::to_string(i);
      taken.insert(name);
      fn_names_[f.get()] = name;
    }
  }

  void reset(const StmtPtr& body) {
    names_.clear();
    taken_.clear();
    env_ = RangeEnv();
    env_.thread_index = Range{0, opt_.threads - 1};
    env_.block_index = Range{0, (opt_.blocks ? *opt_.blocks : opt_.max_blocks) - 1};
    // The parameters' ranges the variant assumes (Spec::assume).
    for (const auto& [v, r] : lowered_->options.param_ranges) env_.vars[v] = Range{r.first, r.second};
    reassigned_ = reassigned_vars(body);
  }

  const std::string& name(const void* node, const std::string& base) {
    auto it = names_.find(node);
    if (it != names_.end()) return it->second;
    std::string b = identifier(base);
    std::string n = b;
    for (int i = 1; taken_.count(n); ++i) n = b + "_" + std::to_string(i);
    taken_.insert(n);
    return names_.emplace(node, n).first->second;
  }
  const std::string& name(const VarPtr& v) { return name(v.get(), v->name); }
  const std::string& name(const MemPtr& m) { return name(m.get(), m->name); }

  std::string param_decl(const ParamNode& p) {
    if (p.var) return std::string(ctype(p.var->type)) + " " + name(p.var);
    // __restrict__: kernel pointer arguments must not overlap when one is written (the launcher
    // checks it), and overlapping views passed to a device function are rejected (V0609).
    std::string s = p.mem->is_const ? "const " : "";
    return s + ctype(p.mem->elem) + "* __restrict__ " + name(p.mem);
  }

  // ------------------------------------------------------------------ kernel and functions
  void kernel(const KernelNode& k) {
    reset(k.body);
    out_.str("");
    std::ostringstream sig;
    sig << opt_.entry << "(";
    for (std::size_t i = 0; i < k.params.size(); ++i) sig << param_decl(k.params[i]) << ", ";
    // Where an access checked as it runs records what went wrong (docs/runtime.md; null: nowhere).
    sig << "unsigned long long* __restrict__ vt_err";
    // TMA tensor maps, by value in parameter space (the runtime passes them after the error record).
    for (const auto& m : k.tensor_maps) sig << ", const __grid_constant__ vt_tensor_map " << name(&m, m.name);
    sig << ")";
    indent_ = 1;
    std::ostringstream body;
    std::swap(body, out_);
    stmt(k.body);
    std::swap(body, out_);
    kernel_smem_ = lowered_->shared_bytes;
    // setmaxnreg moves registers between warpgroups of a block that holds the most its launch bounds
    // allow: one block per multiprocessor, so that ptxas knows the count at entry.
    out_ << "extern \"C\" __global__ void __launch_bounds__(" << opt_.threads << (uses_setmaxnreg_ ? ", 1" : "") << ") "
         << sig.str() << " {\n";
    out_ << "  const int vt_tid = static_cast<int>(threadIdx.x);\n";
    out_ << "  const int vt_bid = static_cast<int>(blockIdx.x);\n";
    // Arrays aligned past 16 bytes (TMA and wgmma tiles): the base is aligned as the kernel starts,
    // in the bytes the layout keeps for it.
    const std::int64_t align = lowered_->shared_align;
    const char* base = align > 16 ? "vt_smem_raw" : "vt_smem";
    if (kernel_smem_ > target::info(opt_.arch).shared_static_bytes) {
      out_ << "  extern __shared__ __align__(16) unsigned char " << base << "[];\n";
    } else if (kernel_smem_ > 0) {
      out_ << "  __shared__ __align__(16) unsigned char " << base << "[" << kernel_smem_ << "];\n";
    }
    if (kernel_smem_ > 0 && align > 16)
      out_ << "  unsigned char* const vt_smem = vt_smem_raw + ((" << align
           << "u - static_cast<unsigned>(__cvta_generic_to_shared(vt_smem_raw)) % " << align << "u) % " << align
           << "u);\n";
    out_ << "  (void)vt_tid;\n  (void)vt_bid;\n  (void)vt_err;\n";
    // What the variant assumes of its parameters (Spec::assume, checked by the launcher), told NVCC
    // too: its own division by a constant, and its loops, then need no corrections for a negative.
    for (const auto& p : k.params) {
      if (!p.var) continue;
      auto r = lowered_->options.param_ranges.find(p.var.get());
      if (r == lowered_->options.param_ranges.end()) continue;
      const std::string v = name(p.var);
      out_ << "  __builtin_assume(" << v << " >= " << int_text(p.var->type, r->second.first) << " && " << v
           << " <= " << int_text(p.var->type, r->second.second) << ");\n";
      if (auto m = lowered_->options.param_multiples.find(p.var.get()); m != lowered_->options.param_multiples.end())
        out_ << "  __builtin_assume(" << v << " % " << int_text(p.var->type, m->second) << " == 0);\n";
    }
    out_ << body.str() << "}\n";
  }

  void function(const FunctionNode& f) {
    reset(f.body);
    std::ostringstream text;
    text << "static __device__ __forceinline__ " << (f.returns ? ctype(*f.returns) : "void") << " " << fn_names_.at(&f)
         << "(";
    for (const auto& p : f.params) text << param_decl(p) << ", ";
    text << "int vt_tid, int vt_bid, unsigned char* vt_smem, unsigned long long* vt_err) {\n";
    text << "  (void)vt_tid;\n  (void)vt_bid;\n  (void)vt_smem;\n  (void)vt_err;\n";
    indent_ = 1;
    std::ostringstream body;
    std::swap(body, out_);
    stmt(f.body);
    std::swap(body, out_);
    text << body.str() << "}\n\n";
    functions_ << text.str();
  }

  // ------------------------------------------------------------------ expressions
  std::string expr(const ExprPtr& e) {
    if (!e) throw InternalError("emit: a null expression reached the emitter");
    return dispatch(*e, [&](const auto& n) { return text(n); });
  }

  std::string text(const Literal& l) {
    if (is_integer(l.type) || l.type == ScalarType::Bool) {
      if (!fits(l.type, l.i)) throw InternalError("emit: literal out of range for its type reached the emitter");
      return int_text(l.type, l.i);
    }
    switch (l.type) {
      case ScalarType::F32: return float_text(l.f, true);
      case ScalarType::F64: return float_text(l.f, false);
      case ScalarType::F16: note(l.type); return "__float2half(" + float_text(l.f, true) + ")";
      case ScalarType::BF16: note(l.type); return "__float2bfloat16(" + float_text(l.f, true) + ")";
      default: break;
    }
    throw InternalError("emit: literal of an unknown type");
  }
  std::string text(const VarRef& n) {
    // A 64-bit variable held in an int (narrowed_): widened where it is read, so that every
    // expression keeps its 64-bit meaning and NVCC sees a sign-extended 32-bit value.
    if (narrowed_.count(n.var.get())) return "static_cast<long long>(" + name(n.var) + ")";
    return name(n.var);
  }

  /// The value of the i64 expression `e` computed in int, where that is exact: its parts are 32-bit
  /// values widened (casts from i32, literals, narrowed variables) and every operation's range,
  /// and the result's, fit an int (so no int operation can overflow). Nothing otherwise.
  std::optional<std::string> narrow32(const ExprPtr& e, int depth = 0) {
    if (!e || e->type != ScalarType::I64 || depth > 8) return std::nullopt;
    const Range i32 = Range::of(ScalarType::I32);
    if (auto k = const_int(e); k && i32.contains(*k)) return int_text(ScalarType::I32, *k);
    if (const auto* v = as<VarRef>(*e)) {
      if (narrowed_.count(v->var.get())) return name(v->var);
      return std::nullopt;
    }
    if (const auto* c = as<Cast>(*e)) {
      if (c->a->type == ScalarType::I32) return expr(c->a);
      return std::nullopt;
    }
    const auto* b = as<Binary>(*e);
    if (!b || !(b->op == BinOp::Add || b->op == BinOp::Sub || b->op == BinOp::Mul)) return std::nullopt;
    if (!value_range(e, env_).within(i32) || !value_range(b->a, env_).within(i32) ||
        !value_range(b->b, env_).within(i32))
      return std::nullopt;
    auto x = narrow32(b->a, depth + 1), y = narrow32(b->b, depth + 1);
    if (!x || !y) return std::nullopt;
    return "(" + *x + " " + name_of(b->op) + " " + *y + ")";
  }
  std::string text(const Unary& n) {
    std::string a = expr(n.a);
    if (n.op == UnOp::Neg && is_signed(n.type) && is_integer(n.type) && may_overflow(n, env_))
      return helper("neg", n.type) + "(" + a + ")";
    return std::string("(") + name_of(n.op) + a + ")";
  }

  /// `x` as float, for 16-bit floats computed through float.
  std::string widen(const std::string& x, ScalarType t) {
    note(t);
    return (t == ScalarType::F16 ? "__half2float(" : "__bfloat162float(") + x + ")";
  }
  std::string narrow(const std::string& x, ScalarType t) {
    note(t);
    return (t == ScalarType::F16 ? "__float2half(" : "__float2bfloat16(") + x + ")";
  }

  /// `x % 2^k` of a value that cannot be negative, as the mask `x & (2^k - 1)`; nothing otherwise.
  /// Only in comparisons (`t % 32 < 1`, lane 0's test): in an address NVCC then takes `col % 8 + 8`
  /// for `col | 8` and loses the immediate offset of each shared load.
  std::optional<std::string> masked(const ExprPtr& e) {
    const auto* m = as<Binary>(*e);
    if (!m || m->op != BinOp::Mod || !is_integer(m->type) || !is_signed(m->type)) return std::nullopt;
    auto k = const_int(m->b);
    if (!k || *k < 2 || (*k & (*k - 1)) != 0 || value_range(m->a, env_).lo < 0) return std::nullopt;
    return "(" + expr(m->a) + " & " + int_text(m->type, *k - 1) + ")";
  }

  std::string text(const Binary& n) {
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
          return helper(n.op == BinOp::Add   ? "add"
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
            return "static_cast<" + std::string(ctype(n.type)) + ">(static_cast<" + u + ">(" + unparenthesized(a) +
                   ")" + (n.op == BinOp::Div ? " / " : " % ") + "static_cast<" + u + ">(" + unparenthesized(b) + "))";
          }
          bool min_by_minus_one =
              is_signed(n.type) && d.contains(-1) && value_range(n.a, env_).contains(Range::of(n.type).lo);
          if (min_by_minus_one) return helper(n.op == BinOp::Div ? "div" : "mod", n.type) + "(" + a + ", " + b + ")";
          if (d.contains(0)) {
            // Written out where the operands are names or constants (NVRTC compiles that faster than
            // a call), through vt_div0 / vt_mod0 where an operand would be evaluated twice.
            bool div = n.op == BinOp::Div;
            if (is_leaf(n.b) && (div || is_leaf(n.a)))
              return "(" + b + " == 0 ? " + (div ? int_text(n.type, ir::wrap(n.type, -1)) : a) + " : " + a +
                     (div ? " / " : " % ") + b + ")";
            return helper(div ? "div0" : "mod0", n.type) + "(" + a + ", " + b + ")";
          }
          break;
        }
        if (n.op == BinOp::Mod) return std::string(n.type == ScalarType::F32 ? "fmodf(" : "fmod(") + a + ", " + b + ")";
        break;
      case BinOp::Shl:
      case BinOp::Shr: {
        int width = type_bytes(n.type) * 8;
        if (!value_range(n.b, env_).within(Range{0, width - 1}))
          return helper(n.op == BinOp::Shl ? "shl" : "shr", n.type) + "(" + a + ", " + b + ")";
        break;
      }
      case BinOp::LAnd:
      case BinOp::LOr:
        if (has_load(n.b)) {  // the right operand is evaluated too (and may fault): call, not &&
          (n.op == BinOp::LAnd ? uses_and_ : uses_or_) = true;
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

  std::string text(const Cast& n) {
    ScalarType from = n.a->type, to = n.type;
    std::string a = expr(n.a);
    if (from == to) return a;
    note(from);
    note(to);
    if (to == ScalarType::Bool) {
      if (is_16bit_float(from)) return "(" + widen(a, from) + " != 0.0f)";
      return "(" + a + " != 0)";
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
    if (is_16bit_float(from)) return "static_cast<" + std::string(ctype(to)) + ">(" + widen(a, from) + ")";
    // Integer narrowing is modular (C++20); integer to float rounds to nearest.
    return std::string("static_cast<") + ctype(to) + ">(" + unparenthesized(a) + ")";
  }

  std::string text(const Select& n) {
    std::string c = expr(n.c), a = expr(n.a), b = expr(n.b);
    if (has_load(n.a) || has_load(n.b)) {  // both arms are evaluated: make it a call
      uses_select_ = true;
      return "vt_select<" + std::string(ctype(n.type)) + ">(" + c + ", " + a + ", " + b + ")";
    }
    return "(" + c + " ? " + a + " : " + b + ")";
  }

  std::string text(const MathCall& n) {
    ScalarType t = n.type;
    std::vector<std::string> args;
    for (const auto& a : n.args) args.push_back(expr(a));
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
          return "static_cast<" + std::string(ctype(t)) + ">(__brev" + ll + "(static_cast<" + u + ">(" + args[0] +
                 ")))";
      }
    }
    if (n.fn == MathFn::Abs && is_integer(t)) {
      if (!is_signed(t)) return args[0];
      if (value_range(n.args[0], env_).contains(Range::of(t).lo)) return helper("abs", t) + "(" + args[0] + ")";
      return std::string(t == ScalarType::I64 ? "llabs(" : "abs(") + args[0] + ")";
    }
    static const char* const kNames[] = {"sqrt", "rsqrt", "exp",  "exp2",  "log",  "log2", "sin",
                                         "cos",  "tanh",  "fabs", "floor", "ceil", "fma"};
    std::string f = kNames[static_cast<int>(n.fn)];
    if (is_16bit_float(t)) {
      if (n.fn == MathFn::Fma) {
        note(t);
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

  std::string text(const Id&) { throw InternalError("emit: an id() reached the printer; lower the kernel first"); }
  std::string text(const Builtin& n) {
    switch (n.which) {
      case BuiltinKind::ThreadInBlock: return "vt_tid";
      case BuiltinKind::BlockInGrid: return "vt_bid";
      case BuiltinKind::BlocksInGrid: return "static_cast<int>(gridDim.x)";
    }
    return "?";
  }
  std::string text(const Load& n) {
    if (!n.bound) return access(n.mem, n.indices, n.loc);
    uses_checks_ = true;
    return "vt_ld(" + name(n.mem) + ", " + index(n.indices[0], n.loc) + ", " + expr(n.bound) + ", " +
           std::to_string(n.site) + ", vt_err)";
  }

  // ------------------------------------------------------------------ accesses and index arithmetic
  /// An access to root memory at a flat index (lowered IR has no other kind).
  std::string access(const MemPtr& m, const std::vector<ExprPtr>& idx, SourceLoc loc) {
    return name(m) + "[" + index(idx.empty() ? nullptr : idx[0], loc) + "]";
  }

  /// An index, computed exactly: in int when every intermediate provably fits 32 bits, in long long
  /// when it fits 64, and otherwise not at all (V1006).
  std::string index(const ExprPtr& e, SourceLoc loc) {
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

  /// A 64-bit sum whose products share a factor, as composing a block's partition with a thread's
  /// gives (`brow * 32 * M + bcol * 32 + tr * M + tc`), with those products as one: their other
  /// factors summed in int where that sum fits (`(brow * 32 + tr) * M`), one widening multiply where
  /// there were several. Nothing where no two products share a factor.
  std::optional<std::string> factored_sum(const ExprPtr& e) {
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

  std::string exact_index(const ExprPtr& e, ScalarType w) {
    if (w == ScalarType::I64)
      if (auto f = factored_sum(e)) return *f;
    // In a 64-bit index, a part whose value and intermediates fit 32 bits is computed in int and
    // widened once: `static_cast<long long>(row * 32 + tr) * K` rather than four 64-bit operations.
    if (w == ScalarType::I64 && is_exact_index_op(*e))
      if (auto r = index_ranges_.find(e.get());
          r != index_ranges_.end() && r->second.within(Range::of(ScalarType::I32)))
        return "static_cast<long long>(" + unparenthesized(exact_index(e, ScalarType::I32)) + ")";
    if (!is_exact_index_op(*e)) {
      if (auto k = const_int(e)) return int_text(w, static_cast<std::int64_t>(exact(e->type, *k)));
      if (const auto* v = as<VarRef>(*e); v && narrowed_.count(v->var.get()))
        return w == ScalarType::I32 ? name(v->var) : "static_cast<long long>(" + name(v->var) + ")";
      std::string v = expr(e);
      return e->type == w ? v : "static_cast<" + std::string(ctype(w)) + ">(" + v + ")";
    }
    if (const auto* u = as<Unary>(*e)) return "(-" + exact_index(u->a, w) + ")";
    const auto& b = static_cast<const Binary&>(*e);
    std::string x = exact_index(b.a, w), y = exact_index(b.b, w);
    if (b.op == BinOp::Min || b.op == BinOp::Max)
      return std::string(b.op == BinOp::Min ? "min(" : "max(") + x + ", " + y + ")";
    if (b.op == BinOp::Shl) return "(" + x + " * " + int_text(w, std::int64_t{1} << *const_int(b.b)) + ")";
    return "(" + x + " " + name_of(b.op) + " " + y + ")";
  }

  // ------------------------------------------------------------------ statements
  void ind() { out_ << std::string(static_cast<std::size_t>(indent_) * 2, ' '); }
  void line(const SourceLoc& loc) {
    if (!loc.known() || !loc.file || !*loc.file) return;
    // A kernel's lines come from a few files: quote each once.
    auto it = quoted_.find(loc.file);
    if (it == quoted_.end()) it = quoted_.emplace(loc.file, quote_path(loc.file)).first;
    out_ << "#line " << loc.line << " " << it->second << "\n";
  }

  void emit(const ir::Barrier& b, const StmtPtr&) {
    if (b.async_wait) {
      ind();
      out_ << "asm volatile(\"cp.async.wait_all;\" ::: \"memory\");\n";
    }
    ind();
    switch (b.how) {
      case BarrierKind::Block: out_ << "__syncthreads();\n"; return;
      case BarrierKind::Warp: out_ << "__syncwarp();\n"; return;
      case BarrierKind::WarpPart:
        out_ << "__syncwarp(((1u << " << b.threads << ") - 1u) << (threadIdx.x & 31u & ~" << (b.threads - 1)
             << "u));\n";
        return;
      case BarrierKind::Named:
        // One id per unit of n threads: base + the unit's index in the block.
        out_ << "asm volatile(\"bar.sync %0, %1;\" :: \"r\"(" << b.id_base << "u + threadIdx.x / " << b.threads
             << "u), \"n\"(" << b.threads << ") : \"memory\");\n";
        return;
      case BarrierKind::NamedFixed:
        out_ << "asm volatile(\"bar.sync %0, %1;\" :: \"r\"(" << b.id_base << "), \"r\"(" << b.threads
             << ") : \"memory\");\n";
        return;
      case BarrierKind::Planned: break;
    }
    throw InternalError("emit: a barrier that was not lowered");
  }
  void emit(const VectorCopy& n, const StmtPtr&) {
    std::string vt = vector_type(n.dst->elem, n.count);
    ind();
    out_ << "*reinterpret_cast<" << vt << "*>(&" << name(n.dst) << "[" << index(n.dst_index, n.loc)
         << "]) = *reinterpret_cast<const " << vt << "*>(&" << name(n.src) << "[" << index(n.src_index, n.loc)
         << "]);\n";
  }

  void stmt(const StmtPtr& s) {
    if (!s) return;
    if (const auto* seq = as<Seq>(*s)) {
      for (const auto& c : seq->stmts) stmt(c);
      return;
    }
    line(s->loc);
    dispatch(*s, [&](const auto& n) { emit(n, s); });
  }

  void nested(const StmtPtr& s) {
    ++indent_;
    stmt(s);
    --indent_;
  }

  void emit(const Seq& n, const StmtPtr&) {
    for (const auto& c : n.stmts) stmt(c);
  }
  void emit(const Let& n, const StmtPtr&) {
    ind();
    // A loop's value of the iteration (Scope::for_ with a step rule) that its body may not use.
    if (n.var->origin == VarNode::Origin::Loop) out_ << "[[maybe_unused]] ";
    // A 64-bit value that fits an int and is computed from 32-bit ones: held in an int (text(VarRef)).
    if (!reassigned_.count(n.var.get()) && n.var->type == ScalarType::I64 &&
        value_range(n.value, env_).within(Range::of(ScalarType::I32)))
      if (auto narrow = narrow32(n.value)) {
        out_ << "int " << name(n.var) << " = " << unparenthesized(*narrow) << ";\n";
        env_.vars[n.var.get()] = value_range(n.value, env_);
        narrowed_.insert(n.var.get());
        return;
      }
    out_ << ctype(n.var->type) << " " << name(n.var) << " = " << expr(n.value) << ";\n";
    if (!reassigned_.count(n.var.get()) && is_integer(n.var->type)) env_.vars[n.var.get()] = value_range(n.value, env_);
  }
  void emit(const Assign& n, const StmtPtr&) {
    ind();
    out_ << name(n.var) << " = " << expr(n.value) << ";\n";
  }
  void emit(const Store& n, const StmtPtr&) {
    ind();
    uses_checks_ = uses_checks_ || n.bound;
    if (n.bound)
      out_ << "vt_st(" << name(n.mem) << ", " << index(n.indices[0], n.loc) << ", " << expr(n.bound) << ", "
           << expr(n.value) << ", " << n.site << ", vt_err);\n";
    else
      out_ << access(n.mem, n.indices, n.loc) << " = " << expr(n.value) << ";\n";
  }
  void emit(const If& n, const StmtPtr&) {
    ind();
    out_ << "if (" << unparenthesized(expr(n.cond)) << ") {\n";
    nested(n.then_body);
    ind();
    out_ << "}";
    if (n.else_body) {
      out_ << " else {\n";
      nested(n.else_body);
      ind();
      out_ << "}";
    }
    out_ << "\n";
  }
  void emit(const For& n, const StmtPtr&) {
    auto b = const_int(n.begin), e = const_int(n.end), st = const_int(n.step);
    const ScalarType t = n.var->type;
    // docs/semantics.md, "Loops": bounds and step are evaluated once, before the first iteration; a
    // bound or step that is not a literal or an unassigned variable is held in a constant.
    bool opened = false;
    auto once = [&](const ExprPtr& x, const void* key, const std::string& base) {
      std::string text = expr(x);
      const auto* ref = as<VarRef>(*x);
      if (as<Literal>(*x) || (ref && !reassigned_.count(ref->var.get()))) return text;
      if (!opened) {
        ind();
        out_ << "{\n";
        ++indent_;
        opened = true;
      }
      std::string held = name(key, base);
      ind();
      out_ << "const " << ctype(t) << " " << held << " = " << text << ";\n";
      return held;
    };
    std::string begin = expr(n.begin);
    std::string end = once(n.end, &n.end, n.var->name + "_end"), step = once(n.step, &n.step, n.var->name + "_step");
    std::string v = name(n.var);
    // The variable's range inside the body: begin up to end - 1 (step > 0) or down to end + 1.
    Range rb = value_range(n.begin, env_), re = value_range(n.end, env_), rs = value_range(n.step, env_);
    // The direction: up when the step cannot be negative, down when it cannot be positive (a step of
    // zero runs no iteration, so a step that may be zero adds that test).
    bool up = rs.lo >= 0, down = !up && rs.hi <= 0, may_be_zero = rs.contains(0);
    Range full = Range::of(t);
    Range var = full;
    if (up) var = Range{rb.lo, std::max(rb.lo, re.hi - 1)};
    if (down) var = Range{std::min(rb.hi, re.lo + 1), rb.hi};
    if (var.within(full)) env_.vars[n.var.get()] = var;
    // The counter never wraps: the loop ends when the next value would pass `end`. Where the range
    // analysis proves `v + step` stays in the type, the plain `v < end; v += step` says exactly that;
    // otherwise the step is taken only while the distance left to `end` (exact in the unsigned type,
    // as `v` is strictly before `end`) exceeds it.
    Range next{var.lo + rs.lo, var.hi + rs.hi};
    bool plain = (up || down) && var.within(full) && next.within(full);
    std::string u = type_bytes(t) == 8 ? "unsigned long long" : "unsigned";
    auto cast_u = [&](const std::string& x) { return "static_cast<" + u + ">(" + x + ")"; };
    std::string step_up =
        v + " = " + cast_u(end) + " - " + cast_u(v) + " > " + cast_u(step) + " ? " + v + " + " + step + " : " + end;
    std::string step_down = v + " = " + cast_u(v) + " - " + cast_u(end) + " > " + cast_u("0") + " - " + cast_u(step) +
                            " ? " + v + " + " + step + " : " + end;
    std::string cond, inc;
    if (up || down) {
      cond = v + (up ? " < " : " > ") + end;
      if (may_be_zero) cond = step + " != 0 && " + cond;
      inc = plain ? v + " += " + step : (up ? step_up : step_down);
    } else {
      // A step of unknown sign: up when positive, down when negative, no iteration when zero.
      cond = "(" + step + " > 0 ? " + v + " < " + end + " : " + step + " < 0 && " + v + " > " + end + ")";
      inc = step + " > 0 ? (" + step_up + ") : (" + step_down + ")";
    }
    if (b && e && st && *st != 0) {
      std::int64_t trips =
          *st > 0 ? (*e > *b ? (*e - *b + *st - 1) / *st : 0) : (*b > *e ? (*b - *e - *st - 1) / -*st : 0);
      int factor = unroll_factor(trips, node_count(n.body));
      if (factor == 0 || factor < trips) {
        ind();
        out_ << "#pragma unroll" << (factor == 0 ? std::string() : " " + std::to_string(factor)) << "\n";
      }
    }
    ind();
    out_ << "for (" << ctype(t) << " " << v << " = " << begin << "; " << cond << "; " << inc << ") {\n";
    nested(n.body);
    ind();
    out_ << "}\n";
    if (opened) {
      --indent_;
      ind();
      out_ << "}\n";
    }
  }
  void emit(const Jump& n, const StmtPtr&) {
    ind();
    out_ << (n.is_break ? "break;\n" : "continue;\n");
  }
  void emit(const While& n, const StmtPtr&) {
    ind();
    out_ << "while (" << unparenthesized(expr(n.cond)) << ") {\n";
    nested(n.body);
    ind();
    out_ << "}\n";
  }
  template <class N>
  requires(std::is_same_v<N, Group> || std::is_same_v<N, Split> || std::is_same_v<N, Destruct> ||
           std::is_same_v<N, Partition> || std::is_same_v<N, Claim> || std::is_same_v<N, Lower> ||
           std::is_same_v<N, Async>) void emit(const N&, const StmtPtr&) {
    throw InternalError("emit: a perspective or view construct reached the printer; lower the kernel first");
  }
  void emit(const SharedAlloc& n, const StmtPtr&) {
    ind();
    out_ << ctype(n.mem->elem) << "* const " << name(n.mem) << " = reinterpret_cast<" << ctype(n.mem->elem)
         << "*>(vt_smem + " << lowered_->shared_offsets.at(n.mem.get()) << ");\n";
  }
  void emit(const LocalAlloc& n, const StmtPtr&) {
    ind();
    if (auto a = local_align_.find(n.mem.get()); a != local_align_.end()) out_ << "alignas(" << a->second << ") ";
    out_ << ctype(n.mem->elem) << " " << name(n.mem) << "[" << n.count << "];\n";
  }
  void emit(const Call& n, const StmtPtr&) {
    // Lowered ABI: pointer arguments as (root, flat offset), then thread position, block position
    // and shared-memory offset (-1: none).
    if (n.args.size() < lower::kAbiArgs) throw InternalError("emit: a call without its ABI arguments");
    std::size_t user = n.args.size() - lower::kAbiArgs;
    ind();
    if (n.result) out_ << ctype(n.result->type) << " " << name(n.result) << " = ";
    out_ << fn_names_.at(n.fn.get()) << "(";
    for (std::size_t i = 0; i < user; ++i) {
      const auto& a = n.args[i];
      if (a.mem)
        out_ << "&" << name(a.mem) << "[" << index(a.value, n.loc) << "]";
      else
        out_ << expr(a.value);
      out_ << ", ";
    }
    auto smem = const_int(n.args[user + 2].value);
    out_ << expr(n.args[user].value) << ", " << expr(n.args[user + 1].value) << ", "
         << (smem && *smem >= 0 ? "vt_smem + " + std::to_string(*smem) : std::string("nullptr")) << ", vt_err);\n";
  }

  void emit(const Unsafe& n, const StmtPtr&) {
    ind();
    out_ << "{\n";
    for (const auto& [nm, e] : n.inputs) {
      ind();
      out_ << "  const auto " << nm << " = " << expr(e) << ";\n";
    }
    for (const auto& [nm, v] : n.outputs) {
      ind();
      out_ << "  auto& " << nm << " = " << name(v) << ";\n";
    }
    line(n.loc);
    out_ << n.cuda << "\n";
    ind();
    out_ << "}\n";
  }
  void emit(const Return& n, const StmtPtr&) {
    ind();
    out_ << "return" << (n.value ? " " + expr(n.value) : "") << ";\n";
  }

  void emit(const Intrinsic& n, const StmtPtr&) {
    auto arg = [&](std::size_t i) { return expr(n.args[i]); };
    auto out = [&](ScalarType t) {
      ind();
      out_ << ctype(t) << " " << name(n.outputs[0]) << " = ";
    };
    auto addr = [&](std::size_t mem, const ExprPtr& idx) { return "&" + access(n.mems[mem], {idx}, n.loc); };
    switch (n.op) {
      case IntrinsicOp::SyncThreads:
      case IntrinsicOp::SyncWarp:
      case IntrinsicOp::NamedBarrier: throw InternalError("emit: a barrier intrinsic that was not lowered");
      case IntrinsicOp::ShflXor:
      case IntrinsicOp::ShflDown:
      case IntrinsicOp::ShflUp:
      case IntrinsicOp::ShflIdx: {
        static const char* const kFns[] = {"__shfl_xor_sync", "__shfl_down_sync", "__shfl_up_sync", "__shfl_sync"};
        int k = static_cast<int>(n.op) - static_cast<int>(IntrinsicOp::ShflXor);
        out(n.outputs[0]->type);
        out_ << kFns[k] << "(0xffffffffu, " << arg(0) << ", " << arg(1) << ");\n";
        break;
      }
      case IntrinsicOp::VoteAll:
        out(ScalarType::Bool);
        out_ << "__all_sync(0xffffffffu, " << arg(0) << ") != 0;\n";
        break;
      case IntrinsicOp::VoteAny:
        out(ScalarType::Bool);
        out_ << "__any_sync(0xffffffffu, " << arg(0) << ") != 0;\n";
        break;
      case IntrinsicOp::Ballot:
        out(ScalarType::U32);
        out_ << "__ballot_sync(0xffffffffu, " << arg(0) << ");\n";
        break;
      case IntrinsicOp::Atomic: atomic(n); break;
      case IntrinsicOp::MmaSync: mma(n); break;
      case IntrinsicOp::Ldmatrix: {
        int count = static_cast<int>(n.imms[0]);
        std::string d = name(n.mems[0]);
        ind();
        out_ << "asm volatile(\"ldmatrix.sync.aligned.m8n8.x" << count << ".shared.b16 {";
        for (int i = 0; i < count; ++i) out_ << (i ? ", " : "") << "%" << i;
        out_ << "}, [%" << count << "];\" : ";
        for (int i = 0; i < count; ++i) out_ << (i ? ", " : "") << "\"=r\"(" << d << "[" << i << "])";
        out_ << " : \"r\"(static_cast<unsigned>(__cvta_generic_to_shared(" << addr(1, n.args[0]) << "))));\n";
        break;
      }
      case IntrinsicOp::Wgmma: wgmma(n); break;
      case IntrinsicOp::WgmmaFence:
        ind();
        out_ << "asm volatile(\"wgmma.fence.sync.aligned;\" ::: \"memory\");\n";
        break;
      case IntrinsicOp::WgmmaCommit:
        ind();
        out_ << "asm volatile(\"wgmma.commit_group.sync.aligned;\" ::: \"memory\");\n";
        break;
      case IntrinsicOp::WgmmaWait:
        ind();
        out_ << "asm volatile(\"wgmma.wait_group.sync.aligned %0;\" :: \"n\"(" << n.imms[0] << ") : \"memory\");\n";
        break;
      case IntrinsicOp::CpAsync: {
        // Checked where lowering could not prove a side inside its memory (imms 1 and 2: the sites,
        // args 2 and 3: the bounds): a copy that would leave it is reported and not made.
        std::string guard;
        if (n.imms.size() > 2) {
          uses_checks_ = true;
          const std::int64_t count = n.imms[0] / type_bytes(n.mems[0]->elem);
          for (std::size_t side = 0; side < 2; ++side) {
            if (n.imms[1 + side] < 0) continue;
            const std::string i = index(n.args[side], n.loc), bound = expr(n.args[2 + side]);
            ind();
            out_ << guard << "if (!((" << i << ") >= 0 && (" << i << ") + " << count << " <= (" << bound
                 << "))) vt_fail(vt_err, " << n.imms[1 + side] << ", " << i << ", " << bound << ");\n";
            guard = "else ";
          }
        }
        ind();
        out_ << guard << "asm volatile(\"cp.async." << (n.imms[0] == 16 ? "cg" : "ca") << ".shared.global [%0], [%1], "
             << n.imms[0] << ";\" :: \"r\"(static_cast<unsigned>(__cvta_generic_to_shared(" << addr(0, n.args[0])
             << "))), \"l\"(" << addr(1, n.args[1]) << ") : \"memory\");\n";
        break;
      }
      case IntrinsicOp::CpAsyncCommit:
        ind();
        out_ << "asm volatile(\"cp.async.commit_group;\" ::: \"memory\");\n";
        break;
      case IntrinsicOp::CpAsyncWait:
        ind();
        out_ << "asm volatile(\"cp.async.wait_group %0;\" :: \"n\"(" << n.imms[0] << ") : \"memory\");\n";
        break;
      case IntrinsicOp::TmaLoad2D: {
        // args: column, row, the mbarrier's slot (resolved), the destination's first element.
        const TensorMapNode& m = lowered_->kernel.tensor_maps.at(static_cast<std::size_t>(n.imms[0]));
        ind();
        out_ << "asm volatile(\"cp.async.bulk.tensor.2d.shared::cluster.global.mbarrier::complete_tx::bytes [%0], "
                "[%1, {%2, %3}], [%4];\" :: \"r\"("
             << smem(n, 0, n.args[3]) << "), \"l\"(reinterpret_cast<unsigned long long>(&" << name(&m, m.name)
             << ")), \"r\"(" << arg(0) << "), \"r\"(" << arg(1) << "), \"r\"(" << smem(n, 1, n.args[2])
             << ") : \"memory\");\n";
        break;
      }
      case IntrinsicOp::MbarrierInit:
        // The fence makes the initialised barrier visible to TMA (the async proxy).
        ind();
        out_ << "asm volatile(\"mbarrier.init.shared::cta.b64 [%0], %1;\\n\\tfence.proxy.async.shared::cta;\" :: \"r\"("
             << smem(n, 0, n.args[1]) << "), \"r\"(" << arg(0) << ") : \"memory\");\n";
        break;
      case IntrinsicOp::MbarrierArrive:
        ind();
        out_ << "asm volatile(\"{ .reg .b64 vt_state; mbarrier.arrive.shared::cta.b64 vt_state, [%0]; }\" :: \"r\"("
             << smem(n, 0, n.args[0]) << ") : \"memory\");\n";
        break;
      case IntrinsicOp::MbarrierExpectTx:
        ind();
        out_ << "asm volatile(\"mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;\" :: \"r\"("
             << smem(n, 0, n.args[0]) << "), \"r\"(" << n.imms[0] << ") : \"memory\");\n";
        break;
      case IntrinsicOp::MbarrierWait:
        ind();
        out_ << "asm volatile(\"{ .reg .pred vt_p; vt_wait: mbarrier.try_wait.parity.shared::cta.b64 vt_p, [%0], %1; "
                "@!vt_p bra vt_wait; }\" :: \"r\"("
             << smem(n, 0, n.args[1]) << "), \"r\"(" << arg(0) << ") : \"memory\");\n";
        break;
      case IntrinsicOp::SetMaxNreg:
        uses_setmaxnreg_ = true;
        ind();
        out_ << "asm volatile(\"setmaxnreg." << (n.imms[1] ? "inc" : "dec") << ".sync.aligned.u32 " << n.imms[0]
             << ";\");\n";
        break;
    }
  }

  /// The shared-state address (32 bits) of element `index` of memory operand `mem`.
  std::string smem(const Intrinsic& n, std::size_t mem, const ExprPtr& index) {
    return "static_cast<unsigned>(__cvta_generic_to_shared(" + address(n, mem, index) + "))";
  }
  std::string address(const Intrinsic& n, std::size_t mem, const ExprPtr& index) {
    return "&" + access(n.mems[mem], {index}, n.loc);
  }

  /// An atomic in the form the target table gives: native, or on the bits as unsigned 64-bit. One
  /// lowering could not prove in bounds (a bound argument and a site) runs only inside its memory;
  /// outside, it records the failure as a checked store does, and its old value is 0.
  void atomic(const Intrinsic& n) {
    static const char* const kFns[] = {"atomicAdd", "atomicMin", "atomicMax", "atomicExch"};
    auto op = static_cast<AtomicKind>(n.imms[0]);
    ScalarType t = n.mems[0]->elem;
    const char* fn = kFns[static_cast<int>(op)];
    const std::string address = "&" + access(n.mems[0], {n.args[0]}, n.loc), value = expr(n.args[1]);
    std::string call;
    switch (target::atomic_support(op, t)) {
      case target::AtomicSupport::Native: call = std::string(fn) + "(" + address + ", " + value + ")"; break;
      case target::AtomicSupport::AsUnsigned64:
        if (t == ScalarType::F64) {
          call = "__longlong_as_double(static_cast<long long>(" + std::string(fn) +
                 "(reinterpret_cast<unsigned long long*>(" + address +
                 "), static_cast<unsigned long long>(__double_as_longlong(" + value + ")))))";
        } else {
          call = "static_cast<" + std::string(ctype(t)) + ">(" + fn + "(reinterpret_cast<unsigned long long*>(" +
                 address + "), static_cast<unsigned long long>(" + value + ")))";
        }
        break;
      case target::AtomicSupport::None: throw InternalError("emit: an atomic the checker should have rejected");
    }
    const bool checked = n.args.size() > 2 && n.imms.size() > 1;
    const bool result = !n.outputs.empty();
    if (!checked) {
      ind();
      if (result) out_ << ctype(t) << " " << name(n.outputs[0]) << " = ";
      out_ << call << ";\n";
      return;
    }
    uses_checks_ = true;
    const std::string i = index(n.args[0], n.loc), bound = expr(n.args[2]);
    const std::string inside = "(" + i + ") >= 0 && (" + i + ") < (" + bound + ")";
    const std::string fail = std::to_string(n.imms[1]) + ", " + i + ", " + bound;
    ind();
    if (result) {
      // One initialized variable, as the unchecked form has (NVRTC warns about one set in a branch and
      // never read).
      out_ << ctype(t) << " " << name(n.outputs[0]) << " = (" << inside << ") ? " << call << " : vt_fail_zero<"
           << ctype(t) << ">(vt_err, " << fail << ");\n";
    } else {
      out_ << "if (" << inside << ") " << call << "; else vt_fail(vt_err, " << fail << ");\n";
    }
  }

  void mma(const Intrinsic& n) {
    auto kind = static_cast<MmaShape>(n.imms[0]);
    std::string d = name(n.mems[0]), a = name(n.mems[1]), b = name(n.mems[2]), c = name(n.mems[3]);
    ind();
    if (kind == MmaShape::TF32_M16N8K8) {
      uses_tf32_ = true;
      out_ << "asm volatile(\"mma.sync.aligned.m16n8k8.row.col.f32.tf32.tf32.f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, "
              "{%8, %9}, {%10, %11, %12, %13};\" : \"=f\"("
           << d << "[0]), \"=f\"(" << d << "[1]), \"=f\"(" << d << "[2]), \"=f\"(" << d << "[3]) : ";
      for (int i = 0; i < 4; ++i) out_ << "\"r\"(vt_tf32(" << a << "[" << i << "])), ";
      for (int i = 0; i < 2; ++i) out_ << "\"r\"(vt_tf32(" << b << "[" << i << "])), ";
    } else {
      const char* t = kind == MmaShape::F16_M16N8K16 ? "f16" : "bf16";
      out_ << "asm volatile(\"mma.sync.aligned.m16n8k16.row.col.f32." << t << "." << t
           << ".f32 {%0, %1, %2, %3}, {%4, %5, %6, %7}, {%8, %9}, {%10, %11, %12, %13};\" : \"=f\"(" << d
           << "[0]), \"=f\"(" << d << "[1]), \"=f\"(" << d << "[2]), \"=f\"(" << d << "[3]) : ";
      for (int i = 0; i < 4; ++i) out_ << "\"r\"(*reinterpret_cast<const unsigned*>(&" << a << "[" << 2 * i << "])), ";
      for (int i = 0; i < 2; ++i) out_ << "\"r\"(*reinterpret_cast<const unsigned*>(&" << b << "[" << 2 * i << "])), ";
    }
    for (int i = 0; i < 4; ++i) out_ << (i ? ", " : "") << "\"f\"(" << c << "[" << i << "])";
    out_ << ");\n";
  }

  /// wgmma on tiles in the 128-byte swizzle layout: args are the A and B tiles' first elements (their
  /// K step included), which lowering proved inside their arrays and on 1024-byte groups.
  void wgmma(const Intrinsic& n) {
    uses_wgmma_ = true;
    int width = static_cast<int>(n.imms[0]);
    int regs = width / 2;
    std::string acc = name(n.mems[0]);
    const char* t = n.mems[1]->elem == ScalarType::BF16 ? "bf16" : "f16";
    ind();
    out_ << "asm volatile(\"{ wgmma.mma_async.sync.aligned.m64n" << width << "k16.f32." << t << "." << t << " {";
    for (int i = 0; i < regs; ++i) out_ << (i ? ", " : "") << "%" << i;
    out_ << "}, %" << regs << ", %" << regs + 1 << ", 1, 1, 1, 0, 0; }\" : ";
    for (int i = 0; i < regs; ++i) out_ << (i ? ", " : "") << "\"+f\"(" << acc << "[" << i << "])";
    out_ << " : \"l\"(vt_wgmma_desc(" << address(n, 1, n.args[0]) << ")), \"l\"(vt_wgmma_desc("
         << address(n, 2, n.args[1]) << ")) : \"memory\");\n";
  }

  static std::string vector_type(ScalarType t, std::int64_t count) {
    bool fp = is_float(t);
    if (type_bytes(t) == 4) return std::string(fp ? "float" : "int") + std::to_string(count);
    return std::string(fp ? "double" : "longlong") + std::to_string(count);
  }

  EmitOptions opt_;
  std::ostringstream out_, functions_;
  int indent_ = 1;
  std::unordered_map<const void*, std::string> names_;
  std::set<std::string> taken_;
  RangeEnv env_;
  std::unordered_set<const VarNode*> reassigned_;
  std::unordered_set<const VarNode*> narrowed_;  ///< i64 lets held in an int (emit(Let))
  const lower::Lowered* lowered_ = nullptr;
  std::unordered_map<const FunctionNode*, std::string> fn_names_;
  std::int64_t kernel_smem_ = 0;
  std::vector<Diagnostic> problems_;
  std::set<std::pair<std::string_view, ScalarType>> helper_seen_;
  std::unordered_map<const char*, std::string> quoted_;  ///< source file names, quoted for #line
  ExactRanges index_ranges_;                             ///< the index being printed: each exact operation's envelope
  std::string helper_text_;
  bool uses_checks_ = false;
  bool uses_wgmma_ = false, uses_setmaxnreg_ = false;
  std::unordered_map<const MemNode*, std::int64_t>
      local_align_;  ///< local arrays vector copies use: their vector's bytes
  bool uses_half_ = false, uses_bf16_ = false, uses_tf32_ = false, uses_select_ = false, uses_and_ = false,
       uses_or_ = false;
};

}  // namespace

int unroll_factor(std::int64_t trips, std::int64_t size) {
  constexpr int kFactor = 4;
  // A loop of no more trips than the factor costs no more unrolled than the factor would make it.
  return trips <= kFactor || (trips <= 32 && trips * size <= 1024) ? 0 : kFactor;
}

EmitResult emit(const lower::Lowered& lowered, const EmitOptions& options) { return Emitter(options).run(lowered); }

}  // namespace vantage::cuda
