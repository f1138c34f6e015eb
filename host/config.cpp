#include "host/config.hpp"

#include <yaml-cpp/yaml.h>

#include <set>

namespace wse {

#ifndef WSE_MACHINES_DIR
#define WSE_MACHINES_DIR "machines"
#endif

std::filesystem::path machines_dir() {
  if (const char* env = std::getenv("WSE_MACHINES_DIR")) return env;
  return WSE_MACHINES_DIR;
}

namespace {

std::string describe(const YAML::Node& n) {
  if (n.IsScalar()) return "'" + n.Scalar() + "'";
  if (n.IsSequence()) return "a list";
  if (n.IsMap()) return "a mapping";
  return "nothing";
}

template <class T>
T scalar(const YAML::Node& n, const std::string& where, const std::string& field, const char* expected) {
  try {
    if (!n.IsScalar()) throw YAML::Exception(n.Mark(), "");
    return n.as<T>();
  } catch (const YAML::Exception&) {
    throw ConfigError(where + ": field '" + field + "': expected " + expected + ", got " + describe(n));
  }
}

uint64_t positive(const YAML::Node& n, const std::string& where, const std::string& field, uint64_t max) {
  double v = scalar<double>(n, where, field, "a positive integer");  // accepts 1e6 as well as 1000000
  if (!(v >= 1) || v != double(uint64_t(v)) || v > double(max))
    throw ConfigError(where + ": field '" + field + "': expected an integer in [1, " + std::to_string(max) + "], got " +
                      describe(n));
  return uint64_t(v);
}

void check_keys(const YAML::Node& map, const std::string& where, const std::string& prefix,
                const std::set<std::string>& allowed) {
  if (!map.IsMap()) throw ConfigError(where + ": field '" + prefix + "': expected a mapping, got " + describe(map));
  for (const auto& kv : map) {
    std::string key = kv.first.as<std::string>();
    if (!allowed.count(key)) {
      std::string list;
      for (const auto& a : allowed) list += (list.empty() ? "" : ", ") + a;
      throw ConfigError(where + ": unknown field '" + (prefix.empty() ? "" : prefix + ".") + key + "' (expected one of: " +
                        list + ")");
    }
  }
}

YAML::Node load_yaml(const std::filesystem::path& path, const std::string& what) {
  if (!std::filesystem::exists(path)) throw ConfigError(what + " " + path.string() + ": file not found");
  try {
    return YAML::LoadFile(path.string());
  } catch (const YAML::Exception& e) {
    throw ConfigError(what + " " + path.string() + ": not valid YAML: " + e.what());
  }
}

}  // namespace

void apply_machine_fields(MachineSpec& s, const YAML::Node& n, const std::string& where) {
  static const std::set<std::string> keys = {
      "name", "preset", "fabric_width", "fabric_height", "sram_bytes_per_pe", "sram_banks", "colours",
      "hop_latency_cycles", "ramp_latency_cycles", "wavelets_per_link_per_cycle", "router_buffer_depth",
      "pe_input_queue_depth", "fmac_simd_fp16", "fmac_simd_fp32", "move_simd_fp32", "clock_hz", "io_bytes_per_cycle"};
  check_keys(n, where, "machine", keys);
  auto u32 = [&](const char* key, uint32_t& out, uint64_t max) {
    if (n[key]) out = uint32_t(positive(n[key], where, key, max));
  };
  if (n["name"]) s.name = scalar<std::string>(n["name"], where, "name", "a string");
  u32("fabric_width", s.fabric_width, 1u << 16);
  u32("fabric_height", s.fabric_height, 1u << 16);
  u32("sram_bytes_per_pe", s.sram_bytes_per_pe, 1u << 24);
  u32("sram_banks", s.sram_banks, 1024);
  u32("colours", s.colours, MachineSpec::kMaxColours);
  u32("hop_latency_cycles", s.hop_latency_cycles, MachineSpec::kMaxLatency);
  u32("ramp_latency_cycles", s.ramp_latency_cycles, MachineSpec::kMaxLatency);
  u32("wavelets_per_link_per_cycle", s.wavelets_per_link_per_cycle, 1);
  u32("router_buffer_depth", s.router_buffer_depth, MachineSpec::kMaxDepth);
  u32("pe_input_queue_depth", s.pe_input_queue_depth, MachineSpec::kMaxDepth);
  u32("fmac_simd_fp16", s.fmac_simd_fp16, 1024);
  u32("fmac_simd_fp32", s.fmac_simd_fp32, 1024);
  u32("move_simd_fp32", s.move_simd_fp32, 1024);
  if (n["clock_hz"]) {
    s.clock_hz = scalar<double>(n["clock_hz"], where, "clock_hz", "a frequency in Hz");
    if (!(s.clock_hz > 0)) throw ConfigError(where + ": field 'clock_hz': expected a positive frequency");
  }
  if (n["io_bytes_per_cycle"]) {
    s.io_bytes_per_cycle = scalar<double>(n["io_bytes_per_cycle"], where, "io_bytes_per_cycle", "a number >= 0");
    if (!(s.io_bytes_per_cycle >= 0))
      throw ConfigError(where + ": field 'io_bytes_per_cycle': expected a number >= 0 (0 = unlimited)");
  }
}

MachineSpec load_machine(const std::string& name_or_path) {
  std::filesystem::path path = name_or_path;
  if (path.extension() != ".yaml" && path.extension() != ".yml") path = machines_dir() / (name_or_path + ".yaml");
  if (!std::filesystem::exists(path))
    throw ConfigError("machine preset '" + name_or_path + "' not found (looked for " + path.string() +
                      "; presets: wse2, wse3)");
  MachineSpec spec;
  apply_machine_fields(spec, load_yaml(path, "machine preset"), "machine preset " + path.string());
  return spec;
}

RunConfig load_run_config(const std::filesystem::path& path) {
  const std::string where = "config " + path.string();
  YAML::Node root = load_yaml(path, "config");
  if (!root.IsMap()) throw ConfigError(where + ": expected a mapping at the top level");
  check_keys(root, where, "", {"machine", "mesh", "kernel", "gemv", "run"});
  RunConfig cfg;
  cfg.source = path;

  YAML::Node m = root["machine"];
  if (!m || m.IsScalar()) {
    cfg.machine = load_machine(m ? m.as<std::string>() : "wse2");
  } else if (m.IsMap()) {
    std::string preset = m["preset"] ? scalar<std::string>(m["preset"], where, "machine.preset", "a preset name") : "wse2";
    cfg.machine = load_machine(preset);
    apply_machine_fields(cfg.machine, m, where);
  } else {
    throw ConfigError(where + ": field 'machine': expected a preset name or a mapping, got " + describe(m));
  }

  cfg.mesh = {cfg.machine.fabric_width, cfg.machine.fabric_height};
  if (YAML::Node mesh = root["mesh"]) {
    check_keys(mesh, where, "mesh", {"width", "height"});
    if (mesh["width"]) cfg.mesh.width = uint32_t(positive(mesh["width"], where, "mesh.width", cfg.machine.fabric_width));
    if (mesh["height"])
      cfg.mesh.height = uint32_t(positive(mesh["height"], where, "mesh.height", cfg.machine.fabric_height));
  }

  if (root["kernel"]) cfg.kernel = scalar<std::string>(root["kernel"], where, "kernel", "a kernel name");
  if (cfg.kernel != "gemv") throw ConfigError(where + ": field 'kernel': unknown kernel '" + cfg.kernel + "' (known: gemv)");

  YAML::Node g = root["gemv"];
  if (!g) throw ConfigError(where + ": missing field 'gemv' (rows, cols, grid, seed) for kernel gemv");
  check_keys(g, where, "gemv", {"rows", "cols", "grid", "seed"});
  if (!g["rows"] || !g["cols"]) throw ConfigError(where + ": fields 'gemv.rows' and 'gemv.cols' are required");
  cfg.gemv.rows = uint32_t(positive(g["rows"], where, "gemv.rows", 1u << 30));
  cfg.gemv.cols = uint32_t(positive(g["cols"], where, "gemv.cols", 1u << 30));
  if (YAML::Node grid = g["grid"]) {
    check_keys(grid, where, "gemv.grid", {"width", "height"});
    if (grid["width"]) cfg.gemv.grid_width = uint32_t(positive(grid["width"], where, "gemv.grid.width", cfg.mesh.width));
    if (grid["height"])
      cfg.gemv.grid_height = uint32_t(positive(grid["height"], where, "gemv.grid.height", cfg.mesh.height));
  }
  if (g["seed"]) cfg.gemv.seed = scalar<uint64_t>(g["seed"], where, "gemv.seed", "a non-negative integer");

  if (YAML::Node run = root["run"]) {
    check_keys(run, where, "run", {"max_cycles"});
    if (run["max_cycles"]) cfg.max_cycles = positive(run["max_cycles"], where, "run.max_cycles", uint64_t(1) << 62);
  }
  return cfg;
}

}  // namespace wse
