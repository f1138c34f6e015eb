#pragma once
// A training config's data: the Fashion-MNIST training and test sets its `data` block names,
// checked against its model before they are used. Every command that trains or scores (`wse
// run`, `--validate_only`, `wse baseline`, `wse trace` of a training step) takes its sets from
// here, so each set's images are checked to be the size the first layer takes: a test set of
// another size was read past the end of its buffer and scored as garbage (2026-11-29).
#include <cstdint>
#include <string>

#include "host/dataset.hpp"
#include "host/train_config.hpp"

namespace wse {

// Which set, and who asks for how many of its samples.
struct DataSetRequest {
  const char* prefix;   // "train" or "t10k"
  uint32_t samples;     // 0 = the whole set
  const char* field;    // the field that asked: "data.train_samples", "data.eval_samples", ...
};

inline DataSetRequest train_set(const TrainConfig& tc) { return {"train", tc.train_samples, "data.train_samples"}; }
inline DataSetRequest test_set(const TrainConfig& tc) { return {"t10k", tc.eval_samples, "data.eval_samples"}; }

// The set's headers read and checked (files found and consistent, enough samples, images of
// model.layers[0] pixels) without reading a pixel. `where` is "config FILE". Throws
// UsageError/ConfigError naming the file and the field.
IdxInfo inspect_data_set(const TrainConfig& tc, const std::string& where, const DataSetRequest& request);

// The same checks, then the samples read.
Dataset load_data_set(const TrainConfig& tc, const std::string& where, const DataSetRequest& request);

// The training set, whose whole batches make the steps: also checks that at least one batch of
// it is asked for.
IdxInfo inspect_train_set(const TrainConfig& tc, const std::string& where);
Dataset load_train_set(const TrainConfig& tc, const std::string& where);

}  // namespace wse
