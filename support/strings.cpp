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

std::string failed_assertion(const std::string& where, std::uint64_t block, std::uint64_t thread,
                             const std::string& what, const std::string& at) {
  std::string quoted;
  for (char c : what) quoted += c == '"' || c == '\\' ? std::string("\\") + c : std::string(1, c);
  return where + ": block " + std::to_string(block) + " thread " + std::to_string(thread) + ": assert_that(\"" +
         quoted + "\") failed at " + (at.empty() ? std::string("<unknown line>") : at);
}

}  // namespace vantage::strings
