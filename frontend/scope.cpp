// Vantage frontend: Scope records statements; KernelBuilder and FunctionBuilder assemble and check
// kernels and device functions.
#include <chrono>

#include "frontend/build_ctx.h"
#include "jit/check/check.h"
#include "support/log.h"
#include "vantage/builder.hpp"

namespace vantage {
namespace detail {
namespace {
thread_local std::vector<BuildCtx*> g_active;

/// Makes a context the innermost active body for the lifetime of the guard.
struct ActiveGuard {
  explicit ActiveGuard(BuildCtx* ctx) { g_active.push_back(ctx); }
  ~ActiveGuard() { g_active.pop_back(); }
  ActiveGuard(const ActiveGuard&) = delete;
  ActiveGuard& operator=(const ActiveGuard&) = delete;
};
}  // namespace

BuildCtx* active() { return g_active.empty() ? nullptr : g_active.back(); }

void append(ir::StmtPtr stmt, SourceLoc loc) {
  BuildCtx* ctx = active();
  if (!ctx || ctx->blocks.empty())
    throw CheckError({{"V0906", "statement recorded outside any kernel or function body", loc, {}}});
  if (stmt) ctx->blocks.back().push_back(std::move(stmt));
}

int fresh_id() {
  BuildCtx* ctx = active();
  return ctx ? ctx->next_id++ : 0;
}

}  // namespace detail

namespace {

using detail::BuildCtx;
using ir::ExprPtr;
using ir::StmtPtr;

SourceLoc here(const std::source_location& l) { return SourceLoc::from(l); }

/// Records the statements a lambda adds as one block.
template <class F>
StmtPtr record(SourceLoc loc, F&& fn) {
  BuildCtx* ctx = detail::active();
  if (!ctx) throw CheckError({{"V0906", "statement recorded outside any kernel or function body", loc, {}}});
  ctx->blocks.emplace_back();
  struct Pop {
    BuildCtx* c;
    std::vector<ir::StmtPtr> taken;
    ~Pop() {
      if (!c->blocks.empty()) c->blocks.pop_back();
    }
  } pop{ctx, {}};
  fn();
  std::vector<ir::StmtPtr> stmts = std::move(ctx->blocks.back());
  return ir::make<ir::Seq>(std::move(stmts), loc);
}

ExprPtr arg_node(const ExprArg& a, std::optional<ScalarType> want = std::nullopt) {
  const auto* l = a.expr.node() ? ir::as<ir::Literal>(*a.expr.node()) : nullptr;
  if (want && a.weak_literal && l && l->type != *want) {
    if (is_integer(l->type) && is_float(*want))
      return ir::make<ir::Literal>(*want, 0, static_cast<double>(l->i), a.loc);
    if (is_integer(l->type) && is_integer(*want))
      return ir::make<ir::Literal>(*want, l->i, static_cast<double>(l->i), a.loc);
    if (is_float(l->type) && is_float(*want)) return ir::make<ir::Literal>(*want, 0, l->f, a.loc);
  }
  return a.expr.node();
}

/// Reports a default-constructed handle; returns true when all are defined.
bool defined_all(SourceLoc loc, std::initializer_list<bool> ok) {
  for (bool b : ok) {
    if (!b) {
      if (auto* ctx = detail::active())
        ctx->error("V0706", loc,
                   "an undefined Expr, Var, View or DeviceFunction was used (default-constructed handle)");
      return false;
    }
  }
  return true;
}

ir::VarPtr new_var(std::string name, ScalarType t, ir::VarNode::Origin origin, SourceLoc loc) {
  return ir::make_var(detail::fresh_id(), std::move(name), t, origin, loc);
}

Var var_handle(const ir::VarPtr& v, SourceLoc loc) { return Var(v, Expr(ir::make<ir::VarRef>(v, loc))); }

ir::MemPtr derived(const ir::MemPtr& src, std::string suffix, ir::MemNode::Origin origin, int dims, SourceLoc loc) {
  return ir::make_mem(detail::fresh_id(), src->name + suffix, src->elem, src->space, src->is_const, dims, origin, loc);
}

}  // namespace

void Scope::assign(const Var& var, const ExprArg& value, std::source_location l) {
  SourceLoc loc = here(l);
  if (!defined_all(loc, {var.var() != nullptr, value.expr.defined()})) return detail::append(nullptr, loc);
  detail::append(ir::make<ir::Assign>(var.var(), arg_node(value, var.var()->type), loc), loc);
}

Var Scope::let(std::string name, const ExprArg& value, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(loc, {value.expr.defined()});
  auto v = new_var(std::move(name), value.expr.type(), ir::VarNode::Origin::Let, loc);
  detail::append(ir::make<ir::Let>(v, value.expr.node(), std::nullopt, loc), loc);
  return var_handle(v, loc);
}

Var Scope::let(std::string name, const ExprArg& value, At a, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(loc, {value.expr.defined()});
  auto v = new_var(std::move(name), value.expr.type(), ir::VarNode::Origin::Let, loc);
  detail::append(ir::make<ir::Let>(v, value.expr.node(), a.p, loc), loc);
  return var_handle(v, loc);
}

Expr Scope::id(Perspective p, std::source_location l) { return Expr(ir::make<ir::Id>(p, here(l))); }

View Scope::local_array(std::string name, ScalarType elem, std::int64_t count, std::optional<At> a,
                        std::source_location l) {
  SourceLoc loc = here(l);
  auto m = ir::make_mem(detail::fresh_id(), std::move(name), elem, MemSpace::Local, false, 1,
                        ir::MemNode::Origin::Local, loc);
  detail::append(ir::make<ir::LocalAlloc>(m, count, a ? std::optional<Perspective>(a->p) : std::nullopt, loc), loc);
  return View(m);
}

View Scope::shared(std::string name, ScalarType elem, const ExprArg& count, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(loc, {count.expr.defined()});
  auto m = ir::make_mem(detail::fresh_id(), std::move(name), elem, MemSpace::Shared, false, 1,
                        ir::MemNode::Origin::Shared, loc);
  detail::append(ir::make<ir::SharedAlloc>(m, arg_node(count, ScalarType::I32), loc), loc);
  return View(m);
}

void Scope::if_(const ExprArg& cond, const std::function<void(Scope&)>& then_body, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(loc, {cond.expr.defined()});
  Scope inner(ctx_);
  auto t = record(loc, [&] { then_body(inner); });
  detail::append(ir::make<ir::If>(cond.expr.node(), t, nullptr, loc), loc);
}

void Scope::if_(const ExprArg& cond, const std::function<void(Scope&)>& then_body,
                const std::function<void(Scope&)>& else_body, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(loc, {cond.expr.defined()});
  Scope inner(ctx_);
  auto t = record(loc, [&] { then_body(inner); });
  auto e = record(loc, [&] { else_body(inner); });
  detail::append(ir::make<ir::If>(cond.expr.node(), t, e, loc), loc);
}

void Scope::for_(std::string name, const ExprArg& begin, const ExprArg& end,
                 const std::function<void(Scope&, Expr)>& fn, std::source_location l) {
  for_(std::move(name), begin, end, ExprArg(1, l), fn, l);
}

void Scope::for_(std::string name, const ExprArg& begin, const ExprArg& end, const ExprArg& step,
                 const std::function<void(Scope&, Expr)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(loc, {begin.expr.defined(), end.expr.defined(), step.expr.defined()});
  ScalarType t = ScalarType::I32;
  for (const ExprArg* a : {&begin, &end, &step})
    if (!a->weak_literal && a->expr.defined()) {
      t = a->expr.type();
      break;
    }
  auto v = new_var(std::move(name), t, ir::VarNode::Origin::Loop, loc);
  Scope inner(ctx_);
  Expr iv(ir::make<ir::VarRef>(v, loc));
  auto b = record(loc, [&] { fn(inner, iv); });
  detail::append(ir::make<ir::For>(v, arg_node(begin, t), arg_node(end, t), arg_node(step, t), b, loc), loc);
}

void Scope::while_(const ExprArg& cond, const std::function<void(Scope&)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(loc, {cond.expr.defined()});
  Scope inner(ctx_);
  auto b = record(loc, [&] { fn(inner); });
  detail::append(ir::make<ir::While>(cond.expr.node(), b, loc), loc);
}

void Scope::group(Perspective p, const std::function<void(Scope&)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  Scope inner(ctx_);
  auto b = record(loc, [&] { fn(inner); });
  detail::append(ir::make<ir::Group>(p, b, loc), loc);
}

void Scope::split(Level level, std::vector<SplitBranch> branches, std::source_location l) {
  SourceLoc loc = here(l);
  std::vector<std::int64_t> counts;
  std::vector<StmtPtr> bodies;
  std::vector<SourceLoc> locs;
  for (auto& br : branches) {
    Scope inner(ctx_);
    counts.push_back(br.count);
    locs.push_back(br.loc);
    bodies.push_back(record(br.loc, [&] {
      if (br.body) br.body(inner);
    }));
  }
  detail::append(ir::make<ir::Split>(level, std::move(counts), std::move(bodies), std::move(locs), loc), loc);
}

void Scope::destruct(const std::function<void(Scope&)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  Scope inner(ctx_);
  auto b = record(loc, [&] { fn(inner); });
  detail::append(ir::make<ir::Destruct>(b, loc), loc);
}

namespace {
template <class IndexFn>
void partition_impl(const std::shared_ptr<BuildCtx>& ctx, const View& mem, Perspective p, int arity,
                    IndexFn&& make_index, const std::function<void(Scope&, View)>& fn, SourceLoc loc) {
  if (!defined_all(loc, {mem.defined()})) return;
  std::vector<ir::VarPtr> vars;
  std::vector<Expr> args;
  static const char* const kNames[] = {"i", "j", "k"};
  for (int d = 0; d < arity; ++d) {
    vars.push_back(new_var(kNames[d], ScalarType::I32, ir::VarNode::Origin::IndexArg, loc));
    args.emplace_back(ir::make<ir::VarRef>(vars.back(), loc));
  }
  Expr index = make_index(args);
  auto dst = derived(mem.mem(), "_part", ir::MemNode::Origin::Partition, arity, loc);
  Scope inner(ctx);
  auto b = record(loc, [&] { fn(inner, View(dst)); });
  detail::append(ir::make<ir::Partition>(mem.mem(), dst, p, std::move(vars), index.node(), b, loc), loc);
}
}  // namespace

void Scope::partition(const View& mem, Perspective p, const std::function<Expr(Expr)>& index,
                      const std::function<void(Scope&, View)>& fn, std::source_location l) {
  partition_impl(
      ctx_, mem, p, 1, [&](const std::vector<Expr>& a) { return index(a[0]); }, fn, here(l));
}

void Scope::partition(const View& mem, Perspective p, const std::function<Expr(Expr, Expr)>& index,
                      const std::function<void(Scope&, View)>& fn, std::source_location l) {
  partition_impl(
      ctx_, mem, p, 2, [&](const std::vector<Expr>& a) { return index(a[0], a[1]); }, fn, here(l));
}

void Scope::claim(const View& mem, Perspective p, const std::function<void(Scope&, View)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  if (!defined_all(loc, {mem.defined()})) return;
  auto dst = derived(mem.mem(), "_claim", ir::MemNode::Origin::Claim, mem.mem()->dims, loc);
  Scope inner(ctx_);
  auto b = record(loc, [&] { fn(inner, View(dst)); });
  detail::append(ir::make<ir::Claim>(mem.mem(), dst, p, b, loc), loc);
}

void Scope::lower(const View& mem, const std::function<void(Scope&, View)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  if (!defined_all(loc, {mem.defined()})) return;
  auto dst = derived(mem.mem(), "_low", ir::MemNode::Origin::Lower, mem.mem()->dims, loc);
  Scope inner(ctx_);
  auto b = record(loc, [&] { fn(inner, View(dst)); });
  detail::append(ir::make<ir::Lower>(mem.mem(), dst, b, loc), loc);
}

void Scope::async(const View& mem, const std::function<void(Scope&, View)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  if (!defined_all(loc, {mem.defined()})) return;
  auto dst = derived(mem.mem(), "_async", ir::MemNode::Origin::Async, mem.mem()->dims, loc);
  Scope inner(ctx_);
  auto b = record(loc, [&] { fn(inner, View(dst)); });
  detail::append(ir::make<ir::Async>(mem.mem(), dst, b, loc), loc);
}

namespace {
std::vector<ir::CallArgNode> call_args(const DeviceFunction& fn, const std::vector<CallArg>& args, SourceLoc loc) {
  std::vector<ir::CallArgNode> out;
  const auto& params = fn.ir()->params;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (const auto* v = std::get_if<View>(&args[i])) {
      defined_all(loc, {v->defined()});
      if (v->defined())
        out.push_back({nullptr, v->mem()});
      else
        out.push_back({ir::make<ir::Literal>(ScalarType::I32, 0, 0.0, loc), nullptr});
    } else {
      const auto& e = std::get<ExprArg>(args[i]);
      defined_all(loc, {e.expr.defined()});
      std::optional<ScalarType> want;
      if (i < params.size() && params[i].var) want = params[i].var->type;
      ExprPtr node = arg_node(e, want);
      if (!node) node = ir::make<ir::Literal>(ScalarType::I32, 0, 0.0, loc);
      out.push_back({node, nullptr});
    }
  }
  return out;
}
}  // namespace

