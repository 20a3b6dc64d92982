// Vantage perspective checker: see check.h and checker.h. This file: kernels and functions, sizes
// and perspectives, names and their scopes, parameters.
#include "jit/check/checker.h"

namespace vantage::check {
namespace detail {

namespace {

/// Whether an extent reads only scalar parameters (no ids, loads or other variables).
auto integers_only(const ExprPtr& e) -> bool {
  struct Scan : IRVisitor {
    bool ok = true;
    void visit(const VarRef& n) override { ok = ok && is_integer(n.var->type); }
    void visit(const Literal& n) override { ok = ok && (is_integer(n.type) || n.type == ScalarType::Bool); }
    void visit(const MathCall&) override { ok = false; }
  } scan;
  scan.walk(e);
  return scan.ok;
}

auto extent_uses_params_only(const ExprPtr& e) -> bool {
  struct Scan : IRVisitor {
    bool ok = true;
    void visit(const VarRef& n) override { ok = ok && n.var->origin == VarNode::Origin::Param; }
    void visit(const Load&) override { ok = false; }
    void visit(const Id&) override { ok = false; }
  } scan;
  scan.walk(e);
  return scan.ok;
}

auto ends_with_return(const StmtPtr& s) -> bool {
  if (!s) return false;
  if (as<Return>(*s)) return true;
  if (const auto* seq = as<Seq>(*s)) return !seq->stmts.empty() && ends_with_return(seq->stmts.back());
  if (const auto* i = as<If>(*s)) return ends_with_return(i->then_body) && ends_with_return(i->else_body);
  return false;
}

}  // namespace

namespace {
std::string cluster_size_error(std::int64_t n) {
  return "a cluster has 1 to " + std::to_string(kMaxCluster) + " blocks (the portable size), not " + std::to_string(n);
}
}  // namespace

auto Checker::run_kernel(const KernelNode& k) -> CheckResult {
  c_.maps = &k.tensor_maps;
  in_kernel_ = true;
  c_.frames.push_back({grid(1), k.loc, "the kernel starts at grid(1)"});
  c_.push_scope();
  check_launch_shape(k);
  check_params(k.params, std::nullopt);
  for (const auto& p : k.params) {
    if (!p.extent) continue;
    if (!is_index_integer(p.extent->type))
      c_.error("V0904", p.loc, not_index_integer("extent of " + q(p.name), p.extent->type));
    if (!extent_uses_params_only(p.extent))
      c_.error("V0904", p.loc, "extent of " + q(p.name) + " may only use the kernel's scalar parameters");
    x_.check_expr(p.extent, p.loc);
  }
  for (const auto& m : k.tensor_maps) {
    for (const ExprPtr& e : {m.rows, m.cols}) {
      if (!e) continue;
      if (!is_integer(e->type) || !extent_uses_params_only(e) || !integers_only(e))
        c_.error("V0916", m.loc,
                 "tensor map " + q(m.name) +
                     ": its rows and columns are integer expressions over the kernel's scalar parameters");
      x_.check_expr(e, m.loc);
    }
  }
  for (const auto& r : k.requirements) {
    if (r.cond->type != ScalarType::Bool)
      c_.error("V0912", r.loc, "a requirement is a condition (bool), not " + std::string(type_name(r.cond->type)));
    if (!extent_uses_params_only(r.cond) || !integers_only(r.cond))
      c_.error("V0912", r.loc, "a requirement may only use the kernel's integer scalar parameters and constants");
    x_.check_expr(r.cond, r.loc);
  }
  if (!k.body) {
    c_.error("V0905", k.loc, "kernel " + q(k.name) + " has no body");
  } else {
    returns_ = std::nullopt;
    stmt(k.body);
  }
  c_.pop_scope();
  return finish();
}

auto Checker::run_function(const FunctionNode& f) -> CheckResult {
  if (c_.valid(f.signature, f.signature_loc, "signature")) {
    c_.frames.push_back({f.signature, f.signature_loc, "the function's signature requires it"});
  } else {
    c_.frames.push_back({thread(1), f.signature_loc, "the function's signature"});
  }
  c_.push_scope();
  check_params(f.params, f.signature);
  returns_ = f.returns;
  check_budget();
  if (!f.body) {
    c_.error("V0905", f.loc, "function " + q(f.name) + " has no body");
  } else {
    stmt(f.body);
    if (f.returns && !ends_with_return(f.body))
      c_.error(
          "V0804", f.loc,
          "function " + q(f.name) + " returns " + type_name(*f.returns) + " but its body does not end with a return");
  }
  c_.pop_scope();
  return finish();
}

auto Checker::finish() -> CheckResult {
  CheckResult r;
  r.errors = std::move(c_.errors);
  r.obligations = std::move(c_.obligations);
  r.shared_peak = layout_.layout().peak;
  return r;
}

auto Checker::check_launch_shape(const KernelNode& k) -> void {
  c_.know.threads = k.threads;
  c_.know.blocks = k.grid_blocks;
  c_.know.cluster = k.cluster >= 1 && k.cluster <= kMaxCluster ? k.cluster : 1;
  c_.know.grid_multiple = std::lcm(std::max<std::int64_t>(k.grid_multiple, 1), c_.know.cluster);
  if (c_.know.cluster != k.cluster) c_.error("V0917", k.cluster_loc, cluster_size_error(k.cluster));
  c_.know.min_blocks = k.min_blocks;
  if (k.min_blocks != 0 && (k.min_blocks < 1 || k.min_blocks > kMaxBlocksPerSm))
    c_.error("V0918", k.min_blocks_loc,
             "min_blocks_per_sm asks for 1 to " + std::to_string(kMaxBlocksPerSm) + " blocks, not " +
                 std::to_string(k.min_blocks));
  if (k.threads && (*k.threads < 1 || *k.threads > target::max_threads_per_block()))
    c_.error("V0901", k.threads_loc,
             "threads per block must be between 1 and " + std::to_string(target::max_threads_per_block()) + ", not " +
                 std::to_string(*k.threads));
  if (k.grid_blocks && *k.grid_blocks < 1)
    c_.error("V0901", k.grid_loc, "the grid must have at least one block, not " + std::to_string(*k.grid_blocks));
  if (k.grid_multiple < 1)
    c_.error("V0901", k.grid_loc, "grid_multiple_of needs a positive number, not " + std::to_string(k.grid_multiple));
  check_budget();
}

auto Checker::check_budget() -> void {
  if (budget_ < 0) c_.error("V0403", budget_loc_, "shared-memory budget must not be negative");
  if (budget_ > target::max_shared_bytes())
    c_.error("V0404", budget_loc_,
             "shared-memory budget of " + std::to_string(budget_) + " bytes exceeds the device limit of " +
                 std::to_string(target::max_shared_bytes()) + " bytes");
}

auto Checker::check_params(const std::vector<ParamNode>& params, std::optional<Perspective> sig) -> void {
  std::unordered_map<std::string, SourceLoc> seen;
  for (const auto& p : params) {
    auto [it, fresh] = seen.emplace(p.name, p.loc);
    if (!fresh) {
      auto& d = c_.error("V0902", p.loc, "parameter " + q(p.name) + " is declared twice");
      c_.note(d, it->second, "first declared here");
    }
    if (p.specialized && (!p.var || !is_integer(p.var->type)))
      c_.error("V0903", p.loc, "only integer scalar parameters can be specialized; " + q(p.name) + " is not one");
    Perspective at = kTop;
    if (sig) {
      at = p.at.value_or(*sig);
      if (!c_.valid(at, p.loc, "a parameter")) at = *sig;
    }
    if (p.var) c_.declare(p.var, at);
    if (p.mem) c_.declare(p.mem, at, p.loc);
  }
}

auto Context::available(Level level) const -> std::optional<Size> {
  Perspective c = code();
  if (level > c.level) return std::nullopt;
  Size s = c.count;
  if (c.level == Level::Grid && level != Level::Grid) s.blocks = true;
  if (c.level != Level::Thread && level == Level::Thread) s.threads = true;
  return s;
}

auto Context::check_claim_use(MemInfo& info, SourceLoc loc) -> void {
  int branch = -1;
  Perspective bp;
  SourceLoc bloc;
  // The innermost split branch opened inside the claim owns the region.
  for (std::size_t i = frames.size(); i-- > info.claim_depth;) {
    if (frames[i].branch_id >= 0) {
      branch = frames[i].branch_id;
      bp = frames[i].code;
      bloc = frames[i].at;
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
