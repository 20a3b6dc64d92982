// Vantage automatic synchronization: partitions whose shares meet where they are written (sync.h).
//
// The barrier planner relies on one fact of partitions: a store through a partition's share is the
// only store to that element by its unit, so two stores through one share need no barrier between
// them and a thread that reads back what it stored needs none either. An index function that hands
// one element to two units breaks that: the two threads race, and a block-level loop bound or branch
// that reads the element can send them different ways around a barrier (a deadlock on a GPU). This
// file finds such partitions at specialization, where the threads per block are known, by running
// the index function for every unit of one unit of the code (a block, a group of threads, or the
// first two blocks of the grid) on the local indices its threads write, and reporting two units that
// get one element.
//
// Only what is certain is reported:
// - a write counts where every unit makes it: not under an `if` or `while` inside the partition,
//   nor in a loop of unknown trip count or one left early, nor after a `return`; the counters of the
//   constant loops around it take each of their values in turn (the first 64);
// - values are computed as the kernel would: ids from the thread's position where each was written,
//   lets followed, every index function on the way from the written view up to the partition's run
//   on the element before it; a loaded value, a variable that is assigned, or a function's parameter
//   makes the element unknown, and an unknown element is compared with nothing;
// - in the partition's own index function, a term made only of values the same for every unit (a
//   kernel parameter, the counter of a loop around it) is left out, since it moves every unit's share
//   alike; a term that mixes one with the unit or the local index (`tr * N + tc`) makes the element
//   unknown.
// So a partition this finds does hand one element to two units; one it passes may still, through
// writes it could not follow, and then the interpreter's racecheck reports the race at run time.
#include <algorithm>
#include <map>
#include <optional>
#include <set>
#include <unordered_map>

#include "jit/ir/eval.h"
#include "jit/ir/mutate.h"
#include "jit/ir/range.h"
#include "jit/ir/views.h"
#include "jit/ir/visit.h"
#include "jit/sync/sync.h"

namespace vantage::sync {
namespace {

using namespace ir;

/// Evaluations of one partition's index function before the search stops (it then reports what it
/// found): two blocks of 1,024 threads writing a few hundred elements each.
constexpr std::int64_t kMaxEvaluations = std::int64_t{1} << 21;
/// Values of one loop counter, and combinations of the counters of nested loops, tried at most.
constexpr std::int64_t kMaxCounterValues = 64;
constexpr std::int64_t kMaxLocal = std::int64_t{1} << 12;

/// An evaluated integer: a value that is the same for every unit (`Const`), one that depends on the
/// unit, the local index or a counter (`Known`), a value unknown but the same for every unit
/// (`Uniform`: a parameter), or unknown (`Unknown`).
struct Value {
  enum Kind : std::uint8_t { Const, Known, Uniform, Unknown } kind = Unknown;
  std::int64_t v = 0;
  static Value known(std::int64_t x, bool varies) { return {varies ? Known : Const, x}; }
};

/// Where a statement runs: the code's perspective, the thread ranges of the split branches around
/// it (a position runs it when `lo <= position % modulus < hi` for each), the constant loops around
/// it whose counters take their values in turn, how many statements enclose it, and the innermost of
/// those that may skip it (an `if`, a `while`, a loop of unknown trip count or one left early).
struct Place {
  Perspective code;
  struct Range {
    std::int64_t modulus, lo, hi;
  };
  std::vector<Range> active;
  std::vector<const For*> loops;
  int depth = 0;
  int may_skip = -1;
};

/// A store (or an async copy's destination) at `index` of `view`.
struct Written {
  const MemNode* view;
  std::vector<ExprPtr> index;
  Place place;
  SourceLoc loc;
};

/// Whether a body holds a `break`, `continue` or `return`, which may skip what follows.
bool leaves(const StmtPtr& body) {
  struct Scan : IRVisitor {
    bool found = false;
    void visit(const Jump&) override { found = true; }
    void visit(const Return&) override { found = true; }
  } scan;
  scan.walk(body);
  return scan.found;
}

class Finder {
 public:
  Finder(std::int64_t threads, std::optional<std::int64_t> blocks, bool params_uniform)
      : T_(threads), params_uniform_(params_uniform) {
    // The first blocks of the grid: two units of a grid-wide partition that share an element in
    // blocks 0 and 1 race in every launch of two blocks or more.
    blocks_ = std::clamp<std::int64_t>(blocks.value_or(2), 1, 2);
  }

