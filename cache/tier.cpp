// Vantage cache tiers: see tier.h. The disk store's are in store.cpp.
#include "cache/tier.h"

#include <system_error>

#include "cache/cache.h"

namespace vantage::cache {

std::unique_ptr<BundleTier> BundleTier::open(const std::string& file, std::string* problem) {
  auto entries = read_bundle(file, problem);
  if (!entries) return nullptr;
  auto t = std::make_unique<BundleTier>();
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
