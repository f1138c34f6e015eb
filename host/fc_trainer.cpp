#include "host/fc_trainer.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>

#include "kernels/fc/fc_programs.hpp"
#include "wire/gradient_stream.hpp"
#include "wire/stream_validation.hpp"

namespace wse {

namespace {

// Buffer names per layer: "x0", "dz2", ...
std::string L(size_t l, const char* what) { return std::string(what) + std::to_string(l); }

std::string layer_name(size_t l) { return FcTrainer::layer_name(l); }

}  // namespace

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
          {"gradient_wavelets", gradient_wavelets}};
}

// ---- geometry of the mapping ----
//
// PE (c, r): batch rows rows_[r] of its wafer's shard; K-slice features_[l][c] of layer l's input
// (the last column also holds the ones row that multiplies the bias); N-slice features_[l+1][c].

namespace {

struct Geom {
  uint32_t r, c, p, q, br, b0;
  bool east() const { return c + 1 == q; }
};

// The SRAM events of one PE, in the order a step runs them. `alloc(name, bytes)`, `free(name)`.
// Activations and dZ ("act") are fp16 in mixed precision, fp32 otherwise; sums are fp32.
struct SramSteps {
  const std::vector<uint32_t>& layers;
  const std::vector<Split>& features;
  Geom g;
  bool mixed;
  std::function<void(const std::string&, uint32_t)> alloc;
  std::function<void(const std::string&)> free;

  size_t last() const { return layers.size() - 2; }
  uint32_t act() const { return mixed ? 2 : 4; }
  uint32_t kn(size_t l) const { return features[l].size(g.c); }
  uint32_t ks(size_t l) const { return kn(l) + (g.east() ? 1 : 0); }
  uint32_t ns(size_t l) const { return features[l + 1].size(g.c); }
  uint32_t n_out(size_t l) const { return layers[l + 1]; }
  uint32_t k_in(size_t l) const { return layers[l]; }

  void step_start() {
    alloc(L(0, "x"), ks(0) * g.br * act());
    if (g.east()) alloc("labels", g.br * 4);
  }
  void forward(size_t l) {
    alloc("acc", n_out(l) * g.br * 4);
    if (l != last()) {
      alloc(L(l + 1, "x"), ks(l + 1) * g.br * act());
      if (mixed && !g.east() && ns(l)) alloc("stage", ns(l) * g.br * 4);
    } else {
      alloc(L(l, "dz"), n_out(l) * g.br * act());
      if (g.east()) alloc("out", 2 * g.br * 4);
    }
  }
  void after_forward(size_t l) {
    free("acc");
    free("stage");
    if (l == last()) free("out");
  }
  void backward(size_t l) {
    alloc("dwp", 2 * kDwBlock * 4);
    if (l > 0) {
      alloc("acc", kn(l) * g.br * 4);
      alloc(L(l - 1, "dz"), k_in(l) * g.br * act());
    }
  }
  void after_backward(size_t l) {
    for (const char* n : {"acc", "dwp"}) free(n);
    free(L(l, "dz"));
    free(L(l, "x"));
    if (l == 0 && g.east()) free("labels");
  }
  void after_eval() {
    free(L(last(), "dz"));
    for (size_t l = 0; l <= last(); ++l) free(L(l, "x"));
    if (g.east()) free("labels");
  }
  void whole_step() {
    step_start();
    for (size_t l = 0; l <= last(); ++l) forward(l), after_forward(l);
    for (size_t l = last() + 1; l-- > 0;) backward(l), after_backward(l);
  }
};

}  // namespace

