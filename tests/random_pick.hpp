// The random choices of the program generators (test_random*.cpp): a seeded stream, so that a seed
// names one program on every machine.
#pragma once

#include <cstdint>
#include <random>
#include <vector>

namespace vantage::test_support {

class Picker {
 public:
  explicit Picker(std::uint64_t seed) : rng_(seed) {}

 protected:
  /// 0 .. n-1.
  int pick(int n) { return static_cast<int>(rng_() % static_cast<std::uint64_t>(n)); }
  /// True one time in `one_in`.
  bool chance(int one_in) { return pick(one_in) == 0; }
  template <class T>
  const T& any(const std::vector<T>& v) {
    return v[static_cast<std::size_t>(pick(static_cast<int>(v.size())))];
  }

 private:
  std::mt19937_64 rng_;
};

}  // namespace vantage::test_support
