#include "host/train_job.hpp"

#include <sys/resource.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <nlohmann/json.hpp>

#include "host/dataset.hpp"
#include "fabric/log.hpp"
#include "host/fc_trainer.hpp"

namespace wse {

namespace {

void save_checkpoint(FcTrainer& t, const std::filesystem::path& dir, uint64_t step) {
  std::filesystem::create_directories(dir);
  const auto path = dir / ("step_" + std::to_string(step) + ".safetensors");
  t.memoryx().write_checkpoint(path);
  std::printf("  checkpoint %s\n", path.string().c_str());
}

// The most host memory this process has held so far (Linux reports KiB).
uint64_t peak_rss_bytes() {
  rusage u{};
  getrusage(RUSAGE_SELF, &u);
  return uint64_t(u.ru_maxrss) * 1024;
}

nlohmann::json sparsity_json(const MemoryX& mx) {
  nlohmann::json params = nlohmann::json::array();
  uint64_t numel = 0, pruned = 0;
  for (const SparsifiedParam& p : mx.sparsified()) {
    params.push_back({{"name", p.plan.name},
                      {"level", p.plan.level},
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
          {"sparse_numel", numel},
          {"pruned", pruned},
          {"level", numel ? double(pruned) / double(numel) : 0.0}};
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
  std::printf("  sparsity: %zu of %zu parameters\n", mx.sparsified().size(), 2 * mx.layers());
  for (const SparsifiedParam& s : mx.sparsified()) {
    const ParamSparsity& p = s.plan;
    const auto numel = (unsigned long long)s.numel, pruned = (unsigned long long)s.pruned;
    const std::string pattern = p.pattern.empty() ? "" : "  (pattern " + p.pattern + ")";
    if (p.method == SparsityInit::FromZeros)
      std::printf("    %-14s %10llu  from_zeros (its zero weights), seed %llu: %llu pruned, %llu kept%s\n", p.name.c_str(), numel,
                  (unsigned long long)p.seed, pruned, numel - pruned, pattern.c_str());
    else
      std::printf("    %-14s %10llu  level %.4g %-6s seed %llu: %llu pruned, %llu kept%s\n", p.name.c_str(), numel, p.level,
                  to_string(p.method), (unsigned long long)p.seed, pruned, numel - pruned, pattern.c_str());
  }
}

}  // namespace

int run_training(const RunConfig& cfg, unsigned threads, const std::filesystem::path& out_dir, TrainModes modes) {
  const TrainConfig& tc = cfg.train;
  const auto t_start = std::chrono::steady_clock::now();
  FcTrainer trainer(cfg, threads);  // compiles every layer: throws if one does not map
  const uint64_t init_rss = peak_rss_bytes();  // MemoryX initialized, wafers built, nothing streamed yet
  std::printf("wse: fc_train");
  for (size_t i = 0; i < tc.layers.size(); ++i) std::printf("%s%u", i ? " -> " : " ", tc.layers[i]);
  std::printf(" on %u wafer(s) of %ux%u PEs (%s), global batch %u, %s weights, %s, %u thread(s)\n", tc.num_csx,
              trainer.grid_cols(), trainer.grid_rows(), cfg.machine.name.c_str(), tc.batch_size,
              tc.memoryx.encoding == StreamEncoding::Sparse ? "sparse" : "dense", tc.memoryx.optimizer.kind.c_str(), threads);
  {
    const InitStats& is = trainer.memoryx().init_stats();
    std::printf("  init: %s%s, %llu tensors, %llu ops recorded, %llu pruned, %.2f s, %.1f MiB in MemoryX, peak host memory %.1f MiB\n",
                tc.memoryx.init.lazy ? "lazy" : "eager",
                tc.memoryx.init.lazy ? (" x" + std::to_string(tc.memoryx.init.max_parallel)).c_str() : "",
                (unsigned long long)is.tensors, (unsigned long long)is.ops_recorded, (unsigned long long)is.ops_pruned,
                is.record_seconds + is.materialize_seconds, double(is.store_bytes) / (1 << 20), double(init_rss) / (1 << 20));
  }
  if (modes.validate_only) {
    print_sparsity_plan(trainer.memoryx());
    nlohmann::json plan = trainer.mesh_program();
    std::printf("  valid: every layer maps; peak SRAM per PE %u of %u bytes\n", plan["sram_plan"]["peak_bytes_max"].get<uint32_t>(),
                cfg.machine.sram_bytes_per_pe);
    return 0;
  }
  std::filesystem::create_directories(out_dir);
  if (modes.compile_only) {
    const auto path = out_dir / "mesh_program.json";
    std::ofstream(path) << trainer.mesh_program().dump(2) << "\n";
    std::printf("  mesh program %s\n", path.string().c_str());
    // The first step's weight streams as MemoryX would send them (wse inspect reads them).
    const auto dir = out_dir / "streams";
    std::filesystem::create_directories(dir);
    size_t files = 0;
    for (size_t l = 0; l < trainer.memoryx().layers(); ++l)
      for (StreamPass pass : {StreamPass::Forward, StreamPass::Backward}) {
        const auto streams = trainer.streams(l, pass);
        for (size_t c = 0; c < streams.size(); ++c) {
          char name[64];
          std::snprintf(name, sizeof name, "fc%zu_%s_col%02zu.wsws", l + 1, pass == StreamPass::Forward ? "fwd" : "bwd", c);
          std::ofstream(dir / name, std::ios::binary).write(reinterpret_cast<const char*>(streams[c]->data()), std::streamsize(streams[c]->size()));
          ++files;
        }
      }
    std::printf("  %zu weight streams in %s\n", files, dir.string().c_str());
    return 0;
  }

  Dataset train = load_idx_dataset(tc.data_dir, "train", tc.train_samples);
  Dataset test = tc.eval_samples ? load_idx_dataset(tc.data_dir, "t10k", tc.eval_samples) : Dataset{};
  const uint32_t steps_per_epoch = train.count / tc.batch_size;
  if (steps_per_epoch == 0)
    throw ConfigError("config " + cfg.source.string() + ": data.train_samples (" + std::to_string(train.count) +
                      ") is smaller than one batch (" + std::to_string(tc.batch_size) + ")");
  uint64_t total_steps = uint64_t(steps_per_epoch) * tc.epochs;
  if (tc.max_steps) total_steps = std::min<uint64_t>(total_steps, tc.max_steps);
  const std::filesystem::path ckpt_dir = tc.checkpoint_dir.empty() ? out_dir / "checkpoints" : tc.checkpoint_dir;

  nlohmann::json losses = nlohmann::json::array();
  const auto t0 = std::chrono::steady_clock::now();
  uint64_t wafer_cycles = 0;
  double window_loss = 0;
  uint32_t window = 0;
  double first_loss_seconds = 0;
  const uint64_t first = trainer.memoryx().step();
  for (uint64_t s = first; s < first + total_steps; ++s) {
    const uint32_t b = uint32_t(s % steps_per_epoch) * tc.batch_size;
    StepResult r = trainer.train_step(&train.images[size_t(b) * train.features], &train.labels[b]);
    wafer_cycles += r.cycles;
    losses.push_back(r.loss);
    if (s == first) first_loss_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t_start).count();
    window_loss += r.loss, ++window;
    const uint64_t done = s + 1;
    if (done % tc.log_every == 0 || done == first + total_steps) {
      const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
      std::printf("  step %5llu  epoch %llu  loss %.4f  (%.2f s/step, %llu wafer cycles/step)\n", (unsigned long long)done,
                  (unsigned long long)(s / steps_per_epoch + 1), window_loss / window, secs / double(done - first),
                  (unsigned long long)(r.cycles));
      std::fflush(stdout);
      window_loss = 0, window = 0;
    }
    if (tc.checkpoint_every && done % tc.checkpoint_every == 0) save_checkpoint(trainer, ckpt_dir, done);
  }
  const double train_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (!tc.checkpoint_every || trainer.memoryx().step() % tc.checkpoint_every)  // not saved just now
    save_checkpoint(trainer, ckpt_dir, trainer.memoryx().step());

  // Test accuracy, on the wafer (forward only), over whole batches.
  uint32_t scored = 0, correct = 0;
  double test_loss = 0;
  for (uint32_t b = 0; b + tc.batch_size <= test.count; b += tc.batch_size) {
    StepResult r = trainer.eval_batch(&test.images[size_t(b) * test.features], &test.labels[b]);
    correct += r.correct, scored += tc.batch_size, test_loss += r.loss * tc.batch_size;
  }
  const double accuracy = scored ? double(correct) / scored : 0.0;
  std::printf("  first loss after %.2f s; peak host memory %.1f MiB\n", first_loss_seconds, double(peak_rss_bytes()) / (1 << 20));
  if (scored) std::printf("  test accuracy %.2f%% on %u samples (loss %.4f)\n", 100 * accuracy, scored, test_loss / scored);

  nlohmann::json j;
  j["config"] = cfg.source.string();
  j["kernel"] = cfg.kernel;
  j["machine"] = cfg.machine.name;
  j["mesh"] = {{"width", trainer.grid_cols()}, {"height", trainer.grid_rows()}};
  j["threads"] = threads;
  j["num_csx"] = tc.num_csx;
  j["batch_size"] = tc.batch_size;
  j["steps"] = total_steps;
  j["encoding"] = tc.memoryx.encoding == StreamEncoding::Sparse ? "sparse" : "dense";
  j["sparsity"] = sparsity_json(trainer.memoryx());
  j["init"] = init_json(trainer.memoryx().init_stats(), tc.memoryx.init);
  j["init"]["peak_rss_bytes"] = init_rss;
  j["time_to_first_loss_seconds"] = first_loss_seconds;
  j["peak_rss_bytes"] = peak_rss_bytes();
  j["wafer_cycles"] = wafer_cycles;
  j["wafer_cycles_per_step"] = total_steps ? wafer_cycles / total_steps : 0;
  nlohmann::json layers = nlohmann::json::array();
  for (size_t l = 0; l + 1 < tc.layers.size(); ++l)
    layers.push_back({{"name", "fc" + std::to_string(l + 1)},
                      {"in", tc.layers[l]},
                      {"out", tc.layers[l + 1]},
                      {"forward", trainer.forward_stats()[l].to_json()},
                      {"backward", trainer.backward_stats()[l].to_json()}});
  j["layers"] = layers;
  j["loss_per_step"] = losses;
  j["test_accuracy"] = accuracy;
  j["test_samples"] = scored;
  j["sram_high_water_bytes"] = trainer.sram_high_water();
  j["host_seconds"] = train_seconds;
  j["host_seconds_per_step"] = total_steps ? train_seconds / double(total_steps) : 0.0;
  j["steps_per_epoch"] = steps_per_epoch;
  const auto path = out_dir / "report.json";
  std::ofstream(path) << j.dump(2) << "\n";
  std::printf("  %.2f s per step, %.1f s per epoch of %u steps (host); report %s\n", j["host_seconds_per_step"].get<double>(),
              j["host_seconds_per_step"].get<double>() * steps_per_epoch, steps_per_epoch, path.string().c_str());
  return 0;
}

}  // namespace wse
