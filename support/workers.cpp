// Vantage worker threads: the library's background workers. See workers.h.
#include "support/workers.h"

namespace vantage::support {

Workers<std::function<void(int)>>& background() {
  static Workers<std::function<void(int)>> workers({}, /*grow=*/true);
  return workers;
}

}  // namespace vantage::support
