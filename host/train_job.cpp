#include "host/train_job.hpp"

#include <signal.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <numeric>
#include <optional>
#include <nlohmann/json.hpp>

#include "core/log.hpp"
#include "core/shown.hpp"
#include "fabric/partition.hpp"
#include "host/batch_order.hpp"
#include "host/epoch_projection.hpp"
#include "host/training_data.hpp"
#include "host/config.hpp"
#include "host/interrupt.hpp"
#include "host/run_settings.hpp"
#include "host/progress.hpp"
#include "host/report.hpp"
#include "host/shell_words.hpp"
#include "host/thread_choice.hpp"
#include "io/memory_limit.hpp"
#include "io/output_dir.hpp"
#include "io/output_file.hpp"
#include "tools/viz/line_plot.hpp"
#include "wire/weight_stream.hpp"
#include "io/json_text.hpp"

namespace wse {

namespace {

namespace fs = std::filesystem;

// The run's plan, in every checkpoint's metadata, so that --resume can finish the run.
constexpr const char* kRunEndStep = "run_end_step";
// The step the run began at: its epochs (the data order, the epoch test passes, the epoch in the
// log) count from there. 0 for a fresh run; a training.resume_from run begins at its checkpoint's
// step, and a --resume run at the step the run it finishes began at.
constexpr const char* kRunStartStep = "run_start_step";
constexpr const char* kRunBatchSize = "run_batch_size";
constexpr const char* kRunTrainSamples = "run_train_samples";
constexpr const char* kRunSettings = "run_settings";  // host/run_settings.hpp

// Checkpoints go to training.checkpoint_dir when the config names one, else to DIR/checkpoints.
struct CheckpointDir {
  OutputDir* own = nullptr;  // training.checkpoint_dir
  OutputDir* out = nullptr;  // --out
  fs::path dir;

