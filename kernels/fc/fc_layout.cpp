#include "kernels/fc/fc_layout.hpp"

#include <algorithm>
#include <map>

#include "core/errors.hpp"
#include "pe/sram.hpp"

namespace wse {

// ---- the SRAM plan ----

void FcSramSteps::step_start() {
  alloc(name(0, "x"), ks(0) * g.br * act());
  if (g.east()) alloc("labels", g.br * 4);
}

void FcSramSteps::forward(size_t l) {
  alloc("acc", n_out(l) * g.br * 4);
  if (l != last()) {
    alloc(name(l + 1, "x"), ks(l + 1) * g.br * act());
    if (mixed && !g.east() && ns(l)) alloc("stage", ns(l) * g.br * 4);
  } else {
    alloc(name(l, "dz"), n_out(l) * g.br * act());
    if (g.east()) alloc("out", 2 * g.br * 4);
  }
}

void FcSramSteps::after_forward(size_t l) {
  free("acc");
  free("stage");
  if (l == last()) free("out");
}

void FcSramSteps::backward(size_t l) {
  alloc("dwp", 2 * kDwBlock * 4);
  if (l > 0) {
    alloc("acc", kn(l) * g.br * 4);
    alloc(name(l - 1, "dz"), k_in(l) * g.br * act());
  }
}

void FcSramSteps::after_backward(size_t l) {
  for (const char* n : {"acc", "dwp"}) free(n);
  free(name(l, "dz"));
  free(name(l, "x"));
  if (l == 0 && g.east()) free("labels");
}

void FcSramSteps::after_eval() {
  free(name(last(), "dz"));
  for (size_t l = 0; l <= last(); ++l) free(name(l, "x"));
  if (g.east()) free("labels");
}

void FcSramSteps::whole_step() {
  step_start();
  for (size_t l = 0; l <= last(); ++l) forward(l), after_forward(l);
  for (size_t l = last() + 1; l-- > 0;) backward(l), after_backward(l);
}

// ---- the layout ----

FcLayout::FcLayout(const FcModel& model, MeshShape mesh, const MachineSpec& machine) : model_(model) {
  const std::string& where = model.where;
  if (model.layers.size() < 2) throw ConfigError(where + ": field 'model.layers': need at least an input and an output size");
  if (model.num_csx == 0 || model.batch_size % model.num_csx)
    throw ConfigError(where + ": field 'training.batch_size': " + std::to_string(model.batch_size) + " does not split evenly over num_csx = " +
                      std::to_string(model.num_csx) + " wafers");
  batch_per_wafer_ = model.batch_size / model.num_csx;
  q_ = mesh.width;
  p_ = mesh.height;
  if (p_ > batch_per_wafer_)
    throw ConfigError(where + ": the mesh has " + std::to_string(p_) + " PE rows but each wafer gets only " + std::to_string(batch_per_wafer_) +
                      " samples (batch_size / num_csx); every PE row needs at least one: use mesh.height <= " + std::to_string(batch_per_wafer_));
  rows_ = {batch_per_wafer_, p_};
  for (uint32_t f : model.layers) features_.push_back({f, q_});
  if (model.encoding == StreamEncoding::Sparse) {
    // The most positions of a column's weight slice on `width` columns (both passes stream a
    // column's K-slice rows, the east-most one's bias row too).
    auto most_positions = [&](size_t l, uint32_t width) {
      const Split k{model.layers[l], width};
      uint64_t positions = 0;
      for (uint32_t c = 0; c < width; ++c) positions = std::max(positions, uint64_t(k.size(c) + (c + 1 == width ? 1 : 0)) * model.layers[l + 1]);
      return positions;
    };
    for (size_t l = 0; l + 1 < model.layers.size(); ++l) {
      const uint64_t positions = most_positions(l, q_);
      if (positions <= 65536) continue;
      // More columns help only up to the machine's width (a WSE-2's 750 were advised beyond it).
      uint32_t enough = 0;
      for (uint32_t w = q_ + 1; w <= machine.fabric_width && !enough; ++w)
        if (most_positions(l, w) <= 65536) enough = w;
      throw ConfigError(where + ": layer " + layer_name(l) + " (" + std::to_string(model.layers[l]) + " -> " + std::to_string(model.layers[l + 1]) +
                        "): a column's weight slice has " + std::to_string(positions) + " positions, beyond the 16-bit index of a sparse wavelet; " +
                        (enough ? "use at least " + std::to_string(enough) + " PE columns (mesh.width)"
                                : "no number of PE columns a " + machine.name + " has (at most " + std::to_string(machine.fabric_width) +
                                      ") takes it sparse: dense weight streams (weights.encoding: dense) or a narrower layer (model.layers)"));
    }
  }
  check_sram_plan(machine);
  check_dsd_extents();
}

// The longest vector a PE's ops name, against a DSD's extent (a u16): each layer's sums over the
// PE's batch rows (n_out x br), the gathered dZ of every layer but the first (k_in x br), the input
// slice (kn x br). A machine with more SRAM than a WSE-2's placed a batch of 128 on one PE that
// the run then refused naming an op (784 x 128 = 100,352 elements); on a WSE-2 the SRAM check
// above refuses such a PE first.
void FcLayout::check_dsd_extents() const {
  uint32_t br = 0;
  for (uint32_t r = 0; r < p_; ++r) br = std::max(br, rows_.size(r));
  uint64_t most = 0;
  std::string what;
  auto consider = [&](uint64_t elements, const std::string& of) {
    if (elements > most) most = elements, what = of;
  };
  for (size_t l = 0; l + 1 < model_.layers.size(); ++l) {
    consider(uint64_t(model_.layers[l + 1]) * br, "layer " + layer_name(l) + "'s " + std::to_string(model_.layers[l + 1]) + " outputs");
    if (l > 0) consider(uint64_t(model_.layers[l]) * br, "layer " + layer_name(l) + "'s " + std::to_string(model_.layers[l]) + " input gradients");
  }
  uint32_t kn = 0;
  for (uint32_t c = 0; c < q_; ++c) kn = std::max(kn, features_[0].size(c));
  consider(uint64_t(kn) * br, "a PE column's " + std::to_string(kn) + " input features");
  if (most > 0xffff)
    throw ConfigError(model_.where + ": " + what + " for " + std::to_string(br) + (br == 1 ? " sample" : " samples") + " per PE row make a vector of " +
                      std::to_string(most) + " elements, beyond a DSD's 65,535 (a u16); " +
                      (br > 1 ? "use more PE rows (mesh.height) or a smaller training.batch_size"
                              : "one sample per PE row is the fewest: a narrower layer (model.layers)"));
}

std::vector<StreamSlice> FcLayout::stream_slices(size_t l) const {
  std::vector<StreamSlice> slices;
  for (uint32_t c = 0; c < q_; ++c)
    slices.push_back({features_[l].begin(c), features_[l].begin(c) + features_[l].size(c) + (c + 1 == q_ ? 1 : 0)});
  return slices;
}

uint64_t FcLayout::input_words(uint32_t r) const {
  return uint64_t(model_.layers[0]) * rows_.size(r) + rows_.size(r);  // features, then the east-most PE's labels
}

FcLayout::PeClasses FcLayout::pe_classes() const {
  // A PE's plan depends on its column only through its slice of each layer and whether it is the
  // east-most, and on its row only through its batch rows: one PE of each such class is planned.
  // (First, middle and east-most column alone missed a column whose slices were the larger ones.)
  PeClasses k;
  for (uint32_t c = 0; c < q_; ++c) {
    std::vector<uint32_t> key = {c + 1 == q_ ? 1u : 0u};
    for (const Split& f : features_) key.push_back(f.size(c));
    k.columns.emplace(std::move(key), c);
  }
  for (uint32_t r = 0; r < p_; ++r) k.rows.emplace(rows_.size(r), r);
  return k;
}

uint32_t FcLayout::plan_pe(uint32_t r, uint32_t c, uint32_t br, uint32_t capacity) const {
  NameTable names;
  Sram sram;
  sram.bind(nullptr, capacity);
  FcGeom g = geom(r, c);
  g.br = br;
  FcSramSteps steps = sram_steps(g, [&](const std::string& n, uint32_t bytes) { sram.allocate({c, r}, names, names.intern(n), bytes); },
                                 [&](const std::string& n) { sram.free(names.intern(n)); });
  sram.allocate({c, r}, names, names.intern("vars"), sizeof(FcVars));
  steps.whole_step();
  return sram.high_water();
}

uint32_t FcLayout::sram_peak(uint32_t capacity) const {
  const PeClasses k = pe_classes();
  uint32_t worst = 0;
  for (const auto& [br, r] : k.rows)
    for (const auto& [key, c] : k.columns) worst = std::max(worst, plan_pe(r, c, br, capacity));
  return worst;
}

namespace {
// Set while a layout is built only to ask whether a mesh would fit: its refusals then skip the
// advice (which would build such layouts in turn).
thread_local bool g_probing = false;
}  // namespace

bool FcLayout::fits_one_row_per_pe(const MachineSpec& machine, uint32_t width) const {
  FcModel one = model_;
  one.batch_size = p_ * model_.num_csx;
  g_probing = true;
  bool fits = true;
  try {
    FcLayout probe(one, {width, p_}, machine);
  } catch (const ConfigError&) {
    fits = false;
  }
  g_probing = false;
  return fits;
}

void FcLayout::check_sram_plan(const MachineSpec& machine) const {
  const uint32_t capacity = machine.sram_bytes_per_pe;
  auto peak = [&](uint32_t r, uint32_t c, uint32_t br) -> std::pair<bool, std::string> {
    try {
      plan_pe(r, c, br, capacity);
    } catch (const PeError& e) {
      return {false, e.what()};
    }
    return {true, ""};
  };
  const PeClasses k = pe_classes();
  const auto& rows = k.rows;
  const auto& columns = k.columns;
  for (const auto& [br, r] : rows)
    for (const auto& [key, c] : columns) {
      auto [ok, why] = peak(r, c, br);
      if (ok) continue;
      if (g_probing) throw ConfigError(why);
      // The batch it would fit: the most rows per PE with which every PE's plan fits (a smaller
      // batch for the PE that failed alone was offered before, and another PE then failed).
      uint32_t fits = 0;
      for (uint32_t b = rows.rbegin()->first; b-- > 1 && !fits;) {
        bool all = true;
        for (const auto& [k2, c2] : columns) all = all && peak(r, c2, b).first;
        if (all) fits = b;
      }
      // With one sample per PE row, more columns help only if some width the machine has fits
      // (a buffer of a layer's whole width, `acc`, does not shrink with them; 750 is a WSE-2's most).
      std::string advice;
      if (fits) {
        advice = "; it fits with " + std::to_string(fits) + (fits == 1 ? " sample" : " samples") + " per PE row, i.e. batch_size " +
                 std::to_string(uint64_t(fits) * p_ * model_.num_csx) + " on this mesh, or with more PE rows (mesh.height)";
      } else if (q_ < machine.fabric_width && fits_one_row_per_pe(machine, machine.fabric_width)) {
        uint32_t lo = q_, hi = machine.fabric_width;  // the fewest columns that fit: lo does not, hi does
        while (hi - lo > 1) {
          const uint32_t mid = lo + (hi - lo) / 2;
          (fits_one_row_per_pe(machine, mid) ? hi : lo) = mid;
        }
        advice = "; even one sample per PE row does not fit on " + std::to_string(q_) + " PE columns: use at least " + std::to_string(hi) +
                 " (mesh.width)";
      } else {
        advice = "; even one sample per PE row does not fit, on " + std::to_string(q_) + " PE columns or on any number of them a " +
                 machine.name + " has (at most " + std::to_string(machine.fabric_width) +
                 "): a smaller model (model.layers) or more SRAM per PE (machine.sram_bytes_per_pe)";
      }
      throw ConfigError(model_.where + ": the model does not fit PE SRAM: " + why + advice);
    }
}

const std::vector<FcColourUse>& FcLayout::colour_map() {
  static const std::vector<FcColourUse> map = {
      {kWeightColour, "weights, north ingress -> down each column (multicast to every PE)"},
      {1, "east from even columns: forward partial sums; backward, the gathered dZ slices"},
      {2, "east from odd columns: forward partial sums; backward, the gathered dZ slices"},
      {kBroadcastColour, "east-most PE -> west along the row: activations, each PE's filter keeps its N-slice"},
      {4, "dW partial sums south from even rows, one per streamed weight"},
      {5, "dW partial sums south from odd rows, one per streamed weight"},
      {kLossColour, "loss and prediction per sample, east-most PE -> east egress"},
      {kDzColour, "east-most PE -> west along the row: dZ, whole"},
      {kInputColour, "input worker -> west ingress -> east along the row: each PE's filter keeps its K-slice of the batch, the east-most also the labels"}};
  return map;
}

void FcLayout::build(Wafer& wafer) const {
  Mesh& m = wafer.mesh();
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
      Route in = Route::make(Dir::West, {Dir::Ramp});
      if (c + 1 < q_) in.tx |= bit(Dir::East);
      m.set_route({c, r}, kInputColour, in);
      wafer.load({c, r}, &fc_forward_program());
      // The backward program is loaded when a backward pass runs: what it asks of the machine
      // is checked now, with the rest of the mapping (--validate_only).
      if (c == 0 && r == 0) Pe::check_program(fc_backward_program(), wafer.spec(), {c, r});
      if (wafer.allocate({c, r}, "vars", sizeof(FcVars)).offset != 0) throw std::logic_error("vars not at offset 0");
    }
  }
  // Ports in a fixed order: weights north (one per column), inputs west (one per row); dW south
  // (one per column), loss east (one per row).
  for (uint32_t c = 0; c < q_; ++c) m.add_ingress({c, 0}, Dir::North);
  for (uint32_t r = 0; r < p_; ++r) m.add_ingress({0, r}, Dir::West);
  for (uint32_t c = 0; c < q_; ++c) m.add_egress({c, p_ - 1}, Dir::South);
  for (uint32_t r = 0; r < p_; ++r) m.add_egress({q_ - 1, r}, Dir::East);
}

