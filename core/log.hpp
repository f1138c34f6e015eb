#pragma once
// The run's log: `wse run --logging DEBUG|INFO|WARNING`. Warnings and debug lines go to stderr so
// stdout stays the run's summary.
#include <cstdio>
#include <string>

namespace wse {

enum class LogLevel { Debug, Info, Warning };

inline LogLevel& log_level() {
  static LogLevel level = LogLevel::Info;
  return level;
}

inline void log(LogLevel level, const std::string& line) {
  if (level < log_level()) return;
  std::fprintf(stderr, "wse: %s: %s\n", level == LogLevel::Debug ? "debug" : level == LogLevel::Info ? "info" : "warning",
               line.c_str());
}

}  // namespace wse
