#pragma once
// The arithmetic of DSD operations, one element at a time, and their SIMD width: what an op
// computes and how many elements per cycle the datapath runs it at when every operand is in
// memory. Shared by the PE's threads (pe/pe.cpp) and the builtins' inlined path for small
// memory ops (PeContext::builtin, pe/pe.hpp), so all of them compute alike.
//
// Every result is computed in fp32 and rounded to the destination type: fp32 ops round like the
// host's float; fp16 ops (@fmach ...) compute in fp32 (an fp16 x fp16 product is exact there)
// and round to fp16 on the write; @fmachs keeps the fp32 sum. Multiply-add is not fused: a + b*s
// rounds the product, then the sum (so functional models on the host can match it bit for bit).
// For @fmach that is two roundings, the fp32 sum's and then fp16's: about 3 results in 100,000
// differ by one ulp from a single-rounding fp16 FMA (an audit, 2026-11-28). NaN results are NaN,
// but which operand's payload a NaN carries is not specified (this path and pe.cpp's may differ).
#include <algorithm>
#include <array>
#include <bit>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <type_traits>

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

// The element result of op code C from operand values (already in fp32). One definition for
// the generic path (dsd_compute, an op held by a thread) and the builtins' inlined fast path
// (dsd_mem_elements), so both compute alike.
template <DsdOpCode C>
inline float dsd_apply(float a, float b, float s) {
  if constexpr (C == DsdOpCode::Mov || C == DsdOpCode::Cvt) return a;
  else if constexpr (C == DsdOpCode::Add) return a + b;
  else if constexpr (C == DsdOpCode::Sub) return a - b;
  else if constexpr (C == DsdOpCode::Mul) return a * b;
  else if constexpr (C == DsdOpCode::Mac) {
    const float p = b * s;  // rounded before the add: not a fused multiply-add
    return a + p;
  } else if constexpr (C == DsdOpCode::Neg) return -a;
  else return std::fmax(a, b);  // Max
}

