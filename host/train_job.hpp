#pragma once
// `wse run` for kernel fc_train: train on Fashion-MNIST, print loss as it goes and test accuracy
// at the end, write checkpoints and DIR/report.json.
#include <filesystem>

#include "host/config.hpp"

namespace wse {

struct TrainModes {
  bool validate_only = false;  // check the config and that every layer maps; run nothing
  bool compile_only = false;   // write DIR/mesh_program.json; train nothing
  bool tty = false;            // progress line
};

int run_training(const RunConfig& cfg, unsigned threads, const std::filesystem::path& out_dir, TrainModes modes);

}  // namespace wse
