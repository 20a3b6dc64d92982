// The interpreter's Hopper instructions: mbarriers (arrivals, transaction bytes, phases and their
// parity waits), TMA tile loads through tensor maps into the 128-byte swizzle, and wgmma on tiles in
// that layout, asynchronous until the thread's wgmma_wait. What each means is docs/semantics.md's
// "Hopper" section; the PTX ISA is the authority it follows. See machine.h.
#include "jit/interp/machine.h"

namespace vantage::interp::detail {

namespace {
constexpr std::int64_t kSwizzleRow = 128;  // bytes: a row of a TMA box or a wgmma tile

/// Element (row, k) of a K-major tile of 128-byte rows that starts at element `first` of `ref`, where
/// the 128-byte swizzle puts it. The swizzle works on shared-memory addresses; the arrays that hold
/// such tiles start on 1024 bytes (V1009), so the region's own offsets give the same bits.
std::int64_t swizzled(const Ref& ref, std::int64_t first, std::int64_t row, std::int64_t k) {
  const int shift = std::countr_zero(static_cast<std::uint64_t>(type_bytes(ref.region->elem)));  // 1 to 8 bytes
  const std::int64_t byte = ((ref.offset + first + k) << shift) + row * kSwizzleRow;
  const std::int64_t moved = byte ^ (((byte >> 7) & 7) << 4);  // the 16-byte chunk, by the row within 8
  return (moved >> shift) - ref.offset;
}

/// Element `index` of `ref` written by t with every check, as Machine::write does.
void checked_write(Checks& c, const Thread& t, const Ref& ref, std::int64_t index, V v, SourceLoc loc) {
  const std::int64_t i = c.bounds(t, ref, index, loc, "writes");
  c.write(t, *ref.region, i, loc, kPlain);
  store_raw(*ref.region, i, v);
}

/// The box of `map` at (row0, col0) of the rows x cols matrix `src`, written by t into `d` from
/// element `first` in the 128-byte swizzle; what lies outside the matrix is zero.
void tma_box(Checks& c, const Thread& t, const Region& src, std::int64_t rows, std::int64_t cols, std::int64_t row0,
             std::int64_t col0, const TensorMapNode& map, const Ref& d, std::int64_t first, SourceLoc loc) {
  const std::int64_t eb = type_bytes(d.region->elem);
  if (((d.offset + first) * eb) % 1024 != 0 || map.box_cols * eb != kSwizzleRow)
    throw InternalError("interp: a TMA box at " + where(loc) + " off the 128-byte swizzle's 1024-byte atoms");
  for (std::int64_t r = 0; r < map.box_rows; ++r)
    for (std::int64_t col = 0; col < map.box_cols; ++col) {
      const std::int64_t gr = row0 + r, gc = col0 + col;
      V v;
      if (gr >= 0 && gr < rows && gc >= 0 && gc < cols) v = load_raw(src, gr * cols + gc);
      const std::int64_t at = swizzled(d, first, r, col);
      c.proven(t, d, at, true, loc);  // V1009: the box is proven inside its array
      checked_write(c, t, d, at, v, loc);
    }
}

/// The sum of x[k] * y[k] in k order, in a register (inline in wgmma_part, the compiler kept it in
/// memory, and its every step waited on a store).
[[gnu::noinline]] double dot(const double* x, const double* y, std::size_t n) {
  double sum = 0;
  for (std::size_t k = 0; k < n; ++k) sum += x[k] * y[k];
  return sum;
}

/// Thread t's part of a wgmma: its accumulators += A * B. Thread t of its warpgroup (warp w, lane l)
/// holds element i of D at row 16w + l/4 + 8 (i/2 % 2), column 8 (i/4) + 2 (l % 4) + i % 2.
void wgmma_part(Checks& c, const Thread& t, const WgmmaOp& op) {
  const std::int64_t warp = t.tid % 128 / 32, lane = t.tid % 32;
  // K is 32 bytes of each row: 16 elements of 2 bytes, or 32 of one (bytes, signed or not, which
  // accumulate in s32).
  const ScalarType elem = op.a.region->elem;
  const bool integer = elem == ScalarType::I8 || elem == ScalarType::U8;
  const std::int64_t K = 32 / type_bytes(elem);
  // A warp's lanes run a wgmma together: its operands are read once, for the warp. Lane 0 records
  // those reads (A's 16 rows of the warp, all N rows of B) for racecheck, so that a later write
  // must follow it; each lane checks the elements it takes against the writes before them.
  auto element = [&](const Ref& r, std::int64_t first, std::int64_t row, std::int64_t k, bool record) {
    const std::int64_t at = swizzled(r, first, row, k);
    c.proven(t, r, at, false, op.loc);
    c.read(t, *r.region, r.offset + at, op.loc, kPlain, record);
    const V v = load_raw(*r.region, r.offset + at);
    return integer ? static_cast<double>(v.i) : v.f;
  };
  if (lane == 0) {
    for (std::int64_t row = 0; row < 16; ++row)
      for (std::int64_t k = 0; k < K; ++k) element(op.a, op.a_first, warp * 16 + row, k, true);
    for (std::int64_t row = 0; row < op.n; ++row)
      for (std::int64_t k = 0; k < K; ++k) element(op.b, op.b_first, row, k, true);
  }
  // Each distinct row of A and of B this thread's elements need, read once.
  std::array<std::array<double, 32>, 2> a{};
  std::vector<std::array<double, 32>> b(static_cast<std::size_t>(op.n / 4));
  // Row by row, k innermost: a row's elements are next to each other, and so are their shadows.
  for (std::size_t h = 0; h < 2; ++h)
    for (std::int64_t kk = 0; kk < K; ++kk)
      a[h][static_cast<std::size_t>(kk)] =
          element(op.a, op.a_first, warp * 16 + lane / 4 + 8 * static_cast<std::int64_t>(h), kk, false);
  for (std::size_t j = 0; j < b.size(); ++j) {
    const auto jj = static_cast<std::int64_t>(j);
    for (std::int64_t kk = 0; kk < K; ++kk)
      b[j][static_cast<std::size_t>(kk)] = element(op.b, op.b_first, 8 * (jj / 2) + 2 * (lane % 4) + jj % 2, kk, false);
  }
  for (std::int64_t i = 0; i < op.n / 2; ++i) {
    const std::int64_t e = c.bounds(t, op.acc, i, op.loc, "accumulates into");
    op.acc.region->inflight.erase(e);
    const auto& row = a[static_cast<std::size_t>(i / 2 % 2)];
    const auto& col = b[static_cast<std::size_t>(2 * (i / 4) + i % 2)];
    // The products of 16-bit floats are exact in double; they are summed in k order and added to
    // the accumulator, rounded to f32 once. Those of bytes and their sum (at most 32 * 2^16) are
    // exact too, and wrap into the s32 accumulator.
    const double sum = dot(row.data(), col.data(), static_cast<std::size_t>(K));
    c.read(t, *op.acc.region, e, op.loc, kPlain);
    V v = load_raw(*op.acc.region, e);
    if (integer)
      v.i = static_cast<std::int32_t>(static_cast<std::uint32_t>(v.i) + static_cast<std::uint32_t>(std::int64_t(sum)));
    else
      v.f = static_cast<float>(v.f + sum);
    checked_write(c, t, op.acc, i, v, op.loc);
  }
}

/// The accumulators of `op` are its own until t waits for it.
void accumulators_in_flight(Checks& c, const Thread& t, const WgmmaOp& op) {
  for (std::int64_t i = 0; i < op.n / 2; ++i) {
    const std::int64_t e = c.bounds(t, op.acc, i, op.loc, "accumulates into");
    if (!op.acc.region->inflight.count(e)) c.in_flight(t, *op.acc.region, e, op.loc, kWgmmaWrite);
  }
}
}  // namespace

auto Hopper::mbarrier(const Thread& t, const Ref& bars, std::int64_t slot, SourceLoc loc, bool init) -> Mbarrier& {
  c_.proven(t, bars, slot, true, loc);  // V1009: every slot is proven inside the array
  const std::int64_t i = bars.offset + slot;
  Mbarrier& m = mbarriers_[{bars.region, i}];
  // For racecheck an initialisation writes the barrier; arrivals and waits are atomic accesses to
  // it, so they need no order among themselves but must follow the initialisation.
  if (init) {
    checked_write(c_, t, bars, slot, V{}, loc);
  } else {
    c_.read(t, *bars.region, i, loc, kAtomic);
    if (!m.init)
      throw ExecutionError("initcheck",
                           c_.describe(t) + " uses mbarrier " + c_.element(*bars.region, i) + " at " + where(loc) +
                               " before any thread of the block initialised it (mbarrier_init)",
                           {loc});
  }
  return m;
}

void Hopper::complete_phase(Mbarrier& m) {
  m.done[static_cast<std::size_t>(m.phases % 2)] = std::move(m.gathered);
  m.gathered.clear();
  ++m.phases;
  m.pending = m.count;
  if (fibers_) fibers_->progress();
}

void Hopper::arrive(const Thread& t, Mbarrier& m, std::int64_t bytes, SourceLoc loc) {
  if (m.pending <= 0)
    throw ExecutionError("synccheck",
                         c_.describe(t) + " arrives at an mbarrier at " + where(loc) + " whose phase has had its " +
                             std::to_string(m.count) + " arrivals and still waits for " + std::to_string(m.tx) +
                             " transaction bytes: more arrivals than its count",
                         {loc});
  m.tx += bytes;
  c_.release(t, m.gathered);  // what t did before is the waiting threads' once the phase completes
  if (--m.pending == 0 && m.tx == 0) complete_phase(m);
  if (fibers_) fibers_->progress();
}

void Hopper::complete_tx(const Thread& t, Mbarrier& m, std::int64_t bytes) {
  m.tx -= bytes;
  c_.release(t, m.gathered);  // the box t wrote
  if (m.pending == 0 && m.tx == 0) complete_phase(m);
  if (fibers_) fibers_->progress();
}

void Hopper::wait(Thread& t, Mbarrier& m, const Ref& bars, std::int64_t slot, std::int64_t parity, SourceLoc loc) {
  // mbarrier.try_wait.parity P succeeds once the phase of parity P has completed: while the current
  // phase's parity is P it waits (for parity 1 before the first phase, not at all).
  auto ready = [&] { return m.phases % 2 != parity; };
  if (!ready()) {
    if (!fibers_) throw InternalError("interp: an mbarrier wait in a kernel run without fibers");
    fibers_->wait_until(ready, [&] {
      return Fibers::Wait{t.run, "at " + where(loc) + " on mbarrier " + c_.element(*bars.region, bars.offset + slot) +
                                     " for its phase of parity " + std::to_string(parity) + ", which still waits for " +
                                     std::to_string(m.pending) + " of " + std::to_string(m.count) + " arrivals and " +
                                     std::to_string(m.tx) + " transaction bytes (" + std::to_string(m.phases) +
                                     " phases completed)"};
    });
  }
  c_.acquire(t, m.done[static_cast<std::size_t>(parity)]);
}

void Hopper::run(const Intrinsic& n, Thread& t, const std::vector<Ref>& mems, const std::vector<std::int64_t>& args,
                 const Source& tma) {
  switch (n.op) {
    case IntrinsicOp::MbarrierInit: {  // args: the arrival count, the slot
      if (args[0] < 1 || args[0] > (std::int64_t{1} << 20) - 1)
        throw ExecutionError("synccheck",
                             c_.describe(t) + " initialises an mbarrier at " + where(n.loc) + " with " +
                                 std::to_string(args[0]) + " arrivals (1 to 2^20 - 1)",
                             {n.loc});
      Mbarrier& m = mbarrier(t, mems[0], args[1], n.loc, true);
      m = Mbarrier{};
      m.init = true;
      m.count = m.pending = args[0];
      return;
    }
    case IntrinsicOp::MbarrierArrive: arrive(t, mbarrier(t, mems[0], args[0], n.loc, false), 0, n.loc); return;
    case IntrinsicOp::MbarrierArriveCluster:  // mems: the barriers of block args[1]; args: the slot, the rank
      if (args[1] != t.rank) remote(t, args[1], "arrival at an mbarrier", n.loc);
      arrive(t, mbarrier(t, mems[0], args[0], n.loc, false), 0, n.loc);
      return;
    case IntrinsicOp::MbarrierExpectTx:
      arrive(t, mbarrier(t, mems[0], args[0], n.loc, false), n.imms[0], n.loc);
      return;
    case IntrinsicOp::MbarrierWait:  // args: the phase's parity, the slot
      wait(t, mbarrier(t, mems[0], args[1], n.loc, false), mems[0], args[1], args[0] & 1, n.loc);
      return;
    case IntrinsicOp::TmaLoad2D:           // into the destination and mbarriers of each of tma.blocks (its own alone)
    case IntrinsicOp::TmaLoadMulticast2D:  // args: column, row, slot, the destination's first element, mask
      if (tma.cols < 0 || tma.rows < 0 || (tma.cols > 0 && tma.rows > tma.src->length / tma.cols))
        throw ExecutionError("memcheck",
                             "tensor map " + tma.map->name + " covers " + std::to_string(tma.rows) + " x " +
                                 std::to_string(tma.cols) + " elements of '" + tma.src->name + "', which has " +
                                 std::to_string(tma.src->length) + " (a GPU launch refuses it)",
                             {n.loc, tma.map->loc});
      for (const auto& [rank, place] : tma.blocks) {
        const auto& [dst, bars] = place;
        if (rank != t.rank) remote(t, rank, "multicast TMA load", n.loc);
        tma_box(c_, t, *tma.src, tma.rows, tma.cols, args[1], args[0], *tma.map, dst, args[3], n.loc);
        complete_tx(t, mbarrier(t, bars, args[2], n.loc, false),
                    tma.map->box_rows * tma.map->box_cols * type_bytes(dst.region->elem));
      }
      return;
    case IntrinsicOp::TmaStore2D:  // mems: the source, the matrix; args: column, row, the source's first element
      tma_store(t, tma, mems[0], args[2], mems[1], args[1], args[0], n.loc);
      return;
    case IntrinsicOp::TmaStoreWait: complete_stores(t, static_cast<std::size_t>(n.imms[0])); return;
    case IntrinsicOp::Wgmma: {  // mems: the accumulators, A, B; args: A's and B's first elements; imms: N
      WgmmaOp op{mems[0], mems[1], mems[2], args[0], args[1], static_cast<int>(n.imms[0]), -1, n.loc};
      accumulators_in_flight(c_, t, op);
      t.wgmma.push_back(op);
      return;
    }
    case IntrinsicOp::WgmmaCommit:
      for (auto& op : t.wgmma)
        if (op.group < 0) op.group = t.wgmma_groups;
      ++t.wgmma_groups;
      return;
    case IntrinsicOp::WgmmaWait: complete_wgmma(t, t.wgmma_groups - n.imms[0]); return;
    case IntrinsicOp::WgmmaFence:
    case IntrinsicOp::SetMaxNreg: return;  // orders registers, sizes them: nothing the interpreter holds
    default: throw InternalError(std::string("interp: ") + user_name(n.op) + " is not a Hopper instruction");
  }
}

void Hopper::tma_store(Thread& t, const Source& tma, const Ref& src, std::int64_t first, const Ref& dst,
                       std::int64_t row0, std::int64_t col0, SourceLoc loc) {
  if (tma.cols < 0 || tma.rows < 0 || (tma.cols > 0 && tma.rows > dst.region->length / tma.cols))
    throw ExecutionError("memcheck",
                         "tensor map " + tma.map->name + " covers " + std::to_string(tma.rows) + " x " +
                             std::to_string(tma.cols) + " elements of '" + dst.region->name + "', which has " +
                             std::to_string(dst.region->length) + " (a GPU launch refuses it)",
                         {loc, tma.map->loc});
  const std::int64_t eb = type_bytes(src.region->elem);
  if (((src.offset + first) * eb) % 1024 != 0 || tma.map->box_cols * eb != kSwizzleRow)
    throw InternalError("interp: a TMA box at " + where(loc) + " off the 128-byte swizzle's 1024-byte atoms");
  // The box is read as the instruction issues and written to the matrix, elements past it left out;
  // the source stays the store's until t waits for it.
  BulkStore s{src.region, {}, loc};
  for (std::int64_t r = 0; r < tma.map->box_rows; ++r)
    for (std::int64_t col = 0; col < tma.map->box_cols; ++col) {
      const std::int64_t at = swizzled(src, first, r, col);
      c_.proven(t, src, at, false, loc);  // V1009: the box is proven inside its array
      const std::int64_t i = c_.bounds(t, src, at, loc, "reads");
      c_.read(t, *src.region, i, loc, kPlain);
      s.elements.push_back(i);
      const std::int64_t gr = row0 + r, gc = col0 + col;
      if (gr >= 0 && gr < tma.rows && gc >= 0 && gc < tma.cols)
        checked_write(c_, t, dst, gr * tma.cols + gc, load_raw(*src.region, i), loc);
    }
  for (std::int64_t i : s.elements) c_.in_flight(t, *src.region, i, loc, kStoreRead);
  t.stores.push_back(std::move(s));
}

void Hopper::complete_stores(Thread& t, std::size_t keep) {
  if (t.stores.size() <= keep) return;
  const auto done = static_cast<std::ptrdiff_t>(t.stores.size() - keep);
  for (auto it = t.stores.begin(); it != t.stores.begin() + done; ++it)
    for (std::int64_t i : it->elements) it->src->inflight.erase(i);
  t.stores.erase(t.stores.begin(), t.stores.begin() + done);
  for (const auto& s : t.stores)  // what is still read stays so
    for (std::int64_t i : s.elements) c_.in_flight(t, *s.src, i, s.loc, kStoreRead);
}

void Hopper::end_thread(const Thread& t) const {
  if (t.stores.empty()) return;
  const BulkStore& s = t.stores.front();
  throw ExecutionError("synccheck",
                       c_.describe(t) + " ends with the TMA store at " + where(s.loc) +
                           (t.stores.size() > 1 ? " (and " + std::to_string(t.stores.size() - 1) + " more)" : "") +
                           " still reading shared '" + s.src->name +
                           "', which ends with the block; wait for it first (tma_store_wait(0))",
                       {s.loc});
}

void Hopper::remote(const Thread& t, std::int64_t rank, const char* what, SourceLoc loc) {
  remote_[{t.run, rank}] = {c_.clock(t.run, t.run), c_.block_of(t), t.tid, what, loc};
}

void Hopper::end_blocks(const std::vector<Thread>& threads, std::int64_t T) const {
  for (const auto& [key, r] : remote_) {
    const auto& [run, rank] = key;
    bool seen = false;
    for (std::int64_t u = rank * T; u < (rank + 1) * T && !seen; ++u) seen = c_.clock(u, run) >= r.clock;
    if (seen) continue;
    const Thread& target = threads[static_cast<std::size_t>(rank * T)];
    throw ExecutionError("synccheck",
                         "block " + std::to_string(c_.block_of(target)) + " may end while the " + r.what +
                             " into its shared memory by block " + std::to_string(r.block) + " thread " +
                             std::to_string(r.thread) + " at " + where(r.loc) +
                             " is still on its way: no thread of the block waited for it; end the blocks of a "
                             "cluster with a cluster_sync",
                         {r.loc});
  }
}

void Hopper::complete_wgmma(Thread& t, std::int64_t group) {
  std::vector<WgmmaOp> left;
  for (auto& op : t.wgmma) {
    if (op.group >= 0 && op.group < group)
      wgmma_part(c_, t, op);
    else
      left.push_back(op);
  }
  t.wgmma = std::move(left);
  for (const auto& op : t.wgmma) accumulators_in_flight(c_, t, op);  // what is still in flight stays so
}

std::exception_ptr hang(std::int64_t block, std::int64_t cluster, std::int64_t threads_per_block,
                        const std::vector<Fibers::Wait>& waits) {
  // The threads that wait for the same thing (in a cluster: in the same block), as runs of thread
  // numbers (Wait::who is Thread::run).
  std::map<std::pair<std::int64_t, std::string>, std::vector<std::int64_t>> who;
  for (const auto& w : waits) who[{w.who / threads_per_block, w.what}].push_back(w.who % threads_per_block);
  std::string what;
  for (auto& [key, threads] : who) {
    const auto& [rank, place] = key;
    std::sort(threads.begin(), threads.end());
    std::string runs;
    for (std::size_t i = 0; i < threads.size();) {
      std::size_t j = i;
      while (j + 1 < threads.size() && threads[j + 1] == threads[j] + 1) ++j;
      runs += (runs.empty() ? "" : ", ") + std::to_string(threads[i]) +
              (j > i ? " to " + std::to_string(threads[j]) : std::string());
      i = j + 1;
    }
    what += "\n  " + (cluster > 1 ? "block " + std::to_string(block + rank) + " " : std::string()) +
            std::string(threads.size() > 1 ? "threads " : "thread ") + runs + " wait" +
            (threads.size() > 1 ? "" : "s") + " " + place;
  }
  return std::make_exception_ptr(ExecutionError(
      "synccheck",
      (cluster > 1 ? "the cluster of blocks " + std::to_string(block) + " to " + std::to_string(block + cluster - 1)
                   : "block " + std::to_string(block)) +
          " cannot go on: every thread still running waits at an mbarrier "
          "whose phase nothing left can complete (on a GPU the " +
          (cluster > 1 ? "cluster" : "block") + " hangs):" + what,
      {}));
}

}  // namespace vantage::interp::detail
