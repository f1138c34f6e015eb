// SIGINT, SIGTERM and SIGHUP sent to a real `wse run` child process: it finishes the step in progress,
// writes a checkpoint of it, exits with 128 + the signal and prints how to resume; running that
// command gives the same final checkpoint, byte for byte, as a run that was never interrupted.
// The child stops itself after a chosen step (WSE_TEST_STOP_AFTER_STEP, SIGSTOP), so the signal
// arrives at a known point without any timing in the test.
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <array>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <regex>
#include <tuple>
#include <utility>

#include "cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using wse::test::Output;
using wse::test::wse;

fs::path dir() { return wse::test::scratch_dir("wse_interrupt_test"); }

// 10 steps of 16 samples on a 4 x 2 mesh, Adam (so the optimizer's step count matters too); the
// first step cycle by cycle, the others functionally (the same bits, timed as the first).
const char* kConfig =
    "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
    "data: {train_samples: 160, eval_samples: 32}\ntraining: {batch_size: 16, log_every: 1, max_steps: 10, detail: {every: 100, first: 1}}\n"
    "optimizer: {kind: adam, lr: 0.01}\n";

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

// Runs `wse run config --out out` as a child that stops itself after `stop_step` (0: in the final
// test pass, after its first batch; kInReport: once the run has ended, before its report), then
// sends it `sig` (and `then`, a second signal, both pending as it goes on: handled in order of
// their numbers) and lets it go on. With `ignored`, the child starts with `sig` ignored, as a
// background job of a non-interactive shell starts with SIGINT. Returns its exit status and what
// it printed.
constexpr int kInReport = -1;
Output interrupted_run(const fs::path& config, const std::string& out, int stop_step, int sig, bool ignored = false, int then = 0,
                       const std::string& resume = "") {
  int pipe_fd[2];
  EXPECT_EQ(pipe(pipe_fd), 0);
  const pid_t pid = fork();
  if (pid == 0) {
    dup2(pipe_fd[1], STDOUT_FILENO);
    dup2(pipe_fd[1], STDERR_FILENO);
    close(pipe_fd[0]);
    if (stop_step > 0) setenv("WSE_TEST_STOP_AFTER_STEP", std::to_string(stop_step).c_str(), 1);
    else if (stop_step == 0) setenv("WSE_TEST_STOP_IN_FINAL_TEST_PASS", "1", 1);
    else setenv("WSE_TEST_STOP_IN_REPORT", "1", 1);
    if (ignored) signal(sig, SIG_IGN);  // kept across exec
    if (resume.empty()) execl(WSE_BINARY, WSE_BINARY, "run", config.c_str(), "--threads", "2", "--out", out.c_str(), (char*)nullptr);
    else execl(WSE_BINARY, WSE_BINARY, "run", config.c_str(), "--threads", "2", "--out", out.c_str(), "--resume", resume.c_str(), (char*)nullptr);
    _exit(127);
  }
  close(pipe_fd[1]);
  int status = 0;
  EXPECT_EQ(waitpid(pid, &status, WUNTRACED), pid);
  EXPECT_TRUE(WIFSTOPPED(status)) << "the child should have stopped itself after step " << stop_step;
  kill(pid, sig);      // pending while it is stopped ...
  if (then) kill(pid, then);
  kill(pid, SIGCONT);  // ... and handled as it goes on
  std::string text;
  std::array<char, 4096> buf;
  for (ssize_t n; (n = read(pipe_fd[0], buf.data(), buf.size())) > 0;) text.append(buf.data(), size_t(n));
  close(pipe_fd[0]);
  EXPECT_EQ(waitpid(pid, &status, 0), pid);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 1000 + WTERMSIG(status), text};
}

