#pragma once
// One worker's agenda: which of its tiles must be stepped at which cycle.
//
// Almost every wake is for the next cycle or the one after (a credit, a hop, a RAMP crossing,
// a router or PE that can go on), so the near future is a ring of kNear bitmaps over the tiles,
// one per cycle, each with a summary word per 64 words: waking a tile there is setting a bit,
// a tile woken twice for one cycle is stepped once, and a cycle's tiles come out in tile order
// (neighbouring routers and PEs lie together in memory). Wakes further out go to a timing wheel
// of vectors and, beyond it, a heap; they join their cycle's bitmap when it comes. Nothing
// allocates in the steady state.
//
// Waking a tile another worker owns posts it to that worker's mailbox (one per ordered pair of
// workers), with the wavelet or credit that crosses to it, if any; the owner drains it at the
// start of its next cycle; the cycle is also noted so fast-forward cannot skip it.
#include <algorithm>
#include <atomic>
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <memory>
#include <new>
#include <queue>
#include <span>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "fabric/geometry.hpp"
#include "fabric/link_queue.hpp"
#include "fabric/wavelet.hpp"

namespace wse {

// A wake posted to another worker, and what crosses a hop between two workers' bands with it:
// the wavelet the hop carries to its dst's router, or the credit it returns to its src's. The
// owner puts that into the link's queue when it takes its mail (Scheduler::take_mail), so the
// queue is written and read by one worker's core alone, and a cycle's crossings travel together,
// four to a cache line, where each link's queue used to bring its own line or two over (its
// tail, its ring entry) at every step that read it (docs/performance-history.md, fifty-second
// round).
//
// Sixteen bytes: a wake that carries something names its hop, not the tile (the owner finds the
// tile from the hop: Mesh::deliver), and the cycle, the key and what it carries share a word.
// At 24 bytes a wake (a tile, a hop, a cycle each apart) the FC step's band edge, 16 crossings a
// cycle, took six lines a cycle where this takes four, each line moved between the cores twice
// (written by the poster, read by the owner: docs/performance-history.md, sixty-second round).
struct Wake {
  enum Carries : uint8_t { kNothing = 0, kFlit = 1, kCredit = 2 };
  static constexpr int kCycleBits = 48;  // a run's cycles stay far below 2^48 (Scheduler::post checks)
  static constexpr uint64_t kCycleMask = (uint64_t(1) << kCycleBits) - 1;
  static constexpr int kKeyBits = 14;    // a flit's key is below 2^10 (Flit::key_of), a credit's colour below 2^8
  // kNothing: the tile to wake. A flit: its hop's shadow (Mesh::deliver); a credit: its hop's
  // index in Mesh::links().
  uint32_t to = 0;
  uint32_t payload = 0;  // a flit's
  // When the tile is due (a flit's arrival, a credit's first visible cycle), in the low bits;
  // then the key (a flit's colour and flags, Flit::key_of, or a credit's colour); then what the
  // wake carries, in the top two bits.
  uint64_t word = 0;
  Wake() = default;
  Wake(uint32_t to_, Cycle c, Carries carries = kNothing, uint32_t payload_ = 0, uint16_t key = 0)
      : to(to_), payload(payload_), word(pack(c, carries, key)) {}
  static uint64_t pack(Cycle c, Carries carries, uint16_t key) {
    return c | uint64_t(key) << kCycleBits | uint64_t(carries) << (kCycleBits + kKeyBits);
  }
  Cycle cycle() const { return word & kCycleMask; }
  uint16_t key() const { return uint16_t(word >> kCycleBits & ((1u << kKeyBits) - 1)); }
  Carries carries() const { return Carries(word >> (kCycleBits + kKeyBits)); }
};
static_assert(sizeof(Wake) == 16 && std::is_trivially_destructible_v<Wake>, "a wake and what it carries: 16 bytes, four to a line");
static_assert(Flit::key_of(0xff, 3) < (1u << Wake::kKeyBits), "a flit's key fits a wake's key bits");

// The wakes one worker posts for another's tiles during a cycle, and what they carry. The poster
// writes the entries and its own count of them; it hands the count to the owner once a cycle,
// with its vote at the barrier (CycleBarrier::post), on the line the owner reads to see the vote,
// and the owner takes the entries up to it (take_until). The owner's read position is on a line
// of its own (with the owner's copies of the ring's size and place). So a cycle's posts cost the
// two cores a line for every two or three entries, where a tail stored at every post (a link
// queue's) had the owner's read of it, at the start of the next cycle while the poster was
// already posting again, take the line back from under each post (a wake with a flit or credit
// is posted for every wavelet crossing a band edge: docs/performance-history.md, fifty-second
// round), and a count on a line of its own, stored once a cycle, took a line each way more
// (sixtieth round). (A Boost.Lockfree spsc_queue did the same with each post reading the
// consumer's index as well: sixteenth round.)
class alignas(64) Mailbox {
 public:
  // `per_cycle`: the most one cycle can post. The owner drains a cycle's posts while the
  // poster makes the next cycle's, so the ring holds two cycles' worth.
  explicit Mailbox(size_t per_cycle)
      : mask_(std::bit_ceil(uint32_t(std::max<size_t>(2 * per_cycle, 2))) - 1),
        ring_(static_cast<Wake*>(::operator new[]((size_t(mask_) + 1) * sizeof(Wake), std::align_val_t{64}))),
        owner_mask_(mask_), owner_ring_(ring_.get()) {
    std::uninitialized_value_construct_n(ring_.get(), size_t(mask_) + 1);  // (lines of its own: no other heap block's)
  }
  Mailbox(const Mailbox&) = delete;
  Mailbox& operator=(const Mailbox&) = delete;
  // A wake's fields, stored straight into the ring (two words). A Wake made by the caller and
  // copied in is loaded whole (16 bytes) from the stores that made it, which cannot be forwarded
  // from several narrower ones: the load waits until they reach the cache, behind the posts
  // before them, whose ring lines the owner's core read last (a round trip between the cores).
  // Scheduler::post() took 2.4-2.9 times as long that way on the FC step at two threads
  // (docs/performance-history.md, fifty-third round).
  void post(uint32_t to, Cycle c, Wake::Carries carries, uint32_t payload, uint16_t key) {
    Wake& e = ring_[posted_++ & mask_];
    e.to = to, e.payload = payload, e.word = Wake::pack(c, carries, key);
  }
  // A wake made whole (tests, the benchmark): its packed word copied as it is, not unpacked to
  // be packed again.
  void post(const Wake& w) {
    Wake& e = ring_[posted_++ & mask_];
    e.to = w.to, e.payload = w.payload, e.word = w.word;
  }
  // The poster's count of its posts so far (wrapping), for its vote: what the owner may take
  // once the vote is in.
  uint32_t posted() const { return posted_; }
  // Every wake from the owner's last take up to the poster's count `tail`, in order, to `take`.
  template <class Take>
  void take_until(uint32_t tail, Take&& take) {
    if (tail - head_ > owner_mask_ + 1) [[unlikely]]
      throw std::logic_error("scheduler mailbox overflow (more wakes in two cycles than it was sized for)");
    for (; head_ != tail; ++head_) take(owner_ring_[head_ & owner_mask_]);
  }

