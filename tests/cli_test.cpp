// The `wse` command line: exit codes, messages, and report.json.
#include <gtest/gtest.h>

#include "cli_support.hpp"

#include <array>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <utility>

namespace {

namespace fs = std::filesystem;
using wse::test::Output;
using wse::test::wse;

fs::path write(const std::string& name, const std::string& yaml) {
  fs::path p = wse::test::scratch_file(name);
  std::ofstream(p) << yaml;
  return p;
}

TEST(Cli, RunWritesTheReport) {
  fs::path cfg = write("ok.yaml", "machine: wse2\nmesh: {width: 6, height: 5}\ngemv: {rows: 50, cols: 40, seed: 3}\n");
  fs::path out = wse::test::process_scratch() / "out";
  fs::remove_all(out);
  Output o = wse("run " + cfg.string() + " --threads 2 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("checksum"), std::string::npos);
  std::ifstream in(out / "report.json");
  nlohmann::json j = nlohmann::json::parse(in);
  for (const char* key : {"mesh", "threads", "cycles", "macs", "wavelets", "link_util_max", "backpressure_cycles",
                          "sram_high_water_bytes", "host_seconds", "pe_cycles_per_second", "tile_cycles_per_second", "peak_rss_bytes", "checksum"})
    EXPECT_TRUE(j.contains(key)) << key;
  // The process's peak resident memory: more than the megabytes any run of the binary maps and
  // touches, far less than a 6 x 5 mesh could need.
  EXPECT_GT(j["peak_rss_bytes"].get<uint64_t>(), 1u << 20);
  EXPECT_LT(j["peak_rss_bytes"].get<uint64_t>(), 1u << 30);
  EXPECT_EQ(j["mesh"]["width"], 6);
  EXPECT_EQ(j["mesh"]["height"], 5);
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["macs"], 50 * 40);
  // y checked against the host's sums in the PEs' order, and its error against y in double: 40
  // products in [-1, 1) summed in fp32 stay well within 40 x 2^-24 x 40 of the exact sum.
  EXPECT_EQ(j["gemv"]["matches_host_sum"], true);
  EXPECT_GE(j["gemv"]["max_abs_error_vs_exact"].get<double>(), 0.0);
  EXPECT_LT(j["gemv"]["max_abs_error_vs_exact"].get<double>(), 40.0 * 40.0 / (1 << 24));
  EXPECT_NEAR(j["pe_cycles_per_second"].get<double>(),
              30.0 * j["cycles"].get<double>() / j["host_seconds"].get<double>(), 1e-6 * j["pe_cycles_per_second"].get<double>());
  // The Cerebras simulator's statistic: every tile of the 6 x 5 mesh, busy or not.
  EXPECT_NEAR(j["tile_cycles_per_second"].get<double>(), 30.0 * j["cycles"].get<double>() / j["host_seconds"].get<double>(),
              1e-6 * j["tile_cycles_per_second"].get<double>());
}

// The checksum docs/performance.md gives for examples/gemv.yaml, pinned: every other test compares
// checksums between two runs of the same binary, so a counter left out of the fold (or a change
// of the model that moves a counter) passed unseen (found by a mutation test). A change that
// moves it on purpose updates this figure and docs/performance.md's together.
TEST(Cli, TheGemvExampleGivesTheChecksumTheDocsGive) {
  for (const char* threads : {"1", "3"}) {
    const fs::path out = wse::test::process_scratch() / (std::string("example_gemv_") + threads);
    fs::remove_all(out);
    Output o = wse("run " + std::string(WSE_SOURCE_DIR) + "/examples/gemv.yaml --threads " + threads + " --out " + out.string());
    ASSERT_EQ(o.code, 0) << o.text;
    const nlohmann::json j = nlohmann::json::parse(std::ifstream(out / "report.json"));
    EXPECT_EQ(j["checksum"], "95b31600aab5c4e9") << threads << " thread(s)";
    EXPECT_EQ(j["cycles"], 1376) << threads << " thread(s)";
  }
}

// `wse run` of `yaml` on one thread into a fresh folder named `name`: what it printed, and its
// report (`report`), for tests that check a run's figures by hand.
Output run_for_report(const std::string& name, const std::string& yaml, nlohmann::json& report) {
  const fs::path cfg = write(name + ".yaml", yaml);
  const fs::path out = wse::test::process_scratch() / name;
  fs::remove_all(out);
  Output o = wse("run " + cfg.string() + " --threads 1 --out " + out.string());
  if (o.code == 0) report = nlohmann::json::parse(std::ifstream(out / "report.json"));
  return o;
}

// Found by a mutation test: no test read fmac_utilization or active_pes (counting every tile, or
// dividing by one PE more, passed). A 4x4 GEMV grid on a 6x5 mesh: the PEs with a program are the
// grid's 16, its fmac cycles are its 64 x 64 MACs (one a cycle, fp32), and the utilization is
// fmac cycles / (active PEs x cycles), as docs/cycle-engine.md defines it.
TEST(Cli, FmacUtilizationCountsThePesWithAProgram) {
  nlohmann::json j;
  Output o = run_for_report("sub_grid", "machine: wse2\nmesh: {width: 6, height: 5}\ngemv: {rows: 64, cols: 64, grid: {width: 4, height: 4}, seed: 7}\n", j);
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_EQ(j["active_pes"], 16);
  EXPECT_EQ(j["macs"], 64 * 64);
  EXPECT_EQ(j["pe_cycles"]["fmac"], 64 * 64);
  EXPECT_EQ(j["fmac_utilization"].get<double>(), 4096.0 / (16.0 * j["cycles"].get<double>()));
  // The busiest PE's SRAM, by hand: its vars (24 bytes), its 16 x 16 tile of A, 16 of y and 16 of
  // x, in fp32. Found by a mutation test: the last PE's figure (here one without a program, 0)
  // passed every test, each of whose meshes held one tile size everywhere.
  EXPECT_EQ(j["sram_high_water_bytes"], 24 + 16 * 16 * 4 + 16 * 4 + 16 * 4);
}

// `wavelets` and `wavelet_hops` by hand, from the GEMV mapping (docs/architecture.md): x enters
// at the north edge, a column's slice through its ingress port, and runs south through every PE
// row; each PE sends its rows' partial sums east, the last column's going on to the egress. On a
// 4 x 2 grid with y of 6 (3 a row) and x of 8 (2 a column): injected 8 x + 8 PEs x 3 partials
// = 32; hops 4 columns x 2 x south to row 1, and 2 rows x 3 east hops x 3 partials = 26 (the
// links into the egress and from the ingress are edge links, not hops). Found by a mutation
// test: leaving out the ingress ports' wavelets, or counting every link as a hop, were caught
// only by comparing the report with the activity dump, which shares the counters.
TEST(Cli, WaveletsAndHopsAreTheMappingsByHand) {
  nlohmann::json j;
  Output o = run_for_report("hand_count", "machine: wse2\nmesh: {width: 4, height: 2}\ngemv: {rows: 6, cols: 8, seed: 7}\n", j);
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_EQ(j["wavelets"], 8 + 8 * 3);
  EXPECT_EQ(j["wavelet_hops"], 4 * 2 + 2 * 3 * 3);
  EXPECT_NE(o.text.find("wavelets          32 injected (edge ports and PEs), 26 hops"), std::string::npos) << o.text;
}

// --threads beyond what a mesh can use (a worker per row at most) runs on fewer, and the report
// says so, as it does for the engine's own choice; a count it could use in full gets no note.
TEST(Cli, AThreadCountTheMeshCannotUseIsNotedInTheReport) {
  fs::path cfg = write("capped.yaml", "machine: wse2\nmesh: {width: 6, height: 5}\ngemv: {rows: 50, cols: 40, seed: 3}\n");
  for (unsigned asked : {16u, 2u}) {
    fs::path out = wse::test::process_scratch() / ("capped_" + std::to_string(asked));
    fs::remove_all(out);
    Output o = wse("run " + cfg.string() + " --threads " + std::to_string(asked) + " --out " + out.string());
    ASSERT_EQ(o.code, 0) << o.text;
    const nlohmann::json j = nlohmann::json::parse(std::ifstream(out / "report.json"));
    EXPECT_EQ(j["threads_choice"]["asked"], asked);
    // On a host with fewer CPUs than workers the note says that too (the next test).
    const unsigned used = asked == 16 ? 6 : 2, hardware = j["threads_choice"]["hardware_threads"].get<unsigned>();
    const std::string crowded = used > hardware ? "the run's " + std::to_string(used) + " workers are more than the " +
                                                      std::to_string(hardware) + " hardware thread(s)"
                                                : "";
    if (asked == 16) {
      EXPECT_EQ(j["threads"], 6);  // five rows: bands of its six columns instead (fabric/partition.hpp)
      const std::string note = j["threads_choice"].value("note", "");
      const std::string capped =
          "--threads 16: the run used 6 (wafers share the threads evenly, each mesh taking at most one worker per row, or column; docs/performance.md)";
      EXPECT_EQ(note.substr(0, capped.size()), capped) << note;
      EXPECT_EQ(note.substr(capped.size()), crowded.empty() ? "" : "; " + crowded + " this process may run on: they take turns on the cores and wait for each other every cycle, so the run is slower (its results are the same)") << note;
    } else {
      EXPECT_EQ(j["threads"], 2);
      EXPECT_EQ(j["threads_choice"].contains("note"), !crowded.empty()) << j["threads_choice"];
    }
  }
}

// More workers than the CPUs the process may run on: each cycle's barrier waits for a worker that
// is not running (a 512-tile reduce at --threads 200 on two CPUs took 28.7 s against 0.12 s on
// one thread), and the report said nothing of it (a speed-figures audit, forty-seventh round).
TEST(Cli, MoreWorkersThanCpusAreNotedInTheReport) {
  ASSERT_EQ(wse::test::shell("taskset -c 0 true").code, 0) << "taskset(1), of util-linux, runs the case on one CPU";
  fs::path cfg = write("crowded.yaml", "machine: wse2\nmesh: {width: 6, height: 5}\ngemv: {rows: 50, cols: 40, seed: 3}\n");
  fs::path out = wse::test::process_scratch() / "crowded";
  fs::remove_all(out);
  Output o = wse::test::shell("taskset -c 0 " + std::string(WSE_BINARY) + " run " + cfg.string() + " --threads 2 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(out / "report.json"));
  EXPECT_EQ(j["threads"], 2);
  EXPECT_EQ(j["threads_choice"]["hardware_threads"], 1);
  EXPECT_EQ(j["threads_choice"].value("note", ""),
            "the run's 2 workers are more than the 1 hardware thread(s) this process may run on: they take turns on the cores and wait "
            "for each other every cycle, so the run is slower (its results are the same)");
}

struct BadConfig {
  const char* name;
  const char* yaml;
  const char* message;
};

TEST(Cli, BadConfigsGiveAClearErrorAndExitCode2) {
  static const std::string kDeep = "gemv: " + std::string(600, '[') + std::string(600, ']') + "\n";
  static const std::string kLongKernel = "kernel: " + std::string(100000, 'x') + "\n", kLongShown = "unknown kernel '" + std::string(80, 'x') +
                                                                                                  "... (100000 characters)' (known: ";
  static const std::string kLongRows = "gemv: {rows: " + std::string(100000, '7') + ", cols: 4}\n";
  const BadConfig cases[] = {
      {"unknown_field.yaml", "gemv: {rows: 4, cols: 4}\nmesh: {widht: 3}\n", "unknown field 'mesh.widht'"},
      // Not a number at all is told the range too, as a number out of it is.
      {"bad_number.yaml", "gemv: {rows: many, cols: 4}\n", "field 'gemv.rows': expected an integer in [1, "},
      {"bad_flag.yaml", "gemv: {rows: 4, cols: true}\n", "], got 'true'"},
      {"zero.yaml", "gemv: {rows: 0, cols: 4}\n", "field 'gemv.rows'"},
      {"no_gemv.yaml", "machine: wse2\n", "missing field 'gemv'"},
      {"preset.yaml", "machine: wse9\ngemv: {rows: 4, cols: 4}\n", "machine preset 'wse9' not found"},
      {"too_big.yaml", "mesh: {width: 800}\ngemv: {rows: 4, cols: 4}\n", "field 'mesh.width': expected an integer in [1, 750]"},
      {"latency.yaml", "machine: {preset: wse2, hop_latency_cycles: 99}\ngemv: {rows: 4, cols: 4}\n", "hop_latency_cycles"},
      // 12,278 fp32 values fit beside the kernel's 40 bytes of its own: the range the loader gives
      // for any value out of it (it said [1, 12288] for 0, and 12,279 to 12,288 failed later).
      {"elements.yaml", "machine: wse2\nmesh: {width: 8, height: 1}\nkernel: reduce\nreduce: {algorithm: chain, elements: 12279}\n",
       "field 'reduce.elements': expected an integer in [1, 12278], got '12279'"},
      {"elements0.yaml", "machine: wse2\nmesh: {width: 8, height: 1}\nkernel: reduce\nreduce: {algorithm: chain, elements: 0}\n",
       "field 'reduce.elements': expected an integer in [1, 12278], got '0'"},
      {"banks.yaml", "machine: {preset: wse2, sram_banks: 16}\ngemv: {rows: 4, cols: 4}\n",
       "field 'machine.sram_banks': 16, but the SIMD stride limits modelled are the SDK's for 8 banks"},
      {"task_ids.yaml", "machine: {preset: wse2, local_task_ids: 33}\ngemv: {rows: 4, cols: 4}\n", "field 'machine.local_task_ids'"},
      {"receive.yaml", "machine: {preset: wse2, data_task_receive_cycles: 0}\ngemv: {rows: 4, cols: 4}\n", "field 'machine.data_task_receive_cycles'"},
      // The parser's words and where, without its "yaml-cpp: error at" prefix.
      {"not_yaml.yaml", "gemv: [rows: 4\n", "not valid YAML at line 2, column 1: "},
      // Nested past the reader's depth guard: "bad file", its words for that (a CLI audit, forty-sixth round).
      // The field missing named alone (both were named when one was: a CLI audit, forty-sixth round).
      {"gemv_no_rows.yaml", "gemv: {cols: 16}\n", "field 'gemv.rows' is required (A is gemv.rows x gemv.cols)"},
      {"gemv_neither.yaml", "gemv: {seed: 1}\n", "fields 'gemv.rows' and 'gemv.cols' are required"},
      // An empty regex would select every parameter, biases included (it did, without a word).
      {"empty_pattern.yaml", "kernel: fc_train\nmodel: {layers: [784, 16, 10]}\nsparsity: {sparsity: 0.5, param_name_patterns: ''}\n",
       "field 'sparsity.param_name_patterns': an empty regex, which would select every parameter, biases included; give '.*'"},
      // A value quoted in part, with its length: a megabyte-long one made a megabyte-long message.
      {"long_kernel.yaml", kLongKernel.c_str(), kLongShown.c_str()},
      {"long_rows.yaml", kLongRows.c_str(), "field 'gemv.rows': expected an integer in [1, 1073741824], got '7777777777"},
      {"deep.yaml", kDeep.c_str(),
       "not valid YAML at line 1, column 1207: lists and mappings nested 500 levels inside one another, where the YAML reader stops"},
      // The value given, and both ends of a range the wrong way round (an error audit, forty-fourth round).
      {"init_std.yaml", "kernel: fc_train\nmodel: {layers: [784, 16, 10], init: {weight: {kind: normal, std: -1}}}\n",
       "field 'model.init.weight.std': expected a number >= 0, got '-1'"},
      {"init_range.yaml", "kernel: fc_train\nmodel: {layers: [784, 16, 10], init: {weight: {kind: uniform, low: 1, high: 0.5}}}\n",
       "field 'model.init.weight': expected low <= high, got low '1' and high '0.5'"},
      {"init_default.yaml", "kernel: fc_train\nmodel: {layers: [784, 16, 10], init: {weight: {kind: uniform, low: 2}}}\n",
       "got low '2' and high 1 (the default)"},
      // A parameter of another kind was accepted and ignored (a review, forty-fifth round).
      {"init_other.yaml", "kernel: fc_train\nmodel: {layers: [784, 16, 10], init: {weight: {kind: uniform, std: 5}}}\n",
       "field 'model.init.weight.std': init 'uniform' does not read it (it reads low, high, scale)"},
      {"init_zeros.yaml", "kernel: fc_train\nmodel: {layers: [784, 16, 10], init: {bias: {kind: zeros, value: 1}}}\n",
       "field 'model.init.bias.value': init 'zeros' does not read it (it reads scale)"},
      {"sram.yaml", "mesh: {width: 1, height: 1}\ngemv: {rows: 300, cols: 300}\n", "fields 'gemv.rows' and 'gemv.cols': a 300 x 300 matrix on a 1 x 1 PE grid"},
      {"limit.yaml", "mesh: {width: 2, height: 2}\ngemv: {rows: 20, cols: 20}\nrun: {max_cycles: 10}\n", "raise run.max_cycles"},
      // What a PE is busy with, by name: "1 ops or task actions queued behind it" said neither
      // which op nor that the task's own multiply-adds held the main thread; and the PEs left out
      // of the list are counted (a forty-fourth round's fix of a message left alone before).
      {"limit_queue.yaml", "mesh: {width: 32, height: 32}\ngemv: {rows: 1000, cols: 1000, seed: 7}\nrun: {max_cycles: 700}\n",
       "PE (1,0): main thread busy with 'compute' until cycle 1036; 1 item queued for the main thread: @fadds ('compute', 31 elements)"},
      {"limit_more.yaml", "mesh: {width: 32, height: 32}\ngemv: {rows: 1000, cols: 1000, seed: 7}\nrun: {max_cycles: 700}\n", "\n  ... and 1018 more"},
      // An ingress port paced by a tiny I/O rate was said to wait for a full or switched lane
      // (forty-second round). 0.001 B/cycle over 4 north ports is a 4-byte wavelet every 16,000
      // cycles a port: each port's third wavelet (k = 2) may enter at cycle 32,000.
      {"paced.yaml", "machine: {preset: wse2, io_bytes_per_cycle: 0.001}\nmesh: {width: 4, height: 4}\ngemv: {rows: 16, cols: 16}\n"
       "run: {max_cycles: 20000}\n",
       "ingress port at (0,0) side N: 2 of 4 wavelets not taken (the next may enter at cycle 32000: the port is paced by its share of "
       "machine.io_bytes_per_cycle"},
      // Stopped at 32,000 exactly: that wavelet, due at the first cycle not stepped, was never
      // tried (a review found it put down to a full lane).
      {"paced_edge.yaml", "machine: {preset: wse2, io_bytes_per_cycle: 0.001}\nmesh: {width: 4, height: 4}\ngemv: {rows: 16, cols: 16}\n"
       "run: {max_cycles: 32000}\n",
       "ingress port at (0,0) side N: 2 of 4 wavelets not taken (the next may enter at cycle 32000: the port is paced"},
      // A control byte in a key was printed raw: "unknown field 'machine'" beside a list naming machine.
      {"control.yaml", "mach\x19ine: wse2\ngemv: {rows: 4, cols: 4}\n", "unknown field 'mach\\x19ine'"},
      {"control_value.yaml", "gemv: {rows: \"4\\e[2J\", cols: 4}\n", "string '4\\x1b[2J'"},
      {"control_kernel.yaml", "kernel: \"ge\\emv\"\ngemv: {rows: 4, cols: 4}\n", "field 'kernel': expected a kernel name, got 'ge\\x1bmv', which holds a control character"},
  };
  for (const BadConfig& c : cases) {
    Output o = wse("run " + write(c.name, c.yaml).string() + " --out " +
                   (wse::test::process_scratch() / "bad").string());
    EXPECT_EQ(o.code, 2) << c.name << ": " << o.text;
    EXPECT_NE(o.text.find(c.message), std::string::npos) << c.name << ": " << o.text;
    EXPECT_NE(o.text.find(c.name), std::string::npos) << "the error should name the file: " << o.text;
    EXPECT_LT(o.text.size(), 2000u) << c.name << ": a message that quotes all of a long value";
  }
}

// The reduce kernel from the command line: its cycles on PE 0 and sums checked against the host;
// the calibration's own settings (docs/machine-spec.md).
TEST(Cli, ReduceReportsItsCyclesAndChecksTheSums) {
  fs::path out = wse::test::process_scratch() / "reduce_out";
  fs::remove_all(out);
  fs::path cfg = write("reduce.yaml",
                       "machine: wse2\nmesh: {width: 64, height: 1}\nkernel: reduce\nreduce: {algorithm: chain, elements: 100}\n");
  Output o = wse("run " + cfg.string() + " --threads 2 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("sums match the host's"), std::string::npos) << o.text;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(out / "report.json"));
  // 44 cycles of fabric DSD setup, 63 PEs x 6 cycles, 100 elements, one more to finish.
  EXPECT_EQ(j["reduce"]["reduce_cycles"], 44 + 63 * 6 + 100 + 1);
  EXPECT_EQ(j["reduce"]["matches_host_sum"], true);
  EXPECT_LT(j["reduce"]["max_abs_error_vs_exact"].get<double>(), 1e-4);
  fs::path tree = write("tree6.yaml", "mesh: {width: 6, height: 1}\nkernel: reduce\nreduce: {algorithm: tree, elements: 4}\n");
  o = wse("run " + tree.string() + " --out " + out.string() + "_bad");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("field 'mesh.width': the tree reduce needs a power of two, got 6"), std::string::npos) << o.text;
  fs::path alg = write("alg.yaml", "mesh: {width: 8, height: 1}\nkernel: reduce\nreduce: {algorithm: ring, elements: 4}\n");
  o = wse("run " + alg.string() + " --out " + out.string() + "_bad");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("field 'reduce.algorithm': expected chain or tree, got 'ring'"), std::string::npos) << o.text;
}

TEST(Cli, MissingConfigFileAndBadFlags) {
  Output o = wse("run /nonexistent/gemv.yaml");
  EXPECT_EQ(o.code, 2);
  EXPECT_NE(o.text.find("/nonexistent/gemv.yaml: file not found"), std::string::npos) << o.text;
  EXPECT_EQ(wse("run --threads 0 x.yaml").code, 2);
  EXPECT_EQ(wse("").code, 2);
  // A folder or a device where a config belongs is named as such, by every command that reads
  // one (it was "internal error", exit 1, from the stream reading a directory).
  const std::string folder = wse::test::scratch_dir("a_folder").string();
  for (const std::string cmd : {"run ", "trace ", "baseline "}) {
    o = wse(cmd + folder);
    EXPECT_EQ(o.code, 2) << cmd << o.text;
    EXPECT_NE(o.text.find("config " + folder + ": not a regular file (a directory)"), std::string::npos) << cmd << o.text;
  }
  o = wse("run /dev/zero");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("config /dev/zero: not a regular file (a device, pipe or socket)"), std::string::npos) << o.text;
  Output help = wse("run --help");
  EXPECT_EQ(help.code, 0);
  EXPECT_NE(help.text.find("--threads"), std::string::npos);
  // Each bounded number's type once, then its range (it read "UINT:UINT:[1-4096]": the
  // validator's description repeated the type CLI11 shows).
  for (const auto& [cmd, shown] : {std::pair<const char*, const char*>{"run", "--threads UINT:[1-4096]"},
                                   {"trace", "--interval UINT:[1-1099511627776]"},
                                   {"trace", "--top UINT:[1-100000]"},
                                   {"viz", "--max-frames UINT:[1-1000000]"}}) {
    Output h = wse(std::string(cmd) + " --help");
    EXPECT_EQ(h.code, 0) << cmd;
    EXPECT_NE(h.text.find(shown), std::string::npos) << cmd << ": " << shown << "\n" << h.text;
    EXPECT_EQ(h.text.find("UINT:UINT"), std::string::npos) << cmd << "\n" << h.text;
  }
  // The parser's commonest words in wse's (they were CLI11's: "At Most 1 required but received 2",
  // "1 required TEXT missing", "A subcommand is required": a CLI audit, forty-sixth round).
  for (const auto& [args, said] : {std::pair<const char*, const char*>{"", "wse: error: a command is required: run, trace, inspect, viz, "
                                                                           "baseline or finalize-checkpoint (wse --help)"},
                                   {"run x.yaml --threads 1 --threads 2", "wse: error: --threads given 2 times; give it once (wse run --help)"},
                                   {"trace x.yaml --layer", "wse: error: --layer needs a value (TEXT) (wse trace --help)"},
                                   {"run --threads", "wse: error: --threads needs a value (UINT:[1-4096]) (wse run --help)"},
                                   {"inspect a b", "wse: error: unexpected argument 'b' (wse inspect --help)"}}) {
    Output e = wse(args);
    EXPECT_EQ(e.code, 2) << args << "\n" << e.text;
    EXPECT_NE(e.text.find(said), std::string::npos) << args << "\n" << e.text;
  }
}

}  // namespace
