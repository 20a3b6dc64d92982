// The GPU launch path against a mocked CUDA driver: two GPUs with H100 limits and a third newer than
// every target Vantage compiles for (compute capability 10.0, served by the driver compiling PTX), memory that is host
// memory underneath, modules that load any cubin, and a cuLaunchKernel that records what it was given.
// Every check of a launch (count, kind, type, constness, memory space and device, extent, alignment,
// overlap, threads and shared memory against the device) runs as on a real GPU, with NVRTC compiling
// the kernels; a refused launch must not reach cuLaunchKernel. Its own program: the driver table is
// installed once per process, before any GPU use.
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <new>
#include <set>
#include <thread>

#include "backend/driver.h"
#include "backend/gpu.h"
#include "hopper_kernels.hpp"
#include "jit/cuda/emit.h"
#include "kernels/paper_kernels.hpp"
#include "runtime/launch_internal.h"
#include "test_support.hpp"
#include "vantage/dlpack.hpp"
#include "vantage/graph.hpp"
#include "vantage/vantage.hpp"

namespace vantage {
namespace {

using namespace driver;

// ---------------------------------------------------------------- the mocked driver
struct MockState {
  std::mutex mu;
  struct Allocation {
    std::size_t bytes;
    int device;
  };
  std::map<CUdeviceptr, Allocation> allocations;
  std::set<void*> host_allocations;
  std::map<CUstream, int> streams;   ///< each stream's device (its context)
  CUstream launch_stream = nullptr;  ///< the last launch's
  /// Streams capturing, with the launches (their arguments) recorded on each.
  std::map<CUstream, std::vector<std::vector<std::uint64_t>>> capturing;
  std::atomic<int> replays{0};  ///< launches a graph replayed
  std::atomic<int> launches{0};
  std::atomic<int> modules{0};
  std::atomic<int> ptx_compiles{0};  ///< cuLinkComplete calls: PTX the driver compiled
  std::string last_ptx;              ///< the PTX it was given last
  std::string last_image;            ///< the first 64 bytes of the last module loaded
  // The last launch.
  unsigned grid = 0, block = 0, shared = 0;
  std::vector<std::uint64_t> args;
  int registers = 40;
  bool fail_next = false;       ///< the next launch records a failed check, as the kernel would
  bool fail_assertion = false;  ///< ... of an assert_that: no index, a bound of -1
  // Every cuTensorMapEncodeTiled call: type, address, dims, strides, box, swizzle.
  struct Encode {
    int type = 0, swizzle = 0, rank = 0;
    std::uint64_t address = 0, dims[2] = {}, stride = 0;
    unsigned box[2] = {};
  };
  std::vector<Encode> encodes;
  std::vector<std::vector<std::uint64_t>> map_args;  ///< the last launch's tensor maps, whole
  /// What the next launch does to memory, given its arguments (a kernel's effect, written by hand).
  std::function<void(const std::vector<std::uint64_t>&)> effect;
};
MockState& mock() {
  static MockState s;
  return s;
}

CUresult m_error_name(CUresult r, const char** s) {
  *s = r == 2 ? "CUDA_ERROR_OUT_OF_MEMORY" : "CUDA_ERROR_MOCK";
  return 0;
}
CUresult m_error_string(CUresult r, const char** s) {
  *s = r == 2 ? "out of memory" : "mocked failure";
  return 0;
}
CUresult m_init(unsigned) { return 0; }
CUresult m_version(int* v) {
  *v = 13000;
  return 0;
}
CUresult m_count(int* n) {
  *n = 3;
  return 0;
}
CUresult m_get(CUdevice* d, int i) {
  *d = i;
  return 0;
}
CUresult m_name(char* s, int n, CUdevice d) {
  std::snprintf(s, static_cast<std::size_t>(n), d == 2 ? "Mock B200 %d" : "Mock H100 %d", d);
  return 0;
}
/// GPU 1 has less shared memory per block than GPU 0 (an sm_86-sized 99 KiB).
CUresult m_attribute(int* v, int a, CUdevice d) {
  switch (a) {
    case kComputeMajor: *v = d == 2 ? 10 : 9; break;
    case kComputeMinor: *v = 0; break;
    case kMultiprocessors: *v = 132; break;
    case kWarpSize: *v = 32; break;
    case kMaxThreadsPerBlock: *v = 1024; break;
    case kMaxThreadsPerMultiprocessor: *v = 2048; break;
    case kMaxBlocksPerMultiprocessor: *v = 32; break;
    case kMaxGridDimX: *v = 2147483647; break;
    case kMaxSharedPerBlock: *v = 49152; break;
    case kMaxSharedPerBlockOptin: *v = d == 1 ? 101376 : 232448; break;
    case kMaxSharedPerMultiprocessor: *v = d == 1 ? 102400 : 233472; break;
    case kMaxRegistersPerBlock: *v = 65536; break;
    case kMaxRegistersPerMultiprocessor: *v = 65536; break;
    case kL2Bytes: *v = 50 << 20; break;
    case kClockRateKhz: *v = 1980000; break;
    case kMemoryClockKhz: *v = 2619000; break;
    case kMemoryBusBits: *v = 5120; break;
    default: *v = 0;
  }
  return 0;
}
CUresult m_total(std::size_t* b, CUdevice) {
  *b = std::size_t{80} << 30;
  return 0;
}
CUctx_st* fake_ctx(int d) { return reinterpret_cast<CUctx_st*>(static_cast<std::uintptr_t>(0x1000 + d)); }
CUresult m_retain(CUcontext* c, CUdevice d) {
  *c = fake_ctx(d);
  return 0;
}
CUresult m_release(CUdevice) { return 0; }
thread_local int g_current = -1;  // as in the driver, the current context is per thread
CUresult m_set_current(CUcontext c) {
  g_current = static_cast<int>(reinterpret_cast<std::uintptr_t>(c) - 0x1000);
  return 0;
}
CUresult m_sync() { return 0; }
CUresult m_alloc(CUdeviceptr* p, std::size_t bytes) {
  if (bytes > (std::size_t{1} << 34)) return 2;
  void* h = std::aligned_alloc(256, (bytes + 255) / 256 * 256);
  *p = reinterpret_cast<CUdeviceptr>(h);
  std::lock_guard lock(mock().mu);
  mock().allocations[*p] = {bytes, g_current};
  return 0;
}
CUresult m_free(CUdeviceptr p) {
  std::lock_guard lock(mock().mu);
  if (!mock().allocations.erase(p)) return 1;
  std::free(reinterpret_cast<void*>(p));
  return 0;
}
CUresult m_alloc_host(void** p, std::size_t bytes) {
  *p = std::aligned_alloc(64, (bytes + 63) / 64 * 64);
  std::lock_guard lock(mock().mu);
  mock().host_allocations.insert(*p);
  return 0;
}
CUresult m_free_host(void* p) {
  {
    std::lock_guard lock(mock().mu);
    mock().host_allocations.erase(p);
  }
  std::free(p);
  return 0;
}
/// The allocation holding `p`, if any (the caller holds the lock).
const std::pair<const CUdeviceptr, MockState::Allocation>* allocation_of(CUdeviceptr p) {
  auto it = mock().allocations.upper_bound(p);
  if (it == mock().allocations.begin()) return nullptr;
  --it;
  return p < it->first + it->second.bytes ? &*it : nullptr;
}
CUresult m_pointer_attribute(void* data, int attribute, CUdeviceptr p) {
  std::lock_guard lock(mock().mu);
  const bool host = mock().host_allocations.count(reinterpret_cast<void*>(p)) > 0;
  const auto* a = allocation_of(p);
  if (!host && !a) return 1;  // CUDA_ERROR_INVALID_VALUE: not the driver's memory
  if (attribute == kPointerMemoryType) *static_cast<unsigned*>(data) = host ? kMemoryHost : kMemoryDevice;
  if (attribute == kPointerDeviceOrdinal) *static_cast<int*>(data) = host ? 0 : a->second.device;
  return 0;
}
CUresult m_address_range(CUdeviceptr* base, std::size_t* size, CUdeviceptr p) {
  std::lock_guard lock(mock().mu);
  const auto* a = allocation_of(p);
  if (!a) return 500;  // CUDA_ERROR_NOT_FOUND
  *base = a->first;
  *size = a->second.bytes;
  return 0;
}
CUresult m_htod(CUdeviceptr d, const void* h, std::size_t n) {
  std::memcpy(reinterpret_cast<void*>(d), h, n);
  return 0;
}
CUresult m_dtoh(void* h, CUdeviceptr d, std::size_t n) {
  std::memcpy(h, reinterpret_cast<const void*>(d), n);
  return 0;
}
CUresult m_dtod(CUdeviceptr a, CUdeviceptr b, std::size_t n) {
  std::memcpy(reinterpret_cast<void*>(a), reinterpret_cast<const void*>(b), n);
  return 0;
}
CUresult m_htod_async(CUdeviceptr d, const void* h, std::size_t n, CUstream) { return m_htod(d, h, n); }
CUresult m_dtoh_async(void* h, CUdeviceptr d, std::size_t n, CUstream) { return m_dtoh(h, d, n); }
CUresult m_memset(CUdeviceptr d, unsigned char v, std::size_t n) {
  std::memset(reinterpret_cast<void*>(d), v, n);
  return 0;
}
CUresult m_stream_create(CUstream* s, unsigned) {
  *s = reinterpret_cast<CUstream>(new int(0));
  std::lock_guard lock(mock().mu);
  mock().streams[*s] = g_current;
  return 0;
}
CUresult m_stream_destroy(CUstream s) {
  {
    std::lock_guard lock(mock().mu);
    mock().streams.erase(s);
  }
  delete reinterpret_cast<int*>(s);
  return 0;
}
CUresult m_stream_ctx(CUstream s, CUcontext* c) {
  std::lock_guard lock(mock().mu);
  auto it = mock().streams.find(s);
  if (it == mock().streams.end()) return 400;  // CUDA_ERROR_INVALID_HANDLE
  *c = fake_ctx(it->second);
  return 0;
}
CUresult m_stream_sync(CUstream) { return 0; }
CUresult m_event_create(CUevent* e, unsigned) {
  *e = reinterpret_cast<CUevent>(new double(0));
  return 0;
}
CUresult m_event_destroy(CUevent e) {
  delete reinterpret_cast<double*>(e);
  return 0;
}
CUresult m_event_record(CUevent, CUstream) { return 0; }
CUresult m_event_sync(CUevent) { return 0; }
CUresult m_event_elapsed(float* ms, CUevent, CUevent) {
  *ms = 0.5f;
  return 0;
}
CUresult m_module_load(CUmodule* m, const void* image) {
  // A cubin is an ELF file.
  if (std::memcmp(image,
                  "\x7f"
                  "ELF",
                  4) != 0)
    return 200;
  ++mock().modules;
  {
    std::lock_guard lock(mock().mu);
    mock().last_image.assign(static_cast<const char*>(image), 64);
  }
  *m = reinterpret_cast<CUmodule>(new int(1));
  return 0;
}
// The driver's PTX compiler: an ELF image marked as its work.
struct MockLink {
  std::string ptx;
  std::vector<char> image;
};
CUresult m_link_create(unsigned, int*, void**, CUlinkState* s) {
  *s = reinterpret_cast<CUlinkState>(new MockLink);
  return 0;
}
CUresult m_link_add(CUlinkState s, int type, void* data, std::size_t size, const char*, unsigned, int*, void**) {
  if (type != kJitInputPtx || size == 0 || static_cast<const char*>(data)[size - 1] != '\0') return 1;
  reinterpret_cast<MockLink*>(s)->ptx.assign(static_cast<const char*>(data), size - 1);
  return 0;
}
CUresult m_link_complete(CUlinkState s, void** image, std::size_t* size) {
  auto* l = reinterpret_cast<MockLink*>(s);
  if (l->ptx.find(".target sm_90") == std::string::npos) return 218;  // CUDA_ERROR_INVALID_PTX
  ++mock().ptx_compiles;
  {
    std::lock_guard lock(mock().mu);
    mock().last_ptx = l->ptx;
  }
  std::string marked =
      "\x7f"
      "ELF compiled from PTX for sm_100";
  l->image.assign(marked.begin(), marked.end());
  l->image.resize(64, '\0');
  *image = l->image.data();
  *size = l->image.size();
  return 0;
}
CUresult m_link_destroy(CUlinkState s) {
  delete reinterpret_cast<MockLink*>(s);
  return 0;
}
CUresult m_module_unload(CUmodule m) {
  delete reinterpret_cast<int*>(m);
  return 0;
}
CUresult m_get_function(CUfunction* f, CUmodule, const char* name) {
  static std::mutex mu;
  static std::deque<std::string> names;  // a function handle is its name, kept to the end
  std::lock_guard lock(mu);
  *f = reinterpret_cast<CUfunction>(&names.emplace_back(name));
  return 0;
}
CUresult m_func_attribute(int* v, int a, CUfunction) {
  *v = a == kFuncNumRegs ? mock().registers : 0;
  return 0;
}
CUresult m_func_set_attribute(CUfunction, int, int) { return 0; }
CUresult m_encode(void* map, int type, unsigned rank, void* address, const unsigned long long* dims,
                  const unsigned long long* strides, const unsigned* box, const unsigned*, int, int swizzle, int, int) {
  std::lock_guard lock(mock().mu);
  MockState::Encode e;
  e.type = type;
  e.rank = static_cast<int>(rank);
  e.swizzle = swizzle;
  e.address = reinterpret_cast<std::uint64_t>(address);
  e.dims[0] = dims[0];
  e.dims[1] = dims[1];
  e.stride = strides[0];
  e.box[0] = box[0];
  e.box[1] = box[1];
  mock().encodes.push_back(e);
  // A marker, then the call's number, then the address: what the launch must pass on untouched.
  std::uint64_t bytes[16] = {};
  bytes[0] = (std::uint64_t{0x7e45} << 32) | mock().encodes.size();
  bytes[15] = e.address;
  std::memcpy(map, bytes, sizeof bytes);
  return 0;
}
CUresult m_launch(CUfunction f, unsigned gx, unsigned, unsigned, unsigned bx, unsigned, unsigned, unsigned shared,
                  CUstream stream, void** params, void**) {
  ++mock().launches;
  std::lock_guard lock(mock().mu);
  if (auto c = mock().capturing.find(stream); c != mock().capturing.end()) {
    --mock().launches;  // recorded, not run
    std::vector<std::uint64_t> recorded;
    for (int i = 0; params[i]; ++i) {
      std::uint64_t v = 0;
      std::memcpy(&v, params[i], sizeof v);
      recorded.push_back(v);
    }
    c->second.push_back(std::move(recorded));
    return 0;
  }
  mock().launch_stream = stream;
  mock().grid = gx;
  mock().block = bx;
  mock().shared = shared;
  mock().args.clear();
  mock().map_args.clear();
  for (int i = 0; params[i]; ++i) {  // Vantage ends the array with a null
    std::uint64_t v = 0;
    std::memcpy(&v, params[i], sizeof v);
    mock().args.push_back(v);
    // A tensor map the mocked encoder made: it starts with its marker.
    if (v >> 32 == 0x7e45u) {
      std::vector<std::uint64_t> whole(16);
      std::memcpy(whole.data(), params[i], 128);
      mock().map_args.push_back(whole);
    }
  }
  if (mock().fail_next) {
    // What vt_fail writes: the kernel's tag, then the site, block, thread, index and bound.
    mock().fail_next = false;
    auto* record = reinterpret_cast<std::uint64_t*>(mock().args.back());
    record[1] = 0;
    record[2] = 2;
    record[3] = 5;
    record[4] = mock().fail_assertion ? 0 : 1000;
    record[5] = mock().fail_assertion ? static_cast<std::uint64_t>(-1) : 1000;
    mock().fail_assertion = false;
    record[0] = lower::check_tag(*reinterpret_cast<const std::string*>(f));
  }
  if (mock().effect) {
    mock().effect(mock().args);
    mock().effect = nullptr;
  }
  return 0;
}
// CUDA graphs: a graph is the launches recorded while its stream captured; replaying one runs them.
struct MockGraph {
  std::vector<std::vector<std::uint64_t>> launches;
};
CUresult m_begin_capture(CUstream s, int mode) {
  if (!s || mode != kCaptureRelaxed) return 1;
  std::lock_guard lock(mock().mu);
  mock().capturing[s];
  return 0;
}
CUresult m_end_capture(CUstream s, CUgraph* g) {
  std::lock_guard lock(mock().mu);
  auto it = mock().capturing.find(s);
  if (it == mock().capturing.end()) return 1;
  *g = reinterpret_cast<CUgraph>(new MockGraph{std::move(it->second)});
  mock().capturing.erase(it);
  return 0;
}
CUresult m_instantiate(CUgraphExec* e, CUgraph g, unsigned long long) {
  *e = reinterpret_cast<CUgraphExec>(new MockGraph(*reinterpret_cast<MockGraph*>(g)));
  return 0;
}
CUresult m_graph_launch(CUgraphExec e, CUstream s) {
  for (const auto& args : reinterpret_cast<MockGraph*>(e)->launches) {
    ++mock().launches;
    ++mock().replays;
    std::lock_guard lock(mock().mu);
    mock().launch_stream = s;
    mock().args = args;
  }
  return 0;
}
CUresult m_exec_update(CUgraphExec e, CUgraph g, GraphUpdateInfo* info) {
  auto* exec = reinterpret_cast<MockGraph*>(e);
  auto* graph = reinterpret_cast<MockGraph*>(g);
  if (exec->launches.size() != graph->launches.size()) {
    info->result = kUpdateTopologyChanged;
    return 910;  // CUDA_ERROR_GRAPH_EXEC_UPDATE_FAILURE
  }
  exec->launches = graph->launches;
  info->result = kUpdateSuccess;
  return 0;
}
CUresult m_graph_nodes(CUgraph g, CUgraphNode*, std::size_t* n) {
  *n = reinterpret_cast<MockGraph*>(g)->launches.size();
  return 0;
}
CUresult m_graph_destroy(CUgraph g) {
  delete reinterpret_cast<MockGraph*>(g);
  return 0;
}
CUresult m_exec_destroy(CUgraphExec e) {
  delete reinterpret_cast<MockGraph*>(e);
  return 0;
}
CUresult m_occupancy(int* n, CUfunction, int, std::size_t) {
  *n = 2;
  return 0;
}

Table mock_table() {
  Table t;
  t.path = "mock";
  t.get_error_name = m_error_name;
  t.get_error_string = m_error_string;
  t.init = m_init;
  t.driver_get_version = m_version;
  t.device_get_count = m_count;
  t.device_get = m_get;
  t.device_get_name = m_name;
  t.device_get_attribute = m_attribute;
  t.device_total_mem = m_total;
  t.primary_ctx_retain = m_retain;
  t.primary_ctx_release = m_release;
  t.ctx_set_current = m_set_current;
  t.ctx_synchronize = m_sync;
  t.mem_alloc = m_alloc;
  t.mem_free = m_free;
  t.mem_alloc_host = m_alloc_host;
  t.mem_free_host = m_free_host;
  t.memcpy_htod = m_htod;
  t.memcpy_dtoh = m_dtoh;
  t.memcpy_dtod = m_dtod;
  t.memcpy_htod_async = m_htod_async;
  t.memcpy_dtoh_async = m_dtoh_async;
  t.memset_d8 = m_memset;
  t.stream_create = m_stream_create;
  t.stream_destroy = m_stream_destroy;
  t.stream_synchronize = m_stream_sync;
  t.event_create = m_event_create;
  t.event_destroy = m_event_destroy;
  t.event_record = m_event_record;
  t.event_synchronize = m_event_sync;
  t.event_elapsed_time = m_event_elapsed;
  t.module_load_data = m_module_load;
  t.module_unload = m_module_unload;
  t.module_get_function = m_get_function;
  t.func_get_attribute = m_func_attribute;
  t.func_set_attribute = m_func_set_attribute;
  t.launch_kernel = m_launch;
  t.occupancy_max_active_blocks = m_occupancy;
  t.tensor_map_encode_tiled = m_encode;
  t.stream_begin_capture = m_begin_capture;
  t.stream_end_capture = m_end_capture;
  t.graph_instantiate = m_instantiate;
  t.graph_launch = m_graph_launch;
  t.graph_exec_update = m_exec_update;
  t.graph_get_nodes = m_graph_nodes;
  t.graph_destroy = m_graph_destroy;
  t.graph_exec_destroy = m_exec_destroy;
  t.pointer_get_attribute = m_pointer_attribute;
  t.mem_get_address_range = m_address_range;
  t.stream_get_ctx = m_stream_ctx;
  t.link_create = m_link_create;
  t.link_add_data = m_link_add;
  t.link_complete = m_link_complete;
  t.link_destroy = m_link_destroy;
  return t;
}

// ---------------------------------------------------------------- tests
template <class F>
void expect_refused(F&& f, const std::string& param, const std::vector<std::string>& words) {
  int before = mock().launches.load();
  try {
    f();
    ADD_FAILURE() << "the launch was not refused (" << param << ")";
  } catch (const LaunchError& e) {
    EXPECT_EQ(e.param(), param) << e.what();
    for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
  }
  EXPECT_EQ(mock().launches.load(), before) << "a refused launch reached cuLaunchKernel";
}

TEST(GpuMock, TheDriverTableDescribesThreeGpus) {
  EXPECT_EQ(Device::gpu_count(), 3);
  EXPECT_EQ(Device::gpu_problem(), "");
  Device d = Device::best();
  EXPECT_TRUE(d.is_gpu());
  EXPECT_EQ(d.name(), "GPU 0 (Mock H100 0, sm_90)");
  EXPECT_EQ(d.properties().shared_per_block_optin, 232448);
  // Three GPUs, the CPU backend (where the build has it) and the interpreter.
  EXPECT_EQ(Device::all().size(), Device::cpu_available() ? 5u : 4u);
  EXPECT_EQ(Device::gpu(2).name(), "GPU 2 (Mock B200 2, sm_100 through sm_90 PTX)");
  EXPECT_TRUE(Device::gpu(2).properties().runs_ptx);
  EXPECT_FALSE(d.properties().runs_ptx);
  try {
    Device::gpu(5);
    FAIL() << "there is no GPU 5";
  } catch (const DriverError& e) {
    EXPECT_NE(std::string(e.what()).find("no GPU 5"), std::string::npos) << e.what();
  }
}

TEST(GpuMock, BuffersCopyInAndOutAndFreeThemselves) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  std::size_t live = mock().allocations.size();
  {
    auto b = d.alloc<float>(100);
    std::vector<float> in(100);
    for (int i = 0; i < 100; ++i) in[static_cast<std::size_t>(i)] = static_cast<float>(i);
    b.copy_from(in);
    EXPECT_EQ(b.to_vector(), in);
    EXPECT_THROW(b.copy_from(std::vector<float>(99)), std::invalid_argument);
    auto moved = std::move(b);
    EXPECT_EQ(moved.size(), 100);
    EXPECT_EQ(mock().allocations.size(), live + 1);
  }
  EXPECT_EQ(mock().allocations.size(), live) << "a buffer was not freed";
  try {
    (void)d.alloc<float>(std::int64_t{1} << 40);
    FAIL() << "the mocked driver refuses 4 TiB";
  } catch (const DriverError& e) {
    EXPECT_EQ(e.call(), "cuMemAlloc");
    EXPECT_NE(std::string(e.what()).find("CUDA_ERROR_OUT_OF_MEMORY (out of memory)"), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find("on GPU 0"), std::string::npos) << e.what();
  }
}

// The placement advice's GPU side measured where there is a GPU (here the mocked one, whose memory is
// the host's): a copy's fixed cost, the bandwidth beyond it and a launch's latency replace the assumed
// figures, and the advice says so.
TEST(GpuMock, ThePlacementsCopiesAndLaunchAreMeasuredOnTheGpu) {
  REQUIRE_NVRTC();
  const int launches = mock().launches;
  const PlacementModel assumed = placement_model(Device::gpu(0).properties(), 1);
  ASSERT_EQ(assumed.gpu_figures, "assumed");
  const PlacementModel m = tune::measured_placement_model(assumed);
  EXPECT_EQ(m.gpu_figures, "measured");
  EXPECT_GT(mock().launches, launches) << "the launch probe ran on the GPU";
  EXPECT_TRUE(std::isfinite(m.pcie_bytes_per_s) && m.pcie_bytes_per_s > 0) << m.pcie_bytes_per_s;
  EXPECT_TRUE(std::isfinite(m.transfer_us) && m.transfer_us > 0) << m.transfer_us;
  EXPECT_TRUE(std::isfinite(m.gpu_launch_us) && m.gpu_launch_us > 0) << m.gpu_launch_us;
  EXPECT_EQ(m.gpu_sms, assumed.gpu_sms) << "the data sheet's figures stay";
  // The advice built from them names where they come from.
  KernelBuilder k("copy");
  auto n = k.param<int>("n");
  auto x = k.param<GlobalPtr<const float>>("x", extent(n));
  auto y = k.param<GlobalPtr<float>>("y", extent(n));
  k.block_threads(256);
  k.body([&](Scope& g) { lib::for_each(g, y, n, [&](Scope&, Expr i, ElemRef o) { o = x[i]; }); });
  const Placement p = k.build().report(Spec{}, {{"n", 1 << 20}}, 4096).placement(m);
  EXPECT_EQ(p.gpu_figures, "measured");
  EXPECT_NE(p.text().find("copies and launch measured on this GPU"), std::string::npos) << p.text();
  EXPECT_NEAR(p.transfer_ms, (8.0 * (1 << 20) / m.pcie_bytes_per_s) * 1e3 + 2 * m.transfer_us * 1e-3, 1e-9);
}

TEST(GpuMock, ALaunchPacksItsArgumentsForCuLaunchKernel) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  Kernel k = examples::saxpy();
  auto x = d.alloc<float>(1000), y = d.alloc<float>(1000);
  const auto& cx = x;
  int before = mock().launches.load();
  k.launch(d, Grid{4, 256}, 1000, 2.5f, cx, y);
  EXPECT_EQ(mock().launches.load(), before + 1);
  std::lock_guard lock(mock().mu);
  EXPECT_EQ(mock().grid, 4u);
  EXPECT_EQ(mock().block, 256u);
  // n, a, x, y, then the lengths of x and y, then the error record.
  ASSERT_EQ(mock().args.size(), 7u);
  EXPECT_EQ(mock().args[4], 1000u);
  EXPECT_EQ(mock().args[5], 1000u);
  EXPECT_NE(mock().args[6], 0u);
  EXPECT_EQ(static_cast<std::int32_t>(mock().args[0] & 0xffffffff), 1000);
  float a;
  std::uint32_t bits = static_cast<std::uint32_t>(mock().args[1]);
  std::memcpy(&a, &bits, 4);
  EXPECT_EQ(a, 2.5f);
  EXPECT_EQ(mock().args[2], x.view().address());
  EXPECT_EQ(mock().args[3], y.view().address());
}

