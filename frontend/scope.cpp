// Vantage frontend: Scope records statements into its own body; KernelBuilder and FunctionBuilder
// assemble and check kernels and device functions.
#include <chrono>
#include <string_view>

#include "frontend/build_ctx.h"
#include "frontend/handles.h"
#include "jit/check/check.h"
#include "jit/ir/eval.h"
#include "jit/pipeline/handles.h"
#include "support/log.h"
#include "vantage/builder.hpp"

namespace vantage {
namespace detail {

void BuildCtx::record(std::uint64_t block, ir::StmtPtr stmt, SourceLoc at) {
  if (open.empty())
    throw CheckError({{"V0906",
                       "statement recorded through a Scope of '" + name +
                           "' after its body was recorded (a Scope kept beyond the lambda that received it)",
                       at,
                       {}}});
  if (open.back().id != block) {
    error("V0911", at,
          "statement recorded through a Scope that is not the innermost body of '" + name +
              "' here; record it through the Scope the innermost lambda received");
    return;
  }
  if (stmt) open.back().stmts.push_back(std::move(stmt));
}

void BuildCtx::record_innermost(ir::StmtPtr stmt, SourceLoc at) {
  if (open.empty()) throw CheckError({{"V0906", "store recorded outside the body of '" + name + "'", at, {}}});
  if (stmt) open.back().stmts.push_back(std::move(stmt));
}

}  // namespace detail

namespace {

using detail::BuildCtx;
using detail::BuilderAccess;
using ir::ExprPtr;
using ir::StmtPtr;

using detail::here;
using detail::node;
ir::MemPtr mem(const View& v) { return BuilderAccess::mem(v); }

/// Runs `fn` with a fresh scope on a new block of `ctx` and returns what it recorded.
template <class F>
StmtPtr record(const std::shared_ptr<BuildCtx>& ctx, SourceLoc loc, F&& fn) {
  std::uint64_t block = ctx->open_block();
  struct Close {
    BuildCtx* c;
    std::uint64_t id;
    bool done = false;
    ~Close() {
      if (!done && !c->open.empty() && c->open.back().id == id) c->open.pop_back();  // fn threw
    }
  } close{ctx.get(), block};
  Scope inner(ctx, block);
  fn(inner);
  std::vector<StmtPtr> stmts = ctx->close_block();
  close.done = true;
  return ir::make<ir::Seq>(std::move(stmts), loc);
}

ExprPtr arg_node(const ExprArg& a, std::optional<ScalarType> want = std::nullopt) {
  return want ? detail::adapt(a, *want) : node(a.expr);
}

ir::VarPtr new_var(BuildCtx& ctx, std::string name, ScalarType t, ir::VarNode::Origin origin, SourceLoc loc) {
  return ir::make_var(ctx.next_id++, std::move(name), t, origin, loc);
}

ir::MemPtr derived(BuildCtx& ctx, const ir::MemPtr& src, std::string suffix, ir::MemNode::Origin origin, int dims,
                   SourceLoc loc) {
  return ir::make_mem(ctx.next_id++, src->name + suffix, src->elem, src->space, src->is_const, dims, origin, loc);
}

/// Reports a default-constructed handle; returns true when all are defined.
bool defined_all(BuildCtx& ctx, SourceLoc loc, std::initializer_list<bool> ok) {
  for (bool b : ok) {
    if (!b) {
      ctx.error("V0706", loc, "an undefined Expr, Var, View or DeviceFunction was used (default-constructed handle)");
      return false;
    }
  }
  return true;
}

}  // namespace

#define VANTAGE_RECORD(stmt, loc) ctx_->record(block_, (stmt), (loc))

void Scope::assign(const Var& var, const ExprArg& value, std::source_location l) {
  SourceLoc loc = here(l);
  auto v = BuilderAccess::var(var);
  if (!defined_all(*ctx_, loc, {v != nullptr, value.expr.defined()})) return VANTAGE_RECORD(nullptr, loc);
  VANTAGE_RECORD(ir::make<ir::Assign>(v, arg_node(value, v->type), loc), loc);
}

Var Scope::let(std::string name, const ExprArg& value, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(*ctx_, loc, {value.expr.defined()});
  auto v = new_var(*ctx_, std::move(name), value.expr.type(), ir::VarNode::Origin::Let, loc);
  VANTAGE_RECORD(ir::make<ir::Let>(v, node(value.expr), std::nullopt, loc), loc);
  return BuilderAccess::var(v, loc);
}

Var Scope::let(std::string name, const ExprArg& value, At a, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(*ctx_, loc, {value.expr.defined()});
  auto v = new_var(*ctx_, std::move(name), value.expr.type(), ir::VarNode::Origin::Let, loc);
  VANTAGE_RECORD(ir::make<ir::Let>(v, node(value.expr), a.p, loc), loc);
  return BuilderAccess::var(v, loc);
}

Expr Scope::grid_blocks(std::source_location l) {
  return BuilderAccess::expr(ir::make<ir::Builtin>(ScalarType::I32, ir::BuiltinKind::BlocksInGrid, here(l)));
}

Expr Scope::id(Perspective p, std::source_location l) {
  return BuilderAccess::expr(ir::make<ir::Id>(ScalarType::I32, p, here(l)));
}

View Scope::local_array(std::string name, ScalarType elem, std::int64_t count, std::optional<At> a,
                        std::source_location l) {
  SourceLoc loc = here(l);
  auto m =
      ir::make_mem(ctx_->next_id++, std::move(name), elem, MemSpace::Local, false, 1, ir::MemNode::Origin::Local, loc);
  VANTAGE_RECORD(ir::make<ir::LocalAlloc>(m, count, a ? std::optional<Perspective>(a->p) : std::nullopt, loc), loc);
  return BuilderAccess::view(m, ctx_);
}

View Scope::shared(std::string name, ScalarType elem, const ExprArg& count, std::source_location l) {
  return shared_aligned(std::move(name), elem, count, 16, l);
}

View Scope::shared_aligned(std::string name, ScalarType elem, const ExprArg& count, std::int64_t align,
                           std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(*ctx_, loc, {count.expr.defined()});
  if (align < 16 || align > 4096 || (align & (align - 1)) != 0) {
    ctx_->error("V0402", loc,
                "shared array " + name + ": alignment " + std::to_string(align) +
                    " bytes is not a power of two from 16 to 4096");
    align = 16;
  }
  auto m = ir::make_mem(ctx_->next_id++, std::move(name), elem, MemSpace::Shared, false, 1, ir::MemNode::Origin::Shared,
                        loc);
  VANTAGE_RECORD(ir::make<ir::SharedAlloc>(m, arg_node(count, ScalarType::I32), align, loc), loc);
  return BuilderAccess::view(m, ctx_);
}

void Scope::if_(const ExprArg& cond, const std::function<void(Scope&)>& then_body, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(*ctx_, loc, {cond.expr.defined()});
  auto t = record(ctx_, loc, then_body);
  VANTAGE_RECORD(ir::make<ir::If>(node(cond.expr), t, nullptr, loc), loc);
}

void Scope::if_(const ExprArg& cond, const std::function<void(Scope&)>& then_body,
                const std::function<void(Scope&)>& else_body, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(*ctx_, loc, {cond.expr.defined()});
  auto t = record(ctx_, loc, then_body);
  auto e = record(ctx_, loc, else_body);
  VANTAGE_RECORD(ir::make<ir::If>(node(cond.expr), t, e, loc), loc);
}

void Scope::for_(std::string name, const ExprArg& begin, const ExprArg& end,
                 const std::function<void(Scope&, Expr)>& fn, std::source_location l) {
  for_(std::move(name), begin, end, ExprArg(1, l), fn, l);
}

void Scope::for_(std::string name, const ExprArg& begin, const ExprArg& end, const ExprArg& step,
                 const std::function<void(Scope&, Expr)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(*ctx_, loc, {begin.expr.defined(), end.expr.defined(), step.expr.defined()});
  ScalarType t = ScalarType::I32;
  for (const ExprArg* a : {&begin, &end, &step})
    if (!a->weak_literal && a->expr.defined()) {
      t = a->expr.type();
      break;
    }
  auto v = new_var(*ctx_, std::move(name), t, ir::VarNode::Origin::Loop, loc);
  Expr iv = BuilderAccess::expr(ir::ref(v, loc));
  auto b = record(ctx_, loc, [&](Scope& inner) { fn(inner, iv); });
  VANTAGE_RECORD(ir::make<ir::For>(v, arg_node(begin, t), arg_node(end, t), arg_node(step, t), b, loc), loc);
}

void Scope::for_(std::string name, const ExprArg& begin, const std::function<Expr(Expr)>& cond,
                 const std::function<Expr(Expr)>& next, const std::function<void(Scope&, Expr)>& fn,
                 std::source_location l) {
  Var v = let(name, begin, l);
  while_(
      cond(v),
      [&](Scope& s) {
        // This iteration's value (a loop variable, which the body may leave unused); the counter
        // steps before the body.
        SourceLoc loc = here(l);
        auto now = new_var(*ctx_, name, v.type(), ir::VarNode::Origin::Loop, loc);
        BuilderAccess::ctx(s)->record(BuilderAccess::block(s), ir::make<ir::Let>(now, node(v), std::nullopt, loc), loc);
        s.assign(v, next(v), l);
        fn(s, BuilderAccess::expr(ir::ref(now, loc)));
      },
      l);
}

void Scope::break_(std::source_location l) { VANTAGE_RECORD(ir::make<ir::Jump>(true, here(l)), here(l)); }
void Scope::continue_(std::source_location l) { VANTAGE_RECORD(ir::make<ir::Jump>(false, here(l)), here(l)); }

void Scope::while_(const ExprArg& cond, const std::function<void(Scope&)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(*ctx_, loc, {cond.expr.defined()});
  auto b = record(ctx_, loc, fn);
  VANTAGE_RECORD(ir::make<ir::While>(node(cond.expr), b, loc), loc);
}

void Scope::group(Perspective p, const std::function<void(Scope&)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  auto b = record(ctx_, loc, fn);
  VANTAGE_RECORD(ir::make<ir::Group>(p, b, loc), loc);
}

namespace {
/// Whether a location is inside the C++ standard library: where a SplitBranch's default location
/// lands when it is made in place (emplace_back), rather than on the user's line.
bool in_standard_library(const SourceLoc& l) {
  std::string_view f = l.file;
  return f.find("/include/c++/") != std::string_view::npos || f.find("/bits/") != std::string_view::npos ||
         f.starts_with("/usr/include/");
}
}  // namespace

void Scope::split(Level level, std::vector<SplitBranch> branches, std::source_location l) {
  SourceLoc loc = here(l);
  std::vector<std::int64_t> counts;
  std::vector<StmtPtr> bodies;
  std::vector<SourceLoc> locs;
  for (auto& br : branches) {
    if (in_standard_library(br.loc)) br.loc = loc;  // the split's line names it instead
    counts.push_back(br.count);
    locs.push_back(br.loc);
    bodies.push_back(record(ctx_, br.loc, [&](Scope& inner) {
      if (br.body) br.body(inner);
    }));
  }
  VANTAGE_RECORD(ir::make<ir::Split>(level, std::move(counts), std::move(bodies), std::move(locs), loc), loc);
}

void Scope::destruct(const std::function<void(Scope&)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  auto b = record(ctx_, loc, fn);
  VANTAGE_RECORD(ir::make<ir::Destruct>(b, loc), loc);
}

namespace {
template <class IndexFn>
void partition_impl(const std::shared_ptr<BuildCtx>& ctx, std::uint64_t block, const View& view, Perspective p,
                    int arity, IndexFn&& make_index, const std::function<void(Scope&, View)>& fn, SourceLoc loc) {
  if (!defined_all(*ctx, loc, {view.defined()})) return ctx->record(block, nullptr, loc);
  // The helper making it, read before the body runs: a helper hands its own body to the user's code
  // under called_as("") (Scope::called_as), so the user's partitions there are the user's.
  const std::string via = ctx->helpers.empty() ? std::string() : ctx->helpers.back();
  std::vector<ir::VarPtr> vars;
  std::vector<Expr> args;
  static const char* const kNames[] = {"i", "j", "k"};
  for (int d = 0; d < arity; ++d) {
    vars.push_back(new_var(*ctx, kNames[d], ScalarType::I32, ir::VarNode::Origin::IndexArg, loc));
    args.push_back(BuilderAccess::expr(ir::ref(vars.back(), loc)));
  }
  Expr index = make_index(args);
  auto dst = derived(*ctx, mem(view), "_part", ir::MemNode::Origin::Partition, arity, loc);
  auto b = record(ctx, loc, [&](Scope& inner) { fn(inner, BuilderAccess::view(dst, ctx)); });
  ctx->record(block, ir::make<ir::Partition>(mem(view), dst, p, std::move(vars), node(index), b, loc, via), loc);
}
}  // namespace

std::optional<std::int64_t> Scope::block_threads() const {
  if (!ctx_->is_kernel) return std::nullopt;
  return ctx_->threads;
}

Scope::Id3 Scope::thread_xyz(Dim3 shape, std::source_location l) {
  auto T = block_threads();
  if (shape.x < 1 || shape.y < 1 || shape.z < 1 || !T || shape.count() != *T) {
    diagnose("V0915",
             "thread_xyz(" + std::to_string(shape.x) + ", " + std::to_string(shape.y) + ", " + std::to_string(shape.z) +
                 ") needs the kernel's block size declared (block_threads() before body()) and equal to " +
                 std::to_string(shape.count()) + (T ? ", not " + std::to_string(*T) : std::string()),
             l);
    Expr zero(0, l);
    return {zero, zero, zero};
  }
  // In-block position: id(thread(1)) is the global index at grid(1) and the in-block one at block(1).
  // Variables of this scope, because an id() means something else inside a narrower group.
  Var t = let("t_lin", *T == 1 ? Expr(0, l) : id(thread(1), l) % *T, l);
  Id3 r{Expr(0, l), Expr(0, l), Expr(0, l)};
  if (shape.x > 1) r.x = let("tx", shape.y * shape.z == 1 ? Expr(t) : t % shape.x, l);
  if (shape.y > 1) r.y = let("ty", shape.z == 1 && shape.x == 1 ? Expr(t) : t / shape.x % shape.y, l);
  if (shape.z > 1) r.z = let("tz", t / (shape.x * shape.y), l);
  return r;
}

Scope::Id3 Scope::block_xyz(const ExprArg& x_blocks, std::source_location l) {
  Var b = let("b_lin", id(block(1), l), l);
  const Expr X = x_blocks.expr;
  return {let("bx", b % X, l), let("by", b / X, l), Expr(0, l)};
}

Scope::Id3 Scope::block_xyz(const ExprArg& x_blocks, const ExprArg& y_blocks, std::source_location l) {
  Var b = let("b_lin", id(block(1), l), l);
  const Expr X = x_blocks.expr, Y = y_blocks.expr;
  return {let("bx", b % X, l), let("by", b / X % Y, l), let("bz", b / (X * Y), l)};
}

void Scope::diagnose(std::string code, std::string message, std::source_location l) {
  ctx_->error(std::move(code), here(l), std::move(message));
}

void Scope::diagnose(std::string code, std::string message, SourceLoc loc) {
  ctx_->error(std::move(code), loc, std::move(message));
}

void Scope::partition(const View& view, Perspective p, const std::function<Expr(Expr)>& index,
                      const std::function<void(Scope&, View)>& fn, std::source_location l) {
  partition_impl(
      ctx_, block_, view, p, 1, [&](const std::vector<Expr>& a) { return index(a[0]); }, fn, here(l));
}

void Scope::partition(const View& view, Perspective p, const std::function<Expr(Expr, Expr)>& index,
                      const std::function<void(Scope&, View)>& fn, std::source_location l) {
  partition_impl(
      ctx_, block_, view, p, 2, [&](const std::vector<Expr>& a) { return index(a[0], a[1]); }, fn, here(l));
}

namespace {
/// claim, lower and async: a new name for the whole region, living where the construct says.
template <class Make>
void narrow_whole(const std::shared_ptr<BuildCtx>& ctx, std::uint64_t block, const View& view, const char* suffix,
                  ir::MemNode::Origin origin, const std::function<void(Scope&, View)>& fn, SourceLoc loc, Make&& make) {
  if (!defined_all(*ctx, loc, {view.defined()})) return ctx->record(block, nullptr, loc);
  auto src = mem(view);
  auto dst = derived(*ctx, src, suffix, origin, src->dims, loc);
  auto b = record(ctx, loc, [&](Scope& inner) { fn(inner, BuilderAccess::view(dst, ctx)); });
  ctx->record(block, make(src, dst, b), loc);
}
}  // namespace

void Scope::claim(const View& view, Perspective p, const std::function<void(Scope&, View)>& fn,
                  std::source_location l) {
  SourceLoc loc = here(l);
  const std::string via = ctx_->helpers.empty() ? std::string() : ctx_->helpers.back();
  narrow_whole(ctx_, block_, view, "_claim", ir::MemNode::Origin::Claim, fn, loc,
               [&](auto src, auto dst, auto b) { return ir::make<ir::Claim>(src, dst, p, b, loc, via); });
}

void Scope::called_as(const std::string& name, const std::function<void()>& body) {
  ctx_->helpers.push_back(name);
  struct Pop {
    BuildCtx* c;
    ~Pop() { c->helpers.pop_back(); }
  } pop{ctx_.get()};
  body();
}

void Scope::lower(const View& view, const std::function<void(Scope&, View)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  narrow_whole(ctx_, block_, view, "_low", ir::MemNode::Origin::Lower, fn, loc,
               [&](auto src, auto dst, auto b) { return ir::make<ir::Lower>(src, dst, b, loc); });
}

void Scope::async(const View& view, const std::function<void(Scope&, View)>& fn, std::source_location l) {
  SourceLoc loc = here(l);
  narrow_whole(ctx_, block_, view, "_async", ir::MemNode::Origin::Async, fn, loc,
               [&](auto src, auto dst, auto b) { return ir::make<ir::Async>(src, dst, b, loc); });
}

namespace {
std::vector<ir::CallArgNode> call_args(BuildCtx& ctx, const ir::FunctionNode& fn, const std::vector<CallArg>& args,
                                       SourceLoc loc) {
  std::vector<ir::CallArgNode> out;
  const auto& params = fn.params;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (const auto* v = std::get_if<View>(&args[i])) {
      defined_all(ctx, loc, {v->defined()});
      if (v->defined())
        out.push_back({nullptr, mem(*v)});
      else
        out.push_back({ir::int_literal(ScalarType::I32, 0, loc), nullptr});
    } else {
      const auto& e = std::get<ExprArg>(args[i]);
      defined_all(ctx, loc, {e.expr.defined()});
      std::optional<ScalarType> want;
      if (i < params.size() && params[i].var) want = params[i].var->type;
      ExprPtr n = arg_node(e, want);
      if (!n) n = ir::int_literal(ScalarType::I32, 0, loc);
      out.push_back({n, nullptr});
    }
  }
  return out;
}
}  // namespace

