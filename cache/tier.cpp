// Vantage cache tiers: see tier.h. The disk store's are in store.cpp.
#include "cache/tier.h"

#include <system_error>

#include "cache/cache.h"
#include "cache/store.h"

namespace vantage::cache {

std::unique_ptr<BundleTier> BundleTier::open(const std::string& file, std::string* problem, const TrustList& trust) {
  std::optional<BundleSignature> sig;
  auto entries = read_bundle(file, problem, &sig);
  if (!entries) return nullptr;
  if (auto why = untrusted_owner(file)) {
    if (problem) *problem = "bundle " + *why;
    return nullptr;
  }
  auto refuse = [&](const std::string& why) -> std::unique_ptr<BundleTier> {
    if (problem) *problem = "bundle " + file + ": " + why;
    return nullptr;
  };
  if (sig && !verify(manifest(*entries, sig->hash), sig->signature, sig->key))
    return refuse("its signature by key " + key_id(sig->key) +
                  " does not verify over its entries (changed since it was signed, or not signed by that key)");
  if (!trust.empty() && !sig)
    return refuse(
        "it is not signed, and VANTAGE_CACHE_TRUST accepts only bundles a key it lists signed "
        "(vantage cache export --sign KEY)");
  if (!trust.empty() && !trust.trusts(sig->key))
    return refuse("it is signed by key " + key_id(sig->key) + ", which VANTAGE_CACHE_TRUST does not list");
  auto t = std::make_unique<BundleTier>();
  if (sig) t->signer_ = sig->key;
  t->file_ = file;
  std::error_code ec;
  t->written_ = std::filesystem::last_write_time(file, ec);
  t->entries_ = std::move(*entries);
  return t;
}

std::vector<std::string> BundleTier::names_with_prefix(const std::string& prefix) const {
  std::vector<std::string> out;
  for (auto it = entries_.lower_bound(prefix); it != entries_.end() && it->first.rfind(prefix, 0) == 0; ++it)
    out.push_back(it->first);
  return out;
}

bool BundleTier::read(const std::string& name, std::vector<char>& bytes) const {
  auto it = entries_.find(name);
  if (it == entries_.end()) return false;
  bytes = it->second;
  return true;
}

bool BundleTier::save(const std::string&, const Entry&, std::string* problem) {
  if (problem) *problem = "bundle " + file_.string() + " is read-only";
  return false;
}

std::vector<EntryInfo> BundleTier::list() const {
  std::vector<EntryInfo> out;
  for (const auto& [name, bytes] : entries_)
    out.push_back({file_, name, static_cast<std::int64_t>(bytes.size()), written_});
  return out;
}

}  // namespace vantage::cache
