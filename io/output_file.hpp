#pragma once
// Writing a file so that no reader ever sees half of it: the bytes go to a temporary file beside
// the final name (".NAME.tmp-PID-N"), which is flushed, synced and renamed onto NAME only when it
// is complete. A crash, a full disk or a file-size limit leaves at most that temporary, never a
// truncated NAME, and never touches an earlier NAME; SIGINT, SIGTERM and SIGHUP remove it too
// (io/live_temporaries.hpp). Every failure is an OutputError naming the
// file and the operating system's reason.
#include <cstdio>
#include <filesystem>
#include <string>
#include <string_view>

#include "core/errors.hpp"

namespace wse {

// A file or directory the user named cannot be written (a user's path, so exit code 2).
struct OutputError : UsageError {
  using UsageError::UsageError;
};

// Throws OutputError "<what> <path>: cannot <doing>: <strerror(err)>".
[[noreturn]] void throw_output_error(const std::string& what, const std::filesystem::path& path, const std::string& doing, int err);

// Throws OutputError unless `path` is free or a regular file. The rename an OutputFile ends with
// replaces whatever is at its path: a device, a pipe or a folder there is the user's, never ours
// to replace (`--output /dev/null` made /dev/null a regular file). OutputFile checks it when
// made; a command may check it before its work.
void check_replaceable(const std::filesystem::path& path, const std::string& what);

class OutputFile {
 public:
  // Creates the temporary beside `path`; `what` names the file in messages ("report",
  // "checkpoint", ...). `sync` = fsync before the rename, so the file survives a power cut too;
  // cheap to redraw files (animation frames) skip it.
  OutputFile(std::filesystem::path path, std::string what, bool sync = true);
  ~OutputFile();  // never committed: the temporary is removed
  OutputFile(const OutputFile&) = delete;
  OutputFile& operator=(const OutputFile&) = delete;

  void write(const void* data, size_t bytes);
  void write(std::string_view text) { write(text.data(), text.size()); }
  // A stdio stream on the temporary, for libraries that write through FILE* (libpng). Once it is
  // taken, write() goes through it too.
  std::FILE* stdio();
  // Reports a failure the FILE* user noticed (errno at the time, 0 if none is known).
  [[noreturn]] void fail(int err);
  // Flushes, syncs, closes and renames the temporary onto the final path.
  void commit();
  const std::filesystem::path& path() const { return path_; }

 private:
  std::filesystem::path path_, tmp_;
  std::string what_;
  bool sync_ = true;
  int fd_ = -1;
  std::FILE* file_ = nullptr;
  bool committed_ = false;
  int live_slot_ = -1;  // io/live_temporaries: a SIGINT or SIGTERM removes the temporary too
};

// The whole file at once, atomically.
void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, const std::string& what);

}  // namespace wse