// The element result from operand values (already in fp32).
inline float dsd_compute(const DsdOp& op, float a, float b, float s) {
  switch (op.code) {
    case DsdOpCode::Mov: return dsd_apply<DsdOpCode::Mov>(a, b, s);
    case DsdOpCode::Cvt: return dsd_apply<DsdOpCode::Cvt>(a, b, s);
    case DsdOpCode::Add: return dsd_apply<DsdOpCode::Add>(a, b, s);
    case DsdOpCode::Sub: return dsd_apply<DsdOpCode::Sub>(a, b, s);
    case DsdOpCode::Mul: return dsd_apply<DsdOpCode::Mul>(a, b, s);
    case DsdOpCode::Mac: return dsd_apply<DsdOpCode::Mac>(a, b, s);
    case DsdOpCode::Neg: return dsd_apply<DsdOpCode::Neg>(a, b, s);
    case DsdOpCode::Max: return dsd_apply<DsdOpCode::Max>(a, b, s);
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
// stride-0 destination (each element depends on the one before). Every limit is a minimum, so
// the operands may be looked at in any order. Always inlined: the builtins' fast path calls it
// with the op and its types known (PeContext::builtin), which leaves little more than the stride
// tests (left to the compiler, a change elsewhere in the builtin once made it a call: the FC
// step's per-weight ops cost 4x the instructions here).
[[gnu::always_inline]] inline uint32_t dsd_simd_width(DsdOpCode code, ElemType t_dst, ElemType t_a, ElemType t_b, const Dsd& dst, const Dsd& a,
                               const Dsd& b, const MachineSpec& spec) {
  const bool h_only = t_dst == ElemType::F16 && t_a == ElemType::F16;
  const bool mixed = t_dst == ElemType::F32 && (t_b == ElemType::F16 || t_a == ElemType::F16);
  uint32_t w;
  if (code == DsdOpCode::Mac) w = h_only ? spec.fmac_simd_fp16 : mixed ? spec.fmac_simd_mixed : spec.fmac_simd_fp32;
  else if (code == DsdOpCode::Mul) w = h_only ? spec.move_simd_fp16 : spec.fmac_simd_fp32;
  else if (code == DsdOpCode::Max) w = h_only ? spec.fmax_simd_fp16 : spec.fmax_simd_fp32;
  else if (code == DsdOpCode::Cvt) w = spec.convert_simd;
  else w = h_only ? spec.move_simd_fp16 : mixed ? spec.fmac_simd_mixed : spec.move_simd_fp32;
  auto limit = [&w, &spec](const Dsd& d, bool is_dst) __attribute__((always_inline)) {
    if (!d.mem() || d.stride == 1) return;
    if (d.stride == 0) {
      if (is_dst) w = 1;
      return;
    }
    // The SDK's table is for its 8 banks (the only count a machine preset may give): a stride of
    // +-1 or half the banks apart mod the banks limits the width to 2 (a quarter of WSE-3's 8 fp16
    // lanes, half of the 4 of its fp32 ops), a whole bank count serializes.
    const auto banks = int32_t(spec.sram_banks);
    const int32_t m = ((d.stride % banks) + banks) % banks;
    if (m == 1 || m == banks - 1 || m == banks / 2) w = std::min<uint32_t>(w, 2);
    else if (m == 0) w = 1;
  };
  limit(dst, true), limit(a, false), limit(b, false);
  return std::max<uint32_t>(1, w);
}
inline uint32_t dsd_simd_width(const DsdOp& op, const MachineSpec& spec) {
  return dsd_simd_width(op.code, op.t_dst, op.t_a, op.t_b, op.dst, op.a, op.b, spec);
}

// The elements of an op whose destination is in memory and whose sources are in memory or
// scalars (b may be absent), with its code and element types known at compile time: what
// Pe::run_memory_op computes for such an op, element by element in the same order (a source
// that overlaps the destination reads what earlier elements wrote), with the same roundings.
template <DsdOpCode C, ElemType TD, ElemType TA, ElemType TB, ElemType TS>
[[gnu::always_inline]] inline void dsd_mem_elements(uint8_t* m, const Dsd& dst, const Dsd& a, const Dsd& b, uint32_t scalar, uint32_t n) {
  constexpr int64_t bd = TD == ElemType::F32 ? 4 : 2, ba = TA == ElemType::F32 ? 4 : 2, bb = TB == ElemType::F32 ? 4 : 2;
  uint8_t* const pd = m + dst.offset;
  const int64_t sd = int64_t(dst.stride) * bd, sa = int64_t(a.stride) * ba, sb = int64_t(b.stride) * bb;
  const uint8_t* const pa = m + a.offset;
  const uint8_t* const pb = m + b.offset;
  if constexpr (C == DsdOpCode::Mov && TD == TA) {  // a plain copy keeps every bit
    if (a.mem()) {
      for (uint32_t i = 0; i < n; ++i) std::memcpy(pd + int64_t(i) * sd, pa + int64_t(i) * sa, bd);
    } else {
      const uint32_t bits = a.offset;
      for (uint32_t i = 0; i < n; ++i) std::memcpy(pd + int64_t(i) * sd, &bits, bd);
    }
  } else {
    auto load = [](const uint8_t* p, auto t) -> float {
      if constexpr (decltype(t)::value == ElemType::F32) {
        float v;
        std::memcpy(&v, p, 4);
        return v;
      } else {
        uint16_t h;
        std::memcpy(&h, p, 2);
        return half_to_float(h);
      }
    };
    using TagA = std::integral_constant<ElemType, TA>;
    using TagB = std::integral_constant<ElemType, TB>;
    const float sv = from_bits(scalar, TS);
    const bool amem = a.mem(), bmem = b.mem();
    const float ca = amem ? 0.0f : from_bits(a.offset, TA);
    const float cb = bmem ? 0.0f : b.scalar() ? from_bits(b.offset, TB) : 0.0f;
    for (uint32_t i = 0; i < n; ++i) {
      const float va = amem ? load(pa + int64_t(i) * sa, TagA{}) : ca;
      const float vb = bmem ? load(pb + int64_t(i) * sb, TagB{}) : cb;
      const float r = dsd_apply<C>(va, vb, sv);
      if constexpr (TD == ElemType::F32) {
        std::memcpy(pd + int64_t(i) * sd, &r, 4);
      } else {
        const uint16_t h = float_to_half_bits(r);
        std::memcpy(pd + int64_t(i) * sd, &h, 2);
      }
    }
  }
}

}  // namespace wse
