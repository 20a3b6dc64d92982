// Vantage GPUs: the driver started once, the GPUs it reports with their properties, and each GPU's
// primary context, retained on first use and made current on the calling thread when needed.
#pragma once

#include <string>

#include "runtime/driver.h"
#include "vantage/runtime.hpp"

namespace vantage::gpu {

/// The driver's GPUs (0 when there is no driver, it failed to start, or it reports none).
int count();
/// Why there is no GPU, or "".
const std::string& problem();
/// Properties of GPU `ordinal` (which must exist).
const DeviceProperties& properties(int ordinal);
/// Makes GPU `ordinal`'s primary context current on this thread (retained on first use); cheap when
/// it already is. Throws DriverError when the GPU does not exist or its context cannot be made.
void make_current(int ordinal);
/// The compute capability as an architecture Vantage compiles for; throws when it has none.
Arch arch_for(int major, int minor, const std::string& device_name);

}  // namespace vantage::gpu