// Targets: machine code runs on its major version at a minor at least its own, sm_90a's on 9.0 alone;
// a GPU newer than every target gets the newest one's PTX; one older than all is refused by name.
TEST(GpuMock, EachGpuGetsTheNewestTargetWhoseCodeRunsThere) {
  EXPECT_TRUE(gpu::runs_natively(Arch::SM_80, 8, 6));
  EXPECT_TRUE(gpu::runs_natively(Arch::SM_86, 8, 9));
  EXPECT_FALSE(gpu::runs_natively(Arch::SM_86, 8, 0));
  EXPECT_FALSE(gpu::runs_natively(Arch::SM_80, 9, 0));
  EXPECT_TRUE(gpu::runs_natively(Arch::SM_90a, 9, 0));
  EXPECT_FALSE(gpu::runs_natively(Arch::SM_90a, 10, 0));
  EXPECT_FALSE(gpu::runs_natively(Arch::SM_90, 10, 0));
  EXPECT_EQ(gpu::arch_for(8, 6, "a"), Arch::SM_86);
  EXPECT_EQ(gpu::arch_for(8, 7, "an Orin"), Arch::SM_86);
  EXPECT_EQ(gpu::arch_for(9, 0, "an H100"), Arch::SM_90);
  EXPECT_EQ(gpu::arch_for(10, 0, "a B200"), Arch::SM_90);
  EXPECT_EQ(gpu::arch_for(12, 0, "an RTX 5090"), Arch::SM_90);
  try {
    gpu::arch_for(7, 5, "a T4");
    ADD_FAILURE() << "a T4 has no target";
  } catch (const DriverError& e) {
    EXPECT_NE(std::string(e.what()).find("a T4 has compute capability 7.5; Vantage compiles for"), std::string::npos)
        << e.what();
  }
}

