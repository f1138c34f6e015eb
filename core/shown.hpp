#pragma once
// Text from a user's file as a message shows it: control bytes as \xNN. A key "mach\x19ine"
// printed raw read as "machine", beside a list naming machine as expected; an escape byte in a
// stream's layer name or a dump's metric would reach the terminal and act there. Every message
// that quotes what a file holds (a config, a checkpoint's metadata, a stream, a dump) shows it so.
#include <string>
#include <string_view>

namespace wse {

inline std::string shown(std::string_view text) {
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out;
  out.reserve(text.size());
  for (const unsigned char c : text) {
    if (c < 0x20 || c == 0x7f) {
      out += "\\x";
      out += kHex[c >> 4];
      out += kHex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out;
}

// shown(), cut to its first `max` characters with the length said: a value a message quotes is
// there to be recognised, and a megabyte-long one made a megabyte-long message (a CLI audit,
// forty-sixth round).
inline std::string shown_brief(std::string_view text, size_t max = 80) {
  if (text.size() <= max) return shown(text);
  return shown(text.substr(0, max)) + "... (" + std::to_string(text.size()) + " characters)";
}

}  // namespace wse
