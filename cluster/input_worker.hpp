#pragma once
// An input worker (the seed's input pre-processing server): reads its wafer's shard of each
// step's batch, converts it to what the wafer takes (fp16 in mixed precision) and streams it to
// the wafer's west edge as an InputBatch message, one batch ahead at most: it sends step s's
// shard once the step has begun and the wafer has said it can take it (an InputCredit, sent when
// the wafer's last batch is used up).
#include <deque>
#include <map>

#include "cluster/actor.hpp"
#include "kernels/fc/fc_layout.hpp"

namespace wse {

// Where a step's global batch is (the dataset in host memory, read-only while the cluster runs).
struct BatchRef {
  const float* x = nullptr;        // batch_size rows of features
  const uint8_t* labels = nullptr;
};
using BatchTable = std::map<uint64_t, BatchRef>;

class InputWorker : public Actor {
 public:
  InputWorker(uint32_t wafer, const FcLayout& layout, const BatchTable& batches)
      : Actor("input worker " + std::to_string(wafer)), wafer_(wafer), layout_(layout), batches_(batches) {}
  void wire(LinkId to_wafer) { to_wafer_ = to_wafer; }
  std::string waiting_on() const override;

 protected:
  void receive(const Message& m) override;

 private:
  void pump();

  struct Pending {
    uint64_t step;
    bool eval;
    SpanId cause;
    Cycle cause_end;
  };
  uint32_t wafer_;
  const FcLayout& layout_;
  const BatchTable& batches_;
  LinkId to_wafer_ = 0;
  std::deque<Pending> steps_;
  uint32_t credits_ = 1;  // the wafer starts with room for one batch
  CauseCandidate credit_cause_;
};

}  // namespace wse
