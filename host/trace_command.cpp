#include "host/trace_command.hpp"

#include "host/thread_choice.hpp"

#include <algorithm>
#include <chrono>
#include <fstream>
#include <sstream>

#include "host/training_data.hpp"
#include "host/config.hpp"
#include "host/job.hpp"
#include "fabric/partition.hpp"
#include "host/memory_budget.hpp"
#include "host/cluster_trace.hpp"
#include "host/report.hpp"
#include "io/memory_limit.hpp"
#include "io/output_dir.hpp"
#include "io/output_file.hpp"
#include "tools/json_trace_writer.hpp"
#include "tools/layer_trace.hpp"
#include "tools/pftrace_writer.hpp"
#include "io/json_text.hpp"

namespace wse {

TileRect parse_rect(const std::string& text, const std::string& flag) {
  std::stringstream ss(text);
  std::string part;
  std::vector<long long> v;
  const bool trailing = text.ends_with(',');  // (which getline would drop without a word; --flow refuses its like)
  while (!trailing && std::getline(ss, part, ',')) {
    try {
      size_t used = 0;
      long long x = std::stoll(part, &used);
      if (used != part.size() || x < 0) throw std::invalid_argument("");
      v.push_back(x);
    } catch (const std::exception&) {
      v.clear();
      break;
    }
  }
  if (v.size() != 4 || v[2] < v[0] || v[3] < v[1] || v[2] >= (1ll << 31) || v[3] >= (1ll << 31))
    throw UsageError(flag + " '" + text + "': expected x0,y0,x1,y1 (inclusive corners, x0 <= x1, y0 <= y1)");
  return {uint32_t(v[0]), uint32_t(v[1]), uint32_t(v[2] + 1), uint32_t(v[3] + 1)};
}

namespace {

// A non-negative decimal number below `limit`, or nothing.
std::optional<uint64_t> number(const std::string& s, uint64_t limit) {
  if (s.empty() || s.size() > 19 || s.find_first_not_of("0123456789") != std::string::npos) return std::nullopt;
  const uint64_t v = std::stoull(s);
  if (v >= limit) return std::nullopt;
  return v;
}

}  // namespace

std::vector<Colour> parse_colours(const std::string& text) {
  std::vector<Colour> out;
  std::stringstream ss(text);
  std::string part;
  const bool trailing = text.ends_with(',');  // (which getline would drop without a word)
  while (!trailing && std::getline(ss, part, ',')) {
    const auto v = number(part, 64);
    if (!v) throw UsageError("--colours '" + text + "': expected colour numbers 0..63 separated by commas, e.g. 3,5");
    // A slip, refused as a --flow given twice is (it was taken without a word).
    if (std::find(out.begin(), out.end(), Colour(*v)) != out.end())
      throw UsageError("--colours '" + text + "': colour " + std::to_string(*v) + " is given twice; give it once");
    out.push_back(Colour(*v));
  }
  if (out.empty()) throw UsageError("--colours '" + text + "': expected colour numbers 0..63 separated by commas, e.g. 3,5");
  return out;
}

FlowRequest parse_flow(const std::string& text) {
  const size_t at = text.find('@'), comma = text.find(',', at == std::string::npos ? 0 : at);
  const char* want = "expected COLOUR@X,Y (a colour and the PE that sends it, e.g. 3@0,2)";
  if (at == std::string::npos || comma == std::string::npos) throw UsageError("--flow '" + text + "': " + want);
  const auto c = number(text.substr(0, at), 64), x = number(text.substr(at + 1, comma - at - 1), 1u << 31),
             y = number(text.substr(comma + 1), 1u << 31);
  if (!c || !x || !y) throw UsageError("--flow '" + text + "': " + want);
  return {Colour(*c), {uint32_t(*x), uint32_t(*y)}};
}

TraceDetail parse_detail(const std::string& text) {
  if (text == "all") return TraceDetail::All;
  if (text == "tasks") return TraceDetail::Tasks;
  if (text == "counters") return TraceDetail::Counters;
  throw UsageError("--detail '" + text + "': expected all, tasks or counters");
}

namespace {

// The trace of one recorded run, streamed as it runs: the file, its writer and what fills it.
struct TraceOutput {
  std::unique_ptr<TraceSink> sink;
  std::unique_ptr<LayerTrace> trace;
  std::filesystem::path file;
  TileRect pes;

