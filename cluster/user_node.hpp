#pragma once
// The user node: where the training script runs. It starts each step (StepBegin to MemoryX and
// every input worker) and hears back what the step produced: the loss and correct predictions,
// summed by SwarmX on the way from the wafers, and MemoryX's word that every layer is updated.
#include <map>
#include <vector>

#include "cluster/actor.hpp"

namespace wse {

struct StepOutcome {
  bool has_loss = false, done = false;
  double loss_sum = 0;
  uint32_t correct = 0, samples = 0;
  uint32_t skipped_updates = 0;
  Cycle loss_at = 0, done_at = 0;
};

class UserNode : public Actor {
 public:
  UserNode(uint32_t wafers) : Actor("user node"), wafers_(wafers) {}
  void wire(LinkId to_memoryx, std::vector<LinkId> to_workers) {
    to_memoryx_ = to_memoryx;
    to_workers_ = std::move(to_workers);
  }
  // The host starts a step (run through Runtime::act, at the frontier).
  void begin(uint64_t step, bool eval, uint32_t samples);
  const StepOutcome& outcome(uint64_t step) const;
  bool finished(uint64_t step, bool eval) const;
  std::string waiting_on() const override;

 protected:
  void receive(const Message& m) override;

 private:
  uint32_t wafers_;
  LinkId to_memoryx_ = 0;
  std::vector<LinkId> to_workers_;
  std::map<uint64_t, StepOutcome> outcomes_;
};

}  // namespace wse
