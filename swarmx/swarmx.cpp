#include "swarmx/swarmx.hpp"

#include <cmath>
#include <stdexcept>

namespace wse {

SwarmX::SwarmX(const SwarmXConfig& cfg) : cfg_(cfg) {
  if (cfg.wafers < 1 || cfg.fanout < 2) throw std::invalid_argument("swarmx: need wafers >= 1 and fanout >= 2");
  levels_ = 1;
  for (uint64_t reach = cfg.fanout; reach < cfg.wafers; reach *= cfg.fanout) ++levels_;
}

uint64_t SwarmX::broadcast_cycles(uint64_t bytes) const {
  const uint64_t transfer = cfg_.bytes_per_cycle_per_link > 0 ? uint64_t(std::ceil(double(bytes) / cfg_.bytes_per_cycle_per_link)) : 0;
  return levels_ * cfg_.latency_per_level + transfer;
}

std::vector<float> SwarmX::reduce(const std::vector<std::vector<float>>& per_wafer) const {
  if (per_wafer.size() != cfg_.wafers) throw std::invalid_argument("swarmx reduce: one vector per wafer");
  std::vector<std::vector<float>> level = per_wafer;
  while (level.size() > 1) {
    std::vector<std::vector<float>> up;
    for (size_t g = 0; g < level.size(); g += cfg_.fanout) {
      std::vector<float> sum = level[g];
      for (size_t c = g + 1; c < std::min(level.size(), g + cfg_.fanout); ++c)
        for (size_t i = 0; i < sum.size(); ++i) sum[i] += level[c][i];
      up.push_back(std::move(sum));
    }
    level = std::move(up);
  }
  return level.front();
}

}  // namespace wse