TEST(GpuMock, AGpuNewerThanEveryTargetRunsThePtxTheDriverCompilesOnce) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(2);
  auto x = d.alloc<float>(1000), y = d.alloc<float>(1000);
  const auto& cx = x;
  const int before = mock().ptx_compiles.load();
  examples::saxpy().launch(d, Grid{4, 256}, 1000, 2.5f, cx, y);
  EXPECT_EQ(mock().ptx_compiles.load(), before + 1);
  {
    std::lock_guard lock(mock().mu);
    EXPECT_EQ(mock().last_image.substr(0, 33),
              "\x7f"
              "ELF compiled from PTX for sm_100")
        << "the driver's code was loaded";
    EXPECT_NE(mock().last_ptx.find(".target sm_90"), std::string::npos);
    EXPECT_NE(mock().last_ptx.find(".entry"), std::string::npos);
  }
  // Another kernel object of the same source: a new module, the compiled PTX taken from the cache.
  const int modules = mock().modules.load();
  examples::saxpy().launch(d, Grid{4, 256}, 1000, 2.5f, cx, y);
  EXPECT_EQ(mock().modules.load(), modules + 1);
  EXPECT_EQ(mock().ptx_compiles.load(), before + 1);
  // The same kernel on an H100 runs its sm_90 cubin.
  auto hx = Device::gpu(0).alloc<float>(10), hy = Device::gpu(0).alloc<float>(10);
  const auto& chx = hx;
  examples::saxpy().launch(Device::gpu(0), Grid{1, 256}, 10, 1.0f, chx, hy);
  EXPECT_EQ(mock().ptx_compiles.load(), before + 1);
  std::lock_guard lock(mock().mu);
  EXPECT_EQ(mock().last_image.substr(0, 4),
            "\x7f"
            "ELF");
  EXPECT_EQ(mock().last_image.find("compiled from PTX"), std::string::npos);
}

