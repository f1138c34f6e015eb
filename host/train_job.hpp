#pragma once
// `wse run` for kernel fc_train: train on Fashion-MNIST, print loss as it goes and test accuracy
// at the end, write checkpoints and DIR/report.json.
#include <filesystem>
#include <nlohmann/json.hpp>
#include <string>

#include "host/config.hpp"

namespace wse {

struct TrainModes {
  bool validate_only = false;  // check the config and that every layer maps; run nothing
  bool compile_only = false;   // write DIR/mesh_program.json; train nothing
  bool tty = false;            // progress line
  bool overwrite = false;      // replace the previous wse run in DIR (io/output_dir.hpp)
  std::filesystem::path resume;  // --resume: finish the run this checkpoint came from
  std::string command;         // the command line, recorded in DIR/.wse-run
  nlohmann::json threads_choice;  // host/thread_choice.hpp's ThreadChoice, for the report
  // The thread count was left to the engine: each wafer picks, pass by pass, between its workers
  // and one by what they measured (wafer/worker_tuner.hpp).
  bool adaptive_workers = false;
};

// Returns the exit code: 0, or 128 + the signal when SIGINT / SIGTERM stopped training (after
// the step in progress, with a checkpoint of it and a line saying how to resume).
int run_training(const RunConfig& cfg, unsigned threads, const std::filesystem::path& out_dir, TrainModes modes);

}  // namespace wse
