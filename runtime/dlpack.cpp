// Vantage and DLPack: see vantage/dlpack.hpp.
#include "vantage/dlpack.hpp"

#include <string>

namespace vantage::detail {
namespace {

constexpr std::uint8_t kDLBoolCode = 6;  // DLPack 0.8's kDLBool; 0.6 (Debian 12) does not name it

DLDataType dl_type(ScalarType t) {
  switch (t) {
    case ScalarType::Bool: return {kDLBoolCode, 8, 1};
    case ScalarType::I8: return {kDLInt, 8, 1};
    case ScalarType::U8: return {kDLUInt, 8, 1};
    case ScalarType::I16: return {kDLInt, 16, 1};
    case ScalarType::U16: return {kDLUInt, 16, 1};
    case ScalarType::I32: return {kDLInt, 32, 1};
    case ScalarType::U32: return {kDLUInt, 32, 1};
    case ScalarType::I64: return {kDLInt, 64, 1};
    case ScalarType::U64: return {kDLUInt, 64, 1};
    case ScalarType::F16: return {kDLFloat, 16, 1};
    case ScalarType::BF16: return {kDLBfloat, 16, 1};
    case ScalarType::F32: return {kDLFloat, 32, 1};
    case ScalarType::F64: return {kDLFloat, 64, 1};
    case ScalarType::F8E4M3:
    case ScalarType::F8E5M2: break;  // DLPack 0.6 (Debian 12) has no 8-bit float: refused by the dtype check
  }
  return {kDLOpaqueHandle, 0, 1};
}

std::string type_name(DLDataType t) {
  std::string code;
  switch (t.code) {
    case kDLInt: code = "int"; break;
    case kDLUInt: code = "uint"; break;
    case kDLFloat: code = "float"; break;
    case kDLBfloat: code = "bfloat"; break;
    case kDLComplex: code = "complex"; break;
    case kDLBoolCode: code = "bool"; break;
    default: code = "type" + std::to_string(t.code) + "_";
  }
  std::string s = code + std::to_string(t.bits);
  if (t.lanes != 1) s += "x" + std::to_string(t.lanes);
  return s;
}

std::string device_name(DLDevice d) {
  switch (d.device_type) {
    case kDLCPU: return "cpu";
    case kDLCUDA: return "cuda:" + std::to_string(d.device_id);
    case kDLCUDAHost: return "cuda_host (page-locked host memory)";
    case kDLCUDAManaged: return "cuda_managed:" + std::to_string(d.device_id);
    default: return "device type " + std::to_string(static_cast<int>(d.device_type));
  }
}

}  // namespace

std::pair<std::uint64_t, std::int64_t> check_dlpack(const DLTensor& t, ScalarType element, const Device& device,
                                                    const std::string& name) {
  const DLDataType want = dl_type(element);
  if (t.dtype.code != want.code || t.dtype.bits != want.bits || t.dtype.lanes != want.lanes)
    throw LaunchError(
        name, name + " holds " + type_name(t.dtype) + " elements, not the " + type_name(want) + " the buffer is of");
  const bool on_gpu = t.device.device_type == kDLCUDA || t.device.device_type == kDLCUDAManaged;
  const bool ok = device.is_gpu() ? on_gpu && t.device.device_id == device.ordinal()
                                  : t.device.device_type == kDLCPU || t.device.device_type == kDLCUDAHost;
  if (!ok) throw LaunchError(name, name + " is on " + device_name(t.device) + ", not on " + device.name());
  if (t.ndim < 0) throw LaunchError(name, name + ": a negative number of dimensions");
  std::int64_t count = 1;
  for (int i = 0; i < t.ndim; ++i) {
    if (t.shape[i] < 0) throw LaunchError(name, name + ": dimension " + std::to_string(i) + " is negative");
    if (t.shape[i] != 0 && count > INT64_MAX / t.shape[i])
      throw LaunchError(name, name + ": its element count overflows 64 bits");
    count *= t.shape[i];
  }
  if (t.strides && count > 0) {
    // Row-major and compact: each stride the product of the later dimensions (any stride where a
    // dimension has one element, as producers differ there).
    std::int64_t expected = 1;
    for (int i = t.ndim - 1; i >= 0; --i) {
      if (t.shape[i] != 1 && t.strides[i] != expected) {
        std::string shape, strides;
        for (int j = 0; j < t.ndim; ++j) {
          shape += (j ? ", " : "") + std::to_string(t.shape[j]);
          strides += (j ? ", " : "") + std::to_string(t.strides[j]);
        }
        throw LaunchError(name, name + " is not contiguous in row-major order (shape [" + shape + "], strides [" +
                                    strides + "] in elements): pass a contiguous copy (.contiguous() in PyTorch)");
      }
      expected *= t.shape[i];
    }
  }
  return {reinterpret_cast<std::uint64_t>(t.data) + t.byte_offset, count};
}

namespace {
struct Holder {
  DLManagedTensor tensor{};
  std::vector<std::int64_t> shape;
  std::function<void()> release;
};
}  // namespace

DLManagedTensor* make_dlpack(std::uint64_t address, std::int64_t count, ScalarType element, DeviceKind kind,
                             int ordinal, std::vector<std::int64_t> shape, std::function<void()> release) {
  if (shape.empty()) shape = {count};
  std::int64_t product = 1;
  for (auto d : shape) product *= d;
  if (product != count) {
    std::string dims;
    for (auto d : shape) dims += (dims.empty() ? "" : ", ") + std::to_string(d);
    throw LaunchError("shape", "shape [" + dims + "] holds " + std::to_string(product) +
                                   " elements, not the buffer's " + std::to_string(count));
  }
  auto* h = new Holder;
  h->shape = std::move(shape);
  h->release = std::move(release);
  DLTensor& t = h->tensor.dl_tensor;
  t.data = reinterpret_cast<void*>(address);
  t.device = kind == DeviceKind::Gpu ? DLDevice{kDLCUDA, ordinal} : DLDevice{kDLCPU, 0};
  t.ndim = static_cast<int>(h->shape.size());
  t.dtype = dl_type(element);
  t.shape = h->shape.data();
  t.strides = nullptr;  // compact, row-major
  t.byte_offset = 0;
  h->tensor.manager_ctx = h;
  h->tensor.deleter = [](DLManagedTensor* self) {
    auto* holder = static_cast<Holder*>(self->manager_ctx);
    if (holder->release) holder->release();
    delete holder;
  };
  return &h->tensor;
}

}  // namespace vantage::detail
