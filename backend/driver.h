// Vantage CUDA driver binding: libcuda.so.1 loaded with dlopen through one typed table, so that the
// library links and runs on hosts without a driver. Every failing call becomes a DriverError that
// names the call, the object it was about and the result code in words ("cuMemAlloc(4096 bytes on
// GPU 0): CUDA_ERROR_OUT_OF_MEMORY (out of memory)"). Tests install a table of their own (a mocked
// driver) to run the GPU launch path on machines without one.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

namespace vantage::driver {

// The driver's handle types, declared here so that nothing includes cuda.h.
using CUresult = int;
using CUdevice = int;
using CUdeviceptr = unsigned long long;
struct CUctx_st;
struct CUmod_st;
struct CUfunc_st;
struct CUstream_st;
struct CUevent_st;
struct CUlinkState_st;
using CUlinkState = CUlinkState_st*;
struct CUgraph_st;
struct CUgraphExec_st;
struct CUgraphNode_st;
using CUgraph = CUgraph_st*;
using CUgraphExec = CUgraphExec_st*;
using CUgraphNode = CUgraphNode_st*;
/// CUgraphExecUpdateResultInfo.
struct GraphUpdateInfo {
  int result = 0;
  CUgraphNode error_node = nullptr;
  CUgraphNode error_from_node = nullptr;
};
using CUcontext = CUctx_st*;
using CUmodule = CUmod_st*;
using CUfunction = CUfunc_st*;
using CUstream = CUstream_st*;
using CUevent = CUevent_st*;

inline constexpr CUresult kSuccess = 0;
inline constexpr CUresult kNotReady = 600;

/// CUdevice_attribute values Vantage reads (cuda.h; a test compares them with the toolkit's header).
enum Attribute : int {
  kMaxThreadsPerBlock = 1,
  kMaxBlockDimX = 2,
  kMaxGridDimX = 5,
  kMaxSharedPerBlock = 8,
  kWarpSize = 10,
  kMaxRegistersPerBlock = 12,
  kClockRateKhz = 13,
  kMultiprocessors = 16,
  kMemoryClockKhz = 36,
  kMemoryBusBits = 37,
  kL2Bytes = 38,
  kMaxThreadsPerMultiprocessor = 39,
  kUnifiedAddressing = 41,
  kComputeMajor = 75,
  kComputeMinor = 76,
  kMaxSharedPerMultiprocessor = 81,
  kMaxRegistersPerMultiprocessor = 82,
  kMaxSharedPerBlockOptin = 97,
  kMaxBlocksPerMultiprocessor = 106,
};
/// CUtensorMapDataType, CUtensorMapSwizzle and CUtensorMapL2promotion values Vantage passes.
enum TensorMapValue : int {
  kTensorUint8 = 0,
  kTensorUint16 = 1,
  kTensorUint32 = 2,
  kTensorInt32 = 3,
  kTensorUint64 = 4,
  kTensorInt64 = 5,
  kTensorFloat16 = 6,
  kTensorFloat32 = 7,
  kTensorFloat64 = 8,
  kTensorBfloat16 = 9,
  kSwizzle128B = 3,
  kL2Promotion256B = 3,
};
/// CUpointer_attribute and CUmemorytype values: what external memory is.
enum PointerValue : int {
  kPointerMemoryType = 2,
  kPointerDeviceOrdinal = 9,
  kMemoryHost = 1,
  kMemoryDevice = 2,
  kMemoryArray = 3,
  kMemoryUnified = 4,
};
/// CUstreamCaptureMode and CUgraphExecUpdateResult values.
enum GraphValue : int {
  kCaptureRelaxed = 2,
  kUpdateSuccess = 0,
  kUpdateTopologyChanged = 2,
  kUpdateNodeTypeChanged = 3,
  kUpdateFunctionChanged = 4,
  kUpdateParametersChanged = 5,
  kUpdateNotSupported = 6,
};
/// CUjit_option and CUjitInputType values Vantage passes to the linker.
enum JitValue : int {
  kJitErrorLogBuffer = 5,
  kJitErrorLogBufferBytes = 6,
  kJitInputPtx = 1,
};
/// CUfunction_attribute values.
enum FuncAttribute : int {
  kFuncMaxThreadsPerBlock = 0,
  kFuncSharedBytes = 1,
  kFuncLocalBytes = 3,
  kFuncNumRegs = 4,
  kFuncMaxDynamicShared = 8,
};

/// The driver entry points Vantage uses. A null `init` means no driver (see `error`).
struct Table {
  std::string path;   ///< where it was loaded from ("mock" for a test's table)
  std::string error;  ///< why there is no driver, when there is none
  CUresult (*get_error_name)(CUresult, const char**) = nullptr;
  CUresult (*get_error_string)(CUresult, const char**) = nullptr;
  CUresult (*init)(unsigned) = nullptr;
  CUresult (*driver_get_version)(int*) = nullptr;
  CUresult (*device_get_count)(int*) = nullptr;
  CUresult (*device_get)(CUdevice*, int) = nullptr;
  CUresult (*device_get_name)(char*, int, CUdevice) = nullptr;
  CUresult (*device_get_attribute)(int*, int, CUdevice) = nullptr;
  CUresult (*device_total_mem)(std::size_t*, CUdevice) = nullptr;
  CUresult (*primary_ctx_retain)(CUcontext*, CUdevice) = nullptr;
  CUresult (*primary_ctx_release)(CUdevice) = nullptr;
  CUresult (*ctx_set_current)(CUcontext) = nullptr;
  CUresult (*ctx_synchronize)() = nullptr;
  CUresult (*mem_alloc)(CUdeviceptr*, std::size_t) = nullptr;
  CUresult (*mem_free)(CUdeviceptr) = nullptr;
  CUresult (*mem_alloc_host)(void**, std::size_t) = nullptr;
  CUresult (*mem_free_host)(void*) = nullptr;
  CUresult (*memcpy_htod)(CUdeviceptr, const void*, std::size_t) = nullptr;
  CUresult (*memcpy_dtoh)(void*, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*memcpy_dtod)(CUdeviceptr, CUdeviceptr, std::size_t) = nullptr;
  CUresult (*memcpy_htod_async)(CUdeviceptr, const void*, std::size_t, CUstream) = nullptr;
  CUresult (*memcpy_dtoh_async)(void*, CUdeviceptr, std::size_t, CUstream) = nullptr;
  CUresult (*memset_d8)(CUdeviceptr, unsigned char, std::size_t) = nullptr;
  CUresult (*stream_create)(CUstream*, unsigned) = nullptr;
  CUresult (*stream_destroy)(CUstream) = nullptr;
  CUresult (*stream_synchronize)(CUstream) = nullptr;
  CUresult (*event_create)(CUevent*, unsigned) = nullptr;
  CUresult (*event_destroy)(CUevent) = nullptr;
  CUresult (*event_record)(CUevent, CUstream) = nullptr;
  CUresult (*event_synchronize)(CUevent) = nullptr;
  CUresult (*event_elapsed_time)(float*, CUevent, CUevent) = nullptr;
  CUresult (*module_load_data)(CUmodule*, const void*) = nullptr;
  CUresult (*module_unload)(CUmodule) = nullptr;
  CUresult (*module_get_function)(CUfunction*, CUmodule, const char*) = nullptr;
  CUresult (*func_get_attribute)(int*, int, CUfunction) = nullptr;
  CUresult (*func_set_attribute)(CUfunction, int, int) = nullptr;
  CUresult (*launch_kernel)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream,
                            void**, void**) = nullptr;
  CUresult (*occupancy_max_active_blocks)(int*, CUfunction, int, std::size_t) = nullptr;
  /// cuTensorMapEncodeTiled (CUDA 12+; null on an older driver, an error only where a kernel uses TMA).
  /// The enum arguments are ints with cuda.h's values (see the TensorMap constants below).
  CUresult (*tensor_map_encode_tiled)(void* map, int data_type, unsigned rank, void* address,
                                      const unsigned long long* dims, const unsigned long long* strides,
                                      const unsigned* box, const unsigned* element_strides, int interleave, int swizzle,
                                      int l2_promotion, int oob_fill) = nullptr;
  /// What external memory and streams are (null on a driver without them: adopting them then fails
  /// with the reason).
  CUresult (*pointer_get_attribute)(void* data, int attribute, CUdeviceptr ptr) = nullptr;
  CUresult (*mem_get_address_range)(CUdeviceptr* base, std::size_t* size, CUdeviceptr ptr) = nullptr;
  CUresult (*stream_get_ctx)(CUstream, CUcontext*) = nullptr;
  /// CUDA graphs: stream capture, instantiation, replay, update (null on a driver without them; a
  /// Graph then fails with the reason).
  CUresult (*stream_begin_capture)(CUstream, int mode) = nullptr;
  CUresult (*stream_end_capture)(CUstream, CUgraph*) = nullptr;
  CUresult (*graph_instantiate)(CUgraphExec*, CUgraph, unsigned long long flags) = nullptr;
  CUresult (*graph_launch)(CUgraphExec, CUstream) = nullptr;
  CUresult (*graph_exec_update)(CUgraphExec, CUgraph, GraphUpdateInfo*) = nullptr;
  CUresult (*graph_get_nodes)(CUgraph, CUgraphNode*, std::size_t*) = nullptr;
  CUresult (*graph_destroy)(CUgraph) = nullptr;
  CUresult (*graph_exec_destroy)(CUgraphExec) = nullptr;
  /// The driver's PTX compiler (cuLinkCreate_v2 and the rest; null on a driver without them, an error
  /// only where a GPU needs a kernel's PTX compiled).
  CUresult (*link_create)(unsigned, int*, void**, CUlinkState*) = nullptr;
  CUresult (*link_add_data)(CUlinkState, int type, void* data, std::size_t size, const char* name, unsigned, int*,
                            void**) = nullptr;
  CUresult (*link_complete)(CUlinkState, void** cubin, std::size_t* size) = nullptr;
  CUresult (*link_destroy)(CUlinkState) = nullptr;

  bool loaded() const { return init != nullptr; }
};

/// The process's driver table: libcuda.so.1 (or $VANTAGE_CUDA_DRIVER; "none" disables it), loaded on
/// first use, or the table a test installed.
const Table& table();

/// Replaces the table for the rest of the process (tests: a mocked driver). Call before any GPU use.
void install_for_testing(const Table& t);

/// "CUDA_ERROR_OUT_OF_MEMORY (out of memory)": the result code in words.
std::string describe(CUresult r);

/// Throws DriverError naming `call` and `object` unless `r` is success.
void check(CUresult r, const char* call, const std::string& object);

/// Machine code for the current context's GPU from PTX, compiled by the driver; throws DriverError
/// naming `object` and carrying the driver's log when it cannot.
std::vector<char> compile_ptx(const std::string& ptx, const std::string& object);

}  // namespace vantage::driver
