#pragma once
// Reading a whole input file into memory, bounded: it must be a regular file (not a directory, a
// pipe or /dev/zero) no larger than `max_bytes` and than the memory in force, so a wrong path is
// a clear error rather than an endless read or a bad_alloc.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

namespace wse {

// Throws UsageError "<where>: ..." unless `path` is an existing regular file (a FIFO in place of
// an input blocked its reader for ever; a directory read as a damaged file).
void check_regular_input(const std::filesystem::path& path, const std::string& where);

// Throws UsageError "<what> <path>: ..." naming the reason.
std::vector<uint8_t> read_input_file(const std::filesystem::path& path, const std::string& what, uint64_t max_bytes);

}  // namespace wse
