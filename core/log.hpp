#pragma once
// The run's log: `wse run --logging DEBUG|INFO|WARNING`. Warnings and debug lines go to stderr so
// stdout stays the run's summary. The progress lines a training run prints on stdout (its init
// line, a line per `training.log_every` steps, each checkpoint written) are info: WARNING leaves
// them out, and keeps the run's header, notes, warnings and results.
#include <cstdio>
#include <string>

namespace wse {

enum class LogLevel { Debug, Info, Warning };

inline LogLevel& log_level() {
  static LogLevel level = LogLevel::Info;
  return level;
}

// Whether info lines are printed (the level is INFO or DEBUG).
inline bool log_info() { return log_level() <= LogLevel::Info; }

inline void log(LogLevel level, const std::string& line) {
  if (level < log_level()) return;
  std::fprintf(stderr, "wse: %s: %s\n", level == LogLevel::Debug ? "debug" : level == LogLevel::Info ? "info" : "warning",
               line.c_str());
}

}  // namespace wse