FcTrainer::FcTrainer(const RunConfig& cfg, unsigned threads) : cfg_(cfg), threads_(threads) {
  const TrainConfig& t = cfg.train;
  const std::string where = "config " + cfg.source.string();
  if (t.layers.size() < 2) throw ConfigError(where + ": field 'model.layers': need at least an input and an output size");
  if (t.batch_size % t.num_csx)
    throw ConfigError(where + ": field 'training.batch_size': " + std::to_string(t.batch_size) + " does not split evenly over num_csx = " + std::to_string(t.num_csx) + " wafers");
  batch_per_wafer_ = t.batch_size / t.num_csx;
  q_ = cfg.mesh.width;
  p_ = cfg.mesh.height;
  if (p_ > batch_per_wafer_)
    throw ConfigError(where + ": the mesh has " + std::to_string(p_) + " PE rows but each wafer gets only " + std::to_string(batch_per_wafer_) +
                      " samples (batch_size / num_csx); every PE row needs at least one: use mesh.height <= " + std::to_string(batch_per_wafer_));
  rows_ = {batch_per_wafer_, p_};
  for (uint32_t f : t.layers) features_.push_back({f, q_});
  if (t.memoryx.encoding == StreamEncoding::Sparse) {
    for (size_t l = 0; l + 1 < t.layers.size(); ++l) {
      uint64_t positions = 0;  // both passes stream a column's K-slice rows
      for (uint32_t c = 0; c < q_; ++c)
        positions = std::max(positions, uint64_t(features_[l].size(c) + (c + 1 == q_ ? 1 : 0)) * t.layers[l + 1]);
      if (positions > 65536)
        throw ConfigError(where + ": layer " + layer_name(l) + " (" + std::to_string(t.layers[l]) + " -> " + std::to_string(t.layers[l + 1]) +
                          "): a column's weight slice has " + std::to_string(positions) +
                          " positions, beyond the 16-bit index of a sparse wavelet; use more PE columns (mesh.width)");
    }
  }
  std::vector<LayerSpec> specs;
  for (size_t l = 0; l + 1 < t.layers.size(); ++l) specs.push_back({layer_name(l), t.layers[l], t.layers[l + 1]});
  if (t.resume_from.empty()) {
    memoryx_ = std::make_unique<MemoryX>(t.memoryx, specs);
  } else {
    memoryx_ = std::make_unique<MemoryX>(t.memoryx, specs, SafetensorsFile(t.resume_from));
  }
  SwarmXConfig sx = t.swarmx;
  sx.wafers = t.num_csx;
  swarmx_ = std::make_unique<SwarmX>(sx);
  fwd_.resize(specs.size());
  bwd_.resize(specs.size());
  last_grads_.resize(specs.size());
  check_sram_plan();

  for (uint32_t w = 0; w < t.num_csx; ++w) {
    auto wafer = std::make_unique<Wafer>(cfg.machine, cfg.mesh);
    Mesh& m = wafer->mesh();
    for (uint32_t r = 0; r < p_; ++r) {
      for (uint32_t c = 0; c < q_; ++c) {
        Route wr = Route::make(Dir::North, {Dir::Ramp});
        if (r + 1 < p_) wr.tx |= bit(Dir::South);
        m.set_route({c, r}, kWeightColour, wr);
        if (c + 1 < q_) m.set_route({c, r}, chain_colour(c), Route::make(Dir::Ramp, {Dir::East}));
        if (c > 0) m.set_route({c, r}, chain_colour(c - 1), Route::make(Dir::West, {Dir::Ramp}));
        if (q_ > 1) {
          for (Colour bc : {kBroadcastColour, kDzColour}) {
            if (c + 1 == q_) m.set_route({c, r}, bc, Route::make(Dir::Ramp, {Dir::West}));
            else if (c > 0) m.set_route({c, r}, bc, Route::make(Dir::East, {Dir::Ramp, Dir::West}));
            else m.set_route({c, r}, bc, Route::make(Dir::East, {Dir::Ramp}));
          }
        }
        m.set_route({c, r}, dw_colour(r), Route::make(Dir::Ramp, {Dir::South}));
        if (r > 0) m.set_route({c, r}, dw_colour(r - 1), Route::make(Dir::North, {Dir::Ramp}));
        if (c + 1 == q_) m.set_route({c, r}, kLossColour, Route::make(Dir::Ramp, {Dir::East}));
        wafer->load({c, r}, &fc_forward_program());
        if (wafer->allocate({c, r}, "vars", sizeof(FcVars)).offset != 0) throw std::logic_error("vars not at offset 0");
      }
    }
    for (uint32_t c = 0; c < q_; ++c) m.add_ingress({c, 0}, Dir::North);
    for (uint32_t c = 0; c < q_; ++c) m.add_egress({c, p_ - 1}, Dir::South);
    for (uint32_t r = 0; r < p_; ++r) m.add_egress({q_ - 1, r}, Dir::East);
    wafer->finalize(threads);
    wafers_.push_back(std::move(wafer));
  }
}