void Scope::call(const DeviceFunction& fn, std::vector<CallArg> args, std::source_location l) {
  SourceLoc loc = here(l);
  if (!defined_all(loc, {fn.ir() != nullptr})) return detail::append(nullptr, loc);
  detail::append(ir::make<ir::Call>(fn.ir(), call_args(fn, args, loc), nullptr, loc), loc);
}

Var Scope::call(std::string result_name, const DeviceFunction& fn, std::vector<CallArg> args, std::source_location l) {
  SourceLoc loc = here(l);
  ScalarType t = fn.ir() && fn.ir()->returns ? *fn.ir()->returns : ScalarType::I32;
  auto v = new_var(std::move(result_name), t, ir::VarNode::Origin::Output, loc);
  if (defined_all(loc, {fn.ir() != nullptr}))
    detail::append(ir::make<ir::Call>(fn.ir(), call_args(fn, args, loc), v, loc), loc);
  return var_handle(v, loc);
}

void Scope::ret(std::source_location l) {
  SourceLoc loc = here(l);
  detail::append(ir::make<ir::Return>(nullptr, loc), loc);
}

void Scope::ret(const ExprArg& value, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(loc, {value.expr.defined()});
  std::optional<ScalarType> want;
  if (auto* ctx = detail::active()) want = ctx->returns;
  detail::append(ir::make<ir::Return>(arg_node(value, want), loc), loc);
}

