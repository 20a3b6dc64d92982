// Vantage worker threads: the library's one way to keep threads for background work. A `Workers`
// runs queued tasks on threads it starts when asked for them and joins at exit; a task is called
// with its worker's number (1, 2, ...; 0 is the caller's, for work it shares). Workers about to
// sleep may poll first: a wake-up through the kernel costs tens of microseconds on a VM, as much as
// a small CPU launch, so the CPU device's workers poll (OpenMP runtimes do the same, for longer)
// and the compile workers do not.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <mutex>
#include <thread>
#include <vector>

namespace vantage::support {

inline void relax() {
#if defined(__x86_64__) || defined(__i386__)
  __builtin_ia32_pause();
#elif defined(__aarch64__)
  asm volatile("yield");
#endif
}

/// Polls `ready()` for up to `spin`; true when it became true.
template <class F>
bool spin_until(F ready, std::chrono::microseconds spin) {
  auto until = std::chrono::steady_clock::now() + spin;
  for (int i = 0;; ++i) {
    if (ready()) return true;
    if ((i & 63) == 63 && std::chrono::steady_clock::now() > until) return false;
    relax();
  }
}

/// Threads that run queued `Task`s (callables taking the worker's number).
template <class Task>
class Workers {
 public:
  /// `spin`: how long an idle worker polls the queue before it sleeps (0: it sleeps at once).
  explicit Workers(std::chrono::microseconds spin = {}) : spin_(spin) {}
  Workers(const Workers&) = delete;
  Workers& operator=(const Workers&) = delete;
  /// Finishes the queued tasks, then joins every worker.
  ~Workers() {
    {
      std::lock_guard lock(mu_);
      stop_ = true;
    }
    cv_.notify_all();
    for (auto& t : threads_) t.join();
  }

  /// Queues `copies` copies of `task`, with at least `threads` workers started.
  void post(const Task& task, int threads, int copies = 1) {
    {
      std::lock_guard lock(mu_);
      while (static_cast<int>(threads_.size()) < threads) {
        int w = static_cast<int>(threads_.size()) + 1;
        threads_.emplace_back([this, w] { loop(w); });
      }
      for (int i = 0; i < copies; ++i) queue_.push_back(task);
      queued_.store(static_cast<int>(queue_.size()), std::memory_order_release);
    }
    if (copies == 1)
      cv_.notify_one();
    else
      cv_.notify_all();
  }

 private:
  void loop(int w) {
    while (true) {
      if (spin_.count() > 0) spin_until([&] { return queued_.load(std::memory_order_acquire) > 0; }, spin_);
      Task task;
      {
        std::unique_lock lock(mu_);
        cv_.wait(lock, [&] { return stop_ || !queue_.empty(); });
        if (queue_.empty()) return;
        task = std::move(queue_.front());
        queue_.pop_front();
        queued_.store(static_cast<int>(queue_.size()), std::memory_order_release);
      }
      task(w);
    }
  }

  const std::chrono::microseconds spin_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  std::atomic<int> queued_{0};  ///< queue_.size(), polled without the lock by workers about to sleep
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

}  // namespace vantage::support
