#include "host/dataset_digest.hpp"

#include <algorithm>
#include <bit>
#include <cstdio>
#include <cstring>

#include "core/splitmix.hpp"

namespace wse {

namespace {

uint64_t mix(uint64_t x) { return splitmix64_finalize(x); }

}  // namespace

uint64_t dataset_digest(const Dataset& d) {
  // Four lanes of two pixels a word, folded at the end: a chain of one multiply per word would
  // take a quarter of a second over MNIST's 47 million pixels; four run side by side.
  uint64_t lane[4] = {mix(d.count), mix(uint64_t(d.features) << 32 | 1), mix(2), mix(3)};
  const size_t words = d.images.size() / 2;
  for (size_t i = 0; i < words; ++i) {
    uint64_t w;
    std::memcpy(&w, &d.images[2 * i], sizeof w);
    uint64_t& h = lane[i & 3];
    h = (h ^ w) * 0x9e3779b97f4a7c15ull;
    h ^= h >> 29;
  }
  uint64_t h = 0;
  for (uint64_t l : lane) h = mix(h ^ l);
  if (d.images.size() % 2) h = mix(h ^ std::bit_cast<uint32_t>(d.images.back()));
  for (size_t i = 0; i < d.labels.size(); i += 8) {
    uint64_t w = 0;
    std::memcpy(&w, &d.labels[i], std::min<size_t>(8, d.labels.size() - i));
    h = mix(h ^ w);
  }
  return h;
}

std::string dataset_identity(const Dataset& d) {
  if (d.count == 0) return "none";
  char text[96];
  std::snprintf(text, sizeof text, "%u samples of %u features, digest %016llx", d.count, d.features,
                (unsigned long long)dataset_digest(d));
  return text;
}

}  // namespace wse
