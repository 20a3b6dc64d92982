// Vantage CPU device: see cpu_pool.h.
#include "runtime/cpu_pool.h"

#include <algorithm>
#include <atomic>
#include <condition_variable>
#include <cstdlib>
#include <deque>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

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
    have = n;
  }
};
Buffers& buffers() {
  thread_local Buffers b;
  return b;
}

struct Job {
  std::int64_t blocks = 0;
  std::int64_t shared_bytes = 0, scratch_bytes = 0;
  const std::function<void(std::int64_t, void*, void*)>* block = nullptr;
  std::atomic<std::int64_t> next{0};
  std::atomic<std::int64_t> done{0};
  std::mutex mu;
  std::condition_variable finished;

  /// Takes blocks until none is left.
  void work() {
    Buffers& b = buffers();
    bool ready = false;
    for (std::int64_t i = next++; i < blocks; i = next++) {
      if (!ready) {
        Buffers::grow(b.shared, b.shared_bytes, shared_bytes);
        Buffers::grow(b.scratch, b.scratch_bytes, scratch_bytes);
        ready = true;
      }
      (*block)(i, b.shared.get(), b.scratch.get());
      if (++done == blocks) {
        std::lock_guard lock(mu);
        finished.notify_all();
      }
    }
  }
};

class Pool {
 public:
  static Pool& get() {
    static Pool p;
    return p;
  }
  void post(std::shared_ptr<Job> job, int helpers) {
    {
      std::lock_guard lock(mu_);
      while (static_cast<int>(workers_.size()) < helpers) workers_.emplace_back([this] { loop(); });
      for (int i = 0; i < helpers; ++i) queue_.push_back(job);
    }
    cv_.notify_all();
  }
  ~Pool() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : workers_) t.join();
  }

 private:
  void loop() {
    while (true) {
      std::shared_ptr<Job> job;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        job = std::move(queue_.front());
        queue_.pop_front();
      }
      job->work();
    }
  }
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<std::shared_ptr<Job>> queue_;
  std::vector<std::thread> workers_;
  bool stop_ = false;
};

}  // namespace

void run(std::int64_t blocks, int threads, std::int64_t shared_bytes, std::int64_t scratch_bytes,
         const std::function<void(std::int64_t, void*, void*)>& block) {
  if (blocks <= 0) return;
  auto job = std::make_shared<Job>();
  job->blocks = blocks;
  job->shared_bytes = shared_bytes;
  job->scratch_bytes = scratch_bytes;
  job->block = &block;
  int helpers = static_cast<int>(std::min<std::int64_t>(std::max(threads, 1), blocks)) - 1;
  if (helpers > 0) Pool::get().post(job, helpers);
  job->work();
  // Helpers that start late find no block left and only touch the job, which they keep alive.
  std::unique_lock lock(job->mu);
  job->finished.wait(lock, [&] { return job->done.load() == blocks; });
}

}  // namespace vantage::cpu_pool
