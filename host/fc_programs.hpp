#pragma once
// PE programs of a fully-connected layer in weight-streaming mode (see docs/fc-mapping.md).
//
// Forward: weights W[k][n] of this column's K-slice arrive on colour 0 (a header word with their
// count first); each triggers y[:, n] += W[k][n] * x[:, k] over the PE's batch rows (an AXPY).
// Partial sums then flow east along the row (colours 1/2 alternating by column), each PE adding
// its own; the east-most PE applies the activation (ReLU, or softmax cross-entropy on the last
// layer) and broadcasts the row back west on colour 3, where each PE keeps its N-slice as the
// next layer's input (the last layer's broadcast is dZ, kept whole by every PE).
//
// Backward: the dW chain runs down each column (colours 4/5): for each output n, a PE computes
// its batch rows' x^T dz[:, n] over its K-slice, adds what came from the north and passes it
// south; the bottom row's sums leave through the south egress ports. The dX stream (weights
// again, by N-slice) triggers dx[:, k] += W[k][n] * dz[:, n]; dX flows east like the forward
// partial sums and the east-most PE applies the ReLU mask and broadcasts dZ of the layer below.
#include <cstdint>

#include "pe/program.hpp"

namespace wse {

inline constexpr Colour kWeightColour = 0;
inline constexpr Colour kBroadcastColour = 3;
inline constexpr Colour kLossColour = 6;
inline Colour chain_colour(uint32_t column) { return Colour(1 + column % 2); }
inline Colour dw_colour(uint32_t row) { return Colour(4 + row % 2); }

// A layer kernel's variables, at SRAM offset 0 of every PE (written by the host per kernel).
struct FcVars {
  uint32_t br = 0;                   // batch rows of this PE row
  uint32_t row = 0, col = 0, p = 0, q = 0;
  uint32_t n_out = 0, k_in = 0;      // N, and K (without the ones row)
  uint32_t k0 = 0, ks = 0;           // this column's K-slice of the (K+1) rows
  uint32_t n0 = 0, ns = 0;           // this column's N-slice of the outputs
  uint32_t global_batch = 0;
  uint8_t last_layer = 0, sparse = 0, backward = 0, has_dx = 0;
  // buffers (byte offsets; 0 = none)
  uint32_t x_cm = 0, x_rm = 0;       // layer input K-slice: ks x br column-major; br x ks row-major
  uint32_t acc = 0;                  // forward y partials (n_out x br) / backward dx partials (k_in x br)
  uint32_t stash = 0;                // chain elements that arrived before this PE's own stream ended
  uint32_t out_cm = 0, out_rm = 0;   // forward: next layer's input slice (ns (+1) x br)
  uint32_t out_ks = 0;               // its row stride (ns, +1 in the last column for the ones row)
  uint32_t act = 0;                  // east-most: this layer's activations, kept for the backward mask
  uint32_t act_prev = 0;             // east-most, backward: the layer below's activations
  uint32_t dz = 0;                   // dZ of this layer (n_out x br), whole on every PE
  uint32_t dz_prev = 0;              // backward: dZ of the layer below (k_in x br), whole
  uint32_t labels = 0;               // east-most, last layer: br class labels
  uint32_t dw_own = 0, dw_in = 0;    // dW chain: ks words each
  // progress
  uint32_t have_header = 0, w_expected = 0, w_seen = 0, weights_done = 0;
  uint32_t chain_arrived = 0, chain_done = 0, stash_n = 0, chain_total = 0;
  uint32_t bcast_seen = 0;
  uint32_t dw_n = 0, dw_seen = 0;
};

// The shared programs (one per pass); every PE of the grid runs them.
const Program& fc_forward_program();
const Program& fc_backward_program();

}  // namespace wse
