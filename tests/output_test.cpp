// io/: atomic output files, output directories that keep runs apart, the memory limit.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>

#include "cli_support.hpp"
#include "file_size_limit.hpp"
#include "io/live_temporaries.hpp"
#include "io/memory_limit.hpp"
#include "io/output_dir.hpp"
#include "io/output_file.hpp"
#include "address_space_limit.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

namespace fs = std::filesystem;

fs::path dir() { return test::scratch_dir("wse_output_test"); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Names in a directory, hidden ones included, sorted.
std::vector<std::string> names(const fs::path& d) {
  std::vector<std::string> v;
  for (const auto& e : fs::directory_iterator(d)) v.push_back(e.path().filename().string());
  std::sort(v.begin(), v.end());
  return v;
}

TEST(OutputFile, AppearsWholeOnCommitAndNeverHalf) {
  const fs::path d = test::fresh_dir(dir() / "atomic");
  fs::create_directories(d);
  const fs::path p = d / "report.json";
  test::write_file(p, "old");
  {
    OutputFile f(p, "report");
    f.write("new contents");
    EXPECT_EQ(slurp(p), "old");  // not yet: the bytes are in a temporary beside it
    EXPECT_EQ(names(d).size(), 2u);
    f.commit();
  }
  EXPECT_EQ(slurp(p), "new contents");
  {
    OutputFile f(p, "report");
    f.write("abandoned");
  }  // destroyed without commit: as if the process had failed mid-write
  EXPECT_EQ(slurp(p), "new contents");
  EXPECT_EQ(names(d), std::vector<std::string>{"report.json"});  // no temporary left behind
}

// A signal's default action runs no destructor: the temporaries of files being written stayed
// behind (a trace interrupted with Ctrl-C left a hidden .trace.pftrace.tmp-PID-N). The handler
// main() installs removes them and still ends the process by the signal.
TEST(OutputFile, ASignalThatEndsTheProcessTakesItsTemporariesWithIt) {
  const fs::path d = test::fresh_dir(dir() / "signal");
  fs::create_directories(d);
  test::write_file(d / "trace.pftrace", "earlier");
  for (int sig : {SIGINT, SIGTERM, SIGHUP}) {
    const pid_t child = fork();
    ASSERT_GE(child, 0);
    if (child == 0) {
      remove_on_fatal_signals();
      OutputFile a(d / "trace.pftrace", "trace"), b(d / "report.json", "report");
      a.write("half a trace");
      OutputFile done(d / "summary.txt", "summary");
      done.write("whole");
      done.commit();
      ::raise(sig);
      _exit(0);  // not reached: the signal ends the process
    }
    int status = 0;
    ASSERT_EQ(waitpid(child, &status, 0), child);
    EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == sig) << "signal " << sig << ", status " << status;
    EXPECT_EQ(names(d), (std::vector<std::string>{"summary.txt", "trace.pftrace"})) << "signal " << sig;
    EXPECT_EQ(slurp(d / "trace.pftrace"), "earlier");  // the earlier file untouched
    EXPECT_EQ(slurp(d / "summary.txt"), "whole");      // a committed file is not a temporary
    fs::remove(d / "summary.txt");
  }
  // A temporary whose path is 1,024 bytes or longer (a deep --out) was not registered, and stayed.
  fs::path deep = d;
  for (char c : {'a', 'b', 'c', 'd', 'e'}) deep /= std::string(240, c);
  fs::create_directories(deep);
  ASSERT_GT(deep.string().size(), 1200u);
  const pid_t child = fork();
  ASSERT_GE(child, 0);
  if (child == 0) {
    remove_on_fatal_signals();
    OutputFile a(deep / "trace.pftrace", "trace");
    a.write("half a trace");
    ::raise(SIGTERM);
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(child, &status, 0), child);
  EXPECT_TRUE(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM) << status;
  EXPECT_TRUE(names(deep).empty()) << names(deep).front();
  // Slots are given back: many more files than slots, one after another, all register.
  for (int i = 0; i < 200; ++i) {
    const int slot = register_temporary((d / "x").c_str());
    ASSERT_GE(slot, 0) << i;
    release_temporary(slot);
  }
}