FcVars FcLayout::vars(FcGeom g, size_t l, bool backward) const {
  FcVars v;
  const size_t last = layer_count() - 1;
  v.br = g.br, v.row = g.r, v.col = g.c, v.p = p_, v.q = q_;
  v.n_out = model_.layers[l + 1], v.k_in = model_.layers[l];
  v.k0 = features_[l].begin(g.c), v.kn = features_[l].size(g.c), v.ks = v.kn + (g.east() ? 1 : 0);
  v.n0 = features_[l + 1].begin(g.c), v.ns = features_[l + 1].size(g.c);
  v.global_batch = model_.batch_size;
  v.loss_scale = model_.loss_scale;
  v.last_layer = l == last;
  v.backward = backward;
  v.has_dx = backward && l > 0;
  v.mixed = model_.mixed;
  v.encoding = uint8_t(model_.encoding);
  return v;
}

nlohmann::json FcLayout::mesh_program(const Mesh& m, uint32_t sram_bytes) const {
  nlohmann::json j;
  j["mesh"] = {{"width", q_}, {"height", p_}};
  j["num_csx"] = model_.num_csx;
  j["batch_per_wafer"] = batch_per_wafer_;
  nlohmann::json rows = nlohmann::json::array();
  for (uint32_t r = 0; r < p_; ++r) rows.push_back({{"row", r}, {"batch_begin", rows_.begin(r)}, {"batch_rows", rows_.size(r)}});
  j["placement"]["rows"] = rows;
  nlohmann::json layers = nlohmann::json::array();
  for (size_t l = 0; l < layer_count(); ++l) {
    nlohmann::json cols = nlohmann::json::array();
    for (uint32_t c = 0; c < q_; ++c)
      cols.push_back({{"column", c},
                      {"k_begin", features_[l].begin(c)},
                      {"k_rows", features_[l].size(c) + (c + 1 == q_ ? 1 : 0)},
                      {"n_begin", features_[l + 1].begin(c)},
                      {"n_cols", features_[l + 1].size(c)}});
    layers.push_back({{"name", layer_name(l)}, {"in", model_.layers[l]}, {"out", model_.layers[l + 1]}, {"columns", cols}});
  }
  j["layers"] = layers;
  nlohmann::json colours = nlohmann::json::array();
  for (const FcColourUse& u : colour_map()) colours.push_back({{"colour", u.colour}, {"carries", u.carries}});
  j["colours"] = colours;
  nlohmann::json routes = nlohmann::json::array();
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
  // The SRAM plan: each PE's peak over one training step.
  nlohmann::json plan = nlohmann::json::array();
  uint32_t worst = 0;
  for (uint32_t r = 0; r < p_; ++r) {
    for (uint32_t c = 0; c < q_; ++c) {
      const uint32_t peak = plan_pe(r, c, rows_.size(r), sram_bytes);
      worst = std::max(worst, peak);
      plan.push_back({{"x", c}, {"y", r}, {"peak_bytes", peak}});
    }
  }
  j["sram_plan"] = {{"capacity_bytes", sram_bytes}, {"peak_bytes_max", worst}, {"per_pe", plan}};
  return j;
}

}  // namespace wse