TEST(Interrupt, SigintFinishesTheStepCheckpointsItAndTheResumedRunIsBitIdentical) {
  const fs::path cfg = wse::test::write_file(dir() / "train.yaml", kConfig);
  const fs::path straight = wse::test::fresh_dir(dir() / "straight"), cut = wse::test::fresh_dir(dir() / "cut"),
                 resumed = wse::test::fresh_dir(dir() / "resumed");
  Output s = wse("run " + cfg.string() + " --threads 2 --out " + straight.string());
  ASSERT_EQ(s.code, 0) << s.text;

  Output c = interrupted_run(cfg, cut.string(), 4, SIGINT);
  EXPECT_EQ(c.code, 128 + SIGINT) << c.text;
  EXPECT_NE(c.text.find("SIGINT: finishing the step in progress"), std::string::npos) << c.text;
  EXPECT_NE(c.text.find("stopped by SIGINT after step 4 of 10"), std::string::npos) << c.text;
  const fs::path ckpt = cut / "checkpoints" / "step_4.safetensors";
  EXPECT_TRUE(fs::exists(ckpt)) << c.text;
  EXPECT_FALSE(fs::exists(cut / "checkpoints" / "step_5.safetensors")) << "no step after the one in progress";
  const nlohmann::json report = nlohmann::json::parse(std::ifstream(cut / "report.json"));
  EXPECT_EQ(report["interrupted"]["signal"], "SIGINT");
  EXPECT_EQ(report["interrupted"]["after_step"], 4);
  EXPECT_EQ(report["loss_per_step"].size(), 4u);

  // The line says how to resume; run exactly that, with our own --out.
  std::smatch m;
  ASSERT_TRUE(std::regex_search(c.text, m, std::regex("to finish this run: wse run (\\S+) --resume (\\S+) --out (\\S+)"))) << c.text;
  EXPECT_EQ(m[1].str(), cfg.string());
  EXPECT_EQ(m[2].str(), ckpt.string());
  Output r = wse("run " + m[1].str() + " --resume " + m[2].str() + " --threads 1 --out " + resumed.string());
  ASSERT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("steps 5 to 10"), std::string::npos) << r.text;
  const std::string a = slurp(straight / "checkpoints" / "step_10.safetensors"), b = slurp(resumed / "checkpoints" / "step_10.safetensors");
  ASSERT_FALSE(a.empty());
  EXPECT_TRUE(a == b) << "the resumed run's final checkpoint differs from the uninterrupted run's";
  const nlohmann::json ra = nlohmann::json::parse(std::ifstream(straight / "report.json"));
  const nlohmann::json rb = nlohmann::json::parse(std::ifstream(resumed / "report.json"));
  EXPECT_EQ(rb["first_step"], 4);
  EXPECT_EQ(rb["steps"], 6);
  for (size_t k = 0; k < 6; ++k) EXPECT_EQ(ra["loss_per_step"][4 + k], rb["loss_per_step"][k]) << "step " << 5 + k;
  EXPECT_EQ(ra["test_accuracy"], rb["test_accuracy"]);
  // The resumed run's first step runs on the mesh too (its functional steps need a cycle-level
  // run to be timed as; with none they took a cycle a pass), so steps 5 to 10 take the
  // uninterrupted run's cycles on the cluster's clock, but for the pipeline's new start.
  EXPECT_EQ(ra["detail"]["detailed_step_numbers"], nlohmann::json::array({1}));
  EXPECT_EQ(rb["detail"]["detailed_step_numbers"], nlohmann::json::array({5}));
  // To the cycle: the resumed run's first step starts the pipeline anew, as the straight run's
  // first did, and takes its cycles; steps 6 to 10 take the straight run's (a 3% tolerance let
  // 13,000 cycles of a difference of 3,195 pass).
  ASSERT_EQ(rb["timeline"].size(), 6u);
  ASSERT_EQ(ra["timeline"].size(), 10u);
  EXPECT_EQ(rb["timeline"][0]["cycles"], ra["timeline"][0]["cycles"]);
  for (size_t k = 1; k < 6; ++k) EXPECT_EQ(rb["timeline"][k]["cycles"], ra["timeline"][4 + k]["cycles"]) << "step " << 5 + k;
}