  std::vector<SharedElement> run(const StmtPtr& body, Perspective top) {
    if (T_ <= 0) return {};
    Place start;
    start.code = top;
    scan(body, start);
    for (const auto* part : order_) check(*part);
    return std::move(found_);
  }

 private:
  // ------------------------------------------------------------------ what the body holds
  void scan(const StmtPtr& s, const Place& at) {
    if (!s) return;
    Place inner = at;
    ++inner.depth;
    dispatch(*s, [&](const auto& n) { scan_stmt(n, inner); });
  }
  template <class N>
  void scan_stmt(const N& n, const Place& at) {
    // Statements without bodies of their own: lets, assignments, writes.
    if constexpr (std::is_same_v<N, Let>) {
      defs_[n.var.get()] = {n.value, at.code};
    } else if constexpr (std::is_same_v<N, Assign>) {
      assigned_.insert(n.var.get());
    } else if constexpr (std::is_same_v<N, Store>) {
      writes_.push_back({n.mem.get(), n.indices, at, n.loc});
    } else if constexpr (std::is_same_v<N, Intrinsic>) {
      if (n.op == IntrinsicOp::CpAsync && !n.args.empty()) writes_.push_back({n.mems[0].get(), {n.args[0]}, at, n.loc});
      for (const auto& o : n.outputs) assigned_.insert(o.get());
    } else if constexpr (std::is_same_v<N, Unsafe>) {
      for (const auto& o : n.outputs) assigned_.insert(o.second.get());
    }
  }
  void scan_stmt(const Seq& n, const Place& at) {
    for (const auto& c : n.stmts) scan(c, at);
  }
  void scan_stmt(const If& n, const Place& at) {
    Place inner = at;
    inner.may_skip = at.depth;
    scan(n.then_body, inner);
    scan(n.else_body, inner);
  }
  void scan_stmt(const For& n, const Place& at) {
    counters_.insert(n.var.get());
    Place inner = at;
    auto b = const_int(n.begin), e = const_int(n.end), st = const_int(n.step);
    if (b && e && st && *st > 0 && *e > *b && !leaves(n.body))
      inner.loops.push_back(&n);
    else
      inner.may_skip = at.depth;
    scan(n.body, inner);
  }
  void scan_stmt(const While& n, const Place& at) {
    Place inner = at;
    inner.may_skip = at.depth;
    scan(n.body, inner);
  }
  void scan_stmt(const Group& n, const Place& at) {
    Place inner = at;
    inner.code = n.p;
    scan(n.body, inner);
  }
  void scan_stmt(const Split& n, const Place& at) {
    const std::int64_t parent = units(at.code), unit = n.level == Level::Thread ? 1 : T_;
    std::int64_t offset = 0;
    for (std::size_t i = 0; i < n.bodies.size(); ++i) {
      Place inner = at;
      inner.code = {n.level, n.counts[i]};
      if (parent > 0) inner.active.push_back({parent, offset * unit, (offset + n.counts[i]) * unit});
      offset += n.counts[i];
      scan(n.bodies[i], inner);
    }
  }
  void scan_stmt(const Destruct& n, const Place& at) {
    // The same threads, seen one level down: thread(T) in a block, block(B) in the grid.
    Place inner = at;
    if (at.code.level == Level::Block) inner.code = {Level::Thread, Size::T()};
    if (at.code.level == Level::Grid) inner.code = {Level::Block, Size::B()};
    scan(n.body, inner);
  }
  void scan_stmt(const Partition& n, const Place& at) {
    partitions_[n.dst.get()] = &n;
    places_[&n] = at;
    order_.push_back(&n);
    leaves_[&n] = leaves(n.body);
    scan(n.body, at);
  }
  void scan_stmt(const Claim& n, const Place& at) {
    parents_[n.dst.get()] = n.src.get();
    scan(n.body, at);
  }
  void scan_stmt(const Lower& n, const Place& at) {
    parents_[n.dst.get()] = n.src.get();
    scan(n.body, at);
  }
  void scan_stmt(const Async& n, const Place& at) {
    parents_[n.dst.get()] = n.src.get();
    scan(n.body, at);
  }

