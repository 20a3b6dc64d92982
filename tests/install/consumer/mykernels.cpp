// A kernel library outside Vantage's tree, built against the installed package: the tools take its
// kernels with `vantage --load libmykernels.so ...`.
#include <vantage/vantage.hpp>

namespace {

using namespace vantage;

Kernel scale_by_two() {
  KernelBuilder k("scale_by_two");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(128);
  k.body([&](Scope& g) { lib::for_each(g, y, n, [&](Scope&, Expr i, ElemRef yi) { yi = 2.0f * x[i]; }); });
  return k.build();
}

}  // namespace

VANTAGE_REGISTER_KERNEL(scale_by_two, "y[i] = 2 x[i], from a library outside the tree", scale_by_two);
