// Vantage IR printer: see printer.h. Output is deterministic and free of source locations so that
// golden files stay stable when user code moves.
#include "jit/ir/printer.h"

#include "jit/ir/eval.h"

#include <cctype>
#include <cstdio>
#include <map>
#include <set>
#include <sstream>
#include <unordered_map>
#include <unordered_set>

namespace vantage::ir {
namespace {

std::string quote(const std::string& s) {
  std::string out = "\"";
  for (char c : s) {
    switch (c) {
      case '"': out += "\\\""; break;
      case '\\': out += "\\\\"; break;
      case '\n': out += "\\n"; break;
      case '\t': out += "\\t"; break;
      default: out += c;
    }
  }
  return out + "\"";
}

std::string literal_text(const Literal& l) {
  switch (l.type) {
    case ScalarType::Bool: return l.i ? "true" : "false";
    case ScalarType::I32: return std::to_string(l.i);
    case ScalarType::U32: return std::to_string(static_cast<std::uint32_t>(l.i)) + "u";
    case ScalarType::I64: return std::to_string(l.i) + "l";
    case ScalarType::U64: return std::to_string(static_cast<std::uint64_t>(l.i)) + "ul";
    case ScalarType::I8:
    case ScalarType::U8:
    case ScalarType::I16:
    case ScalarType::U16: return std::to_string(l.i) + type_name(l.type);
    default: break;
  }
  char buf[64];
  std::snprintf(buf, sizeof buf, "%.9g", l.f);
  std::string s = buf;
  if (s.find_first_of(".eEn") == std::string::npos) s += ".0";
  if (l.type == ScalarType::F32) return s + "f";
  if (l.type == ScalarType::F64) return s;
  return s + ":" + type_name(l.type);
}

class Printer {
 public:
  std::string kernel(const KernelNode& k) {
    for (const auto* f : called_functions(k.body)) function_text(*f);
    for (const auto& p : k.params) declare_param(p);
    out_ << "kernel " << k.name << "\n";
    if (k.threads) out_ << "  threads " << *k.threads << "\n";
    if (k.grid_blocks) out_ << "  grid_blocks " << *k.grid_blocks << "\n";
    if (k.grid_multiple != 1) out_ << "  grid_multiple_of " << k.grid_multiple << "\n";
    if (k.cluster != 1) out_ << "  cluster " << k.cluster << "\n";
    if (k.min_blocks != 0) out_ << "  min_blocks_per_sm " << k.min_blocks << "\n";
    out_ << "  shared_budget " << k.shared_budget << "\n";
    for (const auto& p : k.params) param_line(p, std::nullopt);
    for (const auto& r : k.requirements) out_ << "  require " << expr(r.cond) << "\n";
    body_block(k.body, 0);
    return out_.str();
  }

  std::string function(const FunctionNode& f) {
    for (const auto* g : called_functions(f.body)) function_text(*g);
    function_text(f);
    return out_.str();
  }

 private:
  void function_text(const FunctionNode& f) {
    names_.clear();
    taken_.clear();
    for (const auto& p : f.params) declare_param(p);
    out_ << "function " << f.name << "\n  requires " << f.signature.str() << "\n  shared_budget " << f.shared_budget
         << "\n";
    if (f.returns) out_ << "  returns " << type_name(*f.returns) << "\n";
    for (const auto& p : f.params) param_line(p, p.at.value_or(f.signature));
    body_block(f.body, 0);
    out_ << "\n";
    names_.clear();
    taken_.clear();
  }

  void declare_param(const ParamNode& p) {
    if (p.var) name_of_node(p.var.get(), p.var->name);
    if (p.mem) name_of_node(p.mem.get(), p.mem->name);
  }

