#pragma once
// Errors a user can cause with their input (a config, a route, a program that does not fit).
// The CLI turns them into a message and exit code 2; anything else is a bug in the emulator.
#include <stdexcept>
#include <string>

namespace wse {

struct UsageError : std::runtime_error {
  using std::runtime_error::runtime_error;
};

// A route table that cannot run: names the tile and colour.
struct RouteError : UsageError {
  using UsageError::UsageError;
};

// A PE program that asked for more than its PE has (SRAM, queues).
struct PeError : UsageError {
  using UsageError::UsageError;
};

// A config field that is missing, malformed or does not fit: names the file and the field.
struct ConfigError : UsageError {
  using UsageError::UsageError;
};

// A run that stopped with work left and nothing able to move (a deadlock in the user's program or
// routes): the message says which PEs wait on what, which lanes hold wavelets, which ports block.
struct HangError : UsageError {
  using UsageError::UsageError;
};

}  // namespace wse
