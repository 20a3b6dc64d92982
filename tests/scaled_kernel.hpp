// A family of small kernels for the cache's tests: saxpy under another name and scale, so that each
// member has its own source and its own cache key.
#pragma once

#include <string>

#include "vantage/vantage.hpp"

namespace vantage::test_support {

inline Kernel scaled_saxpy(const std::string& name, float scale, int threads) {
  KernelBuilder k(name);
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(threads);
  k.body([&](Scope& g) { lib::for_each(g, y, n, [&](Scope&, Expr j, ElemRef yj) { yj = scale * x[j] + yj; }); });
  return k.build();
}

}  // namespace vantage::test_support
