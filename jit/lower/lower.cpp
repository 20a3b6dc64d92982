// Vantage lowering: see lower.h.
//
// Each code perspective becomes a position: the thread's offset inside its current unit and, while
// the unit spans blocks, the block's offset. The linear position of a thread in its unit is `thread`
// when the unit lies inside one block, else `block * T + thread`. A group takes the linear position
// modulo the unit (a unit of more than T threads keeps whole blocks: `block % (c / T)`), a split
// branch subtracts its offset and tests its range, and `id(p)` divides the position by p's size.
// Views are resolved as they are met: a partition's index function is lowered where the partition
// is, so the ids in it mean what they meant there, and an access substitutes its indices into it,
// down to the root.
#include "jit/lower/lower.h"
#include <xxhash.h>

#include "jit/lower/body.h"

namespace vantage::lower {
namespace detail {

ExprPtr lit(std::int64_t v, SourceLoc l) { return int_literal(ScalarType::I32, v, l); }

ExprPtr bin(BinOp op, const ExprPtr& a, const ExprPtr& b, SourceLoc l) {
  ScalarType t = is_comparison(op) || op == BinOp::LAnd || op == BinOp::LOr ? ScalarType::Bool : a->type;
  return fold(make<Binary>(t, op, a, b, l));
}

bool is_zero(const ExprPtr& e) {
  auto k = const_int(e);
  return k && *k == 0;
}

std::set<std::int64_t> user_barrier_ids(const StmtPtr& body) {
  struct Scan : IRVisitor {
    std::set<std::int64_t> ids;
    std::set<const FunctionNode*> seen;
    using IRVisitor::walk;
    void walk(const ExprPtr&) override {}
    void visit(const Intrinsic& n) override {
      if (n.op == IntrinsicOp::NamedBarrier && !n.imms.empty()) ids.insert(n.imms[0]);
    }
    void visit(const Call& n) override {
      IRVisitor::visit(n);
      if (n.fn && seen.insert(n.fn.get()).second) walk(n.fn->body);
    }
  } scan;
  scan.walk(body);
  return scan.ids;
}

void add_lengths(Context& c, std::vector<ParamNode>& params, SourceLoc l) {
  std::vector<ParamNode> hidden;
  for (const auto& p : params) {
    if (!p.mem) continue;
    auto v = make_var(c.next_var++, "vt_len_" + p.name, ScalarType::I64, VarNode::Origin::Param, p.loc);
    c.lengths[p.mem.get()] = v;
    ParamNode h;
    h.name = v->name;
    h.var = v;
    h.loc = l;
    hidden.push_back(std::move(h));
  }
  params.insert(params.end(), hidden.begin(), hidden.end());
}

auto BodyLowerer::block(const StmtPtr& s) -> StmtPtr {
  std::vector<StmtPtr> out;
  stmt(s, out);
  SourceLoc l = s ? s->loc : SourceLoc{};
  return make<Seq>(std::move(out), l);
}

auto BodyLowerer::scoped(Pos next, const StmtPtr& body) -> StmtPtr {
  frames_.push_back(std::move(next));
  StmtPtr r = block(body);
  frames_.pop_back();
  return r;
}

void BodyLowerer::stmt(const StmtPtr& s, std::vector<StmtPtr>& out) {
  if (!s) return;
  dispatch(*s, [&](const auto& n) { lower_stmt(n, out); });
}

void BodyLowerer::lower_stmt(const Seq& n, std::vector<StmtPtr>& out) {
  std::size_t facts = prover_.facts();
  for (const auto& c : n.stmts) stmt(c, out);
  prover_.restore_facts(facts);
}

void BodyLowerer::lower_stmt(const Let& n, std::vector<StmtPtr>& out) {
  ExprPtr v = lx(n.value);
  if (!reassigned_.count(n.var.get()) && is_integer(n.var->type)) {
    prover_.bind_range(n.var.get(), value_range(v, prover_.env()));
    // The value stands for the variable in proofs only where it means the same everywhere the
    // variable is in scope: not where it reads a variable assigned later, or memory that may change;
    // and only where it is computed exactly, as the proofs' sums take it (`normal`).
    if (!prover_.reads_changing(v, reassigned_) && prover_.exact(v)) prover_.define(n.var.get(), v);
  }
  out.push_back(make<Let>(n.var, v, std::nullopt, n.loc));
}

void BodyLowerer::lower_stmt(const Assign& n, std::vector<StmtPtr>& out) {
  out.push_back(make<Assign>(n.var, lx(n.value), n.loc));
  prover_.kill_facts({n.var.get()});
}

void BodyLowerer::lower_stmt(const Store& n, std::vector<StmtPtr>& out) {
  std::vector<ExprPtr> idx;
  for (const auto& i : n.indices) idx.push_back(lx(i));
  auto [root, resolved] = resolve(n.mem, std::move(idx), n.loc);
  ExprPtr flat = exact_width(resolved);
  ExprPtr value = lx(n.value);
  auto [bound, site] = check(root, flat, true, n.loc);
  out.push_back(make<Store>(root, std::vector<ExprPtr>{flat}, value, bound, site, n.loc));
}

void BodyLowerer::lower_stmt(const If& n, std::vector<StmtPtr>& out) {
  // Its divisions simplified as the indices under it are, so that its facts read as they do.
  ExprPtr c = prover_.decided(prover_.quotients(lx(n.cond), false));
  std::size_t facts = prover_.facts();
  prover_.add_facts(c);
  StmtPtr t = prover_.within(c, false, [&] { return block(n.then_body); });
  prover_.restore_facts(facts);
  if (is_true(c)) {  // every comparison in it decided
    out.push_back(t);
    return;
  }
  StmtPtr e = n.else_body ? prover_.within(c, true, [&] { return block(n.else_body); }) : nullptr;
  out.push_back(make<If>(c, t, e, n.loc));
}

void BodyLowerer::lower_stmt(const For& n, std::vector<StmtPtr>& out) {
  ExprPtr b = lx(n.begin), e = lx(n.end), st = lx(n.step);
  // What the body assigns changes between rounds: facts on it do not hold inside the loop (the
  // back edge) or after it. The end is read once, so `var < end` holds only if the body leaves
  // the end's variables alone.
  auto assigned = reassigned_vars(n.body);
  prover_.kill_facts(assigned);
  std::size_t facts = prover_.facts();
  auto step = const_int(st);
  if (step && *step > 0 && !prover_.reads_changing(e, assigned))
    prover_.add_facts(make<Binary>(ScalarType::Bool, BinOp::Lt, ref(n.var, n.loc), e, n.loc));
  // The counter's range in the body, for the bounds of vector accesses.
  Range rb = value_range(b, prover_.env()), re = value_range(e, prover_.env());
  if (step == 1 && rb.lo >= 0 && !prover_.reads_changing(e, assigned)) prover_.add_rounds_fact(n.var, e, n.loc);
  if (step && *step > 0 && !reassigned_.count(n.var.get()) && is_integer(n.var->type))
    prover_.bind_range(n.var.get(), Range{rb.lo, std::max(rb.lo, re.hi - 1)});
  StmtPtr body = block(n.body);
  prover_.restore_facts(facts);
  if (auto v = vector_copy(n, b, e, st, body)) {
    out.push_back(v);
    return;
  }
  out.push_back(make<For>(n.var, b, e, st, body, n.loc));
}

void BodyLowerer::lower_stmt(const While& n, std::vector<StmtPtr>& out) {
  prover_.kill_facts(reassigned_vars(n.body));  // as for a for loop
  ExprPtr c = lx(n.cond);
  out.push_back(make<While>(c, block(n.body), n.loc));
}

void BodyLowerer::lower_stmt(const Group& n, std::vector<StmtPtr>& out) {
  const Pos& cur = frames_.back();
  Pos next = cur;
  next.code = n.p;
  std::int64_t c = n.p.count.coeff;
  SourceLoc l = n.loc;
  if (n.p.level == Level::Block) {
    if (!cur.thread_below_t) {
      ExprPtr lin = linear(cur, l);
      next.thread = bin(BinOp::Mod, lin, lit(T(), l), l);
      next.block = bin(BinOp::Div, lin, lit(T(), l), l);
      next.thread_below_t = true;
    }
    next.block = c == 1 ? lit(0, l) : bin(BinOp::Mod, next.block, lit(c, l), l);
    next.in_block = c == 1 || cur.in_block;
  } else if (n.p.level == Level::Thread) {
    std::int64_t u = units(n.p);
    bool whole = u == units(cur.code) && cur.code.level != Level::Grid;
    if (!whole) {
      if (u <= T()) {
        // T is a multiple of u, so the position in the block modulo u is the position in the unit.
        next.thread = bin(BinOp::Mod, cur.thread_below_t ? cur.thread : linear(cur, l), lit(u, l), l);
        next.block = lit(0, l);
        next.in_block = true;
        next.thread_below_t = true;
      } else if (cur.thread_below_t && !cur.in_block) {
        // A unit of whole blocks: the block's offset in it, and the thread in its block.
        next.block = bin(BinOp::Mod, cur.block, lit(u / T(), l), l);
        next.in_block = false;
      } else {
        next.thread = bin(BinOp::Mod, linear(cur, l), lit(u, l), l);
        next.block = lit(0, l);
        next.in_block = false;
        next.thread_below_t = false;
      }
    }
    std::int64_t per_block = cur.in_block ? units(cur.code) : T();
    next.replicas = cur.replicas * std::max<std::int64_t>(1, per_block / std::max<std::int64_t>(u, 1));
  }
  out.push_back(scoped(next, n.body));
}

void BodyLowerer::lower_stmt(const Split& n, std::vector<StmtPtr>& out) {
  const Pos cur = frames_.back();
  std::int64_t offset = 0;
  std::vector<std::pair<ExprPtr, StmtPtr>> branches;
  for (std::size_t i = 0; i < n.bodies.size(); ++i) {
    std::int64_t count = n.counts[i];
    SourceLoc l = i < n.branch_locs.size() ? n.branch_locs[i] : n.loc;
    Pos next = cur;
    next.code = {n.level, count};
    ExprPtr pos;
    if (n.level == Level::Thread) {
      pos = linear(cur, l);
      next.thread = offset == 0 ? pos : bin(BinOp::Sub, pos, lit(offset, l), l);
      next.block = lit(0, l);
      next.in_block = cur.in_block || count <= T();
      next.thread_below_t = count <= T() || (cur.in_block && cur.thread_below_t);
    } else {
      pos = cur.block;
      next.block = offset == 0 ? pos : bin(BinOp::Sub, pos, lit(offset, l), l);
      next.in_block = count == 1;
    }
    ExprPtr cond = bin(BinOp::Lt, pos, lit(offset + count, l), l);
    if (offset != 0) cond = bin(BinOp::LAnd, bin(BinOp::Ge, pos, lit(offset, l), l), cond, l);
    std::size_t facts = prover_.facts();
    prover_.add_facts(cond);  // the branch's positions: facts for the bounds proofs inside it
    branches.emplace_back(cond, prover_.within(cond, false, [&] { return scoped(next, n.bodies[i]); }));
    prover_.restore_facts(facts);
    offset += count;
  }
  StmtPtr chain;
  for (auto it = branches.rbegin(); it != branches.rend(); ++it) chain = make<If>(it->first, it->second, chain, n.loc);
  if (chain) out.push_back(chain);
}

void BodyLowerer::lower_stmt(const Destruct& n, std::vector<StmtPtr>& out) {
  Pos next = frames_.back();
  next.code =
      next.code.level == Level::Block ? Perspective{Level::Thread, Size::T()} : Perspective{Level::Block, Size::B()};
  out.push_back(scoped(next, n.body));
}

void BodyLowerer::lower_stmt(const Partition& n, std::vector<StmtPtr>& out) {
  views_[n.dst.get()] = ViewInfo{n.src, true, n.index_vars, lx(n.index)};
  stmt(n.body, out);
}

void BodyLowerer::view(const MemPtr& dst, const MemPtr& src, const StmtPtr& body, std::vector<StmtPtr>& out) {
  views_[dst.get()] = ViewInfo{src, false, {}, nullptr};
  stmt(body, out);
}

void BodyLowerer::lower_stmt(const SharedAlloc& n, std::vector<StmtPtr>& out) {
  c_.out.shared_offsets[n.mem.get()] = layout_.arrays.at(n.mem.get()).offset;
  if (auto k = const_int(n.count)) counts_[n.mem.get()] = *k;
  aligns_[n.mem.get()] = n.align;
  out.push_back(make<SharedAlloc>(n.mem, n.count, n.align, n.loc));
}

void BodyLowerer::lower_stmt(const LocalAlloc& n, std::vector<StmtPtr>& out) {
  counts_[n.mem.get()] = n.count;
  out.push_back(make<LocalAlloc>(n.mem, n.count, std::nullopt, n.loc));
}

void BodyLowerer::lower_stmt(const Unsafe& n, std::vector<StmtPtr>& out) {
  std::vector<NamedExpr> in;
  for (const auto& [name, e] : n.inputs) in.emplace_back(name, lx(e));
  out.push_back(make<Unsafe>(n.needs, n.cuda, std::move(in), n.outputs, n.loc));
  std::unordered_set<const VarNode*> written;
  for (const auto& [name, v] : n.outputs) written.insert(v.get());
  prover_.kill_facts(written);
}

void BodyLowerer::lower_stmt(const ir::Barrier& n, std::vector<StmtPtr>& out) {
  if (n.how != BarrierKind::Planned) throw InternalError("lower: the input is already lowered");
  std::int64_t count = units(n.over);
  if (n.over.level == Level::Grid || count <= 1) return;
  BarrierKind how;
  std::int64_t base = 0;
  if (count == 32) {
    how = BarrierKind::Warp;
  } else if (count == T()) {
    how = BarrierKind::Block;
  } else if (count < 32 && 32 % count == 0) {
    how = BarrierKind::WarpPart;
  } else if (auto b = count % 32 == 0 && count < T() ? c_.ids->base(count) : std::nullopt) {
    how = BarrierKind::Named;
    base = *b;
  } else {
    c_.out.problems.push_back(
        {"V1002",
         "a barrier over " + std::to_string(count) +
             " threads is needed here, but only whole blocks, warps (or their power-of-two parts) and warp-aligned "
             "groups with a free barrier id (16 per block, the user's own reserved) can synchronize",
         n.loc,
         {}});
    return;
  }
  out.push_back(make<ir::Barrier>(n.over, how, count, base, n.async_wait, n.proxy_fence, n.loc));
  ++c_.out.barriers;
}

void BodyLowerer::lower_stmt(const VectorCopy&, std::vector<StmtPtr>&) {
  throw InternalError("lower: the input is already lowered");
}

auto BodyLowerer::vector_copy(const For& n, const ExprPtr& b, const ExprPtr& e, const ExprPtr& st, const StmtPtr& body)
    -> StmtPtr {
  auto kb = const_int(b), ke = const_int(e), ks = const_int(st);
  if (!kb || !ke || !ks || *kb != 0 || *ks != 1) return nullptr;
  std::int64_t count = *ke;
  const auto* seq = as<Seq>(*body);
  if (!seq || seq->stmts.size() != 1) return nullptr;
  const auto* store = as<Store>(*seq->stmts[0]);
  const auto* load = store && store->value ? as<Load>(*store->value) : nullptr;
  if (!store || !load) return nullptr;
  ScalarType t = store->mem->elem;
  if (t != load->mem->elem) return nullptr;
  std::int64_t bytes = count * type_bytes(t);
  // 4, 8 or 16 bytes in at least two elements (a word of two f16, a uint4 of sixteen u8).
  if ((bytes != 4 && bytes != 8 && bytes != 16) || count < 2) return nullptr;
  // Between memory and a thread's registers (a local array, declared aligned to the vector), or
  // between two memories; not between two local arrays (register moves).
  if (store->mem->space == MemSpace::Local && load->mem->space == MemSpace::Local) return nullptr;
  if (store->mem.get() == load->mem.get()) return nullptr;
  ExprPtr iv = ref(n.var, n.loc);
  // The index as an exact sum (`products`: exact_width's widening casts looked through).
  // Element e of the vector is the loop's element e only if every other term is the same in each
  // round: `(e / 2) * 4 + e` is aligned and has e once, but copies 0 1 6 7, and a term that loads
  // memory the loop may store to can change between rounds.
  const std::unordered_set<const VarNode*> counter{n.var.get()};
  // Lets are put in (`normal`): `x[first + v]` with `let first = blk * 2048 + t * 8` is aligned.
  // Whether round e copies element e of the vector (the counter once, with step 1, and no other term
  // that changes between rounds), and then whether the vector's first element is a multiple of count.
  enum class Shape { NotInOrder, Misaligned, Aligned };
  auto shape_of = [&](const ExprPtr& idx) {
    Affine a = prover_.products(prover_.normal(idx));
    bool has_var = false, aligned = a.constant % count == 0;
    for (const auto& [atom, k] : a.terms) {
      if (equal(atom, iv)) {
        if (k != 1) return Shape::NotInOrder;
        has_var = true;
      } else if (prover_.reads_changing(atom, counter)) {
        return Shape::NotInOrder;
      } else if (k % count != 0) {
        aligned = false;
      }
    }
    return !has_var ? Shape::NotInOrder : aligned ? Shape::Aligned : Shape::Misaligned;
  };
  const ExprPtr& di = store->indices[0];
  const ExprPtr& si = load->indices[0];
  const Shape ds = shape_of(di), ss = shape_of(si);
  if (ds == Shape::NotInOrder || ss == Shape::NotInOrder) return nullptr;
  // A copy in order of a vector's size kept as a loop: the report says why at its line.
  auto kept = [&](const std::string& why) -> StmtPtr {
    const std::string what = "a copy of " + std::to_string(count) + " " + type_name(t) + " (" + std::to_string(bytes) +
                             " bytes) kept element by element: " + why;
    c_.out.scalar_copies[store] = what;
    c_.out.scalar_copies[load] = what;
    return nullptr;
  };
  if (ds == Shape::Misaligned || ss == Shape::Misaligned)
    return kept("the first element of '" + (ds == Shape::Misaligned ? store->mem : load->mem)->name +
                "' it copies is not proven a multiple of " + std::to_string(count));
  VarMap zero{{n.var.get(), int_literal(n.var->type, 0, n.loc)}};
  ExprPtr d0 = fold(substitute(di, zero)), s0 = fold(substitute(si, zero));
  // The scalar loop stays where the whole vector is not proven inside both buffers.
  const bool d_in = proven_in_bounds(store->mem, d0, count, n.loc),
             s_in = proven_in_bounds(load->mem, s0, count, n.loc);
  if (!d_in || !s_in)
    return kept("not proven inside '" + (!s_in ? load->mem : store->mem)->name +
                "' (a bound on its index the prover knows, such as a guard `first + " + std::to_string(count) +
                " <= n`, makes it one access)");
  for (const MemNode* r : {store->mem.get(), load->mem.get()}) {
    auto p = c_.param_index.find(r);
    if (p != c_.param_index.end())
      c_.out.param_alignment[p->second] = std::max(c_.out.param_alignment[p->second], static_cast<int>(bytes));
  }
  return make<VectorCopy>(store->mem, d0, load->mem, s0, count, store->loc, make<For>(n.var, b, e, st, body, n.loc));
}

void BodyLowerer::lower_stmt(const Call& n, std::vector<StmtPtr>& out) {
  const FunctionNode& f = *n.fn;
  FunctionPtr callee = lower_function(c_, f);
  const Pos& p = frames_.back();
  SourceLoc l = n.loc;
  std::vector<CallArgNode> args;
  std::vector<ExprPtr> lengths;  // the callee's hidden length parameters, in order
  for (const auto& a : n.args) {
    if (!a.mem) {
      args.push_back({lx(a.value), nullptr});
      continue;
    }
    if (!unit_stride(a.mem.get()))
      c_.out.problems.push_back({"V1003",
                                 "memory '" + a.mem->name + "' is passed to '" + f.name +
                                     "' as a pointer, but its partition index function is not base + i",
                                 l,
                                 {}});
    auto [root, flat] = resolve(a.mem, {lit(0, l), lit(0, l), lit(0, l)}, l);
    args.push_back({flat, root});
    ExprPtr offset = flat->type == ScalarType::I64 ? flat : fold(make<Cast>(ScalarType::I64, flat, l));
    lengths.push_back(bin(BinOp::Sub, bound_of(root, l), offset, l));
  }
  for (auto& len : lengths) args.push_back({std::move(len), nullptr});
  std::int64_t u = units(f.signature);
  ExprPtr tid = p.thread;
  if (f.signature.level == Level::Thread) {
    ExprPtr lin = p.thread_below_t ? p.thread : linear(p, l);
    tid = u == units(p.code) ? lin : bin(BinOp::Mod, lin, lit(u, l), l);
  }
  auto slot = layout_.calls.find(&n);
  args.push_back({tid, nullptr});
  args.push_back({p.block, nullptr});
  args.push_back({int_literal(ScalarType::I64, slot != layout_.calls.end() ? slot->second.offset : -1, l), nullptr});
  out.push_back(make<Call>(callee, std::move(args), n.result, l));
}

FunctionPtr lower_function(Context& c, const FunctionNode& f) {
  if (auto it = c.functions.find(&f); it != c.functions.end()) return it->second;
  SourceLoc l = f.loc;
  bool within = f.signature.level == Level::Thread || f.signature == block(1);
  // A function does not know how many copies of its signature run at once: as many as a block
  // holds, at most.
  std::int64_t per = f.signature.count.coeff * (f.signature.count.threads ? c.opt.threads : 1) *
                     (f.signature.level == Level::Block ? c.opt.threads : 1);
  std::int64_t copies = f.signature.level == Level::Thread
                            ? std::max<std::int64_t>(1, c.opt.threads / std::max<std::int64_t>(per, 1))
                            : 1;
  Pos top{make<Builtin>(ScalarType::I32, BuiltinKind::BlockInGrid, l),
          make<Builtin>(ScalarType::I32, BuiltinKind::ThreadInBlock, l),
          within,
          true,
          f.signature,
          copies};
  auto fn = std::make_shared<FunctionNode>(f);
  add_lengths(c, fn->params, l);
  BodyLowerer b(c, f.body, top, f.signature);
  fn->body = b.run();
  for (auto& p : fn->params) p.at.reset();
  fn->hash = hash_function(*fn);
  c.functions[&f] = fn;
  c.out.functions.push_back(fn);
  return fn;
}

}  // namespace detail

using namespace detail;

Lowered lower(const KernelNode& k, const Options& options) {
  Lowered out;
  out.options = options;
  Context c{options, out, std::nullopt, {}, {}, {}};
  c.ids.emplace(options.threads, user_barrier_ids(k.body), target::info(options.arch).named_barriers);
  for (std::size_t i = 0; i < k.params.size(); ++i)
    if (k.params[i].mem) {
      c.param_index[k.params[i].mem.get()] = static_cast<int>(i);
      if (k.params[i].extent) c.extents[k.params[i].mem.get()] = k.params[i].extent;
    }
  SourceLoc l = k.loc;
  Pos top{make<Builtin>(ScalarType::I32, BuiltinKind::BlockInGrid, l),
          make<Builtin>(ScalarType::I32, BuiltinKind::ThreadInBlock, l),
          false,
          true,
          grid(1),
          1};
  out.kernel = k;
  out.user_params = k.params.size();
  add_lengths(c, out.kernel.params, l);
  BodyLowerer b(c, k.body, top, grid(1));
  for (const auto& r : k.requirements) b.assume(r.cond);
  out.kernel.body = b.run();
  out.shared_bytes = b.peak();
  out.shared_align = b.shared_align();
  out.kernel.hash = hash_kernel(out.kernel);
  return out;
}

std::string print(const Lowered& lowered) {
  std::string s = "// lowered for " + std::to_string(lowered.options.threads) + " threads per block";
  if (lowered.options.blocks) s += ", " + std::to_string(*lowered.options.blocks) + " blocks";
  s += "; shared memory " + std::to_string(lowered.shared_bytes) + " bytes\n";
  return s + ir::print(lowered.kernel);  // the functions it calls first, once each
}

std::uint64_t check_tag(const std::string& entry) { return XXH3_64bits(entry.data(), entry.size()) | 1u; }

}  // namespace vantage::lower
