#pragma once
// A full disk for the length of a scope: a file-size limit (RLIMIT_FSIZE) of `bytes`, with
// SIGXFSZ ignored as wse ignores it, so a write past the limit fails with EFBIG ("File too
// large") instead of ending the process. The limit and the signal's action are put back after.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>

#include <cstdint>

namespace wse::test {

class FileSizeLimit {
 public:
  explicit FileSizeLimit(uint64_t bytes) {
    getrlimit(RLIMIT_FSIZE, &old_);
    rlimit tight = old_;
    tight.rlim_cur = bytes;
    old_handler_ = signal(SIGXFSZ, SIG_IGN);
    set_ = setrlimit(RLIMIT_FSIZE, &tight) == 0;
    EXPECT_TRUE(set_) << "could not set a file-size limit";
  }
  ~FileSizeLimit() {
    if (set_) setrlimit(RLIMIT_FSIZE, &old_);
    signal(SIGXFSZ, old_handler_);
  }
  FileSizeLimit(const FileSizeLimit&) = delete;
  FileSizeLimit& operator=(const FileSizeLimit&) = delete;

 private:
  rlimit old_{};
  sighandler_t old_handler_ = SIG_DFL;
  bool set_ = false;
};

}  // namespace wse::test
