#pragma once
// Shared by the cluster tests: a small FC training config, batches, a few training steps on a
// Cluster with what they leave (weights, gradients, losses, the last step's timeline), and the
// wafer's pass spans of a timeline.
#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <string>
#include <vector>

#include "cluster/cluster.hpp"
#include "cluster/message.hpp"
#include "host/config.hpp"

namespace wse {
namespace cluster_test {

struct Batch {
  std::vector<float> x;
  std::vector<uint8_t> y;
};

inline Batch make_batch(uint32_t n, uint32_t features, uint32_t classes, uint32_t seed) {
  Batch b;
  for (uint32_t i = 0; i < n * features; ++i) b.x.push_back(float((i * 2654435761u + seed * 97) % 1000) / 1000.0f);
  for (uint32_t i = 0; i < n; ++i) b.y.push_back(uint8_t((i * 7 + seed) % classes));
  return b;
}

inline RunConfig base_config(uint32_t num_csx) {
  RunConfig cfg;
  cfg.source = "in-memory";
  cfg.kernel = "fc_train";
  cfg.mesh = {8, 4};
  cfg.train.layers = {256, 128, 64, 10};
  cfg.train.batch_size = num_csx == 3 ? 48 : 64;  // split evenly over the wafers
  cfg.train.num_csx = num_csx;
  cfg.train.memoryx.optimizer = {"sgd", 0.05f, 0.9f};
  cfg.train.memoryx.encoding = StreamEncoding::DenseHalf;
  cfg.train.memoryx.seed = 3;
  cfg.train.mixed = true;
  cfg.train.loss_scale = 128.0f;
  return cfg;
}

// Every cluster link instant and unbounded: what is left is the wafer's own compute.
inline ClusterConfig ideal(ClusterConfig c) {
  MachineSpec& m = c.machine;
  m.memoryx_bytes_per_cycle = m.swarmx_link_bytes_per_cycle = m.input_bytes_per_cycle = 1e9;
  m.memoryx_update_bytes_per_cycle = 1e9;
  m.memoryx_latency_cycles = m.swarmx_latency_cycles = m.input_latency_cycles = m.user_node_latency_cycles = 1;
  m.edge_buffer_bytes = uint64_t(1) << 40;
  return c;
}

struct Training {
  std::vector<StepResult> steps;
  nlohmann::json timeline;  // of the last step
  std::vector<std::vector<float>> weights;
  std::vector<double> losses;
  std::vector<std::vector<float>> gradients;
  std::map<std::string, double> tail;  // per pass: the wafer's cycles after its last weight entered
};

constexpr uint32_t kSteps = 3;

inline Training train(const ClusterConfig& c, unsigned threads, std::function<void(Message&)> tamper = {}) {
  Cluster cluster(c, threads);
  if (tamper) cluster.set_tamper(std::move(tamper));
  const uint32_t in = c.model.layers.front(), classes = c.model.layers.back();
  std::vector<Batch> batches;
  for (uint32_t s = 0; s <= kSteps; ++s) batches.push_back(make_batch(c.model.batch_size, in, classes, s + 1));
  Training r;
  for (uint32_t s = 0; s < kSteps; ++s) {
    const Batch* next = s + 1 < kSteps ? &batches[s + 1] : nullptr;
    r.steps.push_back(cluster.train_step(batches[s].x.data(), batches[s].y.data(), next ? next->x.data() : nullptr,
                                         next ? next->y.data() : nullptr));
    r.losses.push_back(r.steps.back().loss);
  }
  r.timeline = cluster.step_timeline(kSteps - 1);
  for (size_t l = 0; l + 1 < c.model.layers.size(); ++l) {
    const PassStats f = cluster.forward_stats()[l], b = cluster.backward_stats()[l];
    r.tail[Cluster::layer_name(l) + " fwd"] = double(f.tail_cycles) / double(f.runs);
    r.tail[Cluster::layer_name(l) + " bwd"] = double(b.tail_cycles) / double(b.runs);
  }
  for (size_t l = 0; l + 1 < c.model.layers.size(); ++l) {
    r.weights.push_back(cluster.memoryx().weight(l).data);
    r.gradients.push_back(cluster.last_gradient(l));
  }
  return r;
}

// The wafer's pass spans of a step's timeline, by name ("fc1 fwd", ...).
inline std::map<std::string, uint64_t> pass_cycles(const nlohmann::json& timeline) {
  std::map<std::string, uint64_t> out;
  for (const auto& s : timeline["spans"]["wafer 0"]) out[s[0].get<std::string>()] = s[2].get<uint64_t>() - s[1].get<uint64_t>();
  return out;
}

}  // namespace cluster_test
}  // namespace wse
