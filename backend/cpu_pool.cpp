// Vantage CPU device: see cpu_pool.h.
#include "backend/cpu_pool.h"

#include <algorithm>
#include <atomic>
#include <chrono>
#include <condition_variable>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

#include "support/workers.h"

namespace vantage::cpu_pool {
namespace {

/// A thread's shared and scratch memory, kept between launches.
struct Buffers {
  struct Free {
    void operator()(void* p) const { std::free(p); }
  };
  std::unique_ptr<void, Free> shared, scratch;
  std::int64_t shared_bytes = 0, scratch_bytes = 0;
  static void grow(std::unique_ptr<void, Free>& p, std::int64_t& have, std::int64_t need) {
    if (need <= have && p) return;
    std::int64_t n = std::max<std::int64_t>(64, (need + 63) / 64 * 64);
    p.reset(std::aligned_alloc(64, static_cast<std::size_t>(n)));
    if (!p) throw std::bad_alloc();
    // Written once here so that its pages are mapped and writable: a masked store whose mask is
    // empty (the reports of checks that did not fail) into a page never written costs a microcode
    // assist each time on some CPUs (20 times slower sgemm on this host).
    std::memset(p.get(), 0, static_cast<std::size_t>(n));
    have = n;
  }
};
/// How long an idle thread (a pool worker, or a launch waiting for its helpers) polls before it
/// sleeps. A wake-up through the kernel costs tens of microseconds on a VM, as much as a whole
/// small launch; an autotuner or an application launching in a loop keeps its workers awake, and
/// an idle pool sleeps after this long (OpenMP runtimes do the same, for longer).
constexpr auto kSpin = std::chrono::microseconds(200);

Buffers& buffers() {
  thread_local Buffers b;
  return b;
}

/// One launch's blocks, cut into one share per thread that takes part: the calling thread's share is
/// the first, and pool worker w asks for share w + 1. A thread runs its own share in chunks, then
/// takes what is left of the others' (a thread that started late, or ran slowly, is relieved). Each
/// worker thus runs the same blocks launch after launch, and finds their data in its own core's
/// cache: with one counter for all, the blocks landed on either thread by chance, and a repeated
/// launch whose data fits in the caches gained nothing from a second thread in half the runs
/// (saxpy 2^20: 0.083 against 0.048 ms, git show dca9549:docs/performance.md).
struct Job {
  struct alignas(64) Share {
    std::atomic<std::int64_t> next{0};  ///< the next chunk's first block (past `end` once taken)
    std::int64_t end = 0;
    std::atomic<bool> claimed{false};
  };
  std::int64_t blocks = 0;
  std::int64_t shared_bytes = 0, scratch_bytes = 0;
  const std::function<void(std::int64_t, std::int64_t, void*, void*)>* body = nullptr;
  std::atomic<std::int64_t> done{0};
  std::mutex mu;
  std::condition_variable finished;

  std::int64_t chunk = 1;  ///< blocks taken at a time (a shared counter per block costs more than a small block)
  int parts = 1;
  std::unique_ptr<Share[]> shares;

  Job(std::int64_t blocks_, int parts_) : blocks(blocks_), parts(parts_), shares(new Share[parts_]) {
    for (int p = 0; p < parts; ++p) {
      shares[p].next.store(blocks * p / parts, std::memory_order_relaxed);
      shares[p].end = blocks * (p + 1) / parts;
    }
  }

  /// The share a thread starts from: `preferred` if no other thread has it, else any unclaimed one,
  /// else `preferred` anyway (it only decides where the thread starts taking chunks).
  int claim(int preferred) {
    preferred = preferred % parts;
    for (int k = 0; k < parts; ++k) {
      int p = (preferred + k) % parts;
      bool no = false;
      if (shares[p].claimed.compare_exchange_strong(no, true)) return p;
    }
    return preferred;
  }

  /// Takes chunks of blocks, its own share's first, until none is left.
  void work(int preferred) {
    Buffers& b = buffers();
    bool ready = false;
    const int own = claim(preferred);
    for (int k = 0; k < parts; ++k) {
      Share& s = shares[(own + k) % parts];
      for (std::int64_t first = s.next.fetch_add(chunk); first < s.end; first = s.next.fetch_add(chunk)) {
        if (!ready) {
          Buffers::grow(b.shared, b.shared_bytes, shared_bytes);
          Buffers::grow(b.scratch, b.scratch_bytes, scratch_bytes);
          ready = true;
        }
        std::int64_t last = std::min(s.end, first + chunk);
        (*body)(first, last, b.shared.get(), b.scratch.get());
        if (done.fetch_add(last - first) + (last - first) == blocks) {
          std::lock_guard lock(mu);
          finished.notify_all();
        }
      }
    }
  }
};

/// A helper's share of a launch.
struct Help {
  std::shared_ptr<Job> job;
  void operator()(int worker) const { job->work(worker); }
};

support::Workers<Help>& workers() {
  static support::Workers<Help> w(kSpin);
  return w;
}

}  // namespace

void run(std::int64_t blocks, int threads, std::int64_t shared_bytes, std::int64_t scratch_bytes,
         const std::function<void(std::int64_t, std::int64_t, void*, void*)>& body) {
  if (blocks <= 0) return;
  int helpers = static_cast<int>(std::min<std::int64_t>(std::max(threads, 1), blocks)) - 1;
  auto job = std::make_shared<Job>(blocks, helpers + 1);
  job->shared_bytes = shared_bytes;
  job->scratch_bytes = scratch_bytes;
  job->body = &body;
  // About 16 chunks per thread: few trips to the shared counters, and still a balanced end.
  job->chunk = std::max<std::int64_t>(1, blocks / (16 * (helpers + 1)));
  if (helpers > 0) workers().post(Help{job}, helpers, helpers);
  job->work(0);
  // Helpers that start late find no block left and only touch the job, which they keep alive.
  if (helpers > 0 && support::spin_until([&] { return job->done.load(std::memory_order_acquire) == blocks; }, kSpin))
    return;
  std::unique_lock lock(job->mu);
  job->finished.wait(lock, [&] { return job->done.load() == blocks; });
}

}  // namespace vantage::cpu_pool
