// Vantage's registry of kernels: see vantage/registry.hpp.
#include "vantage/registry.hpp"

#include <cctype>
#include <mutex>
#include <stdexcept>

namespace vantage {
namespace {

struct Registry {
  std::mutex mu;
  std::vector<RegisteredKernel> kernels;
};
Registry& registry() {
  static Registry* r = new Registry;  // libraries register from static initializers, in any order
  return *r;
}

}  // namespace

void register_kernel(RegisteredKernel k) {
  bool ident = !k.name.empty() && !std::isdigit(static_cast<unsigned char>(k.name[0]));
  for (char c : k.name) ident = ident && (std::isalnum(static_cast<unsigned char>(c)) || c == '_');
  if (!ident) throw std::invalid_argument("register_kernel: '" + k.name + "' is not a name (letters, digits, '_')");
  if (!k.build) throw std::invalid_argument("register_kernel: '" + k.name + "' has no factory");
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  for (const auto& other : r.kernels)
    if (other.name == k.name) throw std::invalid_argument("register_kernel: '" + k.name + "' is registered already");
  r.kernels.push_back(std::move(k));
}

std::vector<RegisteredKernel> registered_kernels() {
  Registry& r = registry();
  std::lock_guard lock(r.mu);
  return r.kernels;
}

}  // namespace vantage
