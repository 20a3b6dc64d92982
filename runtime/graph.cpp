// Vantage and CUDA graphs: see vantage/graph.hpp.
#include "vantage/graph.hpp"

#include <string>

#include "backend/driver.h"
#include "backend/gpu.h"
#include "support/log.h"
#include "vantage/diagnostics.hpp"

namespace vantage {
namespace {

const driver::Table& graphs(const Device& device) {
  const driver::Table& d = driver::table();
  if (!d.stream_begin_capture || !d.stream_end_capture || !d.graph_instantiate || !d.graph_launch ||
      !d.graph_exec_update || !d.graph_get_nodes || !d.graph_destroy || !d.graph_exec_destroy)
    throw LaunchError("stream", "the CUDA driver at " + d.path + " has no CUDA graphs (CUDA 12 or newer), needed on " +
                                    device.name());
  return d;
}

/// Captures `record`'s work on `stream` into a new CUgraph; its node count in `nodes`.
driver::CUgraph record_graph(const Stream& stream, const std::function<void(const Stream&)>& record,
                             std::size_t* nodes) {
  const Device& device = stream.device();
  const driver::Table& d = graphs(device);
  if (!stream.native())
    throw LaunchError("stream", "a graph is captured on a stream Vantage made or adopted, not on " + device.name() +
                                    "'s default stream");
  gpu::make_current(device.ordinal());
  auto s = static_cast<driver::CUstream>(stream.native());
  driver::check(d.stream_begin_capture(s, driver::kCaptureRelaxed), "cuStreamBeginCapture", device.name());
  driver::CUgraph g = nullptr;
  try {
    record(stream);
  } catch (...) {
    d.stream_end_capture(s, &g);  // ends the capture; what was recorded is dropped
    if (g) d.graph_destroy(g);
    throw;
  }
  driver::check(d.stream_end_capture(s, &g), "cuStreamEndCapture", device.name());
  std::size_t n = 0;
  driver::check(d.graph_get_nodes(g, nullptr, &n), "cuGraphGetNodes", device.name());
  *nodes = n;
  return g;
}

}  // namespace

Graph Graph::capture(const Stream& stream, const std::function<void(const Stream&)>& record) {
  Graph out(stream.device());
  if (!stream.device().is_gpu()) {
    out.host_record_ = record;
    record(stream);  // host devices run work at once: the first run is the capture's
    return out;
  }
  const driver::Table& d = graphs(stream.device());
  auto g = record_graph(stream, record, &out.size_);
  out.graph_ = g;
  driver::CUgraphExec e = nullptr;
  driver::check(d.graph_instantiate(&e, g, 0), "cuGraphInstantiateWithFlags", stream.device().name());
  out.exec_ = e;
  return out;
}

void Graph::launch(const Stream& stream) const {
  if (!(stream.device() == device_))
    throw LaunchError("stream", "a graph of " + device_.name() + " launched on a stream of " + stream.device().name());
  if (!device_.is_gpu()) {
    if (host_record_) host_record_(stream);
    return;
  }
  gpu::make_current(device_.ordinal());
  driver::check(driver::table().graph_launch(static_cast<driver::CUgraphExec>(exec_),
                                             static_cast<driver::CUstream>(stream.native())),
                "cuGraphLaunch", device_.name());
}

void Graph::update(const Stream& stream, const std::function<void(const Stream&)>& record) {
  if (!(stream.device() == device_))
    throw LaunchError("stream", "a graph of " + device_.name() + " recorded on a stream of " + stream.device().name());
  if (!device_.is_gpu()) {
    host_record_ = record;
    return;
  }
  const driver::Table& d = graphs(device_);
  std::size_t n = 0;
  auto g = record_graph(stream, record, &n);
  driver::GraphUpdateInfo info;
  const driver::CUresult r = d.graph_exec_update(static_cast<driver::CUgraphExec>(exec_), g, &info);
  if (r != driver::kSuccess || info.result != driver::kUpdateSuccess) {
    // Other kernels, or another number of launches: the executable graph is made again.
    logging::get().debug("graph on {}: updated by a new instantiation (update result {})", device_.name(), info.result);
    driver::CUgraphExec e = nullptr;
    const driver::CUresult ri = d.graph_instantiate(&e, g, 0);
    if (ri != driver::kSuccess) {
      d.graph_destroy(g);
      driver::check(ri, "cuGraphInstantiateWithFlags", device_.name());
    }
    d.graph_exec_destroy(static_cast<driver::CUgraphExec>(exec_));
    exec_ = e;
  }
  d.graph_destroy(static_cast<driver::CUgraph>(graph_));
  graph_ = g;
  size_ = n;
}

void Graph::release() noexcept {
  if (!device_.is_gpu()) return;
  const driver::Table& d = driver::table();
  if (exec_ && d.graph_exec_destroy) d.graph_exec_destroy(static_cast<driver::CUgraphExec>(exec_));
  if (graph_ && d.graph_destroy) d.graph_destroy(static_cast<driver::CUgraph>(graph_));
  exec_ = graph_ = nullptr;
}

Graph::~Graph() { release(); }

Graph::Graph(Graph&& o) noexcept
    : device_(o.device_), graph_(o.graph_), exec_(o.exec_), size_(o.size_), host_record_(std::move(o.host_record_)) {
  o.graph_ = o.exec_ = nullptr;
  o.size_ = 0;
}

Graph& Graph::operator=(Graph&& o) noexcept {
  if (this != &o) {
    release();
    device_ = o.device_;
    graph_ = o.graph_;
    exec_ = o.exec_;
    size_ = o.size_;
    host_record_ = std::move(o.host_record_);
    o.graph_ = o.exec_ = nullptr;
    o.size_ = 0;
  }
  return *this;
}

}  // namespace vantage
