#pragma once
// A CS-X wafer as an actor: it wraps the cycle-level Wafer and the FC kernel's run side. It runs
// a step's work in order (the batch in, the forward passes, the backward passes), each as soon as
// the wafer is free and what it needs has arrived, and says what it did: a pass's start to
// MemoryX (through SwarmX: MemoryX may send the rest of the stream), the loss after the last
// forward pass and each layer's dW after its backward pass (up the SwarmX tree), and room for the
// next batch to its input worker.
//
// A pass simulates from the cycle it starts, even when the message it waited for last (the rest
// of its stream) arrives later: nothing else can reach the wafer during the pass, and what the
// pass sends leaves no earlier than that message arrived.
#include <deque>
#include <vector>

#include "cluster/actor.hpp"
#include "cluster/step_plan.hpp"
#include "cluster/swarmx_node.hpp"
#include "kernels/fc/fc_wafer.hpp"

namespace wse {

class WaferActor : public Actor {
 public:
  WaferActor(FcWafer& fc, const FcLayout& layout, const ClusterShape& shape, uint64_t first_step, bool retain_last_layer,
             DetailPolicy detail = {});
  void wire(LinkId up, LinkId to_worker) { up_ = up, to_worker_ = to_worker; }
  std::string waiting_on() const override;
  // Host seconds spent in the wafer's cycle-level runs.
  double host_seconds() const { return fc_.host_seconds(); }

 protected:
  void receive(const Message& m) override;

 private:
  void advance();
  void run_input();
  bool run_pass(PassKey k);
  void finish_step();
  std::vector<DecodedStream> decode(const Message& head, PassKey k) const;

  FcWafer& fc_;
  const FcLayout& layout_;
  const ClusterShape& shape_;
  bool retain_;
  DetailPolicy detail_;
  uint64_t first_step_;  // the run's first training step (a resumed run's is its checkpoint's)
  LinkId up_ = 0, to_worker_ = 0;
  std::deque<Message> inputs_, heads_, resumes_;
  // The step in progress.
  bool active_ = false;
  uint64_t step_ = 0;
  bool eval_ = false;
  std::vector<PassKey> passes_;
  size_t stage_ = 0;          // 0: the batch in; then passes_[stage_ - 1]
  bool credited_ = false;     // the current pass's start has been sent
  uint64_t weights_step_ = 0; // the weights' version the streams carry
  Cycle busy_ = 0;            // the wafer is busy until then
  SpanId last_span_ = kNoSpan;
  std::vector<DecodedStream> retained_;  // the last layer's forward streams, for its backward pass
};

}  // namespace wse
