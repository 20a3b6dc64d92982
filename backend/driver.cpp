// Vantage CUDA driver binding: see driver.h.
#include "backend/driver.h"

#include <dlfcn.h>

#include <cstdlib>
#include <mutex>

#include "support/log.h"
#include "vantage/diagnostics.hpp"

namespace vantage::driver {
namespace {

template <class F>
bool resolve(void* handle, F& fn, const char* name, std::string& error) {
  fn = reinterpret_cast<F>(dlsym(handle, name));
  if (!fn && error.empty()) error = std::string("the CUDA driver has no symbol ") + name;
  return fn != nullptr;
}

Table load() {
  Table t;
  std::string path = "libcuda.so.1";
  if (const char* env = std::getenv("VANTAGE_CUDA_DRIVER")) {
    if (std::string(env) == "none") {
      t.error = "the CUDA driver is disabled by VANTAGE_CUDA_DRIVER=none";
      return t;
    }
    path = env;
  }
  void* h = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (!h) {
    const char* why = dlerror();
    t.error = std::string("no CUDA driver on this host (") + (why ? why : (path + ": not found").c_str()) + ")";
    return t;
  }
  t.path = path;
  std::string err;
  // The _v2 names are what cuda.h maps the plain names to.
  bool ok =
      resolve(h, t.get_error_name, "cuGetErrorName", err) && resolve(h, t.get_error_string, "cuGetErrorString", err) &&
      resolve(h, t.init, "cuInit", err) && resolve(h, t.driver_get_version, "cuDriverGetVersion", err) &&
      resolve(h, t.device_get_count, "cuDeviceGetCount", err) && resolve(h, t.device_get, "cuDeviceGet", err) &&
      resolve(h, t.device_get_name, "cuDeviceGetName", err) &&
      resolve(h, t.device_get_attribute, "cuDeviceGetAttribute", err) &&
      resolve(h, t.device_total_mem, "cuDeviceTotalMem_v2", err) &&
      resolve(h, t.primary_ctx_retain, "cuDevicePrimaryCtxRetain", err) &&
      resolve(h, t.primary_ctx_release, "cuDevicePrimaryCtxRelease_v2", err) &&
      resolve(h, t.ctx_set_current, "cuCtxSetCurrent", err) && resolve(h, t.ctx_synchronize, "cuCtxSynchronize", err) &&
      resolve(h, t.mem_alloc, "cuMemAlloc_v2", err) && resolve(h, t.mem_free, "cuMemFree_v2", err) &&
      resolve(h, t.mem_alloc_host, "cuMemAllocHost_v2", err) && resolve(h, t.mem_free_host, "cuMemFreeHost", err) &&
      resolve(h, t.memcpy_htod, "cuMemcpyHtoD_v2", err) && resolve(h, t.memcpy_dtoh, "cuMemcpyDtoH_v2", err) &&
      resolve(h, t.memcpy_dtod, "cuMemcpyDtoD_v2", err) &&
      resolve(h, t.memcpy_htod_async, "cuMemcpyHtoDAsync_v2", err) &&
      resolve(h, t.memcpy_dtoh_async, "cuMemcpyDtoHAsync_v2", err) && resolve(h, t.memset_d8, "cuMemsetD8_v2", err) &&
      resolve(h, t.stream_create, "cuStreamCreate", err) && resolve(h, t.stream_destroy, "cuStreamDestroy_v2", err) &&
      resolve(h, t.stream_synchronize, "cuStreamSynchronize", err) &&
      resolve(h, t.event_create, "cuEventCreate", err) && resolve(h, t.event_destroy, "cuEventDestroy_v2", err) &&
      resolve(h, t.event_record, "cuEventRecord", err) && resolve(h, t.event_synchronize, "cuEventSynchronize", err) &&
      resolve(h, t.event_elapsed_time, "cuEventElapsedTime", err) &&
      resolve(h, t.module_load_data, "cuModuleLoadData", err) && resolve(h, t.module_unload, "cuModuleUnload", err) &&
      resolve(h, t.module_get_function, "cuModuleGetFunction", err) &&
      resolve(h, t.func_get_attribute, "cuFuncGetAttribute", err) &&
      resolve(h, t.func_set_attribute, "cuFuncSetAttribute", err) &&
      resolve(h, t.launch_kernel, "cuLaunchKernel", err) &&
      resolve(h, t.occupancy_max_active_blocks, "cuOccupancyMaxActiveBlocksPerMultiprocessor", err);
  // Optional: only kernels with TMA tensor maps need it, and they say so when it is missing.
  t.tensor_map_encode_tiled = reinterpret_cast<decltype(t.tensor_map_encode_tiled)>(dlsym(h, "cuTensorMapEncodeTiled"));
  t.pointer_get_attribute = reinterpret_cast<decltype(t.pointer_get_attribute)>(dlsym(h, "cuPointerGetAttribute"));
  t.mem_get_address_range = reinterpret_cast<decltype(t.mem_get_address_range)>(dlsym(h, "cuMemGetAddressRange_v2"));
  t.stream_get_ctx = reinterpret_cast<decltype(t.stream_get_ctx)>(dlsym(h, "cuStreamGetCtx"));
  t.stream_begin_capture = reinterpret_cast<decltype(t.stream_begin_capture)>(dlsym(h, "cuStreamBeginCapture_v2"));
  t.stream_end_capture = reinterpret_cast<decltype(t.stream_end_capture)>(dlsym(h, "cuStreamEndCapture"));
  t.graph_instantiate = reinterpret_cast<decltype(t.graph_instantiate)>(dlsym(h, "cuGraphInstantiateWithFlags"));
  t.graph_launch = reinterpret_cast<decltype(t.graph_launch)>(dlsym(h, "cuGraphLaunch"));
  t.graph_exec_update = reinterpret_cast<decltype(t.graph_exec_update)>(dlsym(h, "cuGraphExecUpdate_v2"));
  t.graph_get_nodes = reinterpret_cast<decltype(t.graph_get_nodes)>(dlsym(h, "cuGraphGetNodes"));
  t.graph_destroy = reinterpret_cast<decltype(t.graph_destroy)>(dlsym(h, "cuGraphDestroy"));
  t.graph_exec_destroy = reinterpret_cast<decltype(t.graph_exec_destroy)>(dlsym(h, "cuGraphExecDestroy"));
  // Optional too: only a GPU no Vantage target runs as machine code needs PTX compiled.
  t.link_create = reinterpret_cast<decltype(t.link_create)>(dlsym(h, "cuLinkCreate_v2"));
  t.link_add_data = reinterpret_cast<decltype(t.link_add_data)>(dlsym(h, "cuLinkAddData_v2"));
  t.link_complete = reinterpret_cast<decltype(t.link_complete)>(dlsym(h, "cuLinkComplete"));
  t.link_destroy = reinterpret_cast<decltype(t.link_destroy)>(dlsym(h, "cuLinkDestroy"));
  if (!ok) {
    dlclose(h);
    Table none;
    none.error = "the CUDA driver at " + path + " is too old: " + err;
    return none;
  }
  return t;
}

std::mutex& table_mutex() {
  static std::mutex m;
  return m;
}
const Table*& current() {
  static const Table* t = nullptr;
  return t;
}

}  // namespace

const Table& table() {
  // Loaded once; after that, a plain read (install_for_testing runs before any GPU use).
  static const Table* loaded = [] {
    std::lock_guard lock(table_mutex());
    if (!current()) {
      current() = new Table(load());  // lives for the process: its entry points are used until exit
      if (current()->loaded())
        logging::get().debug("CUDA driver loaded from {}", current()->path);
      else
        logging::get().debug("{}", current()->error);
    }
    return current();
  }();
  return *loaded;
}

void install_for_testing(const Table& t) {
  std::lock_guard lock(table_mutex());
  if (current()) throw InternalError("driver::install_for_testing after the driver was already used");
  current() = new Table(t);
  if (current()->path.empty()) const_cast<Table*>(current())->path = "mock";
}

std::string describe(CUresult r) {
  const Table& t = table();
  const char* name = nullptr;
  const char* text = nullptr;
  if (t.get_error_name) t.get_error_name(r, &name);
  if (t.get_error_string) t.get_error_string(r, &text);
  std::string s = name ? name : "CUDA error " + std::to_string(r);
  if (text) s += std::string(" (") + text + ")";
  return s;
}

void check(CUresult r, const char* call, const std::string& object) {
  if (r == kSuccess) return;
  throw DriverError(call, r, std::string(call) + "(" + object + "): " + describe(r));
}

std::vector<char> compile_ptx(const std::string& ptx, const std::string& object) {
  const Table& d = table();
  if (!d.link_create || !d.link_add_data || !d.link_complete || !d.link_destroy)
    throw DriverError("cuLinkCreate", 0,
                      "the CUDA driver at " + d.path + " has no PTX compiler (cuLinkCreate_v2), needed for " + object);
  char log[4096] = {};
  int options[] = {kJitErrorLogBuffer, kJitErrorLogBufferBytes};
  void* values[] = {log, reinterpret_cast<void*>(static_cast<std::uintptr_t>(sizeof log - 1))};
  CUlinkState state = nullptr;
  check(d.link_create(2, options, values, &state), "cuLinkCreate", object);
  auto fail = [&](CUresult r, const char* call) {
    d.link_destroy(state);
    throw DriverError(call, r,
                      std::string(call) + "(" + object + "): " + describe(r) + (log[0] ? std::string(": ") + log : ""));
  };
  CUresult r = d.link_add_data(state, kJitInputPtx, const_cast<char*>(ptx.c_str()), ptx.size() + 1, "vantage.ptx", 0,
                               nullptr, nullptr);
  if (r != kSuccess) fail(r, "cuLinkAddData");
  void* image = nullptr;
  std::size_t size = 0;
  r = d.link_complete(state, &image, &size);
  if (r != kSuccess) fail(r, "cuLinkComplete");
  std::vector<char> out(static_cast<const char*>(image), static_cast<const char*>(image) + size);
  d.link_destroy(state);  // owns the image
  return out;
}

}  // namespace vantage::driver