TEST(GpuMock, AKernelOnlySm90aRunsIsRefusedOnANewerGpuNamingWhy) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(2);
  Kernel k = examples::gemm_wgmma_bf16();
  constexpr int M = 256, N = 384, K = 128;
  auto a = d.alloc<bfloat16>(M * K), bt = d.alloc<bfloat16>(N * K);
  auto c = d.alloc<float>(M * N);
  const auto &ca = a, &cbt = bt;
  expect_refused(
      [&] {
        k.launch(d, Grid{(M / 128) * (N / 128), 384}, M, N, K, ca, cbt, c);
      },
      "", {"only sm_90a has (wgmma)", "compute capability 9.0 alone", "GPU 2 (Mock B200 2, sm_100"});
}

// ---------------------------------------------------------------- the application's streams and memory
// A stream the application made (here through the driver, as the CUDA runtime would in the primary
// context) carries Vantage's launches, so they are ordered with the application's own work on it.
TEST(GpuMock, ALaunchOnAnAdoptedStreamGoesOnThatStream) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  gpu::make_current(0);
  CUstream app = nullptr;
  ASSERT_EQ(driver::table().stream_create(&app, 0), 0);
  Stream s = Stream::adopt(d, app, "torch stream");
  EXPECT_EQ(s.native(), app);
  auto x = d.alloc<float>(1000), y = d.alloc<float>(1000);
  const auto& cx = x;
  examples::saxpy().launch(s, Grid{4, 256}, 1000, 2.5f, cx, y);
  {
    std::lock_guard lock(mock().mu);
    EXPECT_EQ(mock().launch_stream, app);
  }
  { Stream gone = std::move(s); }  // not owned: the application's stream outlives Vantage's handle
  {
    std::lock_guard lock(mock().mu);
    EXPECT_EQ(mock().streams.count(app), 1u) << "an adopted stream is never destroyed by Vantage";
  }
  // Another GPU's stream, a stream the driver does not know, a handle on a host device: refused by name.
  auto refused = [](auto&& f, const std::vector<std::string>& words) {
    try {
      f();
      ADD_FAILURE() << "adopted";
    } catch (const LaunchError& e) {
      EXPECT_EQ(e.param(), "app stream");
      for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
    }
  };
  refused([&] { Stream::adopt(Device::gpu(1), app, "app stream"); },
          {"app stream belongs to another CUDA context than GPU 1", "primary context"});
  int bogus = 0;
  refused([&] { Stream::adopt(d, &bogus, "app stream"); }, {"is not a stream the driver knows"});
  refused([&] { Stream::adopt(Device::interpreter(), app, "app stream"); }, {"has no CUDA streams"});
  driver::table().stream_destroy(app);
}

