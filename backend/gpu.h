// Vantage GPUs: the driver started once, the GPUs it reports with their properties, and each GPU's
// primary context, retained on first use and made current on the calling thread when needed.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "vantage/compile.hpp"

#include "backend/driver.h"
#include "vantage/device.hpp"

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
/// GPU `ordinal`'s primary context (retained on first use): where Vantage allocates and launches.
driver::CUcontext context(int ordinal);
/// The architecture Vantage compiles for on a GPU of this compute capability: the newest whose machine
/// code runs there (same major version, minor at most the GPU's), else, on a GPU newer than every
/// target, the newest target (its PTX is compiled by the driver). Throws for a GPU older than every
/// target.
Arch arch_for(int major, int minor, const std::string& device_name);
/// Whether machine code built for `built` runs on a GPU of this compute capability (else its PTX must
/// be compiled by the driver; an arch-specific target's runs on its own GPU only).
bool runs_natively(Arch built, int major, int minor);

/// GPU `ordinal`'s error record: page-locked host memory (reached from the GPU through unified
/// addressing) into which the first access checked as it runs that fails writes the kernel's tag,
/// the site, the block, the thread, the index and the bound.
std::uint64_t* error_record(int ordinal);
/// The sites of a kernel's checked accesses, found by its tag when its record is read.
void register_checks(std::uint64_t tag, const std::string& kernel, const std::vector<CheckedAccess>& sites);
/// Throws ExecutionError ("memcheck", naming the kernel, the access's builder line, the block, the
/// thread and the index) if a kernel on GPU `ordinal` recorded a failed check, and clears the record.
void raise_recorded_error(int ordinal);

}  // namespace vantage::gpu