void Scope::call(const DeviceFunction& fn, std::vector<CallArg> args, std::source_location l) {
  SourceLoc loc = here(l);
  const auto& f = detail::KernelAccess::ir(fn);
  if (!defined_all(*ctx_, loc, {f != nullptr})) return VANTAGE_RECORD(nullptr, loc);
  VANTAGE_RECORD(ir::make<ir::Call>(f, call_args(*ctx_, *f, args, loc), nullptr, loc), loc);
}

Var Scope::call(std::string result_name, const DeviceFunction& fn, std::vector<CallArg> args, std::source_location l) {
  SourceLoc loc = here(l);
  const auto& f = detail::KernelAccess::ir(fn);
  ScalarType t = f && f->returns ? *f->returns : ScalarType::I32;
  auto v = new_var(*ctx_, std::move(result_name), t, ir::VarNode::Origin::Output, loc);
  if (defined_all(*ctx_, loc, {f != nullptr}))
    VANTAGE_RECORD(ir::make<ir::Call>(f, call_args(*ctx_, *f, args, loc), v, loc), loc);
  return BuilderAccess::var(v, loc);
}

void Scope::ret(std::source_location l) {
  SourceLoc loc = here(l);
  VANTAGE_RECORD(ir::make<ir::Return>(nullptr, loc), loc);
}

