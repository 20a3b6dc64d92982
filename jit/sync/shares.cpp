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
#include <array>
#include <optional>
#include <set>
#include <tuple>
#include <unordered_map>

#include "jit/ir/eval.h"
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
    at_.code = top;
    scan(body);
    for (const auto* part : order_) check(*part);
    return std::move(found_);
  }

 private:
  // ------------------------------------------------------------------ what the body holds
  /// Scans `s` at the place `at_` (changed and restored around bodies); whether it holds a
  /// `break`, `continue` or `return`, which may skip what follows.
  bool scan(const StmtPtr& s) {
    if (!s) return false;
    ++at_.depth;
    bool leaves = dispatch(*s, [&](const auto& n) { return scan_stmt(n); });
    --at_.depth;
    return leaves;
  }
  template <class N>
  bool scan_stmt(const N& n) {
    // Statements without bodies of their own: lets, assignments, writes, jumps.
    if constexpr (std::is_same_v<N, Let>) {
      defs_[n.var.get()] = {n.value, at_.code};
    } else if constexpr (std::is_same_v<N, Assign>) {
      assigned_.insert(n.var.get());
    } else if constexpr (std::is_same_v<N, Store>) {
      writes_.push_back({n.mem.get(), n.indices, at_, n.loc});
    } else if constexpr (std::is_same_v<N, Intrinsic>) {
      if (n.op == IntrinsicOp::CpAsync && !n.args.empty())
        writes_.push_back({n.mems[0].get(), {n.args[0]}, at_, n.loc});
      for (const auto& o : n.outputs) assigned_.insert(o.get());
    } else if constexpr (std::is_same_v<N, Unsafe>) {
      for (const auto& o : n.outputs) assigned_.insert(o.second.get());
    }
    return std::is_same_v<N, Jump> || std::is_same_v<N, Return>;
  }
  bool scan_stmt(const Seq& n) {
    bool leaves = false;
    for (const auto& c : n.stmts) leaves |= scan(c);
    return leaves;
  }
  /// Scans `body` with the statements inside it possibly skipped.
  bool skippable(const StmtPtr& body) {
    const int saved = at_.may_skip;
    at_.may_skip = at_.depth;
    bool leaves = scan(body);
    at_.may_skip = saved;
    return leaves;
  }
  bool scan_stmt(const If& n) { return skippable(n.then_body) | skippable(n.else_body); }
  bool scan_stmt(const While& n) { return skippable(n.body); }
  bool scan_stmt(const For& n) {
    counters_.insert(n.var.get());
    auto b = const_int(n.begin), e = const_int(n.end), st = const_int(n.step);
    if (!(b && e && st && *st > 0 && *e > *b)) return skippable(n.body);
    // A loop left early skips what follows in it: known once its body is scanned (`leaving_`).
    at_.loops.push_back(&n);
    bool leaves = scan(n.body);
    at_.loops.pop_back();
    if (leaves) leaving_.insert(&n);
    return leaves;
  }
  template <class F>
  bool with_code(Perspective code, F&& f) {
    const Perspective saved = at_.code;
    at_.code = code;
    bool leaves = f();
    at_.code = saved;
    return leaves;
  }
  bool scan_stmt(const Group& n) {
    return with_code(n.p, [&] { return scan(n.body); });
  }
  bool scan_stmt(const Split& n) {
    const std::int64_t parent = units(at_.code), unit = n.level == Level::Thread ? 1 : T_;
    std::int64_t offset = 0;
    bool leaves = false;
    for (std::size_t i = 0; i < n.bodies.size(); ++i) {
      if (parent > 0) at_.active.push_back({parent, offset * unit, (offset + n.counts[i]) * unit});
      leaves |= with_code({n.level, n.counts[i]}, [&] { return scan(n.bodies[i]); });
      if (parent > 0) at_.active.pop_back();
      offset += n.counts[i];
    }
    return leaves;
  }
  bool scan_stmt(const Destruct& n) {
    // The same threads, seen one level down: thread(T) in a block, block(B) in the grid.
    Perspective down = at_.code;
    if (at_.code.level == Level::Block) down = {Level::Thread, Size::T()};
    if (at_.code.level == Level::Grid) down = {Level::Block, Size::B()};
    return with_code(down, [&] { return scan(n.body); });
  }
  bool scan_stmt(const Partition& n) {
    partitions_[n.dst.get()] = &n;
    places_[&n] = at_;
    order_.push_back(&n);
    bool leaves = scan(n.body);
    if (leaves) leaving_partitions_.insert(&n);
    return leaves;
  }
  bool scan_stmt(const Claim& n) {
    parents_[n.dst.get()] = n.src.get();
    return scan(n.body);
  }
  bool scan_stmt(const Lower& n) {
    parents_[n.dst.get()] = n.src.get();
    return scan(n.body);
  }
  bool scan_stmt(const Async& n) {
    parents_[n.dst.get()] = n.src.get();
    return scan(n.body);
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
  /// Values of local indices and loop counters: a handful, looked up by a scan.
  using Values = std::vector<std::pair<const VarNode*, std::int64_t>>;
  static const std::int64_t* find(const Values& values, const VarNode* var) {
    for (const auto& [v, x] : values)
      if (v == var) return &x;
    return nullptr;
  }
  struct Frame {
    std::int64_t position;
    const Values* values;
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
                              if (const std::int64_t* x = find(*f.values, var)) return Value::known(*x, true);
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
  /// The values each counter of `loops[from..]` takes (its first ones), as scenarios.
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
          next.back().emplace_back(loop->var.get(), v);
        }
      out = std::move(next);
    }
    return out;
  }

  /// At most this many local index dimensions are followed (a partition takes one or two).
  static constexpr std::size_t kMaxDims = 3;
  using Local = std::array<std::int64_t, kMaxDims>;

  /// The index in `part`'s own view that the thread at `position` writes with `w` (through the
  /// partitions of `chain`, innermost first), or false where it is not certain. `values` holds the
  /// counters, then one slot per index variable of the chain's partitions (overwritten here).
  bool local_index(const Written& w, const std::vector<const Partition*>& chain, std::int64_t position, Values& values,
                   std::size_t counters, Local& idx, std::size_t& dims) {
    dims = w.index.size();
    if (dims > kMaxDims) return false;
    for (std::size_t d = 0; d < dims; ++d) {
      Value v = eval(w.index[d], w.place.code, Frame{position, &values});
      if (v.kind != Value::Const && v.kind != Value::Known) return false;
      idx[d] = v.v;
    }
    for (const auto* q : chain) {
      if (q->index_vars.size() != dims) return false;
      values.resize(counters);
      for (std::size_t d = 0; d < dims; ++d) values.emplace_back(q->index_vars[d].get(), idx[d]);
      Value v = eval(q->index, places_.at(q).code, Frame{position, &values});
      if (v.kind != Value::Const && v.kind != Value::Known) return false;
      idx[0] = v.v;
      dims = 1;
    }
    values.resize(counters);
    return true;
  }

  /// An element one unit writes: where it is in the search (the unit of the code, the block, the
  /// unit), and where it comes from (the write, its local index).
  struct Entry {
    std::int64_t code_unit, block, element, unit;
    std::uint32_t write;
    std::uint32_t dims;
    Local local;
  };

  void check(const Partition& part) {
    const Place& place = places_.at(&part);
    const std::int64_t code_units = units(place.code), per_unit = units(part.p);
    // A grid's partition is searched over two blocks; one inside a block, over one.
    const std::int64_t positions = (code_units > 0 && code_units <= T_ ? 1 : blocks_) * T_;
    if (per_unit <= 0) return;                                          // a grid-wide share: one unit
    if (code_units > positions) return;                                 // a unit of several blocks: not searched
    if (per_unit >= (code_units > 0 ? code_units : positions)) return;  // one unit in the code
    if (leaving_partitions_.count(&part)) return;  // a write after a break, continue or return may not happen
    if (part.index_vars.size() > kMaxDims) return;
    // The writes through the partition's view that every unit certainly makes, with the values the
    // counters of the loops between them and the partition take.
    struct Certain {
      const Written* write;
      std::vector<const Partition*> chain;
      std::vector<Values> inner;
    };
    std::vector<Certain> certain;
    for (const auto& w : writes_) {
      if (w.place.may_skip >= place.depth || w.index.empty()) continue;
      bool left = false;  // in a loop inside the partition that is left early
      for (std::size_t l = place.loops.size(); l < w.place.loops.size(); ++l)
        left |= leaving_.count(w.place.loops[l]) > 0;
      if (left) continue;
      if (auto chain = through(w.view, part))
        certain.push_back({&w, std::move(*chain), scenarios(w.place.loops, place.loops.size())});
    }
    if (certain.empty()) return;
    const Affine index = affine(part.index);
    std::int64_t budget = kMaxEvaluations;
    std::vector<Entry> entries;
    auto report = [&](const Entry& a, const Entry& b) {
      SharedElement s;
      s.partition = &part;
      s.memory = part.src->name;
      s.units = {a.unit, b.unit};
      s.element = a.element;
      s.locals = {std::vector<std::int64_t>(a.local.begin(), a.local.begin() + a.dims),
                  std::vector<std::int64_t>(b.local.begin(), b.local.begin() + b.dims)};
      s.writes = {certain[a.write].write->loc, certain[b.write].write->loc};
      s.across_blocks = a.block != b.block;
      return s;
    };
    auto by_place = [](const Entry& a, const Entry& b) {
      return std::tie(a.code_unit, a.block, a.element, a.unit) < std::tie(b.code_unit, b.block, b.element, b.unit);
    };
    auto by_element = [](const Entry& a, const Entry& b) {
      return std::tie(a.code_unit, a.element, a.block, a.unit) < std::tie(b.code_unit, b.element, b.block, b.unit);
    };
    for (const auto& outer : scenarios(place.loops)) {
      entries.clear();
      for (std::uint32_t wi = 0; wi < certain.size(); ++wi) {
        const Certain& c = certain[wi];
        for (const auto& inner : c.inner) {
          Values values = outer;
          values.insert(values.end(), inner.begin(), inner.end());
          const std::size_t counters = values.size();
          for (std::int64_t x = 0; x < positions; ++x) {
            if (!runs(place, x) || !runs(c.write->place, x)) continue;
            if (--budget < 0) break;
            Entry at{code_units > 0 ? x / code_units : 0,
                     x / T_,
                     0,
                     (code_units > 0 ? x % code_units : x) / per_unit,
                     wi,
                     0,
                     {}};
            std::size_t dims = 0;
            if (!local_index(*c.write, c.chain, x, values, counters, at.local, dims)) continue;
            if (dims != part.index_vars.size()) continue;
            at.dims = static_cast<std::uint32_t>(dims);
            for (std::size_t d = 0; d < dims; ++d) values.emplace_back(part.index_vars[d].get(), at.local[d]);
            auto e = element(index, place.code, Frame{x, &values});
            values.resize(counters);
            if (!e) continue;
            at.element = *e;
            entries.push_back(at);
          }
        }
      }
      // Two units of one unit of the code, in one block, with one element.
      std::sort(entries.begin(), entries.end(), by_place);
      for (std::size_t i = 1; i < entries.size(); ++i) {
        const Entry &a = entries[i - 1], &b = entries[i];
        if (a.code_unit == b.code_unit && a.block == b.block && a.element == b.element && a.unit != b.unit) {
          found_.push_back(report(a, b));
          return;
        }
      }
      // Two units of a grid's partition in two blocks.
      std::sort(entries.begin(), entries.end(), by_element);
      for (std::size_t i = 1; i < entries.size(); ++i) {
        const Entry &a = entries[i - 1], &b = entries[i];
        if (a.code_unit == b.code_unit && a.element == b.element && a.block != b.block) {
          found_.push_back(report(a, b));
          return;
        }
      }
      if (budget < 0) return;
    }
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
  std::set<const Partition*> leaving_partitions_;  ///< partitions whose bodies hold a jump or return
  std::set<const For*> leaving_;                   ///< constant loops whose bodies hold one
  Place at_;                                       ///< where the scan is
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