TEST(Interrupt, SigtermToo) {
  const fs::path cfg = wse::test::write_file(dir() / "train_term.yaml", kConfig);
  const fs::path out = wse::test::fresh_dir(dir() / "term");
  Output c = interrupted_run(cfg, out.string(), 7, SIGTERM);
  EXPECT_EQ(c.code, 128 + SIGTERM) << c.text;
  EXPECT_NE(c.text.find("stopped by SIGTERM after step 7 of 10"), std::string::npos) << c.text;
  EXPECT_TRUE(fs::exists(out / "checkpoints" / "step_7.safetensors"));
  // Only whole files: no temporary left beside the checkpoint.
  for (const auto& e : fs::directory_iterator(out / "checkpoints"))
    EXPECT_EQ(e.path().filename().string().rfind(".", 0), std::string::npos) << e.path();
}

// SIGHUP (a closed terminal) stops at a step's end as SIGINT does; a signal the parent set to be
// ignored stays ignored (it stopped the run before 2026-11-29, though it was ignored everywhere
// else in the program); and the printed --out of the resumed run is beside the run's, whatever
// way --out was written (with a trailing '/' it was 'cut/_resumed', inside the old run).
TEST(Interrupt, SighupStopsAtAStepsEndAndAnIgnoredSignalStaysIgnored) {
  const fs::path cfg = wse::test::write_file(dir() / "train_hup.yaml", kConfig);
  const fs::path hup = wse::test::fresh_dir(dir() / "hup");
  Output h = interrupted_run(cfg, hup.string() + "/", 3, SIGHUP);
  EXPECT_EQ(h.code, 128 + SIGHUP) << h.text;
  EXPECT_NE(h.text.find("SIGHUP: finishing the step in progress"), std::string::npos) << h.text;
  EXPECT_NE(h.text.find("stopped by SIGHUP after step 3 of 10"), std::string::npos) << h.text;
  EXPECT_TRUE(fs::exists(hup / "checkpoints" / "step_3.safetensors"));
  EXPECT_NE(h.text.find(" --out " + hup.string() + "_resumed\n"), std::string::npos) << h.text;

  const fs::path ign = wse::test::fresh_dir(dir() / "ignored");
  Output i = interrupted_run(cfg, ign.string(), 3, SIGINT, true);
  EXPECT_EQ(i.code, 0) << i.text;
  const nlohmann::json report = nlohmann::json::parse(std::ifstream(ign / "report.json"));
  EXPECT_FALSE(report.contains("interrupted")) << report["interrupted"];
  EXPECT_EQ(report["steps"], 10);
  EXPECT_TRUE(report.contains("test_accuracy"));
}