  // Sets up the trace of the run `rec` records (before the run; the recorder is not run yet).
  void start(const TraceOptions& opt, OutputDir& out, ActivityRecorder& rec) {
    const MeshShape shape = rec.wafer().shape();
    pes = opt.rect.value_or(TileRect{0, 0, shape.width, shape.height});  // run_trace checked --pes against the mesh
    // Streamed while the run may still fail (run.max_cycles): claimed only in finish_trace, so a
    // failed --overwrite run leaves the earlier output untouched, as every other command does.
    file = out.pending(opt.format == "json" ? "trace.json" : "trace.pftrace");
    if (opt.format == "json") sink = std::make_unique<JsonTraceWriter>(file);
    else sink = std::make_unique<PftraceWriter>(file);
    LayerTraceOptions lo{opt.detail, pes, opt.from, opt.to, opt.colours, opt.flows};
    trace = std::make_unique<LayerTrace>(*sink, rec, lo);
    if (opt.detail != TraceDetail::Counters) rec.trace_tasks(pes);
    rec.set_observer(trace.get());
  }
};

// A window that starts after the layer ended holds nothing: an empty trace with exit code 0
// looked like a layer that did nothing. Refused before the folder is claimed (a training trace
// checks it before it writes its cluster trace, which claimed the folder first: a trace audit,
// forty-sixth round).
void check_window(const TraceResult& r, const TraceOptions& opt, const std::string& layer) {
  if (const uint64_t cycles = r.report.value("cycles", uint64_t(0)); opt.from > 0 && opt.from >= cycles)
    throw UsageError("--from " + std::to_string(opt.from) + ": the layer (" + layer + ", " + opt.pass + ") ran " + std::to_string(cycles) +
                     " cycles, so the window holds nothing; give --from below " + std::to_string(cycles));
}

// Writes the dump, finishes the trace and writes the report of one recorded run.
void finish_trace(TraceResult& r, const TraceOptions& opt, OutputDir& out, ActivityRecorder& rec, TraceOutput& t,
                  const std::string& layer) {
  check_window(r, opt, layer);
  out.entry(t.file.filename().string());  // the run succeeded: claim the directory before the trace is committed
  r.dump_file = out.entry("activity.wsad");
  rec.write(r.dump_file);
  r.dump_bytes = rec.dump().size();
  r.intervals = rec.intervals();
  r.stored_tiles = rec.tiles().size();
  r.traced_pes = t.trace->stats().pes;
  t.trace->finish(rec);
  r.trace_file = t.file;
  r.trace_bytes = t.sink->bytes_written();
  r.trace_stats = t.trace->stats();
  const TileRect rect = t.pes;
  nlohmann::json tr = {{"layer", layer},
                       {"pass", opt.pass},
                       {"interval_cycles", opt.interval},
                       {"intervals", r.intervals},
                       {"stored_tiles", r.stored_tiles},
                       {"dump_bytes", r.dump_bytes},
                       {"file", t.file.filename().string()},
                       {"format", opt.format},
                       {"bytes", r.trace_bytes},
                       {"detail", opt.detail == TraceDetail::All ? "all" : opt.detail == TraceDetail::Tasks ? "tasks" : "counters"},
                       {"slices", r.trace_stats.slices},
                       {"counter_points", r.trace_stats.counter_points},
                       {"from", opt.from},
                       {"traced_pes", {{"x0", rect.x0}, {"y0", rect.y0}, {"x1", rect.x1 - 1}, {"y1", rect.y1 - 1}, {"count", r.traced_pes}}}};
  if (opt.to != kNever) tr["to"] = opt.to;
  r.report["trace"] = std::move(tr);
  // The peak now, with the dump and the trace written: their writing is where a trace's memory
  // peaks (an interval of 1 on 128x128: 8.8 GiB, where the figure taken with the run's report
  // said 3.4).
  r.report["peak_rss_bytes"] = peak_rss_bytes();
  r.report_file = out.entry("report.json");
  write_file_atomic(r.report_file, json_text(r.report, 2) + "\n", "report");
}

// Records one layer's pass of the first training step on wafer 0: the counters are reset just
// before that kernel runs, so the report and the dump describe it alone.
struct LayerTraceObserver : KernelObserver {
  const RunConfig& cfg;
  const TraceOptions& opt;
  OutputDir& out;
  size_t layer;
  bool backward;
  std::unique_ptr<ActivityRecorder> rec;
  TraceOutput trace;
  TraceResult result;  // report and profiles, taken as the traced run ends
  bool done = false;