 private:
  struct Free {
    void operator()(Wake* p) const { ::operator delete[](p, std::align_val_t{64}); }  // (trivially destructible)
  };
  uint32_t posted_ = 0;  // the poster's
  uint32_t mask_;
  std::unique_ptr<Wake[], Free> ring_;
  alignas(64) uint32_t head_ = 0;  // the owner's
  // The owner's copies of the ring's size and place, beside its read position: read from the
  // poster's line, beside the count it writes at every post, they took that line from the
  // poster's core once a cycle, and the poster's next post took it back.
  uint32_t owner_mask_;
  const Wake* owner_ring_;
  static void lines_apart() {  // (in a member, where the class is complete)
    static_assert(offsetof(Mailbox, owner_ring_) / 64 == offsetof(Mailbox, head_) / 64 &&
                      offsetof(Mailbox, head_) / 64 != offsetof(Mailbox, ring_) / 64,
                  "the poster's line and the owner's are two lines");
  }
};

class Scheduler {
 public:
  // Cycles base .. base+7 are bitmaps (base: the cycle all workers are on; the run-ahead steps
  // up to kNear / 2 cycles beyond it, and its wakes, mostly for the next cycle or the one after,
  // stay in the bitmaps), then vectors up to base+1023, then a heap.
  static constexpr uint32_t kNear = 8;
  static constexpr uint32_t kWheel = 1024;

