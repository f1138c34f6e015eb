#pragma once
// The router of one tile: a lane per routed colour, links to its neighbours and its PE, and the
// per-output round-robin arbiter. Stepped in two halves each cycle: ingest() takes in what has
// arrived by now, forward() moves at most one wavelet onto each output link. (A wavelet that no
// arbitration can hold back, reaching an empty lane alone on its output, goes on from ingest()
// without entering the lane: a pass-through, Lane::sole_out.)
//
// A colour may also carry switch positions and a counter filter (fabric/colour_switch.hpp);
// those lanes keep their extra state in `ext`, so plain lanes pay nothing for them.
#include <array>
#include <bit>
#include <cstdint>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "fabric/colour_switch.hpp"
#include "fabric/edge_port.hpp"
#include "fabric/lane.hpp"
#include "fabric/lane_pool.hpp"
#include "fabric/link.hpp"
#include "fabric/route.hpp"
#include "fabric/scheduler.hpp"

namespace wse {

// Switch and filter state of one lane.
struct LaneExt {
  bool has_switch = false, has_filter = false;
  ColourSwitchConfig sw;
  Dir base_rx = Dir::Ramp;
  uint8_t base_tx = 0;
  uint8_t position = 0;     // current switch position (0 = the base route)
  uint8_t rx_union = 0;     // every rx any position names (bit set of Dir)
  uint8_t tx_union = 0;     // every tx any position names
  Dir prev_rx = Dir::Ramp;  // after an rx switch: where the wavelets still in the lane came from ...
  uint8_t prev_count = 0;   // ... and how many of them (their credits go back there)
  CounterFilter filter;
  uint32_t counter = 0;
  uint64_t advances = 0;    // switch advances applied (for tests and traces)
  // Wavelets that arrived from an input the switch does not take yet, in arrival order. They
  // wait here, in the colour's own buffer, so they hold up neither their link nor other colours;
  // they join the lane when the switch turns to their input. Their sender's credits bound them.
  static constexpr uint32_t kHeld = Lane::kSlots;  // at least a sender's credits (its lane's capacity)
  Dir held_from = Dir::Ramp;
  uint8_t held_count = 0;
  std::array<uint32_t, kHeld> held{};
  std::array<uint8_t, kHeld> held_flags{};
};

// Laid out for the step: the first cache line holds the lanes' base, the round-robin state, the
// link masks and the sleep state; the second what each output wants and the colour -> lane
// table; then a line of ports per direction (an in link and the opposite out link, each with
// where this router reads the link's queue). A step reads the first two lines and the port
// lines its lanes use (and its lanes and links); the cold rest follows.
class alignas(64) Router {
 public:
  LaneVector lanes;  // from its mesh's LanePool

 private:
  uint32_t blocked_lanes_ = 0;  // lanes whose head waited for a credit after the last step

 public:
  // Lane granted last, per output. In the first line: a pass-through (ingest_hop()) writes it on
  // every hop and reads nothing else of the second (one L1 miss a hop fewer on a long row:
  // docs/performance-history.md, forty-ninth round).
  std::array<uint8_t, kDirs> rr{};

 private:
  uint8_t blocked_links_ = 0;  // outputs with a wavelet waiting for a credit after the last step

 public:
  uint8_t credit_links = 0;   // directions with an outgoing link that returns credits
  // The links a push has noted as holding something since the last step (LinkQueue::set_note:
  // every queue is pushed by the worker that steps its reader, a hop between two workers' bands
  // from that worker's mail, Link::cross_worker). poll_credits carries only kIngressPolled, when
  // an edge ingress port feeds the router, so that maybe_ingest()'s one test of the masks sends
  // it to ingest_links(), which feeds from the port. (Until the fifty-second round the hops from
  // another worker were polled, a bit each in poll_in, which stays: the four bytes are one word.)
  uint8_t poll_in = 0, poll_credits = 0;
  uint8_t noted_in = 0, noted_credits = 0;
  bool has_ingress = false;
  static constexpr uint8_t kIngressPolled = 0x80;  // above every direction's bit

 private:
  uint8_t wanted_ = 0;  // outputs whose want_ is not empty

 public:
  // The tile's PE has a program: a copy of Wafer's flag, made at each run's start, beside
  // wanted_ so that a step whose router wants no output and whose PE has nothing to run ends
  // on one test of both (step_rest()).
  uint8_t pe_programmed = 0;

