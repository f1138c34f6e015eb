#pragma once
// The queue under one direction of a link: a single-producer single-consumer ring, sized at
// set-up (rounded up to a power of two) and never allocating afterwards. Entries carry the cycle
// they become visible, so what a consumer sees never depends on how far the producer's thread
// has run.
//
// During a run each queue is pushed and read by one worker: a hop between two workers' bands
// crosses as mail, which the reading worker pushes onto the queue (Link::cross_worker, since the
// fifty-second round). The indices stay free-running atomics read with acquire and written with
// release, which on x86 are plain loads and stores (no locked instruction, no fence): the
// queues are read between runs, and by tests, from other threads. (The queue once kept a plain
// ring beside a Boost.Lockfree queue and tested which one on every call; measured in
// docs/performance-history.md.)
//
// The producer writes the tail and the entries and never reads the consumer's index: a ring
// written past its size is caught by the consumer instead (a tail more than the ring's size past
// its head), at its next read, which the push has woken it for; capacity comes from the credit
// loop, so either is a model bug. A router, the consumer of the queues it reads through a Reader,
// keeps its index there and publishes it into the queue only between runs (publish()), so that
// a step reads the entry without the queue's line. (While a hop between two workers was read
// across them, its index stored beside the tail also took the line from the producer every
// cycle: docs/performance-history.md, fifteenth round.) Head and tail sit together with the ring
// pointer, so one cache line serves both ends of a link. (A PE reads its RAMP queue with front() and pop(), which
// store the index at once; producer and PE are always stepped by one worker.)
#include <atomic>
#include <bit>
#include <cstdint>
#include <memory>
#include <new>
#include <type_traits>
#include <stdexcept>
#include <string>

namespace wse {

template <class T>
class LinkQueue {
 public:
  // A ring of its own, for at least `capacity` entries (a mailbox's, a test's).
  void init(size_t capacity) {
    release();
    place(capacity, ::operator new[](ring_bytes(capacity), std::align_val_t{64}));
    owns_ = true;
  }
  // The same in `storage` (64-byte aligned, ring_bytes(capacity) long), which the caller owns
  // and keeps: Mesh puts every link's ring in one block, in tile order, where a ring each from
  // the heap cost a line-aligned allocation apiece (half a gigabyte on a full wafer).
  void init(size_t capacity, void* storage) {
    release();
    place(capacity, storage);
  }
  // Bytes of the ring for `capacity` entries: rounded up to a power of two entries (the indices
  // are masked) and to whole cache lines, so a small ring (a plain lane's few slots) is one line.
  static size_t ring_bytes(size_t capacity) {
    return (size_t(std::bit_ceil(uint32_t(std::max<size_t>(capacity, 2)))) * sizeof(T) + 63) & ~size_t(63);
  }
  LinkQueue() = default;
  LinkQueue(const LinkQueue&) = delete;  // note_ may point into this queue
  LinkQueue& operator=(const LinkQueue&) = delete;
  ~LinkQueue() { release(); }

  // Each push also sets `bit` in `*note` (the consumer's byte of links holding something); null:
  // nobody is noted (the consumer reads the queue itself: the PE's ends of the RAMP), and the
  // push sets a byte of the queue's own that nobody reads, so it needs no test.
  void set_note(uint8_t* note, uint8_t bit) { note_ = note ? note : &note_sink_, note_bit_ = bit; }

  // Producer side. Capacity is derived from the credit loop, so a full queue is a model bug,
  // which the consumer reports (check_room).
  void push(const T& v) {
    const uint32_t t = tail_.load(std::memory_order_relaxed);
#ifdef WSE_CHECK_INVARIANTS
    // A link carries at most one wavelet a cycle, so its arrivals strictly increase: a router's
    // read of the link stops at a wavelet of this very cycle without looking further
    // (Router::take_arrived). The entry before this one is still in the ring (capacity >= 2).
    if constexpr (requires { v.arrival; })
      if (t != 0 && ring_[(t - 1) & mask_].arrival >= v.arrival) out_of_order(v.arrival);
#endif
    ring_[t & mask_] = v;
    tail_.store(t + 1, std::memory_order_release);
    *note_ |= note_bit_;
  }

  // Consumer side: the oldest entry, or nullptr.
  const T* front() const {
    const uint32_t h = head_.load(std::memory_order_relaxed), t = tail_.load(std::memory_order_acquire);
    if (t - h > mask_ + 1) [[unlikely]] overflow();
    return h == t ? nullptr : &ring_[h & mask_];
  }
  void pop() { head_.store(head_.load(std::memory_order_relaxed) + 1, std::memory_order_release); }

  // The same, for a consumer that keeps its own copy of where it reads (a router's Reader, beside
  // its link pointers): the next entry's address is known without this queue's line, so loading
  // the entry and the producer's tail go in parallel instead of one after the other.
  struct Reader {
    const T* ring = nullptr;
    uint32_t mask = 0;
    uint32_t head = 0;
    const T& at() const { return ring[head & mask]; }
  };
  // The reader's index stays its own during a run: the queue's index is where the reader
  // started, until publish(r) stores the reader's (between runs, when no producer runs).
  Reader reader() const { return {ring_, mask_, head_.load(std::memory_order_relaxed)}; }
  bool holds(const Reader& r) const { return r.head != tail_.load(std::memory_order_acquire); }
  uint32_t tail() const { return tail_.load(std::memory_order_acquire); }  // one past the newest entry
  // A reader at `head` finds `tail` (just loaded): more entries than the ring holds means the
  // producer wrote over some that were not read yet.
  static void check_room(const Reader& r, uint32_t tail) {
    if (tail - r.head > r.mask + 1) [[unlikely]] overflow();
  }
  void publish(const Reader& r) { head_.store(r.head, std::memory_order_release); }
  uint32_t capacity() const { return mask_ + 1; }  // entries the ring holds

 private:
  [[noreturn]] static void overflow() { throw std::logic_error("link queue overflow: credit accounting is broken"); }
  [[noreturn]] static void out_of_order(uint64_t arrival) {
    throw std::logic_error("link queue: a second wavelet arriving by cycle " + std::to_string(arrival) +
                           " on one link (a link carries one a cycle)");
  }
  static_assert(std::is_trivially_destructible_v<T>, "ring entries are freed without destruction");
  void place(size_t capacity, void* storage) {
    const uint32_t cap = std::bit_ceil(uint32_t(std::max<size_t>(capacity, 2)));
    mask_ = cap - 1;
    ring_ = static_cast<T*>(storage);
    std::uninitialized_value_construct_n(ring_, cap);
    head_.store(0, std::memory_order_relaxed);
    tail_.store(0, std::memory_order_relaxed);
  }
  void release() {
    if (owns_) ::operator delete[](ring_, std::align_val_t{64});
    ring_ = nullptr, owns_ = false;
  }
  T* ring_ = nullptr;
  uint32_t mask_ = 0;
  std::atomic<uint32_t> head_{0};  // written by the consumer (by a Reader's only between runs)
  std::atomic<uint32_t> tail_{0};  // written by the producer
  uint8_t note_bit_ = 0;
  uint8_t note_sink_ = 0;  // written by the producer only
  bool owns_ = false;      // ring_ came from init(capacity), not from the caller's storage
  uint8_t* note_ = &note_sink_;
};

}  // namespace wse
