// Vantage remote cache tier: entries shared by a fleet through one Redis server (hiredis).
//
//   PREFIX entry:NAME    an entry's bytes (entry.h), sealed (cache.h): signed when this process has a
//                        signing key (VANTAGE_CACHE_SIGN_KEY), or naming the signed manifest that
//                        lists it when it was pushed from a bundle (`vantage cache push`)
//   PREFIX manifest:ID   a pushed bundle's manifest and its one signature: a process verifies it
//                        once, then each entry it lists by its hash alone
//   PREFIX builds:LOGICAL  the set of NAMEs of one source's builds, for hosts without NVRTC, which
//                        cannot compute the full key
//   PREFIX lease:NAME    who compiles NAME now: a random token, set if absent with an expiry, so a
//                        holder that dies lets go when it expires
//   PREFIX stats         fleet-wide counters (hits, misses, refused, compiles, bytes, latency buckets)
//
// Every command runs under a short timeout. A command that fails or times out opens the breaker:
// for `breaker` the tier answers "unavailable" at once, without a round trip, and the cache goes on
// without it; the first failure is logged as a warning, later ones at debug level. Nothing read from
// Redis is used before it is verified: the signature here (required under a trust list), the
// checksum and the key echo by the caller (cache::parse).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "cache/cache.h"
#include "cache/sign.h"
#include "cache/tier.h"

namespace vantage::cache {

/// Where the tier is and how long it may take: `redis://[[USER]:PASSWORD@]HOST[:PORT][/DB]` with
/// optional `?timeout_ms=N&lease_ms=N&breaker_ms=N&wait_ms=N&prefix=TEXT`.
struct RemoteConfig {
  std::string host = "127.0.0.1";
  int port = 6379;
  int db = 0;
  std::string user, password;
  std::chrono::milliseconds timeout{5};      ///< connect and each command
  std::chrono::milliseconds lease{20000};    ///< a compile's lease expires after this
  std::chrono::milliseconds breaker{10000};  ///< how long the tier is skipped after a failure
  std::chrono::milliseconds wait{30000};     ///< how long a process waits for another's compile
  std::string prefix = "vantage:";
  /// The configuration a URL names; nullopt with the reason. A password in the environment
  /// (`password_env`, when set) is used where the URL has none.
  static std::optional<RemoteConfig> parse(const std::string& url, std::string* problem,
                                           const char* password_env = "VANTAGE_CACHE_REMOTE_PASSWORD");
  /// The URL without the password, for messages.
  std::string url() const;
};

/// Fleet-wide counters the tier keeps in Redis (`vantage cache stats`).
struct RemoteCounters {
  std::int64_t hits = 0, misses = 0, refused = 0, stores = 0, bytes_read = 0, bytes_written = 0;
  std::int64_t entries = 0, entry_bytes = 0;     ///< what the tier holds now
  std::vector<std::int64_t> latency_us_buckets;  ///< lookups by latency, bucket i: < 2^i microseconds
  double percentile_ms(double p) const;          ///< from the buckets (their upper bound); -1 when none
};

class RemoteTier final : public Tier {
 public:
  /// Connects lazily: nothing is sent before the first lookup. `sign_key` signs what this process
  /// stores; under `trust` (when in force) only entries a listed key signed are used.
  RemoteTier(RemoteConfig cfg, TrustList trust, std::optional<SecretKey> sign_key);
  ~RemoteTier() override;

  enum class Outcome { Hit, Miss, Refused, Unavailable };
  /// Entry `name`'s bytes when its signature holds (and, under a trust list, a listed key made it).
  /// Refused: the value is there but is not to be used (`problem` says why); Unavailable: Redis did
  /// not answer in time, or the breaker is open.
  Outcome fetch(const std::string& name, std::vector<char>& bytes, std::string* problem) const;
  /// Stores an entry's bytes as they are (sealed with this process's key); false with the reason.
  bool store(const std::string& name, const std::vector<char>& bytes, std::string* problem);
  /// Pushes `entries` under one signed manifest (`vantage cache push`): the manifest's text and
  /// signature once, under `manifest:ID`, then each entry with the manifest's id. A process verifies
  /// the manifest's signature once and each entry it fetches by its hash alone. The signature must
  /// verify over `manifest`, and the manifest must list every entry as it is; false with the reason.
  bool push(const std::map<std::string, std::vector<char>>& entries, const std::string& manifest,
            const BundleSignature& sig, std::string* problem);
  /// Stores a value exactly as given, unchecked: for tests that plant bad values, and `push` of
  /// values already sealed.
  bool store_raw(const std::string& name, const std::vector<char>& value, std::string* problem);
  /// The value stored under `name` as it is (sealed); false when there is none or Redis did not answer.
  bool read_raw(const std::string& name, std::vector<char>& value) const;