TEST(OutputFile, AFailedWriteNamesThePathAndTheReasonAndLeavesTheOldFile) {
  const fs::path d = test::fresh_dir(dir() / "efbig");
  fs::create_directories(d);
  const fs::path p = d / "checkpoint.safetensors";
  test::write_file(p, "earlier");
  // A file-size limit of 64 KiB: the write past it fails with EFBIG (SIGXFSZ ignored, as wse does).
  {
    const test::FileSizeLimit limit(64 << 10);
    const std::string big(256 << 10, 'x');
    test::expect_error<OutputError>([&] { write_file_atomic(p, big, "checkpoint"); },
                                    {"checkpoint " + p.string(), "cannot write it", "File too large"});
  }
  EXPECT_EQ(slurp(p), "earlier");
  EXPECT_EQ(names(d), std::vector<std::string>{"checkpoint.safetensors"});
}

TEST(OutputFile, AMissingDirectoryIsAnOutputError) {
  test::expect_error<OutputError>([&] { write_file_atomic(dir() / "no" / "such" / "x.json", "{}", "report"); },
                                  {"report " + (dir() / "no" / "such" / "x.json").string(), "No such file or directory"});
}

TEST(OutputDir, ANewDirectoryIsCreatedAndRemovedAgainIfNothingIsWritten) {
  const fs::path d = test::fresh_dir(dir() / "made" / "deeper");
  fs::remove_all(dir() / "made");
  { OutputDir out(d, {}); EXPECT_TRUE(fs::is_directory(d)); }
  EXPECT_FALSE(fs::exists(dir() / "made"));  // both levels it made are gone again
  {
    OutputDir out(d, {"--out", false, false, "wse run x.yaml"});
    write_file_atomic(out.entry("report.json"), "{}", "report");
  }
  EXPECT_EQ(names(d), (std::vector<std::string>{".wse-run", "report.json"}));
  EXPECT_EQ(OutputDir::recorded(d), std::vector<std::string>{"report.json"});
  EXPECT_NE(slurp(d / ".wse-run").find("# wse run x.yaml"), std::string::npos);
}

// A folder no wse run recorded: --overwrite would refuse it too, so it is not offered (it was
// suggested, then refused: a review, forty-fifth round).
TEST(OutputDir, AFolderNoRunRecordedIsNotOfferedOverwrite) {
  const fs::path d = test::fresh_dir(dir() / "foreign");
  fs::create_directories(d);
  test::write_file(d / "notes.txt", "mine");
  test::expect_error<OutputError>([&] { OutputDir o(d, {}); },
                                  {"--out " + d.string() + " is not empty (it holds notes.txt) and no wse run wrote it (no .wse-run in it)",
                                   "Choose a new directory, or empty it yourself"});
  try {
    OutputDir o(d, {});
  } catch (const OutputError& e) {
    EXPECT_EQ(std::string(e.what()).find("--overwrite"), std::string::npos) << e.what();
  }
  test::expect_error<OutputError>([&] { OutputDir o(d, {"--out", true, false, ""}); }, {"holds files no wse run recorded"});
  EXPECT_EQ(slurp(d / "notes.txt"), "mine");
}

// The record's command line is a comment: a newline in a word of the command ended it, and the
// next line, a name, read as an entry the next --overwrite deleted (a review, forty-fifth round).
TEST(OutputDir, ANewlineInTheCommandStaysInItsCommentLine) {
  const fs::path d = test::fresh_dir(dir() / "newline");
  {
    OutputDir first(d, {"--out", false, false, "wse run 'a\nnotes.txt' --out x"});
    write_file_atomic(first.entry("report.json"), "first", "report");
  }
  EXPECT_EQ(OutputDir::recorded(d), (std::vector<std::string>{"report.json"}));
  EXPECT_NE(slurp(d / ".wse-run").find("# wse run 'a\\x0anotes.txt' --out x\n"), std::string::npos) << slurp(d / ".wse-run");
  test::write_file(d / "notes.txt", "mine");
  {
    OutputDir second(d, {"--out", true, false, "wse run"});
    write_file_atomic(second.entry("report.json"), "second", "report");
  }
  EXPECT_EQ(slurp(d / "notes.txt"), "mine");
}

