// `wse run` with a sparsity block, `--validate_only`, `--logging DEBUG` / `WARNING` and
// `wse finalize-checkpoint`, as a user meets them.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>

#include "cli_support.hpp"

namespace {

namespace fs = std::filesystem;
using wse::test::Output;
using wse::test::wse;

fs::path dir() { return wse::test::scratch_dir("wse_sparsity_cli_test"); }

fs::path write(const std::string& name, const std::string& yaml) { return wse::test::write_file(dir() / name, yaml); }

std::string base(const std::string& training = "{batch_size: 16, max_steps: 1}") {
  return "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
         "data: {train_samples: 32, eval_samples: 0}\noptimizer: {kind: sgd, lr: 0.1}\ntraining: " + training + "\n";
}
const std::string kBase = base();
const std::string kSparse = kBase + "sparsity:\n  sparsity: 0.8\n  init_method: topk\n  seed: 11\n";

nlohmann::json run(const std::string& name, const std::string& yaml, const std::string& extra = "") {
  const fs::path out = dir() / (name + "_out");
  fs::remove_all(out);
  Output o = wse("run " + write(name + ".yaml", yaml).string() + " --threads 2 --out " + out.string() + " " + extra);
  EXPECT_EQ(o.code, 0) << o.text;
  return nlohmann::json::parse(std::ifstream(out / "report.json"));
}

// A sparse wavelet holds a 16-bit value and its 16-bit position, so a sparse run in fp32
// precision streams fp16 weights: the run says so, and names the wire format in the report (it
// said neither before 2026-11-29: a helper audit found the two runs below differ). The same
// model streamed dense carries fp32 weights: the same masks and the same MACs, the loss moved
// only by the weights' rounding.
TEST(SparsityCli, AnFp32SparseRunSaysItsWeightsCrossAsFp16) {
  const fs::path a = dir() / "wire_sparse", b = dir() / "wire_dense";
  fs::remove_all(a), fs::remove_all(b);
  Output s = wse("run " + write("wire_sparse.yaml", kSparse).string() + " --out " + a.string());
  ASSERT_EQ(s.code, 0) << s.text;
  Output d = wse("run " + write("wire_dense.yaml", kSparse + "weights: {encoding: dense}\n").string() + " --out " + b.string());
  ASSERT_EQ(d.code, 0) << d.text;
  EXPECT_NE(s.text.find("each weight crosses the fabric as fp16"), std::string::npos) << s.text;
  EXPECT_EQ(d.text.find("crosses the fabric as fp16"), std::string::npos) << d.text;
  const nlohmann::json js = nlohmann::json::parse(std::ifstream(a / "report.json"));
  const nlohmann::json jd = nlohmann::json::parse(std::ifstream(b / "report.json"));
  EXPECT_EQ(js["weights_on_the_wire"], "sparse fp16+index");
  EXPECT_EQ(jd["weights_on_the_wire"], "dense fp32");
  for (int l = 0; l < 2; ++l) EXPECT_EQ(js["sparsity"]["params"][l]["pruned"], jd["sparsity"]["params"][l]["pruned"]) << l;
  const double ls = js["loss_per_step"][0], ld = jd["loss_per_step"][0];
  EXPECT_NE(ls, ld);                           // fp16 weights are not fp32 weights
  EXPECT_LT(std::abs(ls - ld), 1e-3 * ld);     // fp16 keeps 11 significant bits
  // Mixed precision streams fp16 weights whatever the encoding: nothing to add.
  const fs::path c = dir() / "wire_mixed";
  fs::remove_all(c);
  Output m = wse("run " + write("wire_mixed.yaml", base("{batch_size: 16, max_steps: 1, precision: mixed}") +
                                                       "sparsity:\n  sparsity: 0.8\n  init_method: topk\n  seed: 11\n").string() +
                 " --out " + c.string());
  ASSERT_EQ(m.code, 0) << m.text;
  EXPECT_EQ(m.text.find("crosses the fabric as fp16"), std::string::npos) << m.text;
  EXPECT_EQ(nlohmann::json::parse(std::ifstream(c / "report.json"))["weights_on_the_wire"], "sparse fp16+index");
}

TEST(SparsityCli, ASparseRunReportsFewerMacsWaveletsAndCycles) {
  const nlohmann::json d = run("dense", kBase), s = run("sparse", kSparse);
  // fc1.weight: round(0.8 * 784 * 16) = round(10035.2) pruned; fc2.weight: round(0.8 * 160) = 128.
  ASSERT_EQ(s["sparsity"]["params"].size(), 2u);
  EXPECT_EQ(s["sparsity"]["params"][0]["name"], "fc1.weight");
  EXPECT_EQ(s["sparsity"]["params"][0]["pruned"], 10035);
  EXPECT_EQ(s["sparsity"]["params"][1]["pruned"], 128);
  EXPECT_EQ(s["encoding"], "sparse");
  EXPECT_EQ(d["sparsity"]["params"].size(), 0u);
  for (int l = 0; l < 2; ++l) {
    const auto &fd = d["layers"][l]["forward"], &fs_ = s["layers"][l]["forward"];
    // Every pruned weight is one wavelet never sent and one AXPY over the wafer's 16 samples never run.
    const uint64_t pruned = s["sparsity"]["params"][l]["pruned"];
    EXPECT_EQ(fd["wavelets_streamed"].get<uint64_t>() - fs_["wavelets_streamed"].get<uint64_t>(), pruned) << l;
    EXPECT_EQ(fd["macs"].get<uint64_t>() - fs_["macs"].get<uint64_t>(), pruned * 16) << l;
    EXPECT_LT(fs_["cycles"].get<uint64_t>(), fd["cycles"].get<uint64_t>()) << l;
  }
  EXPECT_LT(s["wafer_cycles"].get<uint64_t>(), d["wafer_cycles"].get<uint64_t>());
  EXPECT_TRUE(s["init"]["lazy_initialization"].get<bool>());
  EXPECT_GT(s["time_to_first_loss_seconds"].get<double>(), 0.0);
  EXPECT_GT(s["peak_rss_bytes"].get<uint64_t>(), 0u);
}

TEST(SparsityCli, ValidateOnlyListsWhatWouldBeSparsified) {
  Output o = wse("run " + write("v.yaml", kSparse + "  param_name_patterns: {fc2.weight: {sparsity: 0.5}, fc1: , nothing: }\n").string() +
                 " --validate_only");
  ASSERT_EQ(o.code, 0) << o.text;
  // 'fc1' also matches the bias: an explicit pattern overrides the default exclusion of vectors.
  EXPECT_NE(o.text.find("sparsity: 3 of 4 parameters selected, 3 with weights pruned"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("fc1.bias               16  level 0.8 topk   seed 12: 13 pruned, 3 kept  (pattern fc1)"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("fc1.weight          12544  level 0.8 topk   seed 11: 10035 pruned, 2509 kept"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("fc2.weight            160  level 0.5 topk   seed 13: 80 pruned, 80 kept"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("warning: sparsity: pattern 'nothing' matches no parameter"), std::string::npos) << o.text;
  EXPECT_EQ(o.text.find("debug:"), std::string::npos) << o.text;
}

// What the listing and the report call each parameter (a helper audit, 2026-11-28): a level
// printed "%.4g" read 0.9999999 as "level 1", which the loader refuses; from_zeros showed a
// level it does not use; a parameter that prunes nothing (its level rounds to no weight, or it
// has no zeros) was counted among the sparsified with the rest.
TEST(SparsityCli, TheListingAndTheReportSayWhatEachParameterPruned) {
  const std::string yaml = kBase +
                           "sparsity:\n  init_method: random\n  param_name_patterns:\n    fc1.weight: {sparsity: 0.9999999}\n"
                           "    fc2.weight: {sparsity: 0.001}\n    fc2.bias: {sparsity: 0.5, init_method: from_zeros}\n";
  Output o = wse("run " + write("labels.yaml", yaml).string() + " --validate_only");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("sparsity: 3 of 4 parameters selected, 1 with weights pruned"), std::string::npos) << o.text;
  // round(0.9999999 x 12544) = 12544; round(0.001 x 160) = 0; the biases start non-zero.
  EXPECT_NE(o.text.find("fc1.weight          12544  level 0.9999999 random seed 1: 12544 pruned, 0 kept"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("fc2.weight            160  level 0.001 random seed 3: 0 pruned, 160 kept"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("fc2.bias               10  from_zeros (its zero weights), seed 4: 0 pruned, 10 kept"), std::string::npos) << o.text;
  EXPECT_EQ(o.text.find("level 1 "), std::string::npos) << o.text;
  const nlohmann::json r = run("labels", yaml, "--logging DEBUG");
  const nlohmann::json& sp = r["sparsity"];
  EXPECT_EQ(sp["params_with_pruned_weights"], 1);
  ASSERT_EQ(sp["params"].size(), 3u);
  EXPECT_EQ(sp["params"][0]["level"].get<double>(), 0.9999999);
  EXPECT_EQ(sp["params"][0]["achieved_level"].get<double>(), 1.0);
  EXPECT_EQ(sp["params"][1]["achieved_level"].get<double>(), 0.0);
  EXPECT_TRUE(sp["params"][2]["level"].is_null()) << sp["params"][2];  // the config's 0.5, which from_zeros ignores
  EXPECT_EQ(sp["params"][2]["achieved_level"].get<double>(), 0.0);
  EXPECT_EQ(sp["pruned"], 12544);
}

TEST(SparsityCli, LoggingDebugLogsEachParameterAsItIsSparsified) {
  const fs::path out = wse::test::fresh_dir(dir() / "debug_out");
  Output o = wse("run " + write("d.yaml", kSparse).string() + " --out " + out.string() + " --logging DEBUG");
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("debug: sparsity: fc1.weight [12544] topk level 0.8 seed 11: 10035 pruned, 2509 kept"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("debug: sparsity: fc2.weight [160] topk level 0.8 seed 13: 128 pruned, 32 kept"), std::string::npos) << o.text;
  Output bad = wse("run " + write("d.yaml", kSparse).string() + " --logging LOUD");
  EXPECT_EQ(bad.code, 2) << bad.text;
}

// `--logging WARNING` printed what INFO prints (the forty-fifth round's audit): nothing logged at
// the info level. A training run's progress lines (init, a line per log_every steps, each
// checkpoint) are info now; the header, the warnings and the results stay.
TEST(SparsityCli, LoggingWarningLeavesOutTheProgressLines) {
  const std::string yaml = base("{batch_size: 16, max_steps: 2, log_every: 1, checkpoint_every: 1}") +
                           "sparsity:\n  sparsity: 0.8\n  param_name_patterns: {fc1.weight: , nothing: }\n";
  std::string text[2];
  for (int warning = 0; warning < 2; ++warning) {
    const fs::path out = wse::test::fresh_dir(dir() / ("warning_out" + std::to_string(warning)));
    Output o = wse("run " + write("w.yaml", yaml).string() + " --threads 1 --out " + out.string() + (warning ? " --logging warning" : ""));
    ASSERT_EQ(o.code, 0) << o.text;
    EXPECT_TRUE(fs::exists(out / "checkpoints" / "step_1.safetensors")) << "the checkpoints are written all the same";
    text[warning] = o.text;
    for (const char* kept : {"wse: fc_train 784 -> 16 -> 10", "warning: sparsity: pattern 'nothing' matches no parameter", "s per step on the host"})
      EXPECT_NE(o.text.find(kept), std::string::npos) << kept << "\n" << o.text;
  }
  for (const char* info : {"  init: ", "  step     1  epoch 1", "  step     2  epoch 1", "  checkpoint ", "step_2.safetensors"}) {
    EXPECT_NE(text[0].find(info), std::string::npos) << "INFO: " << info << "\n" << text[0];
    EXPECT_EQ(text[1].find(info), std::string::npos) << "WARNING: " << info << "\n" << text[1];
  }
}

TEST(SparsityCli, FinalizeCheckpointLeavesAStandardDenseCheckpoint) {
  const fs::path out = dir() / "ckpt_out";
  fs::remove_all(out);
  ASSERT_EQ(wse("run " + write("c.yaml", kSparse).string() + " --out " + out.string()).code, 0);
  const fs::path sparse = out / "checkpoints" / "step_1.safetensors", dense = out / "final" / "dense.safetensors";
  const std::string reader = std::string("python3 ") + WSE_SOURCE_DIR + "/tests/tools/read_safetensors.py ";
  Output before = wse::test::shell(reader + sparse.string());
  EXPECT_NE(before.text.find("fc1.weight [784, 16]"), std::string::npos) << before.text;
  EXPECT_NE(before.text.find("nan=10035"), std::string::npos) << before.text;  // weight and momentum

  // A dense run cannot resume from the sparse checkpoint, and says why.
  Output refused = wse("run " + write("r1.yaml", base("{batch_size: 16, max_steps: 2, resume_from: " + sparse.string() + "}")).string() +
                       " --out " + wse::test::fresh_dir(dir() / "r1_out").string());
  EXPECT_EQ(refused.code, 2) << refused.text;
  EXPECT_NE(refused.text.find("no 'sparsity' block"), std::string::npos) << refused.text;

  Output f = wse("finalize-checkpoint --input " + sparse.string() + " --output " + dense.string());
  ASSERT_EQ(f.code, 0) << f.text;
  EXPECT_NE(f.text.find("fc1.weight               10035 of its 12544 values were sentinels (pruned weights), now 0"), std::string::npos) << f.text;
  Output after = wse::test::shell(reader + dense.string());
  EXPECT_EQ(after.code, 0) << after.text;
  // Every one of the 8 tensors (4 parameters and their momenta) without a NaN left.
  size_t clean = 0;
  for (size_t at = after.text.find(" nan=0\n"); at != std::string::npos; at = after.text.find(" nan=0\n", at + 1)) ++clean;
  EXPECT_EQ(clean, 8u) << after.text;
  EXPECT_FALSE(std::regex_search(after.text, std::regex("nan=[1-9]"))) << after.text;
  EXPECT_NE(after.text.find("ok: 8 tensors, step 1"), std::string::npos) << after.text;

  // The finalized one resumes a dense run.
  Output resumed = wse("run " + write("r2.yaml", base("{batch_size: 16, max_steps: 2, resume_from: " + dense.string() + "}")).string() +
                       " --out " + wse::test::fresh_dir(dir() / "r2_out").string());
  EXPECT_EQ(resumed.code, 0) << resumed.text;

  Output missing = wse("finalize-checkpoint --input " + (dir() / "nope.safetensors").string() + " --output " + dense.string());
  EXPECT_EQ(missing.code, 2) << missing.text;
  EXPECT_NE(missing.text.find("nope.safetensors"), std::string::npos) << missing.text;
}

}  // namespace
