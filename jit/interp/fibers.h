// The interpreter's fibers: what lets threads that wait on each other through mbarriers run in turn.
// Between two barriers the interpreter runs a block's threads one after the other, each to the next
// barrier; a thread that waits at an mbarrier for arrivals a later thread makes (a consumer waiting
// for its producer's TMA load, a producer waiting for its consumers to free a slot) cannot go on
// until that thread has run. In a kernel that waits on mbarriers each thread of such a stretch runs
// as a fiber: a stack of its own on the interpreter's OS thread, and each hands the run to the next
// only where it waits (or ends), so the interpreter stays sequential and deterministic. When every
// fiber waits and nothing happened since each last looked, no thread can ever go on: on a GPU the
// block would hang, and the interpreter says which threads wait where (synccheck).
// Private to jit/interp.
#pragma once

#include <cstddef>
#include <cstdint>
#include <exception>
#include <functional>
#include <memory>
#include <string>
#include <vector>

namespace vantage::interp::detail {

class Fibers {
 public:
  /// Who waits (a thread of the block) and for what, in words ("at LINE on ... for ..."), asked for
  /// only when no fiber can go on.
  struct Wait {
    std::int64_t who = 0;
    std::string what;
  };
  using Describe = std::function<Wait()>;
  /// Builds the error thrown where no fiber can go on, from what each waiting fiber waits for.
  using Stuck = std::function<std::exception_ptr(const std::vector<Wait>& waits)>;

  explicit Fibers(Stuck stuck);
  ~Fibers();
  Fibers(const Fibers&) = delete;
  Fibers& operator=(const Fibers&) = delete;

  /// Runs each body as a fiber and returns when every one has ended; the first exception one threw
  /// is thrown here once the others have been stopped. Called by the running fiber (the caller of
  /// the interpreter is the first), which waits meanwhile as its bodies and every other fiber run.
  void run_all(std::vector<std::function<void()>> bodies);

  /// The running fiber goes on only once `ready()` holds; until then the others run.
  void wait_until(const std::function<bool()>& ready, const Describe& what);

  /// Something a waiting fiber may wait for has happened (an arrival, a completed transaction).
  void progress() { ++progress_; }

 private:
  struct Fiber;
  /// Thrown inside a fiber stopped because another failed; its body unwinds and it ends.
  struct Cancelled {};

  /// A fiber's start (makecontext's function): its Fiber's address in two halves.
  static void start(unsigned lo, unsigned hi);
  void entry(Fiber* f);
  /// Hands the run to `next` and, unless `me` has ended, goes on once it is given it back.
  void switch_to(Fiber* me, Fiber* next, bool ended);
  /// A stack for a new fiber: one an ended fiber left, or a new mapping.
  struct Stack;
  Stack take_stack();
  /// The live fiber after `me`, in the order they were made.
  Fiber* after(const Fiber* me) const;
  /// Gives the others a turn; throws Cancelled in a fiber being stopped (unless `stopping`).
  void yield(bool stopping = false);
  /// Stops the unfinished ones of `children` and waits until each has ended.
  void stop(const std::vector<Fiber*>& children);

  Stuck stuck_;
  std::vector<Stack> spare_;  ///< stacks of fibers that ended, for the next ones
  std::unique_ptr<Fiber> main_;
  std::vector<Fiber*> live_;  ///< every fiber that has not ended, main first
  Fiber* current_ = nullptr;
  std::uint64_t progress_ = 0;
};

}  // namespace vantage::interp::detail