void Scope::ret(const ExprArg& value, std::source_location l) {
  SourceLoc loc = here(l);
  defined_all(*ctx_, loc, {value.expr.defined()});
  VANTAGE_RECORD(ir::make<ir::Return>(arg_node(value, ctx_->returns), loc), loc);
}

void Scope::unsafe(Perspective needs, std::string cuda, std::vector<UnsafeIn> inputs, std::vector<UnsafeOut> outputs,
                   std::source_location l) {
  SourceLoc loc = here(l);
  std::vector<ir::NamedExpr> ins;
  std::vector<ir::NamedVar> outs;
  for (auto& in : inputs) {
    defined_all(*ctx_, loc, {in.value.expr.defined()});
    ins.emplace_back(std::move(in.name), node(in.value.expr));
  }
  for (auto& out : outputs) {
    auto v = BuilderAccess::var(out.var);
    if (defined_all(*ctx_, loc, {v != nullptr})) outs.emplace_back(std::move(out.name), v);
  }
  VANTAGE_RECORD(ir::make<ir::Unsafe>(needs, std::move(cuda), std::move(ins), std::move(outs), loc), loc);
}

// ------------------------------------------------------------------------------------------- intrinsics
namespace {
struct IntrinsicCall {
  BuildCtx& ctx;
  std::uint64_t block;
  ir::IntrinsicOp op;
  SourceLoc loc;
  std::vector<ExprPtr> args;
  std::vector<ir::MemPtr> mems;
  std::vector<ir::VarPtr> outputs;
  std::vector<std::int64_t> imms;
  std::string text;
  bool ok = true;

