#pragma once
// A word of a command line as a POSIX shell reads it back: as is when it holds only characters
// no shell treats specially, else in single quotes (a ' inside written '\''). The commands wse
// prints for a user to paste (the resume command of an interrupted run) and records (the
// `.wse-run` record) are built from these: "wse run my cfg.yaml" split the config's name in two.
#include <string>
#include <string_view>

namespace wse {

inline std::string shell_word(std::string_view word) {
  auto plain = [](char c) {
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '_' || c == '-' || c == '.' ||
           c == '/' || c == ',' || c == ':' || c == '=' || c == '@' || c == '+' || c == '%';
  };
  bool quote = word.empty();
  for (char c : word) quote = quote || !plain(c);
  if (!quote) return std::string(word);
  std::string out = "'";
  for (char c : word) {
    if (c == '\'') out += "'\\''";
    else out += c;
  }
  return out + "'";
}

}  // namespace wse
