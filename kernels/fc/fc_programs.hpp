#pragma once
// PE programs of a fully-connected layer in weight-streaming mode (see docs/fc-mapping.md),
// written as the machine runs them: each weight wavelet triggers a data task (dataflow-triggered
// sparse MAC: a weight that is not sent costs nothing), and everything that moves a vector moves
// it with one streaming DSD operation.
//
// Forward: weights W[k][n] of this column's K-slice arrive on colour 0 (a header word with their
// count first); each triggers acc[n][:] += W[k][n] * x[k][:] over the PE's batch rows (@fmacs, or
// @fmachs in mixed precision: fp16 operands, fp32 sums). When its weights are done, a PE adds its
// partial sums into the stream from the west and passes it east in one @fadds (colours 1/2
// alternating by column; the first column @fmovs its own). The east-most PE has Y = X W + b:
//   hidden layer: ReLU (@fmaxs), keeps its own N-slice as the next layer's input and broadcasts
//     the row west on colour 3, where each PE's router filter hands it its own N-slice, which an
//     asynchronous @fmovs (a microthread) takes into SRAM;
//   last layer: softmax cross-entropy against the labels, (loss, class) per sample out of the east
//     edge (colour 6), and dZ broadcast west whole on colour 7 (scaled by the loss scale).
//
// Backward: the weights stream again, in the same order. Each triggers, at the weight's (k, n):
//   dX: dx[k][:] += W[k][n] * dz[n][:] (when the layer has a dX), and
//   dW: the PE's share over its batch rows, sum_b x[k][b] dz[n][b], into a block of partial
//     sums. Full blocks stream down the column on a microthread (@fadds with the block from the
//     PE above; colours 4/5 by row), while the main thread fills the other block; the bottom
//     row's blocks leave through the south edge: one gradient per streamed weight, so a pruned
//     weight costs no MAC, no wavelet and no cycle in either pass.
// Then each PE masks its dX slice by where the layer below was active (its own input > 0), and
// the slices are gathered along the row (forwarded east, each PE appending its own) and
// broadcast west on colour 7, so every PE holds the layer below's dZ whole.
#include <cstdint>

#include "pe/program.hpp"

namespace wse {

inline constexpr Colour kWeightColour = 0;
inline constexpr Colour kBroadcastColour = 3;  // activations west, filtered to each PE's N-slice
inline constexpr Colour kLossColour = 6;
inline constexpr Colour kDzColour = 7;         // dZ west, whole
inline constexpr Colour kInputColour = 8;      // the batch from the input worker, east along each row
inline Colour chain_colour(uint32_t column) { return Colour(1 + column % 2); }
inline Colour dw_colour(uint32_t row) { return Colour(4 + row % 2); }

// Partial dW sums per block streamed down a column.
inline constexpr uint32_t kDwBlock = 128;

// A layer kernel's variables, at SRAM offset 0 of every PE (written by the host per kernel).
struct FcVars {
  uint32_t br = 0;                   // batch rows of this PE row
  uint32_t row = 0, col = 0, p = 0, q = 0;
  uint32_t n_out = 0, k_in = 0;      // N, and K (without the ones row)
  uint32_t k0 = 0, ks = 0, kn = 0;   // this column's K-slice: first row, rows (with the ones row), feature rows
  uint32_t n0 = 0, ns = 0;           // this column's N-slice of the outputs
  uint32_t global_batch = 0;
  float loss_scale = 1.0f;           // dZ is scaled by it (mixed precision), MemoryX divides it out
  uint8_t last_layer = 0, backward = 0, has_dx = 0, mixed = 0;
  uint8_t encoding = 0;              // StreamEncoding of the weights
  uint8_t pad[3] = {};
  // buffers (byte offsets; 0 = none). "act" = fp16 in mixed precision, fp32 otherwise.
  uint32_t x = 0;                    // this layer's input K-slice, ks x br act, feature-major
  uint32_t acc = 0;                  // forward: y partials (n_out x br fp32); backward: dx (kn x br fp32)
  uint32_t x_next = 0;               // forward: the next layer's input (its ks x br act)
  uint32_t stage = 0;                // forward, mixed: the N-slice as it arrives (ns x br fp32)
  uint32_t out = 0;                  // east-most, last layer: (loss, class) per batch row
  uint32_t labels = 0;               // east-most, last layer: br class labels
  uint32_t dz = 0;                   // dZ of this layer, whole (n_out x br act)
  uint32_t dz_prev = 0;              // backward: dZ of the layer below, whole (k_in x br act)
  uint32_t dwp = 0;                  // backward: two blocks of kDwBlock fp32 dW partials
  // progress
  uint32_t have_header = 0, w_expected = 0, w_seen = 0;
  uint32_t dw_fill = 0, dw_cur = 0, dw_sending = 0, dw_pending = 0, dw_pending_len = 0, weights_done = 0;
};

// The shared programs (one per pass, and one that takes a step's batch in); every PE of the
// grid runs them.
//
// Input: the input worker's words enter each row at its west edge on colour 8 and pass east;
// each PE's router filter hands it its own K-slice of the batch (feature-major, fp16 in mixed
// precision, one value per wavelet), which one @fmovs / @fmovh takes into SRAM; the east-most PE
// then also takes the row's labels and writes the ones row that multiplies the bias.
const Program& fc_input_program();
const Program& fc_forward_program();
const Program& fc_backward_program();

}  // namespace wse
