// Vantage perspective checker: see check.h and checker.h. This file: kernels and functions, sizes
// and perspectives, names and their scopes, parameters.
#include "jit/check/checker.h"

namespace vantage::check {
namespace detail {

auto Checker::run_kernel(const KernelNode& k) -> CheckResult {
  maps_ = &k.tensor_maps;
  in_kernel_ = true;
  frames_.push_back({grid(1), k.loc, "the kernel starts at grid(1)"});
  push_scope();
  check_launch_shape(k);
  check_params(k.params, std::nullopt);
  for (const auto& p : k.params) {
    if (!p.extent) continue;
    if (!is_integer(p.extent->type))
      error("V0904", p.loc,
            "extent of " + q(p.name) + " must be an integer expression, not " + type_name(p.extent->type));
    if (!extent_uses_params_only(p.extent))
      error("V0904", p.loc, "extent of " + q(p.name) + " may only use the kernel's scalar parameters");
    check_expr(p.extent, p.loc);
  }
  for (const auto& m : k.tensor_maps) {
    for (const ExprPtr& e : {m.rows, m.cols}) {
      if (!e) continue;
      if (!is_integer(e->type) || !extent_uses_params_only(e) || !integers_only(e))
        error("V0916", m.loc,
              "tensor map " + q(m.name) +
                  ": its rows and columns are integer expressions over the kernel's scalar parameters");
      check_expr(e, m.loc);
    }
  }
  for (const auto& r : k.requirements) {
    if (r.cond->type != ScalarType::Bool)
      error("V0912", r.loc, "a requirement is a condition (bool), not " + std::string(type_name(r.cond->type)));
    if (!extent_uses_params_only(r.cond) || !integers_only(r.cond))
      error("V0912", r.loc, "a requirement may only use the kernel's integer scalar parameters and constants");
    check_expr(r.cond, r.loc);
  }
  if (!k.body) {
    error("V0905", k.loc, "kernel " + q(k.name) + " has no body");
  } else {
    returns_ = std::nullopt;
    stmt(k.body);
  }
  pop_scope();
  return finish();
}

auto Checker::run_function(const FunctionNode& f) -> CheckResult {
  if (valid(f.signature, f.signature_loc, "signature")) {
    frames_.push_back({f.signature, f.signature_loc, "the function's signature requires it"});
  } else {
    frames_.push_back({thread(1), f.signature_loc, "the function's signature"});
  }
  push_scope();
  check_params(f.params, f.signature);
  returns_ = f.returns;
  check_budget();
  if (!f.body) {
    error("V0905", f.loc, "function " + q(f.name) + " has no body");
  } else {
    stmt(f.body);
    if (f.returns && !ends_with_return(f.body))
      error("V0804", f.loc,
            "function " + q(f.name) + " returns " + type_name(*f.returns) + " but its body does not end with a return");
  }
  pop_scope();
  return finish();
}

auto Checker::subst(Size s) const -> Size {
  if (s.threads && know_.threads) s = {s.coeff * *know_.threads, false, s.blocks};
  if (s.blocks && know_.blocks) s = {s.coeff * *know_.blocks, s.threads, false};
  return s;
}

auto Checker::divides(Size a, Size b) const -> Truth {
  a = subst(a);
  b = subst(b);
  if (a.coeff <= 0 || b.coeff <= 0) return Truth::No;
  if (a.is_static() && b.is_static()) return b.coeff % a.coeff == 0 ? Truth::Yes : Truth::No;
  if ((!a.threads || b.threads) && (!a.blocks || b.blocks)) {
    std::int64_t bc = b.coeff * ((b.blocks && !a.blocks) ? know_.grid_multiple : 1);
    if (bc % a.coeff == 0) return Truth::Yes;
  }
  return Truth::Unknown;
}

auto Checker::less_equal(Size a, Size b) const -> Truth {
  a = subst(a);
  b = subst(b);
  if (a.is_static() && b.is_static()) return a.coeff <= b.coeff ? Truth::Yes : Truth::No;
  if ((!a.threads || b.threads) && (!a.blocks || b.blocks)) {
    std::int64_t least_b = b.coeff * ((b.blocks && !a.blocks) ? know_.grid_multiple : 1);
    if (a.coeff <= least_b) return Truth::Yes;
  }
  return Truth::Unknown;
}

auto Checker::equal_size(Size a, Size b) const -> Truth {
  a = subst(a);
  b = subst(b);
  if (a == b) return Truth::Yes;
  if (a.is_static() && b.is_static()) return Truth::No;
  if (a.is_static() && a.coeff < least(b)) return Truth::No;
  if (b.is_static() && b.coeff < least(a)) return Truth::No;
  return Truth::Unknown;
}

auto Checker::units(Perspective p) -> Size {
  Size s = p.count;
  if (p.level != Level::Thread) s.threads = true;
  if (p.level == Level::Grid) s.blocks = true;
  return s;
}

auto Checker::narrower_eq(Perspective a, Perspective b) const -> Truth {
  if (a.level < b.level) return Truth::Yes;
  if (a.level > b.level) return Truth::No;
  return divides(a.count, b.count);
}

auto Checker::meet(Perspective a, Perspective b) const -> Perspective {
  if (narrower_eq(a, b) == Truth::Yes) return a;
  if (narrower_eq(b, a) == Truth::Yes) return b;
  Size x = subst(a.count), y = subst(b.count);
  Size g{std::gcd(x.coeff, y.coeff), x.threads && y.threads, x.blocks && y.blocks};
  return {a.level, g};
}

auto Checker::valid(Perspective p, SourceLoc loc, const char* what) -> bool {
  if (p.count.is_static() && p.count.coeff >= 1) return true;
  error("V0108", loc,
        std::string("invalid perspective ") + p.str() + " for " + what + ": the unit count must be a positive number");
  return false;
}

auto Checker::finish() -> CheckResult {
  CheckResult r;
  r.errors = std::move(errors_);
  r.obligations = std::move(obligations_);
  r.shared_peak = layout_.layout().peak;
  return r;
}

auto Checker::pop_scope() -> void {
  for (const auto& d : scopes_.back()) {
    if (d.var) vars_.erase(d.var);
    if (d.mem) mems_.erase(d.mem);
  }
  scopes_.pop_back();
}

auto Checker::declare(const VarPtr& v, Perspective p, bool loop) -> void {
  if (!v) return;
  vars_[v.get()] = {p, v->loc, loop};
  scopes_.back().push_back({v.get(), nullptr});
}

auto Checker::declare(const MemPtr& m, Perspective p, SourceLoc at) -> MemInfo& {
  auto& info = mems_[m.get()];
  info = MemInfo{};
  info.node = m.get();
  info.root = m.get();
  info.persp = p;
  info.narrowed_at = at;
  scopes_.back().push_back({nullptr, m.get()});
  return info;
}

auto Checker::check_launch_shape(const KernelNode& k) -> void {
  know_.threads = k.threads;
  know_.blocks = k.grid_blocks;
  know_.grid_multiple = std::max<std::int64_t>(k.grid_multiple, 1);
  if (k.threads && (*k.threads < 1 || *k.threads > target::max_threads_per_block()))
    error("V0901", k.threads_loc,
          "threads per block must be between 1 and " + std::to_string(target::max_threads_per_block()) + ", not " +
              std::to_string(*k.threads));
  if (k.grid_blocks && *k.grid_blocks < 1)
    error("V0901", k.grid_loc, "the grid must have at least one block, not " + std::to_string(*k.grid_blocks));
  if (k.grid_multiple < 1)
    error("V0901", k.grid_loc, "grid_multiple_of needs a positive number, not " + std::to_string(k.grid_multiple));
  check_budget();
}

auto Checker::check_budget() -> void {
  if (budget_ < 0) error("V0403", budget_loc_, "shared-memory budget must not be negative");
  if (budget_ > target::max_shared_bytes())
    error("V0404", budget_loc_,
          "shared-memory budget of " + std::to_string(budget_) + " bytes exceeds the device limit of " +
              std::to_string(target::max_shared_bytes()) + " bytes");
}

auto Checker::check_params(const std::vector<ParamNode>& params, std::optional<Perspective> sig) -> void {
  std::unordered_map<std::string, SourceLoc> seen;
  for (const auto& p : params) {
    auto [it, fresh] = seen.emplace(p.name, p.loc);
    if (!fresh) {
      auto& d = error("V0902", p.loc, "parameter " + q(p.name) + " is declared twice");
      note(d, it->second, "first declared here");
    }
    if (p.specialized && (!p.var || !is_integer(p.var->type)))
      error("V0903", p.loc, "only integer scalar parameters can be specialized; " + q(p.name) + " is not one");
    Perspective at = kTop;
    if (sig) {
      at = p.at.value_or(*sig);
      if (!valid(at, p.loc, "a parameter")) at = *sig;
    }
    if (p.var) declare(p.var, at);
    if (p.mem) declare(p.mem, at, p.loc);
  }
}

auto Checker::integers_only(const ExprPtr& e) -> bool {
  struct Scan : IRVisitor {
    bool ok = true;
    void visit(const VarRef& n) override { ok = ok && is_integer(n.var->type); }
    void visit(const Literal& n) override { ok = ok && (is_integer(n.type) || n.type == ScalarType::Bool); }
    void visit(const MathCall&) override { ok = false; }
  } scan;
  scan.walk(e);
  return scan.ok;
}

auto Checker::extent_uses_params_only(const ExprPtr& e) -> bool {
  struct Scan : IRVisitor {
    bool ok = true;
    void visit(const VarRef& n) override { ok = ok && n.var->origin == VarNode::Origin::Param; }
    void visit(const Load&) override { ok = false; }
    void visit(const Id&) override { ok = false; }
  } scan;
  scan.walk(e);
  return scan.ok;
}

auto Checker::ends_with_return(const StmtPtr& s) -> bool {
  if (!s) return false;
  if (as<Return>(*s)) return true;
  if (const auto* seq = as<Seq>(*s)) return !seq->stmts.empty() && ends_with_return(seq->stmts.back());
  if (const auto* i = as<If>(*s)) return ends_with_return(i->then_body) && ends_with_return(i->else_body);
  return false;
}

auto Checker::use_mem(const MemPtr& m, SourceLoc loc) -> MemInfo* {
  if (!m) return nullptr;
  auto it = mems_.find(m.get());
  if (it == mems_.end()) {
    auto& d = error("V0313", loc, "memory " + q(m->name) + " is not in scope here");
    note(d, m->loc, "declared here");
    return nullptr;
  }
  MemInfo& info = it->second;
  if (info.hidden) {
    auto& d =
        error("V0302", loc,
              "memory " + q(m->name) + " cannot be used inside its own " + info.hidden_by + "; use the narrowed name");
    note(d, info.hidden_at, std::string("narrowed by ") + info.hidden_by + " here");
  }
  if (info.claimed) check_claim_use(info, loc);
  if (m->space == MemSpace::Shared && fits_in(code(), block(1)) == Truth::No) {
    auto& d = error("V0312", loc,
                    "shared memory " + q(m->name) + " is used from code at " + code().str() +
                        "; shared memory belongs to one block");
    note_code(d);
  }
  return &info;
}

auto Checker::check_claim_use(MemInfo& info, SourceLoc loc) -> void {
  int branch = -1;
  Perspective bp;
  SourceLoc bloc;
  // The innermost split branch opened inside the claim owns the region.
  for (std::size_t i = frames_.size(); i-- > info.claim_depth;) {
    if (frames_[i].branch_id >= 0) {
      branch = frames_[i].branch_id;
      bp = frames_[i].code;
      bloc = frames_[i].at;
      break;
    }
  }
  const std::string& name = info.node->name;
  if (branch < 0) {
    auto& d = error("V0306", loc, "claimed memory " + q(name) + " may only be used inside one split branch");
    note(d, info.narrowed_at, "claimed for " + info.claim_p.str() + " here");
    return;
  }
  if (narrower_eq(bp, info.claim_p) == Truth::No) {
    auto& d = error("V0306", loc,
                    "claimed memory " + q(name) + " is used in a branch at " + bp.str() + ", wider than the claim at " +
                        info.claim_p.str());
    note(d, bloc, "branch starts here");
  }
  if (info.claim_branch < 0) {
    info.claim_branch = branch;
    info.claim_first_use = loc;
  } else if (info.claim_branch != branch) {
    auto& d = error("V0307", loc, "claimed memory " + q(name) + " is used in two branches of a split");
    note(d, info.claim_first_use, "first used in another branch here");
  }
}

auto Checker::check_indices(const MemNode& m, const std::vector<ExprPtr>& idx, SourceLoc loc, Perspective& variance)
    -> void {
  if (static_cast<int>(idx.size()) != m.dims)
    error("V0311", loc,
          q(m.name) + " takes " + std::to_string(m.dims) + " index(es), not " + std::to_string(idx.size()));
  for (const auto& i : idx) {
    variance = meet(variance, check_expr(i, loc));
    if (i && !is_integer(i->type))
      error("V0704", at(i, loc), "index into " + q(m.name) + " must be an integer, not " + type_name(i->type));
  }
}

}  // namespace detail

using detail::Checker;

std::int64_t default_shared_budget() { return target::static_shared_bytes(); }

CheckResult check(const ir::KernelNode& kernel) {
  return Checker({}, kernel.shared_budget, kernel.budget_declared ? kernel.budget_loc : kernel.loc).run_kernel(kernel);
}

CheckResult check(const ir::FunctionNode& fn) {
  return Checker({}, fn.shared_budget, fn.budget_loc.known() ? fn.budget_loc : fn.loc).run_function(fn);
}

}  // namespace vantage::check
