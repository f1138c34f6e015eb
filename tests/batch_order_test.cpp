// Which samples each training step takes (host/batch_order.hpp): file order, or with
// `data.shuffle` a fresh order per epoch by Fisher-Yates. Found by a mutation test: drawing the
// swap from one fewer position (Sattolo's algorithm, which gives only the cyclic orders) passed
// every test, since `wse baseline` shares BatchOrder with the wafer run; the losses and the
// checkpoint changed. Each sample's only feature and its label are its index, so a batch says
// which samples it took.
#include <gtest/gtest.h>

#include <algorithm>
#include <map>
#include <numeric>
#include <set>
#include <vector>

#include "host/batch_order.hpp"

namespace wse {
namespace {

Dataset indices(uint32_t n) {
  Dataset d;
  d.count = n, d.features = 1;
  for (uint32_t i = 0; i < n; ++i) d.images.push_back(float(i)), d.labels.push_back(uint8_t(i));
  return d;
}

std::vector<uint32_t> epoch_order(BatchOrder& o, const Dataset& d, uint32_t batch, uint64_t epoch) {
  std::vector<uint32_t> out;
  std::vector<float> x(batch);
  std::vector<uint8_t> y(batch);
  for (uint32_t s = 0; s < o.steps_per_epoch(); ++s) {
    o.gather(d, epoch * o.steps_per_epoch() + s, x.data(), y.data());
    for (uint32_t b = 0; b < batch; ++b) {
      EXPECT_EQ(uint32_t(x[b]), y[b]);
      out.push_back(y[b]);
    }
  }
  return out;
}

TEST(BatchOrder, WithoutShuffleTheFilesOrderAndTheRemainderLeftOut) {
  const Dataset d = indices(10);
  BatchOrder o(10, 3, false, 7);
  EXPECT_EQ(o.steps_per_epoch(), 3u);
  for (uint64_t epoch : {0, 1, 5}) EXPECT_EQ(epoch_order(o, d, 3, epoch), (std::vector<uint32_t>{0, 1, 2, 3, 4, 5, 6, 7, 8}));
}

TEST(BatchOrder, AShuffledEpochIsAPermutationDrawnAlikeForEveryOrder) {
  const Dataset d = indices(3);
  // Fisher-Yates draws each of the 3! orders alike: over 6,000 (seed, epoch) pairs, each about
  // 1,000 times (Sattolo's algorithm draws only the 2 cyclic ones, never a sample in its place).
  std::map<std::vector<uint32_t>, int> seen;
  for (uint64_t seed = 0; seed < 1500; ++seed) {
    BatchOrder o(3, 3, true, seed);
    for (uint64_t epoch = 0; epoch < 4; ++epoch) ++seen[epoch_order(o, d, 3, epoch)];
  }
  ASSERT_EQ(seen.size(), 6u);
  for (const auto& [order, times] : seen) {
    EXPECT_GT(times, 850) << order[0] << order[1] << order[2];  // about 5 standard deviations (sd 29)
    EXPECT_LT(times, 1150) << order[0] << order[1] << order[2];
  }
  // A larger set: every epoch a permutation, the same for the same seed, another for the next
  // epoch or another seed.
  const Dataset big = indices(200);
  BatchOrder a(200, 8, true, 11), again(200, 8, true, 11), other(200, 8, true, 12);
  const std::vector<uint32_t> e0 = epoch_order(a, big, 8, 0), e1 = epoch_order(a, big, 8, 1);
  std::vector<uint32_t> sorted = e0;
  std::sort(sorted.begin(), sorted.end());
  std::vector<uint32_t> all(200);
  std::iota(all.begin(), all.end(), 0u);
  EXPECT_EQ(sorted, all);
  EXPECT_EQ(epoch_order(again, big, 8, 1), e1);  // (drawn out of order: epoch 1 first)
  EXPECT_EQ(epoch_order(again, big, 8, 0), e0);
  EXPECT_NE(e0, e1);
  EXPECT_NE(epoch_order(other, big, 8, 0), e0);
}

}  // namespace
}  // namespace wse