TEST(OutputDir, ANonEmptyDirectoryIsRefusedUnlessOverwriteAndThenOnlyWhatWasRecordedGoes) {
  const fs::path d = test::fresh_dir(dir() / "runs");
  {
    OutputDir first(d, {});
    write_file_atomic(first.entry("report.json"), "first", "report");
    first.subdir("checkpoints");
    write_file_atomic(first.entry_in("checkpoints", "step_3.safetensors"), "c3", "checkpoint");
  }
  test::write_file(d / "notes.txt", "mine");  // the user's own file
  test::expect_error<OutputError>([&] { OutputDir second(d, {}); },
                                  {"--out " + d.string() + " is not empty", "checkpoints/", "report.json", "--overwrite"});
  EXPECT_EQ(slurp(d / "report.json"), "first");
  {
    OutputDir second(d, {"--out", true, false, ""});
    // Claimed only when the new run writes: until then the earlier output stands.
    EXPECT_TRUE(fs::exists(d / "checkpoints" / "step_3.safetensors"));
    write_file_atomic(second.entry("report.json"), "second", "report");
    // Until the new run has finished, what it has not replaced stands, and is recorded.
    EXPECT_TRUE(fs::exists(d / "checkpoints" / "step_3.safetensors"));
    EXPECT_EQ(OutputDir::recorded(d), (std::vector<std::string>{"report.json", "checkpoints", "checkpoints/step_3.safetensors"}));
  }
  EXPECT_FALSE(fs::exists(d / "checkpoints"));  // the previous run's, recorded, and nothing else in it: removed
  EXPECT_EQ(slurp(d / "report.json"), "second");
  EXPECT_EQ(slurp(d / "notes.txt"), "mine");  // not recorded by any run: left alone
  EXPECT_EQ(OutputDir::recorded(d), std::vector<std::string>{"report.json"});
}

// A run killed with SIGKILL (no handler runs) leaves ".NAME.tmp-PID-N" beside its entries; the
// next run that takes the directory over removes those of recorded entries whose process is gone,
// and nothing else.
TEST(OutputDir, OverwriteAndAContinuedRunRemoveTheTemporariesOfAKilledRun) {
  const pid_t gone = fork();
  if (gone == 0) _exit(0);
  ASSERT_GT(gone, 0);
  ASSERT_EQ(waitpid(gone, nullptr, 0), gone);
  const std::string dead = std::to_string(gone), alive = std::to_string(getpid());
  for (bool overwrite : {true, false}) {
    const fs::path d = test::fresh_dir(dir() / (overwrite ? "killed_overwrite" : "killed_continue"));
    {
      OutputDir first(d, {});
      write_file_atomic(first.entry("report.json"), "first", "report");
      first.entry("trace.pftrace");  // recorded, then killed while writing it
    }
    const std::vector<std::string> left = {".trace.pftrace.tmp-" + dead + "-0", ".report.json.tmp-" + dead + "-3"};
    const std::vector<std::string> kept = {".trace.pftrace.tmp-" + alive + "-0",  // a live process's
                                           ".notes.txt.tmp-" + dead + "-0",       // not an entry of the run
                                           ".trace.pftrace.tmp-" + dead + "-x"};  // not the pattern
    for (const auto& n : left) test::write_file(d / n, "partial");
    for (const auto& n : kept) test::write_file(d / n, "other");
    {
      OutputDir second(d, {"--out", overwrite, !overwrite, ""});
      write_file_atomic(second.entry("report.json"), "second", "report");
    }
    for (const auto& n : left) EXPECT_FALSE(fs::exists(d / n)) << n << (overwrite ? " (--overwrite)" : " (continued)");
    for (const auto& n : kept) EXPECT_TRUE(fs::exists(d / n)) << n << (overwrite ? " (--overwrite)" : " (continued)");
    EXPECT_EQ(slurp(d / "report.json"), "second");
  }
}

