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

}  // namespace wse
