#include "cluster/cluster.hpp"

#include <algorithm>

#include "cluster/wall_time.hpp"
#include "core/errors.hpp"
#include "memoryx/safetensors.hpp"

namespace wse {

Cluster::Cluster(const ClusterConfig& cfg, unsigned threads) : cfg_(cfg) {
  const MachineSpec& m = cfg.machine;
  const uint32_t n = cfg.model.num_csx;
  layout_ = std::make_unique<FcLayout>(cfg.model, cfg.mesh, m);
  std::vector<LayerSpec> specs;
  for (size_t l = 0; l < layout_->layer_count(); ++l) specs.push_back({layer_name(l), cfg.model.layers[l], cfg.model.layers[l + 1]});
  if (cfg.resume_from.empty()) memoryx_ = std::make_unique<MemoryX>(cfg.memoryx, specs);
  else memoryx_ = std::make_unique<MemoryX>(cfg.memoryx, specs, SafetensorsFile(cfg.resume_from));
  first_step_ = memoryx_->step();
  shape_.wafers = n;
  for (const LayerSpec& s : specs) shape_.layers.push_back({s.name, s.in + 1, s.out});

  // The wafers run side by side on the runtime's threads; each keeps what is left for its mesh.
  threads = std::max(1u, threads);
  wafer_threads_ = std::max(1u, threads / n);
  for (uint32_t w = 0; w < n; ++w) {
    wafers_.push_back(std::make_unique<Wafer>(m, cfg.mesh));
    fc_.push_back(std::make_unique<FcWafer>(*layout_, *wafers_.back(), w, wafer_threads_, cfg.max_cycles, cfg.model.where));
    if (cfg.adaptive_workers) fc_.back()->adapt_workers();
  }
  runtime_ = std::make_unique<Runtime>(std::min(threads, n));

  // Actors in a fixed order (their ids break ties between messages of the same cycle).
  user_ = &runtime_->add<UserNode>(n);
  mx_ = &runtime_->add<MemoryXActor>(*memoryx_, *layout_, shape_, m, cfg.model.loss_scale, cfg.retain_last_layer);
  std::vector<std::vector<SwarmXNode*>> levels;
  size_t below = n;
  do {
    std::vector<SwarmXNode*> level;
    for (size_t g = 0; g * m.swarmx_fanout < below; ++g)
      level.push_back(&runtime_->add<SwarmXNode>("swarmx " + std::to_string(levels.size()) + "." + std::to_string(g), shape_));
    levels.push_back(level);
    below = level.size();
  } while (below > 1);
  levels_ = uint32_t(levels.size());
  for (auto& level : levels)
    for (SwarmXNode* s : level) nodes_.push_back(s);
  for (uint32_t w = 0; w < n; ++w) wafer_actors_.push_back(&runtime_->add<WaferActor>(*fc_[w], *layout_, shape_, first_step_, cfg.retain_last_layer, cfg.detail));
  for (uint32_t w = 0; w < n; ++w) workers_.push_back(&runtime_->add<InputWorker>(w, *layout_, batches_));

  // Links: the tree (each level's latency and bandwidth both ways), MemoryX to the root, the
  // user node to MemoryX, the root and the input workers, each input worker to its wafer.
  Runtime& rt = *runtime_;
  std::vector<LinkId> wafer_up(n);
  for (size_t lv = 0; lv < levels.size(); ++lv) {
    for (size_t g = 0; g < levels[lv].size(); ++g) {
      SwarmXNode& node = *levels[lv][g];
      std::vector<LinkId> down;
      std::vector<ActorId> children;
      const size_t count = lv == 0 ? n : levels[lv - 1].size();
      for (size_t c = g * m.swarmx_fanout; c < std::min(count, (g + 1) * m.swarmx_fanout); ++c) {
        Actor& child = lv == 0 ? static_cast<Actor&>(*wafer_actors_[c]) : static_cast<Actor&>(*levels[lv - 1][c]);
        down.push_back(rt.connect(node, child, m.swarmx_latency_cycles, m.swarmx_link_bytes_per_cycle));
        children.push_back(child.id());
      }
      LinkId up = 0;
      std::optional<LinkId> to_user;
      if (lv + 1 < levels.size()) {
        up = rt.connect(node, *levels[lv + 1][g / m.swarmx_fanout], m.swarmx_latency_cycles, m.swarmx_link_bytes_per_cycle);
      } else {
        up = rt.connect(node, *mx_, m.memoryx_latency_cycles, m.swarmx_link_bytes_per_cycle);
        to_user = rt.connect(node, *user_, m.user_node_latency_cycles, 0);
      }
      node.wire(up, std::move(down), std::move(children), to_user);
    }
  }
  for (uint32_t w = 0; w < n; ++w) {
    SwarmXNode& leaf = *levels[0][w / m.swarmx_fanout];
    wafer_up[w] = rt.connect(*wafer_actors_[w], leaf, m.swarmx_latency_cycles, m.swarmx_link_bytes_per_cycle);
    const LinkId to_worker = rt.connect(*wafer_actors_[w], *workers_[w], m.input_latency_cycles, 0);
    wafer_actors_[w]->wire(wafer_up[w], to_worker);
    workers_[w]->wire(rt.connect(*workers_[w], *wafer_actors_[w], m.input_latency_cycles, m.input_bytes_per_cycle));
  }
  mx_->wire(rt.connect(*mx_, *levels.back()[0], m.memoryx_latency_cycles, m.memoryx_bytes_per_cycle),
            rt.connect(*mx_, *user_, m.user_node_latency_cycles, 0));
  std::vector<LinkId> to_workers;
  for (uint32_t w = 0; w < n; ++w) to_workers.push_back(rt.connect(*user_, *workers_[w], m.user_node_latency_cycles, 0));
  user_->wire(rt.connect(*user_, *mx_, m.user_node_latency_cycles, 0), to_workers);
}

Cluster::~Cluster() = default;

std::vector<SharedBuffer> Cluster::streams(size_t l, StreamPass pass) const {
  return encode_weight_streams(memoryx_->view(l), memoryx_->step(), pass, cfg_.model.encoding, layout_->stream_slices(l));
}

nlohmann::json Cluster::mesh_program() const { return layout_->mesh_program(wafers_[0]->mesh(), cfg_.machine.sram_bytes_per_pe); }

void Cluster::set_observer(KernelObserver* o) {
  for (auto& f : fc_) f->set_observer(o);
}

void Cluster::begin(uint64_t step, bool eval) {
  runtime_->act(*user_, [&] { user_->begin(step, eval, cfg_.model.batch_size); });
}

StepResult Cluster::train_step(const float* x, const uint8_t* labels, const float* next_x, const uint8_t* next_labels) {
  // The step this call is for: calls go in step order. (It may have begun already, on the batch
  // the call before handed over as the next one, and even ended, during an evaluation.)
  const uint64_t s = first_step_ + train_calls_++;
  batches_[s] = {x, labels};
  if (!issued_any_ || issued_through_ <= s) {
    begin(s, false);
    issued_any_ = true, issued_through_ = s + 1;
  }
  if (next_x && issued_through_ == s + 1) {
    batches_[s + 1] = {next_x, next_labels};
    begin(s + 1, false);
    issued_through_ = s + 2;
  }
  runtime_->run_until([&] { return user_->finished(s, false); }, step_label(s) + "'s end");
  for (auto it = batches_.begin(); it != batches_.end() && it->first < s;) it = batches_.erase(it);
  const StepOutcome& o = user_->outcome(s);
  StepResult r;
  r.loss = o.loss_sum / double(cfg_.model.batch_size);
  r.correct = o.correct;
  const MemoryXActor::StepEnd* e = mx_->step_end(s);
  const MemoryXActor::StepEnd* before = s > first_step_ ? mx_->step_end(s - 1) : nullptr;
  r.end = e->end;
  // From the previous step's end, or from the end of evaluation batches run since (the machine
  // was busy with those, not with this step).
  const Cycle start = std::max(before ? before->end : 0, eval_end_);
  r.cycles = e->end - std::min(e->end, start);
  step_start_[s] = std::min(e->end, start);
  r.detailed = cfg_.detail.detailed(s, first_step_);
  return r;
}

StepResult Cluster::eval_batch(const float* x, const uint8_t* labels) {
  // Training steps already begun finish first: an evaluation sees the weights of every step
  // handed over so far, and does not run beside them.
  if (issued_any_) {
    const uint64_t last = issued_through_ - 1;
    runtime_->run_until([&] { return user_->finished(last, false); }, step_label(last) + "'s end");
  }
  const uint64_t id = kEvalStepBase + evals_++;
  batches_[id] = {x, labels};
  begin(id, true);
  const Cycle from = user_->clock();  // the cycle the user node sent the batch's StepBegin
  runtime_->run_until([&] { return user_->finished(id, true); }, step_label(id) + "'s loss");
  batches_.erase(id);
  const StepOutcome& o = user_->outcome(id);
  StepResult r;
  r.loss = o.loss_sum / double(cfg_.model.batch_size);
  r.correct = o.correct;
  r.end = o.loss_at;
  r.cycles = o.loss_at - from;
  eval_end_ = std::max(eval_end_, o.loss_at);
  return r;
}

namespace {

std::vector<PassStats> merged(const std::vector<std::unique_ptr<FcWafer>>& fc, bool backward) {
  std::vector<PassStats> out = backward ? fc[0]->backward_stats() : fc[0]->forward_stats();
  for (size_t w = 1; w < fc.size(); ++w) {
    const std::vector<PassStats>& s = backward ? fc[w]->backward_stats() : fc[w]->forward_stats();
    for (size_t l = 0; l < out.size(); ++l) out[l].macs += s[l].macs, out[l].macs_skipped += s[l].macs_skipped;
  }
  return out;
}

}  // namespace

std::vector<PassStats> Cluster::forward_stats() const { return merged(fc_, false); }
std::vector<PassStats> Cluster::backward_stats() const { return merged(fc_, true); }
PassStats Cluster::input_stats() const { return fc_[0]->input_stats(); }

uint64_t Cluster::engine_cycles() const {
  uint64_t c = 0;
  for (const auto& f : fc_) c += f->engine_cycles();
  return c;
}

double Cluster::engine_seconds() const {
  std::vector<std::pair<double, double>> runs;
  for (const auto& f : fc_) runs.insert(runs.end(), f->run_intervals().begin(), f->run_intervals().end());
  return covered_seconds(std::move(runs));
}

std::vector<double> Cluster::waiting() const {
  std::vector<double> waited;
  for (const auto& f : fc_) {
    const std::vector<double>& w = f->waited_seconds();
    if (waited.size() < w.size()) waited.resize(w.size(), 0.0);
    for (size_t k = 0; k < w.size(); ++k) waited[k] += w[k];
  }
  const double shared = multi_worker_seconds();
  for (double& s : waited) s = shared > 0 ? s / shared : 0.0;
  return waited;
}

double Cluster::multi_worker_seconds() const {
  double s = 0;
  for (const auto& f : fc_) s += f->shared_seconds();
  return s;
}

nlohmann::json Cluster::step_timeline(uint64_t step) const {
  const MemoryXActor::StepEnd* e = mx_->step_end(step);
  if (!e) throw std::logic_error("step_timeline: step " + std::to_string(step) + " has not ended");
  // Where train_step counted the step from: the previous step's end or a test pass's end.
  auto known = step_start_.find(step);
  const MemoryXActor::StepEnd* before = step > first_step_ ? mx_->step_end(step - 1) : nullptr;
  const Cycle boundary = known != step_start_.end() ? known->second : before ? before->end : 0;
  const Timeline tl = runtime_->timeline();
  nlohmann::json path = nlohmann::json::array();
  nlohmann::json by_actor = nlohmann::json::object();
  for (const CriticalSegment& s : tl.critical_path(e->span, boundary)) {
    path.push_back({{"actor", s.actor}, {"what", s.what}, {"from", s.from}, {"to", s.to}, {"cycles", s.to - s.from}});
    by_actor[s.actor] = by_actor.value(s.actor, uint64_t(0)) + (s.to - s.from);
  }
  // "step" counted from 1, as users read steps (step_label).
  return {{"step", step + 1},    {"start", boundary},          {"end", e->end},        {"cycles", e->end - boundary},
          {"critical_path", path}, {"critical_cycles_by_actor", by_actor}, {"spans", tl.spans_json(step)}};
}

}  // namespace wse
