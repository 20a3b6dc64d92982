// Vantage specialization: see specialize.h.
#include "jit/specialize/specialize.h"

#include <numeric>
#include <set>

#include "jit/ir/eval.h"
#include "jit/ir/intrinsics.h"
#include "jit/ir/mutate.h"
#include "jit/ir/printer.h"
#include "jit/ir/range.h"
#include "jit/ir/visit.h"
#include "jit/target/target.h"

namespace vantage::specialization {
namespace {

using namespace ir;

/// Every intrinsic a target may lack, with the line that uses it.
class FeatureScan : public IRVisitor {
 public:
  std::vector<std::pair<target::Feature, const Intrinsic*>> uses;
  using IRVisitor::walk;
  void walk(const ExprPtr&) override {}  // intrinsics are statements

 protected:
  void visit(const Intrinsic& n) override {
    IRVisitor::visit(n);
    if (auto f = info(n.op).feature) uses.emplace_back(*f, &n);
  }
  void visit(const Call& n) override {
    IRVisitor::visit(n);
    if (n.fn && seen_.insert(n.fn.get()).second) walk(n.fn->body);
  }

 private:
  std::set<const FunctionNode*> seen_;
};

/// The architectures that have `f`, for a message: "sm_90a".
std::string archs_with(target::Feature f) {
  std::string out;
  for (const auto& row : target::all())
    if (row.has(f)) out += (out.empty() ? "" : ", ") + std::string(row.name);
  return out;
}

/// A rule on B alone, `lhs ? coeff * B`, as a guard on the grid (or an error when it can never hold).
std::optional<Guard> grid_guard(const Obligation& o, std::int64_t threads, std::vector<Diagnostic>& errors) {
  auto lhs = o.lhs.eval(threads, std::nullopt);
  auto per_block = o.rhs.eval(threads, 1);
  if (!lhs || !per_block || !o.rhs.blocks) {
    errors.push_back({o.code, o.description + ": " + o.str() + " cannot be decided before launch", o.loc, {}});
    return std::nullopt;
  }
  Guard g;
  g.rule = o.code;
  g.loc = o.loc;
  std::int64_t l = *lhs, r = *per_block;
  switch (o.kind) {
    case Obligation::Kind::Divides: {
      g.kind = Guard::Kind::BlocksDivisibleBy;
      g.value = l / std::gcd(l, r);
      g.text = "blocks % " + std::to_string(g.value) + " == 0";
      break;
    }
    case Obligation::Kind::LessEqual:
      g.kind = Guard::Kind::BlocksAtLeast;
      g.value = (l + r - 1) / r;
      g.text = "blocks >= " + std::to_string(g.value);
      break;
    case Obligation::Kind::Equal:
      if (l % r != 0) {
        errors.push_back({o.code,
                          o.description + ": " + o.str() + " holds for no grid when T = " + std::to_string(threads),
                          o.loc,
                          {}});
        return std::nullopt;
      }
      g.kind = Guard::Kind::BlocksEqual;
      g.value = l / r;
      g.text = "blocks == " + std::to_string(g.value);
      break;
  }
  return g;
}

}  // namespace

Result run(const KernelNode& k, const std::vector<Obligation>& obligations, const Spec& spec) {
  std::vector<Diagnostic> errors;
  Result r;
  if (k.threads && spec.threads && *k.threads != spec.threads)
    errors.push_back({"V1004",
                      "kernel '" + k.name + "' declares " + std::to_string(*k.threads) +
                          " threads per block; this specialization asks for " + std::to_string(spec.threads),
                      k.threads_loc,
                      {}});
  r.threads = spec.threads ? spec.threads : k.threads.value_or(0);
  const target::Info& arch = target::info(spec.arch);
  // Out of range: said once, where the count comes from (a declared count the Spec contradicts is
  // the error above; the declaration then needs no advice).
  const bool contradicted = k.threads && spec.threads && *k.threads != spec.threads;
  if ((r.threads < 1 || r.threads > arch.max_threads_per_block) && !contradicted)
    errors.push_back({"V1004",
                      r.threads == 0
                          ? "kernel '" + k.name +
                                "' declares no threads per block: declare block_threads, or give the "
                                "count (Spec::threads, a launch's Grid)"
                          : "kernel '" + k.name + "' cannot have " + std::to_string(r.threads) +
                                " threads per block: a block has 1 to " + std::to_string(arch.max_threads_per_block),
                      k.threads ? k.threads_loc : k.loc,
                      {}});
  std::optional<std::int64_t> blocks = spec.blocks ? spec.blocks : k.grid_blocks;
  if (k.grid_blocks && spec.blocks && *k.grid_blocks != *spec.blocks)
    errors.push_back({"V1004",
                      "kernel '" + k.name + "' fixes the grid at " + std::to_string(*k.grid_blocks) +
                          " blocks; this specialization asks for " + std::to_string(*spec.blocks),
                      k.loc,
                      {}});
  FeatureScan features;
  features.walk(k.body);
  for (const auto& [feature, site] : features.uses)
    if (!arch.has(feature))
      errors.push_back({"V1008",
                        user_name(site->op) + " needs " + target::feature_name(feature) + ", which " + arch.name +
                            " does not have (it needs " + archs_with(feature) + ")",
                        site->loc,
                        {}});
  if (k.cluster > 1 && !arch.has(target::Feature::Cluster))
    errors.push_back({"V1008",
                      "clusters of " + std::to_string(k.cluster) + " blocks need " +
                          target::feature_name(target::Feature::Cluster) + ", which " + arch.name +
                          " does not have (it needs " + archs_with(target::Feature::Cluster) + ")",
                      k.cluster_loc,
                      {}});
  if (!errors.empty()) throw CheckError(std::move(errors));

  // Deferred size rules, now with numbers.
  for (const auto& o : obligations) {
    bool needs_grid = o.lhs.blocks || o.rhs.blocks;
    if (needs_grid && !blocks) {
      if (auto g = grid_guard(o, r.threads, errors)) r.guards.push_back(std::move(*g));
      continue;
    }
    if (!o.holds(r.threads, blocks.value_or(1)))
      errors.push_back({o.code,
                        o.description + ": " + o.str() + " fails with T = " + std::to_string(r.threads) +
                            (needs_grid ? ", B = " + std::to_string(*blocks) : std::string()),
                        o.loc,
                        {}});
  }
  // The grid is a multiple of what the kernel promises and of its cluster size.
  const std::int64_t cluster = std::max<std::int64_t>(k.cluster, 1);
  const std::int64_t multiple = std::lcm(std::max<std::int64_t>(k.grid_multiple, 1), cluster);
  const std::string clusters = cluster > 1 ? " (clusters of " + std::to_string(cluster) + " blocks)" : "";
  if (blocks && *blocks % multiple != 0)
    errors.push_back({"V0901",
                      "the grid of " + std::to_string(*blocks) + " blocks is not a multiple of " +
                          std::to_string(multiple) + clusters,
                      cluster > 1 ? k.cluster_loc : k.loc,
                      {}});
  if (!blocks && multiple > 1)
    r.guards.push_back({Guard::Kind::BlocksDivisibleBy, multiple, -1,
                        "blocks % " + std::to_string(multiple) + " == 0" + clusters, "V0901",
                        cluster > 1 ? k.cluster_loc : k.loc});
  if (blocks)
    r.guards.push_back({Guard::Kind::BlocksEqual, *blocks, -1, "blocks == " + std::to_string(*blocks), "", k.loc});
  // Thread indices are i32: a launch has at most 2^31 threads, so that id(thread(1)) of the whole grid
  // fits (docs/semantics.md). The bound also lets index arithmetic be proven to fit 32 bits.
  r.max_blocks = (std::int64_t{1} << 31) / std::max<std::int64_t>(r.threads, 1);
  r.blocks = blocks;
  if (blocks && *blocks > r.max_blocks)
    errors.push_back({"V0901",
                      "a grid of " + std::to_string(*blocks) + " blocks of " + std::to_string(r.threads) +
                          " threads has more than 2^31 threads; thread indices are i32",
                      k.grid_loc.known() ? k.grid_loc : k.loc,
                      {}});
  if (!blocks)
    r.guards.push_back(
        {Guard::Kind::BlocksAtMost, r.max_blocks, -1, "blocks <= " + std::to_string(r.max_blocks), "V0901", k.loc});

  // Specialized sizes become constants; the launcher checks each argument equals its value.
  VarMap values;
  for (const auto& [name, v] : spec.sizes) {
    bool found = false;
    for (const auto& p : k.params) found |= p.name == name && p.specialized;
    if (!found)
      errors.push_back(
          {"V1005",
           "the Spec gives a value for '" + name + "', which is not a specialized parameter of '" + k.name + "'",
           k.loc,
           {}});
  }
  for (std::size_t i = 0; i < k.params.size(); ++i) {
    const ParamNode& p = k.params[i];
    ParamInfo info;
    info.name = p.name;
    info.is_pointer = p.mem != nullptr;
    info.type = p.var ? p.var->type : p.mem->elem;
    info.is_const = p.mem && p.mem->is_const;
    info.specialized = p.specialized;
    if (p.specialized) {
      auto it = spec.sizes.find(p.name);
      if (it == spec.sizes.end()) {
        errors.push_back(
            {"V1005", "parameter '" + p.name + "' is specialized; give its value in Spec::sizes", p.loc, {}});
      } else if (!fits(p.var->type, it->second)) {
        errors.push_back({"V1005",
                          "the Spec gives '" + p.name + "' the value " + std::to_string(it->second) +
                              ", which does not fit its type " + type_name(p.var->type),
                          p.loc,
                          {}});
      } else {
        info.value = it->second;
        values[p.var.get()] = make<Literal>(p.var->type, it->second, static_cast<double>(it->second), p.loc);
        r.guards.push_back({Guard::Kind::ParamEquals, it->second, static_cast<int>(i),
                            p.name + " == " + std::to_string(it->second), "", p.loc});
      }
    }
    r.params.push_back(std::move(info));
  }
  // What the variant assumes of unspecialized integer parameters: guards the launcher checks, facts
  // lowering proves with, and the parameters' ranges.
  std::vector<ExprPtr> assumed;
  for (const auto& [name, a] : spec.assume) {
    std::size_t i = 0;
    while (i < k.params.size() && k.params[i].name != name) ++i;
    const ParamNode* p = i < k.params.size() ? &k.params[i] : nullptr;
    if (!p || p->mem || !p->var || !is_integer(p->var->type) || p->specialized) {
      errors.push_back({"V1005",
                        "the Spec assumes " + a.str(name) + ", but '" + name +
                            "' is not an unspecialized integer "
                            "parameter of '" +
                            k.name + "'",
                        k.loc,
                        {}});
      continue;
    }
    const Range type = Range::of(p->var->type);
    if (a.multiple < 1 || a.min > a.max || !type.contains(a.min) || !type.contains(a.max)) {
      errors.push_back(
          {"V1005",
           "the Spec's assumption " + a.str(name) + " does not fit '" + name + "' (" + type_name(p->var->type) + ")",
           p->loc,
           {}});
      continue;
    }
    const int index = static_cast<int>(i);
    const std::string why = "the variant's assumption " + a.str(name);
    r.guards.push_back({Guard::Kind::ParamAtLeast, a.min, index, name + " >= " + std::to_string(a.min), why, p->loc});
    r.guards.push_back({Guard::Kind::ParamAtMost, a.max, index, name + " <= " + std::to_string(a.max), why, p->loc});
    if (a.multiple > 1)
      r.guards.push_back({Guard::Kind::ParamMultipleOf, a.multiple, index,
                          name + " % " + std::to_string(a.multiple) + " == 0", why, p->loc});
    r.param_ranges[p->var.get()] = {a.min, a.max};
    if (a.multiple > 1) r.param_multiples[p->var.get()] = a.multiple;
    const ScalarType t = p->var->type;
    auto lit = [&](std::int64_t v) { return make<Literal>(t, v, static_cast<double>(v), p->loc); };
    ExprPtr v = ref(p->var, p->loc);
    ExprPtr cond =
        make<Binary>(ScalarType::Bool, BinOp::LAnd, make<Binary>(ScalarType::Bool, BinOp::Ge, v, lit(a.min), p->loc),
                     make<Binary>(ScalarType::Bool, BinOp::Le, v, lit(a.max), p->loc), p->loc);
    if (a.multiple > 1)
      cond = make<Binary>(ScalarType::Bool, BinOp::LAnd, cond,
                          make<Binary>(ScalarType::Bool, BinOp::Eq,
                                       make<Binary>(t, BinOp::Mod, v, lit(a.multiple), p->loc), lit(0), p->loc),
                          p->loc);
    assumed.push_back(cond);
  }
  if (!errors.empty()) throw CheckError(std::move(errors));

  auto out = std::make_shared<KernelNode>(k);
  out->threads = r.threads;
  out->grid_blocks = blocks;
  out->body = substitute(k.body, values);
  out->requirements.clear();
  for (const auto& req : k.requirements) {
    ExprPtr c = fold(substitute(req.cond, values));
    if (auto v = eval_const(c)) {
      if (v->value == 0 || !v->exact)
        errors.push_back(
            {"V0912",
             "kernel '" + k.name + "' requires " + print(req.cond) + ", which these specialized sizes break",
             req.loc,
             {}});
      continue;  // holds for every launch of this specialization
    }
    out->requirements.push_back({c, req.loc});
  }
  for (const auto& c : assumed) out->requirements.push_back({c, c->loc});
  if (!errors.empty()) throw CheckError(std::move(errors));
  for (std::size_t i = 0; i < out->params.size(); ++i) {
    auto& p = out->params[i];
    if (p.extent) {
      p.extent = substitute(p.extent, values);
      r.params[i].extent = print(p.extent);
    }
  }
  out->hash = hash_kernel(*out);
  r.kernel = std::move(out);
  return r;
}

}  // namespace vantage::specialization
