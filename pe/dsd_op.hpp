#pragma once
// The arithmetic of DSD operations, one element at a time, and their SIMD width: what an op
// computes and how many elements per cycle the datapath runs it at when every operand is in
// memory. Shared by the PE's threads (pe/pe.cpp) so main thread and microthreads compute alike.
//
// Every result is computed in fp32 and rounded once to the destination type: fp32 ops round like
// the host's float; fp16 ops (@fmach ...) compute in fp32 (an fp16 x fp16 product is exact there)
// and round to fp16 on the write; @fmachs keeps the fp32 sum. Multiply-add is not fused: a + b*s
// rounds the product, then the sum (so functional models on the host can match it bit for bit).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>

#include "core/half.hpp"
#include "core/machine_spec.hpp"
#include "pe/dsd.hpp"

namespace wse {

inline uint32_t elem_bytes(ElemType t) { return t == ElemType::F32 ? 4 : 2; }

inline float from_bits(uint32_t bits, ElemType t) {
  if (t == ElemType::F32) return std::bit_cast<float>(bits);
  return half_to_float(uint16_t(bits));
}
inline uint32_t to_bits(float v, ElemType t) {
  if (t == ElemType::F32) return std::bit_cast<uint32_t>(v);
  return float_to_half_bits(v);
}

inline bool is_multiply(DsdOpCode c) { return c == DsdOpCode::Mac || c == DsdOpCode::Mul; }

// The element result from operand values (already in fp32).
inline float dsd_compute(const DsdOp& op, float a, float b, float s) {
  switch (op.code) {
    case DsdOpCode::Mov:
    case DsdOpCode::Cvt: return a;
    case DsdOpCode::Add: return a + b;
    case DsdOpCode::Sub: return a - b;
    case DsdOpCode::Mul: return a * b;
    case DsdOpCode::Mac: {
      const float p = b * s;  // rounded before the add: not a fused multiply-add
      return a + p;
    }
    case DsdOpCode::Neg: return -a;
    case DsdOpCode::Max: return std::fmax(a, b);
  }
  return a;
}

// Byte offset of element i of a memory DSD.
inline int64_t mem_elem_offset(const Dsd& d, uint32_t i, ElemType t) {
  return int64_t(d.offset) + int64_t(i) * d.stride * int64_t(elem_bytes(t));
}

inline float mem_read(const uint8_t* sram, const Dsd& d, uint32_t i, ElemType t) {
  const int64_t at = mem_elem_offset(d, i, t);
  if (t == ElemType::F32) {
    float v;
    std::memcpy(&v, sram + at, 4);
    return v;
  }
  uint16_t h;
  std::memcpy(&h, sram + at, 2);
  return half_to_float(h);
}

inline void mem_write(uint8_t* sram, const Dsd& d, uint32_t i, ElemType t, float v) {
  const int64_t at = mem_elem_offset(d, i, t);
  if (t == ElemType::F32) {
    std::memcpy(sram + at, &v, 4);
  } else {
    const uint16_t h = float_to_half_bits(v);
    std::memcpy(sram + at, &h, 2);
  }
}

// SIMD width of an op whose operands are all in memory: the SDK's per-builtin width (machine
// spec), limited by strides as the SDK's SIMD-mode appendix lists, and 1 for a reduction into a
// stride-0 destination (each element depends on the one before).
inline uint32_t dsd_simd_width(const DsdOp& op, const MachineSpec& spec) {
  const bool h_only = op.t_dst == ElemType::F16 && op.t_a == ElemType::F16;
  const bool mixed = op.t_dst == ElemType::F32 && (op.t_b == ElemType::F16 || op.t_a == ElemType::F16);
  uint32_t w;
  if (op.code == DsdOpCode::Mac) w = h_only ? spec.fmac_simd_fp16 : mixed ? spec.fmac_simd_mixed : spec.fmac_simd_fp32;
  else if (op.code == DsdOpCode::Mul || op.code == DsdOpCode::Max) w = h_only ? spec.move_simd_fp16 : spec.fmac_simd_fp32;
  else if (op.code == DsdOpCode::Cvt) w = spec.move_simd_fp32;
  else w = h_only ? spec.move_simd_fp16 : mixed ? spec.fmac_simd_mixed : spec.move_simd_fp32;
  for (const Dsd* d : {&op.dst, &op.a, &op.b}) {
    if (!d->mem() || d->stride == 1) continue;
    if (d->stride == 0) {
      if (d == &op.dst) w = 1;
      continue;
    }
    const int32_t m = ((d->stride % 8) + 8) % 8;
    if (m == 1 || m == 7 || m == 4) w = std::min<uint32_t>(w, 2);
    else if (m == 0) w = 1;
  }
  return std::max<uint32_t>(1, w);
}

}  // namespace wse
