// Vantage public cache API: compiled kernels kept in memory and on disk, content-addressed, safe to
// share between processes, bounded in size, and shippable as a bundle file.
#pragma once

#include <chrono>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "vantage/compile.hpp"

namespace vantage {

/// Where and how the cache keeps entries. `from_env()` reads:
///   VANTAGE_CACHE_DIR        the writable cache (else $XDG_CACHE_HOME/vantage, else ~/.cache/vantage)
///   VANTAGE_CACHE_PATH       read-only layers, ':'-separated directories or bundle files
///   VANTAGE_CACHE_MAX_BYTES  soft cap of the writable cache (default 2 GiB)
///   VANTAGE_CACHE_DISABLE=1  memory only
///   VANTAGE_ARCHS            record mode: also compile each kernel for these architectures
///   VANTAGE_CACHE_TRUST      ':'-separated files of trusted public keys (`vantage cache keygen`):
///                            when set, a read-only layer is used only if it is a bundle one of
///                            them signed (`vantage cache export --sign`), and an entry of the
///                            remote tier only if one of them signed it
///   VANTAGE_CACHE_REMOTE     a shared tier on Redis, redis://[:PASSWORD@]HOST:PORT/DB, with options
///                            ?timeout_ms=5&breaker_ms=10000&lease_ms=20000&wait_ms=30000 (docs/cache.md)
///   VANTAGE_CACHE_REMOTE_PASSWORD  its password, where the URL has none
///   VANTAGE_CACHE_SIGN_KEY   a secret key file (`vantage cache keygen`): what this process stores in
///                            the remote tier is signed with it
struct CacheConfig {
  std::string dir;
  std::vector<std::string> read_only;
  std::vector<std::string> trust;  ///< trust-list files; empty: layers need no signature
  std::string remote;              ///< the remote tier's URL; empty: none
  std::string sign_key;            ///< secret key file signing what this process stores remotely
  std::int64_t max_bytes = std::int64_t{2} << 30;
  std::chrono::milliseconds lock_timeout{30000};
  bool disk = true;
  std::vector<Arch> record_archs;

  static CacheConfig from_env();
  /// The default writable directory for this user.
  static std::string default_dir();
};

/// A compiled kernel from the cache: enough to launch it without its source.
struct CachedKernel {
  Specialized spec;  ///< `source` is empty when the entry came from disk or a bundle
  std::vector<char> cubin;
  std::string ptx;
  std::string key;                   ///< hex of the content key
  std::string origin;                ///< "compiled", "disk", "layer", "remote"
  int registers = -1;                ///< per thread, from the cubin (-1 unknown)
  std::int64_t local_bytes = -1;     ///< local memory per thread (spills and local arrays)
  std::string log;                   ///< NVRTC's log when compiled
  std::vector<std::string> options;  ///< the canonical NVRTC options the entry was compiled with (its key's)
};

struct CacheStats {
  std::int64_t memory_hits = 0, disk_hits = 0, layer_hits = 0, compiles = 0, write_failures = 0, bad_entries = 0;
  std::int64_t remote_hits = 0;     ///< entries the remote tier gave (compiles avoided fleet-wide)
  std::int64_t remote_refused = 0;  ///< remote values not used: unsigned, forged, corrupted or truncated
  std::int64_t remote_waits = 0;    ///< lookups that waited for another process's compile of the key
};

/// One tier's share of a cache's lookups: "memory" (the in-process table), "layers" (read-only
/// directories and bundles), "disk" (the user's directory), "remote" (the Redis tier) and "compile"
/// (NVRTC: its hits are compiles). `vantage cache stats` prints them summed over the processes that
/// used a directory.
struct TierStats {
  std::string tier;
  std::int64_t hits = 0;                      ///< lookups it answered: compiles avoided (for "compile": compiles made)
  std::int64_t misses = 0;                    ///< lookups it could not answer, passed to the next tier
  std::int64_t bytes = 0;                     ///< bytes of the entries it gave
  std::vector<std::int64_t> latency_us_log2;  ///< lookups by time taken: bucket i counts those under 2^i us
  /// The p-th percentile of its lookups' time in milliseconds, within a factor of two (-1: none
  /// timed; the in-process table's hits are not timed).
  double percentile_ms(double p) const;
};

class KernelCache {
 public:
  explicit KernelCache(CacheConfig config = CacheConfig::from_env());
  ~KernelCache();
  KernelCache(const KernelCache&) = delete;
  KernelCache& operator=(const KernelCache&) = delete;

  /// The process-wide cache, configured from the environment on first use.
  static KernelCache& global();

  /// The compiled kernel for this specialization: from memory, a read-only layer, the user's
  /// directory, the remote tier, or NVRTC (then stored in the directory and the remote tier). A repeated call for the
  /// same kernel and Spec takes a shared lock and a table lookup, nothing else. Throws CheckError, CompileError, or
  /// ToolchainError when NVRTC is missing and no layer has the kernel.
  std::shared_ptr<const CachedKernel> get(const Kernel& kernel, const Spec& spec, Output output = Output::Cubin);

  /// Compiled code of another kind (the CPU backend's host object code), keyed by `kind` and
  /// `key_parts` (which must name everything that determines the bytes): from memory, the user's
  /// directory, or `produce` (then stored). `origin` receives "memory", "disk" or "compiled".
  std::shared_ptr<const std::vector<char>> artifact(const std::string& kind, const std::vector<std::string>& key_parts,
                                                    const std::function<std::vector<char>()>& produce,
                                                    std::string* origin = nullptr);

  CacheStats stats() const;
  /// What each tier did for this cache, in lookup order.
  std::vector<TierStats> tier_stats() const;
  /// Adds what this cache counted since the last call to DIR/stats.json (`vantage cache stats`); a
  /// cache does it when destroyed, the global one at exit, and both every ten seconds while they
  /// miss. A server may call it when it likes.
  void flush_stats();
  /// The writable directory ("" when memory only), and why it is not used, if it is not.
  std::string directory() const;
  std::string problem() const;

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

/// Bundles: one file holding many entries, for hosts that should never run NVRTC.
/// Writes every entry of a cache directory into `file`; returns the number of entries. With
/// `key_file` (a secret key from `vantage cache keygen`) the bundle is signed.
int export_bundle(const std::string& cache_dir, const std::string& file, const std::string& key_file = "");
/// Verifies a bundle and copies its entries into `cache_dir`; returns the number imported.
int import_bundle(const std::string& file, const std::string& cache_dir);
/// Checks a bundle's framing and every entry's checksum; returns the number of good entries and
/// fills `problems` with what is wrong.
int verify_bundle(const std::string& file, std::vector<std::string>* problems);

}  // namespace vantage
