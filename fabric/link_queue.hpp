#pragma once
// The queue under one direction of a link. A link whose two ends are stepped by different
// workers uses a Boost.Lockfree SPSC queue (the only state workers share); a link inside one
// worker's block uses a plain ring, which is cheaper and needs no atomics. Both are sized at
// set-up and never allocate afterwards. Entries carry the cycle they become visible, so what a
// consumer sees never depends on how far the producer's thread has run.
#include <boost/lockfree/spsc_queue.hpp>
#include <cassert>
#include <memory>
#include <stdexcept>

namespace wse {

template <class T>
class LinkQueue {
 public:
  void init(size_t capacity, bool cross_thread) {
    capacity_ = capacity;
    if (cross_thread) {
      shared_ = std::make_unique<boost::lockfree::spsc_queue<T>>(capacity);
      ring_.reset();
    } else {
      shared_.reset();
      ring_ = std::make_unique<T[]>(capacity);
    }
    head_ = count_ = 0;
  }
  bool cross_thread() const { return bool(shared_); }

  // Producer side. Capacity is derived from the credit loop, so a full queue is a model bug.
  void push(const T& v) {
    if (shared_) {
      if (!shared_->push(v)) overflow();
      return;
    }
    if (count_ == capacity_) overflow();
    uint32_t tail = head_ + count_;
    if (tail >= capacity_) tail -= capacity_;  // no division on the hot path
    ring_[tail] = v;
    ++count_;
  }

  // Consumer side: the oldest entry, or nullptr.
  const T* front() {
    if (shared_) return shared_->read_available() ? &shared_->front() : nullptr;
    return count_ ? &ring_[head_] : nullptr;
  }
  void pop() {
    if (shared_) {
      shared_->pop();
      return;
    }
    if (++head_ == capacity_) head_ = 0;
    --count_;
  }

 private:
  [[noreturn]] static void overflow() { throw std::logic_error("link queue overflow: credit accounting is broken"); }
  std::unique_ptr<boost::lockfree::spsc_queue<T>> shared_;
  std::unique_ptr<T[]> ring_;
  uint32_t capacity_ = 0, head_ = 0, count_ = 0;
};

}  // namespace wse