// A signal during the last step, or during the final test pass, finds every step run: there is
// nothing to resume, so no resume command (the one printed before 2026-11-29 was refused: "where
// its run ended"), and the report is written (the final test pass ran with the default handlers
// and a signal lost it) with no test accuracy, saying what became of the test pass.
TEST(Interrupt, ASignalAfterTheLastStepLeavesAReportAndNothingToResume) {
  const fs::path cfg = wse::test::write_file(dir() / "train_last.yaml", kConfig);
  for (int stop : {10, 0}) {
    const fs::path out = wse::test::fresh_dir(dir() / ("last_" + std::to_string(stop)));
    Output c = interrupted_run(cfg, out.string(), stop, SIGTERM);
    EXPECT_EQ(c.code, 128 + SIGTERM) << c.text;
    EXPECT_EQ(c.text.find("to finish this run"), std::string::npos) << c.text;
    EXPECT_NE(c.text.find(stop ? "stopped by SIGTERM after the last step, before the final test pass; every step ran"
                               : "stopped by SIGTERM during the final test pass; every step ran"),
              std::string::npos)
        << c.text;
    // What the signal's own message promised: in the final test pass, no step and no checkpoint
    // (it said "finishing the step in progress, then writing a checkpoint" there too).
    EXPECT_NE(c.text.find(stop ? "SIGTERM: finishing the step in progress" : "SIGTERM: stopping the final test pass at the batch in progress"),
              std::string::npos)
        << c.text;
    EXPECT_TRUE(fs::exists(out / "checkpoints" / "step_10.safetensors"));
    ASSERT_TRUE(fs::exists(out / "report.json")) << c.text;
    const nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
    EXPECT_EQ(r["steps"], 10);
    EXPECT_EQ(r["interrupted"]["after_step"], 10);
    EXPECT_TRUE(r["interrupted"]["resume"].is_null());
    EXPECT_EQ(r["interrupted"]["final_test_pass"], stop ? "not run" : "stopped before its end: not scored");
    EXPECT_FALSE(r.contains("test_accuracy"));
  }
  // With no test pass to run, a signal during the last step finds nothing left to stop: the run
  // is complete and ends as one.
  std::string no_test = kConfig;
  no_test.replace(no_test.find("eval_samples: 32"), 16, "eval_samples: 0");
  const fs::path out = wse::test::fresh_dir(dir() / "last_no_test");
  Output c = interrupted_run(wse::test::write_file(dir() / "train_no_test.yaml", no_test), out.string(), 10, SIGINT);
  EXPECT_EQ(c.code, 0) << c.text;
  EXPECT_NE(c.text.find("SIGINT arrived during the last step, which ended the run"), std::string::npos) << c.text;
  const nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
  EXPECT_FALSE(r.contains("interrupted"));
  EXPECT_EQ(r["test_samples"], 0);
}

