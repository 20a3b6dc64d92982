// A kernel library outside Vantage's tree, built against the installed package: the tools take its
// kernels with `vantage --load libmykernels.so ...`. scale_by_two registers its factory only;
// scale_tiled registers the whole record, so that `vantage run` and `vantage tune` take it too.
#include <vantage/vantage.hpp>

#include <memory>
#include <string>
#include <utility>
#include <vector>

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

/// y = 2 x + 1 on `threads` threads a block, `items` elements a thread.
Kernel scale_tiled(int threads, int items) {
  KernelBuilder k("scale_tiled");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(threads);
  k.body([&](Scope& g) {
    lib::for_each(
        g, y, n, [&](Scope&, Expr i, ElemRef yi) { yi = 2.0f * x[i] + 1.0f; }, lib::Tile{items, lib::Layout::Striped});
  });
  return k.build();
}

Grid grid_for(std::int64_t n, int threads, int items) {
  return Grid{lib::blocks_for(n, threads, lib::Tile{items, lib::Layout::Striped}), threads};
}

/// The arguments of one launch at sizes["n"] on `device`, and the check of y.
KernelRun scale_run(const Device& device, const Sizes& sizes) {
  const std::int64_t n = sizes.at("n");
  std::vector<float> hx(static_cast<std::size_t>(n));
  for (std::int64_t i = 0; i < n; ++i) hx[static_cast<std::size_t>(i)] = static_cast<float>(i % 97);
  auto x = std::make_shared<DeviceBuffer<float>>(device.alloc<float>(n));
  auto y = std::make_shared<DeviceBuffer<float>>(device.alloc<float>(n));
  x->copy_from(hx);
  KernelRun r;
  r.grid = grid_for(n, 128, 1);
  r.args = {LaunchArg(static_cast<int>(n)), LaunchArg(std::as_const(*x)), LaunchArg(*y)};
  r.owned = {x, y};
  r.check = [y, hx] {
    const std::vector<float> out = y->to_vector();
    for (std::size_t i = 0; i < out.size(); ++i)
      if (out[i] != 2.0f * hx[i] + 1.0f)
        return "y[" + std::to_string(i) + "] is " + std::to_string(out[i]) + ", not " +
               std::to_string(2.0f * hx[i] + 1.0f);
    return std::string();
  };
  return r;
}

const bool registered = [] {
  RegisteredKernel k;
  k.name = "scale_tiled";
  k.what = "y[i] = 2 x[i] + 1, tunable, from a library outside the tree";
  k.build = [] { return scale_tiled(128, 1); };
  k.sizes = {{"n", 4096}};
  k.run = scale_run;
  k.space = [] {
    tune::Space s;
    s.param("threads", {64, 128, 256}).param("items", {1, 2, 4});
    return s;
  };
  k.candidate = [](const tune::Config& c, const Sizes& sizes) {
    const int threads = static_cast<int>(c.at("threads")), items = static_cast<int>(c.at("items"));
    return tune::Candidate{scale_tiled(threads, items), grid_for(sizes.at("n"), threads, items), std::nullopt};
  };
  register_kernel(std::move(k));
  return true;
}();

}  // namespace

VANTAGE_REGISTER_KERNEL(scale_by_two, "y[i] = 2 x[i], from a library outside the tree", scale_by_two);