FcTrainer::~FcTrainer() = default;

void FcTrainer::check_sram_plan() const {
  const uint32_t capacity = cfg_.machine.sram_bytes_per_pe;
  auto peak = [&](uint32_t r, uint32_t c, uint32_t br) -> std::pair<bool, std::string> {
    NameTable names;
    Sram sram;
    sram.bind(nullptr, capacity);
    std::string phase;
    SramSteps steps{cfg_.train.layers, features_, Geom{r, c, p_, q_, br, 0}, cfg_.train.mixed,
                    [&](const std::string& n, uint32_t bytes) { sram.allocate({c, r}, names, names.intern(n), bytes); },
                    [&](const std::string& n) { sram.free(names.intern(n)); }};
    try {
      sram.allocate({c, r}, names, names.intern("vars"), sizeof(FcVars));
      steps.whole_step();
    } catch (const PeError& e) {
      return {false, e.what()};
    }
    return {true, ""};
  };
  for (uint32_t r = 0; r < p_; ++r) {
    for (uint32_t c : {0u, q_ / 2, q_ - 1}) {  // the column classes: first, middle, east-most
      auto [ok, why] = peak(r, c, rows_.size(r));
      if (ok) continue;
      uint32_t fits = 0;
      for (uint32_t br = rows_.size(r); br-- > 1;)
        if (peak(r, c, br).first) { fits = br; break; }
      throw ConfigError("config " + cfg_.source.string() + ": the model does not fit PE SRAM: " + why +
                        (fits ? "; it would fit with at most " + std::to_string(fits) + " samples per PE row, i.e. batch_size <= " +
                                    std::to_string(uint64_t(fits) * p_ * cfg_.train.num_csx) + " on this mesh, or with more PE rows (mesh.height)"
                              : "; even one sample per PE row does not fit: use more PE columns (mesh.width)"));
    }
  }
}

uint32_t FcTrainer::sram_high_water() const {
  uint32_t hw = 0;
  for (const Pe& pe : wafers_[0]->pes()) hw = std::max(hw, pe.sram.high_water());
  return hw;
}