  explicit Scheduler(size_t tiles)
      : words_(bitmap_words(fits(tiles))), summary_words_(bitmap_words(words_)), last_far_(tiles, kNever), wheel_(kWheel) {
    for (uint32_t k = 0; k < kNear; ++k) {
      near_store_[k].assign(summary_words_ + words_, 0);
      near_[k] = near_store_[k].data() + summary_words_;
    }
    next_ = near_[1];
  }
  // As constructed, for another run over as many tiles, keeping what it allocated: the wheel's
  // buckets grow as a run wakes tiles in them (about 2,750 allocations in each pass of an FC
  // step when every run built its scheduler anew; a hot-path audit of the forty-first round).
  void reset() {
    for (uint32_t k = 0; k < kNear; ++k) std::fill(near_store_[k].begin(), near_store_[k].end(), 0);
    std::fill(last_far_.begin(), last_far_.end(), kNever);
    if (wheel_pending_)
      for (std::vector<TileId>& bucket : wheel_) bucket.clear();
    while (!far_.empty()) far_.pop();
    owner_ = nullptr, me_ = 0, outbox_.clear(), inbox_.clear();
    remote_ = kNever, now_ = base_ = begun_end_ = 0, wheel_pending_ = 0;
    next_ = near_[1];
  }
  size_t tiles() const { return last_far_.size(); }
  Scheduler(const Scheduler&) = delete;  // near_ points into near_store_
  Scheduler& operator=(const Scheduler&) = delete;
  Scheduler(Scheduler&&) noexcept = default;  // a vector's buffer stays where it is when moved

  // Multi-worker runs: which worker owns each tile, who this is, and the mailbox toward each worker.
  void connect(const uint16_t* owner, uint16_t me, const std::vector<Mailbox*>& outbox, const std::vector<Mailbox*>& inbox) {
    owner_ = owner, me_ = me;
    outbox_.assign(outbox.begin(), outbox.end()), inbox_.assign(inbox.begin(), inbox.end());
  }

  Cycle now() const { return now_; }
  // Before the first cycle of a run that does not start at 0.
  void start_at(Cycle c) { now_ = base_ = begun_end_ = c, next_ = near_[(c + 1) % kNear]; }