  IntrinsicCall& arg(const ExprArg& a, std::optional<ScalarType> want = std::nullopt) {
    if (!a.expr.defined()) ok = false;
    args.push_back(arg_node(a, want));
    return *this;
  }
  IntrinsicCall& mem(const View& v) {
    if (!v.defined()) ok = false;
    mems.push_back(BuilderAccess::mem(v));
    return *this;
  }
  IntrinsicCall& imm(std::int64_t v) {
    imms.push_back(v);
    return *this;
  }
  Var out(std::string name, ScalarType t) {
    auto v = new_var(ctx, std::move(name), t, ir::VarNode::Origin::Output, loc);
    outputs.push_back(v);
    emit();
    return BuilderAccess::var(v, loc);
  }
  void emit() {
    if (!defined_all(ctx, loc, {ok})) return ctx.record(block, nullptr, loc);
    ctx.record(block,
               ir::make<ir::Intrinsic>(op, std::move(args), std::move(mems), std::move(outputs), std::move(imms),
                                       std::move(text), loc),
               loc);
  }
};
}  // namespace

#define VANTAGE_INTRINSIC(op, l)                                    \
  IntrinsicCall {                                                   \
    *ctx_, block_, ir::IntrinsicOp::op, here(l), {}, {}, {}, {}, {} \
  }

