// The tuner that `vantage tune NAME` and examples/tune_sgemm run: an example that declares a
// configuration space (Example::space and Example::candidate: the sgemm rungs 3, 4, 5 and 8) tuned
// through vantage::tune on one device, on its workload (kernels/workloads.hpp), with the result of
// every configuration checked.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "kernels/paper_kernels.hpp"

namespace vantage::examples {

/// A device by name: interpreter, cpu, cpu:THREADS, gpu, gpu:N or best; nullopt with `error` set.
std::optional<Device> device_named(const std::string& name, std::string& error);

/// The whole of `text` as a decimal integer from `lo` to `hi` (an optional sign, digits, nothing
/// else); nullopt for anything else, so that a command line's "12x" or "abc" is refused, not read
/// as 12 or 0.
std::optional<std::int64_t> integer_in(std::string_view text, std::int64_t lo, std::int64_t hi);

/// On the interpreter or the CPU a run's buffers (and the interpreter's shadow of each element) are
/// this process's memory. A run at sizes past what the host has free would be ended by the kernel's
/// out-of-memory killer, or would end another process instead. Capping the process's data at what it
/// holds now plus what is free turns that into std::bad_alloc, which the tools report
/// (say_out_of_memory). Returns the bytes free; 0 where nothing was capped (a GPU, the sanitizers'
/// builds, which map terabytes of shadow, no /proc).
std::uint64_t cap_data_at_free_memory(const Device& device);
/// What `program` says when `name`'s run at `size` could not have its memory.
void say_out_of_memory(const std::string& program, const std::string& name,
                       const std::map<std::string, std::int64_t>& size, std::uint64_t free);

/// The examples `vantage tune` can tune, in examples::all()'s order.
std::vector<std::string> tunable_examples();

/// Tunes example `name` ("sgemm": rung 4, sgemm_reg1d) on one device at one size and returns the
/// report; throws std::invalid_argument for an example that is not tunable or a size it lacks.
/// `size` holds M, N and K.
tune::Report tune_example(const std::string& name, const std::map<std::string, std::int64_t>& size,
                          const Device& device, const tune::Options& options);
/// The same for any tunable example, a loaded kernel's (Example::run gives its arguments) included.
tune::Report tune_example(const Example& e, const std::map<std::string, std::int64_t>& size, const Device& device,
                          const tune::Options& options);

/// `PROGRAM NAME [--size N | --size NAME=VALUE..] [--device DEVICE] [--budget SECONDS] [--compile-threads N]
/// [--csv FILE] [--svg FILE] [--results DIR] [--fresh] [--help]`: tunes, prints the table and the
/// best configuration, writes the CSV and the heatmap. Exit status 0 when a configuration was
/// measured, 1 when none was, 2 for a bad command line.
/// `loaded`: kernels `--load` added, tunable where they declare a space and a run.
int tune_main(const std::vector<std::string>& args, const std::string& program,
              const std::vector<Example>& loaded = {});

}  // namespace vantage::examples
