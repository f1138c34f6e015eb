#include "io/output_dir.hpp"

#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <fstream>
#include <system_error>

#include "core/shown.hpp"
#include "io/output_file.hpp"

namespace wse {

namespace fs = std::filesystem;

namespace {

// A recorded entry is a plain name inside DIR: never a path that could reach outside it.
bool plain_name(const std::string& n) {
  return !n.empty() && n != "." && n != ".." && n != OutputDir::kMarker && n.find('/') == std::string::npos &&
         n.find('\0') == std::string::npos;
}

// A line of DIR/.wse-run: a plain name, or "folder/name" for a file inside one of the run's folders.
bool record_line(const std::string& n) {
  const size_t slash = n.find('/');
  if (slash == std::string::npos) return plain_name(n);
  return plain_name(n.substr(0, slash)) && plain_name(n.substr(slash + 1));
}

std::string list(const std::vector<std::string>& names, size_t max = 4) {
  std::string s;
  for (size_t i = 0; i < names.size() && i < max; ++i) s += (i ? ", " : "") + names[i];
  if (names.size() > max) s += ", ... (" + std::to_string(names.size()) + " in all)";
  return s;
}

std::vector<std::string> contents(const fs::path& dir, const std::string& what) {
  std::vector<std::string> names;
  std::error_code ec;
  for (fs::directory_iterator it(dir, ec), end; !ec && it != end; it.increment(ec)) {
    std::error_code kind;  // a link loop in the folder is an entry like any other, not a folder
    names.push_back(it->path().filename().string() + (it->is_directory(kind) ? "/" : ""));
  }
  if (ec) throw_output_error(what, dir, "list it", ec.value());
  std::sort(names.begin(), names.end());
  return names;
}

// ".NAME.tmp-PID-N", the temporary an OutputFile writes NAME through: its NAME and PID, or no PID
// (0) for any other file name.
std::pair<std::string, pid_t> temporary_of(const std::string& file) {
  const size_t tmp = file.rfind(".tmp-");
  if (file.size() < 2 || file[0] != '.' || tmp == std::string::npos || tmp < 2) return {"", 0};
  const std::string rest = file.substr(tmp + 5);
  const size_t dash = rest.find('-');
  if (dash == 0 || dash == std::string::npos || dash > 9 || rest.find_first_not_of("0123456789-") != std::string::npos)
    return {"", 0};
  return {file.substr(1, tmp - 1), pid_t(std::stol(rest.substr(0, dash)))};
}

bool process_running(pid_t pid) { return !(::kill(pid, 0) != 0 && errno == ESRCH); }

// The temporary of a NAME in `names` left by a process that is no longer running (killed with
// SIGKILL, or a power cut): a run writing it now keeps its own.
bool stale_temporary(const std::string& file, const std::vector<std::string>& names) {
  const auto [name, pid] = temporary_of(file);
  if (pid == 0 || std::find(names.begin(), names.end(), name) == names.end()) return false;
  return !process_running(pid);
}

// A temporary a running process is writing now: this run's own (a trace streams into one before
// the folder is claimed), or another's; neither is something a previous run left.
bool live_temporary(const std::string& file) {
  const pid_t pid = temporary_of(file).second;
  return pid != 0 && process_running(pid);
}

// Removes the stale temporaries of `names` in `dir` (a run killed while writing them left them).
void remove_stale_temporaries(const fs::path& dir, const std::vector<std::string>& names, const std::string& what) {
  for (const std::string& f : contents(dir, what))
    if (stale_temporary(f, names)) {
      std::error_code ec;
      fs::remove(dir / f, ec);
    }
}

// The same for record lines: those of DIR itself, and those of each recorded folder in it.
void remove_stale_temporaries_of(const fs::path& dir, const std::vector<std::string>& lines, const std::string& what) {
  std::vector<std::string> top;
  std::vector<std::pair<std::string, std::vector<std::string>>> folders;
  for (const std::string& l : lines) {
    const size_t slash = l.find('/');
    if (slash == std::string::npos) {
      top.push_back(l);
      continue;
    }
    const std::string folder = l.substr(0, slash);
    auto it = std::find_if(folders.begin(), folders.end(), [&](const auto& f) { return f.first == folder; });
    if (it == folders.end()) it = folders.insert(folders.end(), {folder, {}});
    it->second.push_back(l.substr(slash + 1));
  }
  remove_stale_temporaries(dir, top, what);
  for (const auto& [folder, names] : folders)
    if (fs::is_directory(fs::symlink_status(dir / folder))) remove_stale_temporaries(dir / folder, names, what);
}

}  // namespace

std::vector<fs::path> make_missing_folders(const fs::path& dir, const std::string& what) {
  std::error_code ec;
  std::vector<fs::path> missing, made;
  for (fs::path p = dir; !p.empty() && !fs::exists(p, ec); p = p.parent_path()) {
    missing.insert(missing.begin(), p);
    if (p == p.parent_path()) break;
  }
  for (const fs::path& p : missing) {
    const bool created = fs::create_directory(p, ec);
    if (!created && ec) {
      const int err = ec.value();
      remove_made_folders(made);
      throw_output_error(what, dir, p == dir ? "create it" : "create it (at " + p.string() + ")", err);
    }
    // Only a folder this call created is its to take away: one another process made in the
    // meantime (another run into the same new folder) is not.
    if (created) made.push_back(p);
  }
  return made;
}

void remove_made_folders(std::vector<fs::path>& made) {
  std::error_code ec;
  for (auto it = made.rbegin(); it != made.rend(); ++it)
    if (!fs::remove(*it, ec)) break;  // not empty (or gone): leave it and its parents
  made.clear();
}

void probe_writable(const fs::path& dir, const std::string& what) {
  const fs::path probe = dir / (".wse-probe-" + std::to_string(getpid()));
  const int fd = ::open(probe.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
  if (fd < 0) throw_output_error(what, dir, "write there", errno);
  ::close(fd);
  ::unlink(probe.c_str());
}

bool path_inside(const fs::path& path, const fs::path& dir) {
  std::error_code ec;
  const fs::path rel = fs::weakly_canonical(fs::absolute(path), ec).lexically_relative(fs::weakly_canonical(fs::absolute(dir), ec));
  return !rel.empty() && *rel.begin() != "..";
}

std::vector<std::string> OutputDir::recorded(const fs::path& dir) {
  std::vector<std::string> out;
  const fs::path path = dir / kMarker;
  // A pipe or a device there would block the read, or never end it: only a regular file is a
  // record (a FIFO hung `--overwrite` until the forty-sixth round).
  std::error_code ec;
  const fs::file_status st = fs::symlink_status(path, ec);
  if (!fs::exists(st)) return out;
  if (!fs::is_regular_file(st))
    throw OutputError("output record " + shown(path.string()) + ": not a regular file; it is not a record a wse run wrote. Remove it, or "
                      "choose a new directory");
  std::ifstream in(path);
  size_t n = 0;
  for (std::string line; std::getline(in, line);) {
    ++n;
    if (line.empty() || line[0] == '#') continue;
    // A line no wse run writes (a path reaching outside DIR, a name too long for the file system,
    // control bytes): the record is damaged, and --overwrite will not guess what it meant to
    // list. (It was skipped, or reached the file system as a bare "File name too long".)
    const size_t slash = std::min(line.find('/'), line.size());
    bool ok = record_line(line) && slash <= 255 && line.size() - slash <= 256;  // each name at most 255 bytes (NAME_MAX)
    for (unsigned char c : line) ok = ok && c >= 0x20 && c != 0x7f;
    if (!ok)
      throw OutputError("output record " + shown(path.string()) + ", line " + std::to_string(n) + ": '" + shown(line.substr(0, 80)) +
                        (line.size() > 80 ? "...'" : "'") + " is not an entry a wse run writes (a name in the directory, or folder/name): "
                        "the record is damaged. Mend or remove that line, or choose a new directory");
    out.push_back(line);
  }
  return out;
}

OutputDir::DirLock::~DirLock() {
  if (fd >= 0) ::close(fd);
}

OutputDir::OutputDir(fs::path dir, OutputDirOptions options) : dir_(std::move(dir)), opt_(std::move(options)) {
  const std::string what = opt_.flag;
  if (dir_.empty()) throw OutputError(what + ": an empty path is not a directory");
  std::error_code ec;
  const fs::file_status st = fs::status(dir_, ec);
  if (ec && ec.value() != ENOENT && ec.value() != ENOTDIR)  // a link loop: not a link to nothing
    throw OutputError(what + " " + dir_.string() + ": cannot look it up: " + ec.message() + "; name a directory for the output");
  if (fs::exists(st) && !fs::is_directory(st))
    throw OutputError(what + " " + dir_.string() + ": exists and is not a directory; name a directory for the output");
  if (!fs::exists(st) && fs::is_symlink(fs::symlink_status(dir_, ec)))
    throw OutputError(what + " " + dir_.string() + ": a symbolic link to " + fs::read_symlink(dir_, ec).string() +
                      ", which does not exist; create that directory, or name another");
  created_ = make_missing_folders(dir_, what);  // taken away again if nothing is written
  try {
    probe_writable(dir_, what);  // now, not after the run
    // DIR is this run's from here to its end (DirLock). A file system without flock(2) (some
    // network ones) gives no such guard: the run goes on without it.
    lock_.fd = ::open(dir_.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (lock_.fd >= 0 && ::flock(lock_.fd, LOCK_EX | LOCK_NB) != 0) {
      const int err = errno;
      if (err == EWOULDBLOCK) {
        created_.clear();  // the folder is that run's now, even if this one made it
        throw OutputError(what + " " + dir_.string() + " is in use by another wse run, which holds it until it ends: a run never "
                          "writes beside another run's files. Choose a new directory, or wait for that run to end");
      }
      ::close(lock_.fd), lock_.fd = -1;
    }
  } catch (const OutputError&) {
    remove_made_folders(created_);
    throw;
  }

  std::vector<std::string> present = contents(dir_, what);
  // A record with nothing beside it (a run stopped before its first file) is no output to keep apart.
  present.erase(std::remove(present.begin(), present.end(), std::string(kMarker)), present.end());
  // A resumed run's record is read now, not at its first checkpoint: a damaged one stopped it
  // only after its training (a review, forty-sixth round).
  if (opt_.continue_run) (void)recorded(dir_);
  if (present.empty() || opt_.continue_run) return;
  // --overwrite is offered only where it would do something: a folder no wse run recorded it
  // refuses too (it was suggested there, then refused: a review, forty-fifth round).
  const bool recorded_run = fs::exists(dir_ / kMarker);
  if (!opt_.overwrite && recorded_run)
    throw OutputError(what + " " + dir_.string() + " is not empty (it holds " + list(present) +
                      "): a run never writes beside another run's files. Choose a new directory, or pass --overwrite "
                      "to replace the previous wse run there");
  if (!opt_.overwrite)
    throw OutputError(what + " " + dir_.string() + " is not empty (it holds " + list(present) + ") and no wse run wrote it (no " +
                      std::string(kMarker) + " in it): a run never writes beside other files. Choose a new directory, or empty it yourself");
  if (!recorded_run)
    throw OutputError(what + " " + dir_.string() + " holds files no wse run recorded (" + list(present) + "; no " +
                      std::string(kMarker) + " in it), and --overwrite deletes only what wse wrote. Empty it yourself, or "
                      "choose a new directory");
  // Only recorded files go (a recorded folder only when nothing else is left in it).
  for (const std::string& name : recorded(dir_))
    for (const auto& [input, called] : opt_.reads)
      if (!fs::is_directory(fs::symlink_status(dir_ / name)) && path_inside(input, dir_ / name))
        throw OutputError(opt_.flag + " " + dir_.string() + " with --overwrite would remove " + input.string() + ", " + called +
                          "; choose another " + opt_.flag);
}

OutputDir::~OutputDir() {
  if (!claimed_) {
    remove_made_folders(created_);
    return;
  }
  if (std::uncaught_exceptions() > exceptions_ && !opt_.continue_run) {
    try {
      drop_unwritten();
    } catch (const std::exception& e) {  // (a destructor: the run's own error is the one to report)
      std::fprintf(stderr, "wse: note: %s\n", e.what());
    }
    if (!claimed_) return;
  }
  if (previous_.empty()) return;
  if (std::uncaught_exceptions() > exceptions_) {
    // The run failed: whatever of the earlier output it had not replaced stays, recorded.
    std::vector<std::string> kept;
    for (const std::string& line : previous_)
      if ((!recorded_now(line) && fs::exists(fs::symlink_status(dir_ / line))) || (recorded_now(line) && still_previous(line)))
        kept.push_back(line);
    if (!kept.empty())
      std::fprintf(stderr, "wse: note: %s %s: this run stopped before it finished; what the previous run wrote there and this one "
                   "did not replace is kept (%s), and %s lists both runs' files for the next --overwrite\n",
                   opt_.flag.c_str(), dir_.string().c_str(), list(kept).c_str(), kMarker);
    return;
  }
  try {
    finish_overwrite();
  } catch (const std::exception& e) {  // (a destructor: the run's own files are written; say what is left)
    std::fprintf(stderr, "wse: note: %s\n", e.what());
  }
}

namespace {

// A file, a symlink, or an empty folder; gone already is fine, a folder with something in it stays.
void remove_entry(const fs::path& p, const std::string& flag) {
  std::error_code ec;
  fs::remove(p, ec);
  if (ec && ec != std::errc::directory_not_empty && ec.value() != EEXIST) throw_output_error(flag, p, "remove it (--overwrite)", ec.value());
}

}  // namespace

void OutputDir::claim() {
  if (claimed_) return;
  claimed_ = true;
  if (opt_.continue_run) {
    entries_ = recorded(dir_);
    remove_stale_temporaries_of(dir_, entries_, opt_.flag);
  } else if (opt_.overwrite) {
    // The previous run's files stay until this run has finished (~OutputDir); only the
    // temporaries a killed process left of them go now.
    previous_ = recorded(dir_);
    remove_stale_temporaries_of(dir_, previous_, opt_.flag);
    // Which file each previous entry is now: a rename of this run's puts another in its place, so
    // a failed run can name exactly what it did not replace.
    for (const std::string& line : previous_) {
      struct stat st{};
      if (::lstat((dir_ / line).c_str(), &st) == 0 && !S_ISDIR(st.st_mode)) previous_files_.emplace_back(line, FileId{st.st_dev, st.st_ino});
    }
  }
  try {
    write_record();
  } catch (...) {
    // Nothing of this run's is there (the record is written whole or not at all): the folders it
    // made go again, as when it fails before claiming.
    claimed_ = false;
    throw;
  }
}

// A failed run's entries that never came to be (a file whose write failed, the disk full or
// `ulimit -f`; a folder nothing was written into) leave the record, the empty folders go; a run
// that wrote nothing at all leaves no record, and the folders it made go too, so the same
// command can run there again. (A first checkpoint that could not be written left an empty
// checkpoints/ and a record naming the file, and the next run was refused: "not empty".)
void OutputDir::drop_unwritten() {
  std::vector<std::string> kept;
  for (const std::string& e : entries_) {
    const fs::path p = dir_ / e;
    const fs::file_status st = fs::symlink_status(p);
    // Only a folder this run made (not one it found there and wrote nothing into).
    if (fs::is_directory(st) && std::find(made_here_.begin(), made_here_.end(), e) != made_here_.end()) {
      std::error_code ec;
      if (fs::is_empty(p, ec) && !ec && fs::remove(p, ec)) continue;
    }
    if (fs::exists(st)) kept.push_back(e);
  }
  entries_ = std::move(kept);
  if (entries_.empty() && previous_.empty()) {
    std::error_code ec;
    fs::remove(dir_ / kMarker, ec);
    claimed_ = false;
    remove_made_folders(created_);
    return;
  }
  write_record();
}

bool OutputDir::still_previous(const std::string& line) const {
  for (const auto& [name, id] : previous_files_)
    if (name == line) {
      struct stat st{};
      return ::lstat((dir_ / line).c_str(), &st) == 0 && st.st_dev == id.dev && st.st_ino == id.ino;
    }
  return false;
}

bool OutputDir::recorded_now(const std::string& line) const {
  return std::find(entries_.begin(), entries_.end(), line) != entries_.end();
}

bool OutputDir::previous_has(const std::string& line) const {
  return std::find(previous_.begin(), previous_.end(), line) != previous_.end();
}

// The previous run's top-level entry `name` and, for a folder, the files it recorded in it.
void OutputDir::remove_previous(const std::string& name) {
  const std::string prefix = name + "/";
  for (const std::string& line : previous_)
    if (line.starts_with(prefix)) remove_entry(dir_ / line, opt_.flag);
  remove_entry(dir_ / name, opt_.flag);
  std::erase_if(previous_, [&](const std::string& line) { return line == name || line.starts_with(prefix); });
  write_record();
}

// The run has finished: the previous run's entries it did not write again go, the files first
// (those inside the run's folders too), then each folder if nothing else is in it; what neither
// run wrote is named and left.
void OutputDir::finish_overwrite() {
  std::vector<std::string> gone = previous_, left;
  std::erase_if(gone, [&](const std::string& line) { return recorded_now(line); });
  for (const std::string& line : gone)
    if (!fs::is_directory(fs::symlink_status(dir_ / line))) remove_entry(dir_ / line, opt_.flag);
  for (const std::string& line : previous_)
    if (line.find('/') == std::string::npos && fs::is_directory(fs::symlink_status(dir_ / line))) {
      if (!recorded_now(line)) remove_entry(dir_ / line, opt_.flag);
      if (fs::exists(fs::symlink_status(dir_ / line)))
        for (const std::string& f : contents(dir_ / line, opt_.flag))
          if (!recorded_now(line + "/" + f.substr(0, f.size() - (f.back() == '/')))) left.push_back(line + "/" + f);
    }
  for (const std::string& f : contents(dir_, opt_.flag)) {
    const std::string name = f.substr(0, f.size() - (f.back() == '/'));
    if (f != kMarker && !live_temporary(f) && !previous_has(name) && !recorded_now(name)) left.push_back(f);
  }
  previous_.clear();
  write_record();
  std::sort(left.begin(), left.end());
  if (!left.empty())
    // (Not "which its previous run did not write": a training.checkpoint_dir inside --out is the
    // run's, recorded in its own folder's record, not in this one's: a CLI audit, forty-sixth round.)
    std::fprintf(stderr, "wse: note: %s %s also holds %s, which its record (%s) does not list; left as is\n", opt_.flag.c_str(),
                 dir_.string().c_str(), list(left).c_str(), kMarker);
}

void OutputDir::write_record() {
  std::string text = "# wse: what the run in this directory wrote; `--overwrite` removes exactly these entries.\n";
  // The command as a comment line: a newline in one of its words (a quoted path) would end it,
  // and the rest would read as an entry --overwrite then deletes (a review, forty-fifth round).
  if (!opt_.command.empty()) text += "# " + shown(opt_.command) + "\n";
  for (const std::string& e : entries_) text += e + "\n";
  for (const std::string& e : previous_)  // the previous run's, until this run has finished
    if (!recorded_now(e)) text += e + "\n";
  write_file_atomic(dir_ / kMarker, text, "output record");
}

fs::path OutputDir::take(const std::string& name, bool folder) {
  if (!plain_name(name)) throw std::logic_error("OutputDir::entry: '" + name + "' is not a plain name");
  claim();
  // The previous run's entry of this name is replaced by this run's rename, unless it is of the
  // other kind: no rename puts a file in a folder's place, and a folder cannot be made over a file.
  if (previous_has(name) && fs::is_directory(fs::symlink_status(dir_ / name)) != folder) remove_previous(name);
  if (!recorded_now(name)) {
    entries_.push_back(name);
    write_record();
  }
  return dir_ / name;
}

fs::path OutputDir::entry(const std::string& name) { return take(name, false); }

fs::path OutputDir::subdir(const std::string& name) {
  const fs::path p = take(name, true);
  std::error_code ec;
  if (fs::create_directory(p, ec)) made_here_.push_back(name);
  if (ec) throw_output_error(opt_.flag, p, "create it", ec.value());
  if (!fs::is_directory(p)) throw OutputError(opt_.flag + " " + p.string() + ": exists and is not a directory");
  return p;
}

fs::path OutputDir::entry_in(const std::string& folder, const std::string& name) {
  if (!plain_name(name) || std::find(entries_.begin(), entries_.end(), folder) == entries_.end())
    throw std::logic_error("OutputDir::entry_in: '" + folder + "/" + name + "' is not a file in a folder of this run");
  const std::string line = folder + "/" + name;
  if (std::find(entries_.begin(), entries_.end(), line) == entries_.end()) {
    entries_.push_back(line);
    // Listed already, as the previous run's (the record written when this run claimed the folder
    // holds every previous entry): nothing to write. Rewriting the whole record here, for each
    // frame of a `viz --overwrite`, was 977 rewrites and fsyncs of a 27 KB record for 972 frames.
    if (!previous_has(line)) append_record(line);
  }
  return dir_ / folder / name;
}

fs::path OutputDir::pending(const std::string& name) const {
  if (!plain_name(name)) throw std::logic_error("OutputDir::pending: '" + name + "' is not a plain name");
  return dir_ / name;
}

// One line added in place (a folder may get thousands of files, the frames of a viz: rewriting
// the whole record for each would be quadratic). One write(2) with O_APPEND, but a full disk can
// take part of it: then the record is cut back to where it was, so it never ends in half a line.
void OutputDir::append_record(const std::string& line) {
  const fs::path p = dir_ / kMarker;
  const int fd = ::open(p.c_str(), O_WRONLY | O_APPEND | O_CLOEXEC);
  if (fd < 0) throw_output_error("output record", p, "open it", errno);
  struct stat before{};
  const bool sized = ::fstat(fd, &before) == 0;
  const std::string text = line + "\n";
  const ssize_t n = ::write(fd, text.data(), text.size());
  const int err = errno;
  if (n != ssize_t(text.size()) && n > 0 && sized && ::ftruncate(fd, before.st_size) != 0) {
    // (cutting back failed too: the next write of the whole record replaces it)
  }
  ::close(fd);
  if (n != ssize_t(text.size())) throw_output_error("output record", p, "write it", n < 0 ? err : ENOSPC);
}

}  // namespace wse