void Scope::sync_threads(std::source_location l) { VANTAGE_INTRINSIC(SyncThreads, l).emit(); }
void Scope::sync_warp(std::source_location l) { VANTAGE_INTRINSIC(SyncWarp, l).emit(); }
void Scope::cluster_sync(std::source_location l) { VANTAGE_INTRINSIC(ClusterSync, l).emit(); }
Expr Scope::cluster_rank(std::source_location l) {
  if (ctx_->cluster < 2)
    ctx_->error("V0917", here(l), "cluster_rank needs a kernel of clusters: declare KernelBuilder::cluster(n) first");
  // The hardware block's index (a tile loop's block may take several tiles), not id(block(1)), which
  // is the block's place in the code's own perspective.
  Expr block = BuilderAccess::expr(ir::make<ir::Builtin>(ScalarType::I32, ir::BuiltinKind::BlockInGrid, here(l)));
  return block % std::max<std::int64_t>(ctx_->cluster, 1);
}
void Scope::named_barrier(int id, int threads, std::source_location l) {
  VANTAGE_INTRINSIC(NamedBarrier, l).imm(id).imm(threads).emit();
}
Var Scope::shfl_xor(std::string name, const ExprArg& v, const ExprArg& mask, std::source_location l) {
  return VANTAGE_INTRINSIC(ShflXor, l).arg(v).arg(mask, ScalarType::I32).out(std::move(name), v.expr.type());
}
Var Scope::shfl_down(std::string name, const ExprArg& v, const ExprArg& delta, std::source_location l) {
  return VANTAGE_INTRINSIC(ShflDown, l).arg(v).arg(delta, ScalarType::I32).out(std::move(name), v.expr.type());
}
Var Scope::shfl_up(std::string name, const ExprArg& v, const ExprArg& delta, std::source_location l) {
  return VANTAGE_INTRINSIC(ShflUp, l).arg(v).arg(delta, ScalarType::I32).out(std::move(name), v.expr.type());
}
Var Scope::shfl_idx(std::string name, const ExprArg& v, const ExprArg& lane, std::source_location l) {
  return VANTAGE_INTRINSIC(ShflIdx, l).arg(v).arg(lane, ScalarType::I32).out(std::move(name), v.expr.type());
}
Var Scope::vote_all(std::string name, const ExprArg& pred, std::source_location l) {
  return VANTAGE_INTRINSIC(VoteAll, l).arg(pred).out(std::move(name), ScalarType::Bool);
}
Var Scope::vote_any(std::string name, const ExprArg& pred, std::source_location l) {
  return VANTAGE_INTRINSIC(VoteAny, l).arg(pred).out(std::move(name), ScalarType::Bool);
}
Var Scope::ballot(std::string name, const ExprArg& pred, std::source_location l) {
  return VANTAGE_INTRINSIC(Ballot, l).arg(pred).out(std::move(name), ScalarType::U32);
}
namespace {
std::int64_t atomic_code(AtomicOp op, Atomicity how) {
  static_assert(static_cast<int>(AtomicOp::Store) == static_cast<int>(ir::AtomicKind::Store));
  static_assert(static_cast<int>(AtomicScope::System) == static_cast<int>(ir::AtomicScope::System));
  static_assert(static_cast<int>(MemoryOrder::AcqRel) == static_cast<int>(ir::MemoryOrder::AcqRel));
  return ir::atomic_imm(static_cast<ir::AtomicKind>(op), static_cast<ir::AtomicScope>(how.scope),
                        static_cast<ir::MemoryOrder>(how.order));
}
}  // namespace

