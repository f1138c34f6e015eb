#pragma once
// The fabric of one wafer: routers (created only where a route is set), the links between them
// and to their PEs, and the edge ports. Routes are set first, then finalize() validates them and
// builds the links for a given partition into worker blocks.
#include <deque>
#include <cstddef>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "fabric/edge_port.hpp"
#include "fabric/link.hpp"
#include "core/machine_spec.hpp"
#include "fabric/partition.hpp"
#include "fabric/route.hpp"
#include "fabric/router.hpp"

namespace wse {

class Mesh {
 public:
  Mesh(const MachineSpec& spec, MeshShape shape);

  const MachineSpec& spec() const { return spec_; }
  MeshShape shape() const { return shape_; }

  // Throws RouteError for a tile off the mesh, a colour beyond the spec, or a second rx
  // direction for a colour at one router.
  void set_route(Coord tile, Colour colour, Route route);
  // Switch positions 1.. for a colour already routed at `tile` (position 0 is its route). Throws
  // RouteError beyond the spec's positions, or for a position naming both rx and tx on a machine
  // whose positions name one side only (WSE-2).
  void set_switch(Coord tile, Colour colour, const ColourSwitchConfig& positions);
  // A counter filter on a colour routed at `tile` to its PE. Throws RouteError beyond the spec's
  // filters per router.
  void set_filter(Coord tile, Colour colour, const CounterFilter& filter);
  void clear_filter(Coord tile, Colour colour);
  // Back to every colour's base route and every filter's initial count (before a new kernel run).
  void reset_switches();
  // Every router's read positions into its queues (Router::publish_reads): after a run.
  void publish_reads();
  IngressPort& add_ingress(Coord tile, Dir side);
  EgressPort& add_egress(Coord tile, Dir side);

  // Validates every route against its neighbours and the edge ports, shares the off-wafer I/O
  // bandwidth among the ports, and builds the links for this partition. Throws RouteError.
  void finalize(const Partition& partition);
  // Between runs of a finalized mesh: the same links for another partition into worker blocks
  // (which hops cross between workers, which credits go straight back). What a queue still
  // holds is read at the next step.
  void repartition(const Partition& partition) { assign_notes(partition); }

  // How many cycles ahead of the others a worker may step each tile (CycleEngine's run-ahead),
  // for the partition of the last finalize() or repartition(): per tile, its distance in hops
  // from the nearest tile of its worker that has a hop to or from another worker's tile, at most
  // kRunAheadLevels. A tile at distance d reads at cycle c + d only what tiles of its own worker
  // wrote by then: anything from another worker takes a cycle a hop at least to come d hops in.
  // Without such tiles (one worker), kRunAheadLevels.
  static constexpr uint8_t kRunAheadLevels = 4;
  std::span<const uint8_t> band_depths() const { return depth_; }
  // Whether `partition` is the one the links were last assigned for (finalize, repartition):
  // the depths above and which credits go straight back hold for that one only.
  bool assigned_for(const Partition& partition) const { return partition.owner == assigned_owner_; }

  // Shares `bytes_per_cycle` of off-wafer I/O evenly among the ingress ports that have a stream,
  // and among the egress ports that carry something (EgressPort::set_carries; every port unless
  // the kernel says otherwise; 0 = every port at link rate). finalize() does this with the
  // spec's figure; call again when a later run uses other ports.
  void share_io_bandwidth(double bytes_per_cycle);