TEST(Interrupt, ResumeRefusesWhatItCannotFinish) {
  const fs::path cfg = wse::test::write_file(dir() / "train_done.yaml", kConfig);
  const fs::path done = wse::test::fresh_dir(dir() / "done");
  ASSERT_EQ(wse("run " + cfg.string() + " --out " + done.string()).code, 0);
  const fs::path final_ckpt = done / "checkpoints" / "step_10.safetensors";
  Output finished = wse("run " + cfg.string() + " --resume " + final_ckpt.string() + " --out " + wse::test::fresh_dir(dir() / "x1").string());
  EXPECT_EQ(finished.code, 2) << finished.text;
  EXPECT_NE(finished.text.find("is at step 10, where its run ended: nothing to resume"), std::string::npos) << finished.text;
  std::string other = kConfig;
  other.replace(other.find("batch_size: 16"), 14, "batch_size: 32");
  const fs::path cut = wse::test::fresh_dir(dir() / "cut2");
  ASSERT_EQ(interrupted_run(cfg, cut.string(), 2, SIGINT).code, 128 + SIGINT);
  Output batch = wse("run " + wse::test::write_file(dir() / "b32.yaml", other).string() + " --resume " +
                     (cut / "checkpoints" / "step_2.safetensors").string() + " --out " + wse::test::fresh_dir(dir() / "x2").string());
  EXPECT_EQ(batch.code, 2) << batch.text;
  EXPECT_NE(batch.text.find("field 'training.batch_size': 32, but the run"), std::string::npos) << batch.text;
  // The rest of what decides the run's numbers is recorded too: a changed lr, seed or shuffle
  // resumed with exit 0 and trained another run (a training-edge audit); all changes are named.
  std::string changed = kConfig;
  changed.replace(changed.find("lr: 0.01"), 8, "lr: 0.5");
  changed += "weights: {seed: 4}\n";
  changed.replace(changed.find("mesh: {width: 4, height: 2}"), 27, "mesh: {width: 2, height: 2}");  // the sums' order
  Output lr = wse("run " + wse::test::write_file(dir() / "lr.yaml", changed).string() + " --resume " +
                  (cut / "checkpoints" / "step_2.safetensors").string() + " --out " + wse::test::fresh_dir(dir() / "x3").string());
  EXPECT_EQ(lr.code, 2) << lr.text;
  EXPECT_NE(lr.text.find("but this config changes:\n  field 'mesh': 2x2, but the run had 4x2\n  field 'optimizer.lr': 0.5, but the run had 0.01\n  field 'weights.seed': 4, but the run had 1\n"),
            std::string::npos) << lr.text;
  EXPECT_NE(lr.text.find("set training.resume_from in the config instead"), std::string::npos) << lr.text;
  // The data by content: the test set as the training set and the other way round (the same
  // sizes), or a test set of another size, resumed with exit 0 and other numbers (an interrupt
  // audit, forty-fourth round). Refused by the run and by --validate_only, the digests named.
  const fs::path swapped = wse::test::fresh_dir(dir() / "swapped");
  fs::create_directories(swapped);
  const fs::path data = "/usr/share/datasets/fashion-mnist";
  for (const auto& [to, from] : {std::pair<std::string, std::string>{"train-images-idx3-ubyte.gz", "t10k-images-idx3-ubyte.gz"},
                                 {"train-labels-idx1-ubyte.gz", "t10k-labels-idx1-ubyte.gz"},
                                 {"t10k-images-idx3-ubyte.gz", "train-images-idx3-ubyte.gz"},
                                 {"t10k-labels-idx1-ubyte.gz", "train-labels-idx1-ubyte.gz"}})
    fs::create_symlink(data / from, swapped / to);
  std::string other_data = kConfig;
  other_data.replace(other_data.find("data: {"), 7, "data: {dir: " + swapped.string() + ", ");
  std::string more_tests = kConfig;
  more_tests.replace(more_tests.find("eval_samples: 32"), 16, "eval_samples: 48");
  for (const auto& [name, yaml, field] : {std::tuple<std::string, std::string, std::string>{"swapped.yaml", other_data, "field 'data.train_set': 160 samples of 784 features, digest "},
                                          {"more_tests.yaml", more_tests, "field 'data.test_set': 48 samples of 784 features, digest "}}) {
    const fs::path c = wse::test::write_file(dir() / name, yaml);
    for (const std::string& mode : {std::string(" --validate_only"), " --out " + wse::test::fresh_dir(dir() / "x_data").string()}) {
      Output o = wse("run " + c.string() + " --resume " + (cut / "checkpoints" / "step_2.safetensors").string() + mode);
      EXPECT_EQ(o.code, 2) << name << mode << "\n" << o.text;
      EXPECT_NE(o.text.find("but this config's data differ:\n  field 'data."), std::string::npos) << name << mode << "\n" << o.text;
      EXPECT_NE(o.text.find(field), std::string::npos) << name << mode << "\n" << o.text;
      EXPECT_NE(o.text.find(", but the run had 32 samples of 784 features, digest "), std::string::npos) << name << mode << "\n" << o.text;
    }
  }
  // --overwrite of the directory the checkpoint is in would delete it first: refused.
  Output self = wse("run " + cfg.string() + " --resume " + (cut / "checkpoints" / "step_2.safetensors").string() + " --overwrite --out " +
                    cut.string());
  EXPECT_EQ(self.code, 2) << self.text;
  EXPECT_NE(self.text.find("would remove"), std::string::npos) << self.text;
  EXPECT_TRUE(fs::exists(cut / "checkpoints" / "step_2.safetensors"));
  // So would --overwrite of a training.checkpoint_dir that holds training.resume_from, in a new run
  // from it (it emptied the folder, the checkpoint it started from included, before 2026-11-29).
  const fs::path ckd = wse::test::fresh_dir(dir() / "ckd");
  std::string own = kConfig;
  own.replace(own.find("max_steps: 10"), 13, "max_steps: 2, checkpoint_dir: " + ckd.string());
  ASSERT_EQ(wse("run " + wse::test::write_file(dir() / "ckd1.yaml", own).string() + " --out " + wse::test::fresh_dir(dir() / "ckd1").string()).code, 0);
  std::string from = own;
  from.replace(from.find("max_steps: 2"), 12, "max_steps: 1, resume_from: " + (ckd / "step_2.safetensors").string());
  Output into = wse("run " + wse::test::write_file(dir() / "ckd2.yaml", from).string() + " --overwrite --out " +
                    wse::test::fresh_dir(dir() / "ckd2").string());
  EXPECT_EQ(into.code, 2) << into.text;
  EXPECT_NE(into.text.find("(training.checkpoint_dir) would remove"), std::string::npos) << into.text;
  EXPECT_TRUE(fs::exists(ckd / "step_2.safetensors"));
  // And a checkpoint_dir that is --out itself: --validate_only said "valid" to what the run
  // refused (a review, forty-fourth round); both refuse it now.
  const fs::path both = wse::test::fresh_dir(dir() / "ck_is_out");
  std::string in_out = kConfig;
  in_out.replace(in_out.find("max_steps: 10"), 13, "max_steps: 2, checkpoint_dir: " + both.string());
  ASSERT_EQ(wse("run " + wse::test::write_file(dir() / "ck_is_out1.yaml", in_out).string() + " --out " + both.string()).code, 0);
  std::string again = in_out;
  again.replace(again.find("max_steps: 2"), 12, "max_steps: 1, resume_from: " + (both / "step_2.safetensors").string());
  const fs::path again_cfg = wse::test::write_file(dir() / "ck_is_out2.yaml", again);
  for (const char* mode : {" --validate_only", ""}) {
    Output o = wse("run " + again_cfg.string() + " --overwrite --out " + both.string() + mode);
    EXPECT_EQ(o.code, 2) << mode << "\n" << o.text;
    EXPECT_NE(o.text.find("--overwrite " + both.string() + " would remove " + (both / "step_2.safetensors").string()), std::string::npos)
        << mode << "\n" << o.text;
    EXPECT_TRUE(fs::exists(both / "step_2.safetensors"));
  }
}

