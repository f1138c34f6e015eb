#pragma once
// The layout of a fully-connected network on one wafer, computed once as a value (the
// `layout.csl` of a Cerebras SDK example): which batch rows and feature slices each PE holds,
// the colour map, the routes and edge ports, the SRAM plan of every PE through a training step,
// and each PE's kernel parameters for a (layer, pass). Nothing here runs; fc_wafer.hpp runs it.
//
// PE (c, r) holds batch rows rows().begin(r) .. of its wafer's shard and, for layer l, the K-slice
// features(l) column c of the layer's input (the east-most column also holds the ones row that
// multiplies the bias) and the N-slice features(l + 1) column c of its outputs (docs/fc-mapping.md).
#include <cstdint>
#include <functional>
#include <map>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "core/machine_spec.hpp"
#include "fabric/geometry.hpp"
#include "kernels/fc/fc_programs.hpp"
#include "kernels/gemv/gemv.hpp"
#include "wafer/wafer.hpp"
#include "wire/weight_stream.hpp"

namespace wse {

// The network and how it is trained, as far as the layout needs it.
struct FcModel {
  std::vector<uint32_t> layers;  // feature sizes, input first
  uint32_t batch_size = 64;      // global, split evenly over num_csx wafers
  uint32_t num_csx = 1;
  bool mixed = false;            // fp16 activations and weights on the wire, fp32 sums
  float loss_scale = 1.0f;
  StreamEncoding encoding = StreamEncoding::Dense;
  std::string where;             // "config FILE": every error starts with it
};

// One PE's place in the grid: row r of p, column c of q, its batch rows br from b0.
struct FcGeom {
  uint32_t r = 0, c = 0, p = 0, q = 0, br = 0, b0 = 0;
  bool east() const { return c + 1 == q; }
};

// One colour of the map: what it carries, in one line (mesh_program.json and docs/fc-mapping.md).
struct FcColourUse {
  Colour colour;
  const char* carries;
};

// The SRAM events of one PE, in the order a step runs them. `alloc(name, bytes)`, `free(name)`.
// Activations and dZ ("act") are fp16 in mixed precision, fp32 otherwise; sums are fp32.
struct FcSramSteps {
  const std::vector<uint32_t>& layers;
  const std::vector<Split>& features;
  FcGeom g;
  bool mixed;
  std::function<void(const std::string&, uint32_t)> alloc;
  std::function<void(const std::string&)> free;

  static std::string name(size_t l, const char* what) { return std::string(what) + std::to_string(l); }
  size_t last() const { return layers.size() - 2; }
  uint32_t act() const { return mixed ? 2 : 4; }
  uint32_t kn(size_t l) const { return features[l].size(g.c); }
  uint32_t ks(size_t l) const { return kn(l) + (g.east() ? 1 : 0); }
  uint32_t ns(size_t l) const { return features[l + 1].size(g.c); }
  uint32_t n_out(size_t l) const { return layers[l + 1]; }
  uint32_t k_in(size_t l) const { return layers[l]; }

  void step_start();
  void forward(size_t l);
  void after_forward(size_t l);
  void backward(size_t l);
  void after_backward(size_t l);
  void after_eval();
  void whole_step();
};

class FcLayout {
 public:
  // Throws ConfigError (naming model.where) when the model does not map: a batch that does not
  // split, fewer samples than PE rows, a sparse slice beyond 16-bit indices, or an SRAM plan that
  // does not fit (saying what would).
  FcLayout(const FcModel& model, MeshShape mesh, const MachineSpec& machine);

  const FcModel& model() const { return model_; }
  uint32_t p() const { return p_; }  // PE rows
  uint32_t q() const { return q_; }  // PE columns
  uint32_t batch_per_wafer() const { return batch_per_wafer_; }
  size_t layer_count() const { return model_.layers.size() - 1; }
  const Split& rows() const { return rows_; }
  const Split& features(size_t l) const { return features_[l]; }
  FcGeom geom(uint32_t r, uint32_t c) const { return {r, c, p_, q_, rows_.size(r), rows_.begin(r)}; }
  FcSramSteps sram_steps(FcGeom g, std::function<void(const std::string&, uint32_t)> alloc,
                         std::function<void(const std::string&)> free) const {
    return {model_.layers, features_, g, model_.mixed, std::move(alloc), std::move(free)};
  }
  static std::string layer_name(size_t l) { return "fc" + std::to_string(l + 1); }

  // Each column's rows of layer l's (in+1) x out matrix, in both passes (the last column also
  // holds the bias row).
  std::vector<StreamSlice> stream_slices(size_t l) const;
  // Feature values of the first layer's input each PE row receives from its input worker
  // (each PE's K-slice of its batch rows, column after column).
  uint64_t input_words(uint32_t r) const;

  // The colour map: every colour the kernel uses and what it carries.
  static const std::vector<FcColourUse>& colour_map();
  // Routes every colour, adds the edge ports (weights in at the north, inputs in at the west,
  // dW out at the south, loss out at the east), loads the programs and reserves each PE's
  // variables at SRAM offset 0. The wafer is then ready to finalize.
  void build(Wafer& wafer) const;
  // Each PE's kernel parameters for layer l and a pass (the buffers' offsets are filled in by the
  // run side once they are allocated).
  FcVars vars(FcGeom g, size_t l, bool backward) const;

  // Placement, colours, routes and the SRAM plan per PE, as JSON (--compile_only).
  nlohmann::json mesh_program(const Mesh& mesh, uint32_t sram_bytes) const;

 private:
  void check_sram_plan(const MachineSpec& machine) const;
  // Whether one sample per PE row fits this model on a mesh `width` columns wide (for a refusal's
  // advice: more columns were advised where no width of the machine would do).
  bool fits_one_row_per_pe(const MachineSpec& machine, uint32_t width) const;

 public:
  // The largest PE's peak over one training step (mesh_program's `peak_bytes_max`), planned for
  // one PE of each class of the mesh (as the check above), not every PE: `--validate_only` built
  // the whole mesh program for this one figure, three times the memory the run's own estimate
  // allows (14 GiB on the whole wafer), and could end in std::terminate on bad_alloc.
  uint32_t sram_peak(uint32_t capacity) const;

 private:
  // One PE of each class of the mesh: batch rows -> a PE row with that many, and a column's key
  // (east-most or not, its slice of each layer) -> a column of it.
  struct PeClasses {
    std::map<uint32_t, uint32_t> rows;
    std::map<std::vector<uint32_t>, uint32_t> columns;
  };
  PeClasses pe_classes() const;
  // PE (c, r)'s SRAM plan over one training step with `br` batch rows: its high water (throws
  // PeError naming the buffer that does not fit `capacity`).
  uint32_t plan_pe(uint32_t r, uint32_t c, uint32_t br, uint32_t capacity) const;
  void check_dsd_extents() const;

  FcModel model_;
  uint32_t p_ = 0, q_ = 0, batch_per_wafer_ = 0;
  Split rows_;
  std::vector<Split> features_;  // per layer input: features split over columns (+ ones row in the last)
};

}  // namespace wse