// Memory another library allocated: checked with the driver, then launched on like Vantage's own.
TEST(GpuMock, ExternalMemoryIsCheckedWithTheDriverNamingTheArgument) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  gpu::make_current(0);
  CUdeviceptr x = 0, y = 0, other = 0, freed = 0;
  ASSERT_EQ(driver::table().mem_alloc(&x, 4000), 0);
  ASSERT_EQ(driver::table().mem_alloc(&y, 4000), 0);
  ASSERT_EQ(driver::table().mem_alloc(&freed, 4000), 0);
  gpu::make_current(1);
  ASSERT_EQ(driver::table().mem_alloc(&other, 4000), 0);
  void* pinned = nullptr;
  ASSERT_EQ(driver::table().mem_alloc_host(&pinned, 4000), 0);
  gpu::make_current(0);
  ASSERT_EQ(driver::table().mem_free(freed), 0);  // last, so that no allocation above reuses its address

  Buffer<const float> bx = d.wrap<const float>(x, 1000, "x");
  Buffer<float> by = d.wrap<float>(y, 1000, "y");
  EXPECT_EQ(bx.address(), x);
  EXPECT_EQ(by.size(), 1000);
  const int before = mock().launches.load();
  examples::saxpy().launch(d, Grid{4, 256}, 1000, 2.5f, bx, by);
  EXPECT_EQ(mock().launches.load(), before + 1);
  EXPECT_EQ(d.wrap<float>(y + 400, 900, "tail").size(), 900) << "a view inside an allocation";

  auto refused = [&](auto&& f, const std::string& name, const std::vector<std::string>& words) {
    try {
      f();
      ADD_FAILURE() << name << " was taken";
    } catch (const LaunchError& e) {
      EXPECT_EQ(e.param(), name) << e.what();
      for (const auto& w : words) EXPECT_NE(std::string(e.what()).find(w), std::string::npos) << e.what();
    }
  };
  refused([&] { d.wrap<float>(y, 1001, "too_long"); }, "too_long",
          {"holds 4000 bytes to the end of its allocation", "1001 elements of 4 bytes"});
  refused([&] { d.wrap<float>(y + 400, 901, "tail"); }, "tail", {"holds 3600 bytes"});
  refused([&] { d.wrap<float>(freed, 10, "freed"); }, "freed", {"is not memory the driver knows"});
  refused([&] { d.wrap<float>(reinterpret_cast<std::uint64_t>(pinned), 10, "pinned"); }, "pinned",
          {"is page-locked host memory, not memory of GPU 0"});
  refused([&] { d.wrap<float>(other, 10, "other"); }, "other", {"is memory of GPU 1, not of GPU 0"});
  refused([&] { d.wrap<double>(y + 4, 10, "odd"); }, "odd", {"is not aligned to its elements' 8 bytes"});
  std::vector<float> host(10);
  refused([&] { d.wrap<float>(reinterpret_cast<std::uint64_t>(host.data()), 10, "host"); }, "host",
          {"is not memory the driver knows"});
  gpu::make_current(0);
  driver::table().mem_free(x);
  driver::table().mem_free(y);
  driver::table().mem_free(other);
  driver::table().mem_free_host(pinned);
}

