#pragma once
// A dataset by its contents: a 64-bit digest of its sample count, feature count, every pixel (as
// the run reads it, scaled to [0, 1]) and every label. A checkpoint records its run's training
// and test sets so (host/run_settings.hpp): `--resume` of the run on other data, or on a test set
// of another size, finished "the run" with other numbers and exit 0. Not the folder's path: a
// dataset moved elsewhere still resumes. Not a cryptographic hash: it tells honest data apart.
#include <cstdint>
#include <string>

#include "host/dataset.hpp"

namespace wse {

uint64_t dataset_digest(const Dataset& d);
// "80 samples of 784 features, digest 0123456789abcdef" (or "none" for no samples).
std::string dataset_identity(const Dataset& d);

}  // namespace wse
