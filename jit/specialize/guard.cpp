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
      return param >= 0 && static_cast<std::size_t>(param) < scalars.size() && scalars[param] == value;
  }
  return false;
}

}  // namespace vantage