void Scope::unsafe(Perspective needs, std::string cuda, std::vector<UnsafeIn> inputs, std::vector<UnsafeOut> outputs,
                   std::source_location l) {
  SourceLoc loc = here(l);
  std::vector<std::pair<std::string, ExprPtr>> ins;
  std::vector<std::pair<std::string, ir::VarPtr>> outs;
  for (auto& in : inputs) {
    defined_all(loc, {in.value.expr.defined()});
    ins.emplace_back(std::move(in.name), in.value.expr.node());
  }
  for (auto& out : outputs) {
    if (defined_all(loc, {out.var.var() != nullptr})) outs.emplace_back(std::move(out.name), out.var.var());
  }
  detail::append(ir::make<ir::Unsafe>(needs, std::move(cuda), std::move(ins), std::move(outs), loc), loc);
}

// ------------------------------------------------------------------------------------------- intrinsics
namespace {
struct IntrinsicCall {
  ir::IntrinsicOp op;
  SourceLoc loc;
  std::vector<ExprPtr> args;
  std::vector<ir::MemPtr> mems;
  std::vector<ir::VarPtr> outputs;
  std::vector<std::int64_t> imms;
  bool ok = true;

  IntrinsicCall& arg(const ExprArg& a, std::optional<ScalarType> want = std::nullopt) {
    if (!a.expr.defined()) ok = false;
    args.push_back(arg_node(a, want));
    return *this;
  }
  IntrinsicCall& mem(const View& v) {
    if (!v.defined()) ok = false;
    mems.push_back(v.mem());
    return *this;
  }
  IntrinsicCall& imm(std::int64_t v) {
    imms.push_back(v);
    return *this;
  }
  Var out(std::string name, ScalarType t) {
    auto v = new_var(std::move(name), t, ir::VarNode::Origin::Output, loc);
    outputs.push_back(v);
    emit();
    return var_handle(v, loc);
  }
  void emit() {
    if (!defined_all(loc, {ok})) return detail::append(nullptr, loc);
    detail::append(
        ir::make<ir::Intrinsic>(op, std::move(args), std::move(mems), std::move(outputs), std::move(imms), loc), loc);
  }
};
IntrinsicCall intrinsic(ir::IntrinsicOp op, const std::source_location& l) { return {op, here(l), {}, {}, {}, {}}; }
}  // namespace

