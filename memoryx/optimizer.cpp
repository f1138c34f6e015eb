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
  // The settings in locals: read through `cfg` they had to be read again after every store to
  // the tensors (a float store may alias them), which kept the loops from being vectorized.
  // Each element goes through the same operations in the same order either way.
  const float lr = cfg.lr, wd = cfg.weight_decay;
  float* w = param.data.data();
  const float* gr = grad.data();
  // Runs `update(i)` on every element, or on those the mask keeps (a loop of its own: the
  // unmasked one is vectorized).
  auto each = [&](auto&& update) {
    if (!mask)
      for (size_t i = 0; i < n; ++i) update(i);
    else
      for (size_t i = 0; i < n; ++i)
        if ((*mask)[i]) update(i);
  };
  if (cfg.kind == "sgd") {
    // PyTorch SGD: v = momentum * v + g (+ wd * w); w -= lr * v.
    float* v = state.at(0)->data.data();
    const float momentum = cfg.momentum;
    each([&](size_t i) {
      const float g = gr[i] + wd * w[i];
      v[i] = momentum * v[i] + g;
      w[i] -= lr * v[i];
    });
  } else if (cfg.kind == "adam") {
    // PyTorch Adam with bias correction.
    float* m = state.at(0)->data.data();
    float* v = state.at(1)->data.data();
    const float beta1 = cfg.beta1, beta2 = cfg.beta2, one_beta1 = 1 - beta1, one_beta2 = 1 - beta2;
    const double eps = cfg.eps;
    const double c1 = 1.0 - std::pow(double(beta1), double(step));
    const double c2 = 1.0 - std::pow(double(beta2), double(step));
    each([&](size_t i) {
      const float g = gr[i] + wd * w[i];
      m[i] = beta1 * m[i] + one_beta1 * g;
      v[i] = beta2 * v[i] + one_beta2 * g * g;
      const double mhat = m[i] / c1, vhat = v[i] / c2;
      w[i] -= float(double(lr) * mhat / (std::sqrt(vhat) + eps));
    });
  } else {
    throw std::invalid_argument("unknown optimizer '" + cfg.kind + "'");
  }
}

}  // namespace wse
