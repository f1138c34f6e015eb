#pragma once
// `wse finalize-checkpoint --input IN --output OUT`: a sparse run's checkpoint made dense. Every
// NaN sentinel (pruned weights and their optimizer states) becomes 0, so OUT is a standard
// checkpoint that holds no sparsity pattern any more.
#include <cstdint>
#include <filesystem>

#include "memoryx/safetensors.hpp"

namespace wse {

// Replaces every NaN by 0; returns how many it replaced.
uint64_t finalize_checkpoint(Checkpoint& ckpt);

int finalize_checkpoint_command(const std::filesystem::path& input, const std::filesystem::path& output);

}  // namespace wse
