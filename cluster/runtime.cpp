#include "cluster/runtime.hpp"

#include "cluster/step_plan.hpp"

#include <algorithm>
#include <boost/asio/post.hpp>
#include <boost/asio/thread_pool.hpp>
#include <cmath>
#include <latch>
#include <stdexcept>

namespace wse {

const char* message_kind_name(MessageKind k) {
  switch (k) {
    case MessageKind::Control: return "control message";
    case MessageKind::WeightStream: return "WeightStream";
    case MessageKind::GradientStream: return "GradientStream";
    case MessageKind::InputBatch: return "InputBatch";
  }
  return "message";
}

namespace {

// Mailbox order: earliest arrival first; ties by sender, then the sender's sequence.
struct Later {
  bool operator()(const Message& a, const Message& b) const {
    if (a.arrive != b.arrive) return a.arrive > b.arrive;
    if (a.from != b.from) return a.from > b.from;
    return a.seq > b.seq;
  }
};

Cycle transfer_cycles(uint64_t bytes, double rate) { return rate > 0 ? Cycle(std::ceil(double(bytes) / rate)) : 0; }

}  // namespace

// ---- Actor ----

const ActorLink& Actor::link(LinkId l) const { return runtime_->link(l); }

const std::string& Actor::actor_name(ActorId a) const { return runtime_->actor(a).name(); }

std::string Actor::about(const Message& m, const std::string& what) const {
  return what + " from " + actor_name(m.from) + " to " + name() + ", " + step_label(m.step);
}

Message& Actor::send(LinkId l, MessageKind kind, uint64_t step, uint64_t bytes, std::vector<SharedBuffer> payload, Cycle ready,
                           SpanId cause, Cycle cause_end, Cycle last_ready, double in_rate) {
  ActorLink& link = runtime_->link(l);
  if (link.from != id_) throw std::logic_error(name() + " sent on a link that is not its own");
  Message m;
  m.kind = kind;
  m.from = id_, m.to = link.to;
  m.step = step;
  m.sent = std::max({ready, clock_, link.free});
  m.bytes_per_cycle = in_rate > 0 && link.bytes_per_cycle > 0 ? std::min(in_rate, link.bytes_per_cycle) : std::max(in_rate, link.bytes_per_cycle);
  m.bytes = bytes;
  const Cycle last_sent = std::max(m.sent + transfer_cycles(bytes, m.bytes_per_cycle), last_ready);
  m.arrive = m.sent + link.latency;
  m.last = last_sent + link.latency;
  link.free = last_sent;
  m.seq = seq_++;
  m.cause = cause, m.cause_end = cause_end;
  m.payload = std::move(payload);
  outbox_.push_back(std::move(m));
  return outbox_.back();
}

SpanId Actor::span(std::string what, uint64_t step, Cycle start, Cycle end, SpanId cause, Cycle cause_at) {
  timeline_.spans.push_back({std::move(what), step, start, end, cause, cause_at});
  return (SpanId(id_) << 32) | (timeline_.spans.size() - 1);
}

// ---- Runtime ----

Runtime::Runtime(unsigned threads) : threads_(std::max(1u, threads)) {
  if (threads_ > 1) pool_ = std::make_unique<boost::asio::thread_pool>(threads_ - 1);  // the caller is the other one
}

Runtime::~Runtime() {
  if (pool_) pool_->join();
}

void Runtime::adopt(std::unique_ptr<Actor> a) {
  a->runtime_ = this;
  a->id_ = ActorId(actors_.size());
  actors_.push_back(std::move(a));
  mailbox_.emplace_back();
  errors_.emplace_back();
}

LinkId Runtime::connect(const Actor& from, const Actor& to, Cycle latency, double bytes_per_cycle) {
  if (latency < 1) throw std::invalid_argument("cluster link " + from.name() + " -> " + to.name() + ": latency must be at least one cycle");
  links_.push_back({from.id(), to.id(), latency, bytes_per_cycle, 0});
  lookahead_ = std::min(lookahead_, latency);
  return LinkId(links_.size() - 1);
}

void Runtime::deliver() {
  for (auto& a : actors_) {
    for (Message& m : a->outbox_) {
      if (tamper_) tamper_(m);
      std::vector<Message>& box = mailbox_[m.to];
      box.push_back(std::move(m));
      std::push_heap(box.begin(), box.end(), Later{});
    }
    a->outbox_.clear();
  }
}

void Runtime::act(Actor& actor, const std::function<void()>& fn) {
  // Not at the frontier itself: that is where the last window ended, up to a lookahead past the
  // message that let the host act (a step's loss), so acting there would add the window's slack
  // to the cluster's time. Anything sent at frontier - L or later arrives at the frontier or
  // later, after everything already handled, so the window rule holds.
  const Cycle earliest = lookahead_ == kNever ? frontier_ : frontier_ - std::min(frontier_, lookahead_);
  actor.clock_ = std::max(actor.clock_, earliest);
  fn();
  deliver();
}

void Runtime::run_actor(ActorId id, Cycle window_end) {
  Actor& a = *actors_[id];
  std::vector<Message>& box = mailbox_[id];
  try {
    while (!box.empty() && box.front().arrive < window_end) {
      std::pop_heap(box.begin(), box.end(), Later{});
      Message m = std::move(box.back());
      box.pop_back();
      a.clock_ = std::max(a.clock_, m.arrive);
      a.receive(m);
    }
  } catch (...) {
    errors_[id] = std::current_exception();
  }
}

void Runtime::run_until(const std::function<bool()>& done, const std::string& what) {
  std::vector<ActorId> active;
  while (!done()) {
    Cycle first = kNever;
    for (const auto& box : mailbox_)
      if (!box.empty()) first = std::min(first, box.front().arrive);
    if (first == kNever) {
      std::string msg = "the cluster stopped before " + what + " with every message handled:";
      for (const auto& a : actors_) {
        const std::string w = a->waiting_on();
        if (!w.empty()) msg += "\n  " + a->name() + ": " + w;
      }
      throw std::logic_error(msg);
    }
    const Cycle end = first + (lookahead_ == kNever ? 1 : lookahead_);
    active.clear();
    for (ActorId a = 0; a < actors_.size(); ++a)
      if (!mailbox_[a].empty() && mailbox_[a].front().arrive < end) active.push_back(a);
    if (active.size() == 1 || !pool_) {
      for (ActorId a : active) run_actor(a, end);
    } else {
      std::latch left(std::ptrdiff_t(active.size() - 1));
      for (size_t i = 1; i < active.size(); ++i)
        boost::asio::post(*pool_, [this, &left, a = active[i], end] {
          run_actor(a, end);
          left.count_down();
        });
      run_actor(active[0], end);
      left.wait();
    }
    frontier_ = std::max(frontier_, end);
    // The first error by actor order, so which one is reported never depends on the threads.
    for (ActorId a : active)
      if (errors_[a]) {
        std::exception_ptr e = errors_[a];
        errors_[a] = nullptr;
        std::rethrow_exception(e);
      }
    deliver();
  }
}

Timeline Runtime::timeline() const {
  std::vector<const ActorTimeline*> t;
  for (const auto& a : actors_) t.push_back(&a->timeline_);
  return Timeline(t);
}

}  // namespace wse