  Router* router(TileId t) { return routers_[t]; }
  const Router* router(TileId t) const { return routers_[t]; }
  // When every tile has a router and they lie side by side in tile order (a mesh of at most one
  // block of routers, routed in tile order, as a row is), the first of them, else null (set at
  // finalize). A tile's router is then its number past that one, found without loading
  // routers_[t]: a load fewer at the head of every step's chain of loads (docs/performance-
  // history.md, twenty-fifth round). Routers never move and a mesh that has one on every tile
  // makes no more, so it stays true.
  Router* dense_routers() const { return dense_; }
  // Empty, or the first change since finalize() that the links were not built for: a route set
  // on a finalized mesh (a new colour at a router, or a tx set grown), or switch positions that
  // reach a port the route did not. Until finalize() runs again a wafer refuses to run
  // (Wafer::run), where it would have sent wavelets over links that do not exist. (A filter, or a
  // switch within the route's ports, is taken between runs: Mesh::derive_lanes.)
  const std::string& stale() const { return stale_; }
  std::span<const Link> links() const { return {links_.get(), link_count_}; }
  std::span<Link> links() { return {links_.get(), link_count_}; }
  // What a wake from another worker carries across a hop between two bands (Scheduler::post_flit,
  // post_credit), into that link's queue: called by the worker that reads the queue. Returns the
  // tile to wake for it: the hop's dst for a wavelet, its src for a credit.
  TileId deliver(const Wake& w) {
    if (w.carries() == Wake::kFlit) {
      Link& s = shadows_[w.to]->link;
      s.flits.push(Flit::of(w.cycle(), w.payload, w.key()));
      return s.dst;
    }
    Link& l = links_[w.to];
    l.credits.push({w.cycle(), Colour(w.key())});
    return l.src;
  }
  const std::deque<IngressPort>& ingress_ports() const { return ingress_; }
  std::deque<IngressPort>& ingress_ports() { return ingress_; }
  const std::deque<EgressPort>& egress_ports() const { return egress_; }
  std::deque<EgressPort>& egress_ports() { return egress_; }

  // Capacity of a lane whose wavelets arrive over a link of this latency (0 = edge ingress).
  uint32_t lane_capacity(uint32_t latency) const { return spec_.router_buffer_depth + latency; }
  uint32_t pe_queue_capacity() const { return spec_.pe_input_queue_depth + spec_.ramp_latency_cycles; }

 private:
  void validate() const;
  void build_links(const Partition& partition);
  // For this partition: whom each queue's push notes, which hops cross between workers (and
  // their shadows), which credits go straight back (fabric/link.hpp).
  void assign_notes(const Partition& partition);
  // What assign_notes works out from a router's lanes (Lane::sole_out, credit_back, pass_here, the
  // in ports' keys), again. A lane given a switch or a filter on a finalized mesh, between runs
  // (FcWafer::keep_window's filters), is no longer plain: its port's key said it was, and a
  // wavelet passed by the filter it should have met (a review, forty-seventh round).
  void derive_lanes(Router& r);
  struct LanesChanged {  // on leaving set_switch / set_filter, once the lane has its ext
    Mesh& mesh;
    Router& router;
    ~LanesChanged() {
      if (mesh.links_) mesh.derive_lanes(router);  // (before finalize, assign_notes will)
    }
  };
  std::string where(Coord c, Colour colour) const;
  void note_stale(const std::string& what);
  std::string stale_;  // stale()

  MachineSpec spec_;
  MeshShape shape_;
  // Routers are made in blocks, side by side in the order their first routes are set (mostly
  // tile order): a line-aligned heap block apiece cost a quarter more than the router itself
  // (712 bytes for 576) and scattered a worker's routers among everything else set up.
  Router* new_router();
  static constexpr size_t kRouterBlock = 4096;
  std::unique_ptr<LanePool> lane_pool_ = std::make_unique<LanePool>();  // before the routers: they give lanes back
  std::vector<Router*> routers_;  // per tile, null where no route is set
  Router* dense_ = nullptr;       // dense_routers()
  std::vector<std::unique_ptr<Router[]>> router_blocks_;
  size_t block_size_ = 0, next_in_block_ = 0, routers_made_ = 0;
  std::vector<uint8_t> depth_;       // per tile (assign_notes: band_depths)
  std::vector<uint16_t> assigned_owner_;  // the partition assign_notes was last given
  void find_band_depths(const Partition& partition);
  // Every link, in tile order (finalize()), and the block their queues' rings live in.
  std::unique_ptr<Link[]> links_;
  size_t link_count_ = 0;
  struct alignas(64) RingLine {
    std::byte bytes[64];
  };
  std::unique_ptr<RingLine[]> rings_;
  // Per hop between two workers' bands under the partition assign_notes was last given, the
  // link its dst reads the wavelets from (Link::shadow), folded back into the hop when the
  // partition changes. Each on a 128-byte block of its own: the pair of lines the host's
  // prefetchers fetch together holds no line of the other worker's.
  struct alignas(128) Shadow {
    Link link;
  };
  std::vector<std::unique_ptr<Shadow>> shadows_;
  void fold_shadows();
  std::deque<IngressPort> ingress_;
  std::deque<EgressPort> egress_;
};

}  // namespace wse
