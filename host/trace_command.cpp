#include "host/trace_command.hpp"

#include <chrono>
#include <fstream>
#include <sstream>

#include "host/dataset.hpp"
#include "host/config.hpp"
#include "fabric/partition.hpp"
#include "host/memory_budget.hpp"
#include "host/report.hpp"
#include "io/output_dir.hpp"
#include "io/output_file.hpp"
#include "tools/dump_view.hpp"
#include "tools/perfetto_export.hpp"

namespace wse {

TileRect parse_rect(const std::string& text) {
  std::stringstream ss(text);
  std::string part;
  std::vector<long long> v;
  while (std::getline(ss, part, ',')) {
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
    throw UsageError("--rect '" + text + "': expected x0,y0,x1,y1 (inclusive corners, x0 <= x1, y0 <= y1)");
  return {uint32_t(v[0]), uint32_t(v[1]), uint32_t(v[2] + 1), uint32_t(v[3] + 1)};
}

namespace {

// Writes the dump, the Perfetto trace and the report of one recorded run.
void finish_trace(TraceResult& r, const TraceOptions& opt, OutputDir& out, ActivityRecorder& rec, const std::string& layer, TileRect rect) {
  r.dump_file = out.entry("activity.wsad");
  rec.write(r.dump_file);
  r.dump_bytes = rec.dump().size();
  r.intervals = rec.intervals();
  r.traced_pes = rec.traced().size();
  // The trace is built from the dump as written, so it shows exactly what the dump holds.
  const DumpView view = load_dump_view(r.dump_file);
  r.stored_tiles = view.tiles.size();
  r.trace_file = out.entry("trace.json");
  write_perfetto(r.trace_file, perfetto_trace(view, rec.traced(), rec.stream_phases()));
  r.report["trace"] = {{"layer", layer},
                       {"pass", opt.pass},
                       {"interval_cycles", opt.interval},
                       {"intervals", r.intervals},
                       {"stored_tiles", r.stored_tiles},
                       {"dump_bytes", r.dump_bytes},
                       {"traced_pes", {{"x0", rect.x0}, {"y0", rect.y0}, {"x1", rect.x1 - 1}, {"y1", rect.y1 - 1}}}};
  r.report_file = out.entry("report.json");
  write_file_atomic(r.report_file, r.report.dump(2) + "\n", "report");
}

// Records one layer's pass of the first training step on wafer 0: the counters are reset just
// before that kernel runs, so the report and the dump describe it alone.
struct LayerTrace : KernelObserver {
  const RunConfig& cfg;
  const TraceOptions& opt;
  size_t layer;
  bool backward;
  TileRect rect;
  std::unique_ptr<ActivityRecorder> rec;
  TraceResult result;  // report and profiles, taken as the traced run ends
  bool done = false;

  LayerTrace(const RunConfig& c, const TraceOptions& o, size_t l, bool b, TileRect r) : cfg(c), opt(o), layer(l), backward(b), rect(r) {}
  RunHooks before_run(uint32_t w, size_t l, bool b, Wafer& wafer) override {
    if (done || w != 0 || l != layer || b != backward) return {};
    wafer.reset_counters();
    rec = std::make_unique<ActivityRecorder>(wafer, ActivityMeta{Cluster::layer_name(l), opt.pass}, opt.interval);
    rec->trace_tasks(rect);
    return rec->hooks(opt.progress);
  }
  void after_run(uint32_t w, size_t l, bool b, Wafer& wafer, const WaferRun& run) override {
    if (done || w != 0 || l != layer || b != backward) return;
    result.report = make_report(cfg, wafer, run, {});
    result.congestion = congestion_profile(wafer, run.cycles, opt.top_n);
    result.sram = sram_profile(wafer);
    done = true;
  }
};

void say_tracing(const RunConfig& cfg, const TraceOptions& opt, const std::string& layer) {
  std::printf("wse: tracing %s (layer %s, %s) every %llu cycles, %u thread(s)\n", opt.config.c_str(), layer.c_str(), opt.pass.c_str(),
              (unsigned long long)opt.interval, Partition::workers_for(cfg.mesh, opt.threads));
  std::fflush(stdout);
}

TraceResult trace_training_layer(const RunConfig& cfg, const TraceOptions& opt) {
  const TrainConfig& tc = cfg.train;
  size_t layer = tc.layers.size();
  for (size_t l = 0; l + 1 < tc.layers.size(); ++l)
    if (opt.layer == Cluster::layer_name(l)) layer = l;
  if (layer == tc.layers.size())
    throw UsageError("--layer '" + opt.layer + "': config " + cfg.source.string() + " has layers fc1 .. fc" +
                     std::to_string(tc.layers.size() - 1));
  IdxInfo data_info = inspect_idx_dataset(tc.data_dir, "train");  // before any work
  if (data_info.count < tc.batch_size) throw UsageError("dataset in " + tc.data_dir.string() + " holds fewer samples than one batch");
  OutputDir out(opt.out, {"--out", opt.overwrite, false, opt.command});
  say_tracing(cfg, opt, opt.layer);
  Cluster trainer(cluster_config(cfg), opt.threads);
  TileRect rect = opt.rect.value_or(TileRect{0, 0, std::min(4u, trainer.grid_cols()), std::min(4u, trainer.grid_rows())});
  LayerTrace observer(cfg, opt, layer, opt.pass == "bwd", rect);
  trainer.set_observer(&observer);
  Dataset data = load_idx_dataset(tc.data_dir, "train", tc.batch_size);
  if (data.count < tc.batch_size) throw UsageError("dataset in " + tc.data_dir.string() + " holds fewer samples than one batch");
  trainer.train_step(data.images.data(), data.labels.data());

  if (!observer.done) throw std::logic_error("trace: the traced kernel did not run");
  TraceResult r = std::move(observer.result);
  const size_t l = layer;
  r.report["layer"] = {{"name", Cluster::layer_name(l)},
                       {"in", tc.layers[l]},
                       {"out", tc.layers[l + 1]},
                       {"pass", opt.pass},
                       {"stats", (opt.pass == "bwd" ? trainer.backward_stats() : trainer.forward_stats())[l].to_json()}};
  r.report["congestion"] = to_json(r.congestion);
  r.report["sram"] = to_json(r.sram);
  finish_trace(r, opt, out, *observer.rec, Cluster::layer_name(l), rect);
  return r;
}

}  // namespace

TraceResult run_trace(const TraceOptions& opt) {
  RunConfig cfg = load_run_config(opt.config);
  check_run_memory(cfg);  // before anything big is built
  if (opt.pass != "fwd" && opt.pass != "bwd") throw UsageError("--pass '" + opt.pass + "': expected fwd or bwd");
  if (opt.interval == 0) throw UsageError("--interval must be at least 1 cycle");
  const KernelKind& kind = kernel_kind(cfg.kernel, "config " + cfg.source.string());
  if (kind.training) {
    if (opt.layer.empty()) throw UsageError("--layer is required for a training config (fc1, fc2, ...)");
    return trace_training_layer(cfg, opt);
  }
  // A single-run kernel (GEMV, reduce) is one layer: the whole kernel.
  if (!opt.layer.empty() && opt.layer != cfg.kernel)
    throw UsageError("--layer '" + opt.layer + "': config " + cfg.source.string() + " runs kernel '" + cfg.kernel +
                     "', whose only layer is '" + cfg.kernel + "'");
  if (opt.pass == "bwd")
    throw UsageError("--pass bwd: kernel '" + cfg.kernel + "' in " + cfg.source.string() + " has no backward pass");

  OutputDir out(opt.out, {"--out", opt.overwrite, false, opt.command});
  say_tracing(cfg, opt, cfg.kernel);
  Wafer wafer(cfg.machine, cfg.mesh);
  std::unique_ptr<PlacedKernel> kernel = kind.place(wafer, *cfg.kernel_config);
  wafer.finalize(opt.threads);

  ActivityRecorder rec(wafer, {cfg.kernel, opt.pass}, opt.interval);
  TileRect rect = opt.rect.value_or(TileRect{0, 0, std::min(4u, cfg.mesh.width), std::min(4u, cfg.mesh.height)});
  rec.trace_tasks(rect);
  WaferRun run = wafer.run(cfg.max_cycles, rec.hooks(opt.progress));
  if (run.engine.hit_cycle_limit)
    throw UsageError("run stopped at run.max_cycles = " + std::to_string(cfg.max_cycles) +
                     " before the kernel finished; raise run.max_cycles in " + cfg.source.string());
  const std::vector<float> y = kernel->finish();

  TraceResult r;
  r.report = make_report(cfg, wafer, run, y);
  r.report[cfg.kernel] = kernel->report();
  r.congestion = congestion_profile(wafer, run.cycles, opt.top_n);
  r.sram = sram_profile(wafer);
  r.report["congestion"] = to_json(r.congestion);
  r.report["sram"] = to_json(r.sram);
  finish_trace(r, opt, out, rec, cfg.kernel, rect);
  return r;
}

void print_trace_summary(std::FILE* out, const TraceResult& r, size_t top_n) {
  const auto& j = r.report;
  std::fprintf(out, "  cycles            %llu in %zu intervals of %llu\n", (unsigned long long)j["cycles"].get<uint64_t>(),
               r.intervals, (unsigned long long)j["trace"]["interval_cycles"].get<uint64_t>());
  std::fprintf(out, "  MACs              %llu   FMAC utilization %.1f%%\n", (unsigned long long)j["macs"].get<uint64_t>(),
               100 * j["fmac_utilization"].get<double>());
  print(out, r.congestion, top_n);
  print(out, r.sram);
  const double per = r.intervals && r.stored_tiles ? double(r.dump_bytes) / double(r.intervals * r.stored_tiles) : 0.0;
  std::fprintf(out, "  dump              %s (%llu bytes, %zu tiles stored, %.1f bytes per tile per interval)\n",
               r.dump_file.string().c_str(), (unsigned long long)r.dump_bytes, r.stored_tiles, per);
  std::fprintf(out, "  trace             %s (%zu PEs with task slices)\n", r.trace_file.string().c_str(), r.traced_pes);
  std::fprintf(out, "  host              %.3f s\n  checksum          %s\n  report            %s\n",
               j["host_seconds"].get<double>(), j["checksum"].get<std::string>().c_str(), r.report_file.string().c_str());
}

}  // namespace wse