  LayerTraceObserver(const RunConfig& c, const TraceOptions& o, OutputDir& d, size_t l, bool b)
      : cfg(c), opt(o), out(d), layer(l), backward(b) {}
  // Every wafer calls these, from the cluster's pool threads when wafers step at once: the other
  // wafers leave before reading anything the traced one writes (`done` was read by wafer 1 while
  // wafer 0 wrote it, a ThreadSanitizer race with no visible effect).
  RunHooks before_run(uint32_t w, size_t l, bool b, Wafer& wafer) override {
    if (w != 0 || done || l != layer || b != backward) return {};
    wafer.reset_counters();
    rec = std::make_unique<ActivityRecorder>(wafer, ActivityMeta{Cluster::layer_name(l), opt.pass}, opt.interval);
    trace.start(opt, out, *rec);
    return rec->hooks(opt.progress);
  }
  void after_run(uint32_t w, size_t l, bool b, Wafer& wafer, const WaferRun& run) override {
    if (w != 0 || done || l != layer || b != backward) return;
    result.report = make_report(cfg, wafer, run, {});
    result.congestion = congestion_profile(wafer, run.cycles, opt.top_n);
    result.sram = sram_profile(wafer);
    rec->dump();  // ends the recording: the later layers' tasks are not logged
    done = true;
  }
};

// `threads`: what the traced wafer's mesh is given (a training config's wafers share the count).
void say_tracing(const RunConfig& cfg, const TraceOptions& opt, const std::string& layer, unsigned threads, unsigned wafers_at_once = 1) {
  const unsigned workers = Partition::workers_for(cfg.mesh, threads);
  // A training config's wafers each run the step, side by side: the process's threads, and the
  // traced wafer's share of them (it said "1 thread(s)" of two wafers on two threads).
  std::string how = std::to_string(workers) + " thread(s)";
  if (wafers_at_once > 1)
    how = std::to_string(workers * wafers_at_once) + " thread(s): " + std::to_string(wafers_at_once) + " wafers side by side, " +
          std::to_string(workers) + " worker(s) each";
  std::printf("wse: tracing %s (layer %s, %s) every %llu cycles, %s\n", opt.config.c_str(), layer.c_str(), opt.pass.c_str(),
              (unsigned long long)opt.interval, how.c_str());
  std::fflush(stdout);
}

TraceResult trace_training_layer(const RunConfig& cfg, const TraceOptions& opt, const ThreadChoice& choice) {
  const TrainConfig& tc = cfg.train;
  size_t layer = tc.layers.size();
  for (size_t l = 0; l + 1 < tc.layers.size(); ++l)
    if (opt.layer == Cluster::layer_name(l)) layer = l;
  if (layer == tc.layers.size())
    throw UsageError("--layer '" + opt.layer + "': config " + cfg.source.string() + " has layers fc1 .. fc" +
                     std::to_string(tc.layers.size() - 1));
  // The one batch the traced step takes: its files, and images of the size the model takes,
  // checked before any work.
  const DataSetRequest one_batch{"train", tc.batch_size, "training.batch_size"};
  inspect_data_set(tc, "config " + cfg.source.string(), one_batch);
  OutputDir out(opt.out, {"--out", opt.overwrite, false, opt.command, {{cfg.source, "the config this run reads"}}});
  ClusterConfig cc = cluster_config(cfg);
  cc.detail = {};  // the traced step runs cycle by cycle, whatever training.detail says
  Cluster trainer(cc, opt.threads);
  // The wafers share the threads (only wafer 0's pass is traced, but each runs its step).
  say_tracing(cfg, opt, opt.layer, trainer.wafer_threads(), trainer.runtime_threads());
  LayerTraceObserver observer(cfg, opt, out, layer, opt.pass == "bwd");
  trainer.set_observer(&observer);
  Dataset data = load_data_set(tc, "config " + cfg.source.string(), one_batch);
  trainer.train_step(data.images.data(), data.labels.data());

  if (!observer.done) throw std::logic_error("trace: the traced kernel did not run");
  TraceResult r = std::move(observer.result);
  const size_t l = layer;
  r.report["layer"] = {{"name", Cluster::layer_name(l)},
                       {"in", tc.layers[l]},
                       {"out", tc.layers[l + 1]},
                       {"pass", opt.pass},
                       // Wafer 0's, as the rest of the report is (the MACs were every wafer's: a review, forty-fifth round).
                       {"stats", trainer.first_wafer_stats(opt.pass == "bwd")[l].to_json()}};
  r.report["congestion"] = to_json(r.congestion);
  r.report["sram"] = to_json(r.sram);
  // The cluster's actors over the same step, in a file of their own (their clock is the
  // cluster's, from the step's start; the layer's trace starts with its pass).
  const nlohmann::json step = trainer.step_timeline(trainer.memoryx().step() - 1);
  check_window(r, opt, Cluster::layer_name(l));
  r.cluster_file = out.entry(opt.format == "json" ? "cluster.json" : "cluster.pftrace");
  std::unique_ptr<TraceSink> sink;
  if (opt.format == "json") sink = std::make_unique<JsonTraceWriter>(r.cluster_file);
  else sink = std::make_unique<PftraceWriter>(r.cluster_file);
  const ClusterTraceStats cs = write_cluster_trace(*sink, step, cfg.machine.name,
                                                   std::to_string(cfg.mesh.width) + "x" + std::to_string(cfg.mesh.height),
                                                   std::max(1u, cfg.train.num_csx));
  r.cluster_bytes = sink->bytes_written(), r.cluster_slices = cs.slices;
  // Why the traced wafer has the workers it has (a training config's wafers share the count asked).
  // "threads" is the traced pass's workers, and so is the note; with wafers side by side it also
  // says how many threads the step ran on in all ("the run used 1" of two wafers on two threads
  // read as one thread: a determinism audit, forty-seventh round; every wafer's count beside
  // "threads" read as the pass's: forty-fifth).
  nlohmann::json why = choice.to_json();
  const unsigned traced = r.report["threads"].get<unsigned>(), at_once = trainer.runtime_threads();
  if (at_once > 1 && why["asked"].is_number_unsigned() && why["asked"].get<unsigned>() > traced && !why.contains("note"))
    why["note"] = "--threads " + std::to_string(why["asked"].get<unsigned>()) + ": the traced pass used " + std::to_string(traced) +
                  "; up to " + std::to_string(at_once) + " wafers ran the step side by side, " + std::to_string(trainer.workers()) +
                  " thread(s) in all (" + kThreadShareRule + ")";
  note_capped_threads(why, at_once > 1 ? trainer.workers() : traced);
  r.report["threads_choice"] = why;
  if (r.report["threads_detail"].is_object())
    r.report["threads_detail"]["wafers_at_once"] = trainer.runtime_threads(), r.report["threads_detail"]["workers_per_wafer"] = trainer.wafer_workers();
  r.report["cluster_trace"] = {{"file", r.cluster_file.filename().string()}, {"bytes", r.cluster_bytes}, {"actors", cs.actors},
                               {"slices", cs.slices}, {"step", step.at("step")}, {"step_cycles", step.at("cycles")},
                               {"critical_cycles_by_actor", step.at("critical_cycles_by_actor")}};
  finish_trace(r, opt, out, *observer.rec, observer.trace, Cluster::layer_name(l));
  return r;
}

}  // namespace

TraceResult run_trace(const TraceOptions& asked) {
  RunConfig cfg = load_run_config(asked.config);
  TraceOptions opt = asked;
  ThreadChoice choice = choose_threads(cfg, asked.threads);
  opt.threads = choice.threads;
  check_run_memory(cfg);  // before anything big is built
  if (opt.pass != "fwd" && opt.pass != "bwd") throw UsageError("--pass '" + opt.pass + "': expected fwd or bwd");
  if (opt.interval == 0) throw UsageError("--interval must be at least 1 cycle");
  if (opt.format != "pftrace" && opt.format != "json") throw UsageError("--format '" + opt.format + "': expected pftrace or json");
  if (opt.to <= opt.from) throw UsageError("--to " + std::to_string(opt.to) + " must be after --from " + std::to_string(opt.from));
  // What can be checked against the mesh is checked before anything is written.
  const std::string mesh = std::to_string(cfg.mesh.width) + "x" + std::to_string(cfg.mesh.height) + " mesh";
  if (opt.rect && (opt.rect->x0 >= cfg.mesh.width || opt.rect->y0 >= cfg.mesh.height))
    throw UsageError("--pes selects no PE of the " + mesh);
  // A corner beyond the mesh was cut to it without a word: the user has another mesh in mind.
  if (opt.rect && (opt.rect->x1 > cfg.mesh.width || opt.rect->y1 > cfg.mesh.height))
    throw UsageError("--pes " + std::to_string(opt.rect->x0) + "," + std::to_string(opt.rect->y0) + "," + std::to_string(opt.rect->x1 - 1) +
                     "," + std::to_string(opt.rect->y1 - 1) + " reaches beyond the " + mesh + " (x 0.." +
                     std::to_string(cfg.mesh.width - 1) + ", y 0.." + std::to_string(cfg.mesh.height - 1) + ")");
  // So was a colour the machine cannot route: it got no track.
  for (Colour c : opt.colours)
    if (c >= cfg.machine.colours)
      throw UsageError("--colours: colour " + std::to_string(c) + " is not routable on machine '" + cfg.machine.name + "' (colours 0.." +
                       std::to_string(cfg.machine.colours - 1) + ")");
  for (size_t i = 0; i < opt.flows.size(); ++i) {
    const FlowRequest& f = opt.flows[i];
    // Checked here, as --colours is (it failed after the run: "sends nothing on colour 24").
    if (f.colour >= cfg.machine.colours)
      throw UsageError("--flow " + std::to_string(f.colour) + "@" + std::to_string(f.from.x) + "," + std::to_string(f.from.y) + ": colour " +
                       std::to_string(f.colour) + " is not routable on machine '" + cfg.machine.name + "' (colours 0.." +
                       std::to_string(cfg.machine.colours - 1) + ")");
    for (size_t k = 0; k < i; ++k)
      if (opt.flows[k].colour == f.colour && opt.flows[k].from.x == f.from.x && opt.flows[k].from.y == f.from.y)
        throw UsageError("--flow " + std::to_string(f.colour) + "@" + std::to_string(f.from.x) + "," + std::to_string(f.from.y) +
                         " is given twice (its route would be drawn twice)");
  }
  for (const FlowRequest& f : opt.flows)
    if (!cfg.mesh.contains(f.from.x, f.from.y))
      throw UsageError("--flow " + std::to_string(f.colour) + "@" + std::to_string(f.from.x) + "," + std::to_string(f.from.y) + ": PE " +
                       to_string(f.from) + " is outside the " + mesh);
  const KernelKind& kind = kernel_kind(cfg.kernel, "config " + cfg.source.string());
  if (kind.training) {
    if (opt.layer.empty()) throw UsageError("--layer is required for a training config (fc1, fc2, ...)");
    return trace_training_layer(cfg, opt, choice);
  }
  // A single-run kernel (GEMV, reduce) is one layer: the whole kernel.
  if (!opt.layer.empty() && opt.layer != cfg.kernel)
    throw UsageError("--layer '" + opt.layer + "': config " + cfg.source.string() + " runs kernel '" + cfg.kernel +
                     "', whose only layer is '" + cfg.kernel + "'");
  if (opt.pass == "bwd")
    throw UsageError("--pass bwd: kernel '" + cfg.kernel + "' in " + cfg.source.string() + " has no backward pass");

  OutputDir out(opt.out, {"--out", opt.overwrite, false, opt.command, {{cfg.source, "the config this run reads"}}});
  Wafer wafer(cfg.machine, cfg.mesh);
  std::unique_ptr<PlacedKernel> kernel = kind.place(wafer, *cfg.kernel_config);
  choice = fit_to_kernel(choice, wafer);
  opt.threads = choice.threads;
  say_tracing(cfg, opt, cfg.kernel, opt.threads);
  wafer.finalize(opt.threads);

  ActivityRecorder rec(wafer, {cfg.kernel, opt.pass}, opt.interval);
  TraceOutput trace;
  trace.start(opt, out, rec);
  WaferRun run = wafer.run(cfg.max_cycles, rec.hooks(opt.progress));
  if (run.engine.hit_cycle_limit) throw cycle_limit_error(cfg, wafer);
  const std::vector<float> y = kernel->finish();

  TraceResult r;
  r.report = make_report(cfg, wafer, run, y);
  r.report[cfg.kernel] = kernel->report();
  r.report["threads_choice"] = threads_choice_json(choice, r.report["threads"].get<unsigned>());
  r.congestion = congestion_profile(wafer, run.cycles, opt.top_n);
  r.sram = sram_profile(wafer);
  r.report["congestion"] = to_json(r.congestion);
  r.report["sram"] = to_json(r.sram);
  finish_trace(r, opt, out, rec, trace, cfg.kernel);
  return r;
}

void print_trace_summary(std::FILE* out, const TraceResult& r, size_t top_n) {
  const auto& j = r.report;
  std::fprintf(out, "  cycles            %llu in %zu interval%s of %llu\n", (unsigned long long)j["cycles"].get<uint64_t>(),
               r.intervals, r.intervals == 1 ? "" : "s", (unsigned long long)j["trace"]["interval_cycles"].get<uint64_t>());
  std::fprintf(out, "  MACs              %llu   FMAC utilization %.1f%%\n", (unsigned long long)j["macs"].get<uint64_t>(),
               100 * j["fmac_utilization"].get<double>());
  print(out, r.congestion, top_n);
  print(out, r.sram);
  const double per = r.intervals && r.stored_tiles ? double(r.dump_bytes) / double(r.intervals * r.stored_tiles) : 0.0;
  std::fprintf(out, "  dump              %s (%llu bytes, %zu tiles stored, %.1f bytes per tile per interval)\n",
               r.dump_file.string().c_str(), (unsigned long long)r.dump_bytes, r.stored_tiles, per);
  std::fprintf(out, "  trace             %s (%llu bytes: %zu PEs, %llu slices, %llu counter points)\n", r.trace_file.string().c_str(),
               (unsigned long long)r.trace_bytes, r.traced_pes, (unsigned long long)r.trace_stats.slices,
               (unsigned long long)r.trace_stats.counter_points);
  if (!r.cluster_file.empty())
    std::fprintf(out, "  cluster           %s (%llu bytes: %llu actor spans and critical-path segments of step %llu)\n",
                 r.cluster_file.string().c_str(), (unsigned long long)r.cluster_bytes, (unsigned long long)r.cluster_slices,
                 (unsigned long long)j["cluster_trace"]["step"].get<uint64_t>());
  std::fprintf(out, "  host              %.3f s\n  checksum          %s\n  report            %s\n",
               j["host_seconds"].get<double>(), j["checksum"].get<std::string>().c_str(), r.report_file.string().c_str());
}

}  // namespace wse