  // Wakes tile t at cycle c >= now (c > now while the cycle's tiles are being stepped: every
  // latency is at least one cycle).
  void schedule(TileId t, Cycle c) {
    if ((!owner_ || owner_[t] == me_) && c - base_ < kNear) [[likely]] {
      mark(near_[c % kNear], t);
      return;
    }
    schedule_elsewhere(t, c);
  }
  // Wakes tile t, which this worker steps, at the next cycle: the commonest wake (a router that
  // can go on; a credit, or a hop of latency one, to a tile of this worker) without the tests.
  void wake_next(TileId t) { mark(next_, t); }
  // The same through a tile's place in the bitmaps, worked out once (a link keeps its dst's): its
  // word and its bit there, and its summary word and bit. Eight bytes, so that a link's first
  // cache line has room for it beside all else a hop reads there (fabric/link.hpp): two shifts
  // are cheaper than a line. (The summary's place worked out too: two instructions a wake
  // fewer than from the word, fiftieth round.) mark() reads it as one little-endian word: the
  // word in bits 0-31, the shift in 32-39, the summary's shift in 40-47, its word in 48-63.
  struct Place {
    uint32_t word = 0;           // t / 64
    uint8_t shift = 0;           // t % 64
    uint8_t summary_shift = 0;   // word % 64
    uint16_t summary_word = 0;   // word / 64 (Scheduler() checks that it fits)
  };
  static Place place_of(TileId t) { return {t >> 6, uint8_t(t & 63), uint8_t((t >> 6) & 63), uint16_t(t >> 12)}; }
  // The tiles a Place can name: 65,536 summary words (its 16 bits) of 4,096 tiles each.
  static constexpr size_t kMaxTiles = size_t(65536) * 4096;
  static size_t fits(size_t tiles) {  // (before anything is allocated for them)
    if (tiles > kMaxTiles) throw std::invalid_argument("Scheduler: more tiles than a wake's place can name");
    return tiles;
  }
  void wake_next(const Place& p) { mark(next_, p); }
  // The same for a tile that is mostly due next cycle already (a credit to a router on a busy
  // route, which its upstream's wavelet woke first): a load and a test where the wake is two
  // read-modify-writes. The tiles stepped are the same either way.
  // The test alone is inline: the wake, out of line, is not worked out before it (the compiler
  // did, four instructions on every credit of a busy route).
  void wake_next_unless_due(TileId t) {
    if (!(next_[t >> 6] >> (t & 63) & 1)) [[unlikely]] wake_next_cold(t);
  }
  [[gnu::noinline, gnu::cold]] void wake_next_cold(TileId t) { mark(next_, t); }

  // A cycle in three parts. begin_cycle(now) brings the cycle's wakes from the wheel and the
  // heap into its bitmap; take_mail() adds the wakes other workers posted during the cycle
  // before (they are all in the mailboxes once every worker has passed the barrier);
  // step_due() steps every tile due now, in tile order, each once: `step(t)`. `step` may wake
  // tiles for later cycles. Returns whether any tile was stepped.
  //
  // With a bitmap `only`, step_due() steps just the due tiles in it and leaves the others due
  // for a second call. CycleEngine's run-ahead: while the others finish cycle c, a worker steps
  // some of its tiles at c+1, c+2, ... (begin_ahead(c + m) and step_due with the bitmap of the
  // tiles far enough from its band's edge); after the barrier begin_cycle(c + 1), take_mail()
  // and step_due() step the rest of c+1. A cycle's wakes are brought in once, at the first of
  // these calls for it, in cycle order.
  void begin_cycle(Cycle now) {
    base_ = now;
    remote_ = kNever;
    enter(now);
  }
  // Steps of cycle `at`, after the cycle all workers are on (begin_cycle's) and at most kNear / 2
  // beyond it, each cycle in between begun first. Wakes stay relative to that cycle.
  void begin_ahead(Cycle at) { enter(at); }
  // `deliver(w)` puts what a wake carries (a flit or a credit) into its link's queue, before the
  // tile is woken for it, and returns that tile (the link's dst or src). `tail(v)`: worker v's
  // count of its posts to this one, from its vote at the barrier just passed (CycleBarrier::mail).
  template <class Deliver, class Tail>
  void take_mail(Deliver&& deliver, Tail&& tail) {
    uint64_t* n = near_[now_ % kNear];
    for (size_t v = 0; v < inbox_.size(); ++v)
      if (v != me_)
        inbox_[v]->take_until(tail(unsigned(v)), [&](const Wake& w) {
          const TileId t = w.carries() ? TileId(deliver(w)) : TileId(w.to);
          if (const Cycle c = w.cycle(); c <= now_) mark(n, t);
          else schedule(t, c);
        });
  }
  // At a run's end: what the last cycle's wakes carry, into their queues (the wakes themselves
  // are the next run's to find from what the queues hold, as every other wake left at the end).
  template <class Deliver, class Tail>
  void deliver_mail(Deliver&& deliver, Tail&& tail) {
    for (size_t v = 0; v < inbox_.size(); ++v)
      if (v != me_)
        inbox_[v]->take_until(tail(unsigned(v)), [&](const Wake& w) {
          if (w.carries()) deliver(w);
        });
  }
  // A wavelet (`key`, `payload`, arriving at `arrival`) onto hop `link` toward tile t, and a
  // credit for `colour` back over hop `link` to tile t, visible from `visible`: t is another
  // worker's (the hop crosses into its band), which puts it into the link's queue.
  void post_flit(TileId t, uint32_t link, Cycle arrival, uint32_t payload, uint16_t key) {
    post(t, arrival, Wake::kFlit, link, payload, key);
  }
  void post_credit(TileId t, uint32_t link, Cycle visible, Colour colour) {
    post(t, visible, Wake::kCredit, link, 0, colour);
  }
  // A cycle's posts, for their owners to take after the barrier: per worker v, this worker's
  // count of its posts to v so far, for its vote (`out` has a figure per worker; its own is 0).
  void mail_posted(std::span<uint32_t> out) const {
    for (size_t v = 0; v < outbox_.size(); ++v) out[v] = v == me_ ? 0 : outbox_[v]->posted();
  }
  template <class Step>
  bool step_due(Step&& step, const uint64_t* only = nullptr) {
    uint64_t* n = near_[now_ % kNear];
    bool any = false;
    for (size_t s = 0; s < summary_words_; ++s) {
      // Each summary bit is taken (and cleared) before its word is stepped; wakes during the
      // step are for later cycles, so this cycle's bitmap only empties. Stepping only some of a
      // word's tiles puts its summary bit back while the others stay due.
      for (uint64_t sm = std::exchange(summary(n, s), 0); sm; sm &= sm - 1) {
        const size_t w = s * 64 + size_t(std::countr_zero(sm));
        uint64_t bits = n[w];
        if (only) {
          bits &= only[w];
          if ((n[w] &= ~bits) != 0) summary(n, s) |= uint64_t(1) << (w & 63);
        } else {
          n[w] = 0;
        }
        while (bits) {
          const auto t = TileId(w * 64 + size_t(std::countr_zero(bits)));
          bits &= bits - 1;
          step(t);
          any = true;
        }
      }
    }
    return any;
  }
  // Words of a bitmap over `tiles` tiles (the size `only` must have).
  static size_t bitmap_words(size_t tiles) { return (tiles + 63) / 64; }

