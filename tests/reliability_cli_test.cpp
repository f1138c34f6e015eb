// Every case of issue 11's "Why", as a new user would meet it on the command line: each gives
// exit code 2 and a message naming the path or field, and leaves earlier output untouched.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>

#include "cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using wse::test::Output;
using wse::test::wse;

fs::path dir() { return wse::test::scratch_dir("wse_reliability_cli_test"); }

std::string slurp(const fs::path& p) {
  std::ifstream in(p, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

const char* kGemv = "machine: wse2\nmesh: {width: 6, height: 5}\ngemv: {rows: 50, cols: 40, seed: 3}\n";
const char* kTrain =
    "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
    "data: {train_samples: 96, eval_samples: 32}\ntraining: {batch_size: 16, log_every: 2, checkpoint_every: 3}\n"
    "optimizer: {kind: sgd, lr: 0.05}\n";

fs::path config(const std::string& name, const std::string& yaml) { return wse::test::write_file(dir() / name, yaml); }

// An existing directory no one may write into, even root: sysfs. (Our own directory made
// read-only would do for other users, but root writes through permission bits.)
const char* kUnwritable = "/sys/kernel";

TEST(ReliabilityCli, AnUnwritableOutIsRefusedBeforeAnyWork) {
  const fs::path gemv = config("gemv.yaml", kGemv), train = config("train.yaml", kTrain);
  const fs::path file = wse::test::write_file(dir() / "plain_file", "x");
  struct Case {
    std::string args, path, reason;
  } cases[] = {
      {"run " + gemv.string() + " --out " + kUnwritable, kUnwritable, "cannot write there: Permission denied"},
      {"run " + gemv.string() + " --out " + (file / "sub").string(), (file / "sub").string(), "cannot create it: Not a directory"},
      {"run " + train.string() + " --compile_only --out " + kUnwritable, kUnwritable, "cannot write there"},
      {"run " + train.string() + " --out " + kUnwritable, kUnwritable, "cannot write there"},
      {"trace " + gemv.string() + " --out " + kUnwritable, kUnwritable, "cannot write there"},
  };
  for (const Case& c : cases) {
    Output o = wse(c.args);
    EXPECT_EQ(o.code, 2) << c.args << "\n" << o.text;
    EXPECT_NE(o.text.find("--out " + c.path + ": " + c.reason), std::string::npos) << c.args << "\n" << o.text;
    EXPECT_EQ(o.text.find("internal error"), std::string::npos) << o.text;
    EXPECT_EQ(o.text.find("step "), std::string::npos) << "trained before noticing:\n" << o.text;
    EXPECT_EQ(o.text.find("report "), std::string::npos) << "named a report it did not write:\n" << o.text;
  }
}

TEST(ReliabilityCli, ASecondRunIntoTheSameOutIsRefusedAndTheFirstStaysWhole) {
  const fs::path gemv = config("gemv2.yaml", kGemv);
  const fs::path out = wse::test::fresh_dir(dir() / "twice");
  ASSERT_EQ(wse("run " + gemv.string() + " --out " + out.string()).code, 0);
  const std::string first = slurp(out / "report.json");
  Output again = wse("run " + gemv.string() + " --threads 1 --out " + out.string());
  EXPECT_EQ(again.code, 2) << again.text;
  EXPECT_NE(again.text.find("--out " + out.string() + " is not empty"), std::string::npos) << again.text;
  EXPECT_NE(again.text.find("--overwrite"), std::string::npos) << again.text;
  EXPECT_EQ(slurp(out / "report.json"), first);
  // --help names the flag and says what it does.
  Output help = wse("run --help");
  EXPECT_NE(help.text.find("--overwrite"), std::string::npos) << help.text;
  EXPECT_NE(help.text.find("removes exactly the files its DIR/.wse-run lists"), std::string::npos) << help.text;
}

TEST(ReliabilityCli, OverwriteReplacesThePreviousRunWholeAndNothingElse) {
  const fs::path train = config("train_o.yaml", kTrain);
  const fs::path out = wse::test::fresh_dir(dir() / "overwrite");
  ASSERT_EQ(wse("run " + train.string() + " --out " + out.string()).code, 0);  // 6 steps: step_3, step_6
  ASSERT_TRUE(fs::exists(out / "checkpoints" / "step_6.safetensors"));
  wse::test::write_file(out / "my_notes.txt", "keep me");
  // A run that fails before writing anything leaves the earlier output as it was, --overwrite or not.
  std::string broken = kTrain;
  broken += "run: {max_cycles: 10}\n";
  Output fail = wse("run " + config("broken.yaml", broken).string() + " --overwrite --out " + out.string());
  EXPECT_EQ(fail.code, 2) << fail.text;
  EXPECT_TRUE(fs::exists(out / "checkpoints" / "step_6.safetensors"));
  // A shorter run replaces it: none of the first run's checkpoints stay beside the second's.
  std::string shorter = kTrain;
  shorter.replace(shorter.find("checkpoint_every: 3"), 19, "checkpoint_every: 2, max_steps: 2");
  Output second = wse("run " + config("shorter.yaml", shorter).string() + " --overwrite --out " + out.string());
  ASSERT_EQ(second.code, 0) << second.text;
  EXPECT_NE(second.text.find("my_notes.txt"), std::string::npos) << "should say what it left alone:\n" << second.text;
  std::vector<std::string> ckpts;
  for (const auto& e : fs::directory_iterator(out / "checkpoints")) ckpts.push_back(e.path().filename().string());
  EXPECT_EQ(ckpts, std::vector<std::string>{"step_2.safetensors"});
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(out / "report.json"))["steps"], 2);
  EXPECT_EQ(slurp(out / "my_notes.txt"), "keep me");
}