// A signal while the report was written (the last tenth of a second of a finished run) ended the
// process with no report.json and nothing printed, and the run, every step done, could not be
// resumed to get it (an interrupt audit, forty-fourth round). It now waits for the report.
TEST(Interrupt, ASignalWhileTheReportIsWrittenWaitsForIt) {
  const fs::path cfg = wse::test::write_file(dir() / "train_report.yaml", kConfig);
  const fs::path out = wse::test::fresh_dir(dir() / "in_report");
  Output c = interrupted_run(cfg, out.string(), kInReport, SIGTERM);
  EXPECT_EQ(c.code, 0) << c.text;
  EXPECT_NE(c.text.find("SIGTERM: the run has ended; writing its report, then exiting"), std::string::npos) << c.text;
  ASSERT_TRUE(fs::exists(out / "report.json")) << c.text;
  const nlohmann::json r = nlohmann::json::parse(slurp(out / "report.json"));
  EXPECT_FALSE(r.contains("interrupted"));
  EXPECT_EQ(r["test_samples"], 32);
}

// A second signal stops at once, and says which checkpoint to resume from: with --overwrite the
// folder may also hold a previous run's later ones ("the last checkpoint written" named none).
TEST(Interrupt, ASecondSignalNamesTheCheckpointToResumeFrom) {
  std::string every = kConfig;
  every.replace(every.find("max_steps: 10"), 13, "max_steps: 10, checkpoint_every: 1");
  const fs::path cfg = wse::test::write_file(dir() / "train_twice.yaml", every);
  const fs::path out = wse::test::fresh_dir(dir() / "twice");
  // (Which of the two the kernel hands over first is its choice: the second ends the process.)
  auto by_the_second = [](int code) { return code == 1000 + SIGTERM || code == 1000 + SIGINT; };
  Output c = interrupted_run(cfg, out.string(), 3, SIGINT, false, SIGTERM);
  EXPECT_TRUE(by_the_second(c.code)) << c.code << "\n" << c.text;
  // (Stopped right after step 3, before its checkpoint: step 2's is the last written.)
  EXPECT_NE(c.text.find("wse: stopping at once; resume from the last checkpoint written: " + (out / "checkpoints" / "step_2.safetensors").string() + "\n"),
            std::string::npos) << c.text;
  // Without checkpoints of its own (the last step only), it says there is none.
  const fs::path none = wse::test::fresh_dir(dir() / "twice_none");
  c = interrupted_run(wse::test::write_file(dir() / "train_twice_none.yaml", kConfig), none.string(), 3, SIGINT, false, SIGTERM);
  EXPECT_TRUE(by_the_second(c.code)) << c.code << "\n" << c.text;
  EXPECT_NE(c.text.find("wse: stopping at once; no checkpoint of this run was written"), std::string::npos) << c.text;
  // Once every step has run (the final test pass, the report), the last step's checkpoint was
  // named as the one to resume from, and --resume refused it: "nothing to resume" (a review,
  // forty-fifth round). Now it says what is lost and that nothing is left to resume.
  for (int when : {0, kInReport}) {
    const fs::path done = wse::test::fresh_dir(dir() / ("twice_done" + std::to_string(-when)));
    c = interrupted_run(cfg, done.string(), when, SIGINT, false, SIGTERM);
    EXPECT_TRUE(by_the_second(c.code)) << c.code << "\n" << c.text;
    const fs::path last = done / "checkpoints" / "step_10.safetensors";
    EXPECT_NE(c.text.find("wse: stopping at once; every step ran and the last one's checkpoint is written, but the run's test score and report are "
                          "lost (nothing is left to resume: run it again to get them): " + last.string() + "\n"),
              std::string::npos) << when << "\n" << c.text;
    EXPECT_EQ(c.text.find("resume from"), std::string::npos) << c.text;
    const Output r = wse("run " + cfg.string() + " --resume " + last.string() + " --validate_only");
    EXPECT_EQ(r.code, 2) << r.text;
    EXPECT_NE(r.text.find("nothing to resume"), std::string::npos) << r.text;
  }
  // A --resume run stopped before writing a checkpoint of its own names the one it resumed from,
  // not as one it wrote.
  const fs::path src = out / "checkpoints" / "step_2.safetensors";
  const fs::path again = wse::test::fresh_dir(dir() / "twice_again");
  c = interrupted_run(cfg, again.string(), 3, SIGINT, false, SIGTERM, src.string());
  EXPECT_TRUE(by_the_second(c.code)) << c.code << "\n" << c.text;
  EXPECT_NE(c.text.find("wse: stopping at once; resume from the checkpoint this run resumed from (it wrote none): " + src.string() + "\n"),
            std::string::npos) << c.text;
}

}  // namespace