// A run's folder (checkpoints/, frames/) was recorded as one entry and removed whole by
// --overwrite, with whatever the user had put in it, even the config being read. Now each file a
// run writes there is recorded, exactly those go, and the folder only if nothing else is left.
TEST(OutputDir, OverwriteRemovesOnlyTheFilesARunRecordedInItsFoldersAndAFolderOnlyIfEmptied) {
  const fs::path d = test::fresh_dir(dir() / "folders");
  {
    OutputDir first(d, {});
    first.subdir("checkpoints");
    first.subdir("frames");
    for (const char* n : {"step_3.safetensors", "step_6.safetensors"}) write_file_atomic(first.entry_in("checkpoints", n), n, "checkpoint");
    write_file_atomic(first.entry_in("frames", "busy_0000.png"), "png", "frame");
    write_file_atomic(first.entry("report.json"), "first", "report");
  }
  EXPECT_EQ(OutputDir::recorded(d), (std::vector<std::string>{"checkpoints", "frames", "checkpoints/step_3.safetensors",
                                                              "checkpoints/step_6.safetensors", "frames/busy_0000.png", "report.json"}));
  test::write_file(d / "checkpoints" / "notes.txt", "mine");
  test::write_file(d / "checkpoints" / "my.yaml", "the config");
  {
    // What the new run reads is refused only if a recorded file holds it: my.yaml is not one.
    OutputDir second(d, {"--out", true, false, "", {{d / "checkpoints" / "my.yaml", "the config this run reads"}}});
    write_file_atomic(second.entry("report.json"), "second", "report");
  }
  EXPECT_EQ(names(d / "checkpoints"), (std::vector<std::string>{"my.yaml", "notes.txt"}));
  EXPECT_FALSE(fs::exists(d / "frames"));  // emptied: removed
  EXPECT_EQ(slurp(d / "checkpoints" / "notes.txt"), "mine");
  EXPECT_EQ(OutputDir::recorded(d), std::vector<std::string>{"report.json"});
  // A record naming a file a run wrote that this run reads: refused, nothing removed.
  {
    OutputDir third(d, {"--out", true, false, ""});
    third.subdir("checkpoints");
    write_file_atomic(third.entry_in("checkpoints", "step_9.safetensors"), "c9", "checkpoint");
  }
  test::expect_error<OutputError>(
      [&] { OutputDir fourth(d, {"--out", true, false, "", {{d / "checkpoints" / "step_9.safetensors", "the checkpoint this run reads"}}}); },
      {"would remove " + (d / "checkpoints" / "step_9.safetensors").string(), "the checkpoint this run reads"});
  EXPECT_TRUE(fs::exists(d / "checkpoints" / "step_9.safetensors"));
}

// Found by a wrong-inputs audit: --overwrite removed the previous run's files when the new run
// took its first entry, so a run that then failed to write (a full disk, `ulimit -f`) had lost
// the earlier report and checkpoints and written none of its own. Now a failed run leaves every
// earlier file it had not replaced, recorded beside its own for the next --overwrite.
TEST(OutputDir, AFailedOverwriteKeepsWhatItHadNotReplacedAndRecordsBothRuns) {
  const fs::path d = test::fresh_dir(dir() / "failed_overwrite");
  {
    OutputDir first(d, {});
    first.subdir("checkpoints");
    for (const char* n : {"step_1.safetensors", "step_2.safetensors"}) write_file_atomic(first.entry_in("checkpoints", n), n, "checkpoint");
    write_file_atomic(first.entry("report.json"), "first", "report");
  }
  testing::internal::CaptureStderr();
  try {
    OutputDir failed(d, {"--out", true, false, ""});
    failed.subdir("checkpoints");
    // A file the previous run had in a folder is listed already: the record is not rewritten for
    // it (it was, whole and fsynced, for each frame of a `viz --overwrite`: a review, forty-fourth
    // round). A rewrite is a rename onto the record: another inode.
    struct stat before{}, after{};
    ASSERT_EQ(::stat((d / ".wse-run").c_str(), &before), 0);
    write_file_atomic(failed.entry_in("checkpoints", "step_1.safetensors"), "new 1", "checkpoint");
    ASSERT_EQ(::stat((d / ".wse-run").c_str(), &after), 0);
    EXPECT_EQ(before.st_ino, after.st_ino);
    EXPECT_EQ(before.st_size, after.st_size);
    failed.entry("report.json");  // claimed, then its write fails
    throw OutputError("report: cannot write it: File too large");
  } catch (const OutputError&) {
  }
  // The note names what is still the previous run's: report.json too, which this run had
  // recorded but never renamed into place (it named only step_2 before).
  const std::string note = testing::internal::GetCapturedStderr();
  EXPECT_NE(note.find("is kept (checkpoints/step_2.safetensors, report.json)"), std::string::npos) << note;
  EXPECT_EQ(slurp(d / "checkpoints" / "step_1.safetensors"), "new 1");   // replaced
  EXPECT_EQ(slurp(d / "checkpoints" / "step_2.safetensors"), "step_2.safetensors");  // kept
  EXPECT_EQ(slurp(d / "report.json"), "first");  // kept: its replacement was never written
  std::vector<std::string> rec = OutputDir::recorded(d);
  std::sort(rec.begin(), rec.end());  // each once
  EXPECT_EQ(rec, (std::vector<std::string>{"checkpoints", "checkpoints/step_1.safetensors", "checkpoints/step_2.safetensors", "report.json"}));
  {
    OutputDir third(d, {"--out", true, false, ""});
    write_file_atomic(third.entry("report.json"), "third", "report");
  }
  EXPECT_EQ(names(d), (std::vector<std::string>{".wse-run", "report.json"}));  // both earlier runs' files gone
  EXPECT_EQ(OutputDir::recorded(d), std::vector<std::string>{"report.json"});
}

