#include "host/training_data.hpp"

#include "core/errors.hpp"
#include "host/batch_order.hpp"

namespace wse {

IdxInfo inspect_data_set(const TrainConfig& tc, const std::string& where, const DataSetRequest& request) {
  const IdxInfo info = inspect_idx_dataset(tc.data_dir, request.prefix);
  check_sample_count(info, request.samples, where + ": field '" + request.field + "'");
  if (info.features() != tc.layers.front())
    throw ConfigError(where + ": field 'model.layers': the first layer takes " + std::to_string(tc.layers.front()) + " inputs, but " +
                      info.images.string() + " holds images of " + std::to_string(info.rows) + " x " + std::to_string(info.cols) +
                      " = " + std::to_string(info.features()) + " pixels");
  return info;
}

Dataset load_data_set(const TrainConfig& tc, const std::string& where, const DataSetRequest& request) {
  const IdxInfo info = inspect_data_set(tc, where, request);
  return load_idx_files(info, request.samples, where + ": field '" + request.field + "'");
}

IdxInfo inspect_train_set(const TrainConfig& tc, const std::string& where) {
  const IdxInfo info = inspect_data_set(tc, where, train_set(tc));
  const uint32_t count = tc.train_samples ? tc.train_samples : info.count;
  if (BatchOrder(count, tc.batch_size, tc.shuffle, tc.memoryx.seed).steps_per_epoch() == 0)
    throw ConfigError(where + ": field 'data.train_samples': " +
                      (tc.train_samples ? std::to_string(count) + " samples are"
                                        : "0 takes the whole training set, and " + info.images.string() + " holds " + std::to_string(count) + ", which is") +
                      " fewer than one batch (training.batch_size " + std::to_string(tc.batch_size) + ")");
  return info;
}

Dataset load_train_set(const TrainConfig& tc, const std::string& where) {
  const IdxInfo info = inspect_train_set(tc, where);
  return load_idx_files(info, tc.train_samples, where + ": field 'data.train_samples'");
}

}  // namespace wse