  void param_line(const ParamNode& p, std::optional<Perspective> at) {
    out_ << "  param ";
    if (p.var) {
      out_ << name(p.var) << ": " << type_name(p.var->type);
    } else if (p.mem) {
      out_ << name(p.mem) << ": " << mem_type(*p.mem);
      if (p.extent) out_ << "[" << expr(p.extent) << "]";
    }
    if (at) out_ << " @" << at->str();
    if (p.specialized) out_ << " specialize";
    out_ << "\n";
  }

  static std::string mem_type(const MemNode& m) {
    std::string s = space_name(m.space);
    s += " ";
    if (m.is_const) s += "const ";
    return s + type_name(m.elem) + "*";
  }

  const std::string& name_of_node(const void* node, const std::string& base) {
    auto it = names_.find(node);
    if (it != names_.end()) return it->second;
    std::string n = base.empty() ? "_" : base;
    for (int i = 1; taken_.count(n); ++i) n = base + "_" + std::to_string(i);
    taken_.insert(n);
    return names_.emplace(node, n).first->second;
  }
  const std::string& name(const VarPtr& v) { return v ? name_of_node(v.get(), v->name) : kNull; }
  const std::string& name(const MemPtr& m) { return m ? name_of_node(m.get(), m->name) : kNull; }

  std::string expr(const ExprPtr& e) {
    if (!e) return "<null>";
    return dispatch(*e, [&](const auto& n) { return text(n); });
  }
  std::string text(const Literal& n) { return literal_text(n); }
  std::string text(const VarRef& n) { return name(n.var); }
  std::string text(const Unary& n) { return std::string(name_of(n.op)) + expr(n.a); }
  std::string text(const Binary& n) {
    if (n.op == BinOp::Min || n.op == BinOp::Max || n.op == BinOp::Pow)
      return std::string(name_of(n.op)) + "(" + expr(n.a) + ", " + expr(n.b) + ")";
    return "(" + expr(n.a) + " " + name_of(n.op) + " " + expr(n.b) + ")";
  }
  std::string text(const Cast& n) { return std::string(type_name(n.type)) + "(" + expr(n.a) + ")"; }
  std::string text(const Select& n) { return "select(" + expr(n.c) + ", " + expr(n.a) + ", " + expr(n.b) + ")"; }
  std::string text(const MathCall& n) {
    const std::string to = n.fn == MathFn::Bitcast ? std::string("<") + type_name(n.type) + ">" : "";
    return std::string(name_of(n.fn)) + to + "(" + list(n.args) + ")";
  }
  std::string text(const Id& n) { return "id(" + n.p.str() + ")"; }
  /// An access checked as it runs shows its bound: `x[i if < vt_len_x]`.
  std::string access(const MemPtr& m, const std::vector<ExprPtr>& idx, const ExprPtr& bound) {
    return name(m) + "[" + list(idx) + (bound ? " if < " + expr(bound) : "") + "]";
  }
  std::string text(const Load& n) { return access(n.mem, n.indices, n.bound); }
  std::string text(const Builtin& n) {
    switch (n.which) {
      case BuiltinKind::ThreadInBlock: return "thread_index";
      case BuiltinKind::BlockInGrid: return "block_index";
      case BuiltinKind::BlocksInGrid: return "grid_blocks";
    }
    return "?";
  }

 public:
  /// One expression on its own (extents, diagnostics); names are the nodes' own.
  std::string expression(const ExprPtr& e) { return expr(e); }

 private:
  std::string list(const std::vector<ExprPtr>& xs) {
    std::string s;
    for (std::size_t i = 0; i < xs.size(); ++i) s += (i ? ", " : "") + expr(xs[i]);
    return s;
  }

  void indent(int depth) { out_ << std::string(static_cast<std::size_t>(depth) * 2, ' '); }

  void body_block(const StmtPtr& s, int depth) {
    out_ << "{\n";
    if (s) {
      if (const auto* seq = as<Seq>(*s)) {
        for (const auto& c : seq->stmts) stmt(c, depth + 1);
      } else {
        stmt(s, depth + 1);
      }
    }
    indent(depth);
    out_ << "}\n";
  }

