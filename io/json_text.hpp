#pragma once
// JSON as the files the tool writes hold it (reports, traces, checkpoint headers, mesh programs).
// They carry text from the user that need not be UTF-8 on Linux: a config's path, an --out
// folder, a machine's name. nlohmann's dump() throws on invalid UTF-8, and did so after a whole
// run ("internal error", no report); here an invalid byte becomes U+FFFD instead.
#include <nlohmann/json.hpp>
#include <string>

namespace wse {

inline std::string json_text(const nlohmann::json& j, int indent = -1) {
  return j.dump(indent, ' ', false, nlohmann::json::error_handler_t::replace);
}

}  // namespace wse
