#pragma once
// A named fp32 tensor as MemoryX stores it.
#include <cstdint>
#include <numeric>
#include <string>
#include <vector>

namespace wse {

struct Tensor {
  std::string name;
  std::vector<uint32_t> shape;
  std::vector<float> data;

  static Tensor zeros(std::string name, std::vector<uint32_t> shape) {
    size_t n = std::accumulate(shape.begin(), shape.end(), size_t(1), std::multiplies<>());
    return {std::move(name), std::move(shape), std::vector<float>(n, 0.0f)};
  }
  size_t size() const { return data.size(); }
};

}  // namespace wse