  void stmt(const StmtPtr& s, int depth) {
    if (!s) return;
    if (const auto* seq = as<Seq>(*s)) {
      indent(depth);
      body_block(s, depth);
      (void)seq;
      return;
    }
    indent(depth);
    dispatch(*s, [&](const auto& n) { print(n, depth); });
  }

  void print(const Seq& n, int depth) {
    for (const auto& c : n.stmts) stmt(c, depth);
  }
  void print(const Let& n, int) {
    out_ << "let " << name(n.var) << ": " << type_name(n.var->type);
    if (n.at) out_ << " @" << n.at->str();
    out_ << " = " << expr(n.value) << ";\n";
  }
  void print(const Assign& n, int) { out_ << name(n.var) << " = " << expr(n.value) << ";\n"; }
  void print(const Store& n, int) { out_ << access(n.mem, n.indices, n.bound) << " = " << expr(n.value) << ";\n"; }
  void print(const If& n, int depth) {
    out_ << "if " << expr(n.cond) << " ";
    body_block(n.then_body, depth);
    if (n.else_body) {
      indent(depth);
      out_ << "else ";
      body_block(n.else_body, depth);
    }
  }
  void print(const For& n, int depth) {
    out_ << "for " << name(n.var) << " in [" << expr(n.begin) << ", " << expr(n.end) << ")";
    auto step = const_int(n.step);
    if (!step || *step != 1) out_ << " step " << expr(n.step);
    out_ << " ";
    body_block(n.body, depth);
  }
  void print(const While& n, int depth) {
    out_ << "while " << expr(n.cond) << " ";
    body_block(n.body, depth);
  }
  void print(const Group& n, int depth) {
    out_ << "group " << n.p.str() << " ";
    body_block(n.body, depth);
  }
  void print(const Split& n, int depth) {
    out_ << "split " << level_name(n.level) << " {\n";
    for (std::size_t i = 0; i < n.bodies.size(); ++i) {
      indent(depth + 1);
      out_ << "case " << n.counts[i] << " ";
      body_block(n.bodies[i], depth + 1);
    }
    indent(depth);
    out_ << "}\n";
  }
  void print(const Destruct& n, int depth) {
    out_ << "destruct ";
    body_block(n.body, depth);
  }
  void print(const Partition& n, int depth) {
    out_ << "partition " << name(n.src) << " as " << name(n.dst) << " at " << n.p.str() << " by (";
    for (std::size_t i = 0; i < n.index_vars.size(); ++i) out_ << (i ? ", " : "") << name(n.index_vars[i]);
    out_ << ") => " << expr(n.index) << " ";
    body_block(n.body, depth);
  }
  void print(const Claim& n, int depth) {
    out_ << "claim " << name(n.src) << " as " << name(n.dst) << " at " << n.p.str() << " ";
    body_block(n.body, depth);
  }
  void print(const Lower& n, int depth) {
    out_ << "lower " << name(n.src) << " as " << name(n.dst) << " ";
    body_block(n.body, depth);
  }
  void print(const Async& n, int depth) {
    out_ << "async " << name(n.src) << " as " << name(n.dst) << " ";
    body_block(n.body, depth);
  }
  void print(const SharedAlloc& n, int) {
    out_ << "shared " << name(n.mem) << ": " << type_name(n.mem->elem) << "[" << expr(n.count) << "];\n";
  }
  void print(const LocalAlloc& n, int) {
    out_ << "local " << name(n.mem) << ": " << type_name(n.mem->elem) << "[" << n.count << "]";
    if (n.at) out_ << " @" << n.at->str();
    out_ << ";\n";
  }
  void print(const Call& n, int) {
    if (n.result) out_ << "let " << name(n.result) << ": " << type_name(n.result->type) << " = ";
    out_ << "call " << (n.fn ? n.fn->name : "<null>") << "(";
    for (std::size_t i = 0; i < n.args.size(); ++i)
      out_ << (i ? ", " : "")
           << (n.args[i].mem ? name(n.args[i].mem) + (n.args[i].value ? "+" + expr(n.args[i].value) : "")
                             : expr(n.args[i].value));
    out_ << ");\n";
  }
  void print(const Intrinsic& n, int) {
    if (!n.outputs.empty()) {
      out_ << "let ";
      for (std::size_t i = 0; i < n.outputs.size(); ++i)
        out_ << (i ? ", " : "") << name(n.outputs[i]) << ": " << type_name(n.outputs[i]->type);
      out_ << " = ";
    }
    out_ << user_name(n.op) << "(";
    bool first = true;
    auto sep = [&] {
      if (!first) out_ << ", ";
      first = false;
    };
    if (n.op == IntrinsicOp::Print || n.op == IntrinsicOp::Assert) sep(), out_ << quote(n.text);
    for (const auto& m : n.mems) sep(), out_ << name(m);
    for (const auto& a : n.args) sep(), out_ << expr(a);
    for (auto i : n.imms) sep(), out_ << "#" << i;
    out_ << ");\n";
  }
  void print(const Unsafe& n, int) {
    out_ << "unsafe " << n.needs.str() << " " << quote(n.cuda);
    if (!n.inputs.empty()) {
      out_ << " in(";
      for (std::size_t i = 0; i < n.inputs.size(); ++i)
        out_ << (i ? ", " : "") << n.inputs[i].first << " = " << expr(n.inputs[i].second);
      out_ << ")";
    }
    if (!n.outputs.empty()) {
      out_ << " out(";
      for (std::size_t i = 0; i < n.outputs.size(); ++i)
        out_ << (i ? ", " : "") << n.outputs[i].first << " = " << name(n.outputs[i].second);
      out_ << ")";
    }
    out_ << ";\n";
  }
  void print(const Barrier& n, int) {
    static const char* const kHow[] = {"planned", "block", "warp", "warp_part", "named", "named_fixed", "cluster"};
    out_ << "barrier " << kHow[static_cast<int>(n.how)];
    if (n.how == BarrierKind::Planned) out_ << " " << n.over.str();
    if (n.how == BarrierKind::WarpPart || n.how == BarrierKind::Named || n.how == BarrierKind::NamedFixed)
      out_ << " threads=" << n.threads;
    if (n.how == BarrierKind::Named) out_ << " id=" << n.id_base << "+thread_index/" << n.threads;
    if (n.how == BarrierKind::NamedFixed) out_ << " id=" << n.id_base;
    if (n.async_wait == kAsyncWaitAll) out_ << " after cp.async";
    if (n.async_wait > 0) out_ << " after cp.async but the newest " << n.async_wait << " groups";
    if (n.proxy_fence) out_ << " after proxy fence";
    out_ << ";\n";
  }
  void print(const VectorCopy& n, int) {
    out_ << name(n.dst) << "[" << expr(n.dst_index) << " +: " << n.count << "] = " << name(n.src) << "["
         << expr(n.src_index) << " +: " << n.count << "];\n";
  }
  void print(const Jump& n, int) { out_ << (n.is_break ? "break;\n" : "continue;\n"); }
  void print(const Return& n, int) {
    out_ << "return";
    if (n.value) out_ << " " << expr(n.value);
    out_ << ";\n";
  }

  static inline const std::string kNull = "<null>";
  std::ostringstream out_;
  std::unordered_map<const void*, std::string> names_;
  std::set<std::string> taken_;
};

}  // namespace

std::string print(const KernelNode& kernel) { return Printer().kernel(kernel); }
std::string print(const FunctionNode& fn) { return Printer().function(fn); }
std::string print(const ExprPtr& e) { return Printer().expression(e); }

}  // namespace vantage::ir