TEST(ReliabilityCli, AnOutThatIsAFileIsTheUsersMistake) {
  const fs::path gemv = config("gemv3.yaml", kGemv);
  const fs::path file = wse::test::write_file(dir() / "report_file.json", "{\"mine\": 1}");
  Output o = wse("run " + gemv.string() + " --out " + file.string());
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("--out " + file.string() + ": exists and is not a directory"), std::string::npos) << o.text;
  EXPECT_EQ(o.text.find("internal error"), std::string::npos) << o.text;
  EXPECT_EQ(slurp(file), "{\"mine\": 1}");
}

TEST(ReliabilityCli, AWeightStreamThatContradictsItsLayerIsRejectedByInspect) {
  // A real stream from --compile_only, then one field changed in place: the FlatBuffers structure
  // stays valid, the meaning does not (row_end beyond the 785 x 16 matrix).
  const fs::path out = wse::test::fresh_dir(dir() / "streams");
  ASSERT_EQ(wse("run " + config("train_s.yaml", kTrain).string() + " --compile_only --out " + out.string()).code, 0);
  const fs::path good = out / "streams" / "fc1_fwd_col03.wsws";
  std::string bytes = slurp(good);
  // row_end of column 3 is 785 (0x311): the only such little-endian uint32 in the header fields.
  const std::string le785("\x11\x03\x00\x00", 4), le900("\x84\x03\x00\x00", 4);
  const size_t at = bytes.find(le785);
  ASSERT_NE(at, std::string::npos);
  bytes.replace(at, 4, le900);
  const fs::path bad = wse::test::write_file(dir() / "beyond.wsws", bytes);
  Output o = wse("inspect " + bad.string());
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find(bad.string()), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("field 'row_end': 900 is outside the 785 x 16 matrix"), std::string::npos) << o.text;
  EXPECT_EQ(wse("inspect " + good.string()).code, 0);
}

