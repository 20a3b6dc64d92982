// Vantage cache tiers: the places a kernel cache finds entries by name: looked up, listed, stored
// to and leased per key (one compile of a key at a time). The user's directory (DiskStore) is the
// writable tier: it is also evicted. Read-only
// directories and bundles are tiers that are only looked up and listed. A lookup walks the
// read-only tiers first, then the writable one; a remote tier plugs in behind the same interface.
#pragma once

#include <chrono>
#include <filesystem>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cache/entry.h"
#include "cache/sign.h"

namespace vantage::cache {

struct EntryInfo {
  std::filesystem::path path;
  std::string name;  ///< file name without extension
  std::int64_t bytes = 0;
  std::filesystem::file_time_type used;
};

class Tier {
 public:
  virtual ~Tier() = default;
  /// Where entry `name` is, for messages.
  virtual std::string where(const std::string& name) const = 0;
  /// The names of its entries that start with `prefix`, in order.
  virtual std::vector<std::string> names_with_prefix(const std::string& prefix) const = 0;
  /// The bytes of entry `name` as stored (cache::parse verifies them); false when it has none.
  virtual bool read(const std::string& name, std::vector<char>& bytes) const = 0;
  /// Stores an entry; false with the reason where the tier cannot (a read-only one never can).
  virtual bool save(const std::string& name, const Entry& e, std::string* problem) = 0;
  /// Every entry it holds.
  virtual std::vector<EntryInfo> list() const = 0;
  virtual bool writable() const = 0;

  /// A hold on one key across the processes that share the tier: while it lives, no other lease on
  /// the key is given, so that one of them makes the entry and the others find it. It lets go when
  /// destroyed, or when its holder dies.
  class Lease {
   public:
    virtual ~Lease() = default;
  };
  /// Waits up to `timeout` for the lease on key `name`; null when it could not be had in time, or
  /// when the tier gives none (a read-only one).
  virtual std::unique_ptr<Lease> lease(const std::string& name, std::chrono::milliseconds timeout) const = 0;
};

/// A bundle file (`vantage cache export`) as a read-only tier.
class BundleTier final : public Tier {
 public:
  /// Reads and verifies the bundle; nullptr with the reason when it cannot be used. A signed bundle
  /// is used only when its signature verifies over its entries; under a trust list (not empty),
  /// only when a key the list holds signed it.
  static std::unique_ptr<BundleTier> open(const std::string& file, std::string* problem, const TrustList& trust = {});
  /// The key that signed it, when it is signed.
  const std::optional<PublicKey>& signer() const { return signer_; }

  std::string where(const std::string& name) const override { return "bundle entry " + name; }
  std::vector<std::string> names_with_prefix(const std::string& prefix) const override;
  bool read(const std::string& name, std::vector<char>& bytes) const override;
  bool save(const std::string&, const Entry&, std::string* problem) override;
  std::vector<EntryInfo> list() const override;
  bool writable() const override { return false; }
  std::unique_ptr<Lease> lease(const std::string&, std::chrono::milliseconds) const override { return nullptr; }

 private:
  std::filesystem::path file_;
  std::filesystem::file_time_type written_;
  std::map<std::string, std::vector<char>> entries_;
  std::optional<PublicKey> signer_;
};

}  // namespace vantage::cache