  fs::path save(Cluster& t, uint64_t step) {
    const std::string name = "step_" + std::to_string(step) + ".safetensors";
    if (dir.empty()) dir = own ? own->path() : out->subdir("checkpoints");
    const fs::path path = own ? own->entry(name) : out->entry_in("checkpoints", name);
    t.memoryx().write_checkpoint(path);  // atomically: to a temporary, then renamed
    if (log_info()) std::printf("  checkpoint %s\n", path.string().c_str());
    std::fflush(stdout);
    return path;
  }
};

// A decimal number from a checkpoint's metadata, or a UsageError naming the field.
uint64_t metadata_count(const SafetensorsFile& f, const char* key, const std::string& hint) {
  auto it = f.metadata().find(key);
  if (it == f.metadata().end()) throw UsageError(f.where() + ": has no '__metadata__." + std::string(key) + "'" + hint);
  const std::string& v = it->second;
  bool ok = !v.empty() && v.size() <= 19;
  for (char c : v) ok = ok && c >= '0' && c <= '9';
  if (!ok) throw UsageError(f.where() + ": field '__metadata__." + std::string(key) + "': '" + v + "' is not a count");
  return std::stoull(v);
}

// Tests only: WSE_TEST_STOP_AFTER_STEP=K stops this process (SIGSTOP) right after step K, so a
// test can send SIGINT or SIGTERM at a known step without racing the run (tests/interrupt_test.cpp).
uint64_t test_stop_after_step() {
  const char* v = std::getenv("WSE_TEST_STOP_AFTER_STEP");
  return v ? std::strtoull(v, nullptr, 10) : 0;
}
// The bar's word from within a step: wafer 0's cycle-level passes report their wafer cycle to it
// (the engine's progress hook, about every 256 stepped cycles) from the thread running that wafer, the
// main thread in train_step or a pool thread it waits for: one thread at a time, and none while
// the main thread prints.
struct StepProgress : KernelObserver {
  Progress* bar = nullptr;
  const char* phase = nullptr;  // "test pass", or null: a step
  RunHooks before_run(uint32_t wafer, size_t layer, bool backward, Wafer&) override {
    RunHooks hooks;
    if (wafer == 0 && bar) {
      const std::string what = Cluster::layer_name(layer) + (backward ? " bwd" : " fwd");
      hooks.progress = [this, what](Cycle now) { bar->busy(what, now, phase); };
    }
    return hooks;
  }
  void after_run(uint32_t, size_t, bool, Wafer&, const WaferRun&) override {}
};

// Tests only: WSE_TEST_STOP_IN_FINAL_TEST_PASS=1 stops it after the final test pass's first batch.
bool test_stop_in_final_test_pass() { return std::getenv("WSE_TEST_STOP_IN_FINAL_TEST_PASS") != nullptr; }
// Tests only: WSE_TEST_STOP_IN_REPORT=1 stops it once the run has ended, before its report is written.
bool test_stop_in_report() { return std::getenv("WSE_TEST_STOP_IN_REPORT") != nullptr; }

// Where the printed resume command writes: beside --out, named after it ("run/" and "." give no
// "run/_resumed" inside it or hidden "._resumed").
fs::path resumed_out(const fs::path& out_dir) {
  fs::path p = out_dir.lexically_normal();
  if (!p.has_filename()) p = p.parent_path();  // a trailing separator
  if (p.empty() || p.filename() == "." || p.filename() == "..") p = fs::absolute(p).lexically_normal();
  if (!p.has_filename()) p = p.parent_path();
  return p.string() + "_resumed";
}

// Selected is not sparse: a level that rounds to no weight, or from_zeros on a tensor without
// zeros, prunes nothing, and the parameter streams dense. The selected ones that pruned any.
uint64_t params_with_pruned_weights(const MemoryX& mx) {
  uint64_t n = 0;
  for (const SparsifiedParam& p : mx.sparsified()) n += p.pruned > 0;
  return n;
}

nlohmann::json sparsity_json(const MemoryX& mx) {
  nlohmann::json params = nlohmann::json::array();
  uint64_t numel = 0, pruned = 0;
  for (const SparsifiedParam& p : mx.sparsified()) {
    // from_zeros does not use a level: null there, never the config's, which it ignored.
    const bool zeros = p.plan.method == SparsityInit::FromZeros;
    params.push_back({{"name", p.plan.name},
                      {"level", zeros ? nlohmann::json(nullptr) : nlohmann::json(p.plan.level)},
                      {"achieved_level", p.numel ? double(p.pruned) / double(p.numel) : 0.0},
                      {"init_method", to_string(p.plan.method)},
                      {"seed", p.plan.seed},
                      {"numel", p.numel},
                      {"pruned", p.pruned},
                      {"kept", p.numel - p.pruned},
                      {"newly_pruned", p.newly_pruned},
                      {"regrown", p.regrown}});
    numel += p.numel, pruned += p.pruned;
  }
  return {{"enabled", mx.config().sparsity.enabled},
          {"params", params},
          {"params_with_pruned_weights", params_with_pruned_weights(mx)},
          {"sparse_numel", numel},
          {"pruned", pruned},
          {"level", numel ? double(pruned) / double(numel) : 0.0}};
}

// Steps of report.json's timeline with every span and the whole critical path.
constexpr uint64_t kFullTimelineSteps = 50;

// The cluster around the wafers: its figures, and what each layer costs off the wafer.
nlohmann::json cluster_json(const Cluster& c, const RunConfig& cfg) {
  const MachineSpec& m = cfg.machine;
  nlohmann::json layers = nlohmann::json::array();
  for (size_t l = 0; l + 1 < cfg.train.layers.size(); ++l)
    layers.push_back({{"name", Cluster::layer_name(l)},
                      {"forward_stream_bytes", c.stream_bytes(l, StreamPass::Forward)},
                      {"backward_stream_bytes", cfg.train.retain_last_layer && l + 2 == cfg.train.layers.size() ? 0 : c.stream_bytes(l, StreamPass::Backward)},
                      {"update_cycles", c.update_cycles(l)}});
  nlohmann::json j = {{"swarmx_levels", c.swarmx_levels()},
                      {"swarmx_fanout", m.swarmx_fanout},
                      {"swarmx_latency_cycles", m.swarmx_latency_cycles},
                      {"swarmx_link_bytes_per_cycle", m.swarmx_link_bytes_per_cycle},
                      {"memoryx_bytes_per_cycle", m.memoryx_bytes_per_cycle},
                      {"memoryx_update_bytes_per_cycle", m.memoryx_update_bytes_per_cycle},
                      {"memoryx_latency_cycles", m.memoryx_latency_cycles},
                      {"edge_buffer_bytes", m.edge_buffer_bytes},
                      {"input_bytes_per_cycle", m.input_bytes_per_cycle},
                      {"input_latency_cycles", m.input_latency_cycles},
                      {"user_node_latency_cycles", m.user_node_latency_cycles},
                      {"layers", layers}};
  const size_t last = cfg.train.layers.size() - 2;
  const uint64_t saved = c.stream_bytes(last, StreamPass::Backward);
  j["retain_last_layer"] = {{"enabled", cfg.train.retain_last_layer},
                            {"layer", Cluster::layer_name(last)},
                            {"stream_bytes_per_step", cfg.train.retain_last_layer ? saved : 0},
                            {"memoryx_link_cycles_per_step", cfg.train.retain_last_layer ? uint64_t(std::ceil(double(saved) / m.memoryx_bytes_per_cycle)) : 0}};
  return j;
}

// The workers wafer 0 ran each pass on, and what each choice measured (host microseconds per
// thousand simulated cycles, over all its runs): how the engine's choice followed this host.
nlohmann::json workers_by_pass(const WorkerTuner& t) {
  nlohmann::json j = nlohmann::json::object();
  const std::string one = "1", most = std::to_string(t.most());
  for (const auto& [kind, k] : t.kinds()) {
    nlohmann::json e;
    e["runs"] = {{one, k.runs[0]}, {most, k.runs[1]}};
    e["host_us_per_kcycle"] = nlohmann::json::object();
    for (size_t i = 0; i < 2; ++i)
      if (k.cycles[i]) e["host_us_per_kcycle"][i ? most : one] = std::round(1e10 * k.seconds[i] / double(k.cycles[i])) / 10;
    e["next_run_on"] = t.pick(kind);
    j[kind] = e;
  }
  return j;
}

nlohmann::json init_json(const InitStats& s, const InitSettings& cfg) {
  return {{"lazy_initialization", cfg.lazy},
          {"optimize_initialization", cfg.optimize},
          {"max_async_parallel_compute", cfg.max_parallel},
          {"tensors", s.tensors},
          {"ops_recorded", s.ops_recorded},
          {"ops_pruned", s.ops_pruned},
          {"ops_executed", s.ops_executed},
          {"store_bytes", s.store_bytes},
          {"peak_tensor_bytes", s.peak_bytes},
          {"max_in_flight", s.max_in_flight},
          {"seconds", s.record_seconds + s.materialize_seconds}};
}

// What --validate_only says about the sparsity block: every parameter MemoryX sparsified.
void print_sparsity_plan(const MemoryX& mx) {
  if (!mx.config().sparsity.enabled) {
    std::printf("  sparsity: none (dense run)\n");
    return;
  }
  std::printf("  sparsity: %zu of %zu parameters selected, %llu with weights pruned\n", mx.sparsified().size(), 2 * mx.layers(),
              (unsigned long long)params_with_pruned_weights(mx));
  for (const SparsifiedParam& s : mx.sparsified()) {
    const ParamSparsity& p = s.plan;
    const auto numel = (unsigned long long)s.numel, pruned = (unsigned long long)s.pruned;
    const std::string pattern = p.pattern.empty() ? "" : "  (pattern " + p.pattern + ")";
    if (p.method == SparsityInit::FromZeros)
      std::printf("    %-14s %10llu  from_zeros (its zero weights), seed %llu: %llu pruned, %llu kept%s\n", p.name.c_str(), numel,
                  (unsigned long long)p.seed, pruned, numel - pruned, pattern.c_str());
    else
      std::printf("    %-14s %10llu  level %s %-6s seed %llu: %llu pruned, %llu kept%s\n", p.name.c_str(), numel, level_text(p.level).c_str(),
                  to_string(p.method), (unsigned long long)p.seed, pruned, numel - pruned, pattern.c_str());
  }
}

}  // namespace

int run_training(const RunConfig& cfg_in, unsigned threads, const fs::path& out_dir, TrainModes modes) {
  RunConfig cfg = cfg_in;
  TrainConfig& tc = cfg.train;
  const std::string where = "config " + cfg.source.string();
  const auto t_start = std::chrono::steady_clock::now();

  // --resume: the checkpoint records the plan of the run it came from; this run finishes it.
  struct {
    bool on = false;
    uint64_t step = 0, end = 0, samples = 0;
    uint64_t start = 0;    // the step that run began at (0 when not recorded: an older version's, whose epochs counted from 0)
    RunSettings recorded;  // the checkpoint's run settings (none from an older version)
  } resume;
  // A config's resume_from is read the same way, up front, so that its errors name the field
  // (they came from MemoryX's set-up as "checkpoint X: file not found", no field named).
  if (modes.resume.empty() && !tc.resume_from.empty()) {
    try {
      SafetensorsFile{tc.resume_from};
    } catch (const UsageError& e) {
      throw UsageError(where + ": field 'training.resume_from': " + e.what());
    }
  }
  if (!modes.resume.empty()) {
    const SafetensorsFile ck(modes.resume);  // header checked in full
    const std::string hint =
        " (it was not written by a wse training run that records its plan); to start a new run from its weights, set "
        "training.resume_from in the config instead";
    resume.on = true;
    resume.step = metadata_count(ck, "step", hint);
    resume.end = metadata_count(ck, kRunEndStep, hint);
    resume.samples = metadata_count(ck, kRunTrainSamples, hint);
    const uint64_t batch = metadata_count(ck, kRunBatchSize, hint);
    if (resume.step >= resume.end)
      throw UsageError(ck.where() + ": is at step " + std::to_string(resume.step) + ", where its run ended: nothing to resume");
    if (ck.metadata().count(kRunStartStep)) {
      resume.start = metadata_count(ck, kRunStartStep, hint);
      if (resume.start > resume.step)
        throw UsageError(ck.where() + ": field '__metadata__." + kRunStartStep + "': " + std::to_string(resume.start) +
                         ", after the checkpoint's own step " + std::to_string(resume.step) + " (a damaged checkpoint)");
    }
    if (batch != tc.batch_size)
      throw ConfigError(where + ": field 'training.batch_size': " + std::to_string(tc.batch_size) + ", but the run " + ck.where() +
                        " came from had " + std::to_string(batch) + " (--resume finishes that run, with its config)");
    // The rest of what decides the run's numbers (host/run_settings.hpp): all the changes at once.
    if (auto it = ck.metadata().find(kRunSettings); it != ck.metadata().end()) {
      resume.recorded = parse_run_settings(it->second, ck.where() + ": field '__metadata__." + kRunSettings + "'");
      const std::vector<std::string> changes = run_settings_changes(resume.recorded, run_settings(tc, cfg.mesh));
      if (!changes.empty()) {
        std::string list;
        for (const std::string& c : changes) list += "\n  " + c;
        throw ConfigError(where + ": --resume finishes the run " + ck.where() + " came from, with its config, but this config changes:" + list +
                          "\n(to start a new run from its weights with these settings, set training.resume_from in the config instead)");
      }
    } else {
      std::printf("wse: note: %s does not record its run's settings (written before they were recorded): a changed lr, "
                  "shuffle, seed, precision, num_csx or sparsity is not checked\n", ck.where().c_str());
    }
    if (!tc.resume_from.empty() && tc.resume_from != modes.resume)
      std::printf("wse: --resume %s replaces training.resume_from %s\n", modes.resume.c_str(), tc.resume_from.c_str());
    tc.resume_from = modes.resume;
  }

  // Where the output goes, checked before any work. --validate_only writes nothing, but says what
  // the run would refuse: it gives training.checkpoint_dir the run's own checks (a file there, a
  // folder that cannot be made or written, another run's files), and takes away again what they
  // made; it said "valid" for a folder the run then refused until the forty-second round.
  std::optional<OutputDir> out, own_ckpt;
  bool ckpt_in_out = false;
  // A resumed run continues the run whose checkpoints are there; any other run needs it to itself.
  const bool same_run = !tc.checkpoint_dir.empty() && resume.on && path_inside(modes.resume.parent_path(), tc.checkpoint_dir) &&
                        path_inside(tc.checkpoint_dir, modes.resume.parent_path());
  // The two folders' options: the checkpoint folder continues a resumed run's, --out never does.
  auto dir_options = [&](const char* flag, bool continue_run) {
    return OutputDirOptions{flag, modes.overwrite, continue_run, modes.command, {{cfg.source, "the config this run reads"}}};
  };
  if (!tc.checkpoint_dir.empty()) {
    // training.checkpoint_dir naming the --out directory itself: the checkpoints are entries of
    // --out's own record (a second record of the same folder overwrote the first, and its
    // --overwrite then removed the checkpoint this run had just written).
    ckpt_in_out = path_inside(tc.checkpoint_dir, out_dir) && path_inside(out_dir, tc.checkpoint_dir);
    // Another run's folder is emptied by --overwrite: never the one the run starts from (as for --out).
    if (!ckpt_in_out && !modes.compile_only && modes.overwrite && !same_run && !tc.resume_from.empty() && path_inside(tc.resume_from, tc.checkpoint_dir) &&
        fs::exists(tc.checkpoint_dir / OutputDir::kMarker))
      throw UsageError("--overwrite " + tc.checkpoint_dir.string() + " (training.checkpoint_dir) would remove " + tc.resume_from.string() +
                       ", the checkpoint this run starts from; choose another training.checkpoint_dir, or --resume it to finish its run");
  }
  // The checkpoint folder's checks, its errors naming the config and the field (the run's named
  // neither, --validate_only's both).
  auto open_checkpoint_dir = [&](std::optional<OutputDir>& into) {
    try {
      into.emplace(tc.checkpoint_dir, dir_options("training.checkpoint_dir", same_run));
    } catch (const OutputError& e) {
      std::string m = e.what();
      const std::string flag = "training.checkpoint_dir ";
      if (m.rfind(flag, 0) == 0) m.erase(0, flag.size());
      throw OutputError(where + ": field 'training.checkpoint_dir': " + m);
    }
  };
  if (modes.validate_only && !tc.checkpoint_dir.empty()) {
    // Never claimed: what the check made goes with it. A checkpoint_dir that is --out is checked
    // as the run checks --out (a folder holding the user's files passed as "valid").
    std::optional<OutputDir> check;
    if (!ckpt_in_out) open_checkpoint_dir(check);
    else check.emplace(out_dir, dir_options("--out", false));
  }
  // Checked by --validate_only too: with a checkpoint_dir that is --out it said "valid" to a
  // config the run then refused here (a review, forty-fourth round).
  if (modes.overwrite && !tc.resume_from.empty() && path_inside(tc.resume_from, out_dir) && fs::exists(out_dir / OutputDir::kMarker))
    throw UsageError("--overwrite " + out_dir.string() + " would remove " + tc.resume_from.string() +
                     ", the checkpoint this run starts from; choose another --out");
  if (!modes.validate_only) {
    out.emplace(out_dir, dir_options("--out", false));
    // The same folder by another path that only resolves now --out exists (a link to it made
    // before): one folder, one record, as above (a second lock on it was refused as "in use by
    // another wse run": a review, forty-sixth round).
    std::error_code same_ec;
    if (!tc.checkpoint_dir.empty() && !ckpt_in_out && fs::equivalent(tc.checkpoint_dir, out_dir, same_ec)) ckpt_in_out = true;
    if (!modes.compile_only && !tc.checkpoint_dir.empty() && !ckpt_in_out) open_checkpoint_dir(own_ckpt);
  }
  // The data's headers and lengths too, before MemoryX and the wafers are built (--validate_only
  // then reads the samples too, after the layers have been mapped).
  if (!modes.compile_only) {
    inspect_train_set(tc, where);
    if (tc.eval_samples) inspect_data_set(tc, where, test_set(tc));
  }

  ClusterConfig cc = cluster_config(cfg);
  cc.adaptive_workers = modes.adaptive_workers;
  Cluster trainer(cc, threads);  // compiles every layer: throws if one does not map
  const uint64_t init_rss = peak_rss_bytes();  // MemoryX initialized, wafers built, nothing streamed yet
  // Threads actually used: wafers side by side on the actor runtime's threads, each with its own mesh workers.
  const unsigned wafer_workers = trainer.wafer_workers();
  const unsigned workers = trainer.workers();
  std::printf("wse: fc_train");
  for (size_t i = 0; i < tc.layers.size(); ++i) std::printf("%s%u", i ? " -> " : " ", tc.layers[i]);
  std::printf(" on %u wafer(s) of %ux%u PEs (%s), global batch %u, %s weights, %s, %u thread(s)%s\n", tc.num_csx,
              trainer.grid_cols(), trainer.grid_rows(), cfg.machine.name.c_str(), tc.batch_size,
              tc.memoryx.encoding == StreamEncoding::Sparse ? "sparse" : "dense", tc.memoryx.optimizer.kind.c_str(), workers,
              cc.adaptive_workers && wafer_workers > 1 ? " (each pass on 1 or all of a wafer's workers, as measured faster)" : "");
  // A test set smaller than a batch scores nothing (whole batches only): said, not left for a
  // user to find as "test_samples: 0" in the report.
  if (tc.eval_samples && tc.eval_samples < tc.batch_size)
    std::printf("  note: data.eval_samples (%u) is less than one batch (%u): no test pass runs (the test set is scored in whole "
                "batches)\n", unsigned(tc.eval_samples), unsigned(tc.batch_size));
  // A sparse wavelet is a 16-bit value and its 16-bit position: in fp32 precision the weights
  // still cross the fabric as fp16. Said, not left for a user to find in the losses.
  if (tc.memoryx.encoding == StreamEncoding::Sparse && !tc.mixed)
    std::printf("  note: precision fp32 with sparse weight streams: each weight crosses the fabric as fp16 (a sparse wavelet holds a "
                "16-bit value and its 16-bit position); MemoryX keeps and updates fp32 weights. weights.encoding: dense streams "
                "fp32 weights, zeros included\n");
  if (log_info()) {
    const InitStats& is = trainer.memoryx().init_stats();
    std::printf("  init: %s%s, %llu tensors, %llu ops recorded, %llu of them pruned (never run), %.2f s, %.1f MiB in MemoryX, peak host memory %.1f MiB\n",
                tc.memoryx.init.lazy ? "lazy" : "eager",
                tc.memoryx.init.lazy ? (" x" + std::to_string(tc.memoryx.init.max_parallel)).c_str() : "",
                (unsigned long long)is.tensors, (unsigned long long)is.ops_recorded, (unsigned long long)is.ops_pruned,
                is.record_seconds + is.materialize_seconds, double(is.store_bytes) / (1 << 20), double(init_rss) / (1 << 20));
  }
  // A weight matrix pruned whole (a level that rounds to every weight, or from_zeros on zero
  // weights) keeps no path through its layer: the layers before it get no gradient and stay as
  // they are, while the losses still move with the biases after it. Said, not left to be found.
  for (const SparsifiedParam& sp : trainer.memoryx().sparsified())
    if (sp.numel > 0 && sp.pruned == sp.numel)
      std::printf("  warning: sparsity prunes every weight of %s (%llu of %llu): nothing passes through its layer, and the layers "
                  "before it get no gradient (lower sparsity for it, or leave it out with sparsity.param_name_patterns)\n",
                  sp.plan.name.c_str(), (unsigned long long)sp.pruned, (unsigned long long)sp.numel);
  // The step a run of the training set `train` ends at, after checking what --resume holds
  // against it and the test set (the run, and --validate_only, refuse alike).
  auto run_end = [&](const Dataset& train, const Dataset& test) {
    const uint32_t steps_per_epoch = BatchOrder(train.count, tc.batch_size, tc.shuffle, tc.memoryx.seed).steps_per_epoch();
    const uint64_t first = trainer.memoryx().step();
    const uint64_t planned = std::min<uint64_t>(uint64_t(steps_per_epoch) * tc.epochs, tc.max_steps ? tc.max_steps : UINT64_MAX);
    uint64_t end = first + planned;
    if (resume.on) {
      if (resume.samples != train.count)
        throw ConfigError(where + ": the run " + modes.resume.string() + " came from trained on " + std::to_string(resume.samples) +
                          " samples, this config loads " + std::to_string(train.count) + " (field 'data.train_samples'; --resume finishes that run, with its config)");
      // What is left of that run cannot be longer than a whole run of this config: a plan beyond
      // it is a checkpoint of another config, or a damaged one (it would train, and checkpoint,
      // practically forever).
      if (resume.end - first > planned)
        throw UsageError("checkpoint " + modes.resume.string() + ": field '__metadata__." + kRunEndStep + "': " + std::to_string(resume.end) +
                         " leaves " + std::to_string(resume.end - first) + " steps after its step " + std::to_string(first) +
                         ", more than a whole run of " + where + " (" + std::to_string(planned) +
                         " steps: training.epochs x steps per epoch, at most training.max_steps); --resume finishes the run the checkpoint came from, with its config");
      end = resume.end;
      // The data by content: another dataset of the same size (or a test set of another size)
      // finished "the run" with other numbers, exit 0 (an interrupt audit, forty-fourth round).
      std::string list;
      for (const auto& [key, now] : data_settings(train, test))
        if (auto it = resume.recorded.find(key); it != resume.recorded.end() && it->second != now)  // (older checkpoints: not recorded)
          list += "\n  field '" + key + "': " + now + ", but the run had " + shown(it->second);
      if (!list.empty()) {
        throw ConfigError(where + ": --resume finishes the run " + modes.resume.string() + " came from, on its data, but this config's data differ:" +
                          list + "\n(data.dir, data.train_samples and data.eval_samples; to start a new run from its weights on this data, set "
                          "training.resume_from in the config instead)");
      }
    }
    // Every checkpoint records its step, and one is written at the run's end: a run that would
    // pass the largest step a checkpoint may record (kMaxCheckpointStep) wrote checkpoints that
    // --resume and resume_from then refused (a review, forty-fifth round). Refused before step 1.
    if (end > kMaxCheckpointStep) {
      const std::string limit = "the largest step a run may reach (" + std::to_string(kMaxCheckpointStep) + ", 2^47 - 1)";
      if (resume.on)
        throw UsageError("checkpoint " + modes.resume.string() + ": field '__metadata__." + kRunEndStep + "': " + std::to_string(end) +
                         " is beyond " + limit);
      throw ConfigError(where + ": the run would end at step " + std::to_string(end) + " (from step " + std::to_string(first) +
                        ", the step of field 'training.resume_from''s checkpoint, " + std::to_string(planned) + " steps), beyond " + limit +
                        ": lower training.max_steps or training.epochs");
    }
    return end;
  };
  if (modes.validate_only) {
    // What a run would load first (a missing or damaged dataset was found only by the run).
    const Dataset train = load_train_set(tc, where);
    run_end(train, tc.eval_samples ? load_data_set(tc, where, test_set(tc)) : Dataset{});
    print_sparsity_plan(trainer.memoryx());
    std::printf("  valid: every layer maps and the data loads; peak SRAM per PE %u of %u bytes\n",
                trainer.layout().sram_peak(cfg.machine.sram_bytes_per_pe), cfg.machine.sram_bytes_per_pe);
    return 0;
  }
  if (modes.compile_only) {
    const auto path = out->entry("mesh_program.json");
    // The machine it was compiled for: a wse2 and a wse3 program differed only in capacity_bytes.
    nlohmann::json prog = trainer.mesh_program();
    prog["machine"] = cfg.machine.name;
    write_file_atomic(path, json_text(prog, 2) + "\n", "mesh program");
    std::printf("  mesh program %s\n", path.string().c_str());
    // The first step's weight streams as MemoryX would send them (wse inspect reads them).
    const auto dir = out->subdir("streams");
    size_t files = 0;
    for (size_t l = 0; l < trainer.memoryx().layers(); ++l)
      for (StreamPass pass : {StreamPass::Forward, StreamPass::Backward}) {
        const auto streams = trainer.streams(l, pass);
        for (size_t c = 0; c < streams.size(); ++c) {
          char name[64];
          std::snprintf(name, sizeof name, "fc%zu_%s_col%02zu.wsws", l + 1, pass == StreamPass::Forward ? "fwd" : "bwd", c);
          write_file_atomic(out->entry_in("streams", name), std::string_view(reinterpret_cast<const char*>(streams[c]->data()), streams[c]->size()),
                            "weight stream");
          ++files;
        }
      }
    std::printf("  %zu weight streams in %s\n", files, dir.string().c_str());
    return 0;
  }

  Dataset train = load_train_set(tc, where);
  Dataset test = tc.eval_samples ? load_data_set(tc, where, test_set(tc)) : Dataset{};
  BatchOrder order(train.count, tc.batch_size, tc.shuffle, tc.memoryx.seed);
  const uint32_t steps_per_epoch = order.steps_per_epoch();
  // Steps take whole batches: what is left over each epoch is not trained on. Said, as a test
  // set's remainder is.
  if (const uint32_t left = train.count % tc.batch_size)
    std::printf("  note: data.train_samples (%u) is not a multiple of batch_size (%u): each epoch trains on %u samples in %u whole "
                "batches; the last %u of its order are left out (%s)\n",
                unsigned(train.count), unsigned(tc.batch_size), unsigned(train.count - left), steps_per_epoch, left,
                tc.shuffle ? "others each epoch, as data.shuffle orders them" : "the same ones every epoch");
  const uint64_t first = trainer.memoryx().step();
  const uint64_t end = run_end(train, test);
  // Where the run's epochs count from (kRunStartStep): its own first step, or the first step of
  // the run --resume finishes. (They counted from step 0 until the forty-sixth round: a
  // resume_from run from step 1 of a 2-step epoch ran its "epoch" test passes after its 1st and
  // 3rd steps, and with data.shuffle its epochs saw 62 of 80 samples each, 18 of them twice.)
  const uint64_t run_start = resume.on ? resume.start : first;
  trainer.memoryx().set_run_metadata({{kRunEndStep, std::to_string(end)},
                                      {kRunStartStep, std::to_string(run_start)},
                                      {kRunBatchSize, std::to_string(tc.batch_size)},
                                      {kRunTrainSamples, std::to_string(train.count)},
                                      {kRunSettings, run_settings_text(run_settings(tc, cfg.mesh, train, test))}});
  CheckpointDir ckpt{own_ckpt ? &*own_ckpt : ckpt_in_out ? &*out : nullptr, &*out, {}};
  if (resume.on)
    std::printf("  resuming the run of %s: steps %llu to %llu\n", modes.resume.c_str(), (unsigned long long)first + 1,
                (unsigned long long)end);

  // SIGINT / SIGTERM / SIGHUP from the first step to the end of the final test pass: finish the
  // step, checkpoint it, say how to resume (host/interrupt.hpp).
  std::optional<InterruptGuard> guard;
  guard.emplace();
  if (resume.on) guard->set_last_checkpoint(modes.resume.string(), InterruptGuard::Written::ResumedFrom);  // until this run writes one
  // Test accuracy over whole batches of the test set (functional unless every step is detailed).
  // `stoppable`: a signal ends the pass at the batch in progress, and it returns false (the final
  // pass; an epoch's pass belongs to the step in progress and finishes).
  StepProgress step_progress;
  auto evaluate = [&](uint32_t& scored, uint32_t& correct, double& loss, bool stoppable) {
    step_progress.phase = "test pass";
    struct Back {
      StepProgress& p;
      ~Back() { p.phase = nullptr; }
    } back{step_progress};
    scored = 0, correct = 0, loss = 0;
    for (uint32_t b = 0; b + tc.batch_size <= test.count; b += tc.batch_size) {
      if (stoppable && guard->received()) return false;
      StepResult r = trainer.eval_batch(&test.images[size_t(b) * test.features], &test.labels[b]);
      correct += r.correct, scored += tc.batch_size, loss += r.loss * tc.batch_size;
      if (stoppable && b == 0 && test_stop_in_final_test_pass()) ::raise(SIGSTOP);
    }
    if (scored) loss /= scored;
    return true;
  };
  // Three batch buffers: the step's, the next one's (the cluster may start on it), and one free.
  std::vector<std::vector<float>> bx(3, std::vector<float>(size_t(tc.batch_size) * train.features));
  std::vector<std::vector<uint8_t>> by(3, std::vector<uint8_t>(tc.batch_size));
  nlohmann::json epoch_accuracy = nlohmann::json::array();
  std::vector<uint64_t> detailed_steps, detailed_cycles;
  StepSeconds step_seconds;  // the steps' host time, cycle-level and functional apart (the epoch's projection)
  Progress progress(end - first, tc.batch_size, first);
  if (modes.tty) {  // within a long step, the bar says which pass the wafers are on
    step_progress.bar = &progress;
    trainer.set_observer(&step_progress);
  }
  nlohmann::json losses = nlohmann::json::array();
  // A diverged run's losses (NaN or infinite; null in the report): said at the end, with the step
  // it began at (a run at lr 100 reported its test accuracy on NaN logits, exit 0, nothing said).
  uint64_t non_finite_losses = 0, first_non_finite = 0;
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t wafer_cycles = 0;
  double window_loss = 0;
  uint32_t window = 0;
  double first_loss_seconds = 0;
  const uint64_t stop_after = test_stop_after_step();
  int stopped_by = 0;
  fs::path last_checkpoint;
  {
    if (first < end) order.gather(train, first - run_start, bx[first % 3].data(), by[first % 3].data());
    for (uint64_t s = first; s < end; ++s) {
      // The next step's batch too, so the cluster can start on it before this step ends; but not
      // across an epoch's test pass, which must see this step's weights (a test pass waits for
      // every step handed over: it had scored the next epoch's first step, and the step after it
      // had counted 0 cycles).
      const bool more = s + 1 < end;
      // (A test set smaller than a batch scores nothing: no pass, and no break in the pipeline.)
      const bool tests_after = tc.epochs > 1 && test.count >= tc.batch_size && (s + 1 - run_start) % steps_per_epoch == 0;
      const bool hand_over = more && !tests_after;
      if (more) order.gather(train, s + 1 - run_start, bx[(s + 1) % 3].data(), by[(s + 1) % 3].data());
      const auto step_began = std::chrono::steady_clock::now();
      StepResult r = trainer.train_step(bx[s % 3].data(), by[s % 3].data(), hand_over ? bx[(s + 1) % 3].data() : nullptr,
                                        hand_over ? by[(s + 1) % 3].data() : nullptr);
      (r.detailed ? step_seconds.detailed : step_seconds.functional) +=
          std::chrono::duration<double>(std::chrono::steady_clock::now() - step_began).count();
      wafer_cycles += r.cycles;
      if (r.detailed) detailed_steps.push_back(s), detailed_cycles.push_back(r.cycles);
      losses.push_back(r.loss);
      if (!std::isfinite(r.loss) && !non_finite_losses++) first_non_finite = s + 1;
      const uint64_t epoch = (s - run_start) / steps_per_epoch + 1;  // the run's, from 1
      progress.step(s + 1 - first, r.loss, epoch);
      if (s == first) first_loss_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
      window_loss += r.loss, ++window;
      const uint64_t done = s + 1;
      if (log_info() && (done % tc.log_every == 0 || done == end)) {
        const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        progress.clear();
        // A functional step's cycles are projected from the last cycle-level run of each pass; with
        // no such run yet there is nothing to project from.
        const std::string cycles = r.detailed             ? std::to_string(r.cycles) + " cycles/step"
                                   : detailed_steps.empty() ? (tc.detail.mode == DetailPolicy::Mode::None ? "functional (training.detail: none)"
                                                                                                           : "functional, no cycle-level step yet")
                                                            : std::to_string(r.cycles) + " cycles/step projected";
        std::printf("  step %5llu  epoch %llu  loss %s  (%s images/s, ETA %s, %s)\n", (unsigned long long)done,
                    (unsigned long long)epoch, loss_text(window_loss / window).c_str(),
                    rate_text(double(done - first) * tc.batch_size / secs).c_str(), progress.eta(done - first).c_str(), cycles.c_str());
        std::fflush(stdout);
        window_loss = 0, window = 0;
      }
      // An accuracy curve over the epochs when there are several.
      if (tests_after) {
        uint32_t sc = 0, co = 0;
        double lo = 0;
        evaluate(sc, co, lo, false);
        if (sc) {
          epoch_accuracy.push_back({{"epoch", epoch},
                                    {"step", done},
                                    {"test_accuracy", double(co) / sc},
                                    {"test_loss", lo},
                                    {"test_samples", sc},
                                    {"correct", co}});
          progress.clear();
          std::printf("  epoch %llu: test accuracy %.2f%% on %u samples (loss %s)\n", (unsigned long long)epoch,
                      100.0 * co / sc, sc, loss_text(lo).c_str());
          std::fflush(stdout);
        }
      }
      if (done == stop_after) ::raise(SIGSTOP);
      const bool periodic = tc.checkpoint_every && done % tc.checkpoint_every == 0;
      if (periodic || done == end || guard->received()) {
        last_checkpoint = ckpt.save(trainer, done);
        guard->set_last_checkpoint(last_checkpoint.string(), done == end ? InterruptGuard::Written::LastStep : InterruptGuard::Written::ByThisRun);
      }
      if (guard->received()) {
        stopped_by = guard->received();
        break;
      }
    }
  }
  const uint64_t steps_done = trainer.memoryx().step() - first;
  const double train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();

  progress.clear();
  // Test accuracy, on the wafer (forward only), over whole batches; not after an interruption.
  uint32_t scored = 0, correct = 0;
  double test_loss = 0;
  bool test_pass_stopped = false;
  // Every step ran (a signal during the last step or the final test pass): nothing to resume.
  const bool every_step = first + steps_done == end;
  const nlohmann::json* last = epoch_accuracy.empty() ? nullptr : &epoch_accuracy.back();
  if (last && (*last)["step"].get<uint64_t>() == first + steps_done && (!stopped_by || every_step)) {
    // The last epoch's evaluation is the final one (it ran as part of the last step).
    scored = (*last)["test_samples"].get<uint32_t>();
    correct = (*last)["correct"].get<uint32_t>();
    test_loss = (*last)["test_loss"].get<double>();
  } else if (!stopped_by && (guard->entering_final_test_pass(), !evaluate(scored, correct, test_loss, true))) {
    stopped_by = guard->received(), test_pass_stopped = true;
    scored = correct = 0, test_loss = 0;
  }
  guard->entering_report();  // a signal now waits for report.json (a second still stops at once)
  if (test_stop_in_report()) ::raise(SIGSTOP);
  // A signal that came when nothing was left to do (the last step's test pass had run, or there
  // is no whole test batch): the run is complete, and ends as one.
  const bool pass_left_out = test.count >= tc.batch_size && !scored;
  if (stopped_by && every_step && !pass_left_out) {
    std::printf("wse: %s arrived during the last step, which ended the run: nothing was left to stop\n", InterruptGuard::name(stopped_by));
    stopped_by = 0;
  }
  const double accuracy = scored ? double(correct) / scored : 0.0;
  std::printf("  first loss after %.3g s; peak host memory %.1f MiB\n", first_loss_seconds, double(peak_rss_bytes()) / (1 << 20));
  if (non_finite_losses)
    std::printf("  warning: the loss was not finite (NaN or infinite) in %llu of %llu step(s), first at step %llu: the run diverged "
                "(a learning rate too high, or beyond fp16's range in mixed precision); the report writes those losses as null, and "
                "the test figures are of the diverged weights\n",
                (unsigned long long)non_finite_losses, (unsigned long long)steps_done, (unsigned long long)first_non_finite);
  if (const uint64_t skipped = trainer.skipped_updates())
    std::printf("  note: MemoryX skipped %llu layer update(s) whose summed gradient was not finite (report: skipped_updates)\n",
                (unsigned long long)skipped);
  if (scored) std::printf("  test accuracy %.2f%% on %u samples (loss %s)\n", 100 * accuracy, scored, loss_text(test_loss).c_str());

  nlohmann::json j;
  j["config"] = cfg.source.string();
  j["kernel"] = cfg.kernel;
  j["machine"] = cfg.machine.name;
  j["mesh"] = {{"width", trainer.grid_cols()}, {"height", trainer.grid_rows()}};
  j["threads"] = workers;
  j["threads_detail"] = {{"wafers_at_once", trainer.runtime_threads()}, {"workers_per_wafer", wafer_workers}};
  if (const WorkerTuner* t = trainer.worker_tuner(); t && t->most() > 1) j["threads_detail"]["workers_by_pass"] = workers_by_pass(*t);
  if (const std::vector<double> waiting = trainer.waiting(); !waiting.empty()) {
    j["threads_detail"]["waiting"] = waiting_json(waiting);
    // What `waiting` is a fraction of: the runs on more than one worker (with the default's
    // per-pass choice, some passes run on one and are not in it), every wafer's.
    j["threads_detail"]["multi_worker_seconds"] = trainer.multi_worker_seconds();
  }
  if (!modes.threads_choice.is_null()) {
    j["threads_choice"] = modes.threads_choice;
    note_capped_threads(j["threads_choice"], workers);
  }
  j["num_csx"] = tc.num_csx;
  j["batch_size"] = tc.batch_size;
  j["first_step"] = first;
  j["steps"] = steps_done;
  j["end_step"] = end;
  // Layer updates MemoryX skipped because a summed gradient was not finite (mixed precision's
  // overflow; docs/fc-mapping.md): 0 in a healthy run.
  j["skipped_updates"] = trainer.skipped_updates();
  j["first_non_finite_loss_step"] = non_finite_losses ? nlohmann::json(first_non_finite) : nlohmann::json(nullptr);
  if (resume.on) j["resumed_from"] = modes.resume.string();
  j["encoding"] = tc.memoryx.encoding == StreamEncoding::Sparse ? "sparse" : "dense";
  j["weights_on_the_wire"] = encoding_name(tc.memoryx.encoding);  // "sparse fp16+index" in fp32 precision too
  j["sparsity"] = sparsity_json(trainer.memoryx());
  j["init"] = init_json(trainer.memoryx().init_stats(), tc.memoryx.init);
  j["init"]["peak_rss_bytes"] = init_rss;
  j["time_to_first_loss_seconds"] = first_loss_seconds;
  j["peak_rss_bytes"] = peak_rss_bytes();
  // Measured (cycle-level steps) apart from projected (functional steps, their passes timed as
  // the last cycle-level run of each pass): training.detail.
  // With no cycle-level step (training.detail: none) the steps' cycles are the cluster's actors
  // around passes that took none: not wafer time, and not reported as such.
  const bool wafer_time_known = !detailed_steps.empty();
  j["wafer_cycles"] = wafer_time_known ? nlohmann::json(wafer_cycles) : nlohmann::json(nullptr);
  {
    nlohmann::json d;
    d["policy"] = tc.detail.mode == DetailPolicy::Mode::All    ? nlohmann::json("all")
                  : tc.detail.mode == DetailPolicy::Mode::None ? nlohmann::json("none")
                                                               : nlohmann::json({{"every", tc.detail.every}, {"first", tc.detail.first}});
    d["detailed_steps"] = detailed_steps.size();
    d["functional_steps"] = steps_done - detailed_steps.size();
    nlohmann::json list = nlohmann::json::array();
    for (size_t i = 0; i < detailed_steps.size() && i < 1000; ++i) list.push_back(detailed_steps[i] + 1);
    d["detailed_step_numbers"] = list;  // counted from 1, at most the first 1000
    // The same keys whatever the policy (with training.detail: none `projected` was a string and
    // `measured` missing): null where no step ran cycle by cycle, and `how` says why.
    if (!detailed_cycles.empty()) {
      uint64_t sum = 0, lo = UINT64_MAX, hi = 0;
      for (uint64_t c : detailed_cycles) sum += c, lo = std::min(lo, c), hi = std::max(hi, c);
      d["measured"] = {{"cycles_per_step_mean", double(sum) / double(detailed_cycles.size())},
                       {"cycles_per_step_min", lo},
                       {"cycles_per_step_max", hi},
                       {"spread", hi - lo}};
    } else {
      d["measured"] = {{"cycles_per_step_mean", nullptr}, {"cycles_per_step_min", nullptr}, {"cycles_per_step_max", nullptr}, {"spread", nullptr}};
    }
    if (detailed_steps.empty())
      d["projected"] = {{"total_cycles", nullptr},
                        {"total_seconds", nullptr},
                        {"how", "nothing: no step ran cycle by cycle, so no wafer time is known (training.detail: none)"}};
    else
      d["projected"] = {{"total_cycles", wafer_cycles},
                      {"total_seconds", double(wafer_cycles) / cfg.machine.clock_hz},
                      {"how", "every step on the cluster's clock; functional steps' wafer passes take the cycles of their last cycle-level run"}};
    j["detail"] = d;
  }
  // The mean, not rounded to a whole cycle (as detail.measured.cycles_per_step_mean).
  j["wafer_cycles_per_step"] = wafer_time_known ? nlohmann::json(double(std::accumulate(detailed_cycles.begin(), detailed_cycles.end(), uint64_t(0))) /
                                                                  double(detailed_cycles.size()))
                                                 : nlohmann::json(nullptr);
  j["test_accuracy_per_epoch"] = epoch_accuracy;
  nlohmann::json layers = nlohmann::json::array();
  for (size_t l = 0; l + 1 < tc.layers.size(); ++l)
    layers.push_back({{"name", "fc" + std::to_string(l + 1)},
                      {"in", tc.layers[l]},
                      {"out", tc.layers[l + 1]},
                      {"forward", trainer.forward_stats()[l].to_json()},
                      {"backward", trainer.backward_stats()[l].to_json()}});
  j["layers"] = layers;
  j["input"] = trainer.input_stats().to_json();
  j["cluster"] = cluster_json(trainer, cfg);
  // Per step: each actor's spans and the critical path (the step's cycles, segment by segment).
  // The first 50 steps in full; after them, each step's cycles and where they went.
  nlohmann::json timeline = nlohmann::json::array();
  for (uint64_t st = first; st < first + steps_done; ++st) {
    nlohmann::json t = trainer.step_timeline(st);
    if (st >= first + kFullTimelineSteps) t.erase("spans"), t.erase("critical_path");
    timeline.push_back(std::move(t));
  }
  // The step cycles retaining the output layer saves are not in this run: its backward pass no
  // longer waits for its stream, and the next stream leaves MemoryX earlier too (one stream
  // ahead); a run without it measures them (an estimate from this run's spans alone, the round
  // trip less the output layer's forward pass, said 2,999 where the runs differed by 3,400).
  j["timeline"] = timeline;
  j["loss_per_step"] = losses;
  j["checkpoint"] = last_checkpoint.string();
  // The curves as pictures: loss per step (and its moving mean), test accuracy per epoch.
  if (steps_done > 1) {
    // A step whose loss is not finite (a diverged run) is a gap in both curves, the axis still
    // runs over every step, and the legend counts them: the picture had stopped at the last finite
    // step, as if the run had. The mean is over the window's finite losses.
    viz::PlotSeries raw{"loss", {}, {}, {170, 200, 235}}, mean{"mean of 50", {}, {}, {20, 80, 160}};
    double window_sum = 0;
    size_t window_finite = 0, not_finite = 0;
    auto finite_at = [&](size_t i) { const double v = losses[i].get<double>(); return std::isfinite(v) ? v : NAN; };
    for (size_t i = 0; i < losses.size(); ++i) {
      const double v = finite_at(i);
      raw.x.push_back(double(first + i + 1)), raw.y.push_back(v);
      if (std::isfinite(v)) window_sum += v, ++window_finite;
      else ++not_finite;
      if (i >= 50 && std::isfinite(finite_at(i - 50))) window_sum -= finite_at(i - 50), --window_finite;
      mean.x.push_back(double(first + i + 1)), mean.y.push_back(std::isfinite(v) && window_finite ? window_sum / double(window_finite) : NAN);
    }
    if (not_finite) raw.name += " (" + std::to_string(not_finite) + " of " + std::to_string(losses.size()) + " steps not finite: gaps)";
    viz::LinePlot plot{"training loss, " + cfg.source.filename().string(), "step", "loss", {raw, mean}};
    plot.x_whole = true;
    viz::write_line_plot(out->entry("loss.png"), plot);
    j["plots"]["loss"] = "loss.png";
    if (epoch_accuracy.size() > 1) {
      viz::PlotSeries acc{"test accuracy", {}, {}, {200, 60, 40}, true};
      for (const auto& e : epoch_accuracy) acc.x.push_back(e["epoch"].get<double>()), acc.y.push_back(e["test_accuracy"].get<double>());
      viz::LinePlot plot{"test accuracy per epoch, " + cfg.source.filename().string(), "epoch", "accuracy", {acc}};
      plot.x_whole = true;
      viz::write_line_plot(out->entry("accuracy.png"), plot);
      j["plots"]["accuracy"] = "accuracy.png";
    }
  }
  std::string resume_command;
  if (stopped_by && !every_step) {
    // Pasted into a shell as printed: a path with a space (or a quote) is quoted.
    resume_command = "wse run " + shell_word(cfg.source.string()) + " --resume " + shell_word(last_checkpoint.string()) + " --out " +
                     shell_word(resumed_out(out_dir).string());
    j["interrupted"] = {{"signal", InterruptGuard::name(stopped_by)}, {"after_step", first + steps_done}, {"resume", resume_command}};
  } else if (stopped_by) {
    j["interrupted"] = {{"signal", InterruptGuard::name(stopped_by)},
                        {"after_step", first + steps_done},
                        {"resume", nullptr},
                        {"final_test_pass", test_pass_stopped ? "stopped before its end: not scored" : "not run"}};
  } else {
    // No test pass (no whole batch to score): nothing measured, so null, not a 0% that reads as one.
    j["test_accuracy"] = scored ? nlohmann::json(accuracy) : nlohmann::json(nullptr);
    j["test_samples"] = scored;
    j["test_loss"] = scored ? nlohmann::json(test_loss) : nlohmann::json(nullptr);
  }
  // Measured by the cycle-level steps; with none (training.detail: none) the PEs held only their
  // variables, and 136 bytes read as the model's SRAM need: null then, as the wafer's cycles are
  // (the plan's peak is `--validate_only`'s and mesh_program.json's).
  j["sram_high_water_bytes"] = wafer_time_known ? nlohmann::json(trainer.sram_high_water()) : nlohmann::json(nullptr);
  j["host_seconds"] = train_seconds;
  {
    // The wafers' cycle-level runs as the Cerebras simulator counts them: tiles x cycles / the
    // runs' wall seconds (every wafer's cycles; wafers running side by side, their wall time once).
    const double tiles = double(cfg.mesh.width) * double(cfg.mesh.height), secs = trainer.engine_seconds();
    j["engine_cycles"] = trainer.engine_cycles();  // what the figure is over, in the report (a test checks the product)
    j["engine_seconds"] = secs;
    // No cycle-level run (training.detail: none): nothing measured, null (it said 0.0, a speed).
    j["tile_cycles_per_second"] =
        secs > 0 && trainer.engine_cycles() > 0 ? nlohmann::json(tiles * double(trainer.engine_cycles()) / secs) : nlohmann::json(nullptr);
  }
  j["host_seconds_per_step"] = steps_done ? train_seconds / double(steps_done) : 0.0;
  j["steps_per_epoch"] = steps_per_epoch;
  const auto path = out->entry("report.json");
  write_file_atomic(path, json_text(j, 2) + "\n", "report");
  if (stopped_by && every_step) {
    std::printf("wse: stopped by %s %s; every step ran (checkpoint %s), and the report (%s) has no test accuracy\n",
                InterruptGuard::name(stopped_by), test_pass_stopped ? "during the final test pass" : "after the last step, before the final test pass",
                last_checkpoint.c_str(), path.c_str());
    std::fflush(stdout);
    return 128 + stopped_by;
  }
  if (stopped_by) {
    std::printf("wse: stopped by %s after step %llu of %llu; checkpoint %s, report %s\n", InterruptGuard::name(stopped_by),
                (unsigned long long)(first + steps_done), (unsigned long long)end, last_checkpoint.c_str(), path.c_str());
    std::printf("wse: to finish this run: %s\n", resume_command.c_str());
    std::fflush(stdout);
    return 128 + stopped_by;
  }
  std::printf("  %.3g s per step on the host, %s; report %s\n", j["host_seconds_per_step"].get<double>(),
              epoch_projection(step_seconds, detailed_steps.size(), steps_done - detailed_steps.size(), tc.detail, steps_per_epoch).c_str(),
              path.string().c_str());
  return 0;
}

}  // namespace wse