 private:
  // kAsleep: the last forward() left every waiting head blocked on a credit (nothing but a credit
  // or a new head can change that); kWoken: this step took a credit or made a new head.
  static constexpr uint8_t kAsleep = 1, kWoken = 2;
  uint8_t sleep_ = 0;
  Cycle last_step_ = kNever;
  // (The second line: forward() reads it; a hop that passes through does not.)
  std::array<uint32_t, kDirs> want_{};  // per output: lanes whose head still has to go there

 public:
  std::array<int8_t, MachineSpec::kMaxColours> lane_of;  // colour -> index in lanes, -1 if unrouted

  // Late credits (Lane::kLateBack). A hop inside one worker's band whose dst may be stepped
  // before its src within a cycle (a hop west or north, whose dst comes first in tile order; a
  // hop into a tile deeper in the band, which the run-ahead steps first) cannot hand its credits
  // straight into src's lane: src, stepped later in the same cycle, would see one a cycle early.
  // They went through the link's credit queue, stamped with the cycle they become visible; since
  // the fifty-sixth round dst notes them here, at src, per parity of the cycle it returned them
  // in (late_back()), and src folds in the other parity's at its next step (fold_late()): a
  // neighbour inside a band is never two cycles ahead of src (one worker steps a cycle's tiles
  // before the next cycle's; the run-ahead steps a tile at c + m only once every tile has
  // finished c and only tiles m or more hops inside, so neighbours are at most a cycle apart),
  // and each return wakes src for the next cycle, whose step folds it in. So at src's step at c,
  // the credits returned at c - 1 are the visible ones, those returned at c the only others.
  // The saturated row run east to west: 1.4x faster (docs/performance-history.md, fifty-sixth round).
  //
  // kLateNote, in noted_in above every direction's bit, sends src's step through ingest_late()
  // (or ingest_links()), which fold first. An entry is a lane's index << 3 | the direction the
  // credit is toward. A plain lane pops at most one wavelet a cycle, so one cycle's entries are
  // at most the lanes that may return late credits here, which Mesh::assign_notes keeps within
  // kLateSlots (late_refused).
  static constexpr uint8_t kLateNote = 0x20;
  static constexpr uint8_t kLateSlots = 5;

 private:
  // In the second line, beside lane_of, which late_back() reads at the same time.
  uint8_t late_[2][kLateSlots];
  uint8_t late_n_[2] = {};

 public:
  // Folds in the late credits returned at now - 1; whether some returned at now still wait.
  bool fold_late(Cycle now) {
    const size_t p = size_t(~now & 1);
    fold_parity(p);
    return late_n_[p ^ 1] != 0;
  }
  // Between runs (publish_reads(), Mesh::assign_notes): every late credit, all of them visible
  // by the next run's first cycle.
  void fold_all_late() {
    fold_parity(0), fold_parity(1);
    noted_in &= uint8_t(~kLateNote);
  }

 private:
  // The late credits returned in cycles of parity p, into their lanes.
  void fold_parity(size_t p) {
    if (const uint32_t n = late_n_[p]) {
      for (uint32_t k = 0; k < n; ++k) {
        const uint8_t e = late_[p][k];
        ++lanes[size_t(e >> 3)].credits[e & 7];
      }
      late_n_[p] = 0;
      sleep_ |= kWoken;  // (as a credit taken from a queue: forward() looks again)
    }
  }