nlohmann::json FcTrainer::mesh_program() const {
  nlohmann::json j;
  j["mesh"] = {{"width", q_}, {"height", p_}};
  j["num_csx"] = cfg_.train.num_csx;
  j["batch_per_wafer"] = batch_per_wafer_;
  nlohmann::json rows = nlohmann::json::array();
  for (uint32_t r = 0; r < p_; ++r) rows.push_back({{"row", r}, {"batch_begin", rows_.begin(r)}, {"batch_rows", rows_.size(r)}});
  j["placement"]["rows"] = rows;
  nlohmann::json layers = nlohmann::json::array();
  for (size_t l = 0; l + 1 < cfg_.train.layers.size(); ++l) {
    nlohmann::json cols = nlohmann::json::array();
    for (uint32_t c = 0; c < q_; ++c)
      cols.push_back({{"column", c},
                      {"k_begin", features_[l].begin(c)},
                      {"k_rows", features_[l].size(c) + (c + 1 == q_ ? 1 : 0)},
                      {"n_begin", features_[l + 1].begin(c)},
                      {"n_cols", features_[l + 1].size(c)}});
    layers.push_back({{"name", layer_name(l)}, {"in", cfg_.train.layers[l]}, {"out", cfg_.train.layers[l + 1]}, {"columns", cols}});
  }
  j["layers"] = layers;
  j["colours"] = {
      {{"colour", kWeightColour}, {"carries", "weights, north ingress -> down each column (multicast to every PE)"}},
      {{"colour", 1}, {"carries", "east from even columns: forward partial sums; backward, the gathered dZ slices"}},
      {{"colour", 2}, {"carries", "east from odd columns: forward partial sums; backward, the gathered dZ slices"}},
      {{"colour", kBroadcastColour}, {"carries", "east-most PE -> west along the row: activations, each PE's filter keeps its N-slice"}},
      {{"colour", 4}, {"carries", "dW partial sums south from even rows, one per streamed weight"}},
      {{"colour", 5}, {"carries", "dW partial sums south from odd rows, one per streamed weight"}},
      {{"colour", kLossColour}, {"carries", "loss and prediction per sample, east-most PE -> east egress"}},
      {{"colour", kDzColour}, {"carries", "east-most PE -> west along the row: dZ, whole"}}};
  nlohmann::json routes = nlohmann::json::array();
  const Mesh& m = wafers_[0]->mesh();
  for (TileId t = 0; t < m.shape().tiles(); ++t) {
    const Router* r = m.router(t);
    if (!r) continue;
    Coord c = m.shape().coord(t);
    for (const Lane& lane : r->lanes) {
      std::vector<std::string> tx;
      for (int d = 0; d < kDirs; ++d)
        if (lane.tx & bit(Dir(d))) tx.push_back(dir_name(Dir(d)));
      routes.push_back({{"x", c.x}, {"y", c.y}, {"colour", lane.colour}, {"rx", dir_name(lane.rx)}, {"tx", tx}});
    }
  }
  j["routes"] = routes;
  // The SRAM plan: each PE's peak over one training step, and the buffers of its busiest phase.
  nlohmann::json plan = nlohmann::json::array();
  uint32_t worst = 0;
  for (uint32_t r = 0; r < p_; ++r) {
    for (uint32_t c = 0; c < q_; ++c) {
      NameTable names;
      Sram sram;
      sram.bind(nullptr, cfg_.machine.sram_bytes_per_pe);
      sram.allocate({c, r}, names, names.intern("vars"), sizeof(FcVars));
      SramSteps steps{cfg_.train.layers, features_, Geom{r, c, p_, q_, rows_.size(r), rows_.begin(r)}, cfg_.train.mixed,
                      [&](const std::string& n, uint32_t bytes) { sram.allocate({c, r}, names, names.intern(n), bytes); },
                      [&](const std::string& n) { sram.free(names.intern(n)); }};
      steps.whole_step();
      worst = std::max(worst, sram.high_water());
      plan.push_back({{"x", c}, {"y", r}, {"peak_bytes", sram.high_water()}});
    }
  }
  j["sram_plan"] = {{"capacity_bytes", cfg_.machine.sram_bytes_per_pe}, {"peak_bytes_max", worst}, {"per_pe", plan}};
  return j;
}

// ---- running kernels ----

namespace {

struct Buffers {
  Wafer& wafer;
  Coord pe;
  uint32_t offset(const std::string& name) {
    const SramAllocation* a = wafer.pe(pe).sram.find(wafer.names().intern(name));
    return a ? a->offset : 0;
  }
  float* f32(const std::string& name) { return reinterpret_cast<float*>(wafer.pe(pe).sram.base() + offset(name)); }
};

}  // namespace

void FcTrainer::load_inputs(uint32_t w, const float* x, const uint8_t* labels) {
  Wafer& wafer = *wafers_[w];
  const uint32_t features = cfg_.train.layers[0];
  const bool mixed = cfg_.train.mixed;
  for (uint32_t r = 0; r < p_; ++r) {
    for (uint32_t c = 0; c < q_; ++c) {
      const Coord pe{c, r};
      Geom g{r, c, p_, q_, rows_.size(r), rows_.begin(r)};
      SramSteps steps{cfg_.train.layers, features_, g, mixed,
                      [&](const std::string& n, uint32_t bytes) { wafer.allocate(pe, n, bytes); }, [](const std::string&) {}};
      steps.step_start();
      Buffers buf{wafer, pe};
      uint8_t* xs = wafer.pe(pe).sram.base() + buf.offset(L(0, "x"));
      const uint32_t k0 = features_[0].begin(c), kn = features_[0].size(c), ks = steps.ks(0);
      for (uint32_t kk = 0; kk < ks; ++kk) {
        for (uint32_t b = 0; b < g.br; ++b) {
          const float* row = x + size_t(w * batch_per_wafer_ + g.b0 + b) * features;
          const float v = kk < kn ? row[k0 + kk] : 1.0f;  // the ones row for the bias
          const size_t i = size_t(kk) * g.br + b;         // feature-major: a feature's batch values contiguous
          if (mixed) reinterpret_cast<_Float16*>(xs)[i] = _Float16(v);
          else reinterpret_cast<float*>(xs)[i] = v;
        }
      }
      if (g.east()) {
        auto* lab = reinterpret_cast<uint32_t*>(buf.f32("labels"));
        for (uint32_t b = 0; b < g.br; ++b) lab[b] = labels[w * batch_per_wafer_ + g.b0 + b];
      }
    }
  }
}

