// A program outside the Vantage tree that links the installed library.
#include <vantage/vantage.hpp>

#include <cstdio>

int main() {
  using namespace vantage;
  KernelBuilder k("saxpy");
  auto n = k.param<int>("n");
  auto a = k.param<float>("a");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(128);
  k.body([&](Scope& g) {
    auto i = g.let("i", g.id(thread(1)));
    g.partition(
        y, thread(1), [&](Expr j) { return i + j; },
        [&](Scope& g, View y_i) {
          g.group(thread(1), [&](Scope& t) { t.if_(i < n, [&](Scope&) { y_i[0] = a * x[i] + y_i[0]; }); });
        });
  });
  Kernel kernel = k.build();
  std::printf("consumer: %s checked (vantage %s)\n", kernel.name().c_str(), version());
  return 0;
}
