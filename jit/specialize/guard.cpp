// Vantage residual guards: the launch-time predicates specialization leaves behind.
#include "vantage/spec.hpp"

namespace vantage {

bool Guard::accepts(std::int64_t blocks, std::span<const std::int64_t> scalars) const {
  switch (kind) {
    case Kind::BlocksDivisibleBy: return value > 0 && blocks % value == 0;
    case Kind::BlocksAtLeast: return blocks >= value;
    case Kind::BlocksEqual: return blocks == value;
    case Kind::BlocksAtMost: return blocks <= value;
    case Kind::ParamEquals:
    case Kind::ParamAtLeast:
    case Kind::ParamAtMost:
    case Kind::ParamMultipleOf: {
      if (param < 0 || static_cast<std::size_t>(param) >= scalars.size()) return false;
      const std::int64_t v = scalars[static_cast<std::size_t>(param)];
      if (kind == Kind::ParamEquals) return v == value;
      if (kind == Kind::ParamAtLeast) return v >= value;
      if (kind == Kind::ParamAtMost) return v <= value;
      return value > 0 && v % value == 0;
    }
  }
  return false;
}

std::optional<Assumption> Assumption::of(std::int64_t value) {
  if (value < 0 || value > kMaxSize) return std::nullopt;
  Assumption a;
  if (value % 16 == 0) a.multiple = 16;
  return a;
}

std::string Assumption::str(const std::string& name) const {
  std::string t = std::to_string(min) + " <= " + name + " <= " + std::to_string(max);
  if (multiple > 1) t += " && " + name + " % " + std::to_string(multiple) + " == 0";
  return t;
}

}  // namespace vantage
