// Example: a kernel with three perspective bugs, as a user might write it. Vantage rejects it and
// reports every error with the user's line. Exits non-zero if it was (wrongly) accepted.
#include <cstdio>

#include "vantage/vantage.hpp"

using namespace vantage;

int main() {
  KernelBuilder k("buggy");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<float>>("x", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) {
    g.group(block(1), [&](Scope& b) {
      auto t = b.let("t", b.id(thread(1)));
      b.if_(t < 32, [&](Scope& b) { b.sync_threads(); });                    // barrier under a thread-varying branch
      x[t] = 1.0f;                                                           // write to global memory never partitioned
      b.group(warp(), [&](Scope& w) { w.group(block(1), [](Scope&) {}); });  // group cannot widen
    });
  });
  try {
    k.build();
    std::printf("unexpected: the buggy kernel was accepted\n");
    return 1;
  } catch (const CheckError& e) {
    std::printf("Vantage rejected the kernel with %zu diagnostic(s):\n\n%s", e.diagnostics().size(),
                render_all(e.diagnostics()).c_str());
    return e.diagnostics().size() == 3 ? 0 : 1;
  }
}