namespace {

// The resume command, pasted into a shell as printed: a space in the config's or --out's path
// split it into other arguments (an interrupt audit, forty-fourth round). Words a shell would
// split are quoted, and the command runs.
TEST(Interrupt, TheResumeCommandReadsBackInAShell) {
  const fs::path spaced = wse::test::fresh_dir(dir() / "with space");
  fs::create_directories(spaced);
  const fs::path cfg = wse::test::write_file(spaced / "my cfg.yaml", kConfig);
  const fs::path out = spaced / "run 'one'";
  Output c = interrupted_run(cfg, out.string(), 2, SIGINT);
  ASSERT_EQ(c.code, 128 + SIGINT) << c.text;
  const std::string mark = "wse: to finish this run: wse run ";
  const size_t at = c.text.find(mark);
  ASSERT_NE(at, std::string::npos) << c.text;
  const std::string args = c.text.substr(at + mark.size(), c.text.find('\n', at) - at - mark.size());
  EXPECT_NE(args.find("'" + cfg.string() + "'"), std::string::npos) << args;
  EXPECT_NE(args.find("--out '" + spaced.string() + "/run '\\''one'\\''_resumed'"), std::string::npos) << args;
  Output r = wse::test::shell(std::string(WSE_BINARY) + " run " + args);
  EXPECT_EQ(r.code, 0) << args << "\n" << r.text;
  EXPECT_TRUE(fs::exists(spaced / "run 'one'_resumed" / "report.json")) << r.text;
}

}  // namespace