 public:
  // Each link, per direction and way, next to where this router reads its queue (the credits of
  // an outgoing link, the wavelets of an incoming one), so the next entry's address is known
  // without the link's line (LinkQueue::Reader). Links set by Mesh::build_links, readers by
  // Mesh::assign_notes; only this router pops these queues.
  struct OutPort {
    Link* link = nullptr;
    LinkQueue<Credit>::Reader credits;
  };
  struct InPort {
    Link* link = nullptr;
    LinkQueue<Flit>::Reader flits;
    // The lane the last wavelet from this link joined (or passed through): the next one's,
    // mostly. ingest() loads that lane beside the wavelet, where finding it through the
    // wavelet's colour would wait for the wavelet first (a dependent load on every hop).
    // lane_at is &lanes[lane] while hop_key is a key (set together by aim()), so that
    // ingest_hop() loads the lane's address where it worked it out from the index (a lane is
    // three lines: three instructions a hop fewer, fiftieth round). A router's lanes move only
    // when a route is added, which a run refuses until finalize() aims every port again.
    Lane* lane_at = nullptr;
    uint8_t lane = 0;
    // The colour and flags (as Flit::key()) of a wavelet that lane takes on ingest_hop()'s path:
    // the lane's colour with no flags, if the lane is plain and receives from this link (a plain
    // lane's rx never changes during a run); kNoKey otherwise. One compare there stands for the
    // four tests of the wavelet's colour and flags and the lane's rx and plainness. Worked out by
    // aim() whenever the port turns to a lane, and again for each port of a router one of whose
    // lanes is given a switch or a filter between runs (Mesh::derive_lanes).
    uint16_t hop_key = kNoKey;
  };
  static constexpr uint16_t kNoKey = 0xffff;  // no wavelet's key: colours are below 256, flags below 4
  // Port d's lane is lanes[i] (and its hop_key follows).
  void aim(InPort& port, Dir d, size_t i) {
    port.lane = uint8_t(i);
    Lane& l = lanes[i];
    port.lane_at = &l;
    port.hop_key = l.ext < 0 && l.rx == d ? Flit::key_of(l.colour, 0) : kNoKey;
  }
  // A cache line per direction d: the in link from d beside the out link toward d's opposite (the
  // RAMP's beside the RAMP's), the two ports of a wavelet going straight through. A hop's step
  // then reads one line of ports where it read two (docs/performance-history.md, eleventh round).
  struct alignas(64) Ports {
    InPort in;
    OutPort out;
  };
  static_assert(sizeof(Ports) == 64, "a direction's two ports are one cache line");
  InPort& in_port(Dir d) { return ports_[size_t(d)].in; }    // from rx sources (hops, ramp-up)
  OutPort& out_port(Dir d) { return ports_[size_t(opposite(d))].out; }  // toward tx targets
  const InPort& in_port(Dir d) const { return ports_[size_t(d)].in; }
  const OutPort& out_port(Dir d) const { return ports_[size_t(opposite(d))].out; }
  Link* out_link(Dir d) const { return out_port(d).link; }
  Link* in_link(Dir d) const { return in_port(d).link; }
  void clear_ports() { ports_.fill({}); }

 private:
  std::array<Ports, kDirs> ports_{};

 public:

  std::vector<LaneExt> ext;
  std::array<IngressPort*, kMeshDirs> ingress{};
  std::array<EgressPort*, kMeshDirs> egress{};  // the port behind each egress out link (never the RAMP)
  uint8_t in_links = 0;       // directions with an incoming link (set by Mesh::build_links)
  // Set by Mesh::assign_notes when more of its neighbours' lanes could return late credits here
  // in one cycle than late_ holds (kLateSlots): theirs go through the links' queues instead.
  bool late_refused = false;
  Coord where;                // for error messages
  TileId tile = 0;            // where's number: ingest_hop()'s fallback, which is not given it

  Router() {
    lane_of.fill(-1);
    // maybe_ingest() reads poll_in .. noted_credits as one word (folded away when it holds).
    if (reinterpret_cast<uintptr_t>(&noted_credits) - reinterpret_cast<uintptr_t>(&poll_in) != 3)
      throw std::logic_error("Router: the four link masks are not side by side");
    // A hop reads and writes the first line only (see the layout above).
    const auto in_first_line = [this](const void* field, size_t size) {
      return reinterpret_cast<uintptr_t>(field) + size - reinterpret_cast<uintptr_t>(this) <= 64;
    };
    if (reinterpret_cast<uintptr_t>(&pe_programmed) - reinterpret_cast<uintptr_t>(&wanted_) != 1)
      throw std::logic_error("Router: wanted_ and pe_programmed are not side by side");
    if (reinterpret_cast<uintptr_t>(&late_n_[1]) + 1 - reinterpret_cast<uintptr_t>(this) > 128)
      throw std::logic_error("Router: the late credits left the second cache line");
    if (!in_first_line(&rr, sizeof rr) || !in_first_line(&sleep_, 1) || !in_first_line(&noted_credits, 1))
      throw std::logic_error("Router: the round-robin state, link masks or sleep state left the first cache line");
  }

