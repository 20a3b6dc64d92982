// The interpreter's fibers: see fibers.h. Each fiber is a context (ucontext) with a stack of its own
// on the OS thread that runs the interpreter; a hand-over is a swapcontext, so exactly one fiber runs
// at a time. The sanitizers are told of every switch (ASan of the stack it moves to, TSan of the
// fiber), so they follow the fibers as they followed the OS threads the fibers once were.
//
// No fiber switches while it handles an exception: the C++ runtime keeps the exceptions being
// handled per OS thread, so a switch there would let another fiber's handling push onto the same
// stack. Handlers here take the exception (std::current_exception) and act on it after leaving.
#include "jit/interp/fibers.h"

#include <sys/mman.h>
#include <ucontext.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <utility>

#if defined(__SANITIZE_ADDRESS__)
#include <sanitizer/asan_interface.h>
#include <sanitizer/common_interface_defs.h>
#define VANTAGE_FIBERS_ASAN 1
#endif
#if defined(__SANITIZE_THREAD__)
#include <sanitizer/tsan_interface.h>
#define VANTAGE_FIBERS_TSAN 1
#endif

namespace vantage::interp::detail {

namespace {
/// A fiber's stack: as much as an OS thread's (the interpreter recurses over statements and
/// expressions), reserved, not committed, with a page below it that faults on an overflow.
constexpr std::size_t kStackBytes = std::size_t{8} << 20;
}  // namespace

struct Fibers::Stack {
  void* mapping = nullptr;  ///< the guard page, then the stack
  std::size_t bytes = 0;    ///< of the mapping
  Stack() = default;
  Stack(Stack&& o) noexcept : mapping(std::exchange(o.mapping, nullptr)), bytes(std::exchange(o.bytes, 0)) {}
  Stack& operator=(Stack&& o) noexcept {
    std::swap(mapping, o.mapping);
    std::swap(bytes, o.bytes);
    return *this;
  }
  ~Stack() {
    if (!mapping) return;
    unpoison();  // or memory mapped there later would inherit it
    munmap(mapping, bytes);
  }
  /// A fiber ends without returning from its first frames (start, entry, switch_to), whose redzones
  /// ASan still has poisoned: the stack is clean again before another fiber or mapping takes it.
  void unpoison() const {
#if VANTAGE_FIBERS_ASAN
    __asan_unpoison_memory_region(bottom(), size());
#endif
  }
  static std::size_t guard() {
    static const auto page = static_cast<std::size_t>(sysconf(_SC_PAGESIZE));
    return page;
  }
  void* bottom() const { return static_cast<char*>(mapping) + guard(); }
  std::size_t size() const { return bytes - guard(); }
};

struct Fibers::Fiber {
  Fibers* owner = nullptr;
  ucontext_t context{};
  Stack stack;  ///< none for the main fiber, which runs on the stack of the interpreter's caller
  std::function<void()> body;
  bool done = false, cancel = false;
  bool waiting = false;    ///< it waits, and had seen `seen` events when it last looked
  std::uint64_t seen = 0;  ///< the progress count then
  Describe what;
  std::exception_ptr error;
  std::uint64_t failed = 0;  ///< when it failed, in events: the first failure is the one reported
#if VANTAGE_FIBERS_ASAN
  const void* asan_bottom = nullptr;  ///< the stack ASan is told of when the run moves here
  std::size_t asan_size = 0;
#endif
#if VANTAGE_FIBERS_TSAN
  void* tsan = nullptr;
#endif
};

Fibers::Fibers(Stuck stuck) : stuck_(std::move(stuck)), main_(std::make_unique<Fiber>()) {
  main_->owner = this;
#if VANTAGE_FIBERS_TSAN
  main_->tsan = __tsan_get_current_fiber();
#endif
  live_.push_back(main_.get());
  current_ = main_.get();
}

Fibers::~Fibers() = default;

auto Fibers::take_stack() -> Stack {
  if (!spare_.empty()) {
    Stack s = std::move(spare_.back());
    spare_.pop_back();
    s.unpoison();
    return s;
  }
  Stack s;
  s.bytes = kStackBytes + Stack::guard();
  void* m =
      mmap(nullptr, s.bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE | MAP_STACK, -1, 0);
  if (m == MAP_FAILED)
    throw std::runtime_error(std::string("the interpreter runs each thread that waits on mbarriers as a fiber, and "
                                         "the host would not map one more fiber's stack (") +
                             std::strerror(errno) + ")");
  s.mapping = m;
  // The guard page; without it an overflow would run into whatever is mapped below, unseen.
  if (mprotect(m, Stack::guard(), PROT_NONE) != 0)
    throw std::runtime_error(std::string("the interpreter could not protect a fiber stack's guard page (") +
                             std::strerror(errno) + ")");
  return s;
}

void Fibers::switch_to(Fiber* me, Fiber* next, bool ended) {
  current_ = next;
#if VANTAGE_FIBERS_ASAN
  void* fake = nullptr;
  // An ended fiber's fake stack goes with it (null). The main fiber's stack is learnt in start(),
  // where the first switch out of it lands, before anything switches back to it.
  __sanitizer_start_switch_fiber(ended ? nullptr : &fake, next->asan_bottom, next->asan_size);
#endif
#if VANTAGE_FIBERS_TSAN
  __tsan_switch_to_fiber(next->tsan, 0);  // 0: the switch orders memory, as the hand-over does
#endif
  if (ended) {
    setcontext(&next->context);  // does not return: the ended fiber's stack is left as it stands
    std::terminate();
  }
  swapcontext(&me->context, &next->context);
#if VANTAGE_FIBERS_ASAN
  const void* from_bottom = nullptr;
  std::size_t from_size = 0;
  __sanitizer_finish_switch_fiber(fake, &from_bottom, &from_size);
#endif
}

auto Fibers::after(const Fiber* me) const -> Fiber* {
  auto it = std::find(live_.begin(), live_.end(), me);
  if (it == live_.end() || ++it == live_.end()) return live_.front();
  return *it;
}

void Fibers::start(unsigned lo, unsigned hi) {
  auto* f = reinterpret_cast<Fiber*>(static_cast<std::uintptr_t>(lo) | static_cast<std::uintptr_t>(hi) << 32);
#if VANTAGE_FIBERS_ASAN
  // The fiber that switched here: the first switch out of the main fiber tells its stack.
  const void* from_bottom = nullptr;
  std::size_t from_size = 0;
  __sanitizer_finish_switch_fiber(nullptr, &from_bottom, &from_size);
  Fiber* main = f->owner->main_.get();
  if (!main->asan_bottom) {
    main->asan_bottom = from_bottom;
    main->asan_size = from_size;
  }
#endif
  f->owner->entry(f);
}

void Fibers::entry(Fiber* f) {
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
  for (auto& b : bodies) {
    auto f = std::make_unique<Fiber>();
    f->owner = this;
    f->body = std::move(b);
    f->stack = take_stack();
    getcontext(&f->context);
    f->context.uc_stack.ss_sp = f->stack.bottom();
    f->context.uc_stack.ss_size = f->stack.size();
    f->context.uc_link = nullptr;  // a fiber never returns from start(): it switches away for good
    const auto address = reinterpret_cast<std::uintptr_t>(f.get());
    makecontext(&f->context, reinterpret_cast<void (*)()>(&Fibers::start), 2,
                static_cast<unsigned>(address & 0xffffffffu), static_cast<unsigned>(address >> 32));
#if VANTAGE_FIBERS_ASAN
    f->asan_bottom = f->stack.bottom();
    f->asan_size = f->stack.size();
#endif
#if VANTAGE_FIBERS_TSAN
    f->tsan = __tsan_create_fiber(0);
#endif
    kids.push_back(f.get());
    own.push_back(std::move(f));
  }
  auto at = std::find(live_.begin(), live_.end(), me) + 1;  // they run next, in their order
  live_.insert(at, kids.begin(), kids.end());
  std::exception_ptr stopped;  // this fiber stopped itself, or no fiber could go on
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
  } catch (...) {
    stopped = std::current_exception();
  }
  stop(kids);  // outside the handler: see the top of this file
  for (auto& f : own) {
#if VANTAGE_FIBERS_TSAN
    __tsan_destroy_fiber(f->tsan);
#endif
    spare_.push_back(std::move(f->stack));
  }
  if (stopped) std::rethrow_exception(stopped);
  const Fiber* first = nullptr;
  for (const Fiber* f : kids)
    if (f->error && (!first || f->failed < first->failed)) first = f;
  if (first) std::rethrow_exception(first->error);
}

}  // namespace vantage::interp::detail