void Scope::sync_threads(std::source_location l) { intrinsic(ir::IntrinsicOp::SyncThreads, l).emit(); }
void Scope::sync_warp(std::source_location l) { intrinsic(ir::IntrinsicOp::SyncWarp, l).emit(); }
void Scope::named_barrier(int id, int threads, std::source_location l) {
  intrinsic(ir::IntrinsicOp::NamedBarrier, l).imm(id).imm(threads).emit();
}
Var Scope::shfl_xor(std::string name, const ExprArg& v, const ExprArg& mask, std::source_location l) {
  return intrinsic(ir::IntrinsicOp::ShflXor, l).arg(v).arg(mask, ScalarType::I32).out(std::move(name), v.expr.type());
}
Var Scope::shfl_down(std::string name, const ExprArg& v, const ExprArg& delta, std::source_location l) {
  return intrinsic(ir::IntrinsicOp::ShflDown, l).arg(v).arg(delta, ScalarType::I32).out(std::move(name), v.expr.type());
}
Var Scope::shfl_up(std::string name, const ExprArg& v, const ExprArg& delta, std::source_location l) {
  return intrinsic(ir::IntrinsicOp::ShflUp, l).arg(v).arg(delta, ScalarType::I32).out(std::move(name), v.expr.type());
}
Var Scope::shfl_idx(std::string name, const ExprArg& v, const ExprArg& lane, std::source_location l) {
  return intrinsic(ir::IntrinsicOp::ShflIdx, l).arg(v).arg(lane, ScalarType::I32).out(std::move(name), v.expr.type());
}
Var Scope::vote_all(std::string name, const ExprArg& pred, std::source_location l) {
  return intrinsic(ir::IntrinsicOp::VoteAll, l).arg(pred).out(std::move(name), ScalarType::Bool);
}
Var Scope::vote_any(std::string name, const ExprArg& pred, std::source_location l) {
  return intrinsic(ir::IntrinsicOp::VoteAny, l).arg(pred).out(std::move(name), ScalarType::Bool);
}
Var Scope::ballot(std::string name, const ExprArg& pred, std::source_location l) {
  return intrinsic(ir::IntrinsicOp::Ballot, l).arg(pred).out(std::move(name), ScalarType::U32);
}
Var Scope::atomic(std::string name, AtomicOp op, const View& mem, const ExprArg& index, const ExprArg& value,
                  std::source_location l) {
  return intrinsic(ir::IntrinsicOp::Atomic, l)
      .mem(mem)
      .arg(index, ScalarType::I32)
      .arg(value, mem.elem())
      .imm(static_cast<std::int64_t>(op))
      .out(std::move(name), mem.elem());
}
void Scope::mma_sync(MmaKind kind, const View& d, const View& a, const View& b, const View& c, std::source_location l) {
  intrinsic(ir::IntrinsicOp::MmaSync, l).mem(d).mem(a).mem(b).mem(c).imm(static_cast<std::int64_t>(kind)).emit();
}
void Scope::ldmatrix(int count, const View& dst, const View& src, const ExprArg& index, std::source_location l) {
  intrinsic(ir::IntrinsicOp::Ldmatrix, l).mem(dst).mem(src).arg(index, ScalarType::I32).imm(count).emit();
}
void Scope::wgmma(int n, const View& acc, const ExprArg& desc_a, const ExprArg& desc_b, std::source_location l) {
  intrinsic(ir::IntrinsicOp::Wgmma, l).mem(acc).arg(desc_a, ScalarType::U64).arg(desc_b, ScalarType::U64).imm(n).emit();
}
void Scope::wgmma_fence(std::source_location l) { intrinsic(ir::IntrinsicOp::WgmmaFence, l).emit(); }
void Scope::wgmma_commit(std::source_location l) { intrinsic(ir::IntrinsicOp::WgmmaCommit, l).emit(); }
void Scope::wgmma_wait(int pending, std::source_location l) {
  intrinsic(ir::IntrinsicOp::WgmmaWait, l).imm(pending).emit();
}
void Scope::cp_async(const View& dst, const ExprArg& dst_index, const View& src, const ExprArg& src_index, int bytes,
                     std::source_location l) {
  intrinsic(ir::IntrinsicOp::CpAsync, l)
      .mem(dst)
      .mem(src)
      .arg(dst_index, ScalarType::I32)
      .arg(src_index, ScalarType::I32)
      .imm(bytes)
      .emit();
}
void Scope::cp_async_commit(std::source_location l) { intrinsic(ir::IntrinsicOp::CpAsyncCommit, l).emit(); }
void Scope::cp_async_wait(int pending, std::source_location l) {
  intrinsic(ir::IntrinsicOp::CpAsyncWait, l).imm(pending).emit();
}
void Scope::tma_load_2d(const View& dst, const ExprArg& tensor_map, const ExprArg& x, const ExprArg& y, const View& bar,
                        std::source_location l) {
  intrinsic(ir::IntrinsicOp::TmaLoad2D, l)
      .mem(dst)
      .mem(bar)
      .arg(tensor_map, ScalarType::U64)
      .arg(x, ScalarType::I32)
      .arg(y, ScalarType::I32)
      .emit();
}
void Scope::mbarrier_init(const View& bar, const ExprArg& count, std::source_location l) {
  intrinsic(ir::IntrinsicOp::MbarrierInit, l).mem(bar).arg(count, ScalarType::I32).emit();
}
void Scope::mbarrier_arrive(const View& bar, std::source_location l) {
  intrinsic(ir::IntrinsicOp::MbarrierArrive, l).mem(bar).emit();
}
void Scope::mbarrier_wait(const View& bar, const ExprArg& phase, std::source_location l) {
  intrinsic(ir::IntrinsicOp::MbarrierWait, l).mem(bar).arg(phase, ScalarType::I32).emit();
}