// Compiler options on a kernel handle reach the compile of its launches, and make their own code.
TEST(GpuMock, AKernelWithCompilerOptionsLaunchesItsOwnCompile) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  auto x = d.alloc<float>(1000), y = d.alloc<float>(1000);
  const auto& cx = x;
  Kernel plain = examples::saxpy();
  CompilerOptions o;
  o.fast_math = true;
  o.max_registers = 64;
  Kernel fast = plain.with_compiler(o);
  EXPECT_TRUE(fast.compiler().fast_math);
  EXPECT_FALSE(plain.compiler().fast_math);
  EXPECT_TRUE(fast.structurally_equal(plain));
  plain.launch(d, Grid{4, 256}, 1000, 2.5f, cx, y);
  const std::int64_t compiles = KernelCache::global().stats().compiles;
  fast.launch(d, Grid{4, 256}, 1000, 2.5f, cx, y);
  EXPECT_EQ(KernelCache::global().stats().compiles, compiles + 1) << "another key: its own compile";
  plain.with_compiler(o).launch(d, Grid{4, 256}, 1000, 2.5f, cx, y);
  EXPECT_EQ(KernelCache::global().stats().compiles, compiles + 1) << "the same options: the same code";
  Spec spec = Spec{}.with_threads(256).with_compiler(o);
  auto k = KernelCache::global().get(fast, spec);
  EXPECT_NE(std::find(k->options.begin(), k->options.end(), "--use_fast_math"), k->options.end());
  EXPECT_NE(std::find(k->options.begin(), k->options.end(), "--maxrregcount=64"), k->options.end());
}

// A graph captures checked launches on a stream and replays them; recorded again with new arguments it
// replays those; a launch refused while recording ends the capture and throws, leaving the graph as it was.
TEST(GpuMock, AGraphReplaysCheckedLaunchesAndIsUpdatedByRecordingAgain) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  Stream s(d);
  auto x = d.alloc<float>(1000), y = d.alloc<float>(1000), z = d.alloc<float>(1000);
  const auto& cx = x;
  Kernel k = examples::saxpy();
  k.launch(s, Grid{4, 256}, 1000, 2.5f, cx, y);  // compiled and loaded before the capture
  const int launches = mock().launches.load();
  Graph g = Graph::capture(s, [&](const Stream& st) {
    k.launch(st, Grid{4, 256}, 1000, 2.5f, cx, y);
    k.launch(st, Grid{4, 256}, 500, 1.5f, cx, z);
  });
  EXPECT_EQ(g.size(), 2u);
  EXPECT_EQ(mock().launches.load(), launches) << "captured, not run";
  const int replays = mock().replays.load();
  g.launch(s);
  g.launch(s);
  EXPECT_EQ(mock().replays.load(), replays + 4);
  {
    std::lock_guard lock(mock().mu);
    EXPECT_EQ(mock().launch_stream, s.native());
    EXPECT_EQ(static_cast<std::int32_t>(mock().args[0] & 0xffffffff), 500);
    EXPECT_EQ(mock().args[3], z.view().address());
  }
  // New arguments: recorded again, each checked, and the graph replays them.
  g.update(s, [&](const Stream& st) {
    k.launch(st, Grid{4, 256}, 1000, 2.5f, cx, z);
    k.launch(st, Grid{4, 256}, 250, 1.5f, cx, y);
  });
  g.launch(s);
  {
    std::lock_guard lock(mock().mu);
    EXPECT_EQ(static_cast<std::int32_t>(mock().args[0] & 0xffffffff), 250);
    EXPECT_EQ(mock().args[3], y.view().address());
  }
  // Another number of launches: the graph is made again.
  g.update(s, [&](const Stream& st) { k.launch(st, Grid{4, 256}, 100, 1.0f, cx, y); });
  EXPECT_EQ(g.size(), 1u);
  const int before = mock().replays.load();
  g.launch(s);
  EXPECT_EQ(mock().replays.load(), before + 1);
  // A bad launch while recording: refused as always, and the graph keeps what it had.
  auto small = d.alloc<float>(10);
  EXPECT_THROW(g.update(s, [&](const Stream& st) { k.launch(st, Grid{4, 256}, 1000, 1.0f, cx, small); }), LaunchError);
  EXPECT_EQ(g.size(), 1u);
  {
    std::lock_guard lock(mock().mu);
    EXPECT_TRUE(mock().capturing.empty()) << "the capture ended";
  }
  // The default stream cannot capture.
  try {
    Graph::capture(Stream::default_for(d), [&](const Stream&) {});
    ADD_FAILURE() << "captured on the default stream";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("not on GPU 0"), std::string::npos) << e.what();
  }
}

// A GPU buffer given out as a DLPack tensor names cuda:N; one taken in is checked with the driver too.
TEST(GpuMock, DlpackTensorsOfAGpuAreCheckedWithTheDriver) {
  Device d = Device::gpu(0);
  DLManagedTensor* t = to_dlpack(d.alloc<float>(64), {8, 8});
  EXPECT_EQ(t->dl_tensor.device.device_type, kDLCUDA);
  EXPECT_EQ(t->dl_tensor.device.device_id, 0);
  Buffer<float> b = from_dlpack<float>(t, d, "t");
  EXPECT_EQ(b.size(), 64);
  try {
    from_dlpack<float>(t, Device::gpu(1), "t");
    ADD_FAILURE() << "GPU 0's tensor taken for GPU 1";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("t is on cuda:0, not on GPU 1"), std::string::npos) << e.what();
  }
  const std::int64_t live = static_cast<std::int64_t>(mock().allocations.size());
  t->deleter(t);
  EXPECT_EQ(static_cast<std::int64_t>(mock().allocations.size()), live - 1) << "the tensor owned the buffer";
  // A tensor whose shape claims more than its allocation holds: the driver's range refuses it.
  auto small = d.alloc<float>(10);
  DLManagedTensor* view = to_dlpack(small.view());
  std::int64_t more = 11;
  view->dl_tensor.shape = &more;
  try {
    from_dlpack<float>(view, d, "small");
    ADD_FAILURE() << "11 elements taken from 10";
  } catch (const LaunchError& e) {
    EXPECT_NE(std::string(e.what()).find("fewer than the 11 elements"), std::string::npos) << e.what();
  }
  view->dl_tensor.shape = nullptr;
  view->deleter(view);
}

// test_support::launch_on, with which the user-kernel tests run on a GPU where the bundle's check has
// one: host vectors go to buffers of the GPU, the launcher checks them as any buffers, and what the
// kernel may change comes back (here the kernel's effect is written by hand, as saxpy's).
TEST(GpuMock, LaunchOnStagesHostVectorsAndCopiesBackWhatTheKernelMayChange) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  Kernel k = examples::saxpy();
  std::vector<float> x(1000), y(1000, 2.0f);
  for (std::size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>(i);
  {
    std::lock_guard lock(mock().mu);
    mock().effect = [](const std::vector<std::uint64_t>& args) {
      ASSERT_EQ(args[4], 1000u) << "x's length";
      ASSERT_EQ(args[5], 1000u) << "y's length";
      const auto* xs = reinterpret_cast<const float*>(args[2]);
      auto* ys = reinterpret_cast<float*>(args[3]);
      for (int i = 0; i < 1000; ++i) ys[i] = 2.5f * xs[i] + ys[i];
    };
  }
  int before = mock().launches.load();
  test_support::launch_on(k, d, Grid{4, 256}, 1000, 2.5f, std::as_const(x), y);
  EXPECT_EQ(mock().launches.load(), before + 1);
  for (std::size_t i = 0; i < y.size(); ++i) ASSERT_EQ(y[i], 2.5f * x[i] + 2.0f) << i;
  EXPECT_EQ(x[999], 999.0f) << "a const vector is not copied back";
}

