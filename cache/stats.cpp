// Vantage cache statistics: see stats.h.
#include "cache/stats.h"

#include <fcntl.h>
#include <sys/file.h>
#include <unistd.h>

#include <cmath>
#include <fstream>
#include <sstream>

#include <nlohmann/json.hpp>

namespace vantage::cache {
namespace fs = std::filesystem;
using nlohmann::json;

int latency_bucket(std::int64_t us) {
  int b = 0;
  while (b + 1 < kLatencyBuckets && (std::int64_t{1} << b) <= us) ++b;
  return b;
}

double percentile_ms(const std::vector<std::int64_t>& buckets, double p) {
  std::int64_t total = 0;
  for (auto n : buckets) total += n;
  if (total == 0) return -1;
  const double want = p / 100.0 * static_cast<double>(total);
  std::int64_t seen = 0;
  for (std::size_t i = 0; i < buckets.size(); ++i) {
    seen += buckets[i];
    if (static_cast<double>(seen) >= want) return std::ldexp(1.0, static_cast<int>(i)) / 1000.0;
  }
  return std::ldexp(1.0, static_cast<int>(buckets.size())) / 1000.0;
}

TierCounts& TierCounts::operator+=(const TierCounts& o) {
  hits += o.hits;
  misses += o.misses;
  bytes += o.bytes;
  latency.resize(kLatencyBuckets, 0);
  for (std::size_t i = 0; i < o.latency.size() && i < latency.size(); ++i) latency[i] += o.latency[i];
  return *this;
}

TierCounts TierCounts::operator-(const TierCounts& o) const {
  TierCounts d = *this;
  d.hits -= o.hits;
  d.misses -= o.misses;
  d.bytes -= o.bytes;
  for (std::size_t i = 0; i < o.latency.size() && i < d.latency.size(); ++i) d.latency[i] -= o.latency[i];
  return d;
}

bool TierCounts::empty() const {
  if (hits || misses || bytes) return false;
  for (auto n : latency)
    if (n) return false;
  return true;
}

void TierMeter::hit(std::int64_t bytes, std::chrono::nanoseconds took) {
  hits_.fetch_add(1, std::memory_order_relaxed);
  bytes_.fetch_add(bytes, std::memory_order_relaxed);
  latency_[static_cast<std::size_t>(
               latency_bucket(std::chrono::duration_cast<std::chrono::microseconds>(took).count()))]
      .fetch_add(1, std::memory_order_relaxed);
}

void TierMeter::miss(std::chrono::nanoseconds took) {
  misses_.fetch_add(1, std::memory_order_relaxed);
  latency_[static_cast<std::size_t>(
               latency_bucket(std::chrono::duration_cast<std::chrono::microseconds>(took).count()))]
      .fetch_add(1, std::memory_order_relaxed);
}

TierCounts TierMeter::snapshot() const {
  TierCounts c;
  c.hits = hits_.load(std::memory_order_relaxed);
  c.misses = misses_.load(std::memory_order_relaxed);
  c.bytes = bytes_.load(std::memory_order_relaxed);
  for (std::size_t i = 0; i < latency_.size(); ++i) c.latency[i] = latency_[i].load(std::memory_order_relaxed);
  return c;
}

std::optional<StatsFile> read_stats(const fs::path& file, std::string* problem) {
  StatsFile out;
  std::ifstream in(file);
  if (!in) return out;  // no file yet: nothing counted
  try {
    json j = json::parse(in);
    out.flushes = j.value("flushes", std::int64_t{0});
    for (const auto& [tier, v] : j.at("tiers").items()) {
      TierCounts c;
      c.hits = v.at("hits").get<std::int64_t>();
      c.misses = v.at("misses").get<std::int64_t>();
      c.bytes = v.at("bytes").get<std::int64_t>();
      auto lat = v.at("latency_us_log2").get<std::vector<std::int64_t>>();
      for (std::size_t i = 0; i < lat.size() && i < c.latency.size(); ++i) c.latency[i] = lat[i];
      out.tiers[tier] = c;
    }
  } catch (const json::exception& e) {
    if (problem) *problem = file.string() + " is not a statistics file: " + e.what();
    return std::nullopt;
  }
  return out;
}

bool add_stats(const fs::path& file, const std::map<std::string, TierCounts>& counts, std::string* problem) {
  const std::string lock_path = file.string() + ".lock";
  int fd = ::open(lock_path.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0600);
  if (fd < 0 || ::flock(fd, LOCK_EX) != 0) {
    if (problem) *problem = "cannot lock " + lock_path;
    if (fd >= 0) ::close(fd);
    return false;
  }
  std::string why;
  StatsFile now = read_stats(file, &why).value_or(StatsFile{});  // an unreadable file starts again
  for (const auto& [tier, c] : counts) now.tiers[tier] += c;
  ++now.flushes;
  json j;
  j["format"] = 1;
  j["flushes"] = now.flushes;
  j["tiers"] = json::object();
  for (const auto& [tier, c] : now.tiers)
    j["tiers"][tier] = {{"hits", c.hits}, {"misses", c.misses}, {"bytes", c.bytes}, {"latency_us_log2", c.latency}};
  const std::string tmp = file.string() + ".tmp" + std::to_string(::getpid());
  bool ok = false;
  {
    std::ofstream out(tmp, std::ios::trunc);
    out << j.dump() << "\n";
    ok = static_cast<bool>(out);
  }
  std::error_code ec;
  if (ok) fs::rename(tmp, file, ec);
  if (!ok || ec) {
    fs::remove(tmp, ec);
    if (problem) *problem = "cannot write " + file.string();
    ok = false;
  }
  ::close(fd);  // lets go of the lock
  return ok;
}

}  // namespace vantage::cache