// A full disk (here a file-size limit of 0) at the record, a run's first write: the folders it
// made go again, as when nothing is written (they were left, empty, before).
TEST(OutputDir, FoldersMadeForARunWhoseRecordCannotBeWrittenGoAgain) {
  fs::remove_all(dir() / "record_fails");
  const fs::path d = dir() / "record_fails" / "deeper";
  {
    const test::FileSizeLimit limit(0);
    test::expect_error<OutputError>([&] {
      OutputDir out(d, {});
      out.entry("report.json");
    }, {"output record " + (d / ".wse-run").string(), "File too large"});
  }
  EXPECT_FALSE(fs::exists(dir() / "record_fails"));
}

// A record line cut short by a full disk is taken back: the record never ends in half a line
// (it ended "frames/stall_backpressu" on a full tmpfs before).
TEST(OutputDir, ARecordLineTheDiskCannotHoldWholeIsTakenBack) {
  const fs::path d = test::fresh_dir(dir() / "record_line");
  OutputDir out(d, {});
  out.subdir("frames");
  const std::string before = slurp(d / ".wse-run");
  {
    const test::FileSizeLimit limit(before.size() + 8);  // room for 8 bytes of a 40-byte line
    test::expect_error<OutputError>([&] { out.entry_in("frames", std::string(39, 'f')); },
                                    {"output record " + (d / ".wse-run").string(), "cannot write it"});
  }
  EXPECT_EQ(slurp(d / ".wse-run"), before);
}

// A name the previous run used for a folder and the new run for a file (or the other way round):
// no rename replaces one with the other, so that entry goes when the new run takes the name.
TEST(OutputDir, AnEntryOfTheOtherKindGoesWhenTheNameIsTaken) {
  const fs::path d = test::fresh_dir(dir() / "other_kind");
  {
    OutputDir first(d, {});
    first.subdir("frames");
    write_file_atomic(first.entry_in("frames", "a.png"), "png", "frame");
    write_file_atomic(first.entry("streams"), "a file", "stream");
  }
  {
    OutputDir second(d, {"--out", true, false, ""});
    write_file_atomic(second.entry("frames"), "now a file", "report");
    EXPECT_TRUE(fs::is_directory(second.subdir("streams")));
  }
  EXPECT_EQ(slurp(d / "frames"), "now a file");
  EXPECT_TRUE(fs::is_directory(d / "streams"));
  EXPECT_EQ(OutputDir::recorded(d), (std::vector<std::string>{"frames", "streams"}));
}

// A folder whose only file is a record (a run stopped before its first output) is free: rerunning
// the same command was refused as "not empty".
TEST(OutputDir, AFolderHoldingOnlyARecordIsEmpty) {
  const fs::path d = test::fresh_dir(dir() / "only_record");
  fs::create_directories(d);
  test::write_file(d / OutputDir::kMarker, "# wse: ...\nreport.json\n");
  {
    OutputDir out(d, {});
    write_file_atomic(out.entry("trace.pftrace"), "t", "trace");
  }
  EXPECT_EQ(OutputDir::recorded(d), std::vector<std::string>{"trace.pftrace"});
}