WaferRun FcTrainer::run_kernel(uint32_t w, size_t l, bool backward, const std::vector<SharedBuffer>& streams, PassStats& stats) {
  Wafer& wafer = *wafers_[w];
  Mesh& mesh = wafer.mesh();
  const size_t last = cfg_.train.layers.size() - 2;
  const uint32_t n_out = cfg_.train.layers[l + 1], k_in = cfg_.train.layers[l];
  const bool mixed = cfg_.train.mixed;
  const Program& program = backward ? fc_backward_program() : fc_forward_program();
  RunHooks hooks;
  uint64_t macs_before = 0;
  for (const Pe& pe : wafer.pes()) macs_before += pe.counters.macs;

  for (uint32_t r = 0; r < p_; ++r) {
    for (uint32_t c = 0; c < q_; ++c) {
      const Coord pe{c, r};
      Geom g{r, c, p_, q_, rows_.size(r), rows_.begin(r)};
      SramSteps steps{cfg_.train.layers, features_, g, mixed,
                      [&](const std::string& n, uint32_t bytes) { std::memset(wafer.pe(pe).sram.base() + wafer.allocate(pe, n, bytes).offset, 0, bytes); },
                      [](const std::string&) {}};
      if (backward) steps.backward(l);
      else steps.forward(l);
      Buffers buf{wafer, pe};
      FcVars v;
      v.br = g.br, v.row = r, v.col = c, v.p = p_, v.q = q_;
      v.n_out = n_out, v.k_in = k_in;
      v.k0 = features_[l].begin(c), v.kn = steps.kn(l), v.ks = steps.ks(l);
      v.n0 = features_[l + 1].begin(c), v.ns = features_[l + 1].size(c);
      v.global_batch = cfg_.train.batch_size;
      v.loss_scale = cfg_.train.loss_scale;
      v.last_layer = l == last;
      v.backward = backward;
      v.has_dx = backward && l > 0;
      v.mixed = mixed;
      v.encoding = uint8_t(cfg_.train.memoryx.encoding);
      v.x = buf.offset(L(l, "x"));
      v.acc = buf.offset("acc");
      v.stage = buf.offset("stage");
      v.out = buf.offset("out");
      v.labels = buf.offset("labels");
      v.dz = buf.offset(L(l, "dz"));
      v.dz_prev = l > 0 ? buf.offset(L(l - 1, "dz")) : 0;
      v.dwp = buf.offset("dwp");
      if (!backward && l != last) {
        v.x_next = buf.offset(L(l + 1, "x"));
        if (g.east()) {  // the ones row of the next layer's input
          const uint32_t ones = steps.ks(l + 1) - 1;
          uint8_t* xs = wafer.pe(pe).sram.base() + v.x_next;
          for (uint32_t b = 0; b < g.br; ++b) {
            if (mixed) reinterpret_cast<_Float16*>(xs)[size_t(ones) * g.br + b] = _Float16(1.0f);
            else reinterpret_cast<float*>(xs)[size_t(ones) * g.br + b] = 1.0f;
          }
        }
      }
      std::memcpy(wafer.pe(pe).sram.base(), &v, sizeof v);
      wafer.load(pe, &program);
      // The activations' broadcast west: each PE's router hands its PE only its own N-slice.
      if (!backward && l != last && q_ > 1 && !g.east()) {
        const uint32_t total = n_out * g.br, first = v.n0 * g.br, words = v.ns * g.br;
        if (words == 0) mesh.set_filter(pe, kBroadcastColour, {1, total, 0});  // counts 1..total: passes none
        else if (words == total) mesh.clear_filter(pe, kBroadcastColour);
        else mesh.set_filter(pe, kBroadcastColour, CounterFilter::window(first, words, total));
      }
    }
  }

  // Streams reach the wafer edge after SwarmX's tree latency; the I/O is shared by the ports.
  const Cycle start = wafer.clock() + swarmx_->levels() * swarmx_->config().latency_per_level;
  uint64_t words = 0, dense_weights = 0, sent_weights = 0, dense_features = 0, sent_features = 0;  // features: not the bias row
  for (uint32_t c = 0; c < q_; ++c) {
    IngressPort& in = mesh.ingress_ports()[c];
    in.restart(start);
    if (c >= streams.size()) continue;
    const Split& f = features_[l];  // the stream must be the one this layer expects (both passes: the K-slice)
    const WeightStreamExpectation expect{uint32_t(l), k_in + 1, n_out, c, backward ? StreamPass::Backward : StreamPass::Forward, cfg_.train.memoryx.encoding,
                                         {f.begin(c), f.begin(c) + f.size(c) + (c + 1 == q_ ? 1u : 0u)}, memoryx_->step()};
    DecodedStream d = decode_weight_stream(*streams[c], "WeightStream for " + layer_name(l) + " column " + std::to_string(c), &expect);
    for (uint32_t word : d.words) in.enqueue(Wavelet{word, kWeightColour});
    words += d.words.size();
    sent_weights += d.weights;
    dense_weights += uint64_t(d.slice_end - d.slice_begin) * n_out;
    const uint32_t feature_rows = std::min(d.slice_end, k_in) - std::min(d.slice_begin, k_in);
    dense_features += uint64_t(feature_rows) * n_out;
    if (d.encoding == StreamEncoding::Sparse) {
      for (size_t i = 1; i < d.words.size(); ++i) sent_features += (d.words[i] >> 16) < feature_rows * n_out;
    } else {
      sent_features += uint64_t(feature_rows) * n_out;
    }
  }
  for (EgressPort& e : mesh.egress_ports()) e.restart(wafer.clock());
  double bw = cfg_.machine.io_bytes_per_cycle;
  for (double limit : {memoryx_->config().bytes_per_cycle, swarmx_->config().bytes_per_cycle_per_link})
    if (limit > 0) bw = bw > 0 ? std::min(bw, limit) : limit;
  mesh.share_io_bandwidth(bw);

  if (observer_) {
    hooks = observer_->before_run(w, l, backward, wafer);  // may reset the wafer's counters
    macs_before = 0;
    for (const Pe& pe : wafer.pes()) macs_before += pe.counters.macs;
  }
  WaferRun run = wafer.run(cfg_.max_cycles, hooks);
  if (observer_) observer_->after_run(w, l, backward, wafer, run);
  host_seconds_ += run.host_seconds;
  if (run.engine.hit_cycle_limit)
    throw UsageError("config " + cfg_.source.string() + ": " + layer_name(l) + (backward ? " backward" : " forward") +
                     " did not finish within run.max_cycles = " + std::to_string(cfg_.max_cycles));

  uint64_t macs = 0;
  for (const Pe& pe : wafer.pes()) macs += pe.counters.macs;
  stats.macs += macs - macs_before;
  // Each weight not sent saves its AXPY over every batch row (forward), and its dW dot product
  // and, for a feature row of a layer with a dX, its dX AXPY (backward).
  stats.macs_skipped += (dense_weights - sent_weights) * batch_per_wafer_;
  if (backward && l > 0) stats.macs_skipped += (dense_features - sent_features) * batch_per_wafer_;
  if (w == 0) {
    ++stats.runs;
    stats.cycles += run.cycles;
    stats.wavelets_streamed += words;
    stats.weights_streamed += sent_weights;
    for (const auto& s : streams) stats.memoryx_bytes += s->size();
    uint64_t grads = 0;
    if (backward)
      for (uint32_t c = 0; c < q_; ++c) grads += mesh.egress_ports()[c].received().size();
    stats.gradient_wavelets += grads;
    Cycle ideal = 0, actual = 0;
    bool any = false;
    for (const IngressPort& in : mesh.ingress_ports()) {
      if (!in.size()) continue;
      any = true;
      ideal = std::max(ideal, in.ideal_last_entry());
      actual = std::max(actual, in.last_entry());
    }
    const Cycle end = run.start + run.cycles;
    if (any) {
      stats.stream_bound_cycles += ideal + 1 - run.start;
      stats.compute_bound_cycles += actual - ideal;
      stats.tail_cycles += end - (actual + 1);
    } else {
      stats.tail_cycles += run.cycles;
    }
  }
  return run;
}

