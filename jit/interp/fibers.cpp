// The interpreter's fibers: see fibers.h. One OS thread a fiber, handed the run by a flag under the
// fiber's own mutex, so exactly one runs at a time and every hand-over orders memory (the sanitizers
// see a mutex, not a context switch they cannot follow).
#include "jit/interp/fibers.h"

#include <algorithm>
#include <stdexcept>
#include <system_error>

namespace vantage::interp::detail {

struct Fibers::Fiber {
  std::mutex m;
  std::condition_variable cv;
  bool go = false;  ///< under m: this fiber has been handed the run
  std::thread thread;
  std::function<void()> body;
  bool done = false, cancel = false;
  bool waiting = false;    ///< it waits, and had seen `seen` events when it last looked
  std::uint64_t seen = 0;  ///< the progress count then
  Describe what;
  std::exception_ptr error;
  std::uint64_t failed = 0;  ///< when it failed, in events: the first failure is the one reported
};

Fibers::Fibers(Stuck stuck) : stuck_(std::move(stuck)), main_(std::make_unique<Fiber>()) {
  live_.push_back(main_.get());
  current_ = main_.get();
}

Fibers::~Fibers() = default;

void Fibers::switch_to(Fiber* me, Fiber* next, bool ended) {
  current_ = next;
  {
    std::lock_guard<std::mutex> lock(next->m);
    next->go = true;
  }
  next->cv.notify_one();
  if (ended) return;  // the OS thread ends; nothing of the machine is touched after the hand-over
  std::unique_lock<std::mutex> lock(me->m);
  me->cv.wait(lock, [&] { return me->go; });
  me->go = false;
}

auto Fibers::after(const Fiber* me) const -> Fiber* {
  auto it = std::find(live_.begin(), live_.end(), me);
  if (it == live_.end() || ++it == live_.end()) return live_.front();
  return *it;
}

void Fibers::entry(Fiber* f) {
  {
    std::unique_lock<std::mutex> lock(f->m);
    f->cv.wait(lock, [&] { return f->go; });
    f->go = false;
  }
  if (!f->cancel) {
    try {
      f->body();
    } catch (const Cancelled&) {
    } catch (...) {
      f->error = std::current_exception();
      f->failed = ++progress_;
    }
  }
  f->done = true;
  ++progress_;
  Fiber* next = after(f);
  live_.erase(std::find(live_.begin(), live_.end(), f));
  switch_to(f, next, true);
}

void Fibers::yield(bool stopping) {
  Fiber* me = current_;
  Fiber* next = after(me);
  if (next != me) switch_to(me, next, false);
  if (me->cancel && !stopping) throw Cancelled{};
}

void Fibers::wait_until(const std::function<bool()>& ready, const Describe& what) {
  Fiber* me = current_;
  while (!ready()) {
    me->waiting = true;
    me->seen = progress_;
    me->what = what;
    const bool stuck =
        std::all_of(live_.begin(), live_.end(), [&](const Fiber* f) { return f->waiting && f->seen == progress_; });
    if (stuck) {
      std::vector<Wait> waits;
      for (const Fiber* f : live_)
        if (f->what) waits.push_back(f->what());
      me->waiting = false;
      me->what = nullptr;
      std::rethrow_exception(stuck_(waits));
    }
    try {
      yield();
    } catch (...) {
      me->waiting = false;
      me->what = nullptr;
      throw;
    }
  }
  me->waiting = false;
  me->what = nullptr;
}

void Fibers::stop(const std::vector<Fiber*>& children) {
  for (;;) {
    bool left = false;
    for (Fiber* f : children)
      if (!f->done) {
        f->cancel = true;
        left = true;
      }
    if (!left) return;
    yield(true);
  }
}

void Fibers::run_all(std::vector<std::function<void()>> bodies) {
  if (bodies.empty()) return;
  Fiber* me = current_;
  std::vector<std::unique_ptr<Fiber>> own;
  std::vector<Fiber*> kids;
  auto at = std::find(live_.begin(), live_.end(), me) + 1;  // they run next, in their order
  for (auto& b : bodies) {
    own.push_back(std::make_unique<Fiber>());
    own.back()->body = std::move(b);
    kids.push_back(own.back().get());
  }
  live_.insert(at, kids.begin(), kids.end());
  auto join = [&] {
    for (Fiber* f : kids)
      if (f->thread.joinable()) f->thread.join();
  };
  try {
    for (Fiber* f : kids) f->thread = std::thread(&Fibers::entry, this, f);
  } catch (const std::system_error& e) {  // the host would not start another thread
    for (Fiber* f : kids)
      if (!f->thread.joinable()) {  // never started: ended as it stands
        f->done = true;
        live_.erase(std::find(live_.begin(), live_.end(), f));
      }
    stop(kids);
    join();
    throw std::runtime_error("the interpreter runs each of " + std::to_string(kids.size()) +
                             " threads that wait on mbarriers on a host thread of its own, and the host would not "
                             "start one more (" +
                             e.what() + ")");
  }
  try {
    wait_until(
        [&] {
          bool all = true;
          for (const Fiber* f : kids) {
            if (f->error) return true;
            all = all && f->done;
          }
          return all;
        },
        nullptr);
  } catch (...) {  // stopped itself, or no fiber could go on
    stop(kids);
    join();
    throw;
  }
  stop(kids);
  join();
  const Fiber* first = nullptr;
  for (const Fiber* f : kids)
    if (f->error && (!first || f->failed < first->failed)) first = f;
  if (first) std::rethrow_exception(first->error);
}

}  // namespace vantage::interp::detail
