#pragma once
// The directory a command writes its files into (`--out DIR`, `training.checkpoint_dir`), checked
// before any work so that a run never trains for an hour and then finds it cannot write. It keeps
// runs apart: a directory that is not empty is refused, unless the user passes --overwrite and
// the directory is one a previous wse run recorded (DIR/.wse-run lists what that run wrote, the
// files inside its folders one by one). Then a file of the new run replaces the previous run's of
// the same name by its rename, and only once the new run has finished do the previous run's other
// files go (a folder of that run only if nothing else is left in it): a run that fails at any
// point, a full disk while writing its report or a checkpoint included, leaves every file of the
// earlier output it had not yet replaced, and the record lists both runs' files for the next
// --overwrite.
#include <sys/types.h>

#include <exception>
#include <filesystem>
#include <string>
#include <utility>
#include <vector>

namespace wse {

// Makes `dir` and its missing parents, outermost first, and returns the folders it made; on a
// failure it takes them away again and throws OutputError "<what> <dir>: cannot create it".
std::vector<std::filesystem::path> make_missing_folders(const std::filesystem::path& dir, const std::string& what);
// Removes folders make_missing_folders made, innermost first, while they are empty; clears `made`.
void remove_made_folders(std::vector<std::filesystem::path>& made);
// Proves `dir` writable with a probe file, made and removed; OutputError "<what> <dir>: cannot
// write there: <reason>" if not.
void probe_writable(const std::filesystem::path& dir, const std::string& what);

// Whether `path` is `dir` or lies under it (both as they would resolve now).
bool path_inside(const std::filesystem::path& path, const std::filesystem::path& dir);

struct OutputDirOptions {
  std::string flag = "--out";  // how messages name the directory's origin
  bool overwrite = false;      // replace the previous wse run recorded in DIR
  bool continue_run = false;   // a resumed run continues the run recorded in DIR: keep its entries
  std::string command;         // the command line, recorded in DIR/.wse-run
  // What the run reads, each with what to call it ("the dump this run reads"): --overwrite is
  // refused when it would remove one of them (an entry the previous run recorded holds it).
  std::vector<std::pair<std::filesystem::path, std::string>> reads;
};

class OutputDir {
 public:
  static constexpr const char* kMarker = ".wse-run";

  // Creates DIR if missing and proves it writable; refuses a non-directory, an unwritable
  // directory, or a non-empty one the options do not allow. Throws OutputError (exit code 2).
  OutputDir(std::filesystem::path dir, OutputDirOptions options);
  // A directory this made and nothing was ever written into is removed again. With --overwrite,
  // a run that ends without an exception in flight has finished: the previous run's files it did
  // not replace go now. One that ends with an exception leaves them (and says so).
  ~OutputDir();
  OutputDir(const OutputDir&) = delete;
  OutputDir& operator=(const OutputDir&) = delete;

  const std::filesystem::path& path() const { return dir_; }
  // The path of a top-level file of this run, recorded in DIR/.wse-run. The first call claims the
  // directory: with --overwrite, the temporaries (".NAME.tmp-PID-N") a killed process left of the
  // previous run's entries go (a continued run removes such leftovers of its own entries); the
  // previous run's entries themselves stay until this run has finished (~OutputDir), but for one
  // of this name that is a folder, which no file's rename could replace: it goes now.
  std::filesystem::path entry(const std::string& name);
  // A top-level folder of this run, created (entry(name) for a folder: a previous run's file of
  // this name goes now).
  std::filesystem::path subdir(const std::string& name);
  // The path of file `name` inside this run's folder `folder` (made by subdir()), recorded as
  // "folder/name": --overwrite removes exactly the files a run recorded there, never a file the
  // user put beside them.
  std::filesystem::path entry_in(const std::string& folder, const std::string& name);
  // The path `name` will have, without claiming the directory yet: for a file streamed while the
  // run may still fail (a trace), whose entry(name) is taken only once the run has succeeded,
  // before the file is committed, so that a failed run leaves the earlier output untouched.
  std::filesystem::path pending(const std::string& name) const;

  // Entries DIR/.wse-run records (empty when there is no record).
  static std::vector<std::string> recorded(const std::filesystem::path& dir);

 private:
  std::filesystem::path take(const std::string& name, bool folder);
  void claim();
  bool recorded_now(const std::string& line) const;
  bool previous_has(const std::string& line) const;
  bool still_previous(const std::string& line) const;
  void remove_previous(const std::string& name);
  void finish_overwrite();
  void drop_unwritten();
  void write_record();
  void append_record(const std::string& line);

  // An exclusive flock(2) on DIR itself, held from the check of its contents to the end of the
  // run (the process's end releases it, however it ends): a second wse run into DIR is refused
  // while this one runs. (Until the forty-sixth round a run claimed DIR only at its first file:
  // two runs started into one new folder, `out/` by default, both found it empty and wrote over
  // or beside each other, exit 0.) Declared first, so released last.
  struct DirLock {
    int fd = -1;
    DirLock() = default;
    DirLock(const DirLock&) = delete;
    DirLock& operator=(const DirLock&) = delete;
    ~DirLock();
  } lock_;
  std::filesystem::path dir_;
  OutputDirOptions opt_;
  std::vector<std::filesystem::path> created_;  // directories this made, outermost first
  std::vector<std::string> entries_;            // recorded ("name" or "folder/name"), in the order first written
  std::vector<std::string> made_here_;          // the run's folders subdir() created (not found there)
  // With --overwrite, what the previous run recorded and is still there: recorded beside this
  // run's entries until this run finishes and they go.
  std::vector<std::string> previous_;
  // The previous run's files as they were when this run claimed the directory: one this run has
  // recorded but whose rename never came is still the previous run's, and a failed run says so.
  struct FileId {
    dev_t dev;
    ino_t ino;
  };
  std::vector<std::pair<std::string, FileId>> previous_files_;
  int exceptions_ = std::uncaught_exceptions();  // in flight when this was made: more at its end is a failure
  bool claimed_ = false;
};

}  // namespace wse
