#pragma once
// The actor runtime: actors, the links between them, and a conservative rule that keeps every
// result the same at any thread count. Time moves in windows: with T the earliest cycle any
// undelivered message arrives and L the smallest latency of any link (the lookahead), every
// message arriving before T + L is handled in this window, each actor's in (arrival, sender,
// sequence) order; nothing sent in the window can arrive before T + L, so nothing handled here
// could have been preceded by a message not yet sent. Actors with messages in the same window
// run at once on a Boost.Asio thread pool (the wafers of a data-parallel step do: they get their
// streams at the same cycle); what they send is delivered, in actor order, after the window.
// This is the synchronous conservative scheme SST-core runs its partitions with.
#include <functional>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "cluster/actor.hpp"

namespace boost::asio {
class thread_pool;
}

namespace wse {

class Runtime {
 public:
  explicit Runtime(unsigned threads);
  ~Runtime();

  template <class A, class... Args>
  A& add(Args&&... args) {
    auto a = std::make_unique<A>(std::forward<Args>(args)...);
    A& ref = *a;
    adopt(std::move(a));
    return ref;
  }
  LinkId connect(const Actor& from, const Actor& to, Cycle latency, double bytes_per_cycle);
  ActorLink& link(LinkId l) { return links_[l]; }
  const ActorLink& link(LinkId l) const { return links_[l]; }
  Actor& actor(ActorId a) { return *actors_[a]; }
  size_t actors() const { return actors_.size(); }
  unsigned threads() const { return threads_; }

  // The host acts through `actor` at the actor's own clock (the message it handled last, such
  // as a step's loss), but not before frontier - L, the earliest cycle from which anything it
  // sends cannot arrive before what is already handled: fn runs as if the actor handled a
  // message then, and what it sends is delivered at once. The cycle fn sees is the actor's clock.
  void act(Actor& actor, const std::function<void()>& fn);
  // Runs windows until `done()` holds (checked between windows). Throws std::logic_error naming
  // what each actor waits for if every message is handled and `done()` still does not hold.
  void run_until(const std::function<bool()>& done, const std::string& what);
  // Where the simulation has reached: everything before it is handled.
  Cycle frontier() const { return frontier_; }

  // Tests: a hook that may change a message on its way (to corrupt one).
  void set_tamper(std::function<void(Message&)> fn) { tamper_ = std::move(fn); }

  // Every actor's timeline, in actor order.
  Timeline timeline() const;

 private:
  friend class Actor;
  void adopt(std::unique_ptr<Actor> a);
  void deliver();
  void run_actor(ActorId a, Cycle window_end);

  unsigned threads_;
  std::unique_ptr<boost::asio::thread_pool> pool_;
  std::vector<std::unique_ptr<Actor>> actors_;
  std::vector<ActorLink> links_;
  std::vector<std::vector<Message>> mailbox_;  // per actor: a heap by (arrive, from, seq)
  std::vector<std::exception_ptr> errors_;     // per actor, from the last window
  Cycle frontier_ = 0;
  Cycle lookahead_ = kNever;
  std::function<void(Message&)> tamper_;
};

}  // namespace wse
