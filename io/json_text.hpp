#pragma once
// JSON as the files the tool writes hold it (reports, traces, checkpoint headers, mesh programs).
// They carry text from the user that need not be UTF-8 on Linux: a config's path, an --out
// folder, a machine's name. nlohmann's dump() throws on invalid UTF-8, and did so after a whole
// run ("internal error", no report); here an invalid byte becomes U+FFFD instead.
#include <nlohmann/json.hpp>
#include <string>

namespace wse {

// Any nlohmann JSON type: an ordered_json (a checkpoint's header) keeps its order (converted to
// json it was sorted, and the checkpoint's bytes changed).
template <class Json>
std::string json_text(const Json& j, int indent = -1) {
  return j.dump(indent, ' ', false, Json::error_handler_t::replace);
}

}  // namespace wse