Var Scope::atomic(std::string name, AtomicOp op, const View& m, const ExprArg& index, const ExprArg& value,
                  Atomicity how, std::source_location l) {
  return VANTAGE_INTRINSIC(Atomic, l)
      .mem(m)
      .arg(index, ScalarType::I32)
      .arg(value, m.elem())
      .imm(atomic_code(op, how))
      .out(std::move(name), m.elem());
}
Var Scope::atomic_cas(std::string name, const View& m, const ExprArg& index, const ExprArg& compare,
                      const ExprArg& value, Atomicity how, std::source_location l) {
  return VANTAGE_INTRINSIC(Atomic, l)
      .mem(m)
      .arg(index, ScalarType::I32)
      .arg(value, m.elem())
      .arg(compare, m.elem())
      .imm(atomic_code(AtomicOp::Cas, how))
      .out(std::move(name), m.elem());
}
void Scope::atomic(AtomicOp op, const View& m, const ExprArg& index, const ExprArg& value, Atomicity how,
                   std::source_location l) {
  VANTAGE_INTRINSIC(Atomic, l).mem(m).arg(index, ScalarType::I32).arg(value, m.elem()).imm(atomic_code(op, how)).emit();
}
Var Scope::atomic_load(std::string name, const View& m, const ExprArg& index, Atomicity how, std::source_location l) {
  // The value operand of a load is the element's zero, so that every atomic has the same operands.
  return VANTAGE_INTRINSIC(Atomic, l)
      .mem(m)
      .arg(index, ScalarType::I32)
      .arg(cast(m.elem(), 0), m.elem())
      .imm(atomic_code(AtomicOp::Load, how))
      .out(std::move(name), m.elem());
}
void Scope::atomic_store(const View& m, const ExprArg& index, const ExprArg& value, Atomicity how,
                         std::source_location l) {
  atomic(AtomicOp::Store, m, index, value, how, l);
}
void Scope::mma_sync(MmaKind kind, const View& d, const View& a, const View& b, const View& c, std::source_location l) {
  static_assert(static_cast<int>(MmaKind::S8_M16N8K32) == static_cast<int>(ir::MmaShape::S8_M16N8K32));
  VANTAGE_INTRINSIC(MmaSync, l).mem(d).mem(a).mem(b).mem(c).imm(static_cast<std::int64_t>(kind)).emit();
}
void Scope::ldmatrix(int count, const View& dst, const View& src, const ExprArg& index, std::source_location l) {
  VANTAGE_INTRINSIC(Ldmatrix, l).mem(dst).mem(src).arg(index, ScalarType::I32).imm(count).emit();
}
void Scope::wgmma(int n, const View& acc, const View& a, const ExprArg& a_offset, const View& b,
                  const ExprArg& b_offset, std::source_location l) {
  VANTAGE_INTRINSIC(Wgmma, l)
      .mem(acc)
      .mem(a)
      .mem(b)
      .arg(a_offset, ScalarType::I32)
      .arg(b_offset, ScalarType::I32)
      .imm(n)
      .emit();
}
void Scope::wgmma_fence(std::source_location l) { VANTAGE_INTRINSIC(WgmmaFence, l).emit(); }
void Scope::wgmma_commit(std::source_location l) { VANTAGE_INTRINSIC(WgmmaCommit, l).emit(); }
void Scope::wgmma_wait(int pending, std::source_location l) { VANTAGE_INTRINSIC(WgmmaWait, l).imm(pending).emit(); }
void Scope::cp_async(const View& dst, const ExprArg& dst_index, const View& src, const ExprArg& src_index, int bytes,
                     std::source_location l) {
  VANTAGE_INTRINSIC(CpAsync, l)
      .mem(dst)
      .mem(src)
      .arg(dst_index, ScalarType::I32)
      .arg(src_index, ScalarType::I32)
      .imm(bytes)
      .emit();
}
void Scope::cp_async_commit(std::source_location l) { VANTAGE_INTRINSIC(CpAsyncCommit, l).emit(); }
void Scope::nanosleep(const ExprArg& ns, std::source_location l) {
  VANTAGE_INTRINSIC(Nanosleep, l).arg(ns, ScalarType::I32).emit();
}
void Scope::print(const std::string& format, std::initializer_list<ExprArg> values, std::source_location l) {
  IntrinsicCall call = VANTAGE_INTRINSIC(Print, l);
  for (const ExprArg& v : values) call.arg(v);
  call.text = format;
  call.emit();
}
void Scope::assert_that(const ExprArg& condition, const std::string& what, std::source_location l) {
  IntrinsicCall call = VANTAGE_INTRINSIC(Assert, l);
  call.arg(condition);
  call.text = what;
  call.emit();
}
void Scope::cp_async_wait(int pending, std::source_location l) {
  VANTAGE_INTRINSIC(CpAsyncWait, l).imm(pending).emit();
}
namespace {
/// The index of a tensor map of this kernel, or -1 with V0503 (one of another kernel, or none).
int map_index(const std::shared_ptr<BuildCtx>& self, const TensorMap& map, const char* op, SourceLoc loc) {
  if (map.defined() && BuilderAccess::ctx(map) == self) return BuilderAccess::index(map);
  self->error("V0503", loc,
              map.defined() ? "tensor map " + map.name() + " belongs to another kernel"
                            : std::string(op) + " needs a tensor map made by KernelBuilder::tensor_map");
  return -1;
}
}  // namespace

namespace {
/// A TMA load's operands: the destination and its mbarriers; column, row, slot, the destination's
/// first element (a multicast's mask follows).
IntrinsicCall tma_load_call(IntrinsicCall call, const View& dst, const ExprArg& dst_index, const ExprArg& row,
                            const ExprArg& col, const View& bars, const ExprArg& slot) {
  call.mem(dst).mem(bars).arg(col, ScalarType::I32).arg(row, ScalarType::I32).arg(slot, ScalarType::I32);
  call.arg(dst_index, ScalarType::I32);
  return call;
}
}  // namespace

