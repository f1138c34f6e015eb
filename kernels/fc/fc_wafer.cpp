#include "kernels/fc/fc_wafer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>

#include "core/errors.hpp"

namespace wse {

nlohmann::json PassStats::to_json() const {
  return {{"runs", runs},
          {"cycles", cycles},
          {"macs", macs},
          {"macs_skipped", macs_skipped},
          {"wavelets_streamed", wavelets_streamed},
          {"memoryx_bytes", memoryx_bytes},
          {"stream_bound_cycles", stream_bound_cycles},
          {"compute_bound_cycles", compute_bound_cycles},
          {"tail_cycles", tail_cycles},
          {"weights_streamed", weights_streamed},
          {"gradient_wavelets", gradient_wavelets},
          {"wait_cycles", wait_cycles}};
}

void PassStats::add(const PassStats& o) {
  runs += o.runs, cycles += o.cycles, macs += o.macs, macs_skipped += o.macs_skipped;
  wavelets_streamed += o.wavelets_streamed, memoryx_bytes += o.memoryx_bytes;
  stream_bound_cycles += o.stream_bound_cycles, compute_bound_cycles += o.compute_bound_cycles, tail_cycles += o.tail_cycles;
  weights_streamed += o.weights_streamed, gradient_wavelets += o.gradient_wavelets, wait_cycles += o.wait_cycles;
}

namespace {

// The ports a run said would carry nothing (EgressPort::set_carries) took no share of the edge's
// rate: one that received a wavelet anyway would have left faster than the edge allows.
void expect_no_egress(const Mesh& mesh, const std::string& run) {
  for (const EgressPort& e : mesh.egress_ports())
    if (!e.carries() && !e.received().empty())
      throw std::logic_error(run + ": an egress port at " + to_string(e.tile()) + " received " + std::to_string(e.received().size()) +
                             " wavelet(s) where the layout sends none");
}

// A PE's buffer by name (0 when it has none now).
struct Buffers {
  Wafer& wafer;
  Coord pe;
  uint32_t offset(const std::string& name) {
    const SramAllocation* a = wafer.pe(pe).sram.find(wafer.names().intern(name));
    return a ? a->offset : 0;
  }
};

uint64_t macs_of(const Wafer& w) {
  uint64_t m = 0;
  for (const Pe& pe : w.pes()) m += pe.counters.macs;
  return m;
}

// A counter filter that hands a PE words [first, first + words) of every `total` on a colour.
void keep_window(Mesh& mesh, Coord pe, Colour colour, uint32_t first, uint32_t words, uint32_t total) {
  // No words: the counter runs 1..total over the pass's `total` words and passes only at 0, which
  // the (total + 1)-th would reach; a pass sends `total`, and the filter is set anew every pass.
  if (words == 0) mesh.set_filter(pe, colour, {1, total, 0});
  else if (words == total) mesh.clear_filter(pe, colour);
  else mesh.set_filter(pe, colour, CounterFilter::window(first, words, total));
}

}  // namespace

FcWafer::FcWafer(const FcLayout& layout, Wafer& wafer, uint32_t index, unsigned threads, Cycle max_cycles, std::string where)
    : layout_(layout), wafer_(wafer), index_(index), max_cycles_(max_cycles), where_(std::move(where)) {
  layout.build(wafer);
  wafer.finalize(threads);
  fwd_.resize(layout.layer_count());
  bwd_.resize(layout.layer_count());
  fwd_time_.resize(layout.layer_count());
  bwd_time_.resize(layout.layer_count());
  functional_ = std::make_unique<FcFunctional>(layout);
}

uint32_t FcWafer::sram_high_water() const {
  uint32_t hw = 0;
  for (const Pe& pe : wafer_.pes()) hw = std::max(hw, pe.sram.high_water());
  return hw;
}

// Words of this port reach the edge at the port's share of the off-wafer rate: the streams of a
// layer are interleaved on the link in proportion to their length.
void FcWafer::arrive(IngressPort& port, uint64_t words, uint64_t total_words, const EdgeTiming& t) {
  // No pace given: every word is there from the port's start (set when the run restarted it).
  if (t.bytes_per_cycle <= 0 || total_words == 0) return;
  EdgeArrival a;
  // From the message's arrival, even one before the pass starts: what reached the edge while the
  // wafer was busy waits there (a weight stream's head, at most edge_buffer_bytes; an input batch
  // the wafer gave a credit for) and is there at the pass's first cycle, at the edge's pace only.
  // (Until 2026-12-02 the schedule began again at the pass's start, feeding the waiting bytes in
  // a second time at the link's rate: a stream-bound step 3.67% long.)
  a.head_first = t.head_first;
  const uint64_t total_bytes = total_words * 4;
  const uint64_t head = std::min(t.head_bytes, total_bytes);
  a.head_words = head >= total_bytes ? words : words * head / total_bytes;
  a.tail_first = t.tail_first;
  a.rate = PortRate::from(t.bytes_per_cycle / 4.0 * double(words) / double(total_words));
  port.set_arrival(a);
}

WaferRun FcWafer::run(const std::string& what, RunHooks hooks) {
  if (tuner_) wafer_.set_workers(tuner_->pick(what));
  WaferRun r = wafer_.run(max_cycles_, hooks);
  const double end = std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  intervals_.emplace_back(end - r.host_seconds, end);  // (a vector entry a run, not a wavelet)
  if (tuner_) tuner_->record(what, r.threads, r.host_seconds, r.cycles);
  host_seconds_ += r.host_seconds;
  engine_cycles_ += r.cycles;
  if (!r.engine.waiting.empty()) {
    if (waited_seconds_.size() < r.engine.waiting.size()) waited_seconds_.resize(r.engine.waiting.size(), 0.0);
    for (size_t w = 0; w < r.engine.waiting.size(); ++w) waited_seconds_[w] += r.engine.waiting[w] * r.host_seconds;
    shared_seconds_ += r.host_seconds;
  }
  if (r.engine.hit_cycle_limit)
    throw UsageError(where_ + ": " + what + " on wafer " + std::to_string(index_) + " did not finish within run.max_cycles = " +
                     std::to_string(max_cycles_));
  return r;
}

FcPassResult FcWafer::load_input(const InputShard& shard, Cycle start, const EdgeTiming& timing) {
  const uint32_t p = layout_.p(), q = layout_.q();
  const uint32_t features = layout_.model().layers[0];
  if (shard.rows != layout_.batch_per_wafer() || shard.features != features || shard.half != layout_.model().mixed ||
      shard.values.size() != uint64_t(shard.rows) * features || shard.labels.size() != shard.rows)
    throw std::logic_error("FcWafer::load_input: the shard does not match the layout (checked when its message was decoded)");
  if (!detailed_) {
    functional_->load_input(shard);
    FcPassResult out;
    out.start = start, out.end = start + input_time_.duration;
    last_end_ = std::max(last_end_, out.end);
    return out;
  }
  Mesh& mesh = wafer_.mesh();
  FcPassResult out;
  out.start = std::max(start, wafer_.clock());
  const Cycle idle_from = idle_since(out.start);
  wafer_.idle_until(out.start);
  labels_ = shard.labels;
  const Colour colour = kInputColour;
  uint64_t total_words = 0;
  for (uint32_t r = 0; r < p; ++r) total_words += layout_.input_words(r);
  for (IngressPort& in : mesh.ingress_ports()) in.restart(out.start);
  for (uint32_t r = 0; r < p; ++r) {
    const uint32_t br = layout_.rows().size(r), b0 = layout_.rows().begin(r);
    for (uint32_t c = 0; c < q; ++c) {
      const Coord pe{c, r};
      const FcGeom g = layout_.geom(r, c);
      FcSramSteps steps = layout_.sram_steps(g, [&](const std::string& n, uint32_t bytes) { wafer_.allocate(pe, n, bytes); }, {});
      steps.step_start();
      Buffers buf{wafer_, pe};
      FcVars v = layout_.vars(g, 0, false);
      v.x = buf.offset(FcSramSteps::name(0, "x"));
      v.labels = buf.offset("labels");
      std::memcpy(wafer_.pe(pe).sram.base(), &v, sizeof v);
      wafer_.load(pe, &fc_input_program());
      const uint32_t first = layout_.features(0).begin(c) * br, words = v.kn * br + (g.east() ? br : 0);
      keep_window(mesh, pe, colour, first, words, features * br + br);
    }
    // The row's words in the order its PEs take them: each column's K-slice, feature-major, then
    // the labels for the east-most PE.
    IngressPort& in = mesh.ingress_ports()[q + r];
    for (uint32_t c = 0; c < q; ++c) {
      const uint32_t k0 = layout_.features(0).begin(c), kn = layout_.features(0).size(c);
      for (uint32_t kk = 0; kk < kn; ++kk)
        for (uint32_t b = 0; b < br; ++b) in.enqueue(Wavelet{shard.values[size_t(b0 + b) * features + k0 + kk], colour});
    }
    for (uint32_t b = 0; b < br; ++b) in.enqueue(Wavelet{shard.labels[b0 + b], colour});
    arrive(in, layout_.input_words(r), total_words, timing);
  }
  for (EgressPort& e : mesh.egress_ports()) e.restart(out.start), e.set_carries(false);  // nothing leaves while a batch comes in
  mesh.share_io_bandwidth(wafer_.spec().io_bytes_per_cycle);
  out.run = run("the input of a batch", {});
  expect_no_egress(mesh, "the input of a batch");
  out.end = out.run.start + out.run.cycles;
  last_end_ = std::max(last_end_, out.end);
  input_time_.duration = std::max<Cycle>(1, out.end - out.start);
  if (collecting_) {
    ++input_.runs;
    input_.cycles += out.run.cycles;
    input_.wavelets_streamed += total_words;
    input_.wait_cycles += out.start - idle_from;
  }
  return out;
}

FcPassResult FcWafer::functional_pass(size_t l, bool backward, const std::vector<DecodedStream>& streams, Cycle start) {
  FcPassResult out;
  if (backward) functional_->backward(l, streams, out.dw, out.positions);
  else functional_->forward(l, streams, out.loss_sum, out.correct);
  const PassTiming& t = (backward ? bwd_time_ : fwd_time_)[l];
  out.start = start, out.end = start + t.duration;
  last_end_ = std::max(last_end_, out.end);
  out.first_egress = start + t.first_egress, out.last_egress = start + t.last_egress;
  out.arrival_bound = t.arrival_bound;
  return out;
}

FcPassResult FcWafer::run_pass(size_t l, bool backward, const std::vector<DecodedStream>& streams, Cycle start, const EdgeTiming& timing) {
  if (!detailed_) return functional_pass(l, backward, streams, start);
  Mesh& mesh = wafer_.mesh();
  const uint32_t p = layout_.p(), q = layout_.q();
  const size_t last = layout_.layer_count() - 1;
  const uint32_t n_out = layout_.model().layers[l + 1], k_in = layout_.model().layers[l];

  const Program& program = backward ? fc_backward_program() : fc_forward_program();
  FcPassResult out;
  out.start = std::max(start, wafer_.clock());
  const Cycle idle_from = idle_since(out.start);
  wafer_.idle_until(out.start);

  for (uint32_t r = 0; r < p; ++r) {
    for (uint32_t c = 0; c < q; ++c) {
      const Coord pe{c, r};
      const FcGeom g = layout_.geom(r, c);
      FcSramSteps steps = layout_.sram_steps(
          g, [&](const std::string& n, uint32_t bytes) { std::memset(wafer_.pe(pe).sram.base() + wafer_.allocate(pe, n, bytes).offset, 0, bytes); }, {});
      if (backward) steps.backward(l);
      else steps.forward(l);
      Buffers buf{wafer_, pe};
      FcVars v = layout_.vars(g, l, backward);
      v.x = buf.offset(FcSramSteps::name(l, "x"));
      v.acc = buf.offset("acc");
      v.stage = buf.offset("stage");
      v.out = buf.offset("out");
      v.labels = buf.offset("labels");
      v.dz = buf.offset(FcSramSteps::name(l, "dz"));
      v.dz_prev = l > 0 ? buf.offset(FcSramSteps::name(l - 1, "dz")) : 0;
      v.dwp = buf.offset("dwp");
      if (!backward && l != last) v.x_next = buf.offset(FcSramSteps::name(l + 1, "x"));
      std::memcpy(wafer_.pe(pe).sram.base(), &v, sizeof v);
      wafer_.load(pe, &program);
      // The activations' broadcast west: each PE's router hands its PE only its own N-slice.
      if (!backward && l != last && q > 1 && !g.east()) keep_window(mesh, pe, kBroadcastColour, v.n0 * g.br, v.ns * g.br, n_out * g.br);
    }
  }

  uint64_t words = 0, dense_weights = 0, sent_weights = 0, dense_features = 0, sent_features = 0;  // features: not the bias row
  for (const DecodedStream& d : streams) words += d.words.size();
  for (IngressPort& in : mesh.ingress_ports()) in.restart(out.start);
  for (uint32_t c = 0; c < q && c < streams.size(); ++c) {
    const DecodedStream& d = streams[c];
    IngressPort& in = mesh.ingress_ports()[c];
    for (uint32_t word : d.words) in.enqueue(Wavelet{word, kWeightColour});
    arrive(in, d.words.size(), words, timing);
    sent_weights += d.weights;
    dense_weights += uint64_t(d.slice_end - d.slice_begin) * n_out;
    const uint32_t feature_rows = std::min(d.slice_end, k_in) - std::min(d.slice_begin, k_in);
    dense_features += uint64_t(feature_rows) * n_out;
    const uint32_t base = layout_.features(l).begin(c) * n_out;
    if (d.encoding == StreamEncoding::Sparse) {
      for (size_t i = 1; i < d.words.size(); ++i) {
        sent_features += (d.words[i] >> 16) < feature_rows * n_out;
        if (backward) out.positions.push_back(base + (d.words[i] >> 16));
      }
    } else {
      sent_features += uint64_t(feature_rows) * n_out;
      if (backward)
        for (uint32_t i = 0; i < d.weights; ++i) out.positions.push_back(base + i);
    }
  }
  // The edge's egress rate goes to the ports this pass uses: the q dW ports south in a backward
  // pass, the p loss ports east in the last layer's forward pass, none otherwise.
  for (uint32_t i = 0; i < mesh.egress_ports().size(); ++i) {
    EgressPort& e = mesh.egress_ports()[i];
    e.restart(out.start);
    e.set_carries(i < q ? backward : !backward && l == last);
  }
  mesh.share_io_bandwidth(wafer_.spec().io_bytes_per_cycle);

  RunHooks hooks;
  if (observer_) hooks = observer_->before_run(index_, l, backward, wafer_);  // may reset the wafer's counters
  const uint64_t macs_before = macs_of(wafer_);
  out.run = run(FcLayout::layer_name(l) + (backward ? " backward" : " forward"), hooks);
  if (observer_) observer_->after_run(index_, l, backward, wafer_, out.run);
  out.end = out.run.start + out.run.cycles;
  last_end_ = std::max(last_end_, out.end);

  expect_no_egress(mesh, FcLayout::layer_name(l) + (backward ? " backward" : " forward"));
  if (!backward && l == last) {
    // Loss and predictions left through the east egress ports: (loss, class) per sample.
    const auto& egress = mesh.egress_ports();
    for (uint32_t r = 0; r < p; ++r) {
      const auto& got = egress[q + r].received();
      if (got.size() != 2 * layout_.rows().size(r)) throw std::logic_error("loss egress: wrong number of words");
      for (uint32_t b = 0; b < layout_.rows().size(r); ++b) {
        out.loss_sum += got[2 * b].wavelet.as_f32();
        out.correct += got[2 * b + 1].wavelet.payload == labels_.at(layout_.rows().begin(r) + b);
      }
    }
  }
  if (backward) {
    // dW left through the south egress ports, one value per streamed weight, in stream order.
    out.dw.reserve(out.positions.size());
    out.first_egress = kNever, out.last_egress = 0;
    for (uint32_t c = 0; c < q; ++c)
      for (const EgressArrival& a : mesh.egress_ports()[c].received()) {
        out.dw.push_back(a.wavelet.as_f32());
        out.first_egress = std::min(out.first_egress, a.cycle);
        out.last_egress = std::max(out.last_egress, a.cycle);
      }
    if (out.dw.size() != out.positions.size()) throw std::logic_error("dW egress: wrong number of words");
    if (out.dw.empty()) out.first_egress = out.last_egress = out.end;
  }

  for (uint32_t r = 0; r < p; ++r)
    for (uint32_t c = 0; c < q; ++c) {
      FcSramSteps steps = layout_.sram_steps(layout_.geom(r, c), {},
                                             [&](const std::string& n) { wafer_.pe({c, r}).sram.free(wafer_.names().intern(n)); });
      if (backward) steps.after_backward(l);
      else steps.after_forward(l);
    }

  for (uint32_t c = 0; c < q; ++c) out.arrival_bound = out.arrival_bound || mesh.ingress_ports()[c].arrival_bound();
  PassTiming& timed = (backward ? bwd_time_ : fwd_time_)[l];
  timed.duration = std::max<Cycle>(1, out.end - out.start);
  timed.first_egress = backward ? out.first_egress - out.start : 0;
  timed.last_egress = backward ? out.last_egress - out.start : 0;
  timed.arrival_bound = out.arrival_bound;
  if (!collecting_) return out;
  PassStats& stats = (backward ? bwd_ : fwd_)[l];
  stats.macs += macs_of(wafer_) - macs_before;
  // Each weight not sent saves its AXPY over every batch row (forward), and its dW dot product
  // and, for a feature row of a layer with a dX, its dX AXPY (backward).
  const uint32_t batch = layout_.batch_per_wafer();
  stats.macs_skipped += (dense_weights - sent_weights) * batch;
  if (backward && l > 0) stats.macs_skipped += (dense_features - sent_features) * batch;
  ++stats.runs;
  stats.cycles += out.run.cycles;
  stats.wait_cycles += out.start - idle_from;
  stats.wavelets_streamed += words;
  stats.weights_streamed += sent_weights;
  if (timing.from_memoryx) stats.memoryx_bytes += words * 4;  // retained weights re-enter from the wafer's own keeping
  stats.gradient_wavelets += out.dw.size();
  Cycle ideal = 0, actual = 0;
  bool any = false;
  for (uint32_t c = 0; c < q; ++c) {
    const IngressPort& in = mesh.ingress_ports()[c];
    if (!in.size()) continue;
    any = true;
    ideal = std::max(ideal, in.ideal_last_entry());
    actual = std::max(actual, in.last_entry());
  }
  if (any) {
    stats.stream_bound_cycles += ideal + 1 - out.run.start;
    stats.compute_bound_cycles += actual - ideal;
    stats.tail_cycles += out.end - (actual + 1);
  } else {
    stats.tail_cycles += out.run.cycles;
  }
  return out;
}

void FcWafer::end_eval() {
  if (!detailed_) return;  // a functional batch took no SRAM
  for (uint32_t r = 0; r < layout_.p(); ++r)
    for (uint32_t c = 0; c < layout_.q(); ++c) {
      FcSramSteps steps = layout_.sram_steps(layout_.geom(r, c), {},
                                             [&](const std::string& n) { wafer_.pe({c, r}).sram.free(wafer_.names().intern(n)); });
      steps.after_eval();
    }
}

}  // namespace wse
