// The interpreter's racecheck clocks (jit/interp/checks.cpp) on their own: what threads learn where
// they meet, and what they learn from each other through later meetings.
#include <gtest/gtest.h>

#include <vector>

#include "jit/interp/machine.h"

namespace vantage::interp::detail {
namespace {

struct Block {
  explicit Block(int threads) : checks(threads, 1, true), th(static_cast<std::size_t>(threads)) {
    checks.start_block(0);
    for (int r = 0; r < threads; ++r) {
      th[static_cast<std::size_t>(r)].tid = r;
      th[static_cast<std::size_t>(r)].run = r;
    }
  }
  /// Threads lo to hi - 1 meet (a barrier over them).
  void meet(int lo, int hi) {
    std::vector<Thread*> members;
    for (int r = lo; r < hi; ++r) members.push_back(&th[static_cast<std::size_t>(r)]);
    checks.join(members);
  }
  Checks checks;
  std::vector<Thread> th;
};

Region shared_array(const char* name, std::int64_t length = 1) {
  Region r;
  r.name = name;
  r.space = MemSpace::Shared;
  r.length = length;
  r.shadow.resize(static_cast<std::size_t>(length));
  return r;
}

TEST(Racecheck, WhatThreadsSawAtOneMeetingReachesTheThreadsTheyMeetNext) {
  // Four warps: warp 0 writes a, warp 3 writes b; warps 0 and 1 meet, warps 2 and 3 meet, then
  // warps 1 and 2. Warp 2 has then seen a's write (through warp 1), and warp 1 b's (through warp 2).
  const SourceLoc at{"racecheck.cpp", 1, 1};
  Block blk(128);
  Region a = shared_array("a"), b = shared_array("b");
  blk.checks.write(blk.th[0], a, 0, at, kPlain);
  blk.checks.write(blk.th[96], b, 0, at, kPlain);
  blk.meet(0, 64);
  blk.meet(64, 128);
  blk.meet(32, 96);
  EXPECT_NO_THROW(blk.checks.read(blk.th[64], a, 0, at, kPlain));
  EXPECT_NO_THROW(blk.checks.read(blk.th[32], b, 0, at, kPlain));
  // Warp 3 has met neither warp 0 nor anyone who had: its read of a is a race.
  try {
    blk.checks.read(blk.th[127], a, 0, at, kPlain);
    ADD_FAILURE() << "a read no meeting orders after the write was taken";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("block 0 thread 127 reads shared 'a'[0]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("which block 0 thread 0 wrote"), std::string::npos) << e.what();
  }
}

TEST(Racecheck, AThreadsOwnWorkSinceItsLastMeetingReachesTheNextOne) {
  // Warp 0 meets itself, then writes; at the block's barrier the others see the write.
  const SourceLoc at{"racecheck.cpp", 2, 1};
  Block blk(64);
  Region a = shared_array("a");
  blk.meet(0, 32);
  blk.checks.write(blk.th[5], a, 0, at, kPlain);
  blk.meet(0, 64);
  EXPECT_NO_THROW(blk.checks.read(blk.th[40], a, 0, at, kPlain));
  // After the barrier, a write by thread 40 without another meeting races with thread 7's read.
  blk.checks.read(blk.th[7], a, 0, at, kPlain);
  EXPECT_THROW(blk.checks.write(blk.th[40], a, 0, at, kPlain), ExecutionError);
}

TEST(Racecheck, AnElementsReadsStayItsOwnWhenAnotherElementsWriteHandsItsListOn) {
  // A write empties its element's reads and leaves their list to the next element read. Element 0
  // is read and written by thread 0, then element 1 read by thread 1 (taking that list), then
  // element 0 written again; a write to element 1 that no meeting orders after thread 1's read must
  // still find it.
  const SourceLoc at{"racecheck.cpp", 3, 1}, read_at{"racecheck.cpp", 4, 1};
  Block blk(64);
  Region a = shared_array("a", 2);
  blk.checks.read(blk.th[0], a, 0, at, kPlain);
  blk.checks.write(blk.th[0], a, 0, at, kPlain);
  blk.checks.read(blk.th[1], a, 1, read_at, kPlain);
  blk.checks.write(blk.th[0], a, 0, at, kPlain);
  try {
    blk.checks.write(blk.th[2], a, 1, at, kPlain);
    ADD_FAILURE() << "a write no meeting orders after another thread's read was taken";
  } catch (const ExecutionError& e) {
    EXPECT_NE(std::string(e.what()).find("block 0 thread 2 writes shared 'a'[1]"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("which block 0 thread 1 read at racecheck.cpp:4:1"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace vantage::interp::detail