// ------------------------------------------------------------------------------------------- builders
namespace {

StmtPtr record_body(const std::shared_ptr<BuildCtx>& ctx, const std::function<void(Scope&)>& fn, SourceLoc loc) {
  detail::ActiveGuard guard(ctx.get());
  Scope s(ctx);
  return record(loc, [&] {
    if (fn) fn(s);
  });
}

void set_body(const std::shared_ptr<BuildCtx>& ctx, const std::function<void(Scope&)>& fn, SourceLoc loc) {
  if (ctx->body_recorded) {
    ctx->error("V0908", loc, "the body of " + ctx->name + " is set twice");
    return;
  }
  ctx->body_recorded = true;
  ctx->body_loc = loc;
  ctx->body = record_body(ctx, fn, loc);
}

std::vector<Diagnostic> merged(std::vector<Diagnostic> builder, std::vector<Diagnostic> checker) {
  builder.insert(builder.end(), std::make_move_iterator(checker.begin()), std::make_move_iterator(checker.end()));
  return builder;
}

}  // namespace

KernelBuilder::KernelBuilder(std::string name, std::source_location l) : ctx_(std::make_shared<BuildCtx>()) {
  ctx_->is_kernel = true;
  ctx_->name = std::move(name);
  ctx_->loc = here(l);
}
KernelBuilder::~KernelBuilder() = default;

