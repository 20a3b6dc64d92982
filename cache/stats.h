// Vantage cache statistics: per tier, the lookups it answered (hits) and did not (misses), the bytes
// it served and a latency histogram in powers of two of microseconds. A KernelCache counts in memory
// (atomics, nothing on the in-process hit's path but one increment) and adds what it counted to
// DIR/stats.json when it closes, at exit for the global cache, and at most every ten seconds while
// it misses, so `vantage cache stats` sees every process that used the directory. The remote tier
// keeps the fleet's own counters in Redis (remote.h).
#pragma once

#include <array>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace vantage::cache {

inline constexpr int kLatencyBuckets = 25;  ///< bucket i: under 2^i microseconds (the last: the rest)

/// The bucket of a latency in microseconds.
int latency_bucket(std::int64_t us);
/// The p-th percentile (0 to 100) of a histogram of latency buckets, in milliseconds: the upper bound
/// of the bucket it falls in (so within a factor of two); -1 when the histogram is empty.
double percentile_ms(const std::vector<std::int64_t>& buckets, double p);

/// Counts as values: a snapshot, or what a file holds.
struct TierCounts {
  std::int64_t hits = 0, misses = 0, bytes = 0;
  std::vector<std::int64_t> latency = std::vector<std::int64_t>(kLatencyBuckets, 0);
  TierCounts& operator+=(const TierCounts& o);
  TierCounts operator-(const TierCounts& o) const;
  bool empty() const;
};

/// One tier's counters in a process, safe to bump from any thread.
class TierMeter {
 public:
  void hit(std::int64_t bytes, std::chrono::nanoseconds took);
  void miss(std::chrono::nanoseconds took);
  /// Counts a hit without a time (the in-process table: timing it would cost more than the hit).
  void hit_untimed() { hits_.fetch_add(1, std::memory_order_relaxed); }
  void miss_untimed() { misses_.fetch_add(1, std::memory_order_relaxed); }
  TierCounts snapshot() const;

 private:
  std::atomic<std::int64_t> hits_{0}, misses_{0}, bytes_{0};
  std::array<std::atomic<std::int64_t>, kLatencyBuckets> latency_{};
};

/// What DIR/stats.json holds: counts by tier, and how many closes of a cache added to them.
struct StatsFile {
  std::map<std::string, TierCounts> tiers;
  std::int64_t flushes = 0;
};
/// Reads the file; an empty StatsFile when there is none, nullopt with the reason when it is not one.
std::optional<StatsFile> read_stats(const std::filesystem::path& file, std::string* problem);
/// Adds `counts` to the file under an exclusive lock (FILE.lock), written whole (temp and rename);
/// false with the reason.
bool add_stats(const std::filesystem::path& file, const std::map<std::string, TierCounts>& counts,
               std::string* problem);

}  // namespace vantage::cache