void Scope::tma_load(const View& dst, const ExprArg& dst_index, const TensorMap& map, const ExprArg& row,
                     const ExprArg& col, const View& bars, const ExprArg& slot, std::source_location l) {
  const int index = map_index(ctx_, map, "tma_load", here(l));
  tma_load_call(VANTAGE_INTRINSIC(TmaLoad2D, l), dst, dst_index, row, col, bars, slot).imm(index).emit();
}
void Scope::tma_load_multicast(const View& dst, const ExprArg& dst_index, const TensorMap& map, const ExprArg& row,
                               const ExprArg& col, const View& bars, const ExprArg& slot, const ExprArg& mask,
                               std::source_location l) {
  const int index = map_index(ctx_, map, "tma_load_multicast", here(l));
  tma_load_call(VANTAGE_INTRINSIC(TmaLoadMulticast2D, l), dst, dst_index, row, col, bars, slot)
      .arg(mask, ScalarType::I32)
      .imm(index)
      .emit();
}
void Scope::tma_store(const TensorMap& map, const View& src, const ExprArg& src_index, const View& dst,
                      const ExprArg& dst_index, std::source_location l) {
  const int index = map_index(ctx_, map, "tma_store", here(l));
  VANTAGE_INTRINSIC(TmaStore2D, l)
      .mem(src)
      .mem(dst)
      .arg(src_index, ScalarType::I32)
      .arg(dst_index, ScalarType::I32)
      .imm(index)
      .imm(map.defined() ? map.box_rows() * map.box_cols() : 0)
      .emit();
}
void Scope::tma_store_wait(int pending, std::source_location l) {
  VANTAGE_INTRINSIC(TmaStoreWait, l).imm(pending).emit();
}
void Scope::mbarrier_init(const View& bars, const ExprArg& slot, const ExprArg& count, std::source_location l) {
  VANTAGE_INTRINSIC(MbarrierInit, l).mem(bars).arg(count, ScalarType::I32).arg(slot, ScalarType::I32).emit();
}
void Scope::mbarrier_arrive(const View& bars, const ExprArg& slot, std::source_location l) {
  VANTAGE_INTRINSIC(MbarrierArrive, l).mem(bars).arg(slot, ScalarType::I32).emit();
}
void Scope::mbarrier_arrive_cluster(const View& bars, const ExprArg& slot, const ExprArg& rank,
                                    std::source_location l) {
  VANTAGE_INTRINSIC(MbarrierArriveCluster, l).mem(bars).arg(slot, ScalarType::I32).arg(rank, ScalarType::I32).emit();
}
void Scope::mbarrier_arrive_expect_tx(const View& bars, const ExprArg& slot, std::int64_t bytes,
                                      std::source_location l) {
  VANTAGE_INTRINSIC(MbarrierExpectTx, l).mem(bars).arg(slot, ScalarType::I32).imm(bytes).emit();
}
void Scope::mbarrier_wait(const View& bars, const ExprArg& slot, const ExprArg& phase, std::source_location l) {
  VANTAGE_INTRINSIC(MbarrierWait, l).mem(bars).arg(phase, ScalarType::I32).arg(slot, ScalarType::I32).emit();
}
void Scope::setmaxnreg(int count, bool increase, std::source_location l) {
  VANTAGE_INTRINSIC(SetMaxNreg, l).imm(count).imm(increase ? 1 : 0).emit();
}

#undef VANTAGE_INTRINSIC
#undef VANTAGE_RECORD