  /// The partitions between a write's view and `part`'s (innermost first), if it writes through
  /// `part`'s view at all.
  std::optional<std::vector<const Partition*>> through(const MemNode* m, const Partition& part) const {
    std::vector<const Partition*> chain;
    while (m) {
      if (m == part.dst.get()) return chain;
      if (auto p = partitions_.find(m); p != partitions_.end()) {
        chain.push_back(p->second);
        m = p->second->src.get();
      } else if (auto q = parents_.find(m); q != parents_.end()) {
        m = q->second;
      } else {
        return std::nullopt;
      }
    }
    return std::nullopt;
  }

  // ------------------------------------------------------------------ positions
  /// Threads in a unit of `p`, or 0 for a unit as wide as the grid.
  std::int64_t units(Perspective p) const {
    if (p.level == Level::Grid || p.count.blocks) return 0;
    std::int64_t n = p.count.coeff * (p.count.threads ? T_ : 1);
    return p.level == Level::Block ? n * T_ : n;
  }
  /// `id(q)` in code at `code`, for the thread at `position` in the grid (blocks of T threads).
  std::optional<std::int64_t> id(Perspective q, Perspective code, std::int64_t position) const {
    const std::int64_t c = units(code), u = units(q);
    if (u <= 0) return 0;  // the grid's own id
    const std::int64_t in_code = c > 0 ? position % c : position;
    return in_code / u;
  }

  // ------------------------------------------------------------------ evaluation
  struct Frame {
    std::int64_t position;
    const std::unordered_map<const VarNode*, std::int64_t>* values;  ///< local indices and counters
  };
  Value eval(const ExprPtr& e, Perspective code, const Frame& f, int depth = 0) {
    if (!e || depth > 64) return {};
    return dispatch(*e, Overloaded{
                            [&](const Literal& n) -> Value {
                              if (!is_integer(n.type) && n.type != ScalarType::Bool) return {};
                              auto v = const_int(e);
                              return v ? Value::known(*v, false) : Value{};
                            },
                            [&](const Id& n) -> Value {
                              auto v = id(n.p, code, f.position);
                              return v ? Value::known(*v, true) : Value{};
                            },
                            [&](const VarRef& n) -> Value {
                              const VarNode* var = n.var.get();
                              if (auto it = f.values->find(var); it != f.values->end())
                                return Value::known(it->second, true);
                              // A kernel's parameters are the same for every thread; a function's may not be.
                              if (var->origin == VarNode::Origin::Param)
                                return params_uniform_ ? Value{Value::Uniform, 0} : Value{};
                              if (counters_.count(var)) return {Value::Uniform, 0};  // a loop's, taken as it is
                              if (assigned_.count(var)) return {};
                              auto d = defs_.find(var);
                              if (d == defs_.end()) return {};
                              return eval(d->second.first, d->second.second, f, depth + 1);
                            },
                            [&](const Unary& n) -> Value {
                              Value a = eval(n.a, code, f, depth + 1);
                              if (a.kind == Value::Uniform || a.kind == Value::Unknown || !is_integer(n.a->type)) {
                                return a.kind == Value::Uniform ? a : Value{};
                              }
                              bool over = false;
                              std::int64_t r = eval_unary(n.op, n.a->type, a.v, &over);
                              return over ? Value{} : Value{a.kind, r};
                            },
                            [&](const Cast& n) -> Value {
                              Value a = eval(n.a, code, f, depth + 1);
                              bool ints = (is_integer(n.a->type) || n.a->type == ScalarType::Bool) &&
                                          (is_integer(n.type) || n.type == ScalarType::Bool);
                              if (!ints || a.kind == Value::Unknown) return {};
                              if (a.kind == Value::Uniform) return a;
                              bool over = false;
                              std::int64_t r = eval_cast(n.a->type, n.type, a.v, &over);
                              return over ? Value{} : Value{a.kind, r};
                            },
                            [&](const Binary& n) -> Value {
                              Value a = eval(n.a, code, f, depth + 1), b = eval(n.b, code, f, depth + 1);
                              return combine(a, b, [&](std::int64_t x, std::int64_t y, bool* over) {
                                return eval_binary(n.op, n.a->type, x, y, over);
                              });
                            },
                            [&](const Select& n) -> Value {
                              Value c = eval(n.c, code, f, depth + 1);
                              if (c.kind == Value::Uniform) {
                                Value a = eval(n.a, code, f, depth + 1), b = eval(n.b, code, f, depth + 1);
                                bool same = (a.kind == Value::Const || a.kind == Value::Uniform) &&
                                            (b.kind == Value::Const || b.kind == Value::Uniform);
                                return same ? Value{Value::Uniform, 0} : Value{};
                              }
                              if (c.kind == Value::Unknown) return {};
                              Value r = eval(c.v != 0 ? n.a : n.b, code, f, depth + 1);
                              if (c.kind == Value::Known && r.kind == Value::Const) r.kind = Value::Known;
                              if (c.kind == Value::Known && r.kind == Value::Uniform) return {};
                              return r;
                            },
                            [](const Load&) { return Value{}; },  // memory may differ by thread
                            [](const Builtin&) { return Value{}; },
                            [](const MathCall&) { return Value{}; },
                        });
  }
  template <class Op>
  static Value combine(Value a, Value b, Op op) {
    if (a.kind == Value::Unknown || b.kind == Value::Unknown) return {};
    bool uniform = a.kind == Value::Uniform || b.kind == Value::Uniform;
    if (uniform) {
      // The same for every unit only if the other side is too.
      return (a.kind == Value::Known || b.kind == Value::Known) ? Value{} : Value{Value::Uniform, 0};
    }
    bool over = false;
    std::int64_t r = op(a.v, b.v, &over);
    if (over) return {};
    return Value::known(r, a.kind == Value::Known || b.kind == Value::Known);
  }

