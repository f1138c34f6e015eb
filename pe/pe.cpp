#include "pe/pe.hpp"

#include "core/errors.hpp"
#include "pe/dsd_op.hpp"

namespace wse {

namespace {

constexpr uint32_t kMainFifo = 16;  // items a task may queue behind a streaming op

uint32_t colour_bit(Colour c) { return 1u << c; }

}  // namespace

void Pe::check_program(const Program& program, const MachineSpec& spec, Coord coord) {
  if (program.local_tasks.size() > spec.local_task_ids)
    throw PeError("PE " + to_string(coord) + ": its program binds " + std::to_string(program.local_tasks.size()) +
                  " local tasks, but a " + spec.name + " PE has " + std::to_string(spec.local_task_ids) + " task IDs for them (machine.local_task_ids)");
  if (program.microthreads > spec.microthreads)
    throw PeError("PE " + to_string(coord) + ": its program '" + program.name + "' has up to " + std::to_string(program.microthreads) +
                  " asynchronous ops in flight at once, but a " + spec.name + " PE has " + std::to_string(spec.microthreads) +
                  " microthreads (machine.microthreads)");
  if (program.start_task >= int(program.local_tasks.size()))
    throw PeError("PE " + to_string(coord) + ": its program's start task is local task " + std::to_string(program.start_task) +
                  ", which it does not bind (it binds " + std::to_string(program.local_tasks.size()) + ")");
  for (size_t c = spec.colours; c < program.data_tasks.size(); ++c)
    if (program.data_tasks[c] || (program.blocked_colours >> c & 1u))
      throw PeError("PE " + to_string(coord) + ": its program " + (program.data_tasks[c] ? "binds a data task to" : "blocks") +
                    " colour " + std::to_string(c) + ", beyond the " + std::to_string(spec.colours) + " colours of a " + spec.name +
                    " PE");
  if (spec.data_task_ids_shared) {
    // WSE-2 (SDK Task-IDs): a data task's ID is its colour, one of the IDs the local tasks take,
    // so the two kinds share them.
    size_t data = 0;
    for (const auto& t : program.data_tasks) data += t ? 1 : 0;
    if (program.local_tasks.size() + data > spec.local_task_ids)
      throw PeError("PE " + to_string(coord) + ": its program binds " + std::to_string(program.local_tasks.size()) +
                    " local tasks and " + std::to_string(data) + " data tasks, but a " + spec.name + " PE has " +
                    std::to_string(spec.local_task_ids) + " task IDs for both (a data task's ID is its colour; machine.local_task_ids)");
  }
}

void Pe::attach(Link* ramp_down, Link* ramp_up, std::vector<Colour> rx_colours,
                const std::vector<std::pair<Colour, uint8_t>>& tx_credits, const MachineSpec& spec) {
  if (rx_colours.size() > spec.pe_input_queues)
    throw RouteError("PE " + to_string(coord) + " receives " + std::to_string(rx_colours.size()) +
                     " colours from its router (routes with tx RAMP), but a " + spec.name + " PE has " +
                     std::to_string(spec.pe_input_queues) + " input queues (machine.pe_input_queues)");
  if (tx_credits.size() > spec.pe_output_queues)
    throw RouteError("PE " + to_string(coord) + " sends on " + std::to_string(tx_credits.size()) +
                     " colours (routes with rx RAMP), but a " + spec.name + " PE has " +
                     std::to_string(spec.pe_output_queues) + " output queues (machine.pe_output_queues)");
  if (program) check_program(*program, spec, coord);
  ramp_down_ = ramp_down;
  ramp_up_ = ramp_up;
  // The router's pushes onto these ends note this PE (Mesh::assign_notes leaves them to it).
  if (ramp_down_) ramp_down_->flits.set_note(&noted_, kNotedFlits);
  if (ramp_up_) ramp_up_->credits.set_note(&noted_, kNotedCredits);
  queues_.clear();
  outq_.clear();
  queue_of_.fill(-1);
  outq_of_.fill(-1);
  for (Colour c : rx_colours) queue_of_[c] = int8_t(queues_.size()), queues_.push_back({c});
  credits_.fill(0);
  const uint32_t cap = spec.pe_output_queue_depth + spec.dsd_pipeline_cycles;
  if (cap > PeOutputQueue::kSlots || cap == 0)
    throw UsageError("machine spec: pe_output_queue_depth + dsd_pipeline_cycles must be in [1, " +
                     std::to_string(PeOutputQueue::kSlots) + "], got " + std::to_string(cap));
  for (auto [c, n] : tx_credits) {
    credits_[c] = n;
    outq_of_[c] = int8_t(outq_.size());
    PeOutputQueue q;
    q.colour = c, q.cap = uint8_t(cap);
    outq_.push_back(q);
  }
  microthreads_ = uint8_t(spec.microthreads);
  uts_.reset();
  uts_slots_ = 0;
  uts_active_ = 0;
  fifo_.clear();
  fifo_head_ = fifo_count_ = 0;
  main_active_ = false;
  reading_ = writing_ = 0;
  queued_ = out_wavelets_ = 0;
  local_pending_ = 0;
  rr_ = out_rr_ = grant_rr_ = 0;
  busy_until_ = work_until_ = dispatch_at_ = 0;
  active_end_ = 0, activity_seen_ = activity_sum();
  stall_from_ = kNever;
  ramp_blocked_from_ = kNever;
  setup_from_ = kNever;
  setup_until_ = 0;
  rearm();
}

void Pe::rearm() {
  started_ = false;
  due_ = 0;  // the first step of a run is never skipped
  woken_for_ = kNever;  // a run has a scheduler of its own
  local_blocked_ = program ? program->blocked_locals : 0;
  colour_blocked_ = program ? program->blocked_colours : 0;
  data_tasks_ = 0;
  if (program)
    for (uint32_t c = 0; c < program->data_tasks.size(); ++c)
      if (program->data_tasks[c]) data_tasks_ |= colour_bit(Colour(c));
}

bool Pe::idle() const {
  if (main_active_ || fifo_count_ || uts_active_ || local_pending_) return false;
  for (const auto& q : queues_)
    if (q.count) return false;
  for (const auto& q : outq_)
    if (q.count) return false;
  return true;
}

std::string Pe::waiting_on(Cycle now) const {
  if (idle()) return "";
  std::string out;
  auto add = [&](const std::string& s) { out += (out.empty() ? "" : "; ") + s; };
  auto op_wait = [&](const ActiveOp& a, const std::string& thread) {
    std::string s = thread + " @" + a.op.name + " (" + task_label(a.task_local, a.task) + ", " + std::to_string(a.done) + " of " +
                    std::to_string(a.op.length) + " elements)";
    for (const Dsd* d : {&a.op.a, &a.op.b})
      if (d->kind == DsdKind::FabIn && !queues_[size_t(queue_of_[d->colour])].count) s += " waits for input on colour " + std::to_string(d->colour);
    if (a.op.dst.kind == DsdKind::FabOut) {
      const PeOutputQueue& q = outq_[size_t(outq_of_[a.op.dst.colour])];
      if (q.count >= q.cap) s += " waits for room to send on colour " + std::to_string(a.op.dst.colour);
    }
    add(s);
  };
  if (main_active_) op_wait(*main_op_, "main thread");
  for (uint32_t m = uts_active_; m; m &= m - 1) {
    const int k = std::countr_zero(m);
    op_wait(uts_[size_t(k)], "microthread " + std::to_string(k));
  }
  // A task's own work (its receive, memory ops) holds the main thread before what it queued.
  if (!main_active_ && busy_until_ > now && (fifo_count_ || local_pending_))
    add("main thread busy with " + task_label(last_task_.local, uint8_t(last_task_.colour)) + (last_task_.op ? " (@" + std::string(last_task_.op) + ")" : "") +
        " until cycle " + std::to_string(busy_until_));
  if (fifo_count_) {
    // The queue by name, first items first: "queued behind it" alone said nothing of which task's
    // multiply-adds were still to come.
    constexpr size_t kNamed = 3;
    std::string items;
    for (size_t i = 0; i < std::min<size_t>(fifo_count_, kNamed); ++i) {
      const MainItem& item = fifo_[(fifo_head_ + i) % fifo_.size()];
      const std::string task = task_label(item.task.kind == TaskRef::Local, item.task.id);
      std::string what;
      switch (item.kind) {
        case MainItem::Op:
          what = "@" + std::string(item.op.op.name) + " (" + task_label(item.op.task_local, item.op.task) + ", " +
                 std::to_string(item.op.op.length) + " elements)";
          break;
        case MainItem::Activate: what = "activate " + task; break;
        case MainItem::Block: what = "block " + task; break;
        case MainItem::Unblock: what = "unblock " + task; break;
      }
      items += (items.empty() ? "" : ", ") + what;
    }
    if (fifo_count_ > kNamed) items += ", and " + std::to_string(fifo_count_ - kNamed) + " more";
    add(std::to_string(fifo_count_) + (fifo_count_ == 1 ? " item" : " items") + " queued for the main thread: " + items);
  }
  if (const uint32_t blocked = local_pending_ & local_blocked_) add("local task(s) activated but blocked: mask " + std::to_string(blocked));
  for (const PeInputQueue& q : queues_) {
    if (!q.count) continue;
    const bool read = reading_ >> q.colour & 1u;
    if (read) continue;
    const char* why = (colour_blocked_ >> q.colour & 1u) ? "its colour is blocked and no running op reads it"
                      : !(program && program->data_tasks[q.colour]) ? "no data task is bound to it and no running op reads it"
                                                                       : "waiting for the main thread";
    add(std::to_string(q.count) + " wavelet(s) of colour " + std::to_string(q.colour) + " in its input queue: " + why);
  }
  for (const PeOutputQueue& q : outq_)
    if (q.count) add(std::to_string(q.count) + " wavelet(s) of colour " + std::to_string(q.colour) + " in its output queue, no credit from the router");
  return out;
}

uint64_t Pe::outbox_wavelets() const {
  uint64_t n = 0;
  for (const auto& q : outq_) n += q.count;
  if (main_active_ && main_op_->op.dst.kind == DsdKind::FabOut) n += main_op_->op.length - main_op_->done;
  return n;
}

std::string Pe::task_label(bool local, uint8_t id) const {
  return program ? "'" + program->task_name(local, id) + "'" : "(no program)";
}

void Pe::fail(const ActiveOp* a, const std::string& what) const {
  std::string who = "PE " + to_string(coord);
  if (program) who += " (program '" + program->name + "')";
  if (a) who += ", " + task_label(a->task_local, a->task) + ", DSD op @" + a->op.name;
  else if (in_task_) who += ", " + task_label(task_local_, task_id_);  // a task's own call (activate, at, ...)
  throw PeError(who + ": " + what);
}

// ---- ingest ----

void Pe::ingest(TileId self, Cycle now, Scheduler& s, const MachineSpec&) {
  noted_ = 0;
  if (Link* l = ramp_down_) {
    while (const Flit* f = l->flits.front()) {
      if (f->arrival > now) {
        noted_ |= kNotedFlits;  // on its way: step again (the router woke us for its arrival)
        break;
      }
      ++counters.wavelets_in;
      if (f->flags & kControl) {
        // A control wavelet is for the routers: the CE drops it (and frees its queue slot).
        l->credits.push({now + 1, f->colour});
        wake(self, now + 1, s);
      } else {
        PeInputQueue& q = queues_[size_t(queue_of_[f->colour])];
        uint32_t at = q.head + q.count;
        if (at >= PeInputQueue::kSlots) at -= PeInputQueue::kSlots;
        q.slots[at] = f->payload;
        ++q.count;
        queued_ |= colour_bit(f->colour);
      }
      l->flits.pop();
    }
  }
  if (Link* l = ramp_up_) {
    while (const Credit* c = l->credits.front()) {
      if (c->visible > now) {
        noted_ |= kNotedCredits;
        break;
      }
      ++credits_[c->colour];
      l->credits.pop();
    }
  }
}

// ---- the datapath ----

Pe::Progress Pe::can_progress(const ActiveOp& a, Cycle now) const {
  if (a.ready > now) return Progress::NotReady;
  if (a.memory_only) return Progress::Moved;
  if (a.fabin & ~queued_) return Progress::NoInput;  // a colour it reads has an empty input queue
  if (a.outq >= 0) {
    const PeOutputQueue& q = outq_[size_t(a.outq)];
    if (q.count >= q.cap) return Progress::NoRoom;
  }
  return Progress::Moved;
}

uint32_t Pe::run_memory_op(const DsdOp& op, const MachineSpec& spec, uint32_t& fmac, uint32_t& move) {
  uint8_t* m = sram.base();
  const uint32_t n = op.length;
  const float sv = from_bits(op.scalar, op.t_s);
  if (op.code == DsdOpCode::Mov && op.t_dst == op.t_a) {  // a plain copy keeps every bit
    const uint32_t bytes = elem_bytes(op.t_dst);
    for (uint32_t i = 0; i < n; ++i) {
      uint32_t bits = op.a.offset;
      if (op.a.mem()) std::memcpy(&bits, m + mem_elem_offset(op.a, i, op.t_a), bytes);
      std::memcpy(m + mem_elem_offset(op.dst, i, op.t_dst), &bits, bytes);
    }
  } else {
    for (uint32_t i = 0; i < n; ++i) {
      const float va = op.a.mem() ? mem_read(m, op.a, i, op.t_a) : from_bits(op.a.offset, op.t_a);
      const float vb = op.b.mem() ? mem_read(m, op.b, i, op.t_b)
                                  : op.b.scalar() ? from_bits(op.b.offset, op.t_b) : 0.0f;
      mem_write(m, op.dst, i, op.t_dst, dsd_compute(op, va, vb, sv));
    }
  }
  const uint32_t w = dsd_simd_width(op, spec);
  const uint32_t cycles = (n + w - 1) / w;
  if (is_multiply(op.code)) {
    counters.fmac_cycles += cycles, fmac += cycles;
    if (op.code == DsdOpCode::Mac) counters.macs += n;
  } else {
    counters.move_cycles += cycles, move += cycles;
  }
  return cycles;
}

Pe::Progress Pe::progress(ActiveOp& a, uint8_t thread, TileId self, Cycle now, Scheduler& s, const MachineSpec& spec) {
  if (a.memory_only) {
    if (a.done == 0) a.started = now, a.cycles = std::max<uint32_t>(1, run_memory_op(a.op, spec, a.fmac, a.move));
    if (++a.done >= a.cycles) {
      finish_op(a, thread, now + 1);
      return Progress::Done;
    }
    return Progress::Moved;
  }
  const DsdOp& op = a.op;
  if (a.done == 0) a.started = now;
  const uint32_t i = a.done;
  uint8_t* m = sram.base();
  uint32_t bits[2] = {0, 0};
  const Dsd* src[2] = {&op.a, &op.b};
  const ElemType ts[2] = {op.t_a, op.t_b};
  for (int k = 0; k < 2; ++k) {
    const Dsd& d = *src[k];
    switch (d.kind) {
      case DsdKind::FabIn: {
        PeInputQueue& q = queues_[size_t(queue_of_[d.colour])];
        bits[k] = q.slots[q.head];
        if (++q.head == PeInputQueue::kSlots) q.head = 0;
        if (--q.count == 0) queued_ &= ~colour_bit(d.colour);
        ramp_down_->credits.push({now + 1, d.colour});
        wake(self, now + 1, s);
        break;
      }
      case DsdKind::Mem: {  // the element's 4 or 2 bytes, by type (a copy of a fixed size, not a loop)
        const uint8_t* at = m + mem_elem_offset(d, i, ts[k]);
        if (ts[k] == ElemType::F32) {
          std::memcpy(&bits[k], at, 4);
        } else {
          uint16_t h;
          std::memcpy(&h, at, 2);
          bits[k] = h;
        }
        break;
      }
      case DsdKind::Scalar:
      case DsdKind::ScalarF16: bits[k] = d.offset; break;
      default: break;
    }
  }
  uint32_t out;
  if (op.code == DsdOpCode::Mov && op.t_dst == op.t_a) {
    out = bits[0];
  } else {
    const float r = dsd_compute(op, from_bits(bits[0], op.t_a), op.b.kind == DsdKind::None ? 0.0f : from_bits(bits[1], op.t_b),
                                from_bits(op.scalar, op.t_s));
    out = to_bits(r, op.t_dst);
  }
  if (op.dst.kind == DsdKind::FabOut) {
    PeOutputQueue& q = outq_[size_t(outq_of_[op.dst.colour])];
    uint32_t at = q.head + q.count;
    if (at >= PeOutputQueue::kSlots) at -= PeOutputQueue::kSlots;
    const bool last = i + 1 == op.length;
    q.payload[at] = out;
    q.flags[at] = uint8_t((op.dst.flags & kControl) | (last ? (op.dst.flags & kAdvanceSwitch) : 0));
    q.ready[at] = uint32_t(now + spec.dsd_pipeline_cycles);
    ++q.count;
    ++out_wavelets_;
  } else {
    uint8_t* at = m + mem_elem_offset(op.dst, i, op.t_dst);
    if (op.t_dst == ElemType::F32) {
      std::memcpy(at, &out, 4);
    } else {
      const uint16_t h = uint16_t(out);
      std::memcpy(at, &h, 2);
    }
  }
  if (is_multiply(op.code)) {
    ++counters.fmac_cycles, ++a.fmac;
    if (op.code == DsdOpCode::Mac) ++counters.macs;
  } else {
    ++counters.move_cycles, ++a.move;
  }
  if (++a.done == op.length) {
    finish_op(a, thread, now + 1);
    return Progress::Done;
  }
  return Progress::Moved;
}

void Pe::finish_op(ActiveOp& a, uint8_t thread, Cycle end) {
  for (const Dsd* d : {&a.op.a, &a.op.b})
    if (d->kind == DsdKind::FabIn) reading_ &= ~colour_bit(d->colour);
  if (a.op.dst.kind == DsdKind::FabOut) writing_ &= ~colour_bit(a.op.dst.colour);
  if (task_log) {
    TaskCost c;
    c.start = a.started, c.fmac = a.fmac, c.move = a.move, c.colour = a.task, c.local = a.task_local;
    c.thread = thread, c.op = a.op.name, c.finish = end;
    log(c);
  }
  complete(a.op.opts);
  if (thread == 0) main_active_ = false;
  else uts_active_ &= ~(1u << (thread - 1));
}

void Pe::settle_sleep(Cycle now) {
  // What the sleep held (a send stall, a head waiting for a credit, an op being set up) is
  // counted up to now, as at a sample boundary; this step looks at each afresh.
  settle(now);
  stall_from_ = ramp_blocked_from_ = setup_from_ = kNever;
}

bool Pe::in_setup(Cycle c) const {
  if (main_active_ && main_op_->ready > c) return true;
  for (uint32_t m = uts_active_; m; m &= m - 1)
    if (uts_[size_t(std::countr_zero(m))].ready > c) return true;
  return false;
}

void Pe::complete(const OpOptions& o) {
  if (o.activate.kind == TaskRef::Local) local_pending_ |= 1u << o.activate.id;
  if (o.unblock.kind == TaskRef::Local) local_blocked_ &= ~(1u << o.unblock.id);
  if (o.unblock.kind == TaskRef::Data) colour_blocked_ &= ~colour_bit(o.unblock.id);
}

Pe::ActiveOp& Pe::microthread_slot(uint8_t k) {
  if (k >= uts_slots_) {
    auto grown = std::make_unique<ActiveOp[]>(size_t(k) + 1);
    std::copy(uts_.get(), uts_.get() + uts_slots_, grown.get());
    uts_ = std::move(grown);
    uts_slots_ = uint8_t(k + 1);
  }
  return uts_[k];
}

Pe::MainItem& Pe::next_fifo_item() {
  const size_t size = fifo_.size();
  if (fifo_count_ == size) {  // full (or not allocated yet): the items in order, in a ring twice the size
    std::vector<MainItem> grown(std::min<size_t>(std::max<size_t>(2 * size, 2), kMainFifo));
    for (size_t i = 0; i < fifo_count_; ++i) grown[i] = fifo_[(fifo_head_ + i) % size];
    fifo_ = std::move(grown);
    fifo_head_ = 0;
  }
  return fifo_[(fifo_head_ + fifo_count_) % fifo_.size()];
}

// ---- the main thread ----

bool Pe::main_can_start() const {
  if (fifo_count_) return true;
  if (local_pending_ & ~local_blocked_) return true;
  if (!program) return false;
  return queued_ & data_tasks_ & ~(colour_blocked_ | reading_);
}

void Pe::apply(const MainItem& item) {
  const TaskRef& t = item.task;
  switch (item.kind) {
    case MainItem::Activate: local_pending_ |= 1u << t.id; break;
    case MainItem::Block:
      if (t.kind == TaskRef::Local) local_blocked_ |= 1u << t.id;
      else colour_blocked_ |= colour_bit(t.id);
      break;
    case MainItem::Unblock:
      if (t.kind == TaskRef::Local) local_blocked_ &= ~(1u << t.id);
      else colour_blocked_ &= ~colour_bit(t.id);
      break;
    default: break;
  }
}

void Pe::claim(ActiveOp& a) {
  a.fabin = 0, a.outq = -1;
  if (a.op.a.kind == DsdKind::FabIn && a.op.b.kind == DsdKind::FabIn && a.op.a.colour == a.op.b.colour)
    fail(&a, "reads colour " + std::to_string(a.op.a.colour) + " as both its sources (each wavelet reaches one reader: give the " +
                 "second operand its own colour)");
  for (const Dsd* d : {&a.op.a, &a.op.b})
    if (d->kind == DsdKind::FabIn) {
      if (reading_ & colour_bit(d->colour)) fail(&a, "colour " + std::to_string(d->colour) + " is already read by another running op");
      reading_ |= colour_bit(d->colour);
      a.fabin |= colour_bit(d->colour);
    }
  if (a.op.dst.kind == DsdKind::FabOut) {
    if (writing_ & colour_bit(a.op.dst.colour))
      fail(&a, "colour " + std::to_string(a.op.dst.colour) + " is already written by another running op");
    writing_ |= colour_bit(a.op.dst.colour);
    a.outq = outq_of_[a.op.dst.colour];
  }
}

void Pe::start_main(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec) {
  while (fifo_count_) {
    MainItem& item = fifo_[fifo_head_];
    if (++fifo_head_ == fifo_.size()) fifo_head_ = 0;
    --fifo_count_;
    if (item.kind != MainItem::Op) {
      apply(item);
      continue;
    }
    ActiveOp& a = item.op;
    ++counters.dsd_ops;
    if (a.op.opts.async) {
      // Launched from the queue: the microthread starts it after its DSD setup.
      uint8_t k = a.op.opts.microthread < 0 ? uint8_t(std::countr_zero(~uts_active_)) : uint8_t(a.op.opts.microthread);
      if (k >= microthreads_)
        fail(&a, "no free microthread for an asynchronous op (" + std::to_string(microthreads_) + " on " + spec.name + ")");
      if (uts_active_ >> k & 1u)
        fail(&a, "microthread " + std::to_string(k) + " still runs @" + std::string(uts_[k].op.name) + " (issued by " +
                     task_label(uts_[k].task_local, uts_[k].task) + "): one op per microthread at a time");
      claim(a);
      ActiveOp& slot = microthread_slot(k);  // `a` is in the queue, not among the microthreads
      slot = a;
      slot.ready = now + (a.memory_only ? 0 : spec.fabric_dsd_setup_cycles);
      setup_until_ = std::max(setup_until_, slot.ready);
      uts_active_ |= 1u << k;
      continue;
    }
    if (a.memory_only) {
      uint32_t fmac = 0, move = 0;
      const uint32_t cycles = run_memory_op(a.op, spec, fmac, move);
      busy_until_ = now + std::max<uint32_t>(1, cycles);
      work_until_ = now + cycles;
      last_task_ = {now, 0, fmac, move, a.task, a.task_local};
      last_task_paused_ = 0;
      if (task_log) {
        TaskCost c = last_task_;
        c.op = a.op.name, c.finish = busy_until_;
        log(c);
      }
      // What it activates or unblocks on completion (it was dropped here: a task it activated
      // never ran). Pending from now, it starts when the main thread is free, after the op.
      complete(a.op.opts);
      return;
    }
    claim(a);
    if (!main_op_) main_op_ = std::make_unique<ActiveOp>();
    *main_op_ = a;
    main_op_->ready = now + spec.fabric_dsd_setup_cycles;  // the fabric DSDs are set up first (a latency, not datapath work)
    setup_until_ = std::max(setup_until_, main_op_->ready);
    main_active_ = true;
    if (can_progress(*main_op_, now) == Progress::Moved) progress(*main_op_, 0, self, now, s, spec);
    return;
  }
  run_task(self, now, s, spec);
}

void Pe::run_task(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec) {
  bool local;
  uint8_t id;
  Wavelet w;
  if (const uint32_t ready = local_pending_ & ~local_blocked_) {
    id = uint8_t(std::countr_zero(ready));
    local_pending_ &= ~(1u << id);
    local = true;
  } else {
    // Round-robin over colours with a waiting wavelet that a data task may take.
    const uint32_t may = queued_ & data_tasks_ & ~(colour_blocked_ | reading_);
    if (!may) return;  // nothing to do: stay idle until a wavelet arrives
    const size_t n = queues_.size();
    PeInputQueue* q = nullptr;
    for (size_t k = 1, i = rr_; k <= n && !q; ++k) {
      if (++i == n) i = 0;
      if (may & colour_bit(queues_[i].colour)) q = &queues_[i], rr_ = uint8_t(i);
    }
    w = {q->slots[q->head], q->colour};
    if (++q->head == PeInputQueue::kSlots) q->head = 0;
    if (--q->count == 0) queued_ &= ~colour_bit(q->colour);
    ramp_down_->credits.push({now + 1, w.colour});
    wake(self, now + 1, s);
    id = w.colour;
    local = false;
  }
  const uint32_t receive = local ? 0 : spec.data_task_receive_cycles;
  in_task_ = true, task_id_ = id, task_local_ = local, task_fmac_ = task_move_ = 0;
  dispatch_at_ = now + receive;
  ++counters.tasks;
  counters.receive_cycles += receive;
  PeContext ctx(*this, spec, now);
  try {
    if (local) program->local_tasks[id](ctx);
    else program->data_tasks[id](ctx, w);
  } catch (...) {
    in_task_ = false;
    throw;
  }
  in_task_ = false;
  busy_until_ = now + std::max<uint32_t>(1, receive + ctx.cost());
  work_until_ = now + receive + ctx.cost();
  last_task_ = {now, receive, task_fmac_, task_move_, id, local};
  last_task_paused_ = 0;
  log(last_task_);
}

bool Pe::drain(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec) {
  if (!out_wavelets_) return false;
  const size_t n = outq_.size();
  for (size_t k = 1, i = out_rr_; k <= n; ++k) {
    if (++i == n) i = 0;
    PeOutputQueue& q = outq_[i];
    if (!q.count || !q.head_ready(now) || !credits_[q.colour]) continue;
    --credits_[q.colour];
    ramp_up_->flits.push({now + spec.ramp_latency_cycles, q.payload[q.head], q.colour, q.flags[q.head]});
    ++ramp_up_->counters.wavelets;  // the PE is the link's sender: it counts what enters (a router counts its out links)
    wake(self, now + spec.ramp_latency_cycles, s);  // the router takes it from there
    if (++q.head == PeOutputQueue::kSlots) q.head = 0;
    --q.count;
    --out_wavelets_;
    out_rr_ = uint8_t(i);
    ++counters.send_cycles;
    ++counters.wavelets_out;
    return true;
  }
  return false;
}

void Pe::step(TileId self, Cycle now, Scheduler& s, const MachineSpec& spec) {
  if (noted_) ingest(self, now, s, spec);  // (nothing reached the RAMP links since the last one took all)
  if ((stall_from_ & ramp_blocked_from_ & setup_from_) != kNever) settle_sleep(now);  // (one test: all kNever mostly)
  if (!started_) {
    started_ = true;
    if (program && program->start_task >= 0) local_pending_ |= 1u << program->start_task;
  }

  // Which threads can use the datapath this cycle (bit k: microthread k; bit 31: main).
  constexpr uint32_t kMain = 1u << 31;
  uint32_t ready = 0;
  bool no_room = false;
  for (uint32_t m = uts_active_; m; m &= m - 1) {
    const int k = std::countr_zero(m);
    const Progress p = can_progress(uts_[size_t(k)], now);
    if (p == Progress::Moved) ready |= 1u << k;
    no_room |= p == Progress::NoRoom;
  }
  if (now >= busy_until_) {
    if (main_active_) {
      const Progress p = can_progress(*main_op_, now);
      if (p == Progress::Moved) ready |= kMain;
      no_room |= p == Progress::NoRoom;
    } else if (program && main_can_start()) {
      ready |= kMain;
    }
  }
  bool moved = false;  // a thread moved an element this cycle
  if (ready) {
    // Round-robin: the first ready thread after the one granted last.
    const uint32_t order = (ready & kMain) ? (ready & ~kMain) | (1u << microthreads_) : ready;
    const uint32_t after = order & ~((2u << grant_rr_) - 1u);
    const int g = std::countr_zero(after ? after : order);
    grant_rr_ = uint8_t(g);
    if (g == microthreads_) {
      if (main_active_) progress(*main_op_, 0, self, now, s, spec), moved = true;
      else start_main(self, now, s, spec);
    } else {
      progress(uts_[size_t(g)], uint8_t(g + 1), self, now, s, spec), moved = true;
      if (busy_until_ > now) ++busy_until_;  // the main thread's SIMD work pauses for a cycle
      if (work_until_ > now) ++work_until_, ++last_task_paused_;
    }
  } else if (no_room && now >= work_until_) {
    // The datapath waits for an output queue to drain: a stall only when it has nothing else to
    // do (the main thread's SIMD work goes on beside a microthread waiting for room, and was
    // counted as stalled too: more datapath cycles than the run had).
    stall_from_ = now;
  }
  // A cycle of setup: an op still being set up (rarely: most steps stop at the first test), no
  // datapath work (no element moved, no task or memory op computing) and no send stall.
  if (now < setup_until_ && !moved && now >= work_until_ && stall_from_ != now && in_setup(now)) ++counters.setup_cycles;
  const bool sent = out_wavelets_ && drain(self, now, s, spec);  // most cycles have nothing to send: no call

  // When to step again: next cycle if a thread can go on, else when something becomes ready;
  // arrivals and credits wake us otherwise.
  Cycle next = kNever;
  const Cycle soon = now + 1;
  auto consider = [&](Cycle c) { next = std::min(next, std::max(c, soon)); };
  bool waits_room = false;
  for (uint32_t m = uts_active_; m; m &= m - 1) {
    const ActiveOp& a = uts_[size_t(std::countr_zero(m))];
    const Progress p = can_progress(a, soon);
    if (p == Progress::Moved || p == Progress::NotReady) consider(a.ready);
    waits_room |= p == Progress::NoRoom;
  }
  if (main_active_) {
    const Progress p = can_progress(*main_op_, soon);
    if (p == Progress::Moved || p == Progress::NotReady) consider(std::max(main_op_->ready, busy_until_));
    waits_room |= p == Progress::NoRoom;
  } else if (busy_until_ > now || (program && main_can_start())) {
    consider(busy_until_);  // the main thread is free then and looks for work
  }
  // Sleeping with an op that waits for room: a send stall from the next cycle until woken.
  if (stall_from_ == kNever && waits_room && next != soon) stall_from_ = std::max(soon, work_until_);
  // Sleeping, without a stall, while an op is set up: setup cycles from when the main thread is
  // free until woken (at the latest when the first op in setup is ready: consider() above).
  if (soon < setup_until_ && stall_from_ == kNever && next != soon && in_setup(std::max(soon, work_until_)))
    setup_from_ = std::max(soon, work_until_);
  if (out_wavelets_) {
    // A head without a credit waits on the RAMP-up link from when it is ready (this cycle, if
    // nothing was sent), until a credit wakes the PE: that link's backpressure.
    const Cycle first = sent ? soon : now;
    for (const PeOutputQueue& q : outq_) {
      if (!q.count) continue;
      if (!q.head_ready(now) || credits_[q.colour]) consider(q.head_ready_at(now));
      if (!credits_[q.colour]) ramp_blocked_from_ = std::min(ramp_blocked_from_, std::max(first, q.head_ready_at(now)));
    }
  }
  due_ = next;  // until then (or a push onto a RAMP link) a step would change nothing
  if (next != kNever) wake(self, next, s);
  // This step's own activity (what settle_sleep() counted above set active_end_ itself): this
  // cycle, or the end of the datapath work it charged ahead (a task's cycles).
  const uint64_t seen = activity_sum();
  if (seen != activity_seen_) activity_seen_ = seen, active_end_ = std::max({active_end_, soon, work_until_});
}

// ---- PeContext ----

void PeContext::issue(DsdOp op, const OpOptions& o) {
  Pe& pe = pe_;
  op.opts = o;
  // The op as a thread holds it: built only for the ops that wait or run on a microthread.
  auto active = [&] {
    Pe::ActiveOp a;
    a.task = pe.task_id_, a.task_local = pe.task_local_;
    a.op = op;
    return a;
  };
  auto bad = [&](const std::string& what) {
    const Pe::ActiveOp a = active();
    pe.fail(&a, what);
  };
  // Length: every vector operand must have the destination's.
  const Dsd* ops[3] = {&op.dst, &op.a, &op.b};
  for (const Dsd* d : ops)
    if (d->kind == DsdKind::BadStride)
      bad("a memory DSD with a stride of " + std::to_string(d->stride) + " elements: a mem1d_dsd's stride is an i8 (-128 to 127)");
  const ElemType types[3] = {op.t_dst, op.t_a, op.t_b};
  if (op.dst.kind == DsdKind::None || op.dst.scalar() || op.dst.kind == DsdKind::FabIn)
    bad("the destination must be a memory or fabric-output DSD");
  uint32_t n = op.dst.length;
  // A source the op reads must be given (a default Dsd{} read as zeros, silently); a scalar must
  // be of the type the op reads there (CSL's scalars are typed).
  const bool binary = op.code != DsdOpCode::Mov && op.code != DsdOpCode::Neg && op.code != DsdOpCode::Cvt;
  for (int k = 1; k < (binary ? 3 : 2); ++k)
    if (ops[k]->kind == DsdKind::None) bad(std::string("source operand ") + (k == 1 ? "a" : "b") + " is an empty DSD (Dsd{}): give a memory, fabric-input or scalar DSD");
  for (int k = 1; k < 3; ++k)
    if (const Dsd& d = *ops[k]; d.scalar() && (d.kind == DsdKind::ScalarF16) != (types[k] == ElemType::F16))
      bad(std::string("source operand ") + (k == 1 ? "a" : "b") + " is an " + (d.kind == DsdKind::ScalarF16 ? "fp16 scalar (scalar_f16)" : "fp32 scalar (scalar_f32)") +
          ", where @" + op.name + " reads " + (types[k] == ElemType::F16 ? "fp16: use scalar_f16" : "fp32: use scalar_f32"));
  for (int k = 1; k < 3; ++k) {
    const Dsd& d = *ops[k];
    if (d.kind == DsdKind::FabOut) bad("a source operand is a fabric-output DSD");
    if ((d.kind == DsdKind::Mem || d.kind == DsdKind::FabIn) && d.length != n)
      bad("operand lengths differ: the destination has " + std::to_string(n) + " elements, a source " +
          std::to_string(d.length));
  }
  // The SDK's limits on an op: a DSD's extent is a u16, and an op may activate or unblock a task
  // on completion, not both ("At most one of activate or unblock may be specified").
  if (n > 0xffff) bad("a DSD of " + std::to_string(n) + " elements: a DSD's extent is a u16 (at most 65535)");
  if (op.opts.activate.kind != TaskRef::None && op.opts.unblock.kind != TaskRef::None)
    bad("both activate and unblock are set: an op may do one of them on completion (the SDK's rule)");
  // What it activates or unblocks on completion must exist (an unbound local task was called
  // through a null pointer when the op completed); activate takes a local task, as activate() does.
  if (op.opts.activate.kind == TaskRef::Data)
    bad("activates the data task of colour " + std::to_string(op.opts.activate.id) +
        " on completion: an op activates a local task (a data task runs when its wavelets arrive)");
  if (std::string e = task_problem(op.opts.activate, "activates", " on completion"); !e.empty()) bad(e);
  if (std::string e = task_problem(op.opts.unblock, "unblocks", " on completion"); !e.empty()) bad(e);
  op.length = n;
  if (n == 0) return;
  bool fabric = false;
  for (int k = 0; k < 3; ++k) {
    const Dsd& d = *ops[k];
    if (d.kind == DsdKind::Mem) {
      // An element lies at a multiple of its size, as an array of them does (SRAM is addressed
      // in 16-bit words: an fp16 at an odd byte, or an fp32 across a word pair's boundary, is
      // no DSD a program can make). The model's byte offsets would run one silently.
      if (d.offset % elem_bytes(types[k]) != 0)
        bad("a memory DSD at byte offset " + std::to_string(d.offset) + " for " + (types[k] == ElemType::F32 ? "fp32" : "fp16") +
            " elements: they lie at multiples of " + std::to_string(elem_bytes(types[k])) + " bytes");
      const int64_t first = mem_elem_offset(d, 0, types[k]), last = mem_elem_offset(d, n - 1, types[k]);
      const int64_t lo = std::min(first, last), hi = std::max(first, last) + elem_bytes(types[k]);
      if (lo < 0 || hi > int64_t(pe.sram.capacity()))
        bad("a memory DSD (offset " + std::to_string(d.offset) + ", " + std::to_string(n) + " elements, stride " +
            std::to_string(d.stride) + ") reaches bytes [" + std::to_string(lo) + ", " + std::to_string(hi) +
            "), beyond the PE's " + std::to_string(pe.sram.capacity()) + " bytes of SRAM");
    } else if (d.kind == DsdKind::FabIn) {
      fabric = true;
      if (d.colour >= MachineSpec::kMaxColours || pe.queue_of_[d.colour] < 0)
        bad("reads colour " + std::to_string(d.colour) + " from the fabric, but the router delivers no such colour to this PE "
            "(no route with tx RAMP)");
    } else if (d.kind == DsdKind::FabOut) {
      fabric = true;
      if (d.colour >= MachineSpec::kMaxColours || pe.outq_of_[d.colour] < 0)
        bad("sends on colour " + std::to_string(d.colour) + ", but its router has no route receiving that colour from the RAMP");
    }
  }
  // WSE-3 refuses an op with two fabric sources (the SDK's DSDs page); it ran here (a PE audit,
  // forty-sixth round). No shipped kernel reads two.
  if (op.a.kind == DsdKind::FabIn && op.b.kind == DsdKind::FabIn && spec_.fabric_inputs_per_op < 2)
    bad("reads two fabric sources (colours " + std::to_string(op.a.colour) + " and " + std::to_string(op.b.colour) + "), but an op on " +
        spec_.name + " may read " + std::to_string(spec_.fabric_inputs_per_op) + " (machine.fabric_inputs_per_op): move one into memory first");
  if (op.opts.microthread < -1)
    bad("microthread " + std::to_string(op.opts.microthread) + " is out of range (-1, the default, takes the lowest free one)");
  if (op.opts.microthread >= int(pe.microthreads_))
    bad("microthread " + std::to_string(op.opts.microthread) + " is out of range (" + spec_.name + " has " +
        std::to_string(pe.microthreads_) + ")");
  if (op.opts.microthread >= 0 && !op.opts.async) bad("a microthread was named for a synchronous op (set async)");
  const uint32_t setup = fabric ? spec_.fabric_dsd_setup_cycles : 0;
  const bool queued = pe.fifo_count_ || pe.main_active_;
  if (op.opts.async && !queued) {
    Pe::ActiveOp a = active();
    a.memory_only = !fabric;
    // Start it on a microthread once the task's immediate work so far is done.
    uint8_t k = op.opts.microthread < 0 ? uint8_t(std::countr_zero(~pe.uts_active_)) : uint8_t(op.opts.microthread);
    if (k >= pe.microthreads_)
      bad("more asynchronous ops in flight than the " + std::to_string(pe.microthreads_) + " microthreads of " + spec_.name +
          " (machine.microthreads)");
    if (pe.uts_active_ >> k & 1u)
      bad("microthread " + std::to_string(k) + " still runs @" + std::string(pe.uts_[k].op.name) + " (issued by " +
          pe.task_label(pe.uts_[k].task_local, pe.uts_[k].task) + "): one op per microthread at a time");
    pe.claim(a);
    a.ready = pe.dispatch_at_ + cost_ + setup;
    pe.setup_until_ = std::max(pe.setup_until_, a.ready);
    pe.microthread_slot(k) = a;
    pe.uts_active_ |= 1u << k;
    ++pe.counters.dsd_ops;
    return;
  }
  if (!queued && !fabric) {
    // Runs now: its effect is visible to the code that follows; its cycles are the task's.
    uint32_t fmac = 0, move = 0;
    cost_ += pe.run_memory_op(op, spec_, fmac, move);
    pe.task_fmac_ += fmac, pe.task_move_ += move;
    ++pe.counters.dsd_ops;
    // It completes here: what it activates or unblocks, as an activate() or unblock() right
    // after it would (a synchronous op behind a stream does the same when its turn ends).
    pe.complete(op.opts);
    return;
  }
  // Behind a streaming op (or one itself): the main thread runs it in turn.
  Pe::ActiveOp a = active();
  a.memory_only = !fabric;
  if (pe.fifo_count_ == kMainFifo)
    bad("more than " + std::to_string(kMainFifo) + " ops and task actions queued behind a streaming op by one task");
  Pe::MainItem& item = pe.next_fifo_item();
  item.kind = Pe::MainItem::Op;
  item.op = a;
  ++pe.fifo_count_;
}

std::string PeContext::task_problem(const TaskRef& t, const char* what, const char* when) const {
  const size_t bound = pe_.program ? pe_.program->local_tasks.size() : 0;
  if (t.kind == TaskRef::Local && t.id >= bound)
    return std::string(what) + " local task " + std::to_string(t.id) + when + ", which its program does not have (it binds " +
           std::to_string(bound) + ")";
  if (t.kind == TaskRef::Data && t.id >= spec_.colours)
    return std::string(what) + " the data task of colour " + std::to_string(t.id) + when + ", beyond the " +
           std::to_string(spec_.colours) + " colours of a " + spec_.name + " PE";
  return {};
}

void PeContext::check_task(const TaskRef& t, const char* what) const {
  // A TaskRef{} names no task (it blocked colour 0's data task, which then never ran).
  if (t.kind == TaskRef::None)
    pe_.fail(nullptr, std::string(what) + " TaskRef{}, which names no task: use TaskRef::local(id) or TaskRef::data(colour)");
  if (std::string e = task_problem(t, what, ""); !e.empty()) pe_.fail(nullptr, e);
}

void PeContext::at_beyond(uint32_t byte_offset, size_t bytes) const {
  pe_.fail(nullptr, "reads or writes " + std::to_string(bytes) + " bytes at SRAM offset " + std::to_string(byte_offset) +
                        " (PeContext::at), beyond the PE's " + std::to_string(pe_.sram.capacity()) + " bytes of SRAM");
}

void PeContext::issue_item(int kind, TaskRef t) {
  if (pe_.fifo_count_ == kMainFifo)
    pe_.fail(nullptr, "more than " + std::to_string(kMainFifo) + " ops and task actions queued behind a streaming op by one task");
  Pe::MainItem& item = pe_.next_fifo_item();
  item.kind = Pe::MainItem::Kind(kind);
  item.task = t;
  ++pe_.fifo_count_;
}

void PeContext::activate(uint8_t local_task) {
  check_task(TaskRef::local(local_task), "activates");
  if (pe_.fifo_count_ || pe_.main_active_) {
    issue_item(Pe::MainItem::Activate, TaskRef::local(local_task));
    return;
  }
  pe_.local_pending_ |= 1u << local_task;
}

void PeContext::block(TaskRef t) {
  check_task(t, "blocks");
  if (pe_.fifo_count_ || pe_.main_active_) return issue_item(Pe::MainItem::Block, t);
  Pe::MainItem item;
  item.kind = Pe::MainItem::Block, item.task = t;
  pe_.apply(item);
}

void PeContext::unblock(TaskRef t) {
  check_task(t, "unblocks");
  if (pe_.fifo_count_ || pe_.main_active_) return issue_item(Pe::MainItem::Unblock, t);
  Pe::MainItem item;
  item.kind = Pe::MainItem::Unblock, item.task = t;
  pe_.apply(item);
}

void PeContext::elementwise(uint32_t n) {
  const uint32_t c = (n + spec_.move_simd_fp32 - 1) / spec_.move_simd_fp32;
  pe_.counters.move_cycles += c;
  pe_.task_move_ += c;
  cost_ += c;
}

}  // namespace wse