  Lane* lane(Colour c) { return lane_of[c] < 0 ? nullptr : &lanes[size_t(lane_of[c])]; }
  const Lane* lane(Colour c) const { return lane_of[c] < 0 ? nullptr : &lanes[size_t(lane_of[c])]; }
  LaneExt* lane_ext(Colour c) {
    Lane* l = lane(c);
    return l && l->ext >= 0 ? &ext[size_t(l->ext)] : nullptr;
  }
  const LaneExt* lane_ext(Colour c) const {
    const Lane* l = lane(c);
    return l && l->ext >= 0 ? &ext[size_t(l->ext)] : nullptr;
  }
  LaneExt& make_ext(Lane& l) {
    if (l.ext < 0) {
      l.ext = int8_t(ext.size());
      l.ring = uint8_t(Lane::kSlots);
      LaneExt e;
      e.base_rx = l.rx, e.base_tx = l.tx;
      ext.push_back(e);
    }
    return ext[size_t(l.ext)];
  }
  // Every rx / tx a lane may use, over all its switch positions.
  uint8_t rx_union(const Lane& l) const { return l.ext >= 0 ? ext[size_t(l.ext)].rx_union : bit(l.rx); }
  uint8_t tx_union(const Lane& l) const { return l.ext >= 0 ? ext[size_t(l.ext)].tx_union : l.tx; }

  // One cycle in three calls, inline so a tile woken for its PE alone pays a few tests:
  // maybe_ingest() (the ingest half, only when a link may hold something or a port feeds the
  // router) moves arrived wavelets into lanes (or, a pass-through, on to their output at once),
  // returned credits into lane credit counts, and lets edge ingress ports feed their lanes;
  // then, when step_rest() finds anything left to do, begin_step() counts the cycles slept
  // through since the last step, and forward() (only when some head waits to leave) arbitrates
  // each output and forwards, pops heads whose every tx copy has left, and sleeps a router
  // whose lanes can only wait for credits until a credit wakes it.
  //
  // begin_step() may come after the ingest, and only when step_rest() holds: the ingest neither
  // reads nor writes what it does (last_step_, the blocked masks, backpressure counts: only
  // forward() blocks or unblocks), and a router with a blocked lane always wants an output (the
  // lane's head waits for one; wanted_ is emptied only by forward(), which clears the blocked
  // state in the same step, or by reset_step_state()). So a hop with nothing else to do skips
  // its test (fiftieth round).
  //
  // Skipping forward() is exact in two cases. No head waits: the blocked state it would clear is
  // already clear (it is only set when a head waits, and only forward() lets heads go). Every
  // head was blocked on a credit at the last forward() and this step took no credit and made no
  // new head (the tile was stepped for its PE, or a wavelet joined a lane behind its head):
  // forward() would find the same heads blocked and count one more cycle of backpressure on the
  // same lanes and links, which is what catch_up() counts for a cycle slept through, so the cycle
  // is left to it.
  //
  // A router that blocks nothing writes nothing here. last_step_ is read only while some lane is
  // blocked (catch_up()), and lanes are blocked only by forward(), which sets it; kWoken is read
  // only by may_forward() when some output is wanted, and an output is wanted anew only by a new
  // head, which sets kWoken itself, while forward() clears it: one left over from a step that
  // wanted nothing changes no decision. (Two stores a step fewer: forty-eighth round.)
  void begin_step(Cycle now) {
    catch_up(now);
    if (blocked_lanes_) last_step_ = now;
  }
  // The ingest half, when a link may hold something or a port feeds the router. The four link
  // masks lie side by side (checked in Router()): one load reads them all, for the test and for
  // the choice of path (bytes 1 and 3 are the credits', 0 and 2 the wavelets').
  void maybe_ingest(TileId self, Cycle now, Scheduler& s) {
    uint32_t masks;
    std::memcpy(&masks, &poll_in, sizeof masks);
    static_assert(std::endian::native == std::endian::little, "the link masks are read as one little-endian word");
    // The hop of a busy route (no credit to take, no port) has its own short function; what it
    // leaves goes to ingest_links() through one call, not two. (Given the in links as an argument,
    // it took 4 instructions fewer and its caller 5 more.)
    if (!(masks & 0xff00ff00u)) {  // (an ingress port is a bit of poll_credits: kIngressPolled)
      if (masks) ingest_hop(now, s);
    } else {
      ingest_links(self, now, s);
    }
  }
  // Whether the rest of a step (the PE, forward()) may have anything to do: some output is wanted
  // or the PE has a program. One 16-bit load of the two bytes.
  bool step_rest() const {
#ifdef WSE_CHECK_INVARIANTS
    if (blocked_lanes_ && !wanted_) throw std::logic_error("router " + to_string(where) + ": a lane blocked with no output wanted");
#endif
    uint16_t both;
    std::memcpy(&both, &wanted_, sizeof both);
    return both != 0;
  }
  bool may_forward(Cycle now) {
    if (!wanted_) return false;
    if (sleep_ != kAsleep) return true;
    last_step_ = now - 1;  // still blocked, nothing changed: this cycle counts as slept through
    return false;
  }
  // (Sets last_step_ first: the lanes it blocks are counted from this step.)
  void forward(TileId self, Cycle now, Scheduler& s);
  // What a run stopped at its cycle limit left in this router, which the next run's agenda (empty
  // at its start) must wake it for: `wake(c)` for each cycle it has to be stepped at, from `now`
  // on: now for a wavelet in a lane, and the cycle each wavelet on an in link arrives or each
  // credit on an out link becomes visible (the wakes their senders made went with that run).
  template <class Wake>
  void left_over(Cycle now, Wake&& wake) const {
    for (const Lane& l : lanes)
      if (l.count || (l.ext >= 0 && ext[size_t(l.ext)].held_count)) wake(now);
    for (const Ports& q : ports_)
      if (const InPort& p = q.in; p.link)
        for (auto r = p.flits; p.link->flits.holds(r); ++r.head) wake(std::max(now, r.at().arrival));
    for (int d = 0; d < kDirs; ++d)
      if (credit_links & (1u << d))
        for (auto r = out_port(Dir(d)).credits; out_link(Dir(d))->credits.holds(r); ++r.head) wake(std::max(now, r.at().visible));
  }
  // Stores where this router reads each queue into the queue (LinkQueue::publish): after a run,
  // so that what reads a queue between runs (a new Reader, a test) starts where it stands.
  void publish_reads() {
    fold_all_late();
    for (Ports& q : ports_) {
      if (q.in.link && q.in.flits.ring) q.in.link->flits.publish(q.in.flits);
      if (q.out.link && q.out.credits.ring) q.out.link->credits.publish(q.out.credits);
    }
  }
  // What this router's lanes hold and wait for, a line each (for a hang diagnosis), for a run
  // that stopped at `end` (the first cycle it did not step).
  std::vector<std::string> waiting_on(Cycle end) const;
  // Counts the backpressure of the cycles slept through up to `end` (the end of the run).
  void settle(Cycle end) {
    catch_up(end);
    if (last_step_ != kNever && last_step_ + 1 < end) last_step_ = end - 1;  // counted up to end
  }
  void reset_step_state() {
    last_step_ = kNever, blocked_lanes_ = 0, blocked_links_ = 0, sleep_ = 0;
    want_.fill(0);
    wanted_ = 0;
  }
  // Back to the base route, counters of filters restarted (a new kernel run on the same routes).
  void reset_switches();