  /// The element of the partition's source that `index` (its affine form, terms `parts`) names at
  /// this frame: terms the same for every unit left out; nullopt where a term is unknown.
  std::optional<std::int64_t> element(const Affine& index, Perspective code, const Frame& f) {
    __int128 sum = index.constant;
    for (const auto& [atom, k] : index.terms) {
      if (k == 0) continue;
      Value v = eval(atom, code, f);
      if (v.kind == Value::Uniform) continue;
      if (v.kind == Value::Unknown) return std::nullopt;
      sum += static_cast<__int128>(k) * v.v;
      if (sum > INT64_MAX || sum < INT64_MIN) return std::nullopt;
    }
    return static_cast<std::int64_t>(sum);
  }

  // ------------------------------------------------------------------ the search
  using Values = std::unordered_map<const VarNode*, std::int64_t>;

  /// The values each counter of `loops` takes (its first ones), as scenarios.
  static std::vector<Values> scenarios(const std::vector<const For*>& loops, std::size_t from = 0) {
    std::vector<Values> out{{}};
    for (std::size_t i = from; i < loops.size(); ++i) {
      const For* loop = loops[i];
      auto b = const_int(loop->begin), e = const_int(loop->end), st = const_int(loop->step);
      std::vector<Values> next;
      for (const auto& s : out)
        for (std::int64_t v = *b, k = 0; v < *e && k < kMaxCounterValues; v += *st, ++k) {
          if (next.size() >= static_cast<std::size_t>(kMaxLocal)) break;
          next.push_back(s);
          next.back()[loop->var.get()] = v;
        }
      out = std::move(next);
    }
    return out;
  }

  /// The index in `part`'s own view that the thread at `position` writes with `w` (through the
  /// partitions of `chain`), or nullopt where it is not certain.
  std::optional<std::vector<std::int64_t>> local_index(const Written& w, const std::vector<const Partition*>& chain,
                                                       std::int64_t position, const Values& values) {
    std::vector<std::int64_t> idx;
    for (const auto& e : w.index) {
      Value v = eval(e, w.place.code, Frame{position, &values});
      if (v.kind != Value::Const && v.kind != Value::Known) return std::nullopt;
      idx.push_back(v.v);
    }
    for (const auto* q : chain) {
      Values bound = values;
      if (q->index_vars.size() != idx.size()) return std::nullopt;
      for (std::size_t d = 0; d < idx.size(); ++d) bound[q->index_vars[d].get()] = idx[d];
      Value v = eval(q->index, places_.at(q).code, Frame{position, &bound});
      if (v.kind != Value::Const && v.kind != Value::Known) return std::nullopt;
      idx = {v.v};
    }
    return idx;
  }