Expr KernelBuilder::scalar_param(std::string name, ScalarType type, bool specialized, std::source_location l) {
  SourceLoc loc = here(l);
  auto v = ir::make_var(ctx_->next_id++, name, type, ir::VarNode::Origin::Param, loc);
  ctx_->params.push_back({std::move(name), v, nullptr, specialized, nullptr, std::nullopt, loc});
  return Expr(ir::make<ir::VarRef>(v, loc));
}

View KernelBuilder::pointer_param(std::string name, ScalarType elem, MemSpace space, bool is_const,
                                  std::optional<Extent> ext, std::source_location l) {
  SourceLoc loc = here(l);
  auto m = ir::make_mem(ctx_->next_id++, name, elem, space, is_const, 1, ir::MemNode::Origin::Param, loc);
  if (space != MemSpace::Global)
    ctx_->error("V0910", loc,
                "kernel pointer parameter " + name + " must point to global memory, not " + space_name(space));
  if (ext && !ext->n.defined()) ctx_->error("V0706", loc, "extent of " + name + " is an undefined Expr");
  ctx_->params.push_back({std::move(name), nullptr, m, false, ext ? ext->n.node() : nullptr, std::nullopt, loc});
  return View(m);
}

KernelBuilder& KernelBuilder::block_threads(std::int64_t threads, std::source_location l) {
  ctx_->threads = threads;
  ctx_->threads_loc = here(l);
  return *this;
}
KernelBuilder& KernelBuilder::grid_blocks(std::int64_t blocks, std::source_location l) {
  (void)l;
  ctx_->grid_blocks = blocks;
  return *this;
}
KernelBuilder& KernelBuilder::grid_multiple_of(std::int64_t m, std::source_location l) {
  (void)l;
  ctx_->grid_multiple = m;
  return *this;
}
KernelBuilder& KernelBuilder::shared_budget(std::int64_t bytes, std::source_location l) {
  ctx_->shared_budget = bytes;
  ctx_->budget_declared = true;
  ctx_->budget_loc = here(l);
  return *this;
}
KernelBuilder& KernelBuilder::body(const std::function<void(Scope&)>& fn, std::source_location l) {
  set_body(ctx_, fn, here(l));
  return *this;
}

