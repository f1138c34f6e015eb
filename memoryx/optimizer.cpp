#include "memoryx/optimizer.hpp"

#include <cmath>
#include <stdexcept>

namespace wse {

std::vector<std::string> optimizer_state_names(const OptimizerConfig& cfg) {
  if (cfg.kind == "sgd") return {"momentum"};
  if (cfg.kind == "adam") return {"exp_avg", "exp_avg_sq"};
  throw std::invalid_argument("unknown optimizer '" + cfg.kind + "' (known: sgd, adam)");
}

void optimizer_step(const OptimizerConfig& cfg, uint64_t step, Tensor& param, const std::vector<float>& grad,
                    std::vector<Tensor*> state, const std::vector<uint8_t>* mask) {
  if (grad.size() != param.size()) throw std::logic_error("gradient size does not match " + param.name);
  const size_t n = param.size();
  if (cfg.kind == "sgd") {
    // PyTorch SGD: v = momentum * v + g (+ wd * w); w -= lr * v.
    std::vector<float>& v = state.at(0)->data;
    for (size_t i = 0; i < n; ++i) {
      if (mask && !(*mask)[i]) continue;
      float g = grad[i] + cfg.weight_decay * param.data[i];
      v[i] = cfg.momentum * v[i] + g;
      param.data[i] -= cfg.lr * v[i];
    }
  } else if (cfg.kind == "adam") {
    // PyTorch Adam with bias correction.
    std::vector<float>& m = state.at(0)->data;
    std::vector<float>& v = state.at(1)->data;
    const double c1 = 1.0 - std::pow(double(cfg.beta1), double(step));
    const double c2 = 1.0 - std::pow(double(cfg.beta2), double(step));
    for (size_t i = 0; i < n; ++i) {
      if (mask && !(*mask)[i]) continue;
      float g = grad[i] + cfg.weight_decay * param.data[i];
      m[i] = cfg.beta1 * m[i] + (1 - cfg.beta1) * g;
      v[i] = cfg.beta2 * v[i] + (1 - cfg.beta2) * g * g;
      double mhat = m[i] / c1, vhat = v[i] / c2;
      param.data[i] -= float(cfg.lr * mhat / (std::sqrt(vhat) + cfg.eps));
    }
  } else {
    throw std::invalid_argument("unknown optimizer '" + cfg.kind + "'");
  }
}

}  // namespace wse
