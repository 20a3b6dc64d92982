// Vantage CPU device: the host threads a launch spreads its blocks over. A launch takes blocks from
// one counter on the calling thread and on up to `threads - 1` pool workers; it returns when every
// block has run. Each thread has its own shared and scratch memory, grown to what the kernel needs.
#pragma once

#include <cstdint>
#include <functional>

namespace vantage::cpu_pool {

/// Runs `block(b, shared, scratch)` for every b in [0, blocks) on up to `threads` host threads.
/// `shared_bytes` and `scratch_bytes` are what one block needs (64-byte aligned buffers).
void run(std::int64_t blocks, int threads, std::int64_t shared_bytes, std::int64_t scratch_bytes,
         const std::function<void(std::int64_t block, void* shared, void* scratch)>& block);

}  // namespace vantage::cpu_pool
