#pragma once
// fp16 <-> fp32 conversions as the machine's datapath, MemoryX's fp16 streams and the input
// workers need them, fast and exact: fp16 -> fp32 by a table, fp32 -> fp16 by bit arithmetic
// that rounds exactly as the compiler's _Float16 conversion (round to nearest even), without the
// libgcc calls x86-64's baseline ISA makes for _Float16. One definition for every room, so the
// PEs, the functional kernels and the wire agree bit for bit.
#include <array>
#include <bit>
#include <cstdint>

namespace wse {

// fp16 -> fp32 by table: exact, and without the libgcc call x86-64's baseline ISA needs (the
// datapath converts an fp16 operand per element; this was a tenth of an FC step's host time).
struct HalfTable {
  std::array<float, 65536> value;
  HalfTable() {
    for (uint32_t i = 0; i < 65536; ++i) value[i] = float(std::bit_cast<_Float16>(uint16_t(i)));
  }
};
inline const HalfTable kHalfTable;
inline float half_to_float(uint16_t bits) { return kHalfTable.value[bits]; }

// fp32 -> fp16, rounding to nearest even, overflow to infinity, subnormals kept: the same bits
// as the compiler's _Float16 conversion for every float (checked over all 2^32 once, and on a
// sample in tests/pe_dsd_test.cpp), without the libgcc call x86-64's baseline ISA needs (that
// call was half of a functional training step's host time).
inline uint16_t float_to_half_bits(float f) {
  uint32_t x = std::bit_cast<uint32_t>(f);
  const uint32_t sign = (x >> 16) & 0x8000u;
  x &= 0x7fffffffu;
  if (x > 0x7f800000u) return std::bit_cast<uint16_t>(_Float16(f));  // NaN: as the compiler converts it
  if (x >= 0x47800000u) return uint16_t(sign | 0x7c00u);             // 2^16 and above, infinity: infinity
  if (x < 0x38800000u) {
    // Below the smallest normal half (2^-14): adding 0.5 makes the float adder round the value to
    // the half subnormals' quantum (2^-24), to nearest even; the low bits are then the half's.
    const float magic = 0.5f;
    const float r = std::bit_cast<float>(x) + magic;
    return uint16_t(sign | (std::bit_cast<uint32_t>(r) - std::bit_cast<uint32_t>(magic)));
  }
  const uint32_t odd = (x >> 13) & 1u;
  x += 0xc8000fffu + odd;  // rebias the exponent (-112 << 23) and round to nearest even (a carry may reach infinity)
  return uint16_t(sign | (x >> 13));
}
// fp32 rounded to fp16 and back: float(_Float16(f)).
inline float round_to_half(float f) { return half_to_float(float_to_half_bits(f)); }

}  // namespace wse