// The wgmma GEMM's tensor maps: made at launch from the buffers given (K-major rows, the 128-byte
// swizzle, the box the builder named), passed by value after the error record.
TEST(GpuMock, TensorMapsAreMadeFromTheBuffersGivenAndPassedLast) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  Kernel k = examples::gemm_wgmma_bf16();
  constexpr int M = 256, N = 384, K = 128;
  auto a = d.alloc<bfloat16>(M * K), bt = d.alloc<bfloat16>(N * K);
  auto c = d.alloc<float>(M * N);
  const auto &ca = a, &cbt = bt;
  std::size_t encodes_before = 0;
  {
    std::lock_guard lock(mock().mu);
    encodes_before = mock().encodes.size();
  }
  k.launch(d, Grid{(M / 128) * (N / 128), 384}, M, N, K, ca, cbt, c);
  std::lock_guard lock(mock().mu);
  ASSERT_EQ(mock().encodes.size(), encodes_before + 2);
  const auto& ea = mock().encodes[encodes_before];
  const auto& eb = mock().encodes[encodes_before + 1];
  EXPECT_EQ(ea.type, 9);     // CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
  EXPECT_EQ(ea.swizzle, 3);  // CU_TENSOR_MAP_SWIZZLE_128B
  EXPECT_EQ(ea.rank, 2);
  EXPECT_EQ(ea.address, a.view().address());
  EXPECT_EQ(ea.dims[0], static_cast<std::uint64_t>(K));  // innermost first: columns, then rows
  EXPECT_EQ(ea.dims[1], static_cast<std::uint64_t>(M));
  EXPECT_EQ(ea.stride, static_cast<std::uint64_t>(K * 2));
  EXPECT_EQ(ea.box[0], 64u);
  EXPECT_EQ(ea.box[1], 128u);
  EXPECT_EQ(eb.address, bt.view().address());
  EXPECT_EQ(eb.dims[1], static_cast<std::uint64_t>(N));
  // M, N, K, A, Bt, C, three lengths, the error record, then the two maps, all 128 bytes of each.
  ASSERT_EQ(mock().args.size(), 12u);
  ASSERT_EQ(mock().map_args.size(), 2u);
  EXPECT_EQ(mock().map_args[0][0] & 0xffffffffu, encodes_before + 1);
  EXPECT_EQ(mock().map_args[0][15], a.view().address());
  EXPECT_EQ(mock().map_args[1][15], bt.view().address());
  EXPECT_EQ(mock().block, 384u);
}

// A map that would reach past its buffer is refused before the driver is asked, naming the map.
TEST(GpuMock, ATensorMapLargerThanItsBufferIsRefused) {
  REQUIRE_NVRTC();
  Kernel k = testing::tma_box_copy(32);
  Device d = Device::gpu(0);
  auto src_buf = d.alloc<float>(8 * 32);
  auto out_buf = d.alloc<float>(32);
  const auto& csrc = src_buf;
  k.launch(d, Grid{1, 32}, 8, csrc, out_buf);  // 8 rows of 32: exactly the buffer
  expect_refused(
      [&] {
        k.launch(d, Grid{1, 32}, 9, csrc, out_buf);
      },
      "src", {"tensor map 'src_map'", "9 x 32", "holds 256"});
}

// A false assert_that on the GPU: what vt_fail records at the assertion's site is reported as the
// interpreter reports it, with its text and line, and the record is cleared.
TEST(GpuMock, AFalseAssertionOnTheGpuIsReportedWithItsTextAndLine) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  KernelBuilder b("asserting");
  auto n = b.param<int>("n");
  auto out = b.param<GlobalPtr<float>>("out", extent(n));
  b.block_threads(256);
  const int line = __LINE__ + 3;
  b.body([&](Scope& g) {
    lib::for_each(g, out, n, [&](Scope& th, Expr i, ElemRef e) {
      th.assert_that(i < n, "i is below n");
      e = 1.0f;
    });
  });
  Kernel k = b.build();
  auto dout = d.alloc<float>(1000);
  mock().fail_next = true;
  mock().fail_assertion = true;
  k.launch(d, Grid{4, 256}, 1000, dout);
  try {
    d.synchronize();
    FAIL() << "the recorded assertion was not reported";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "assert");
    const std::string what = e.what();
    EXPECT_NE(what.find("kernel 'asserting': block 2 thread 5: assert_that(\"i is below n\") failed at "),
              std::string::npos)
        << what;
    EXPECT_NE(what.find("test_gpu_mock.cpp:" + std::to_string(line)), std::string::npos) << what;
    ASSERT_EQ(e.locs().size(), 1u);
    EXPECT_EQ(static_cast<int>(e.locs()[0].line), line);
  }
  EXPECT_NO_THROW(d.synchronize()) << "the record was not cleared";
}

TEST(GpuMock, AnAccessThatFailsItsCheckOnTheGpuIsReportedAtItsLine) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  // A gather: site 0 is x[idx[i]], whose index comes from the data (no proof can bound it).
  KernelBuilder b("gather");
  auto n = b.param<int>("n");
  auto idx = b.param<GlobalPtr<const int>>("idx", extent(n));
  auto x = b.param<GlobalPtr<const float>>("x", extent(n));
  auto out = b.param<GlobalPtr<float>>("out", extent(n));
  b.block_threads(256);
  const int line = __LINE__ + 1;
  b.body([&](Scope& g) { lib::for_each(g, out, n, [&](Scope&, Expr i, ElemRef e) { e = x[idx[i]]; }); });
  Kernel k = b.build();
  auto di = d.alloc<int>(1000);
  auto dx = d.alloc<float>(1000), dout = d.alloc<float>(1000);
  const auto& cdi = di;
  const auto& cdx = dx;
  mock().fail_next = true;
  k.launch(d, Grid{4, 256}, 1000, cdi, cdx, dout);
  try {
    d.synchronize();
    FAIL() << "the recorded failure was not reported";
  } catch (const ExecutionError& e) {
    EXPECT_EQ(e.check(), "memcheck");
    std::string what = e.what();
    EXPECT_NE(what.find("kernel 'gather'"), std::string::npos) << what;
    EXPECT_NE(what.find("block 2 thread 5 reads 'x'[1000]"), std::string::npos) << what;
    EXPECT_NE(what.find("test_gpu_mock.cpp:" + std::to_string(line)), std::string::npos) << what;
    ASSERT_EQ(e.locs().size(), 1u);
    EXPECT_EQ(static_cast<int>(e.locs()[0].line), line);
  }
  EXPECT_NO_THROW(d.synchronize()) << "the record was not cleared";
}

