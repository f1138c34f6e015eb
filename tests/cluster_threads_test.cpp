// The cluster's actors on several host threads: the same weights, gradients, losses, step ends
// and timelines at 1, 2 and 3 threads for 1, 3 and 4 wafers (a smaller model than
// cluster_step_time_test.cpp's, so ThreadSanitizer runs it in CI); a message corrupted on its
// way is refused with an error naming its sender, receiver and step; and a gradient stands for 4
// bytes a value on the links, sparse or dense.
#include <cstdio>
#include <map>
#include <mutex>

#include "wire/gradient_stream.hpp"

#include "cluster_test_support.hpp"

namespace wse {
namespace {

using namespace cluster_test;

// Small enough for ThreadSanitizer: 48 samples split over 1, 2, 3 or 4 wafers of 4 x 4 PEs.
RunConfig small_config(uint32_t num_csx) {
  RunConfig cfg = base_config(num_csx);
  cfg.mesh = {4, 4};
  cfg.train.layers = {96, 40, 10};
  cfg.train.batch_size = 48;
  return cfg;
}

// Results and timelines do not depend on how many host threads run the actors and the wafers.
class ThreadCounts : public ::testing::TestWithParam<uint32_t> {};

TEST_P(ThreadCounts, SameBitsAtOneTwoAndThreeThreads) {
  const ClusterConfig c = cluster_config(small_config(GetParam()));
  const Training one = train(c, 1);
  for (unsigned t : {2u, 3u}) {
    const Training r = train(c, t);
    EXPECT_EQ(one.weights, r.weights) << t << " threads";
    EXPECT_EQ(one.gradients, r.gradients) << t << " threads";
    EXPECT_EQ(one.losses, r.losses) << t << " threads";
    EXPECT_EQ(one.timeline.dump(), r.timeline.dump()) << t << " threads";
    for (size_t s = 0; s < one.steps.size(); ++s) EXPECT_EQ(one.steps[s].end, r.steps[s].end) << t << " threads, step " << s;
  }
}

INSTANTIATE_TEST_SUITE_P(Wafers, ThreadCounts, ::testing::Values(1u, 3u, 4u));

TEST(ClusterMessages, ACorruptGradientIsRefusedNamingSenderReceiverAndStep) {
  const ClusterConfig c = cluster_config(small_config(2));
  auto flip = [](Message& m) {
    if (m.kind == MessageKind::GradientStream && m.step == 1 && !m.payload.empty()) {
      // Cut short on the way: the FlatBuffers verifier must refuse it.
      auto corrupt = std::make_shared<Buffer>(m.payload[0]->begin(), m.payload[0]->begin() + m.payload[0]->size() / 2);
      m.payload[0] = corrupt;
    }
  };
  try {
    train(c, 2, flip);
    FAIL() << "a corrupt GradientStream was accepted";
  } catch (const UsageError& e) {
    const std::string what = e.what();
    EXPECT_NE(what.find("GradientStream"), std::string::npos) << what;
    EXPECT_NE(what.find("wafer"), std::string::npos) << what;       // the sender
    EXPECT_NE(what.find("swarmx"), std::string::npos) << what;      // the receiver
    EXPECT_NE(what.find("step 2"), std::string::npos) << what;  // the second step (1 inside the cluster), as the log counts
    std::printf("%s\n", what.c_str());
  }
}

// A gradient leaves the wafer as a 32-bit wavelet a value, and climbs the SwarmX tree and enters
// MemoryX as those words: a sparse one's positions are the static mask every actor holds. Each
// GradientStream, a wafer's and a SwarmX node's sum alike, stands for 4 bytes a value on its
// link. (A cluster audit, forty-sixth round: the encoded message was charged, value and index, 8
// bytes a kept weight; at sparsity 0.3 fc1's gradient took 1.4x the dense one's link time.)
TEST(ClusterMessages, AGradientTakesFourBytesAValueOnTheLinks) {
  std::map<bool, uint64_t> fc1_bytes;  // by sparse, a wafer's fc1 gradient
  for (bool sparse : {false, true}) {
    RunConfig cfg = small_config(2);  // two wafers: the wafers' gradients and the root's sum
    if (sparse) {
      cfg.train.memoryx.sparsity.enabled = true;
      cfg.train.memoryx.sparsity.level = 0.3;
      cfg.train.memoryx.encoding = StreamEncoding::Sparse;
    }
    std::mutex m;  // (the tap runs on the actors' threads)
    uint64_t seen = 0;
    auto tap = [&](Message& msg) {
      if (msg.kind != MessageKind::GradientStream) return;
      const GradientMessage g = decode_gradient_stream(*msg.payload.at(0), "tapped GradientStream");
      std::lock_guard<std::mutex> lock(m);
      ++seen;
      EXPECT_EQ(g.sparse, sparse);
      EXPECT_EQ(msg.bytes, 4 * g.values.size()) << (sparse ? "sparse " : "dense ") << g.layer << " from actor " << msg.from;
      if (g.layer_index == 0) fc1_bytes[sparse] = msg.bytes;
    };
    train(cluster_config(cfg), 2, tap);
    EXPECT_EQ(seen, kSteps * 2 * 3) << "per step and layer: two wafers' gradients and the root's sum";
  }
  // 96 x 40 weights and 40 biases dense; at 0.3 the weights keep round(0.7 x 3840) = 2688.
  EXPECT_EQ(fc1_bytes[false], 4u * (96 * 40 + 40));
  EXPECT_EQ(fc1_bytes[true], 4u * (2688 + 40));
}

}  // namespace
}  // namespace wse
