// The sgemm tuner that examples/tune_sgemm and `vantage tune sgemm` run: rung 4 of the sgemm ladder
// (1-D register blocking) over its block tile, K step and rows per thread, measured through
// vantage::tune on one device, with the result of every configuration checked.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "kernels/paper_kernels.hpp"

namespace vantage::examples {

/// BM, BN, BK, TM of `sgemm_reg1d` where the shape is valid: 32..1024 threads, BM % TM == 0, the
/// tiles staged in whole rounds of the block's threads, 48 KiB of shared memory at most.
tune::Space sgemm_space();
/// The kernel and grid of one configuration for an M x N matrix C.
tune::Candidate sgemm_candidate(const tune::Config& c, int M, int N);

/// A device by name: interpreter, cpu, cpu:THREADS, gpu, gpu:N or best; nullopt with `error` set.
std::optional<Device> device_named(const std::string& name, std::string& error);

/// `PROGRAM [--size N] [--device DEVICE] [--budget SECONDS] [--compile-threads N] [--csv FILE]
/// [--svg FILE] [--results DIR] [--fresh] [--help]`: tunes, prints the table and the best
/// configuration, writes the CSV and the heatmap. Exit status 0 when a configuration was measured.
int tune_sgemm_main(const std::vector<std::string>& args, const std::string& program);

}  // namespace vantage::examples
