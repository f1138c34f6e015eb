// wse: the command-line entry point of the emulator.
#include <signal.h>
#include <unistd.h>

#include <CLI/CLI.hpp>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <iostream>
#include <memory>
#include <new>
#include <regex>
#include <string>
#include <thread>

#include "core/log.hpp"
#include "fabric/partition.hpp"
#include "host/baseline.hpp"
#include "host/checkpoint_command.hpp"
#include "host/inspect_command.hpp"
#include "host/job.hpp"
#include "host/memory_budget.hpp"
#include "host/progress.hpp"
#include "host/shell_words.hpp"
#include "host/thread_choice.hpp"
#include "host/trace_command.hpp"
#include "host/train_job.hpp"
#include "host/viz_command.hpp"
#include "io/live_temporaries.hpp"
#include "io/memory_limit.hpp"
#include "io/output_dir.hpp"
#include "io/output_file.hpp"
#include "io/json_text.hpp"

namespace {

// A progress line on long runs, only when stderr, where it is drawn, is a terminal (never in a
// pipe, a redirected log or CI: `wse run cfg 2>log` on a terminal wrote its escapes into the log):
// the cycle, the time in, the pace and, for `wse run`, the cycle limit (host/progress.hpp,
// CycleLine; a traced training layer starts at a later wafer cycle than its limit counts from).
wse::ProgressFn progress_line(bool tty, wse::Cycle limit = 0) {
  if (!tty) return {};
  auto line = std::make_shared<wse::CycleLine>(limit);
  return [line](wse::Cycle now) { line->at(now); };
}

int run_command(const std::string& config, unsigned threads, const std::filesystem::path& out_dir, wse::TrainModes modes) {
  wse::RunConfig cfg = wse::load_run_config(config);
  wse::check_run_memory(cfg);  // before anything big is built
  modes.tty = isatty(STDERR_FILENO);  // progress lines go to stderr
  const wse::ThreadChoice choice = wse::choose_threads(cfg, threads);
  threads = choice.threads;
  modes.threads_choice = choice.to_json();
  modes.adaptive_workers = choice.automatic;
  if (wse::kernel_kind(cfg.kernel, config).training) return wse::run_training(cfg, threads, out_dir, modes);
  if (!modes.resume.empty()) throw wse::UsageError("--resume: config " + config + " runs kernel " + cfg.kernel + ", which does not train");
  if (modes.compile_only)
    throw wse::UsageError("--compile_only: config " + config + " runs kernel " + cfg.kernel +
                          ", which has no mesh program or weight streams to write (a training kernel's); --validate_only checks it");
  if (modes.validate_only) {
    const uint32_t peak = wse::place_job(cfg);  // placement's errors (SRAM, colours, queues) are the run's
    std::printf("wse: config %s is valid (kernel %s): it places on the %ux%u mesh; peak SRAM per PE %u of %u bytes\n", config.c_str(),
                cfg.kernel.c_str(), cfg.mesh.width, cfg.mesh.height, peak, cfg.machine.sram_bytes_per_pe);
    return 0;
  }
  wse::OutputDir out(out_dir, {"--out", modes.overwrite, false, modes.command, {{cfg.source, "the config this run reads"}}});  // writable, and this run's own
  const bool tty = isatty(STDERR_FILENO);
  wse::ProgressFn progress = progress_line(tty, cfg.max_cycles);
  const std::string what = cfg.kernel_config->describe();
  wse::ThreadChoice fitted = choice;
  wse::JobResult r = wse::run_job(cfg, fitted, progress, [&](unsigned workers) {
    // "gemv 1000x1000", "chain reduce of 1024 fp32 per PE" (not "reduce chain reduce of ...").
    std::cout << "wse: " << (what.find(cfg.kernel) == std::string::npos ? cfg.kernel + " " + what : what) << " on a " << cfg.mesh.width << "x" << cfg.mesh.height << " "
              << cfg.machine.name << " mesh, " << workers << " thread(s)" << std::endl;
  });
  r.report["threads_choice"] = wse::threads_choice_json(fitted, r.report["threads"].get<unsigned>());
  if (tty) std::fprintf(stderr, "\r\033[K");
  const auto& j = r.report;
  const std::filesystem::path report = out.entry("report.json");
  wse::write_file_atomic(report, wse::json_text(j, 2) + "\n", "report");
  std::printf("  cycles            %llu (%.4g us at %.4g MHz)\n", (unsigned long long)j["cycles"].get<uint64_t>(),
              double(j["cycles"].get<uint64_t>()) / cfg.machine.clock_hz * 1e6, cfg.machine.clock_hz / 1e6);
  if (j.contains("reduce"))
    std::printf("  reduce            %llu cycles on PE (0,0) (%s, %u PEs, N = %u), sums match the host's\n",
                (unsigned long long)j["reduce"]["reduce_cycles"].get<uint64_t>(),
                j["reduce"]["algorithm"].get<std::string>().c_str(), j["reduce"]["width"].get<uint32_t>(),
                j["reduce"]["elements"].get<uint32_t>());
  std::printf("  MACs              %llu   FMAC utilization %.1f%%\n", (unsigned long long)j["macs"].get<uint64_t>(),
              100 * j["fmac_utilization"].get<double>());
  std::printf("  wavelets          %llu injected (edge ports and PEs), %llu hops, busiest link %.1f%%, backpressure %llu cycles\n",
              (unsigned long long)j["wavelets"].get<uint64_t>(), (unsigned long long)j["wavelet_hops"].get<uint64_t>(),
              100 * j["link_util_max"].get<double>(), (unsigned long long)j["backpressure_cycles"].get<uint64_t>());
  std::printf("  SRAM high water   %u bytes per PE\n", j["sram_high_water_bytes"].get<uint32_t>());
  std::printf("  host              %.3f s, %.3g PE-cycles/s, peak memory %s", j["host_seconds"].get<double>(),
              j["pe_cycles_per_second"].get<double>(), wse::format_bytes(j["peak_rss_bytes"].get<uint64_t>()).c_str());
  // A key the report may not have (`waiting` only with two workers or more): operator[] on a
  // const json reading a missing key is undefined behaviour (it crashed a one-worker run, rarely).
  static const nlohmann::json kNone = nlohmann::json::array();
  auto detail = [&](const char* key) -> const nlohmann::json& {
    const auto d = j.find("threads_detail");
    if (d == j.end() || !d->contains(key)) return kNone;
    return d->at(key);
  };
  if (const auto& work = detail("work_per_worker"); work.size() > 1) {
    // What the bands gave each worker of the placed kernel's work (Wafer::work_estimate).
    std::string shares;
    for (const auto& w : work) shares += (shares.empty() ? "" : " / ") + std::to_string(w.get<uint64_t>());
    std::printf(", work per worker %s", shares.c_str());
  }
  if (const auto& waiting = detail("waiting"); waiting.size() > 1) {
    // How much of the run each worker spent at the barrier waiting for the others.
    std::string waited;
    for (const auto& f : waiting) waited += (waited.empty() ? "" : " / ") + std::to_string(int(std::lround(100 * f.get<double>()))) + "%";
    std::printf(", waiting %s", waited.c_str());
  }
  std::printf("\n");
  std::printf("  checksum          %s\n  report            %s\n", j["checksum"].get<std::string>().c_str(),
              report.string().c_str());
  return 0;
}

struct TraceArgs {
  std::string pes, colours, detail = "all";
  std::vector<std::string> flows;
};

int trace_command(wse::TraceOptions opt, const TraceArgs& a) {
  if (!a.pes.empty()) opt.rect = wse::parse_rect(a.pes);
  if (!a.colours.empty()) opt.colours = wse::parse_colours(a.colours);
  opt.detail = wse::parse_detail(a.detail);
  for (const std::string& f : a.flows) opt.flows.push_back(wse::parse_flow(f));
  const bool tty = isatty(STDERR_FILENO);
  opt.progress = progress_line(tty);
  wse::TraceResult r = wse::run_trace(opt);
  if (tty) std::fprintf(stderr, "\r\033[K");
  std::fflush(stdout);
  wse::print_trace_summary(stdout, r, opt.top_n);
  return 0;
}

// On a terminal, the progress line a run draws on stderr ("cycle 0 (max_cycles 20)  0s in") is
// cleared before an error is printed: the error began on the same line, after it.
void clear_progress_line() {
  if (isatty(STDERR_FILENO)) std::fputs("\r\033[K", stderr);
}

// The command line as typed, for the output directory's record.
// CLI11's words for the mistakes a user makes most, in wse's ("--threads: At Most 1 required but
// received 2", "--layer: 1 required TEXT missing", "A subcommand is required": a CLI audit,
// forty-sixth round); any other message as CLI11 gives it.
std::string parser_words(std::string what) {
  static const std::regex missing(R"(^(-[-\w]+): 1 required (\S+) missing$)"), twice(R"(^(-[-\w]+): At Most 1 required but received (\d+)$)");
  std::smatch m;
  if (std::regex_match(what, m, missing)) return m[1].str() + " needs a value (" + m[2].str() + ")";
  if (std::regex_match(what, m, twice)) return m[1].str() + " given " + m[2].str() + " times; give it once";
  if (what == "A subcommand is required")
    return "a command is required: run, trace, inspect, viz, baseline or finalize-checkpoint";
  if (what.rfind("The following argument was not expected: ", 0) == 0)
    return "unexpected argument '" + what.substr(41) + "'";
  if (what.rfind("The following arguments were not expected: ", 0) == 0)
    return "unexpected arguments '" + what.substr(43) + "'";
  return what;
}

std::string command_line(int argc, char** argv) {
  std::string s = "wse";
  for (int i = 1; i < argc; ++i) s += " " + wse::shell_word(argv[i]);  // quoted where a shell would split it
  return s;
}

// What a command printed must reach its reader: a write to standard output that failed (a full
// disk under `> file`, /dev/full) is otherwise only a flag in stdio, and the command would end 0
// with its output lost (for `wse inspect` the output is all there is).
int with_stdout_written(int rc) {
  errno = 0;
  std::cout.flush();
  const bool flushed = std::fflush(stdout) == 0;
  const int err = errno;
  if (flushed && !std::ferror(stdout) && std::cout.good()) return rc;
  std::fprintf(stderr, "wse: error: standard output: cannot write it%s%s; what the command printed is lost\n", err ? ": " : "",
               err ? std::strerror(err) : "");
  return rc == 0 ? 2 : rc;
}

int command_main(int argc, char** argv) {
  // Past a file-size limit (ulimit -f) a write then fails with EFBIG, which is reported with the
  // file's name like any other write error, instead of the process being killed by SIGXFSZ.
  signal(SIGXFSZ, SIG_IGN);
  // SIGINT, SIGTERM or SIGHUP outside a training run (which stops at a step's end, host/interrupt)
  // end the process as before, but take the temporaries of files half written with them.
  wse::remove_on_fatal_signals();

  CLI::App app{"wse: a cycle-level emulator of a Cerebras-style wafer-scale engine"};
  app.require_subcommand(1);
  app.set_version_flag("--version", "wse " WSE_VERSION);
  // An empty value given ("--resume ''") meant "not given": a fresh run instead of a resumed one,
  // the whole mesh for --pes '', every metric for --metric ''.
  const CLI::Validator non_empty([](std::string& s) { return s.empty() ? std::string("expected a value, got an empty string") : std::string(); },
                                 "");
  // A whole number in [lo, hi]: CLI::Range said "Value abc not in range 1 to 4096" for a word.
  auto whole = [](uint64_t lo, uint64_t hi) {
    return CLI::Validator(
        [lo, hi](std::string& s) {
          const std::string want = "expected a whole number in [" + std::to_string(lo) + ", " + std::to_string(hi) + "], got '" + s + "'";
          if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) return want;
          const uint64_t v = std::stoull(s);
          return v < lo || v > hi ? want : std::string();
        },
        "[" + std::to_string(lo) + "-" + std::to_string(hi) + "]");  // after the type CLI11 shows: UINT:[lo-hi]
  };
  std::string config;
  unsigned threads = 0;  // 0: the engine chooses (host/thread_choice.hpp)
  std::string out_dir = "out";
  std::string max_memory;
  const char* overwrite_help =
      "Replace the previous wse run in a non-empty output directory: this run's files replace those of the same name, and "
      "once it has finished the rest of the files DIR/.wse-run lists go (a run that fails keeps what it did not replace). "
      "Without it a non-empty output directory is refused";
  const char* memory_help =
      "Host memory this run may use, e.g. 8G or 512M (default: what the OS reports available; never more than ulimit -v leaves). A run "
      "whose estimate is larger is refused before it allocates. The estimate is a lower bound (the mesh, the kernel's data, "
      "MemoryX's store), not a cap: a training run's steps, a trace's recording and viz's pictures take more (docs/reliability.md)";
  const char* threads_help =
      "Worker threads (default: the engine chooses: all hardware threads for wafers side by side, and per wafer only the "
      "workers its mesh pays for, one per 128 tiles (for GEMV and reduce, per 128 tiles the placed kernel uses), so a "
      "small mesh or kernel runs on one; in training, each pass then runs on those workers or on one, whichever this "
      "host measured faster for it (or, until it measures, for the passes measured before it); given, it is used as asked, at most one "
      "per mesh row, or per column on a mesh with fewer rows). The run says how many it used; results do not depend on it";
  CLI::App* run = app.add_subcommand(
      "run", "Run the kernel of a config (examples/gemv.yaml, examples/reduce.yaml, examples/fc_mnist.yaml) and write DIR/report.json");
  wse::TrainModes train_modes;
  CLI::Option* validate_flag = run->add_flag(
      "--validate_only", train_modes.validate_only,
      "Check the config and that the kernel places onto the mesh (training: every layer maps and the dataset loads; the parameters the sparsity block would sparsify are listed); run nothing, write nothing");
  run->add_flag("--compile_only", train_modes.compile_only,
                "Training configs: write DIR/mesh_program.json (placement, colours, routes, SRAM plan per PE) and DIR/streams/*.wsws; train nothing")
      ->excludes(validate_flag);
  run->add_option("config", config, "Run config (YAML)")->required()->check(non_empty);
  run->add_option("--threads", threads, threads_help)->check(whole(1, 4096));
  run->add_option("--out", out_dir,
                  "Directory for report.json, checkpoints and compile output (default: out); it must be new or empty, "
                  "see --overwrite")->check(non_empty);
  run->add_flag("--overwrite", train_modes.overwrite, overwrite_help);
  run->add_option("--max-memory", max_memory, memory_help);
  run->add_option("--resume", train_modes.resume,
                  "Finish the training run a checkpoint came from (one an interrupted run wrote, or any of its periodic ones): "
                  "train from its step to the step that run was to end at, with the same config, into a new --out")
      ->check(non_empty);
  std::string logging = "INFO";
  run->add_option("--logging", logging, "Log level: DEBUG (also logs each parameter as it is sparsified), INFO (default), WARNING (a training run "
                  "without its init, step and checkpoint lines: the header, notes, warnings and results only)")
      ->check(CLI::IsMember({"DEBUG", "INFO", "WARNING"}, CLI::ignore_case));
  wse::TraceOptions trace_opt;
  TraceArgs trace_args;
  // A cycle offset: unsigned, where CLI11 reads "-5" into a uint64 as 2^64 - 5.
  const CLI::Validator cycle_count(
      [](std::string& s) {
        if (s.empty() || s.find_first_not_of("0123456789") != std::string::npos) return "expected a cycle count (0, 1, 2, ...), got '" + s + "'";
        // Past 2^62 (run.max_cycles' bound) a count was saturated to 2^64 - 1 without a word.
        if (s.size() > 19 || std::stoull(s) > wse::kMaxRunCycles) return "expected a cycle count up to 2^62, got '" + s + "'";
        return std::string();
      },
      "CYCLES");
  CLI::App* trace = app.add_subcommand(
      "trace", "Run a config recording one layer: DIR/activity.wsad, DIR/trace.pftrace (Perfetto; trace.json with --format json), "
               "DIR/report.json, and for a training config DIR/cluster.pftrace (cluster.json with --format json: the traced step across the cluster's actors)");
  trace->add_option("config", config, "Run config (YAML)")->required()->check(non_empty);
  trace->add_option("--layer", trace_opt.layer,
                    "Layer to record: fc1, fc2, ... for a training config (required there); GEMV: the whole kernel, 'gemv' (default); reduce: 'reduce'")->check(non_empty);
  trace->add_option("--pass", trace_opt.pass, "Pass to record: fwd or bwd (default fwd; bwd for training layers only)")->check(non_empty);
  trace->add_option("--interval", trace_opt.interval, "Cycles per dump interval (default 1000)")
      ->check(whole(1, uint64_t(1) << 40));
  trace->add_option("--out", out_dir, "Output directory (default: out); it must be new or empty, see --overwrite")->check(non_empty);
  trace->add_flag("--overwrite", trace_opt.overwrite, overwrite_help);
  trace->add_option("--max-memory", max_memory, memory_help);
  trace->add_option("--threads", threads, threads_help)->check(whole(1, 4096));
  trace->add_option("--pes,--rect", trace_args.pes,
                    "PEs with tracks (task and DSD-op slices, counters) in the trace: x0,y0,x1,y1 inclusive (default: the whole mesh)")->check(non_empty);
  trace->add_option("--from", trace_opt.from, "Only what overlaps cycles [from, to) of the layer goes into the trace (default 0)")
      ->check(cycle_count);
  trace->add_option("--to", trace_opt.to, "End of that window, in cycles from the layer's start (default: the end of the layer)")
      ->check(cycle_count);
  trace->add_option("--detail", trace_args.detail,
                    "all (default), tasks (slices only: tasks and DSD ops) or counters (counter tracks only; PEs log no slices)");
  trace->add_option("--colours", trace_args.colours, "Colours with their own counter tracks, e.g. 3,5 (default: every routed colour)")->check(non_empty);
  trace->add_option("--flow", trace_args.flows,
                    "COLOUR@X,Y: draw that colour's route from PE (X,Y), a track per router, linked by flows to the PEs' tasks that "
                    "receive it (repeatable)");
  trace->add_option("--format", trace_opt.format,
                    "pftrace (default: native Perfetto, DIR/trace.pftrace) or json (Chrome trace-event JSON with the same events, DIR/trace.json, about 3x larger)")
      ->check(CLI::IsMember({"pftrace", "json"}));
  trace->add_option("--top", trace_opt.top_n, "Rows in the hottest links and colours tables (default 10)")
      ->check(whole(1, 100000));
  std::string inspect_file;
  CLI::App* inspect = app.add_subcommand("inspect", "Show what a WeightStream (.wsws) or GradientStream (.wsgs) file holds, after checking it in structure and meaning (against itself: no model is read)");
  inspect->add_option("file", inspect_file, "FlatBuffers message file")->required()->check(non_empty);
  std::string viz_dump, viz_metric, viz_trace;
  uint32_t viz_max_frames = 1000;
  bool viz_overwrite = false;
  CLI::App* viz = app.add_subcommand(
      "viz", "Pictures of an activity dump: DIR/<metric>.png, DIR/frames/<metric>_NNNN.png, DIR/index.html (links, colours, "
             "PE timelines)");
  viz->add_option("dump", viz_dump, "Activity dump (DIR/activity.wsad from wse trace)")->required()->check(non_empty);
  viz->add_option("--out", out_dir, "Output directory (default: out); it must be new or empty, see --overwrite")->check(non_empty);
  viz->add_flag("--overwrite", viz_overwrite, overwrite_help);
  viz->add_option("--max-memory", max_memory, memory_help);
  viz->add_option("--metric", viz_metric, "Only this metric's PNGs (default: every metric)")->check(non_empty);
  viz->add_option("--max-frames", viz_max_frames,
                  "Frames a metric at most (default 1000): a dump with more intervals gets frames of several consecutive intervals "
                  "each (summed; the maximum for levels such as SRAM bytes)")
      ->check(whole(1, 1000000));
  viz->add_option("--trace", viz_trace,
                  "Native trace (trace.pftrace from wse trace) whose task timelines the viewer shows for a clicked PE "
                  "(default: trace.pftrace beside the dump, if there is one)")->check(non_empty);
  std::string ckpt_in, ckpt_out;
  CLI::App* baseline = app.add_subcommand(
      "baseline",
      "Train a training config's model on the host with Eigen in fp32 (same initial weights, data order and optimizer as `wse run`) and "
      "write DIR/report.json with its test accuracy, to set beside the wafer run's");
  bool baseline_overwrite = false;
  baseline->add_option("config", config, "Run config (YAML) with a training kernel (examples/fc_mnist.yaml)")->required()->check(non_empty);
  baseline->add_option("--out", out_dir, "Directory for report.json (default: out); it must be new or empty, see --overwrite")->check(non_empty);
  baseline->add_flag("--overwrite", baseline_overwrite, overwrite_help);
  baseline->add_option("--max-memory", max_memory, memory_help);
  CLI::App* finalize = app.add_subcommand(
      "finalize-checkpoint", "Make a sparse run's checkpoint dense: every NaN sentinel becomes 0 (no sparsity pattern is kept)");
  finalize->add_option("--input", ckpt_in, "Checkpoint of a sparse run (.safetensors)")->required()->check(non_empty);
  finalize->add_option("--output", ckpt_out, "Where to write the finalized checkpoint (may equal --input; written to a temporary and renamed)")->required()->check(non_empty);
  // A first word that is no command ("wse bogus") was "A subcommand is required".
  auto is_command = [&](const std::string& word) {
    for (const CLI::App* sub : app.get_subcommands({}))
      if (sub->get_name() == word) return true;
    return false;
  };
  if (argc > 1 && argv[1][0] != '-' && !is_command(argv[1])) {
    std::fprintf(stderr, "wse: error: unknown command '%s' (commands: run, trace, inspect, viz, baseline, finalize-checkpoint; wse --help)\n",
                 argv[1]);
    return 2;
  }
  // An option before any command ("wse --bogus", "wse --threads 2 run ...") was "A subcommand is
  // required": wse itself takes only --help and --version.
  if (argc > 1 && argv[1][0] == '-') {
    const std::string first = argv[1];
    if (first != "-h" && first != "--help" && first != "--version") {
      std::fprintf(stderr, "wse: error: '%s' before a command: wse takes a command first, then its options (wse run --help; commands: run, "
                           "trace, inspect, viz, baseline, finalize-checkpoint)\n", argv[1]);
      return 2;
    }
  }
  try {
    app.parse(argc, argv);
  } catch (const CLI::CallForHelp& e) {
    return app.exit(e);
  } catch (const CLI::CallForVersion& e) {
    return app.exit(e);
  } catch (const CLI::ParseError& e) {
    // An option of another command ("wse run --layer fc1 CFG") read as extra arguments: say which,
    // and only that (CLI11's own line before it listed the extras backwards: "1 --threads").
    std::string named;
    if (dynamic_cast<const CLI::ExtrasError*>(&e))
      for (const CLI::App* sub : app.get_subcommands())
        for (const std::string& extra : sub->remaining())
          if (extra.rfind("--", 0) == 0 && !sub->get_option_no_throw(extra.substr(0, extra.find('='))))
            named += "wse: error: " + extra + " is not an option of `wse " + sub->get_name() + "` (wse " + sub->get_name() + " --help)\n";
    if (named.empty()) {
      // The parser's words in wse's form, once ("config is required" then "Run with --help for
      // more information." had no "wse: error:" and two lines for one mistake).
      std::string help = "wse";
      for (const CLI::App* sub : app.get_subcommands()) help += " " + sub->get_name();
      std::fprintf(stderr, "wse: error: %s (%s --help)\n", parser_words(e.what()).c_str(), help.c_str());
    } else {
      std::fputs(named.c_str(), stderr);
    }
    return 2;
  }
  const std::string command = command_line(argc, argv);
  try {
    // Given, even empty (`--max-memory ""` was ignored without a word): parsed, and refused if no size.
    bool memory_given = false;
    for (CLI::App* sub : app.get_subcommands()) memory_given = memory_given || (sub->get_option_no_throw("--max-memory") && sub->count("--max-memory"));
    if (memory_given || !max_memory.empty()) wse::set_memory_limit(wse::parse_memory_size(max_memory));
    if (*run) {
      std::string level = logging;
      for (char& c : level) c = char(std::toupper(static_cast<unsigned char>(c)));
      wse::log_level() = level == "DEBUG" ? wse::LogLevel::Debug : level == "WARNING" ? wse::LogLevel::Warning : wse::LogLevel::Info;
      train_modes.command = command;
      return run_command(config, threads, out_dir, train_modes);
    }
    if (*baseline) return wse::run_baseline(wse::load_run_config(config), out_dir, baseline_overwrite, command);
    if (*finalize) {
      config = ckpt_in;  // errors name the checkpoint
      return wse::finalize_checkpoint_command(ckpt_in, ckpt_out);
    }
    if (*inspect) return wse::inspect_stream_file(inspect_file);
    if (*viz)
      return wse::viz_command(viz_dump, {"--out", viz_overwrite, false, command}, out_dir, viz_metric, viz_trace, viz_max_frames);
    if (*trace) {
      trace_opt.config = config, trace_opt.out = out_dir, trace_opt.threads = threads, trace_opt.command = command;
      return trace_command(trace_opt, trace_args);
    }
  } catch (const wse::OutputError& e) {
    // The user's path: the message names it and the OS's reason.
    clear_progress_line();
    std::fprintf(stderr, "wse: error: %s\n", e.what());
    return 2;
  } catch (const wse::UsageError& e) {
    // Every user error names the config it came from.
    std::string what = e.what();
    // (Named as a path of its own, set off by a space, a quote, a bracket or punctuation, not as
    // any text that contains it: a config g.yaml whose `machine: big.yaml` was not found lost its
    // prefix, "g.yaml" being in "big.yaml": a CLI audit, forty-sixth round.)
    bool named = false;
    for (size_t at = what.find(config); !config.empty() && at != std::string::npos && !named; at = what.find(config, at + 1)) {
      const size_t end = at + config.size();
      named = (at == 0 || std::strchr(" '\"(", what[at - 1])) && (end == what.size() || std::strchr(" '\"):.,;\n", what[end]));
    }
    if (!config.empty() && !named && what.rfind("--", 0) != 0) what = "config " + config + ": " + what;
    clear_progress_line();
    std::fprintf(stderr, "wse: error: %s\n", what.c_str());
    return 2;
  } catch (const std::filesystem::filesystem_error& e) {
    // A path the user gave that the OS refused (what() names the path and the reason).
    clear_progress_line();
    std::fprintf(stderr, "wse: error: %s\n", e.what());
    return 2;
  } catch (const std::bad_alloc&) {
    // Any command (inspect and finalize-checkpoint are not runs and have no estimate to exceed).
    clear_progress_line();
    std::fprintf(stderr, "wse: error: out of host memory: the command needed more than the host had free (a run's memory estimate "
                         "is a lower bound: docs/reliability.md); try a smaller mesh, model or input\n");
    return 1;
  } catch (const std::exception& e) {
    clear_progress_line();
    std::fprintf(stderr, "wse: internal error: %s\n", e.what());
    return 1;
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) { return with_stdout_written(command_main(argc, argv)); }