Kernel KernelBuilder::build() {
  auto start = std::chrono::steady_clock::now();
  auto k = std::make_shared<ir::KernelNode>();
  k->name = ctx_->name;
  k->params = ctx_->params;
  k->threads = ctx_->threads;
  k->grid_blocks = ctx_->grid_blocks;
  k->grid_multiple = ctx_->grid_multiple;
  k->budget_declared = ctx_->budget_declared;
  k->shared_budget = k->budget_declared ? ctx_->shared_budget : check::kDefaultSharedBudget;
  k->body = ctx_->body;
  k->loc = ctx_->loc;
  k->threads_loc = ctx_->threads_loc.known() ? ctx_->threads_loc : ctx_->loc;
  k->budget_loc = ctx_->budget_loc.known() ? ctx_->budget_loc : ctx_->loc;
  k->body_loc = ctx_->body_loc;
  k->hash = ir::hash_kernel(*k);
  auto result = check::check(*k);
  auto us = std::chrono::duration_cast<std::chrono::microseconds>(std::chrono::steady_clock::now() - start).count();
  if (!ctx_->diags.empty() || !result.ok()) {
    logging::get().debug("kernel {}: {} error(s) in {} us", k->name, ctx_->diags.size() + result.errors.size(), us);
    throw CheckError(merged(ctx_->diags, std::move(result.errors)));
  }
  logging::get().debug("kernel {}: checked in {} us, {} obligation(s), {} bytes shared", k->name, us,
                       result.obligations.size(), result.shared_peak);
  return Kernel(std::move(k), std::move(result.obligations), result.shared_peak);
}

