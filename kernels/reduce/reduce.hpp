#pragma once
// Reduce of N fp32 values per PE along the top row of the mesh onto PE (0,0), written the way the
// Cerebras SDK collectives write it: streaming DSD operations, two colours alternating, the
// receive colour blocked so the operation, not a data task, consumes it.
//
//   chain: each PE adds its N values into the stream from the east and passes it west in one
//          @fadds(fabout, mem, fabin); the east-most PE @fmovs its values out; PE 0 adds into
//          memory. Depth W - 1.
//   tree:  a binomial tree of depth log2(W) (W a power of two). A PE whose distance from the east
//          end, rev, ends in t one-bits receives t vectors (from rev - 1, rev - 2, rev - 4, ...),
//          the last fused with its send west. Colours alternate by the parity of the PE's bit
//          count. Routers switch as the SDK's low-depth reduce switches them: after sending, a
//          PE's send colour becomes a relay (position 1: rx EAST) by .advance_switch, or by the
//          control wavelet the last sender into a receiver sends, which also turns the receiver's
//          receive colour into a relay (position 1: tx WEST).
//
// Each PE's values are drawn from a counter-based hash of (seed, PE, index). The result is read
// back from PE 0's SRAM; the reduce time is the cycle PE 0's last operation finished (every PE
// starts its task at cycle 0), as the SDK measurement takes it with timestamps on PE 0.
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel.hpp"
#include "pe/program.hpp"
#include "wafer/wafer.hpp"

namespace wse {

// The `reduce:` block of a run config.
struct ReduceConfig : KernelConfig {
  std::string algorithm = "chain";  // chain | tree
  uint32_t elements = 1;            // N fp32 values per PE
  uint64_t seed = 1;
  ReduceConfig() = default;
  ReduceConfig(std::string a, uint32_t n, uint64_t s) : algorithm(std::move(a)), elements(n), seed(s) {}
  std::string describe() const override { return algorithm + " reduce of " + std::to_string(elements) + " fp32 per PE"; }
};

// `kernel: reduce`, for the registry (kernels/registry.cpp).
KernelKind reduce_kernel_kind();

class ReduceKernel {
 public:
  static constexpr Colour kColourA = 4, kColourB = 5;  // the two colours the SDK example uses

  // The most fp32 values per PE a PE of `sram_bytes` holds beside the kernel's own variables
  // (12,278 on a WSE-2): the config's range and the placement's check alike.
  static uint32_t max_elements(uint64_t sram_bytes);

  // Places the reduce on the top row of `wafer` (all its columns). Throws ConfigError for a tree
  // on a width that is not a power of two, or values that do not fit SRAM.
  ReduceKernel(Wafer& wafer, const ReduceConfig& cfg);

  uint32_t width() const { return width_; }
  // PE x's values.
  std::vector<float> values(uint32_t x) const;
  // PE (0,0)'s vector after the run.
  std::vector<float> result() const;
  // The same sums on the host, in the order the kernel adds them (bit-identical to result()).
  std::vector<float> host_sum() const;
  // The exact sums (double precision), for the rounding error of either order.
  std::vector<double> exact_sum() const;
  // Whether PE 0's last operation finished (false: the run stopped first, e.g. a deadlock).
  bool finished() const;
  // The cycle PE 0's last operation finished, relative to the start of the run.
  uint64_t reduce_cycles() const;
  // Router switch advances applied during the run (tree: every PE but the ends switches).
  uint64_t switch_advances() const;

 private:
  float value(uint32_t x, uint32_t i) const;
  Wafer& wafer_;
  ReduceConfig cfg_;
  uint32_t width_ = 0;
  Cycle start_ = 0;
  Program program_;
};

}  // namespace wse