// A directory is a run's from the check of its contents on, not from its first file: a second
// run into it is refused while the first lives, even before the first has written anything. (A
// CLI audit, forty-sixth round: two runs into one new folder, `out/` by default, both found it
// empty, and the later writer's files replaced or joined the other's, exit 0 for both.)
TEST(OutputDir, ASecondRunIsRefusedWhileTheFirstHoldsTheDirectory) {
  const fs::path d = test::fresh_dir(dir() / "two_runs");
  {
    OutputDir first(d, {});
    for (bool overwrite : {false, true})
      test::expect_error<OutputError>([&] { OutputDir second(d, {"--out", overwrite, false, ""}); },
                                      {"--out " + d.string() + " is in use by another wse run, which holds it until it ends",
                                       "Choose a new directory, or wait for that run to end"});
    EXPECT_TRUE(fs::is_directory(d)) << "the refused run took away the folder the first run made";
    write_file_atomic(first.entry("report.json"), "first", "report");
  }
  EXPECT_EQ(slurp(d / "report.json"), "first");
  {
    OutputDir after(d, {"--out", true, false, ""});  // the first has ended: the directory is free
    write_file_atomic(after.entry("report.json"), "after", "report");
  }
  EXPECT_EQ(slurp(d / "report.json"), "after");
}

// A record that is not a regular file, or holds a line no wse run writes, is named as damaged:
// --overwrite read a FIFO there forever, and a 300-byte name reached the file system as a bare
// "filesystem error: ... File name too long" (a CLI audit, forty-sixth round).
TEST(OutputDir, ADamagedRecordIsNamedNotFollowed) {
  const fs::path d = test::fresh_dir(dir() / "damaged_record");
  fs::create_directories(d);
  test::write_file(d / "report.json", "x");
  ASSERT_EQ(::mkfifo((d / OutputDir::kMarker).c_str(), 0600), 0);
  test::expect_error<OutputError>([&] { OutputDir o(d, {"--out", true, false, ""}); },
                                  {"output record " + (d / ".wse-run").string() + ": not a regular file"});
  fs::remove(d / OutputDir::kMarker);
  for (const auto& [line, shown] : {std::pair<std::string, std::string>{std::string(300, 'a'), std::string(80, 'a') + "...'"},
                                    {"ok/" + std::string(256, 'b'), "ok/bbb"},
                                    {"bell\x07", "bell\\x07'"},
                                    {"../outside", "../outside'"}}) {
    std::string text = "# wse: ...\nreport.json\n" + line + "\n";
    test::write_file(d / OutputDir::kMarker, text);
    test::expect_error<OutputError>([&] { OutputDir o(d, {"--out", true, false, ""}); },
                                    {"output record " + (d / ".wse-run").string() + ", line 3: '", shown,
                                     "is not an entry a wse run writes", "the record is damaged"});
  }
  EXPECT_EQ(slurp(d / "report.json"), "x");
  // A resumed run reads its folder's record when it opens it, not at its first checkpoint, after
  // its training (a review, forty-sixth round).
  test::write_file(d / OutputDir::kMarker, "# wse: ...\nreport.json\n../x\n");
  test::expect_error<OutputError>([&] { OutputDir o(d, {"training.checkpoint_dir", false, true, ""}); },
                                  {", line 3: '../x' is not an entry a wse run writes", "Mend or remove that line"});
}

// A failed run takes away the empty folders it made, never one it found there: a user's empty
// folder of the name a run writes into is left (a review, forty-sixth round: every empty folder
// the run recorded went).
TEST(OutputDir, AFailedRunTakesAwayOnlyTheFoldersItMade) {
  const fs::path d = test::fresh_dir(dir() / "found_folder");
  {
    OutputDir first(d, {});
    write_file_atomic(first.entry("report.json"), "first", "report");
  }
  fs::create_directories(d / "frames");  // the user's, empty, not recorded
  try {
    OutputDir second(d, {"--out", true, false, ""});
    second.subdir("frames");
    second.subdir("pictures");
    throw std::runtime_error("the run fails before writing into them");
  } catch (const std::runtime_error&) {
  }
  EXPECT_TRUE(fs::is_directory(d / "frames"));
  EXPECT_FALSE(fs::exists(d / "pictures"));
  EXPECT_EQ(slurp(d / "report.json"), "first");
}

