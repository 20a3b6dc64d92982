// Vantage worker threads: the library's one way to keep threads. A `Workers` runs queued tasks on
// threads it starts when asked for them and joins at exit; a task is called with its worker's
// number (1, 2, ...; 0 is the caller's, for work it shares). There are two: the library's
// background workers (`background()`: every compile it makes off the caller's thread, for
// `prepare`, `compile_many` and the tuner), which grow so that a queued task never waits for a
// worker (a task may wait on another it queued); and the CPU device's, its cores, which poll
// before they sleep: a wake-up through the kernel costs tens of microseconds on a VM, as much as a
// small CPU launch (OpenMP runtimes poll too, for longer).
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <deque>
#include <exception>
#include <functional>
#include <mutex>
#include <thread>
#include <utility>
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
  /// `grow`: start a worker whenever fewer are idle than tasks are queued, so that a task never
  /// waits behind busy ones (tasks may wait for tasks they queue).
  explicit Workers(std::chrono::microseconds spin = {}, bool grow = false) : spin_(spin), grow_(grow) {}
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
      auto idle = [&] { return static_cast<int>(threads_.size()) - busy_; };
      while (static_cast<int>(threads_.size()) < threads ||
             (grow_ && idle() < static_cast<int>(queue_.size()) + copies)) {
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
        if (grow_) ++busy_;
      }
      task(w);
      if (grow_) {
        std::lock_guard lock(mu_);
        --busy_;
      }
    }
  }

  const std::chrono::microseconds spin_;
  const bool grow_;
  int busy_ = 0;  ///< workers running a task (counted when `grow_`)
  std::mutex mu_;
  std::condition_variable cv_;
  std::deque<Task> queue_;
  std::atomic<int> queued_{0};  ///< queue_.size(), polled without the lock by workers about to sleep
  std::vector<std::thread> threads_;
  bool stop_ = false;
};

/// The library's background workers: compiles made off the caller's thread.
Workers<std::function<void(int)>>& background();

/// Tasks run on the background workers and waited for together: `wait` returns when every task
/// run so far has finished, and rethrows the first exception one of them threw. The destructor
/// waits too (and keeps any exception to itself), so that no task outlives what it refers to.
class TaskGroup {
 public:
  TaskGroup() = default;
  TaskGroup(const TaskGroup&) = delete;
  TaskGroup& operator=(const TaskGroup&) = delete;
  ~TaskGroup() { finish(); }

  void run(std::function<void()> task) {
    {
      std::lock_guard lock(mu_);
      ++pending_;
    }
    background().post(
        [this, task = std::move(task)](int) {
          std::exception_ptr error;
          try {
            task();
          } catch (...) {
            error = std::current_exception();
          }
          std::lock_guard lock(mu_);
          if (error && !error_) error_ = error;
          if (--pending_ == 0) done_.notify_all();
        },
        0);
  }
  void wait() {
    if (std::exception_ptr e = finish()) std::rethrow_exception(e);
  }

 private:
  std::exception_ptr finish() {
    std::unique_lock lock(mu_);
    done_.wait(lock, [&] { return pending_ == 0; });
    return std::exchange(error_, nullptr);
  }
  std::mutex mu_;
  std::condition_variable done_;
  int pending_ = 0;
  std::exception_ptr error_;
};

}  // namespace vantage::support
