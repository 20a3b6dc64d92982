// Vantage shared-memory layout, defined once: where every shared array of a body lives, where each
// call's callee gets its shared budget, and the peak. The checker holds the layout against the
// shared budget and the emitter prints its offsets, so the bytes checked are the bytes emitted.
//
// Every array (and every callee's region) starts at a multiple of 16 bytes, which vector accesses,
// cp.async and ldmatrix need, or of the larger power of two it asks for (TMA and wgmma tiles: 1024); an array is freed
// at the end of the body (Seq) that allocated it.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

#include "jit/ir/ir.h"

namespace vantage::ir {

inline constexpr std::int64_t kSharedAlignment = 16;

struct SharedSlot {
  std::int64_t offset = 0;  ///< bytes from the start of the block's (or the function's) shared memory
  std::int64_t bytes = 0;   ///< the array's size (0 when its count is not a valid constant)
  std::int64_t end = 0;     ///< offset + bytes: the memory in use once it is allocated
  bool size_known = false;  ///< count is a constant and count * element size fits 64 bits
};

struct SharedLayout {
  std::unordered_map<const MemNode*, SharedSlot> arrays;
  /// For each call of a function with a shared budget: where its region starts and ends.
  std::unordered_map<const StmtNode*, SharedSlot> calls;
  std::int64_t peak = 0;                  ///< the most bytes in use at once, `pad()` included
  std::int64_t align = kSharedAlignment;  ///< the largest alignment an array asks for
  /// Bytes reserved so that the kernel can align its shared memory to `align` (`shared_aligned`):
  /// `align` less 16, or 0. Offsets are from that aligned base.
  std::int64_t pad() const { return align - kSharedAlignment; }
};

/// The rules, applied statement by statement, so that a walk that visits a body anyway (the checker)
/// builds the layout without a second walk: `open`/`close` around each body (Seq), `allocate` at each
/// shared array, `call` at each call of a function with a shared budget.
class SharedLayoutBuilder {
 public:
  void open() { saved_.push_back(top_); }
  void close() {
    top_ = saved_.back();  // arrays live until the end of the body that allocated them
    saved_.pop_back();
  }
  const SharedSlot& allocate(const SharedAlloc& n);
  const SharedSlot& call(const Call& n);
  const SharedLayout& layout() const { return layout_; }
  SharedLayout take() { return std::move(layout_); }

 private:
  std::int64_t top_ = 0, raw_peak_ = 0;
  std::vector<std::int64_t> saved_;
  SharedLayout layout_;
};

/// The layout of the shared arrays `body` allocates and the budgets of the functions it calls.
SharedLayout layout_shared(const StmtPtr& body);

/// The element count of a shared array and its bytes, when its count is a valid constant; nullopt
/// otherwise (not constant, not positive, or more bytes than 64 bits hold).
std::optional<std::int64_t> shared_bytes(const SharedAlloc& alloc);

}  // namespace vantage::ir