// pending(): a file streamed while the run may still fail keeps the directory unclaimed, so the
// earlier output stands until the run has succeeded and takes the entry.
TEST(OutputDir, APendingFileLeavesTheEarlierOutputUntilItsEntryIsTaken) {
  const fs::path d = test::fresh_dir(dir() / "pending");
  {
    OutputDir first(d, {});
    write_file_atomic(first.entry("trace.pftrace"), "first", "trace");
  }
  {
    OutputDir failed(d, {"--out", true, false, ""});
    OutputFile streaming(failed.pending("trace.pftrace"), "trace");
    streaming.write("half");
  }  // the run failed: its temporary goes, the first run's trace stays
  EXPECT_EQ(slurp(d / "trace.pftrace"), "first");
  EXPECT_EQ(names(d), (std::vector<std::string>{".wse-run", "trace.pftrace"}));
  {
    OutputDir second(d, {"--out", true, false, ""});
    OutputFile streaming(second.pending("trace.pftrace"), "trace");
    streaming.write("second");
    second.entry("trace.pftrace");  // succeeded: claimed, the first run's files go
    streaming.commit();
  }
  EXPECT_EQ(slurp(d / "trace.pftrace"), "second");
}

TEST(OutputDir, ADanglingSymbolicLinkIsNamedAsOne) {
  const fs::path link = dir() / "dangling";
  fs::remove(link);
  fs::create_symlink(dir() / "no_such_target", link);
  test::expect_error<OutputError>([&] { OutputDir out(link, {}); },
                                  {"--out " + link.string() + ": a symbolic link to " + (dir() / "no_such_target").string(), "does not exist"});
}

TEST(OutputDir, OverwriteRefusesADirectoryNoRunRecorded) {
  const fs::path d = test::fresh_dir(dir() / "foreign");
  fs::create_directories(d);
  test::write_file(d / "thesis.tex", "years of work");
  test::expect_error<OutputError>([&] { OutputDir out(d, {"--out", true, false, ""}); },
                                  {d.string(), "no wse run recorded", "thesis.tex"});
  EXPECT_EQ(slurp(d / "thesis.tex"), "years of work");
}

TEST(OutputDir, AFileOrAPathThroughAFileIsRefused) {
  const fs::path f = test::write_file(dir() / "a_file", "x");
  test::expect_error<OutputError>([&] { OutputDir out(f, {}); }, {"--out " + f.string(), "exists and is not a directory"});
  test::expect_error<OutputError>([&] { OutputDir out(f / "sub", {}); }, {(f / "sub").string(), "Not a directory"});
  EXPECT_EQ(slurp(f), "x");
}

TEST(OutputDir, AnExistingDirectoryThatCannotBeWrittenIsRefusedUpFront) {
  // sysfs refuses new files even to root; a read-only directory does too for anyone else.
  fs::path d = "/sys/kernel";
  if (geteuid() != 0) {
    d = test::fresh_dir(dir() / "read_only");
    fs::create_directories(d);
    fs::permissions(d, fs::perms::owner_read | fs::perms::owner_exec);
  }
  test::expect_error<OutputError>([&] { OutputDir out(d, {}); }, {"--out " + d.string(), "cannot write there"});
}

// `ulimit -v` was not read: a run the estimate let through then failed for lack of memory (exit
// 1) where it should have been refused up front (exit 2).
TEST(MemoryLimit, AnAddressSpaceLimitBoundsWhatIsAvailable) {
  // The room ulimit -v leaves this process: the limit less what it maps now.
  const int code = test::with_address_space_room(512ull << 20, [] {
    const MemoryLimit m = detect_available_memory();
    return m.bytes <= (512ull << 20) && m.bytes > (256ull << 20) && m.source.find("ulimit -v") != std::string::npos ? 0 : 1;
  });
  EXPECT_EQ(code, 0) << "1: the limit was not seen; 3: could not set it";
}

