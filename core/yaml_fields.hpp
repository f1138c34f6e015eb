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
#include "core/shown.hpp"

namespace wse::yaml {

using wse::shown;  // core/shown.hpp: control bytes as \xNN
using wse::shown_brief;

inline std::string describe(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + shown_brief(n.Scalar()) + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

// A plain scalar (yaml-cpp's tag "?") or one tagged as a number or a flag (!!int, !!float, !!bool).
inline bool untagged_or_number(const YAML::Node& n) {
  const std::string& t = n.Tag();
  return t.empty() || t == "?" || t == "tag:yaml.org,2002:int" || t == "tag:yaml.org,2002:float" || t == "tag:yaml.org,2002:bool";
}

template <class T>
inline T scalar(const YAML::Node& n, const std::string& where, const std::string& field, const char* expected) {
  // A quoted value is a string in YAML ("4", 'true'): a number or a flag given that way is
  // refused, not read (yaml-cpp's as<> would read "4" as 4, while 4.5 as an integer is refused).
  if constexpr (std::is_arithmetic_v<T>) {
    if (n.IsScalar() && n.Tag() == "!")
      throw ConfigError(where + ": field '" + field + "': expected " + expected + ", got the quoted string " + describe(n) +
                        " (leave the quotes out)");
    // An explicit tag other than a number's or a flag's (!!str 4, !foo 4) says it is not one.
    if (n.IsScalar() && !untagged_or_number(n))
      throw ConfigError(where + ": field '" + field + "': expected " + expected + ", got " + describe(n) + " tagged " + n.Tag() +
                        " (leave the tag out)");
  }
  // No name, kind or path holds a control byte: one (an escape, say) is a damaged file, and its
  // messages would carry it to the terminal raw.
  if constexpr (std::is_same_v<T, std::string>) {
    if (n.IsScalar() && shown(n.Scalar()) != n.Scalar())
      throw ConfigError(where + ": field '" + field + "': expected " + expected + ", got " + describe(n) + ", which holds a control character");
  }
  try {
    if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "");
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw ConfigError(where + ": field '" + field + "': expected " + expected + ", got " + describe(n));
  }
}

// An integer in [min, max]; the message gives the whole range, so a value just below it is
// never told a range that would refuse it again. Written as YAML 1.2's core schema writes one:
// decimal digits (a leading 0 is still decimal: 010 is 10), 0x hex or 0o octal, a sign; or as a
// number such as 1e6 or 10.0 that is exactly an integer up to 2^53 (a double has no room for every
// integer beyond: 2^62 + 1 was read as 2^62). Every integer field reads through here, seeds too
// (yaml-cpp's as<uint64_t> read a seed of 010 as octal 8, refused 08, and took 0x10 where no
// other field did).
inline uint64_t integer_in(const YAML::Node& n, const std::string& where, const std::string& field, uint64_t min, uint64_t max) {
  // Not a number at all ("many", true) is told the range too.
  const std::string expected = "an integer in [" + std::to_string(min) + ", " + std::to_string(max) + "]";
  auto refuse = [&](const std::string& why = "") -> uint64_t {
    throw ConfigError(where + ": field '" + field + "': expected " + expected + ", got " + describe(n) + why);
  };
  if (n.IsScalar() && untagged_or_number(n)) {
    const std::string& t = n.Scalar();
    size_t i = 0;
    const bool negative = !t.empty() && t[0] == '-';
    if (!t.empty() && (t[0] == '+' || t[0] == '-')) i = 1;
    unsigned base = 10;
    if (t.size() > i + 2 && t[i] == '0' && (t[i + 1] == 'x' || t[i + 1] == 'o')) base = t[i + 1] == 'x' ? 16 : 8, i += 2;
    auto digit = [&](char c) -> unsigned {
      if (c >= '0' && c <= '9') return unsigned(c - '0');
      if (c >= 'a' && c <= 'f') return unsigned(c - 'a' + 10);
      if (c >= 'A' && c <= 'F') return unsigned(c - 'A' + 10);
      return 99;
    };
    bool digits = i < t.size();
    for (size_t k = i; k < t.size() && digits; ++k) digits = digit(t[k]) < base;
    if (digits) {
      uint64_t v = 0;
      for (size_t k = i; k < t.size(); ++k)
        if (__builtin_mul_overflow(v, uint64_t(base), &v) || __builtin_add_overflow(v, uint64_t(digit(t[k])), &v)) return refuse();
      if ((negative && v != 0) || v < min || v > max) return refuse();
      return v;
    }
    if (base != 10) return refuse();
  }
  const double v = scalar<double>(n, where, field, expected.c_str());  // 1e6 as well as 1000000
  // Range first: converting a double beyond uint64_t is undefined (found by fuzz_run_config).
  if (!(v >= double(min)) || v > double(max) || v != std::floor(v)) return refuse();
  if (v > 9007199254740992.0) return refuse(" (beyond 2^53 a number in that form may be rounded: write the integer in digits)");
  return uint64_t(v);
}

inline uint64_t positive(const YAML::Node& n, const std::string& where, const std::string& field, uint64_t max) {
  return integer_in(n, where, field, 1, max);
}

inline void check_keys(const YAML::Node& map, const std::string& where, const std::string& prefix,
                const std::set<std::string>& allowed) {
  if (!map.IsMap())
    throw ConfigError(where + ": " + (prefix.empty() ? std::string("at the top level") : "field '" + prefix + "'") + ": expected a mapping, got " +
                      describe(map));
  std::set<std::string> seen;
  for (const auto& kv : map) {
    if (!kv.first.IsScalar())
      throw ConfigError(where + ": " + (prefix.empty() ? std::string("at the top level") : "field '" + prefix + "'") + ": a key is " + describe(kv.first) + ", expected a field name");
    std::string key = kv.first.Scalar();
    // YAML 1.1's merge key, which yaml-cpp reads as a plain key "<<".
    if (key == "<<")
      throw ConfigError(where + ": " + (prefix.empty() ? std::string("at the top level") : "field '" + prefix + "'") +
                        ": a merge key (<<) is not supported; write the fields out (an alias of a whole value, *name, is)");
    // yaml-cpp keeps both and finds the first: `{rows: 100, rows: 200}` ran 100 rows, silently.
    if (!seen.insert(key).second)
      throw ConfigError(where + ": field '" + (prefix.empty() ? "" : prefix + ".") + shown(key) + "' is given twice; give it once");
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw ConfigError(where + ": unknown field '" + (prefix.empty() ? "" : prefix + ".") + shown(key) + "' (expected one of: " +
                        list + ")");
    }
  }
}

inline uint64_t count(const YAML::Node& n, const std::string& where, const std::string& field, uint64_t max) {
  return integer_in(n, where, field, 0, max);
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

// The same, for a float field (a learning rate, a loss scale): a value that is not 0 but is 0 in
// fp32 (lr: 1e-50 trained as lr 0, silently; eps: 1e-50 was "not in (0, 1]") is refused.
inline float number(const YAML::Node& n, const std::string& where, const std::string& field, double lo, double hi) {
  const double v = real_in(n, where, field, lo, hi);
  if (v != 0 && float(v) == 0)
    throw ConfigError(where + ": field '" + field + "': " + describe(n) +
                      " is 0 in fp32, which keeps it (its smallest positive value is about 1.4e-45)");
  return float(v);
}

}  // namespace wse::yaml
