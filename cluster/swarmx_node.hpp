#pragma once
// A SwarmX broadcast-reduce node (1:fanout) as an actor. Down the tree it forwards what MemoryX
// sends (weight streams, the rest of a stream) to every child, the same immutable buffers, each
// on its own link. Up the tree it waits for every child and sends one message on: gradients
// summed in child order at line rate (cut-through: the sum leaves as the children's arrive),
// losses summed, and a pass's start (the latest child's) for MemoryX's flow control.
#include <map>
#include <optional>
#include <vector>

#include "cluster/actor.hpp"

namespace wse {

// What every actor checks messages against: the model's layers and the number of wafers.
struct ClusterShape {
  uint32_t wafers = 1;
  struct Layer {
    std::string name;
    uint32_t rows = 0, cols = 0;  // (in + 1) x out: the bias is the last row
  };
  std::vector<Layer> layers;
};

class SwarmXNode : public Actor {
 public:
  SwarmXNode(std::string name, const ClusterShape& shape) : Actor(std::move(name)), shape_(shape) {}
  // `children` in the order their sums are added; `to_user` only for the root (losses go there).
  void wire(LinkId up, std::vector<LinkId> down, std::vector<ActorId> children, std::optional<LinkId> to_user) {
    up_ = up, down_ = std::move(down), children_ = std::move(children), to_user_ = to_user;
  }
  std::string waiting_on() const override;

 protected:
  void receive(const Message& m) override;

 private:
  void from_parent(const Message& m);
  void from_child(const Message& m, size_t child);
  void reduce_gradients(uint64_t step, uint32_t layer, std::vector<Message>& got);
  void reduce_losses(uint64_t step, std::vector<Message>& got);
  void reduce_credits(uint64_t step, std::vector<Message>& got);

  const ClusterShape& shape_;
  LinkId up_ = 0;
  std::vector<LinkId> down_;
  std::vector<ActorId> children_;
  std::optional<LinkId> to_user_;
  // What the children sent that waits for the rest of them, by (kind, step, layer, pass).
  std::map<std::tuple<int, uint64_t, uint32_t, bool>, std::vector<Message>> waiting_;
};

}  // namespace wse