FunctionBuilder::FunctionBuilder(std::string name, std::source_location l) : ctx_(std::make_shared<BuildCtx>()) {
  ctx_->is_kernel = false;
  ctx_->name = std::move(name);
  ctx_->loc = here(l);
  ctx_->signature_loc = ctx_->loc;
}
FunctionBuilder::~FunctionBuilder() = default;

FunctionBuilder& FunctionBuilder::requires_perspective(Perspective p, std::source_location l) {
  ctx_->signature = p;
  ctx_->signature_loc = here(l);
  return *this;
}
FunctionBuilder& FunctionBuilder::shared_budget(std::int64_t bytes, std::source_location l) {
  ctx_->shared_budget = bytes;
  ctx_->budget_loc = here(l);
  return *this;
}
FunctionBuilder& FunctionBuilder::returns(ScalarType type, std::source_location l) {
  (void)l;
  ctx_->returns = type;
  return *this;
}

Expr FunctionBuilder::scalar_param(std::string name, ScalarType type, std::optional<At> a, std::source_location l) {
  SourceLoc loc = here(l);
  auto v = ir::make_var(ctx_->next_id++, name, type, ir::VarNode::Origin::Param, loc);
  ctx_->params.push_back(
      {std::move(name), v, nullptr, false, nullptr, a ? std::optional<Perspective>(a->p) : std::nullopt, loc});
  return Expr(ir::make<ir::VarRef>(v, loc));
}

View FunctionBuilder::pointer_param(std::string name, ScalarType elem, MemSpace space, bool is_const,
                                    std::optional<At> a, std::source_location l) {
  SourceLoc loc = here(l);
  auto m = ir::make_mem(ctx_->next_id++, name, elem, space, is_const, 1, ir::MemNode::Origin::Param, loc);
  ctx_->params.push_back(
      {std::move(name), nullptr, m, false, nullptr, a ? std::optional<Perspective>(a->p) : std::nullopt, loc});
  return View(m);
}

FunctionBuilder& FunctionBuilder::body(const std::function<void(Scope&)>& fn, std::source_location l) {
  set_body(ctx_, fn, here(l));
  return *this;
}

DeviceFunction FunctionBuilder::build() {
  auto f = std::make_shared<ir::FunctionNode>();
  f->name = ctx_->name;
  f->signature = ctx_->signature;
  f->shared_budget = ctx_->shared_budget;
  f->returns = ctx_->returns;
  f->params = ctx_->params;
  f->body = ctx_->body;
  f->loc = ctx_->loc;
  f->signature_loc = ctx_->signature_loc;
  f->budget_loc = ctx_->budget_loc.known() ? ctx_->budget_loc : ctx_->loc;
  f->hash = ir::hash_function(*f);
  auto result = check::check(*f);
  if (!ctx_->diags.empty() || !result.ok()) throw CheckError(merged(ctx_->diags, std::move(result.errors)));
  return DeviceFunction(std::move(f));
}

}  // namespace vantage
