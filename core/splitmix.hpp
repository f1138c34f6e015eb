#pragma once
// SplitMix64: the counter-based hash behind every "random" value the emulator draws (test
// matrices, weight initialization, pruning). Keyed by (seed, stream, index), never by thread or
// call order, so values are the same at any thread count.
#include <cstdint>

namespace wse {

// The finalizer alone: every input bit reaches every output bit. Digests (host/dataset_digest)
// fold their words with it.
inline uint64_t splitmix64_finalize(uint64_t z) {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

inline uint64_t splitmix64(uint64_t z) { return splitmix64_finalize(z + 0x9e3779b97f4a7c15ull); }

}  // namespace wse
