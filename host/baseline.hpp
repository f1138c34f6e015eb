#pragma once
// The host baseline beside a wafer run: the same FC model trained on the host with Eigen in fp32,
// from the same initial weights (MemoryX's initialization of the same config, sparsity mask
// included), on the same batches in the same order, with the same optimizer code (MemoryX applies
// the gradient), then scored on the same test batches. What differs from the wafer run is only
// the arithmetic: plain fp32 matrix products in Eigen's order, no fp16, no loss scaling. So the
// report can put wafer and baseline accuracy side by side (`wse baseline CONFIG`).
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <vector>

#include "host/config.hpp"
#include "host/dataset.hpp"

namespace wse {

struct BaselineResult {
  std::vector<double> losses;  // per step, mean over the batch
  uint64_t steps = 0;
  uint32_t scored = 0, correct = 0;
  double test_loss = 0;        // mean over the scored samples
  double accuracy() const { return scored ? double(correct) / scored : 0.0; }
};

// The cache sizes the baseline's matrix products are blocked for, whatever the host's: Eigen
// reads them off the CPU otherwise, and its blocking decides the order of the sums.
constexpr std::ptrdiff_t kBaselineL1Bytes = 32 * 1024, kBaselineL2Bytes = 512 * 1024, kBaselineL3Bytes = 8 * 1024 * 1024;

// Trains `steps` steps of cfg's model on `train` (step s takes batch s mod steps-per-epoch, as
// `wse run` does) and scores every whole batch of `test`. `progress(step, loss)` after each step.
BaselineResult train_baseline(const RunConfig& cfg, const Dataset& train, const Dataset& test, uint64_t steps,
                              const std::function<void(uint64_t, double)>& progress = {});

// `wse baseline CONFIG --out DIR`: the whole run of the config's training block, printed as it
// goes and written to DIR/report.json. Returns the exit code.
int run_baseline(const RunConfig& cfg, const std::filesystem::path& out_dir, bool overwrite, const std::string& command);

}  // namespace wse
