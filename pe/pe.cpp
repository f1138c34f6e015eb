#include "pe/pe.hpp"

#include "fabric/errors.hpp"

namespace wse {

void Pe::attach(Link* ramp_down, Link* ramp_up, std::vector<Colour> rx_colours,
                const std::vector<std::pair<Colour, uint8_t>>& tx_credits) {
  ramp_down_ = ramp_down;
  ramp_up_ = ramp_up;
  queues_.clear();
  for (Colour c : rx_colours) queues_.push_back({c});
  credits_.fill(0);
  tx_colours_ = 0;
  for (auto [c, n] : tx_credits) credits_[c] = n, tx_colours_ |= 1u << c;
  out_head_ = out_count_ = rr_ = 0;
  local_pending_ = 0;
  busy_until_ = 0;
  stall_from_ = kNever;
  started_ = false;
}

bool Pe::idle() const {
  if (out_count_ || local_pending_) return false;
  for (const auto& q : queues_)
    if (q.count) return false;
  return true;
}

void Pe::step(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec) {
  if (Link* l = ramp_down_) {
    while (const Flit* f = l->flits.front()) {
      if (f->arrival > now) break;
      for (auto& q : queues_)
        if (q.colour == f->colour) {
          q.slots[(q.head + q.count++) % PeInputQueue::kSlots] = f->payload;
          break;
        }
      ++counters.wavelets_in;
      l->flits.pop();
    }
  }
  if (Link* l = ramp_up_) {
    while (const Credit* c = l->credits.front()) {
      if (c->visible > now) break;
      ++credits_[c->colour];
      l->credits.pop();
    }
  }
  if (stall_from_ != kNever) {  // slept through a send stall; a credit (or an arrival) woke us
    counters.stall_send_cycles += now - stall_from_;
    stall_from_ = kNever;
  }
  if (!started_) {
    started_ = true;
    if (program && program->start_task >= 0) local_pending_ |= 1u << program->start_task;
  }
  if (now < busy_until_) {
    s.schedule(self, busy_until_);
    return;
  }
  if (out_count_) {
    if (send_one(self, now, s, spec)) s.schedule(self, now + 1);
    else stall_from_ = now;
    return;
  }
  run_task(self, now, s, spec);
}

bool Pe::send_one(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec) {
  SendOp& op = outbox_[out_head_];
  if (credits_[op.colour] == 0) return false;
  uint32_t payload = op.word;
  if (op.from_sram) {
    payload = *reinterpret_cast<const uint32_t*>(sram.base() + op.word);
    op.word += 4;
  }
  --credits_[op.colour];
  ramp_up_->flits.push({now + spec.ramp_latency_cycles, payload, op.colour});
  s.schedule(self, now + spec.ramp_latency_cycles);  // the router takes it from there
  ++counters.send_cycles;
  ++counters.wavelets_out;
  if (--op.count == 0) {
    out_head_ = uint8_t((out_head_ + 1) % kOutbox);
    --out_count_;
  }
  return true;
}

void Pe::run_task(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec) {
  const PeCounters before = counters;
  run_one_task(self, now, s, spec);
  if (counters.tasks != before.tasks) {
    last_task_ = {now,
                  uint32_t(counters.receive_cycles - before.receive_cycles),
                  uint32_t(counters.fmac_cycles - before.fmac_cycles),
                  uint32_t(counters.move_cycles - before.move_cycles),
                  task_colour_,
                  task_local_};
    if (task_log) task_log->push_back(last_task_);
  }
}

void Pe::run_one_task(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec) {
  PeContext ctx(*this, spec);
  if (local_pending_) {
    int id = std::countr_zero(local_pending_);
    local_pending_ &= local_pending_ - 1;
    task_colour_ = Colour(id), task_local_ = true;
    ++counters.tasks;
    program->local_tasks[size_t(id)](ctx);
  } else {
    // Round-robin over colours with a waiting wavelet.
    const size_t n = queues_.size();
    PeInputQueue* q = nullptr;
    for (size_t k = 1; k <= n && !q; ++k) {
      size_t i = (rr_ + k) % n;
      if (queues_[i].count) q = &queues_[i], rr_ = uint8_t(i);
    }
    if (!q) return;  // nothing to do: stay idle until a wavelet arrives
    Wavelet w{q->slots[q->head], q->colour};
    q->head = uint8_t((q->head + 1) % PeInputQueue::kSlots);
    --q->count;
    ramp_down_->credits.push({now + 1, w.colour});
    s.schedule(self, now + 1);
    DataTask task = program->data_tasks[w.colour];
    if (!task)
      throw PeError("PE " + to_string(coord) + " received a wavelet on colour " + std::to_string(w.colour) +
                    " but its program '" + program->name + "' binds no data task to that colour");
    task_colour_ = w.colour, task_local_ = false;
    ++counters.tasks;
    ++counters.receive_cycles;
    task(ctx, w);
    busy_until_ = now + 1 + ctx.cost();
    s.schedule(self, busy_until_);
    return;
  }
  busy_until_ = now + std::max<uint32_t>(1, ctx.cost());
  s.schedule(self, busy_until_);
}

void PeContext::enqueue(const SendOp& op) {
  if (op.colour >= MachineSpec::kMaxColours || !(pe_.tx_colours_ & (1u << op.colour)))
    throw PeError("PE " + to_string(pe_.coord) + " sends on colour " + std::to_string(op.colour) +
                  " but its router has no route receiving that colour from the RAMP");
  if (pe_.out_count_ == Pe::kOutbox)
    throw PeError("PE " + to_string(pe_.coord) + ": more than " + std::to_string(Pe::kOutbox) +
                  " sends queued by one task; send buffers instead of single wavelets");
  pe_.outbox_[(pe_.out_head_ + pe_.out_count_) % Pe::kOutbox] = op;
  ++pe_.out_count_;
}

}  // namespace wse
