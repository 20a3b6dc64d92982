// Vantage CPU device: the host threads a launch spreads its blocks over. A launch runs its blocks on
// the calling thread and on up to `threads - 1` pool workers, each starting from a share of its own
// (the same one launch after launch, so that its data stays in its core's cache) and then taking
// what is left of the others'; it returns when every block has run. Each thread has its own shared
// and scratch memory, grown to what the kernel needs.
#pragma once

#include <cstdint>
#include <functional>

namespace vantage::cpu_pool {

/// Runs `body(first, last, shared, scratch)` over chunks [first, last) that together cover
/// [0, blocks), on up to `threads` host threads; `body` runs the chunk's blocks one after the other
/// with the thread's buffers. `shared_bytes` and `scratch_bytes` are what one block needs (64-byte
/// aligned buffers).
void run(std::int64_t blocks, int threads, std::int64_t shared_bytes, std::int64_t scratch_bytes,
         const std::function<void(std::int64_t first, std::int64_t last, void* shared, void* scratch)>& body);

}  // namespace vantage::cpu_pool