// --max-memory cannot lift `ulimit -v`: a figure set above the room it leaves gives way to that
// room, and a refusal there says to raise ulimit -v, not to pass --max-memory (a CLI audit,
// forty-sixth round: viz given --max-memory 2G under a 300 MB limit skipped its check and died
// "out of host memory", exit 1; a run told to raise the limit with --max-memory was then refused
// for its address space).
TEST(MemoryLimit, MaxMemoryCannotLiftAnAddressSpaceLimit) {
  const int code = test::with_address_space_room(512ull << 20, [] {
    set_memory_limit(2ull << 30);
    const MemoryLimit m = memory_limit();
    if (!(m.bytes <= (512ull << 20) && m.source.find("ulimit -v") != std::string::npos)) return 1;
    try {
      check_memory(1ull << 30, "this run", ". Use a smaller mesh, or raise the limit with --max-memory");
      return 2;
    } catch (const UsageError& e) {
      const std::string what = e.what();
      if (what.find("raise ulimit -v (--max-memory cannot lift it)") == std::string::npos) return 4;
      if (what.find("raise the limit with --max-memory") != std::string::npos) return 5;
    }
    set_memory_limit(64ull << 20);  // below the room: the figure set stands
    return memory_limit().bytes == (64ull << 20) && memory_limit().source == "--max-memory" ? 0 : 6;
  });
  EXPECT_EQ(code, 0) << "1: the set figure was not bounded; 2: not refused; 4, 5: the advice; 6: a lower figure not kept; 3: no limit";
}

// The peak is the kernel's high-water mark in bytes, ru_maxrss's KiB times 1024 (found by a
// mutation test: KiB taken as 1000 bytes, the report 2.3% low, passed). With 256 MiB written,
// the peak holds them and the process's other pages (more than 1 MiB: code, stack, heap); at
// 1000 bytes a KiB it would be (262,144 + ~4,000) x 1000, below 257 MiB. At most /proc's VmHWM.
uint64_t vm_hwm_kib() {
  std::ifstream in("/proc/self/status");
  std::string line;
  while (std::getline(in, line))
    if (line.rfind("VmHWM:", 0) == 0) return std::stoull(line.substr(6));
  return 0;
}
TEST(MemoryLimit, ThePeakIsTheHighWaterMarkInBytes) {
  std::vector<char> held(256u << 20);
  for (size_t i = 0; i < held.size(); i += 4096) held[i] = char(i);
  const uint64_t peak = peak_rss_bytes();
  EXPECT_GE(peak, (257u << 20)) << peak;
  EXPECT_LE(peak, vm_hwm_kib() * 1024) << peak;
  EXPECT_NE(held[4096], 1);  // (keeps the pages)
}

TEST(MemoryLimit, SizesParseAndTheLimitIsChecked) {
  EXPECT_EQ(parse_memory_size("4096"), 4096u);
  EXPECT_EQ(parse_memory_size("512M"), 512ull << 20);
  EXPECT_EQ(parse_memory_size("8G"), 8ull << 30);
  EXPECT_EQ(parse_memory_size("1.5GiB"), 3ull << 29);
  EXPECT_EQ(parse_memory_size("2tb"), 2ull << 40);
  EXPECT_EQ(parse_memory_size(" 2G "), 2ull << 30);  // "2G " was refused while " 2G" was taken
  for (const char* bad : {"", "  ", "lots", "-1G", "0", "12Q", "1G extra", "nan", "2BB", "2BIB"})
    test::expect_error<UsageError>([&] { parse_memory_size(bad); }, {"--max-memory '" + std::string(bad) + "'"});
  test::expect_error<UsageError>([&] { parse_memory_size("99999999T"); }, {"more than 16 EiB"});
  // Sizes, but none a run can have: said as such (they read "expected a size such as 512M").
  test::expect_error<UsageError>([&] { parse_memory_size("0G"); }, {"--max-memory '0G': no memory at all; expected a size above 0"});
  test::expect_error<UsageError>([&] { parse_memory_size("0.5"); }, {"--max-memory '0.5': less than a byte"});
  EXPECT_EQ(format_bytes(96), "96 bytes");
  EXPECT_EQ(format_bytes(3ull << 29), "1.50 GiB");
  set_memory_limit(1 << 20);
  EXPECT_NO_THROW(check_memory(1 << 20, "x"));
  test::expect_error<UsageError>([] { check_memory(3 << 20, "the thing"); },
                                 {"the thing needs about 3.00 MiB of host memory, but only 1.00 MiB is available (--max-memory)"});
  set_memory_limit(0);
  EXPECT_GT(memory_limit().bytes, uint64_t(1) << 20);  // detected again: this machine has more than 1 MiB
  EXPECT_EQ(mul_sat(uint64_t(1) << 40, uint64_t(1) << 40), UINT64_MAX);
}

}  // namespace
}  // namespace wse
