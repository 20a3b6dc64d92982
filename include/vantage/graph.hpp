// Vantage and CUDA graphs: the launches a function issues on a stream, captured once (each checked
// as any launch is) and replayed with one call; recorded again with new arguments, the replayable
// graph is updated in place. GPU streams only: on host devices a graph runs its function again.
#pragma once

#include <cstddef>
#include <functional>

#include "vantage/runtime.hpp"

namespace vantage {

class Graph {
 public:
  /// Runs `record(stream)` with `stream` capturing: the launches it issues there are recorded, not
  /// run (every argument checked as always; a launch refused throws and ends the capture). The stream
  /// must be one Vantage made or adopted, not a default stream. Host memory passed as an argument
  /// would need a copy a graph cannot capture: pass buffers.
  static Graph capture(const Stream& stream, const std::function<void(const Stream&)>& record);
  ~Graph();
  Graph(Graph&& o) noexcept;
  Graph& operator=(Graph&& o) noexcept;
  Graph(const Graph&) = delete;
  Graph& operator=(const Graph&) = delete;

  /// Replays every recorded launch on `stream` (a stream of the same device), in order.
  void launch(const Stream& stream) const;
  /// Records `record` again (new arguments, each launch checked as always) and updates the
  /// replayable graph in place; where the launches differ in kind or number, it is made again.
  void update(const Stream& stream, const std::function<void(const Stream&)>& record);
  /// The launches it holds (its nodes).
  std::size_t size() const { return size_; }
  const Device& device() const { return device_; }

 private:
  Graph(const Device& d) : device_(d) {}
  void release() noexcept;
  Device device_;
  void* graph_ = nullptr;  ///< CUgraph (GPU), or null
  void* exec_ = nullptr;   ///< CUgraphExec
  std::size_t size_ = 0;
  std::function<void(const Stream&)> host_record_;  ///< host devices: the function, run again
};

}  // namespace vantage
