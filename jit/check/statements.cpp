// Vantage perspective checker: expressions, statements, groups, splits, partitions, claims, allocations and calls. See
// checker.h.
#include "jit/check/checker.h"

namespace vantage::check::detail {

auto ExprChecker::binary_types(const Binary& n, SourceLoc here) -> void {
  ScalarType a = n.a->type, b = n.b->type;
  if (!operands_agree(n.op, a, b)) {
    c_.error("V0701", here,
             std::string("operands of ") + name_of(n.op) + " have different types: " + type_name(a) + " and " +
                 type_name(b) + (is_fp8(a) || is_fp8(b) ? fp8_hint(is_fp8(a) ? a : b) : " (use cast<T>())"));
    return;
  }
  if (!defined_for(n.op, a))
    c_.error("V0702", here,
             std::string("operator ") + name_of(n.op) + " is not defined for " + type_name(a) + fp8_hint(a));
}

auto Checker::check(const Seq& n) -> void {
  c_.push_scope();
  layout_.open();
  for (const auto& c : n.stmts) stmt(c);
  layout_.close();
  c_.pop_scope();
}

auto Checker::check(const Let& n) -> void {
  Perspective v = x_.check_expr(n.value, n.loc);
  if (n.value && n.var && n.value->type != n.var->type)
    c_.error("V0705", n.loc,
             "variable " + q(n.var->name) + " is " + type_name(n.var->type) + " but the value is " +
                 type_name(n.value->type));
  Perspective p = c_.meet(c_.code(), v);
  if (n.at && c_.valid(*n.at, n.loc, "let")) {
    p = *n.at;
    if (c_.narrower_eq(p, c_.code()) == Truth::No) {
      auto& d = c_.error("V0206", n.loc,
                         "variable " + q(n.var->name) + " cannot live at " + p.str() +
                             ", wider than the code's perspective " + c_.code().str());
      c_.note_code(d);
    }
    c_.rule(c_.narrower_eq(p, v), Obligation::Kind::Divides, p.count, v.count, "V0201", n.loc, [&] {
      return std::string("the value of " + q(n.var->name) + " varies with " + v.str() +
                         ", faster than its perspective " + p.str());
    });
  }
  c_.declare(n.var, p);
}

auto Checker::write_down(const std::string& name, Perspective p, SourceLoc decl, Perspective value, SourceLoc loc)
    -> void {
  if (c_.narrower_eq(p, c_.code()) == Truth::No) {
    auto& d = c_.error("V0202", loc,
                       q(name) + " lives at " + p.str() + " and cannot be written from code at " + c_.code().str() +
                           ": to give each of those its own, declare it there or with at(" + c_.code().str() +
                           ") (let(" + q(name) + ", value, at(" + c_.code().str() + ")))");
    c_.note(d, decl, "declared here");
    c_.note_code(d);
  }
  if (c_.narrower_eq(p, value) == Truth::No) {
    auto& d =
        c_.error("V0201", loc,
                 "a value that varies with " + value.str() + " cannot be written into " + q(name) +
                     ", which lives at " + p.str() + ": to keep one per " + value.str() + ", declare it with at(" +
                     value.str() + ") (let(" + q(name) + ", value, at(" + value.str() + ")))");
    c_.note(d, decl, "declared here");
  } else {
    c_.rule(c_.narrower_eq(p, value), Obligation::Kind::Divides, p.count, value.count, "V0201", loc,
            [&] { return std::string("value written into " + q(name) + " must not vary faster than " + p.str()); });
  }
}

auto Checker::check(const Assign& n) -> void {
  Perspective v = x_.check_expr(n.value, n.loc);
  if (!n.var) return;
  auto it = c_.vars.find(n.var.get());
  if (it == c_.vars.end()) {
    auto& d = c_.error("V0207", n.loc, "variable " + q(n.var->name) + " is not in scope here");
    c_.note(d, n.var->loc, "declared here");
    return;
  }
  if (it->second.loop) c_.error("V0208", n.loc, "loop variable " + q(n.var->name) + " cannot be assigned");
  if (n.value && n.value->type != n.var->type)
    c_.error("V0705", n.loc,
             "variable " + q(n.var->name) + " is " + type_name(n.var->type) + " but the value is " +
                 type_name(n.value->type));
  write_down(n.var->name, it->second.persp, it->second.decl, v, n.loc);
}

auto Checker::check(const Store& n) -> void {
  Perspective v = x_.check_expr(n.value, n.loc);
  MemInfo* info = c_.use_mem(n.mem, n.loc);
  Perspective idx = kTop;
  x_.check_indices(*n.mem, n.indices, n.loc, idx);
  if (n.value && n.value->type != n.mem->elem)
    c_.error("V0705", n.loc,
             "cannot store " + std::string(type_name(n.value->type)) + " into " + q(n.mem->name) + " of " +
                 type_name(n.mem->elem));
  if (!info) return;
  if (n.mem->is_const) {
    auto& d = c_.error("V0310", n.loc, "cannot write to " + q(n.mem->name) + ": it is const");
    c_.note(d, n.mem->loc, "declared here");
  }
  if (info->async)
    c_.error("V0315", n.loc, "async memory " + q(n.mem->name) + " can only be written by async-copy intrinsics");
  if (n.mem->space == MemSpace::Local) {
    write_down(n.mem->name, info->persp, n.mem->loc, c_.meet(v, idx), n.loc);
    return;
  }
  if (!c_.one_thread(info->persp)) {
    auto& d = c_.error("V0301", n.loc,
                       "cannot write to " + q(n.mem->name) + ", which lives at " + info->persp.str() +
                           "; narrow it to thread(1) with partition or claim first");
    c_.note(d, info->narrowed_at, "its perspective " + info->persp.str() + " comes from here");
  }
}

auto Checker::check(const If& n) -> void {
  Perspective v = x_.check_expr(n.cond, n.loc);
  if (n.cond && n.cond->type != ScalarType::Bool)
    c_.error("V0703", n.loc, std::string("if needs a bool condition, not ") + type_name(n.cond->type));
  x_.uniform(v, "V0203", n.loc, "the branch condition");
  BlockDivergence by_block(c_, v, n.loc);
  body(n.then_body);
  if (n.else_body) body(n.else_body);
}

auto Checker::check(const For& n) -> void {
  Perspective v =
      c_.meet(x_.check_expr(n.begin, n.loc), c_.meet(x_.check_expr(n.end, n.loc), x_.check_expr(n.step, n.loc)));
  for (const auto& e : {n.begin, n.end, n.step}) {
    if (e && !is_index_integer(e->type)) c_.error("V0704", n.loc, not_index_integer("a loop bound", e->type));
    if (e && n.var && e->type != n.var->type && is_integer(e->type))
      c_.error(
          "V0701", n.loc,
          std::string("loop bounds have different types: ") + type_name(e->type) + " and " + type_name(n.var->type));
  }
  if (auto step = const_int(n.step); step && *step == 0) c_.error("V0209", n.loc, "loop step is zero");
  x_.uniform(v, "V0204", n.loc, "the loop bound");
  BlockDivergence by_block(c_, v, n.loc);
  c_.push_scope();
  c_.declare(n.var, c_.code(), true);
  loops_.push_back({c_.frames.size(), c_.async_depth});
  body(n.body);
  loops_.pop_back();
  c_.pop_scope();
}

auto Checker::check(const While& n) -> void {
  Perspective v = x_.check_expr(n.cond, n.loc);
  if (n.cond && n.cond->type != ScalarType::Bool)
    c_.error("V0703", n.loc, std::string("while needs a bool condition, not ") + type_name(n.cond->type));
  x_.uniform(v, "V0205", n.loc, "the loop condition");
  BlockDivergence by_block(c_, v, n.loc);
  loops_.push_back({c_.frames.size(), c_.async_depth});
  body(n.body);
  loops_.pop_back();
}

auto Checker::check(const Jump& n) -> void {
  const char* what = n.is_break ? "break" : "continue";
  if (loops_.empty()) {
    c_.error("V0211", n.loc, std::string(what) + " outside a loop");
    return;
  }
  const LoopFrame& lp = loops_.back();
  Perspective c = c_.code();
  if (!(c.level == Level::Thread && c.count == Size(1))) {
    auto& d = c_.error("V0212", n.loc,
                       std::string(what) + " in code at " + c.str() +
                           ": only thread(1) code may leave a loop early (wider code could skip a barrier or a "
                           "collective some of its threads still reach); use a while_ whose condition includes a flag");
    c_.note_code(d);
  } else if (c_.frames.size() != lp.frames || c_.async_depth != lp.async_depth) {
    c_.error("V0212", n.loc,
             std::string(what) +
                 " would leave a group, split or async scope opened inside its loop; put the loop inside it");
  }
}

auto Checker::check(const Group& n) -> void {
  if (!c_.valid(n.p, n.loc, "group")) return body(n.body);
  if (n.p.level > c_.code().level) {
    auto& d = c_.error(
        "V0101", n.loc,
        "group(" + n.p.str() + ") cannot widen the code's perspective " + c_.code().str() + "; group only narrows");
    c_.note_code(d);
  } else {
    c_.rule(c_.fits_in(n.p, c_.code()), Obligation::Kind::Divides, c_.units(n.p), c_.units(c_.code()), "V0102", n.loc,
            [&] {
              return std::string("group(" + n.p.str() + "): " + c_.code().str() +
                                 " does not divide evenly into aligned " + n.p.str() + " units");
            });
  }
  c_.frames.push_back({n.p, n.loc, "group"});
  body(n.body);
  c_.frames.pop_back();
}

auto Checker::check(const Split& n) -> void {
  auto avail = c_.available(n.level);
  if (!avail) {
    auto& d = c_.error("V0105", n.loc,
                       std::string("split(") + level_name(n.level) + ") needs code at " + level_name(n.level) +
                           " level or wider; the code is at " + c_.code().str());
    c_.note_code(d);
  }
  std::int64_t offset = 0;
  bool counts_ok = true;
  for (std::size_t i = 0; i < n.counts.size(); ++i) {
    std::int64_t c = n.counts[i];
    SourceLoc bl = i < n.branch_locs.size() && n.branch_locs[i].known() ? n.branch_locs[i] : n.loc;
    if (c < 1) {
      c_.error("V0108", bl, "a split branch needs at least one unit, not " + std::to_string(c));
      counts_ok = false;
      continue;
    }
    if (avail) {
      std::string unit = std::string(level_name(n.level)) + "s";
      if (offset % c != 0) {
        auto& d = c_.error("V0104", bl,
                           "split branch of " + std::to_string(c) + " " + unit + " starts at " + unit + " " +
                               std::to_string(offset) + ", which is not aligned to " + std::to_string(c));
        c_.note_code(d);
      } else {
        c_.rule(c_.divides(c, *avail), Obligation::Kind::Divides, c, *avail, "V0104", bl, [&] {
          return std::string("split branch of " + std::to_string(c) + " " + unit +
                             " is not aligned: " + c_.code().str() + " has " + avail->str() + " " + unit +
                             ", not a multiple of " + std::to_string(c));
        });
      }
    }
    offset += c;
  }
  if (avail && counts_ok) {
    std::string unit = std::string(level_name(n.level)) + "s";
    c_.rule(c_.less_equal(offset, *avail), Obligation::Kind::LessEqual, offset, *avail, "V0103", n.loc, [&] {
      return std::string("split asks for " + std::to_string(offset) + " " + unit + " but " + c_.code().str() +
                         " has only " + avail->str());
    });
  }
  for (std::size_t i = 0; i < n.bodies.size(); ++i) {
    std::int64_t c = i < n.counts.size() ? std::max<std::int64_t>(n.counts[i], 1) : 1;
    SourceLoc bl = i < n.branch_locs.size() && n.branch_locs[i].known() ? n.branch_locs[i] : n.loc;
    c_.frames.push_back({Perspective{n.level, c}, bl, "split branch", next_branch_++});
    BlockDivergence by_block(c_, grid(1), bl, n.level == Level::Block);  // branches of blocks
    body(n.bodies[i]);
    c_.frames.pop_back();
  }
}

auto Checker::check(const Destruct& n) -> void {
  Perspective c = c_.code();
  Perspective down = thread(1);
  if (c.count == Size(1) && c.level == Level::Block) {
    down = {Level::Thread, Size::T()};
  } else if (c.count == Size(1) && c.level == Level::Grid) {
    down = {Level::Block, Size::B()};
  } else {
    auto& d = c_.error("V0106", n.loc, "destruct needs the code at exactly block(1) or grid(1), not " + c.str());
    c_.note_code(d);
    down = c;
  }
  c_.frames.push_back({down, n.loc, "destruct"});
  body(n.body);
  c_.frames.pop_back();
}

auto Checker::narrow_source(const MemPtr& src, SourceLoc loc, const char* what) -> MemInfo* {
  MemInfo* info = c_.use_mem(src, loc);
  if (!info) return nullptr;
  if (src->space == MemSpace::Local) {
    c_.error("V0316", loc, std::string("thread-local array ") + q(src->name) + " cannot be narrowed by " + what);
    return nullptr;
  }
  Truth same = c_.same_persp(info->persp, c_.code());
  if (same == Truth::No) {
    const bool wider = c_.fits_in(c_.code(), info->persp) == Truth::Yes;
    auto& d =
        c_.error("V0303", loc,
                 std::string(what) + " of " + q(src->name) + " needs the code at " + info->persp.str() + ", where " +
                     q(src->name) + " lives; the code is at " + c_.code().str() +
                     (wider ? ", so every " + c_.code().str() + " would write all of it: give each " + c_.code().str() +
                                  " its share first (partition, lib::for_each_block), or do "
                                  "this at " +
                                  info->persp.str()
                            : std::string()));
    c_.note(d, info->narrowed_at, q(src->name) + " got its perspective here");
    c_.note_code(d);
  } else {
    c_.rule(same, Obligation::Kind::Equal, c_.units(info->persp), c_.units(c_.code()), "V0303", loc, [&] {
      return std::string(std::string(what) + " of " + q(src->name) + " needs the code at its perspective");
    });
  }
  return info;
}

auto Checker::check(const Partition& n) -> void {
  const std::string what = n.via.empty() ? std::string("partition") : n.via + " (a partition)";
  MemInfo* src = narrow_source(n.src, n.loc, what.c_str());
  bool p_ok = c_.valid(n.p, n.loc, "partition");
  if (src && p_ok) {
    if (c_.fits_in(n.p, src->persp) == Truth::No) {
      auto& d = c_.error("V0304", n.loc,
                         "partition of " + q(n.src->name) + " at " + src->persp.str() + " into " + n.p.str() +
                             ": the target must be narrower and divide it evenly");
      c_.note(d, src->narrowed_at, q(n.src->name) + " got its perspective here");
    } else {
      c_.rule(c_.fits_in(n.p, src->persp), Obligation::Kind::Divides, c_.units(n.p), c_.units(src->persp), "V0304",
              n.loc, [&] {
                return std::string("partition of " + q(n.src->name) + " into " + n.p.str() + " needs " +
                                   src->persp.str() + " to divide evenly");
              });
    }
  }
  c_.push_scope();
  for (const auto& v : n.index_vars) c_.declare(v, kTop);
  Perspective v = x_.check_expr(n.index, n.loc);
  if (n.index && !is_index_integer(n.index->type))
    c_.error("V0704", n.loc, not_index_integer("an index function's result", n.index->type));
  c_.pop_scope();
  Perspective target = p_ok ? n.p : thread(1);
  if (c_.narrower_eq(target, v) == Truth::No) {
    c_.error("V0305", c_.at(n.index, n.loc),
             "index function varies with " + v.str() + ", faster than the partition's " + target.str() +
                 "; each share needs one offset");
  }
  narrowed_body(src, n.dst, target, n.loc, "partition", n.body, [](MemInfo&) {});
}

auto Checker::check(const Claim& n) -> void {
  const std::string what = n.via.empty() ? std::string("claim") : n.via + " (a claim)";
  MemInfo* src = narrow_source(n.src, n.loc, what.c_str());
  bool p_ok = c_.valid(n.p, n.loc, "claim");
  if (src && p_ok && c_.fits_in(n.p, src->persp) == Truth::No) {
    auto& d = c_.error("V0308", n.loc,
                       "claim of " + q(n.src->name) + " at " + n.p.str() + " is not narrower than " + src->persp.str());
    c_.note(d, src->narrowed_at, q(n.src->name) + " got its perspective here");
  }
  Perspective target = p_ok ? n.p : thread(1);
  std::size_t depth = c_.frames.size();
  narrowed_body(src, n.dst, target, n.loc, "claim", n.body, [&](MemInfo& d) {
    d.claimed = true;
    d.claim_p = target;
    d.claim_depth = depth;
  });
}

auto Checker::check(const Lower& n) -> void {
  MemInfo* src = narrow_source(n.src, n.loc, "lower");
  Perspective down = thread(1);
  if (src) {
    if (src->persp == block(1) && c_.code().level == Level::Block) {
      down = {Level::Thread, Size::T()};
    } else if (src->persp == grid(1) && c_.code().level == Level::Grid) {
      down = {Level::Block, Size::B()};
    } else {
      auto& d = c_.error("V0309", n.loc,
                         "lower needs " + q(n.src->name) + " at exactly block(1) or grid(1), not " + src->persp.str());
      c_.note(d, src->narrowed_at, q(n.src->name) + " got its perspective here");
    }
  }
  narrowed_body(src, n.dst, down, n.loc, "lower", n.body, [](MemInfo&) {});
}

auto Checker::check(const Async& n) -> void {
  MemInfo* src = narrow_source(n.src, n.loc, "async");
  if (n.src && n.src->space != MemSpace::Shared)
    c_.error("V0317", n.loc,
             "async copies target shared memory; " + q(n.src->name) + " is " + space_name(n.src->space));
  ++c_.async_depth;
  narrowed_body(src, n.dst, src ? src->persp : c_.code(), n.loc, "async", n.body, [](MemInfo& d) { d.async = true; });
  --c_.async_depth;
}

auto Checker::check(const SharedAlloc& n) -> void {
  bool at_block = c_.code().level == Level::Block && c_.code().count == Size(1);
  if (!at_block) {
    auto& d = c_.error(
        "V0401", n.loc,
        "shared memory " + q(n.mem->name) + " can only be allocated at block(1); the code is at " + c_.code().str());
    c_.note_code(d);
  }
  x_.check_expr(n.count, n.loc);
  const SharedSlot& slot = layout_.allocate(n);
  auto count = n.count && is_integer(n.count->type) ? eval_const(n.count) : std::nullopt;
  if (!count) {
    c_.error("V0402", n.loc, "shared memory " + q(n.mem->name) + " needs a static size (an integer constant)");
  } else if (!count->exact) {
    c_.error("V0402", n.loc,
             "the size of shared memory " + q(n.mem->name) + " overflows " + type_name(n.count->type) +
                 " (or divides by zero) while it is computed");
  } else if (count->value < 1) {
    c_.error("V0402", n.loc,
             "shared memory " + q(n.mem->name) + " needs a positive size, not " + std::to_string(count->value));
  } else if (!slot.size_known) {
    c_.error("V0402", n.loc,
             "shared memory " + q(n.mem->name) + " of " + std::to_string(count->value) + " " + type_name(n.mem->elem) +
                 " elements is more bytes than 64 bits count");
  } else if (slot.bytes > target::max_shared_bytes()) {
    c_.error("V0404", n.loc,
             "shared memory " + q(n.mem->name) + " (" + std::to_string(slot.bytes) +
                 " bytes) exceeds the device limit of " + std::to_string(target::max_shared_bytes()) + " bytes");
  } else if (slot.end + layout_.layout().pad() > budget_) {
    const std::int64_t pad = layout_.layout().pad();
    auto& d = c_.error("V0403", n.loc,
                       "shared memory reaches " + std::to_string(slot.end + pad) + " bytes with " + q(n.mem->name) +
                           " (" + std::to_string(slot.bytes) + " bytes at offset " + std::to_string(slot.offset) +
                           ", arrays start on 16-byte boundaries" +
                           (pad ? ", and " + std::to_string(pad) + " bytes are kept to align the first" : "") +
                           "), over the budget of " + std::to_string(budget_) + " bytes");
    c_.note(d, budget_loc_, "budget declared here");
  }
  if (n.align > kSharedAlignment && !in_kernel_)
    c_.error("V0402", n.loc,
             "shared memory " + q(n.mem->name) +
                 ": arrays aligned past 16 bytes are allocated in a kernel's body, not in a device function");
  c_.declare(n.mem, block(1), n.loc);
}

auto Checker::check(const LocalAlloc& n) -> void {
  if (n.count < 1)
    c_.error("V0210", n.loc,
             "local array " + q(n.mem->name) + " needs a positive size, not " + std::to_string(n.count));
  Perspective p = c_.code();
  if (n.at && c_.valid(*n.at, n.loc, "local array")) {
    p = *n.at;
    if (c_.narrower_eq(p, c_.code()) == Truth::No) {
      auto& d = c_.error("V0206", n.loc,
                         "local array " + q(n.mem->name) + " cannot live at " + p.str() +
                             ", wider than the code's perspective " + c_.code().str());
      c_.note_code(d);
    }
  }
  c_.declare(n.mem, p, n.loc).local_count = n.count;
}

namespace {
/// A function's pointer parameters may assume they do not overlap (the emitter marks them
/// __restrict__), so two arguments naming the same memory are an error when one is mutable.
void no_overlapping_arguments(Context& c_, const Call& n, const FunctionNode& f) {
  for (std::size_t i = 0; i < n.args.size() && i < f.params.size(); ++i) {
    for (std::size_t j = i + 1; j < n.args.size() && j < f.params.size(); ++j) {
      const MemPtr &a = n.args[i].mem, &b = n.args[j].mem;
      const ParamNode &p = f.params[i], &r = f.params[j];
      if (!a || !b || !p.mem || !r.mem || (p.mem->is_const && r.mem->is_const)) continue;
      auto ia = c_.mems.find(a.get()), ib = c_.mems.find(b.get());
      if (ia == c_.mems.end() || ib == c_.mems.end() || ia->second.root != ib->second.root) continue;
      auto& d = c_.error("V0609", n.loc,
                         "arguments " + q(p.name) + " and " + q(r.name) + " of " + q(f.name) + " are both " +
                             q(ia->second.root->name) +
                             "; a function's pointer parameters must not overlap when one of them is written");
      c_.note(d, ia->second.narrowed_at, q(p.name) + " is given " + q(a->name) + ", made here");
      c_.note(d, ib->second.narrowed_at, q(r.name) + " is given " + q(b->name) + ", made here");
    }
  }
}

}  // namespace

auto Checker::check(const Call& n) -> void {
  if (!n.fn) throw InternalError("call without a function");
  const FunctionNode& f = *n.fn;
  Truth fits = c_.fits_in(f.signature, c_.code());
  if (fits == Truth::No) {
    auto& d = c_.error("V0601", n.loc,
                       "call to " + q(f.name) + " needs " + f.signature.str() + ", which the code's perspective " +
                           c_.code().str() + " cannot provide");
    c_.note_code(d);
    c_.note(d, f.signature_loc, "signature declared here");
  } else {
    c_.rule(fits, Obligation::Kind::Divides, c_.units(f.signature), c_.units(c_.code()), "V0601", n.loc, [&] {
      return std::string("call to " + q(f.name) + " needs " + c_.code().str() + " to divide into " + f.signature.str());
    });
  }
  if (n.args.size() != f.params.size()) {
    auto& d = c_.error(
        "V0602", n.loc,
        q(f.name) + " takes " + std::to_string(f.params.size()) + " argument(s), not " + std::to_string(n.args.size()));
    c_.note(d, f.loc, "function declared here");
  }
  for (std::size_t i = 0; i < n.args.size() && i < f.params.size(); ++i) call_arg(f, f.params[i], n.args[i], n.loc);
  for (std::size_t i = f.params.size(); i < n.args.size(); ++i)
    if (n.args[i].value) x_.check_expr(n.args[i].value, n.loc);
  no_overlapping_arguments(c_, n, f);
  if (const SharedSlot* slot = f.shared_budget > 0 ? &layout_.call(n) : nullptr; slot && slot->end > budget_) {
    auto& d =
        c_.error("V0607", n.loc,
                 q(f.name) + " needs " + std::to_string(f.shared_budget) + " bytes of shared memory from offset " +
                     std::to_string(slot->offset) + ", but the budget is " + std::to_string(budget_) + " bytes");
    c_.note(d, budget_loc_, "budget declared here");
  }
  if (n.result) {
    if (!f.returns)
      c_.error("V0803", n.loc, q(f.name) + " returns no value");
    else if (*f.returns != n.result->type)
      c_.error("V0803", n.loc, q(f.name) + " returns " + type_name(*f.returns));
    c_.declare(n.result, thread(1));
  }
}

auto Checker::call_arg(const FunctionNode& f, const ParamNode& p, const CallArgNode& a, SourceLoc loc) -> void {
  Perspective want = p.at.value_or(f.signature);
  std::string where = "argument " + q(p.name) + " of " + q(f.name);
  if (p.var) {
    if (!a.value) {
      c_.error("V0603", loc, where + " must be a value of type " + type_name(p.var->type) + ", not memory");
      return;
    }
    Perspective v = x_.check_expr(a.value, loc);
    if (a.value->type != p.var->type)
      c_.error("V0603", c_.at(a.value, loc),
               where + " must be " + type_name(p.var->type) + ", not " + type_name(a.value->type));
    if (c_.narrower_eq(want, v) == Truth::No) {
      auto& d =
          c_.error("V0604", c_.at(a.value, loc),
                   where + " varies with " + v.str() + ", faster than the " + want.str() + " the parameter lives at");
      c_.note(d, p.loc, "parameter declared here");
    }
    return;
  }
  if (!a.mem) {
    if (a.value) x_.check_expr(a.value, loc);
    c_.error("V0603", loc,
             where + " must be memory (" + space_name(p.mem->space) + " " + type_name(p.mem->elem) + "), not a value");
    return;
  }
  MemInfo* info = c_.use_mem(a.mem, loc);
  if (a.mem->elem != p.mem->elem || a.mem->space != p.mem->space) {
    c_.error("V0603", loc,
             where + " must be " + space_name(p.mem->space) + " " + type_name(p.mem->elem) + " memory, not " +
                 space_name(a.mem->space) + " " + type_name(a.mem->elem));
  }
  if (!info) return;
  if (info->async) c_.error("V0315", loc, "async memory " + q(a.mem->name) + " cannot be passed to a function");
  if (!p.mem->is_const) {
    if (a.mem->is_const) {
      auto& d = c_.error("V0608", loc, where + " is mutable but " + q(a.mem->name) + " is const");
      c_.note(d, p.loc, "parameter declared here");
    }
    Truth same = c_.same_persp(info->persp, want);
    if (same == Truth::No) {
      auto& d = c_.error("V0605", loc,
                         where + " is a mutable pointer living at " + want.str() + "; " + q(a.mem->name) +
                             " lives at " + info->persp.str() + " (mutable pointers must match exactly)");
      c_.note(d, info->narrowed_at, q(a.mem->name) + " got its perspective here");
    } else {
      c_.rule(same, Obligation::Kind::Equal, c_.units(info->persp), c_.units(want), "V0605", loc,
              [&] { return std::string(where + ": mutable pointer perspectives must match"); });
    }
  } else if (c_.narrower_eq(want, info->persp) == Truth::No) {
    auto& d = c_.error(
        "V0606", loc,
        where + " lives at " + want.str() + "; " + q(a.mem->name) + " lives at " + info->persp.str() + ", narrower");
    c_.note(d, info->narrowed_at, q(a.mem->name) + " got its perspective here");
  }
}

auto Checker::check(const Unsafe& n) -> void {
  if (c_.valid(n.needs, n.loc, "unsafe")) {
    Truth t = c_.same_persp(n.needs, c_.code());
    if (t == Truth::No) {
      auto& d = c_.error("V0801", n.loc,
                         "unsafe block declares " + n.needs.str() + "; the code here is at " + c_.code().str());
      c_.note_code(d);
    } else {
      c_.rule(t, Obligation::Kind::Equal, c_.units(n.needs), c_.units(c_.code()), "V0801", n.loc,
              [&] { return std::string("unsafe block needs the code at exactly " + n.needs.str()); });
    }
  }
  for (const auto& [name, e] : n.inputs) x_.check_expr(e, n.loc);
  for (const auto& [name, v] : n.outputs) {
    if (!v) continue;
    auto it = c_.vars.find(v.get());
    if (it == c_.vars.end()) {
      auto& d = c_.error("V0207", n.loc, "variable " + q(v->name) + " is not in scope here");
      c_.note(d, v->loc, "declared here");
      continue;
    }
    write_down(v->name, it->second.persp, it->second.decl, thread(1), n.loc);
  }
}

auto Checker::check(const Return& n) -> void {
  if (n.value) x_.check_expr(n.value, n.loc);
  if (c_.frames.size() > 1 || narrowing_open()) {
    auto& d =
        c_.error("V0802", n.loc,
                 "return inside a narrower perspective or a narrowed memory scope; only the whole function may return");
    c_.note_code(d);
  }
  if (n.value && !returns_)
    c_.error("V0803", n.loc, "this function returns no value");
  else if (!n.value && returns_)
    c_.error("V0803", n.loc, std::string("this function must return a ") + type_name(*returns_));
  else if (n.value && returns_ && n.value->type != *returns_)
    c_.error(
        "V0803", n.loc,
        std::string("return value is ") + type_name(n.value->type) + ", the function returns " + type_name(*returns_));
}

auto Checker::narrowing_open() const -> bool {
  for (const auto& [node, info] : c_.mems)
    if (info.hidden) return true;
  return c_.async_depth > 0;
}

}  // namespace vantage::check::detail
