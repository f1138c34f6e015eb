// The cluster's actors on several host threads: the same weights, gradients, losses, step ends
// and timelines at 1, 2 and 3 threads for 1, 3 and 4 wafers (a smaller model than
// cluster_step_time_test.cpp's, so ThreadSanitizer runs it in CI); and a message corrupted on its
// way is refused with an error naming its sender, receiver and step.
#include <cstdio>

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

}  // namespace
}  // namespace wse
