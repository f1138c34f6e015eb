#pragma once
// A wavelet: a 32-bit payload and a colour. The payload is read as fp32, a pair of fp16, or a
// sparse weight (fp16 value + 16-bit index), as the receiving data task chooses. A control
// wavelet (the bit the machine keeps outside the 32 payload bits) carries a switch command for
// the routers it passes (fabric/colour_switch.hpp) instead of data.
#include <bit>
#include <cstddef>
#include <cstdint>
#include <cstring>

#include "fabric/geometry.hpp"

namespace wse {

using Colour = uint8_t;

// Bits beside the payload.
enum WaveletFlags : uint8_t {
  kControl = 1,        // a control wavelet: routers act on its command, the CE does not read it as data
  kAdvanceSwitch = 2,  // the last data wavelet of an output DSD with .advance_switch: the sender's router
                       // advances this colour's switch once it has forwarded the wavelet
};

struct Wavelet {
  uint32_t payload = 0;
  Colour colour = 0;
  uint8_t flags = 0;

  static Wavelet f32(Colour c, float v) { return {std::bit_cast<uint32_t>(v), c, 0}; }
  static Wavelet f16_pair(Colour c, _Float16 lo, _Float16 hi) {
    return {uint32_t(std::bit_cast<uint16_t>(lo)) | (uint32_t(std::bit_cast<uint16_t>(hi)) << 16), c, 0};
  }
  static Wavelet sparse(Colour c, _Float16 value, uint16_t index) {
    return {uint32_t(std::bit_cast<uint16_t>(value)) | (uint32_t(index) << 16), c, 0};
  }
  bool control() const { return flags & kControl; }

  float as_f32() const { return std::bit_cast<float>(payload); }
  _Float16 lo_f16() const { return std::bit_cast<_Float16>(uint16_t(payload & 0xffff)); }
  _Float16 hi_f16() const { return std::bit_cast<_Float16>(uint16_t(payload >> 16)); }
  // Sparse weight: value in the low half, column index in the high half.
  _Float16 sparse_value() const { return lo_f16(); }
  uint16_t sparse_index() const { return uint16_t(payload >> 16); }
};

// A wavelet in flight on a link, stamped with the cycle it reaches the far end.
struct Flit {
  Cycle arrival = 0;
  uint32_t payload = 0;
  Colour colour = 0;
  uint8_t flags = 0;
  // Colour and flags as one 16-bit value, read in one load (Router::InPort::hop_key).
  static constexpr uint16_t key_of(Colour c, uint8_t f) { return uint16_t(c | unsigned(f) << 8); }
  uint16_t key() const {
    uint16_t k;
    std::memcpy(&k, &colour, sizeof k);  // colour then flags, side by side (checked below)
    return k;
  }
  // A wavelet on its way: colour and flags written as one 16-bit store (the compiler wrote two).
  static Flit of(Cycle arrival, uint32_t payload, uint16_t key) {
    Flit f;
    f.arrival = arrival, f.payload = payload;
    std::memcpy(&f.colour, &key, sizeof key);
    return f;
  }
};
static_assert(offsetof(Flit, flags) == offsetof(Flit, colour) + 1 && std::endian::native == std::endian::little,
              "Flit::key() reads colour and flags as one little-endian word");

// A credit travelling back to a sender: one free slot for `colour`, usable from `visible`.
struct Credit {
  Cycle visible = 0;
  Colour colour = 0;
};

}  // namespace wse