// ------------------------------------------------------------------------------------------- builders
namespace {

void set_body(const std::shared_ptr<BuildCtx>& ctx, const std::function<void(Scope&)>& fn, SourceLoc loc) {
  if (ctx->body_recorded) {
    ctx->error("V0908", loc, "the body of " + ctx->name + " is set twice");
    return;
  }
  ctx->body_recorded = true;
  ctx->body_loc = loc;
  ctx->body = record(ctx, loc, [&](Scope& s) {
    if (fn) fn(s);
  });
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
  return BuilderAccess::expr(ir::ref(v, loc));
}

View KernelBuilder::pointer_param(std::string name, ScalarType elem, MemSpace space, bool is_const,
                                  std::optional<Extent> ext, std::source_location l) {
  SourceLoc loc = here(l);
  auto m = ir::make_mem(ctx_->next_id++, name, elem, space, is_const, 1, ir::MemNode::Origin::Param, loc);
  if (space != MemSpace::Global)
    ctx_->error("V0910", loc,
                "kernel pointer parameter " + name + " must point to global memory, not " + space_name(space));
  if (ext && !ext->n.defined()) ctx_->error("V0706", loc, "extent of " + name + " is an undefined Expr");
  ctx_->params.push_back({std::move(name), nullptr, m, false, ext ? node(ext->n) : nullptr, std::nullopt, loc});
  return BuilderAccess::view(m, ctx_);
}

KernelBuilder& KernelBuilder::block_threads(std::int64_t threads, std::source_location l) {
  ctx_->threads = threads;
  ctx_->threads_loc = here(l);
  return *this;
}
KernelBuilder& KernelBuilder::grid_blocks(std::int64_t blocks, std::source_location l) {
  ctx_->grid_blocks = blocks;
  ctx_->grid_loc = here(l);
  return *this;
}
KernelBuilder& KernelBuilder::grid_multiple_of(std::int64_t m, std::source_location l) {
  ctx_->grid_multiple = m;
  ctx_->grid_loc = here(l);
  return *this;
}
KernelBuilder& KernelBuilder::cluster(std::int64_t blocks, std::source_location l) {
  ctx_->cluster = blocks;
  ctx_->cluster_loc = here(l);
  return *this;
}
KernelBuilder& KernelBuilder::min_blocks_per_sm(std::int64_t blocks, std::source_location l) {
  ctx_->min_blocks_loc = here(l);
  // The IR's 0 means "not asked": a count out of range is reported here, where 0 is one too.
  if (blocks < 1 || blocks > ir::kMaxBlocksPerSm) {
    ctx_->error("V0918", ctx_->min_blocks_loc,
                "min_blocks_per_sm asks for 1 to " + std::to_string(ir::kMaxBlocksPerSm) + " blocks, not " +
                    std::to_string(blocks));
    blocks = 0;
  }
  ctx_->min_blocks = blocks;
  return *this;
}
KernelBuilder& KernelBuilder::require(const ExprArg& cond, std::source_location l) {
  SourceLoc loc = here(l);
  if (!cond.expr.defined())
    ctx_->error("V0706", loc, "the condition of require() is an undefined Expr");
  else
    ctx_->requirements.push_back({node(cond.expr), loc});
  return *this;
}
TensorMap KernelBuilder::tensor_map(std::string name, const View& matrix, const ExprArg& rows, const ExprArg& cols,
                                    std::int64_t box_rows, std::int64_t box_cols, std::source_location l) {
  SourceLoc loc = here(l);
  ir::TensorMapNode n;
  n.name = std::move(name);
  n.loc = loc;
  n.box_rows = box_rows;
  n.box_cols = box_cols;
  auto fail = [&](const std::string& why) { ctx_->error("V0916", loc, "tensor map " + n.name + ": " + why); };
  const ir::MemNode* m = BuilderAccess::raw(matrix);
  bool is_param = false;
  for (const auto& p : ctx_->params) is_param = is_param || (m && p.mem.get() == m);
  if (!m || !is_param) {
    fail("its matrix must be a pointer parameter of this kernel");
  } else {
    n.mem = BuilderAccess::mem(matrix);
    if (type_bytes(m->elem) * box_cols != 128)
      fail("a box row must be exactly 128 bytes (the 128-byte swizzle): " + std::to_string(box_cols) + " " +
           type_name(m->elem) + " elements are " + std::to_string(type_bytes(m->elem) * box_cols));
  }
  if (box_rows < 1 || box_rows > 256) fail("box rows must be 1..256, not " + std::to_string(box_rows));
  if (!rows.expr.defined() || !cols.expr.defined()) {
    fail("its rows and columns must be defined expressions");
  } else {
    n.rows = arg_node(rows, ScalarType::I64);
    n.cols = arg_node(cols, ScalarType::I64);
  }
  for (const auto& t : ctx_->tensor_maps)
    if (t.name == n.name) fail("the name is taken by another tensor map");
  for (const auto& p : ctx_->params)
    if (p.name == n.name) fail("the name is taken by a parameter");
  if (ctx_->tensor_maps.size() >= 8) fail("a kernel has at most 8 tensor maps");
  ctx_->tensor_maps.push_back(n);
  return BuilderAccess::tensor_map(static_cast<int>(ctx_->tensor_maps.size()) - 1, ctx_->tensor_maps.back(), ctx_);
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
  k->tensor_maps = ctx_->tensor_maps;
  k->threads = ctx_->threads;
  k->grid_blocks = ctx_->grid_blocks;
  k->grid_multiple = ctx_->grid_multiple;
  k->cluster = ctx_->cluster;
  k->min_blocks = ctx_->min_blocks;
  k->requirements = ctx_->requirements;
  k->budget_declared = ctx_->budget_declared;
  k->shared_budget = k->budget_declared ? ctx_->shared_budget : check::default_shared_budget();
  k->body = ctx_->body;
  k->loc = ctx_->loc;
  k->threads_loc = ctx_->threads_loc.known() ? ctx_->threads_loc : ctx_->loc;
  k->grid_loc = ctx_->grid_loc.known() ? ctx_->grid_loc : ctx_->loc;
  k->budget_loc = ctx_->budget_loc.known() ? ctx_->budget_loc : ctx_->loc;
  k->cluster_loc = ctx_->cluster_loc.known() ? ctx_->cluster_loc : ctx_->loc;
  k->min_blocks_loc = ctx_->min_blocks_loc.known() ? ctx_->min_blocks_loc : ctx_->loc;
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
  return detail::KernelAccess::make(std::move(k), std::move(result.obligations), result.shared_peak);
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
  ctx_->returns = type;
  ctx_->returns_loc = here(l);
  return *this;
}

Expr FunctionBuilder::scalar_param(std::string name, ScalarType type, std::optional<At> a, std::source_location l) {
  SourceLoc loc = here(l);
  auto v = ir::make_var(ctx_->next_id++, name, type, ir::VarNode::Origin::Param, loc);
  ctx_->params.push_back(
      {std::move(name), v, nullptr, false, nullptr, a ? std::optional<Perspective>(a->p) : std::nullopt, loc});
  return BuilderAccess::expr(ir::ref(v, loc));
}

View FunctionBuilder::pointer_param(std::string name, ScalarType elem, MemSpace space, bool is_const,
                                    std::optional<At> a, std::source_location l) {
  SourceLoc loc = here(l);
  auto m = ir::make_mem(ctx_->next_id++, name, elem, space, is_const, 1, ir::MemNode::Origin::Param, loc);
  ctx_->params.push_back(
      {std::move(name), nullptr, m, false, nullptr, a ? std::optional<Perspective>(a->p) : std::nullopt, loc});
  return BuilderAccess::view(m, ctx_);
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
  f->returns_loc = ctx_->returns_loc.known() ? ctx_->returns_loc : ctx_->loc;
  f->hash = ir::hash_function(*f);
  auto result = check::check(*f);
  if (!ctx_->diags.empty() || !result.ok()) throw CheckError(merged(ctx_->diags, std::move(result.errors)));
  return detail::KernelAccess::make(std::move(f));
}

}  // namespace vantage