  // Earliest cycle after now at which this worker has work, or another worker's tile was woken.
  Cycle next_event() const {
    Cycle best = remote_;
    for (uint32_t k = 1; k < kNear; ++k)
      if (has_any(near_[(base_ + k) % kNear])) {
        best = std::min(best, base_ + k);
        break;
      }
    if (wheel_pending_) {
      for (uint32_t k = 1; k < kWheel && base_ + k < best; ++k)
        if (!wheel_[(base_ + k) % kWheel].empty()) {
          best = base_ + k;
          break;
        }
    }
    if (!far_.empty()) best = std::min(best, far_.top().first);
    return best;
  }

 private:
  // Another worker's tile, or a cycle beyond the bitmaps.
  [[gnu::noinline]] void schedule_elsewhere(TileId t, Cycle c) {
    if (owner_ && owner_[t] != me_) return post(t, c, Wake::kNothing, 0, 0, 0);
    if (c - base_ < kNear) return mark(near_[c % kNear], t);
    if (last_far_[t] == c) return;  // already due then
    last_far_[t] = c;
    if (c - base_ < kWheel) {
      wheel_[c % kWheel].push_back(t);
      ++wheel_pending_;
    } else {
      far_.push({c, t});
    }
  }

  // (Its arguments in registers, stored once, into the ring: Mailbox::post.)
  [[gnu::noinline]] void post(TileId t, Cycle c, Wake::Carries carries, uint32_t link, uint32_t payload, uint16_t key) {
    if (c > Wake::kCycleMask) [[unlikely]] beyond_wake_cycles(c);
    outbox_[owner_[t]]->post(carries ? link : t, c, carries, payload, key);
    remote_ = std::min(remote_, c);
  }

