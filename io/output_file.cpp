#include "io/output_file.hpp"

#include "io/live_temporaries.hpp"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cstring>

namespace wse {

namespace {

// Distinct temporaries for files written at once by several threads of one process.
std::atomic<uint64_t> g_serial{0};

}  // namespace

void throw_output_error(const std::string& what, const std::filesystem::path& path, const std::string& doing, int err) {
  throw OutputError(what + " " + path.string() + ": cannot " + doing + (err ? std::string(": ") + std::strerror(err) : std::string()));
}

void check_replaceable(const std::filesystem::path& path, const std::string& what) {
  struct stat st;
  if (::stat(path.c_str(), &st) == 0 && !S_ISREG(st.st_mode))
    throw OutputError(what + " " + path.string() + ": exists and is not a regular file (" +
                      (S_ISDIR(st.st_mode) ? "a directory" : "a device, pipe or socket") + "); name a new file or a file to replace");
}

OutputFile::OutputFile(std::filesystem::path path, std::string what, bool sync)
    : path_(std::move(path)), what_(std::move(what)), sync_(sync) {
  const std::string name = path_.filename().string();
  if (name.empty() || name == "." || name == "..") throw OutputError(what_ + " " + path_.string() + ": not a file name");
  check_replaceable(path_, what_);
  tmp_ = path_.parent_path() / ("." + name + ".tmp-" + std::to_string(getpid()) + "-" + std::to_string(g_serial++));
  // Registered before it exists, so a signal never finds it created and not yet registered (the
  // handler unlinking a name not created yet does nothing).
  live_slot_ = register_temporary(tmp_.c_str());
  fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
  if (fd_ < 0) {
    const int err = errno;
    release_temporary(live_slot_);
    throw_output_error(what_, path_, "create it", err);
  }
}

OutputFile::~OutputFile() {
  if (committed_) return;
  if (file_) std::fclose(file_);
  else if (fd_ >= 0) ::close(fd_);
  ::unlink(tmp_.c_str());
  release_temporary(live_slot_);
}

void OutputFile::write(const void* data, size_t bytes) {
  if (file_) {
    if (std::fwrite(data, 1, bytes, file_) != bytes) fail(errno);
    return;
  }
  const char* p = static_cast<const char*>(data);
  while (bytes) {
    const ssize_t n = ::write(fd_, p, bytes);
    if (n < 0) {
      if (errno == EINTR) continue;
      fail(errno);
    }
    p += n, bytes -= size_t(n);
  }
}

std::FILE* OutputFile::stdio() {
  if (!file_) {
    file_ = ::fdopen(fd_, "wb");
    if (!file_) fail(errno);
  }
  return file_;
}

void OutputFile::fail(int err) { throw_output_error(what_, path_, "write it", err); }

void OutputFile::commit() {
  if (committed_) return;
  int fd = fd_;
  if (file_) {
    if (std::fflush(file_) != 0 || std::ferror(file_)) fail(errno);
    fd = ::fileno(file_);
  }
  if (sync_ && ::fsync(fd) != 0) fail(errno);
  const int closed = file_ ? std::fclose(file_) : ::close(fd_);
  file_ = nullptr, fd_ = -1;
  if (closed != 0) fail(errno);
  // Released after the rename: a signal in between unlinks a name the rename took away (the
  // temporary's name is never used again), which does nothing.
  const int renamed = ::rename(tmp_.c_str(), path_.c_str());
  const int err = errno;
  if (renamed != 0) ::unlink(tmp_.c_str());
  release_temporary(live_slot_);
  committed_ = true;  // nothing left to clean up
  if (renamed != 0) throw_output_error(what_, path_, "rename it into place", err);
}

void write_file_atomic(const std::filesystem::path& path, std::string_view bytes, const std::string& what) {
  OutputFile f(path, what);
  f.write(bytes);
  f.commit();
}

}  // namespace wse
