// Vantage logging: see log.h.
#include "support/log.h"

#include <spdlog/sinks/stdout_color_sinks.h>

#include <cstdlib>
#include <memory>
#include <string>

namespace vantage::logging {

spdlog::logger& get() {
  static std::shared_ptr<spdlog::logger> logger = [] {
    auto l = std::make_shared<spdlog::logger>("vantage", std::make_shared<spdlog::sinks::stderr_color_sink_mt>());
    l->set_pattern("[vantage %^%l%$] %v");
    spdlog::level::level_enum level = spdlog::level::warn;
    if (const char* env = std::getenv("VANTAGE_LOG")) {
      level = spdlog::level::from_str(env);
      // from_str answers "off" for words it does not know; say so instead of going silent.
      if (level == spdlog::level::off && std::string(env) != "off") {
        level = spdlog::level::warn;
        l->set_level(level);
        l->warn("VANTAGE_LOG={} is not a level (trace, debug, info, warn, error, off); using warn", env);
      }
    }
    l->set_level(level);
    return l;
  }();
  return *logger;
}

}  // namespace vantage::logging
