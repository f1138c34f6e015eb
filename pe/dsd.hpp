#pragma once
// Data structure descriptors and the DSD operations a PE program issues, in the machine's terms
// (CSL's mem1d_dsd, fabin_dsd, fabout_dsd and the @fmovs / @fadds / @fmach ... builtins).
//
// A DSD describes a vector: in SRAM (byte offset, length, stride in elements), arriving on a
// colour's input queue (fabin: colour, extent), or leaving on a colour (fabout: colour, extent,
// .advance_switch, .control). A scalar operand is a DSD of kind Scalar holding its value's bits.
// An operation streams its operands element by element: one element per cycle when any operand
// is on the fabric, or a SIMD width per cycle when all are in memory (pe/dsd_op.hpp).
#include <cstdint>
#include <cstring>

#include "fabric/wavelet.hpp"
#include "pe/sram.hpp"

namespace wse {

// BadStride: what mem1d() makes of a memory vector whose stride is not an i8 (mem1d_dsd's stride,
// sdk.cerebras.ai/csl/language/dsds); every op refuses it, naming the stride (PeContext::issue).
// A kind of its own, so the builtins' fast path (PeContext::builtin) needs no test for it.
// Scalar and ScalarF16: a scalar's type is its kind, as CSL's scalars are typed; an op refuses one
// of the other type (fmovh of an fp32 1.0 read its bits as fp16: 0, silently). A kind, not a flag,
// so the fast path tests it in the one compare it made before (a flag's test cost the FC kernel's
// per-weight loop 38% more instructions).
enum class DsdKind : uint8_t { None, Mem, FabIn, FabOut, Scalar, BadStride, ScalarF16 };

struct Dsd {
  DsdKind kind = DsdKind::None;
  Colour colour = 0;     // FabIn / FabOut
  uint8_t flags = 0;     // FabOut: kAdvanceSwitch (on its last wavelet), kControl (control wavelets)
  int32_t stride = 1;    // Mem: in elements (0 = the same element every time)
  uint32_t offset = 0;   // Mem: SRAM byte offset; Scalar: the value's bits
  uint32_t length = 0;   // elements (a scalar has none)

  bool mem() const { return kind == DsdKind::Mem; }
  bool fabric() const { return kind == DsdKind::FabIn || kind == DsdKind::FabOut; }
  bool scalar() const { return kind == DsdKind::Scalar || kind == DsdKind::ScalarF16; }
};

// A vector in SRAM: `length` elements from `byte_offset`, `stride` elements apart.
inline Dsd mem1d(uint32_t byte_offset, uint32_t length, int32_t stride = 1) {
  return {stride >= -128 && stride <= 127 ? DsdKind::Mem : DsdKind::BadStride, 0, 0, stride, byte_offset, length};
}
inline Dsd mem1d(SramRef r, uint32_t length, int32_t stride = 1) { return mem1d(r.offset, length, stride); }
// `extent` wavelets taken from colour c's input queue.
inline Dsd fabin(Colour c, uint32_t extent) { return {DsdKind::FabIn, c, 0, 1, 0, extent}; }

struct FaboutOptions {
  bool advance_switch = false;  // the last wavelet advances the sender's router's switch for c
  bool control = false;         // the wavelets are control wavelets (switch commands)
};
// `extent` wavelets sent on colour c.
inline Dsd fabout(Colour c, uint32_t extent, FaboutOptions o = {}) {
  return {DsdKind::FabOut, c, uint8_t((o.advance_switch ? kAdvanceSwitch : 0) | (o.control ? kControl : 0)), 1, 0, extent};
}
inline Dsd scalar_f32(float v) {
  Dsd d{DsdKind::Scalar};
  std::memcpy(&d.offset, &v, 4);
  return d;
}
inline Dsd scalar_f16(_Float16 v) {
  Dsd d{DsdKind::ScalarF16};
  uint16_t bits;
  std::memcpy(&bits, &v, 2);
  d.offset = bits;
  return d;
}

// A task to act on when an asynchronous operation finishes: a local task by id, or the data
// task of a colour.
struct TaskRef {
  enum Kind : uint8_t { None, Local, Data } kind = None;
  uint8_t id = 0;
  static TaskRef local(uint8_t id) { return {Local, id}; }
  static TaskRef data(Colour c) { return {Data, c}; }
};

struct OpOptions {
  bool async = false;       // run on a microthread; the issuing task goes on at once
  int8_t microthread = -1;  // which one (-1: the lowest free one)
  TaskRef activate;         // on completion: activate this local task ...
  TaskRef unblock;          // ... or unblock this task (at most one of the two: the SDK's rule)
};

enum class DsdOpCode : uint8_t { Mov, Add, Sub, Mul, Mac, Neg, Max, Cvt };
// Element types of (dst, a, b, scalar): s = fp32, h = fp16, hs = fp16 operands, fp32 result.
enum class ElemType : uint8_t { F32, F16 };

struct DsdOp {
  DsdOpCode code = DsdOpCode::Mov;
  ElemType t_dst = ElemType::F32, t_a = ElemType::F32, t_b = ElemType::F32, t_s = ElemType::F32;
  Dsd dst, a, b;
  uint32_t scalar = 0;       // Mac: the multiplier's bits
  uint32_t length = 0;       // elements
  OpOptions opts;
  const char* name = "";     // the CSL builtin: "fadds", "fmach", ...
};

}  // namespace wse