// Both passes stream each column its K-slice of rows of the (in+1) x out matrix, in the same
// order (the last column also holds the bias row).
std::vector<SharedBuffer> FcTrainer::streams(size_t l, StreamPass pass) const {
  std::vector<StreamSlice> slices;
  for (uint32_t c = 0; c < q_; ++c)
    slices.push_back({features_[l].begin(c), features_[l].begin(c) + features_[l].size(c) + (c + 1 == q_ ? 1 : 0)});
  return memoryx_->stream(l, pass, slices);
}

StepResult FcTrainer::forward(const float* x, const uint8_t* labels, bool training) {
  const size_t layers = cfg_.train.layers.size() - 1;
  std::vector<PassStats> eval_stats(layers);  // evaluation is not training: kept out of the report
  std::vector<PassStats>& stats = training ? fwd_ : eval_stats;
  StepResult res;
  std::vector<Cycle> start(wafers_.size());
  for (uint32_t w = 0; w < wafers_.size(); ++w) {
    start[w] = wafers_[w]->clock();
    load_inputs(w, x, labels);
  }
  for (size_t l = 0; l < layers; ++l) {
    std::vector<SharedBuffer> streams = this->streams(l, StreamPass::Forward);
    for (uint32_t w = 0; w < wafers_.size(); ++w) {
      std::vector<SharedBuffer> mine;
      for (const SharedBuffer& s : streams) mine.push_back(swarmx_->broadcast(s)[w]);
      run_kernel(w, l, false, mine, stats[l]);
      for (uint32_t r = 0; r < p_; ++r)
        for (uint32_t c = 0; c < q_; ++c) {
          Geom g{r, c, p_, q_, rows_.size(r), rows_.begin(r)};
          SramSteps steps{cfg_.train.layers, features_, g, cfg_.train.mixed, {},
                          [&](const std::string& n) { wafers_[w]->pe({c, r}).sram.free(wafers_[w]->names().intern(n)); }};
          steps.after_forward(l);
        }
    }
  }
  // Loss and predictions left through the east egress ports: (loss, class) per sample.
  double loss = 0;
  for (uint32_t w = 0; w < wafers_.size(); ++w) {
    const auto& egress = wafers_[w]->mesh().egress_ports();
    for (uint32_t r = 0; r < p_; ++r) {
      const auto& got = egress[q_ + r].received();
      if (got.size() != 2 * rows_.size(r)) throw std::logic_error("loss egress: wrong number of words");
      for (uint32_t b = 0; b < rows_.size(r); ++b) {
        loss += got[2 * b].wavelet.as_f32();
        res.correct += got[2 * b + 1].wavelet.payload == labels[w * batch_per_wafer_ + rows_.begin(r) + b];
      }
    }
  }
  res.loss = loss / cfg_.train.batch_size;
  res.cycles = wafers_[0]->clock() - start[0];
  return res;
}