  [[noreturn, gnu::cold]] static void beyond_wake_cycles(Cycle c) {
    throw std::logic_error("scheduler: a wake for another worker at cycle " + std::to_string(c) + ", beyond the 2^48 a wake holds");
  }

  // Steps of cycle c begin: the wake of the next cycle goes to c+1's bitmap; the first time for
  // c, its wakes from the heap and the wheel join its bitmap. (A cycle the run skips has none:
  // it would not have been skipped. One begun ahead is after base_ by less than kNear, so a wake
  // for one not begun yet, at base_ + kNear or later, never lands in a drained bucket.)
  void enter(Cycle c) {
    now_ = c;
    next_ = near_[(c + 1) % kNear];
    if (c < begun_end_) return;
    begun_end_ = c + 1;
    while (!far_.empty() && far_.top().first - c < kWheel) {
      auto [fc, t] = far_.top();
      far_.pop();
      wheel_[fc % kWheel].push_back(t);
      ++wheel_pending_;
    }
    uint64_t* n = near_[c % kNear];
    std::vector<TileId>& bucket = wheel_[c % kWheel];
    for (TileId t : bucket) mark(n, t);
    wheel_pending_ -= bucket.size();
    bucket.clear();
  }

  // A near cycle's bitmap is one pointer: a bit per tile at n[0 ..), and below it a summary bit
  // per word of those that may be non-zero (summary word s at n[-1 - s]), so a wake is two
  // stores through one pointer.
  static uint64_t& summary(uint64_t* n, size_t s) { return n[-1 - ptrdiff_t(s)]; }
  static void mark(uint64_t* n, const Place& p) {
    // The place read as one 8-byte word: one load where its four fields took four, on every
    // hop's wake (a hop's loads and stores are what bounds it: scripts/hop_mca.sh).
    uint64_t v;
    std::memcpy(&v, &p, sizeof v);
    static_assert(sizeof(Place) == 8 && offsetof(Place, shift) == 4 && offsetof(Place, summary_shift) == 5 &&
                      offsetof(Place, summary_word) == 6 && std::endian::native == std::endian::little,
                  "a Place is read as one little-endian word (see Place)");
    n[uint32_t(v)] |= uint64_t(1) << ((v >> 32) & 63);
    n[-1 - ptrdiff_t(v >> 48)] |= uint64_t(1) << ((v >> 40) & 63);
  }
  // (From the tile's number itself, not through a Place: packed and unpacked again, the word's
  // shifts cost more than they save. The same arithmetic as place_of(), which a test holds the
  // two to: Scheduler.AWakeThroughAPlaceWakesTheTileItsNumberNames.)
  static void mark(uint64_t* n, TileId t) {
    n[t >> 6] |= uint64_t(1) << (t & 63);
    summary(n, t >> 12) |= uint64_t(1) << ((t >> 6) & 63);
  }
  bool has_any(const uint64_t* n) const {
    for (size_t s = 0; s < summary_words_; ++s)
      if (n[-1 - ptrdiff_t(s)]) return true;
    return false;
  }

  using Far = std::pair<Cycle, TileId>;
  size_t words_, summary_words_;
  std::vector<uint64_t> near_store_[kNear];  // summary words, then the bits
  uint64_t* near_[kNear] = {};               // into near_store_: the bits of cycle c at [c % kNear]
  uint64_t* next_ = nullptr;                 // near_[(now_ + 1) % kNear]
  std::vector<Cycle> last_far_;  // the last cycle beyond the bitmaps each tile was woken for
  std::vector<std::vector<TileId>> wheel_;
  std::priority_queue<Far, std::vector<Far>, std::greater<Far>> far_;
  const uint16_t* owner_ = nullptr;
  uint16_t me_ = 0;
  std::vector<Mailbox*> outbox_, inbox_;
  Cycle remote_ = kNever;
  Cycle now_ = 0;        // the cycle being stepped
  Cycle base_ = 0;       // the cycle all workers are on (now_ but in the run-ahead)
  Cycle begun_end_ = 0;  // cycles before it have had their wakes brought into their bitmaps
  size_t wheel_pending_ = 0;
};

}  // namespace wse
