#pragma once
// Reading one field of a YAML config: the value, or a ConfigError naming the file (`where`), the
// field and what was expected. Shared by the host's config loader and every kernel that parses
// its own block (kernels/*), so all of them word their errors alike.
#include <yaml-cpp/yaml.h>

#include <cmath>
#include <cstdio>
#include <cstdint>
#include <set>
#include <string>
#include <type_traits>

#include "core/errors.hpp"

namespace wse::yaml {

inline std::string describe(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

template <class T>
inline T scalar(const YAML::Node& n, const std::string& where, const std::string& field, const char* expected) {
  // A quoted value is a string in YAML ("4", 'true'): a number or a flag given that way is
  // refused, not read (yaml-cpp's as<> would read "4" as 4, while 4.5 as an integer is refused).
  if constexpr (std::is_arithmetic_v<T>)
    if (n.IsScalar() && n.Tag() == "!")
      throw ConfigError(where + ": field '" + field + "': expected " + expected + ", got the quoted string " + describe(n) +
                        " (leave the quotes out)");
  try {
    if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "");
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw ConfigError(where + ": field '" + field + "': expected " + expected + ", got " + describe(n));
  }
}

// An integer in [min, max]; the message gives the whole range, so a value just below it is
// never told a range that would refuse it again.
inline uint64_t integer_in(const YAML::Node& n, const std::string& where, const std::string& field, uint64_t min, uint64_t max) {
  double v = scalar<double>(n, where, field, "a positive integer");  // accepts 1e6 as well as 1000000
  // Range first: converting a double beyond uint64_t is undefined (found by fuzz_run_config).
  if (!(v >= double(min)) || v > double(max) || v != std::floor(v))
    throw ConfigError(where + ": field '" + field + "': expected an integer in [" + std::to_string(min) + ", " + std::to_string(max) +
                      "], got " + describe(n));
  return uint64_t(v);
}

inline uint64_t positive(const YAML::Node& n, const std::string& where, const std::string& field, uint64_t max) {
  return integer_in(n, where, field, 1, max);
}

inline void check_keys(const YAML::Node& map, const std::string& where, const std::string& prefix,
                const std::set<std::string>& allowed) {
  if (!map.IsMap()) throw ConfigError(where + ": field '" + prefix + "': expected a mapping, got " + describe(map));
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar())
      throw ConfigError(where + ": " + (prefix.empty() ? std::string("at the top level") : "field '" + prefix + "'") + ": a key is " + describe(kv.first) + ", expected a field name");
    std::string key = kv.first.Scalar();
    // yaml-cpp keeps both and finds the first: `{rows: 100, rows: 200}` ran 100 rows, silently.
    if (!seen.insert(key).second)
      throw ConfigError(where + ": field '" + (prefix.empty() ? "" : prefix + ".") + key + "' is given twice; give it once");
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw ConfigError(where + ": unknown field '" + (prefix.empty() ? "" : prefix + ".") + key + "' (expected one of: " +
                        list + ")");
    }
  }
}

inline uint64_t count(const YAML::Node& n, const std::string& where, const std::string& field, uint64_t max) {
  double v = scalar<double>(n, where, field, "a non-negative integer");
  if (!(v >= 0) || v > double(max) || v != std::floor(v))
    throw ConfigError(where + ": field '" + field + "': expected an integer in [0, " + std::to_string(max) + "], got " + describe(n));
  return uint64_t(v);
}

// A number in [lo, hi], at double precision (rates, which a float would round: 0.01 bytes a cycle
// read as 0.0099999998).
inline double real_in(const YAML::Node& n, const std::string& where, const std::string& field, double lo, double hi) {
  const double v = scalar<double>(n, where, field, "a number");
  if (!(v >= lo && v <= hi)) {
    char range[64];
    std::snprintf(range, sizeof range, "[%g, %g]", lo, hi);
    throw ConfigError(where + ": field '" + field + "': expected a number in " + range + ", got " + describe(n));
  }
  return v;
}

// The same, for a float field (a learning rate, a loss scale).
inline float number(const YAML::Node& n, const std::string& where, const std::string& field, double lo, double hi) {
  return float(real_in(n, where, field, lo, hi));
}

}  // namespace wse::yaml