  /// The fleet-wide counters (sending this process's first); nullopt when Redis does not answer.
  std::optional<RemoteCounters> counters() const;
  /// Whether the breaker lets commands through now.
  bool answering() const;
  const RemoteConfig& config() const { return cfg_; }
  /// Removes every key under the prefix; the number removed.
  std::int64_t clear();

  std::string where(const std::string& name) const override;
  std::vector<std::string> names_with_prefix(const std::string& prefix) const override;
  bool read(const std::string& name, std::vector<char>& bytes) const override;
  bool save(const std::string& name, const Entry& e, std::string* problem) override;
  std::vector<EntryInfo> list() const override;
  bool writable() const override { return true; }
  /// Set-if-absent with the configured expiry, retried until `timeout`; null when another holds it
  /// that long, or when Redis does not answer.
  std::unique_ptr<Lease> lease(const std::string& name, std::chrono::milliseconds timeout) const override;

  struct Connection;  // one hiredis context and the generation of the pool it came from (remote.cpp)
  struct Manifest;    // a pushed bundle's manifest, verified: its signature and its entries' hashes

 private:
  template <typename F>
  auto with_connection(F&& f) const;
  /// GET `key`: the reply (null when Redis gave none), or nullopt when the tier did not answer.
  auto get(const std::string& key) const;
  void trip(const std::string& why) const;
  std::unique_ptr<Connection> take() const;
  void give(std::unique_ptr<Connection> c) const;
  void release(const std::string& name, const std::string& token) const;
  /// Calls `batch` with each batch of the keys matching `pattern` (SCAN); false when Redis stopped
  /// answering on the way.
  bool scan(const std::string& pattern, const std::function<void(std::vector<std::string>&)>& batch) const;
  /// The manifest `id` names, verified (from memory after the first time); null when it is not in
  /// the tier or does not verify (`problem` says why), or when Redis did not answer (`unavailable`).
  std::shared_ptr<const Manifest> manifest(const ManifestId& id, std::string* problem, bool* unavailable) const;
  /// Counts `n` under `field` in the fleet-wide counters, sent with the next command.
  void tally(const std::string& field, std::int64_t n) const;

  RemoteConfig cfg_;
  TrustList trust_;
  std::optional<SecretKey> sign_key_;
  mutable std::mutex pool_mu_;
  mutable std::vector<std::unique_ptr<Connection>> pool_;
  mutable std::atomic<std::int64_t> open_until_ns_{0};  ///< the breaker: skip commands until then
  mutable std::atomic<bool> warned_{false};
  mutable std::atomic<std::uint64_t> generation_{0};  ///< bumped when the breaker opens: pooled connections are dropped
  mutable std::mutex manifests_mu_;
  mutable std::map<ManifestId, std::shared_ptr<const Manifest>> manifests_;  ///< verified, by id
  mutable std::mutex tally_mu_;
  mutable std::map<std::string, std::int64_t> pending_;  ///< counters not yet sent
  friend class RemoteLease;
};

/// What the remote path of one lookup did.
struct RemoteResult {
  std::optional<Entry> entry;
  bool produced = false;              ///< the producer ran
  bool hit = false;                   ///< the entry came from the tier
  bool waited = false;                ///< another process held the key's lease for a while
  std::vector<std::string> problems;  ///< values refused, stores that failed
};

/// Looks `name` up in the tier; on a miss takes the key's lease (waiting for another process's
/// compile up to the configured wait), looks again, else produces and stores. A tier that does not
/// answer costs at most its timeout: then this produces without it.
RemoteResult remote_get_or_produce(RemoteTier& tier, const std::string& name, const Key& key,
                                   const std::function<Entry()>& producer);

}  // namespace vantage::cache
