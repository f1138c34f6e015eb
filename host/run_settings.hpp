#pragma once
// The settings that decide a training run's numbers beyond its weights: the data order (shuffle,
// weights.seed), the optimizer, the precision and loss scale, the wafers the batch is split over
// and each wafer's mesh (which set the order gradients and partial sums are added in), the weights' wire encoding and the sparsity.
// Every checkpoint records them, so that `--resume`, which finishes the run a checkpoint came
// from, refuses a config that would train another run (a changed lr, say, gave exit 0 and other
// weights). What does not change the numbers (where outputs go, logging, checkpoints, threads,
// training.detail, the machine's timing) is left out; the data is recorded by content, not by its
// folder's path; and `training.resume_from` (a new run from
// a checkpoint's weights) may change any of them.
#include <map>
#include <string>
#include <vector>

#include "fabric/geometry.hpp"
#include "host/dataset.hpp"
#include "host/train_config.hpp"

namespace wse {

// Field name (as the config writes it) -> value, as text that reads back exactly.
using RunSettings = std::map<std::string, std::string>;

// `mesh`: each wafer's, whose rows and columns set the order partial sums are added in.
RunSettings run_settings(const TrainConfig& tc, MeshShape mesh);
// The data trained and scored on, by content (host/dataset_digest.hpp): "data.train_set" and
// "data.test_set". Checked once the data is loaded; the config's own fields are checked first.
RunSettings data_settings(const Dataset& train, const Dataset& test);
// Both: what a checkpoint records.
RunSettings run_settings(const TrainConfig& tc, MeshShape mesh, const Dataset& train, const Dataset& test);
// The checkpoint metadata's text for them (a JSON object), and back (a UsageError naming `where`
// when it is not one).
std::string run_settings_text(const RunSettings& s);
RunSettings parse_run_settings(const std::string& text, const std::string& where);
// One line per field the two disagree on ("field 'optimizer.lr': 0.5, but the run had 0.1");
// fields `recorded` does not hold (a checkpoint of an older version) are not compared.
std::vector<std::string> run_settings_changes(const RunSettings& recorded, const RunSettings& now);

}  // namespace wse
