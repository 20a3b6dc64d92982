// Vantage specialization: see specialize.h.
#include "jit/specialize/specialize.h"

#include <numeric>

#include "jit/check/check.h"
#include "jit/ir/mutate.h"
#include "jit/ir/printer.h"

namespace vantage::specialization {
namespace {

using namespace ir;

std::string c_expr(const ExprPtr& e, const std::vector<ParamNode>& params) {
  if (!e) return "";
  if (auto v = const_int(e)) return std::to_string(*v);
  if (const auto* r = as<VarRef>(*e)) return r->var->name;
  if (const auto* b = as<Binary>(*e))
    return "(" + c_expr(b->a, params) + " " + name_of(b->op) + " " + c_expr(b->b, params) + ")";
  if (const auto* c = as<Cast>(*e)) return c_expr(c->a, params);
  return "?";
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

std::int64_t shared_limit(Arch arch) {
  switch (arch) {
    case Arch::SM_80: return 166912;
    case Arch::SM_86:
    case Arch::SM_89: return 101376;
    case Arch::SM_90:
    case Arch::SM_90a: return 232448;
  }
  return 49152;
}

Result run(const KernelNode& k, const std::vector<Obligation>& obligations, const Spec& spec) {
  std::vector<Diagnostic> errors;
  Result r;
  if (k.threads && spec.threads && *k.threads != spec.threads)
    errors.push_back({"V1004",
                      "kernel '" + k.name + "' declares " + std::to_string(*k.threads) +
                          " threads per block; the Spec asks for " + std::to_string(spec.threads),
                      k.threads_loc,
                      {}});
  r.threads = spec.threads ? spec.threads : k.threads.value_or(0);
  if (r.threads < 1 || r.threads > check::kMaxBlockThreads)
    errors.push_back({"V1004",
                      "kernel '" + k.name + "' needs threads per block between 1 and " +
                          std::to_string(check::kMaxBlockThreads) +
                          " (declare block_threads or set Spec::threads); got " + std::to_string(r.threads),
                      k.loc,
                      {}});
  std::optional<std::int64_t> blocks = spec.blocks ? spec.blocks : k.grid_blocks;
  if (k.grid_blocks && spec.blocks && *k.grid_blocks != *spec.blocks)
    errors.push_back({"V1004",
                      "kernel '" + k.name + "' fixes the grid at " + std::to_string(*k.grid_blocks) +
                          " blocks; the Spec asks for " + std::to_string(*spec.blocks),
                      k.loc,
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
  if (blocks && *blocks % std::max<std::int64_t>(k.grid_multiple, 1) != 0)
    errors.push_back(
        {"V0901",
         "the grid of " + std::to_string(*blocks) + " blocks is not a multiple of " + std::to_string(k.grid_multiple),
         k.loc,
         {}});
  if (!blocks && k.grid_multiple > 1)
    r.guards.push_back({Guard::Kind::BlocksDivisibleBy, k.grid_multiple, -1,
                        "blocks % " + std::to_string(k.grid_multiple) + " == 0", "V0901", k.loc});
  if (blocks)
    r.guards.push_back({Guard::Kind::BlocksEqual, *blocks, -1, "blocks == " + std::to_string(*blocks), "", k.loc});

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
      } else {
        info.value = it->second;
        values[p.var.get()] = make<Literal>(p.var->type, it->second, static_cast<double>(it->second), p.loc);
        r.guards.push_back({Guard::Kind::ParamEquals, it->second, static_cast<int>(i),
                            p.name + " == " + std::to_string(it->second), "", p.loc});
      }
    }
    r.params.push_back(std::move(info));
  }
  if (!errors.empty()) throw CheckError(std::move(errors));

  auto out = std::make_shared<KernelNode>(k);
  out->threads = r.threads;
  out->grid_blocks = blocks;
  out->body = substitute(k.body, values);
  for (std::size_t i = 0; i < out->params.size(); ++i) {
    auto& p = out->params[i];
    if (p.extent) {
      p.extent = substitute(p.extent, values);
      r.params[i].extent = c_expr(p.extent, out->params);
    }
  }
  out->hash = hash_kernel(*out);
  r.kernel = std::move(out);
  return r;
}

}  // namespace vantage::specialization
