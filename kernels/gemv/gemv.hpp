#pragma once
// 2D GEMV y = A x on a P x Q PE grid, in the style of the Cerebras GEMV tutorials.
//
//   x enters at the north edge of PE column c (its column block) and is multicast down the
//   column on colour 0; each PE moves it into SRAM with one asynchronous @fmovs and, when that
//   finishes, computes y = A x with one @fmacs per column of its resident A tile. Then the partial
//   sums stream east: the first column sends its y, every other PE adds its y to the partial sum
//   arriving from the west and passes it on in one streaming @fadds (colours 1 and 2 alternate by
//   column, since a colour has one rx per router). The east-most column's sums leave through
//   egress ports on the east edge.
#include <cstdint>
#include <vector>

#include "core/errors.hpp"
#include "kernels/kernel.hpp"
#include "pe/program.hpp"
#include "wafer/wafer.hpp"

namespace wse {

// The `gemv:` block of a run config.
struct GemvConfig : KernelConfig {
  uint32_t rows = 0, cols = 0;               // A is rows x cols (M x N)
  uint32_t grid_width = 0, grid_height = 0;  // PE grid Q x P; 0 = as large as mesh and shape allow
  uint64_t seed = 1;                         // A and x are drawn from a counter-based hash of (seed, index)
  std::string describe() const override { return std::to_string(rows) + "x" + std::to_string(cols); }
  uint64_t host_bytes() const override { return (uint64_t(rows) * cols + cols + rows) * 4; }
  uint64_t sram_bytes() const override { return uint64_t(rows) * cols * 4; }  // A, tile by tile (x and y besides)
};

// `kernel: gemv`, for the registry (kernels/registry.cpp).
KernelKind gemv_kernel_kind();

struct GemvProblem {
  uint32_t rows = 0, cols = 0;  // M, N
  std::vector<float> a;         // row-major M x N
  std::vector<float> x;         // N

  // Deterministic values in [-1, 1) from (seed, index): independent of threads and order.
  static GemvProblem random(uint32_t rows, uint32_t cols, uint64_t seed);
};

// Where the rows/cols of A are cut among the grid: part k covers [begin(k), begin(k+1)).
struct Split {
  uint32_t total = 0, parts = 1;
  uint32_t begin(uint32_t k) const { return uint32_t(uint64_t(total) * k / parts); }
  uint32_t size(uint32_t k) const { return begin(k + 1) - begin(k); }
};

class GemvKernel {
 public:
  static constexpr Colour kX = 0;
  static Colour psum_colour(uint32_t column) { return Colour(1 + column % 2); }

  // Places the problem on the wafer's top-left grid_width x grid_height PEs (0 = largest that
  // fits), sets routes, loads A tiles into SRAM and x into the north ingress ports.
  GemvKernel(Wafer& wafer, const GemvProblem& problem, uint32_t grid_width = 0, uint32_t grid_height = 0);
  // The tiles of a rows x cols matrix on a q x p PE grid fit a PE (its SRAM, the u16 of a DSD's
  // extent): checked from the config alone, before the matrix is drawn (a 26000² matrix was
  // built, 5 GiB, to be refused). Throws ConfigError naming the fields.
  static void check_tiles(uint32_t rows, uint32_t cols, uint32_t q, uint32_t p, uint32_t sram_bytes);

  uint32_t grid_width() const { return q_; }
  uint32_t grid_height() const { return p_; }
  // y gathered from the east egress ports after a run. Throws if a row is incomplete.
  std::vector<float> result() const;
  // The same y on the host, in the order the PEs add it (bit-identical to result()).
  std::vector<float> host_sum(const GemvProblem& problem) const;

 private:
  uint32_t p_ = 0, q_ = 0;
  Split row_split_, col_split_;
  std::vector<const EgressPort*> egress_;  // one per grid row
  Program program_;
};

}  // namespace wse