void FcTrainer::backward(uint64_t step) {
  const size_t layers = cfg_.train.layers.size() - 1;
  for (size_t l = layers; l-- > 0;) {
    const uint32_t n_out = cfg_.train.layers[l + 1], k_in = cfg_.train.layers[l];
    const uint64_t numel = uint64_t(k_in + 1) * n_out;
    std::vector<SharedBuffer> streams = this->streams(l, StreamPass::Backward);
    // Where each streamed weight sits in the (in+1) x out matrix: its gradient leaves the wafer
    // at the same place in the column's stream.
    std::vector<uint32_t> positions;
    for (uint32_t c = 0; c < q_; ++c) {
      DecodedStream d = decode_weight_stream(*streams[c], "WeightStream for " + layer_name(l) + " column " + std::to_string(c));
      const uint32_t base = features_[l].begin(c) * n_out;
      if (d.encoding == StreamEncoding::Sparse)
        for (size_t i = 1; i < d.words.size(); ++i) positions.push_back(base + (d.words[i] >> 16));
      else
        for (uint32_t i = 0; i < d.weights; ++i) positions.push_back(base + i);
    }
    const bool sparse = cfg_.train.memoryx.encoding == StreamEncoding::Sparse;
    std::vector<std::vector<float>> received;
    for (uint32_t w = 0; w < wafers_.size(); ++w) {
      std::vector<SharedBuffer> mine;
      for (const SharedBuffer& s : streams) mine.push_back(swarmx_->broadcast(s)[w]);
      run_kernel(w, l, true, mine, bwd_[l]);
      // dW left through the south egress ports, one value per streamed weight, in stream order.
      std::vector<float> values;
      values.reserve(positions.size());
      const auto& egress = wafers_[w]->mesh().egress_ports();
      for (uint32_t c = 0; c < q_; ++c)
        for (const EgressArrival& a : egress[c].received()) values.push_back(a.wavelet.as_f32());
      if (values.size() != positions.size()) throw std::logic_error("dW egress: wrong number of words");
      GradientMessage g{layer_name(l), uint32_t(l), w, k_in + 1, n_out, step, {}, {}};
      if (sparse) {
        g.values = std::move(values);
        g.indices = positions;
        g.sparse = true;
      } else {
        g.values.assign(numel, 0.0f);
        for (size_t i = 0; i < positions.size(); ++i) g.values[positions[i]] = values[i];
      }
      // Each wafer's dW leaves as a GradientStream message; SwarmX sums them up its tree.
      SharedBuffer msg = encode_gradient_stream(g);
      const GradientStreamExpectation expect{uint32_t(l), k_in + 1, n_out, uint32_t(wafers_.size()), step};
      received.push_back(decode_gradient_stream(*msg, "GradientStream of " + layer_name(l) + " from wafer " + std::to_string(w), &expect).values);
      for (uint32_t r = 0; r < p_; ++r)
        for (uint32_t c = 0; c < q_; ++c) {
          Geom geom{r, c, p_, q_, rows_.size(r), rows_.begin(r)};
          SramSteps steps{cfg_.train.layers, features_, geom, cfg_.train.mixed, {},
                          [&](const std::string& n) { wafers_[w]->pe({c, r}).sram.free(wafers_[w]->names().intern(n)); }};
          steps.after_backward(l);
        }
    }
    std::vector<float> summed = swarmx_->reduce(received);
    if (sparse) {
      std::vector<float> dense(numel, 0.0f);
      for (size_t i = 0; i < positions.size(); ++i) dense[positions[i]] = summed[i];
      summed = std::move(dense);
    }
    last_grads_[l] = std::move(summed);
    if (!memoryx_->apply_gradient(l, last_grads_[l], cfg_.train.loss_scale)) ++skipped_updates_;
  }
  memoryx_->finish_step();
}

StepResult FcTrainer::train_step(const float* x, const uint8_t* labels) {
  const Cycle before = wafers_[0]->clock();
  StepResult r = forward(x, labels, true);
  backward(memoryx_->step());
  r.cycles = wafers_[0]->clock() - before;
  return r;
}

StepResult FcTrainer::eval_batch(const float* x, const uint8_t* labels) {
  StepResult r = forward(x, labels, false);
  for (uint32_t w = 0; w < wafers_.size(); ++w)
    for (uint32_t row = 0; row < p_; ++row)
      for (uint32_t c = 0; c < q_; ++c) {
        Geom g{row, c, p_, q_, rows_.size(row), rows_.begin(row)};
        SramSteps steps{cfg_.train.layers, features_, g, cfg_.train.mixed, {},
                        [&](const std::string& n) { wafers_[w]->pe({c, row}).sram.free(wafers_[w]->names().intern(n)); }};
        steps.after_eval();
      }
  return r;
}

}  // namespace wse
