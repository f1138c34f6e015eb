#pragma once
// MemoryX as an actor: it streams each pass's weights down the SwarmX tree in the order the step
// runs them, as soon as it may, and applies each layer's summed gradient as soon as it arrives.
//
// Streaming is pipelined as in the machine: MemoryX sends the next stream while the wafers work
// on the current one. The wafer edge holds up to edge_buffer_bytes of a stream before its pass
// starts; MemoryX sends that much (the head), and the rest once the wafers say the pass has
// started (a StreamCredit, the latest wafer's, through SwarmX), when the edge drains as fast as
// the link fills it. It sends stream j + 1 only after stream j has started, so the edge holds one
// stream ahead. A forward stream needs its layer's update from the step before: at the boundary
// between steps the update of the first layer, whose gradient comes last, is exposed.
//
// The update takes the bytes the optimizer reads and writes (weights, gradient, optimizer states,
// fp32) at memoryx_update_bytes_per_cycle, one layer after another: of the kept weights only in a
// sparse layer (an assumption: the optimizer skips the pruned ones; the store itself is dense,
// pruned weights held as 0).
#include <map>
#include <vector>

#include "cluster/actor.hpp"
#include "cluster/step_plan.hpp"
#include "cluster/swarmx_node.hpp"
#include "core/machine_spec.hpp"
#include "kernels/fc/fc_layout.hpp"
#include "memoryx/memoryx.hpp"

namespace wse {

class MemoryXActor : public Actor {
 public:
  MemoryXActor(MemoryX& mx, const FcLayout& layout, const ClusterShape& shape, const MachineSpec& machine, float loss_scale, bool retain_last_layer);
  void wire(LinkId down, LinkId to_user) { down_ = down, to_user_ = to_user; }

  // The summed gradient applied for layer l in the last step ((in+1) x out, bias last).
  const std::vector<float>& last_gradient(size_t l) const { return last_grads_[l]; }
  uint64_t skipped_updates() const { return skipped_; }
  // When a training step's last update (its first layer's) ended, and that update's span.
  struct StepEnd {
    Cycle end = 0;
    SpanId span = kNoSpan;
  };
  const StepEnd* step_end(uint64_t step) const;
  // Cycles MemoryX's optimizer takes for layer l.
  Cycle update_cycles(size_t l) const;
  // Bytes of the stream of layer l for one pass (what crosses MemoryX's link).
  uint64_t stream_bytes(size_t l, StreamPass pass) const;
  std::string waiting_on() const override;

 protected:
  void receive(const Message& m) override;

 private:
  struct Stream {
    uint64_t step = 0;
    PassKey key;
    bool needs_update = false;  // a forward stream after a training step: that step's update of its layer first
    uint64_t update_step = 0;
    CauseCandidate begin;       // the StepBegin
    Cycle begin_at = 0;
    bool credited = false;
    uint64_t tail = 0;          // bytes still to send once the pass has started
    SpanId span = kNoSpan;
  };
  void step_begin(const Message& m);
  void credit(const Message& m);
  void gradient(const Message& m);
  void pump();

  MemoryX& mx_;
  const FcLayout& layout_;
  const ClusterShape& shape_;
  MachineSpec machine_;
  float loss_scale_;
  bool retain_;
  LinkId down_ = 0, to_user_ = 0;
  std::vector<Stream> queue_;  // every stream in sending order
  size_t next_ = 0;            // the first not yet sent
  size_t credit_next_ = 0;     // the first sent and not yet started on the wafers
  CauseCandidate last_credit_;
  SpanId link_span_ = kNoSpan;  // the last stream sent
  Cycle link_end_ = 0;
  uint64_t next_train_step_ = 0;
  bool any_train_step_ = false;
  uint64_t last_train_step_ = 0;
  // per layer: the last training step whose update is done, and when it ended
  std::vector<uint64_t> updated_step_;
  std::vector<bool> updated_any_;
  std::vector<Cycle> update_end_;
  std::vector<uint64_t> kept_;  // per layer: weights and biases the optimizer updates (the masks' kept ones)
  std::vector<SpanId> update_span_;
  Cycle optimizer_free_ = 0;
  SpanId optimizer_span_ = kNoSpan;
  // the gradient expected next: (step, layer)
  std::vector<std::pair<uint64_t, uint32_t>> expected_grads_;
  std::vector<std::vector<float>> last_grads_;
  uint64_t skipped_ = 0;
  uint32_t skipped_this_step_ = 0;
  std::map<uint64_t, StepEnd> step_ends_;
};

}  // namespace wse
