// Vantage string helpers: see strings.h.
#include "support/strings.h"

#include <mutex>
#include <unordered_set>

namespace vantage::strings {

const char* intern(const std::string& s) {
  static std::mutex mu;
  static auto* table = new std::unordered_set<std::string>();  // never freed: pointers must outlive callers
  std::lock_guard<std::mutex> lock(mu);
  return table->insert(s).first->c_str();
}

}  // namespace vantage::strings