TEST(ReliabilityCli, AHugeFabricIsRefusedWithTheMemoryItWouldNeed) {
  const fs::path huge = config("huge.yaml", "machine: {preset: wse2, fabric_width: 65536, fabric_height: 65536}\ngemv: {rows: 100, cols: 100}\n");
  const fs::path out = wse::test::fresh_dir(dir() / "huge_out");
  Output o = wse("run " + huge.string() + " --out " + out.string());
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("huge.yaml: this run needs about"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("TiB of host memory, but only"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("65536x65536"), std::string::npos) << o.text;
  EXPECT_EQ(o.text.find("bad_alloc"), std::string::npos) << o.text;
  EXPECT_FALSE(fs::exists(out)) << "refused before anything was created";
  // The same through --max-memory on a run that would fit the machine, and a training run.
  Output small = wse("run " + config("gemv4.yaml", kGemv).string() + " --max-memory 64K --out " + out.string());
  EXPECT_EQ(small.code, 2) << small.text;
  EXPECT_NE(small.text.find("but only 64.0 KiB is available (--max-memory)"), std::string::npos) << small.text;
  std::string wide = kTrain;  // 2^40 weights in the middle layer
  wide.replace(wide.find("[784, 16, 10]"), 13, "[784, 1048576, 1048576, 10]");
  Output w = wse("run " + config("wide2.yaml", wide).string() + " --out " + out.string());
  EXPECT_EQ(w.code, 2) << w.text;
  EXPECT_NE(w.text.find("MemoryX store"), std::string::npos) << w.text;
}

TEST(ReliabilityCli, ThreadsPrintedAreThreadsUsed) {
  const fs::path out = wse::test::fresh_dir(dir() / "threads");
  Output o = wse("run " + config("gemv5.yaml", kGemv).string() + " --threads 1000 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
  // At most one worker per band of the mesh: the 5 rows are fewer than asked, so its 6 columns.
  EXPECT_EQ(r["threads"], 6);
  EXPECT_NE(o.text.find(", 6 thread(s)"), std::string::npos) << o.text;
}

TEST(ReliabilityCli, AWriteErrorMidRunNamesTheFileAndTheReason) {
  // A file-size limit the report fits under and a checkpoint does not (ulimit -f counts 1 KiB blocks in bash).
  const fs::path out = wse::test::fresh_dir(dir() / "efbig");
  Output o = wse::test::shell("bash -c 'ulimit -f 64; exec " + std::string(WSE_BINARY) + " run " + config("train_e.yaml", kTrain).string() +
                              " --out " + out.string() + "'");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("checkpoint " + (out / "checkpoints" / "step_3.safetensors").string() + ": cannot write it: File too large"),
            std::string::npos)
      << o.text;
  EXPECT_FALSE(fs::exists(out / "checkpoints" / "step_3.safetensors"));
  for (const auto& e : fs::directory_iterator(out / "checkpoints")) ADD_FAILURE() << "left behind: " << e.path();
}

TEST(ReliabilityCli, ADatasetThatContradictsItselfIsRefusedBeforeTraining) {
  const fs::path data = wse::test::fresh_dir(dir() / "data");
  fs::create_directories(data);
  for (const char* f : {"train-images-idx3-ubyte.gz", "train-labels-idx1-ubyte.gz", "t10k-images-idx3-ubyte.gz", "t10k-labels-idx1-ubyte.gz"})
    fs::copy_file(fs::path("/usr/share/datasets/fashion-mnist") / f, data / f);
  // Cut the images file: its header still says 60000 images, its gzip trailer no longer matches.
  fs::resize_file(data / "train-images-idx3-ubyte.gz", fs::file_size(data / "train-images-idx3-ubyte.gz") / 2);
  std::string cfg = kTrain;
  cfg.replace(cfg.find("data: {"), 7, "data: {dir: " + data.string() + ", ");
  const fs::path out = wse::test::fresh_dir(dir() / "data_out");
  Output o = wse("run " + config("data.yaml", cfg).string() + " --out " + out.string());
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("dataset file " + (data / "train-images-idx3-ubyte.gz").string() + ": the header says 60000 images of 28 x 28"),
            std::string::npos)
      << o.text;
  EXPECT_EQ(o.text.find("init:"), std::string::npos) << "built the model before checking the data:\n" << o.text;
  EXPECT_FALSE(fs::exists(out));
}

}  // namespace
