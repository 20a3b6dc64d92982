// Vantage obligations: the size rules the checker defers until the launch shape is known.
#include "vantage/spec.hpp"

namespace vantage {

bool Obligation::holds(std::int64_t t, std::int64_t b) const {
  auto l = lhs.eval(t, b);
  auto r = rhs.eval(t, b);
  if (!l || !r) return false;
  switch (kind) {
    case Kind::Divides: return *l > 0 && *r % *l == 0;
    case Kind::LessEqual: return *l <= *r;
    case Kind::Equal: return *l == *r;
  }
  return false;
}

std::string Obligation::str() const {
  switch (kind) {
    case Kind::Divides: return rhs.str() + " % " + lhs.str() + " == 0";
    case Kind::LessEqual: return lhs.str() + " <= " + rhs.str();
    case Kind::Equal: return lhs.str() + " == " + rhs.str();
  }
  return "?";
}

}  // namespace vantage