 private:
  // Cycles between the last step and `now` were slept through with the blocked state of the last
  // step unchanged (any credit or wavelet would have woken the router): count them. The test is
  // inline (a router stepped on consecutive cycles, the common case, returns at once).
  void catch_up(Cycle now) {
    // (A blocked link always has a blocked lane, and either is set only by a step, after
    // last_step_: one test for the common case, a router that blocks nothing.)
#ifdef WSE_CHECK_INVARIANTS
    if (blocked_links_ && !blocked_lanes_) throw std::logic_error("router " + to_string(where) + ": a link blocked without a lane");
#endif
    if (blocked_lanes_ && now > last_step_ + 1) count_slept(now);
  }
  void count_slept(Cycle now);
  // A lane's new head: decide where it goes and want those outputs. A head that a filter keeps
  // from every target is dropped on the spot (its credit returns upstream).
  void add_head(size_t i, TileId self, Cycle now, Scheduler& s) {
    sleep_ |= kWoken;
    Lane& l = lanes[i];
    if (l.ext < 0 && !l.front_control()) {
      l.pending = l.tx;
      want(l.tx, i);
      return;
    }
    special_head(i, self, now, s);
  }
  void special_head(size_t i, TileId self, Cycle now, Scheduler& s);
  // ingest() when no credit is to be taken and no port feeds the router: its one-link fast
  // path, else ingest_links().
  // (Without the tile's number, which only its fallback needs (Router::tile): two moves of
  // arguments a hop fewer, fiftieth round.)
  [[gnu::noinline]] void ingest_hop(Cycle now, Scheduler& s);
  // ingest_hop()'s step from in link kFrom, the one link its masks name.
  // False: the step is not a plain hop, left to ingest_links() untouched.
  template <int kFrom, bool kLate>
  [[gnu::always_inline]] inline bool hop_from(Cycle now, Scheduler& s);
  // hop_from() for the one link that in_m, a mask of in links, names: false for several (or when
  // hop_from() leaves the step to ingest_links()), and for none kLate (ingest_late(), whose late
  // credits were the step's whole ingest).
  template <bool kLate>
  [[gnu::always_inline]] inline bool hop_one(uint32_t in_m, Cycle now, Scheduler& s);
  // ingest_hop() when late credits wait (kLateNote): folds them in, then as ingest_hop(), with
  // a pass-through whose credit goes back late as well.
  [[gnu::noinline]] void ingest_late(Cycle now, Scheduler& s);
  // ingest() beyond its one-link fast path: every link that may hold something, the credits
  // returned, the edge ingress ports.
  [[gnu::noinline]] void ingest_links(TileId self, Cycle now, Scheduler& s);
  // ingest_links()'s general loop over the in links in `in_m` (each from where its reader stands), then
  // the edge ingress ports.
  void ingest_from(uint32_t in_m, TileId self, Cycle now, Scheduler& s);
  // Hands each wavelet of in link d that has arrived by now to `take`, in order, pops them and
  // notes the link if it holds what is not visible yet (ingest_from(); ingest_links()'s common path
  // reads its links itself, popping each wavelet before it acts on it).
  template <class Take>
  [[gnu::always_inline]] inline void take_arrived(int d, Cycle now, Take&& take);
  // The credits returned on the out links in `credit_m` and visible by now, into the lanes'
  // counts. Always inlined: ingest() then calls nothing on its common path.
  [[gnu::always_inline]] inline void take_credits(uint32_t credit_m, Cycle now);
  // Each edge ingress port at this router hands its next wavelet to its lane when the port's
  // rate allows and the lane has room and receives from that side; the port is woken again for
  // its next one.
  void feed_from_ingress(TileId self, Cycle now, Scheduler& s);
  // A wavelet from `from`, which the colour's current switch position does not receive from.
  void hold(size_t i, Dir from, uint32_t payload, uint8_t flags);
  // A plain wavelet into plain lane i; a new head goes where the route sends it.
  void push_plain(Lane& lane, size_t i, uint32_t payload) {
    if (lane.push(payload)) {
      sleep_ |= kWoken;
      lane.pending = lane.tx;
      want(lane.tx, i);
    }
  }
  void push(size_t i, uint32_t payload, uint8_t flags, TileId self, Cycle now, Scheduler& s) {
    Lane& l = lanes[i];
    if (l.ext >= 0 && l.count == l.cap) overflow(l);
    if (l.push(payload, flags)) add_head(i, self, now, s);
  }
  // forward() beyond its unicast fast path: every wanted output arbitrated, finished heads popped,
  // then sleep_or_wake(). Out of line, so the fast path keeps its state in registers.
  [[gnu::noinline]] void forward_general(TileId self, Cycle now, Scheduler& s);
  // forward_general() when one plain lane wants every wanted output and they all return credits.
  void forward_one_lane(Lane& lane, size_t i, TileId self, Cycle now, Scheduler& s);
  // The fast path's lane has a next head for another route (or a special one).
  [[gnu::noinline]] void next_head(size_t i, TileId self, Cycle now, Scheduler& s);
  // After forward(): wake next cycle if some head can go then, else sleep (the blocked state).
  void sleep_or_wake(TileId self, Cycle now, Scheduler& s);
  // The head has left (or was filtered away): pop it, return its credit, apply its switch effect.
  void finish_head(size_t i, TileId self, Cycle now, Scheduler& s);
  // A wavelet of lane i leaves on output d, a link that returns credits: onto the link, one
  // credit toward d spent, the far end woken for its arrival, counted. (Its lane's own count
  // and the credit upstream are the caller's.)
  void send(Lane& lane, size_t i, int d, uint32_t payload, uint8_t flags, Cycle now, Scheduler& s) {
    send_on(out_link(Dir(d)), lane, i, size_t(d), payload, flags, now, s);
  }
  // The same, given output d's link. kDstNext: the caller knows link->dst_next (a latency of
  // one, dst woken by wake_next()), so neither is read (ingest_hop()).
  template <bool kDstNext = false>
  void send_on(Link* link, Lane& lane, size_t i, size_t d, uint32_t payload, uint8_t flags, Cycle now, Scheduler& s) {
    rr[d] = uint8_t(i);
    const Cycle arrival = kDstNext ? now + 1 : now + link->latency;
    const uint16_t key = Flit::key_of(lane.colour, flags);
    --lane.credits[d];
    if (kDstNext || link->dst_next) {
      link->flits.push(Flit::of(arrival, payload, key));
      s.wake_next(link->dst_place);
    } else if (link->cross_worker) {
      s.post_flit(link->dst, link->shadow, arrival, payload, key);
    } else {
      link->flits.push(Flit::of(arrival, payload, key));
      s.schedule(link->dst, arrival);
    }
    ++link->counters.wavelets;
  }
  void return_credit(const Lane& lane, Dir from, TileId self, Cycle now, Scheduler& s) {
    if (Link* up = in_link(from)) {
      if (lane.credit_back) return credit_back(lane, up, s);
      if (lane.pass_here & Lane::kLateBack) return late_back(lane, from, up, now, s);
      if (up->cross_worker) return s.post_credit(up->src, up->index, now + 1, lane.colour);
      up->credits.push({now + 1, lane.colour});
      if (up->same_worker) s.wake_next(up->src);
      else s.schedule(up->src, now + 1);
    } else {
      s.wake_next(self);  // the ingress port feeding this lane may push again
    }
  }
  // return_credit() on a hop that hands its credit straight back (lane.credit_back set), from
  // its in link `up`.
  void credit_back(const Lane& lane, const Link* up, Scheduler& s) {
    ++*lane.credit_back;
    up->credit_into->sleep_ &= uint8_t(~kAsleep);  // its forward() must look again (as a credit taken in ingest() makes it)
    // Mostly woken already: src was stepped before this router this cycle, and so was its
    // own upstream, whose wavelet to src wakes it for the next cycle (a busy route).
    s.wake_next_unless_due(up->src);
  }
  // return_credit() on a hop whose credits go back late (Lane::kLateBack), from its in link `up`
  // on side `from`: noted at src for this cycle's parity (see kLateNote), src woken for the next
  // cycle, whose step folds it in. (Mostly not due then yet: src comes after this router.)
  void late_back(const Lane& lane, Dir from, const Link* up, Cycle now, Scheduler& s) {
    Router* src = up->credit_into;
    const size_t p = size_t(now & 1);
    const uint32_t n = src->late_n_[p];
#ifdef WSE_CHECK_INVARIANTS
    if (n == kLateSlots) throw std::logic_error("router " + to_string(src->where) + ": more late credits in a cycle than Mesh::assign_notes allowed");
#endif
    src->late_[p][n] = uint8_t(uint32_t(src->lane_of[lane.colour]) << 3 | uint32_t(opposite(from)));
    src->late_n_[p] = uint8_t(n + 1);
    src->noted_in |= kLateNote;
    s.wake_next(up->src);
  }
  void apply_switch(Lane& lane, LaneExt& e, SwitchCommand cmd, TileId self, Cycle now, Scheduler& s);
  void take_held(Lane& lane, LaneExt& e);
  [[noreturn]] void overflow(const Lane& lane) const;

  // Of the lanes in `cand`, those with a credit toward d. Most outputs have one lane waiting.
  uint32_t with_credit(uint32_t cand, int d) const {
    if (!(cand & (cand - 1))) return lanes[size_t(std::countr_zero(cand))].credits[d] ? cand : 0;
    uint32_t ok = 0;
    for (uint32_t m = cand; m; m &= m - 1) {
      const int i = std::countr_zero(m);
      if (lanes[size_t(i)].credits[d] > 0) ok |= 1u << i;
    }
    return ok;
  }
  // Lane i's head still has to go to each output in `outs`.
  void want(uint8_t outs, size_t i) {
    wanted_ |= outs;
    for (uint32_t m = outs; m; m &= m - 1) want_[size_t(std::countr_zero(m))] |= 1u << i;
  }
};

}  // namespace wse