TEST(GpuMock, EveryBadLaunchIsRefusedNamingTheParameter) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0), other = Device::gpu(1);
  Kernel saxpy = examples::saxpy();
  auto x = d.alloc<float>(1000), y = d.alloc<float>(1000), small = d.alloc<float>(10);
  auto on_other = other.alloc<float>(1000);
  auto wrong = d.alloc<double>(1000);
  const auto& cx = x;
  const auto& cy = y;
  std::vector<float> host(1000);
  Grid g{4, 256};
  expect_refused([&] { saxpy.launch(d, g, 1000, 2.0f, cx); }, "", {"takes 4 arguments; 3 were given"});
  expect_refused([&] { saxpy.launch(d, g, 1000, 2.0, cx, y); }, "a", {"expected a scalar f32", "scalar f64"});
  expect_refused([&] { saxpy.launch(d, g, 1000, 2.0f, wrong, y); }, "x", {"buffer of f32", "buffer of f64"});
  expect_refused([&] { saxpy.launch(d, g, 1000, 2.0f, cx, cy); }, "y", {"read-only buffer"});
  expect_refused([&] { saxpy.launch(d, g, 1000, 2.0f, cx, host); }, "y", {"host memory", "GPU 0", "alloc"});
  expect_refused([&] { saxpy.launch(d, g, 1000, 2.0f, cx, on_other); }, "y", {"GPU 1", "runs on GPU 0"});
  expect_refused([&] { saxpy.launch(d, g, 1000, 2.0f, cx, small); }, "y", {"'y'", "extent n is 1000", "holds 10"});
  expect_refused([&] { saxpy.launch(d, g, 1000, 2.0f, y.view(), y); }, "y", {"overlaps the buffer given for 'x'"});
  // The interpreter runs on host memory: a GPU buffer is refused there.
  std::vector<float> hx(1000);
  const auto& chx = hx;
  expect_refused([&] { saxpy.launch(Device::interpreter(), g, 1000, 2.0f, chx, y); }, "y",
                 {"buffer of f32 on GPU 0", "interpreter", "host"});
  // A vector access needs 16-byte alignment: one element in is 4 bytes off.
  Kernel vec = examples::vec_copy();
  auto in = d.alloc<float>(1025), out = d.alloc<float>(1024);
  Buffer<const float> shifted = Buffer<const float>(in.view()).sub(1, 1024);
  expect_refused([&] { vec.launch(d, Grid{1, 256}, 1024, shifted, out); }, "in", {"16-byte alignment"});
  // A block size the kernel's rules refuse, and one the device refuses.
  expect_refused(
      [&] {
        saxpy.launch(d, Grid{4, 128}, 1000, 2.0f, cx, y);
      },
      "grid.threads", {"cannot run with 128 threads per block", "declares 256"});
  // Shared memory over the device's limit.
  KernelBuilder big("big_shared");
  auto o = big.param<GlobalPtr<float>>("o");
  big.block_threads(32);
  big.shared_budget(200 * 1024);
  big.body([&](Scope& g) {
    auto blk = g.let("blk", g.id(block(1)));
    g.partition(
        o, block(1), [&](Expr i) { return blk * 32 + i; },
        [&](Scope& g, View ob) {
          g.group(block(1), [&](Scope& b) {
            auto s = b.shared<float>("s", 50 * 1024);
            auto t = b.let("t", b.id(thread(1)));
            b.partition(
                s, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View s_t) { b.group(thread(1), [&](Scope&) { s_t[0] = 1.0f; }); });
            b.partition(
                ob, thread(1), [&](Expr i) { return t + i; },
                [&](Scope& b, View o_t) { b.group(thread(1), [&](Scope&) { o_t[0] = s[(t + 1) % 32]; }); });
          });
        });
  });
  Kernel bk = big.build();
  auto ob = other.alloc<float>(32);
  expect_refused(
      [&] {
        bk.launch(other, Grid{1, 32}, ob);
      },
      "", {"204800 bytes of shared memory", "GPU 1", "allows 101376"});
  // Registers times threads over the block's registers (the mocked cubin reports 100 per thread).
  mock().registers = 100;
  Kernel many = examples::sgemm_smem();
  auto A = d.alloc<float>(64 * 64), B = d.alloc<float>(64 * 64), C = d.alloc<float>(64 * 64);
  const auto& cA = A;
  const auto& cB = B;
  expect_refused(
      [&] {
        many.launch(d, Grid{4, 1024}, 64, 64, 64, 1.0f, 0.0f, cA, cB, C);
      },
      "grid.threads", {"100 registers per thread", "102400", "65536"});
  mock().registers = 40;
}

TEST(Concurrency, AGpuSpecializationIsMadeOnceHoweverManyThreadsLaunchIt) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  Kernel k = examples::saxpy();
  auto x = d.alloc<float>(4096), y = d.alloc<float>(4096);
  int modules = mock().modules.load();
  std::vector<std::thread> threads;
  for (int i = 0; i < 8; ++i)
    threads.emplace_back([&] {
      const auto& cx = x;
      for (int r = 0; r < 20; ++r) k.launch(d, Grid{16, 256}, 4096, 1.0f, cx, y);
    });
  for (auto& t : threads) t.join();
  LaunchStats s = launch_stats(k);
  EXPECT_EQ(s.compiles, 1);
  EXPECT_EQ(s.launches + s.misses, 160);
  EXPECT_EQ(mock().modules.load(), modules + 1) << "the module was loaded more than once";
}

// A counting operator new: the prepare path of a launch that hits must not allocate.
std::atomic<long> g_allocations{0};
std::atomic<bool> g_counting{false};

TEST(GpuMock, APreparedLaunchAllocatesNothing) {
  REQUIRE_NVRTC();
  Device d = Device::gpu(0);
  Kernel k = examples::sgemm_smem();
  auto A = d.alloc<float>(64 * 64), B = d.alloc<float>(64 * 64), C = d.alloc<float>(64 * 64);
  const auto& cA = A;
  const auto& cB = B;
  k.launch(d, Grid{4, 1024}, 64, 64, 64, 1.0f, 0.0f, cA, cB, C);  // made here
  const std::array<LaunchArg, 8> args{LaunchArg(64),   LaunchArg(64), LaunchArg(64), LaunchArg(1.0f),
                                      LaunchArg(0.0f), LaunchArg(cA), LaunchArg(cB), LaunchArg(C)};
  runtime::Prepared p;
  // The counter counts (so that a zero below means something).
  g_allocations = 0;
  g_counting = true;
  int* volatile probe = new int(7);  // volatile: a new/delete pair may otherwise be elided
  delete probe;
  g_counting = false;
  ASSERT_EQ(g_allocations.load(), 1);
  g_allocations = 0;
  g_counting = true;
  for (int i = 0; i < 100; ++i) runtime::prepare(k, d, Grid{4, 1024}, args, p);
  k.launch(d, Grid{4, 1024}, 64, 64, 64, 1.0f, 0.0f, cA, cB, C);
  g_counting = false;
  EXPECT_EQ(g_allocations.load(), 0) << "the launch path allocated";
}

}  // namespace
}  // namespace vantage

// Every unaligned form is replaced, so that whatever pair a library uses (LLVM allocates with the
// nothrow form and frees with the sized one) is malloc and free on both sides: under AddressSanitizer
// a form left to it would pair its own allocation with the free below.
void* operator new(std::size_t n) {
  if (vantage::g_counting) ++vantage::g_allocations;
  if (void* p = std::malloc(n ? n : 1)) return p;
  throw std::bad_alloc();
}
void* operator new[](std::size_t n) { return ::operator new(n); }
void* operator new(std::size_t n, const std::nothrow_t&) noexcept {
  if (vantage::g_counting) ++vantage::g_allocations;
  return std::malloc(n ? n : 1);
}
void* operator new[](std::size_t n, const std::nothrow_t& t) noexcept { return ::operator new(n, t); }
// The replacements pair with the operator new above (malloc); GCC cannot see that and warns.
#pragma GCC diagnostic push
#pragma GCC diagnostic ignored "-Wmismatched-new-delete"
void operator delete(void* p) noexcept { std::free(p); }
void operator delete(void* p, std::size_t) noexcept { std::free(p); }
void operator delete[](void* p) noexcept { std::free(p); }
void operator delete[](void* p, std::size_t) noexcept { std::free(p); }
void operator delete(void* p, const std::nothrow_t&) noexcept { std::free(p); }
void operator delete[](void* p, const std::nothrow_t&) noexcept { std::free(p); }
#pragma GCC diagnostic pop

int main(int argc, char** argv) {
  setenv("VANTAGE_CACHE_DISABLE", "1", 1);
  vantage::driver::install_for_testing(vantage::mock_table());
  ::testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