  void check(const Partition& part) {
    const Place& place = places_.at(&part);
    const std::int64_t code_units = units(place.code), per_unit = units(part.p);
    const std::int64_t positions = blocks_ * T_;
    if (per_unit <= 0) return;                                          // a grid-wide share: one unit
    if (code_units > positions) return;                                 // a unit of several blocks: not searched
    if (per_unit >= (code_units > 0 ? code_units : positions)) return;  // one unit in the code
    if (leaves_.at(&part)) return;  // a write after a break, continue or return may not happen
    // The writes through the partition's view that every unit certainly makes.
    std::vector<std::pair<const Written*, std::vector<const Partition*>>> certain;
    for (const auto& w : writes_) {
      if (w.place.may_skip >= place.depth || w.index.empty()) continue;
      if (auto chain = through(w.view, part)) certain.emplace_back(&w, std::move(*chain));
    }
    if (certain.empty()) return;
    const Affine index = affine(part.index);
    std::int64_t budget = kMaxEvaluations;
    std::optional<SharedElement> across;  // two units in different blocks (of a grid's partition)
    struct First {
      std::int64_t unit, block;
      const Written* write;
      std::vector<std::int64_t> local;
    };
    auto report = [&](const First& a, const First& b, std::int64_t element) {
      SharedElement s;
      s.partition = &part;
      s.memory = part.src->name;
      s.units = {a.unit, b.unit};
      s.element = element;
      s.locals = {a.local, b.local};
      s.writes = {a.write->loc, b.write->loc};
      s.across_blocks = a.block != b.block;
      return s;
    };
    for (const auto& outer : scenarios(place.loops)) {
      // (unit of the code, block, element) -> who got it first; and without the block, for a
      // grid's partition, whose units in two blocks may meet.
      std::map<std::tuple<std::int64_t, std::int64_t, std::int64_t>, First> in_block;
      std::map<std::pair<std::int64_t, std::int64_t>, First> in_code;
      for (std::int64_t unit_start = 0; unit_start < positions; unit_start += per_unit) {
        if (!runs(place, unit_start)) continue;
        const std::int64_t code_unit = code_units > 0 ? unit_start / code_units : 0;
        const std::int64_t unit = (code_units > 0 ? unit_start % code_units : unit_start) / per_unit;
        for (const auto& [w, chain] : certain)
          for (const auto& inner : scenarios(w->place.loops, place.loops.size()))
            for (std::int64_t x = unit_start; x < unit_start + per_unit; ++x) {
              if (!runs(w->place, x)) continue;
              if (--budget < 0) {
                if (across) found_.push_back(*across);
                return;
              }
              Values values = outer;
              values.insert(inner.begin(), inner.end());
              auto local = local_index(*w, chain, x, values);
              if (!local || local->size() != part.index_vars.size()) continue;
              for (std::size_t d = 0; d < local->size(); ++d) values[part.index_vars[d].get()] = (*local)[d];
              auto e = element(index, place.code, Frame{x, &values});
              if (!e) continue;
              First at{unit, x / T_, w, *local};
              auto [it, fresh] = in_block.emplace(std::make_tuple(code_unit, at.block, *e), at);
              if (!fresh && it->second.unit != unit) {
                found_.push_back(report(it->second, at, *e));
                return;
              }
              auto [jt, first] = in_code.emplace(std::make_pair(code_unit, *e), at);
              if (!first && jt->second.block != at.block && !across) across = report(jt->second, at, *e);
            }
      }
    }
    if (across) found_.push_back(*across);
  }
  /// Whether the code at `place` runs on the thread at `position` (split branches).
  static bool runs(const Place& place, std::int64_t position) {
    for (const auto& r : place.active) {
      std::int64_t at = position % r.modulus;
      if (at < r.lo || at >= r.hi) return false;
    }
    return true;
  }

  std::int64_t T_;
  bool params_uniform_;
  std::int64_t blocks_ = 2;
  std::unordered_map<const VarNode*, std::pair<ExprPtr, Perspective>> defs_;
  std::set<const VarNode*> assigned_, counters_;
  std::unordered_map<const MemNode*, const Partition*> partitions_;
  std::unordered_map<const MemNode*, const MemNode*> parents_;
  std::unordered_map<const Partition*, Place> places_;
  std::unordered_map<const Partition*, bool> leaves_;
  std::vector<const Partition*> order_;
  std::vector<Written> writes_;
  std::vector<SharedElement> found_;
};

}  // namespace

std::vector<SharedElement> overlapping_shares(const ir::StmtPtr& body, Perspective top, std::int64_t threads,
                                              std::optional<std::int64_t> blocks) {
  return Finder(threads, blocks, top == grid(1)).run(body, top);
}

}  // namespace vantage::sync
