// `wse run` on a training config: validate, compile, train, and the errors users meet.
#include <gtest/gtest.h>

#include "cli_support.hpp"

#include <array>
#include <cstdio>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>

namespace {

namespace fs = std::filesystem;
using wse::test::Output;
using wse::test::wse;

fs::path dir() { return wse::test::scratch_dir("wse_train_cli_test"); }

fs::path write(const std::string& name, const std::string& yaml) { return wse::test::write_file(dir() / name, yaml); }

const char* kSmall =
    "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
    "data: {train_samples: 96, eval_samples: 32}\ntraining: {batch_size: 16, log_every: 2, checkpoint_every: 3}\n"
    "optimizer: {kind: adam, lr: 0.01}\n";

TEST(TrainCli, TrainsPrintsLossAndAccuracyAndWritesTheReport) {
  fs::path out = dir() / "train_out";
  fs::remove_all(out);
  Output o = wse("run " + write("small.yaml", kSmall).string() + " --threads 2 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  EXPECT_NE(o.text.find("step     6"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("test accuracy"), std::string::npos) << o.text;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(out / "report.json"));
  EXPECT_EQ(j["steps"], 6);
  EXPECT_EQ(j["loss_per_step"].size(), 6u);
  EXPECT_EQ(j["skipped_updates"], 0);  // no gradient overflowed (docs/fc-mapping.md)
  // Two workers, one per row: the fraction of the cycle-level runs each waited at the barrier.
  EXPECT_EQ(j["threads_detail"]["workers_per_wafer"], 2);
  ASSERT_EQ(j["threads_detail"]["waiting"].size(), 2u);
  for (const auto& f : j["threads_detail"]["waiting"]) EXPECT_TRUE(f.get<double>() >= 0 && f.get<double>() <= 1) << f;
  ASSERT_EQ(j["layers"].size(), 2u);
  for (const auto& l : j["layers"])
    for (const char* pass : {"forward", "backward"})
      for (const char* key : {"cycles", "macs", "macs_skipped", "wavelets_streamed", "memoryx_bytes", "stream_bound_cycles", "compute_bound_cycles"})
        EXPECT_TRUE(l[pass].contains(key)) << pass << " " << key;
  // fc1 forward: every weight of the 785 x 16 matrix (bias folded in) x every sample, per step.
  EXPECT_EQ(j["layers"][0]["forward"]["macs"], 785 * 16 * 16 * 6);
  EXPECT_TRUE(j.contains("test_accuracy"));
  EXPECT_TRUE(fs::exists(out / "checkpoints" / "step_3.safetensors"));
  EXPECT_TRUE(fs::exists(out / "checkpoints" / "step_6.safetensors"));
  // An independent reader (Python standard library only) opens the checkpoint.
  Output py = wse::test::shell(std::string("python3 ") + WSE_SOURCE_DIR + "/tests/tools/read_safetensors.py " +
                               (out / "checkpoints" / "step_6.safetensors").string());
  EXPECT_EQ(py.code, 0) << py.text;
  EXPECT_NE(py.text.find("ok: 12 tensors, step 6"), std::string::npos) << py.text;  // 4 params + 8 Adam states
  EXPECT_NE(py.text.find("fc1.weight.exp_avg_sq [784, 16]"), std::string::npos) << py.text;
}

// An epoch's test pass sees the weights of the epoch's last step: a run of one epoch scores the
// same at its end. (The next epoch's first step had been handed to the cluster before the test
// pass, which waits for every step handed over: epoch 1 was scored after step 5, not 4, and step
// 5 counted 0 wafer cycles, left out of the run's wafer time.) Found by a user audit.
// Found by a mutation test: the functional step's argmax giving a tie to the last class passed
// every test (their logits never tie), while the PE program gives it to the first. All-zero
// weights make every logit 0, so both must predict class 0: the first 32 labels of Fashion-MNIST's
// test set hold two 0s (read with Python's gzip: 9 2 1 1 6 1 4 6 5 7 4 5 7 3 4 1 2 4 8 0 2 5 7 9 1
// 4 6 0 9 3 8 8), so 2 of 32, cycle by cycle and functionally.
TEST(TrainCli, TiedLogitsGoToTheFirstClassOnTheMeshAndFunctionally) {
  for (const char* detail : {"all", "none"}) {
    const std::string yaml = std::string(
                                 "machine: wse2\nmesh: {width: 4, height: 4}\nkernel: fc_train\n"
                                 "model: {layers: [784, 16, 10], init: {weight: {kind: zeros}, bias: {kind: zeros}}}\n"
                                 "data: {train_samples: 16, eval_samples: 32}\noptimizer: {kind: sgd, lr: 0.0}\n"
                                 "training: {batch_size: 16, max_steps: 1, detail: ") +
                             detail + "}\n";
    const fs::path out = dir() / (std::string("ties_") + detail);
    fs::remove_all(out);
    Output o = wse("run " + write(std::string("ties_") + detail + ".yaml", yaml).string() + " --threads 1 --out " + out.string());
    ASSERT_EQ(o.code, 0) << o.text;
    const nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
    EXPECT_EQ(r["test_accuracy"].get<double>(), 2.0 / 32.0) << "training.detail " << detail;
    // Every logit 0: each sample's loss is ln 10, and so is their mean (found by a mutation test:
    // the test loss summed a batch's mean loss once per batch, 1/16 of this).
    EXPECT_NEAR(r["test_loss"].get<double>(), std::log(10.0), 1e-5) << "training.detail " << detail;
  }
}

// The loss scale is taken off every gradient, the biases' too (found by a mutation test: a bias
// gradient left scaled by 1024 passed every test; the second step's loss was 3.36 for 2.30): in
// mixed precision the losses at a scale of 1024 are those at 1, to fp16's rounding of the scaled
// gradients.
TEST(TrainCli, TheLossScaleIsTakenOffEveryGradient) {
  std::vector<double> losses[2];
  for (int scaled = 0; scaled < 2; ++scaled) {
    const std::string yaml = std::string(
                                 "machine: wse2\nmesh: {width: 4, height: 4}\nkernel: fc_train\nmodel: {layers: [784, 32, 10]}\n"
                                 "data: {train_samples: 48, eval_samples: 0, shuffle: false}\noptimizer: {kind: sgd, lr: 0.01}\n"
                                 "training: {batch_size: 16, precision: mixed, detail: none, loss_scale: ") +
                             (scaled ? "1024" : "1") + "}\n";
    const fs::path out = dir() / (std::string("loss_scale_") + (scaled ? "1024" : "1"));
    fs::remove_all(out);
    Output o = wse("run " + write(std::string("loss_scale_") + (scaled ? "1024" : "1") + ".yaml", yaml).string() + " --threads 1 --out " +
                   out.string());
    ASSERT_EQ(o.code, 0) << o.text;
    const nlohmann::json r = nlohmann::json::parse(std::ifstream(out / "report.json"));
    for (const auto& l : r["loss_per_step"]) losses[scaled].push_back(l.get<double>());
  }
  ASSERT_EQ(losses[0].size(), 3u);
  for (size_t k = 0; k < 3; ++k) EXPECT_NEAR(losses[1][k], losses[0][k], 1e-3) << "step " << k + 1;
}

TEST(TrainCli, AnEpochsTestPassScoresThatEpochsWeights) {
  const std::string base =
      "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
      "data: {train_samples: 64, eval_samples: 32}\noptimizer: {kind: adam, lr: 0.01}\n";
  const fs::path three = dir() / "epochs3", one = dir() / "epochs1";
  fs::remove_all(three), fs::remove_all(one);
  Output o = wse("run " + write("epochs3.yaml", base + "training: {batch_size: 16, epochs: 3, detail: all}\n").string() + " --out " +
                 three.string());
  ASSERT_EQ(o.code, 0) << o.text;
  Output p = wse("run " + write("epochs1.yaml", base + "training: {batch_size: 16, epochs: 1, detail: all}\n").string() + " --out " +
                 one.string());
  ASSERT_EQ(p.code, 0) << p.text;
  const nlohmann::json a = nlohmann::json::parse(std::ifstream(three / "report.json"));
  const nlohmann::json b = nlohmann::json::parse(std::ifstream(one / "report.json"));
  ASSERT_EQ(a["test_accuracy_per_epoch"].size(), 3u);
  const nlohmann::json& first = a["test_accuracy_per_epoch"][0];
  EXPECT_EQ(first["step"], 4);
  EXPECT_EQ(first["test_loss"], b["test_loss"]);  // bit for bit: the same weights, the same test batches
  EXPECT_EQ(first["test_accuracy"], b["test_accuracy"]);
  // Every step takes wafer cycles, the first of an epoch included; the run's wafer time is their sum.
  const nlohmann::json& m = a["detail"]["measured"];
  EXPECT_GT(m["cycles_per_step_min"].get<uint64_t>(), 0u) << m;
  EXPECT_GE(m["cycles_per_step_min"].get<double>(), 0.9 * m["cycles_per_step_max"].get<double>()) << m;
  // The timeline counts each step from where the step's cycles count: the first step of epochs 2
  // and 3 from its epoch's test pass, so it starts empty as step 1 does and takes its cycles (it
  // counted the test pass too, before 2026-11-29). The mean is not truncated.
  const nlohmann::json& tl = a["timeline"];
  ASSERT_EQ(tl.size(), 12u);
  uint64_t sum = 0;
  for (const auto& t : tl) sum += t["cycles"].get<uint64_t>();
  EXPECT_EQ(tl[4]["cycles"], tl[0]["cycles"]) << tl[4].dump();
  EXPECT_EQ(tl[8]["cycles"], tl[0]["cycles"]) << tl[8].dump();
  EXPECT_GT(tl[4]["start"].get<uint64_t>(), tl[3]["end"].get<uint64_t>());  // the test pass lies between
  EXPECT_EQ(a["detail"]["projected"]["total_cycles"].get<uint64_t>(), sum);
  EXPECT_EQ(a["wafer_cycles_per_step"].get<double>(), double(sum) / 12.0);
  EXPECT_EQ(m["cycles_per_step_mean"].get<double>(), double(sum) / 12.0);
}

// A test set smaller than a batch scores nothing, so there is no test pass between epochs, and
// the pipeline runs on as with no test set: the first step of epoch 2 had not been handed over
// (a test pass must see its epoch's weights) and took 850 more cycles on a helper audit's run.
TEST(TrainCli, ATestSetSmallerThanABatchDoesNotBreakThePipeline) {
  const std::string base =
      "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
      "optimizer: {kind: adam, lr: 0.01}\ntraining: {batch_size: 16, epochs: 2, detail: all}\n";
  const fs::path none = dir() / "eval0", small = dir() / "eval8";
  fs::remove_all(none), fs::remove_all(small);
  Output a = wse("run " + write("eval0.yaml", base + "data: {train_samples: 64, eval_samples: 0}\n").string() + " --out " + none.string());
  ASSERT_EQ(a.code, 0) << a.text;
  Output b = wse("run " + write("eval8.yaml", base + "data: {train_samples: 64, eval_samples: 8}\n").string() + " --out " + small.string());
  ASSERT_EQ(b.code, 0) << b.text;
  EXPECT_NE(b.text.find("note: data.eval_samples (8) is less than one batch (16): no test pass runs"), std::string::npos) << b.text;
  const nlohmann::json ja = nlohmann::json::parse(std::ifstream(none / "report.json"));
  const nlohmann::json jb = nlohmann::json::parse(std::ifstream(small / "report.json"));
  EXPECT_EQ(jb["test_samples"], 0);
  // Nothing scored: null, not a 0% that reads as a measurement (found by a training-maths audit).
  for (const nlohmann::json* j : {&ja, &jb}) {
    EXPECT_TRUE((*j)["test_accuracy"].is_null()) << (*j)["test_accuracy"];
    EXPECT_TRUE((*j)["test_loss"].is_null()) << (*j)["test_loss"];
  }
  EXPECT_TRUE(jb["test_accuracy_per_epoch"].empty());
  ASSERT_EQ(jb["timeline"].size(), 8u);
  for (size_t k = 0; k < 8; ++k) EXPECT_EQ(jb["timeline"][k]["cycles"], ja["timeline"][k]["cycles"]) << "step " << k + 1;
  EXPECT_EQ(jb["wafer_cycles"], ja["wafer_cycles"]);
  EXPECT_LT(ja["timeline"][4]["cycles"].get<uint64_t>(), ja["timeline"][0]["cycles"].get<uint64_t>());  // handed over: no fresh start
}

// A run that diverges says so (found by a reports audit: at lr 100 the loss went NaN from step 3,
// the test accuracy was scored on NaN logits, and nothing was said; exit 0 is right, the run ran).
TEST(TrainCli, ADivergedRunSaysSoAndWhere) {
  const fs::path out = wse::test::fresh_dir(dir() / "diverged");
  Output o = wse("run " + write("diverged.yaml", "machine: wse2\nmesh: {width: 4, height: 4}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
                                                 "data: {train_samples: 64, eval_samples: 32}\ntraining: {batch_size: 16, epochs: 2, precision: mixed}\n"
                                                 "optimizer: {kind: sgd, lr: 100}\n").string() +
                 " --threads 1 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(out / "report.json"));
  ASSERT_FALSE(j["first_non_finite_loss_step"].is_null()) << j["loss_per_step"];
  const uint64_t first = j["first_non_finite_loss_step"].get<uint64_t>();
  uint64_t nulls = 0;
  for (size_t k = 0; k < j["loss_per_step"].size(); ++k) {
    nulls += j["loss_per_step"][k].is_null();
    EXPECT_EQ(j["loss_per_step"][k].is_null() && nulls == 1, k + 1 == first) << k;  // the first null is that step's
  }
  EXPECT_NE(o.text.find("warning: the loss was not finite (NaN or infinite) in " + std::to_string(nulls) + " of 8 step(s), first at step " +
                        std::to_string(first)),
            std::string::npos)
      << o.text;
  if (j["skipped_updates"].get<uint64_t>()) {
    EXPECT_NE(o.text.find("note: MemoryX skipped " + std::to_string(j["skipped_updates"].get<uint64_t>()) + " layer update(s)"), std::string::npos);
  }
  // A healthy run says nothing of the kind, and writes null.
  const fs::path ok = wse::test::fresh_dir(dir() / "healthy");
  Output h = wse("run " + write("healthy.yaml", "machine: wse2\nmesh: {width: 4, height: 4}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
                                                "data: {train_samples: 32, eval_samples: 16}\ntraining: {batch_size: 16}\n").string() +
                 " --threads 1 --out " + ok.string());
  ASSERT_EQ(h.code, 0) << h.text;
  EXPECT_EQ(h.text.find("warning: the loss"), std::string::npos) << h.text;
  EXPECT_TRUE(nlohmann::json::parse(std::ifstream(ok / "report.json"))["first_non_finite_loss_step"].is_null());
}

// With training.detail: none the report's detail block has the same keys, null where no step ran
// cycle by cycle (`projected` was a string and `measured` missing: a reader of
// detail.projected.total_cycles broke; found by a reports audit).
TEST(TrainCli, TheDetailBlockHasTheSameKeysWhateverThePolicy) {
  const std::string base = "machine: wse2\nmesh: {width: 4, height: 4}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
                           "data: {train_samples: 32, eval_samples: 0}\n";
  const fs::path none = wse::test::fresh_dir(dir() / "detail_none"), all = wse::test::fresh_dir(dir() / "detail_all");
  ASSERT_EQ(wse("run " + write("detail_none.yaml", base + "training: {batch_size: 16, detail: none}\n").string() + " --threads 1 --out " + none.string()).code, 0);
  ASSERT_EQ(wse("run " + write("detail_all.yaml", base + "training: {batch_size: 16, detail: all}\n").string() + " --threads 1 --out " + all.string()).code, 0);
  const nlohmann::json n = nlohmann::json::parse(std::ifstream(none / "report.json"))["detail"];
  const nlohmann::json a = nlohmann::json::parse(std::ifstream(all / "report.json"))["detail"];
  for (const char* block : {"measured", "projected"}) {
    ASSERT_TRUE(n[block].is_object()) << block << ": " << n[block];
    for (const auto& [key, value] : a[block].items()) {
      ASSERT_TRUE(n[block].contains(key)) << block << "." << key;
      if (key != "how") {
        EXPECT_TRUE(n[block][key].is_null()) << block << "." << key << ": " << n[block][key];
      }
    }
  }
  EXPECT_NE(n["projected"]["how"].get<std::string>().find("no step ran cycle by cycle"), std::string::npos);
  // The SRAM high water too: with no step on the PEs it was their variables' 136 bytes, read as the
  // model's need (a scale audit, forty-fourth round); with one, the plan's peak.
  const nlohmann::json rn = nlohmann::json::parse(std::ifstream(none / "report.json"));
  const nlohmann::json ra = nlohmann::json::parse(std::ifstream(all / "report.json"));
  EXPECT_TRUE(rn["sram_high_water_bytes"].is_null()) << rn["sram_high_water_bytes"];
  EXPECT_GT(ra["sram_high_water_bytes"].get<uint32_t>(), 1000u) << ra["sram_high_water_bytes"];
  // And the engine's speed: with no cycle-level run it was 0.0 tile-cycles a second, read as a
  // speed (a review, forty-fifth round); null, beside engine_cycles 0.
  EXPECT_EQ(rn["engine_cycles"], 0) << rn.dump();
  EXPECT_TRUE(rn["tile_cycles_per_second"].is_null()) << rn["tile_cycles_per_second"];
  EXPECT_GT(ra["tile_cycles_per_second"].get<double>(), 0.0) << ra["tile_cycles_per_second"];
}

// With the output layer's weights kept on the wafer, its backward pass takes no bytes from
// MemoryX: the report counted them as if streamed. The weights still enter the mesh at the edge
// (wavelets_streamed is unchanged). Found by a user audit.
TEST(TrainCli, ARetainedLayerTakesNoMemoryXBytes) {
  const std::string base =
      "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
      "data: {train_samples: 48, eval_samples: 0}\noptimizer: {kind: sgd, lr: 0.1}\n";
  nlohmann::json r[2];
  for (bool retain : {false, true}) {
    const fs::path out = dir() / (retain ? "retained" : "streamed");
    fs::remove_all(out);
    const std::string training = std::string("training: {batch_size: 16, detail: all, retain_last_layer: ") + (retain ? "true" : "false") + "}\n";
    Output o = wse("run " + write(retain ? "retained.yaml" : "streamed.yaml", base + training).string() + " --out " + out.string());
    ASSERT_EQ(o.code, 0) << o.text;
    r[retain] = nlohmann::json::parse(std::ifstream(out / "report.json"));
  }
  const nlohmann::json &s = r[0]["layers"][1]["backward"], &k = r[1]["layers"][1]["backward"];
  EXPECT_EQ(s["memoryx_bytes"], 4 * s["wavelets_streamed"].get<uint64_t>());
  EXPECT_GT(s["memoryx_bytes"].get<uint64_t>(), 0u);
  EXPECT_EQ(k["memoryx_bytes"], 0);
  EXPECT_EQ(k["wavelets_streamed"], s["wavelets_streamed"]);
  EXPECT_EQ(r[1]["layers"][0]["backward"]["memoryx_bytes"], r[0]["layers"][0]["backward"]["memoryx_bytes"]);  // fc1 streams as before
  EXPECT_EQ(r[1]["cluster"]["layers"][1]["backward_stream_bytes"], 0);
  EXPECT_EQ(r[1]["cluster"]["retain_last_layer"]["stream_bytes_per_step"], r[0]["cluster"]["layers"][1]["backward_stream_bytes"]);
  // The MemoryX link's cycles those bytes would take, rounded up (a mutation test's survivor,
  // forty-fourth round: rounded down, a cycle short, passed): the bytes at the preset's rate.
  const double bytes = r[0]["cluster"]["layers"][1]["backward_stream_bytes"].get<double>();
  const double rate = r[1]["cluster"]["memoryx_bytes_per_cycle"].get<double>();
  ASSERT_NE(std::fmod(bytes, rate), 0.0) << "the bytes are a whole number of cycles: the case cannot tell up from down";
  EXPECT_EQ(r[1]["cluster"]["retain_last_layer"]["memoryx_link_cycles_per_step"].get<uint64_t>(), uint64_t(std::ceil(bytes / rate)));
  EXPECT_EQ(r[1]["loss_per_step"], r[0]["loss_per_step"]);
}

// training.checkpoint_dir naming --out by a link made before --out existed: one folder, one
// record, as when it names --out itself (a second lock on the folder was refused as "in use by
// another wse run": a review, forty-sixth round).
TEST(TrainCli, ACheckpointDirLinkedToOutIsOut) {
  const fs::path out = wse::test::fresh_dir(dir() / "linked_out"), link = dir() / "linked_ckpt";
  fs::remove(link);
  fs::create_directory_symlink(out, link);
  const std::string yaml = "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
                           "data: {train_samples: 16, eval_samples: 0}\noptimizer: {kind: sgd, lr: 0.1}\n"
                           "training: {batch_size: 16, checkpoint_dir: " + link.string() + "}\n";
  Output o = wse("run " + write("linked.yaml", yaml).string() + " --threads 1 --out " + out.string());
  EXPECT_EQ(o.code, 0) << o.text;
  EXPECT_TRUE(fs::exists(out / "step_1.safetensors")) << o.text;
  EXPECT_TRUE(fs::exists(out / "report.json"));
  fs::remove(link);
}

// The report's `cluster` block gives the cluster figures in force, the two latencies of the
// input path among them (a forty-fifth round audit: they were only in the machine preset).
TEST(TrainCli, TheClusterBlockGivesTheInputPathsLatencies) {
  const fs::path out = wse::test::fresh_dir(dir() / "latencies");
  const std::string yaml =
      "machine: {preset: wse2, input_latency_cycles: 123, user_node_latency_cycles: 4567, swarmx_latency_cycles: 89}\n"
      "mesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
      "data: {train_samples: 16, eval_samples: 0}\noptimizer: {kind: sgd, lr: 0.1}\ntraining: {batch_size: 16}\n";
  Output o = wse("run " + write("latencies.yaml", yaml).string() + " --threads 1 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json c = nlohmann::json::parse(std::ifstream(out / "report.json"))["cluster"];
  EXPECT_EQ(c["input_latency_cycles"], 123) << c.dump();
  EXPECT_EQ(c["user_node_latency_cycles"], 4567) << c.dump();
  EXPECT_EQ(c["swarmx_latency_cycles"], 89) << c.dump();
}

// A training.resume_from run is a new run: its epochs (the data order, the epoch test passes,
// the epoch it logs) count from its own first step, and a --resume of it from where that run
// began. They counted from step 0 (a cluster audit, forty-sixth round): from a step-1 checkpoint
// with 2-step epochs, the "epoch" test passes ran after the run's 1st and 3rd steps, and with
// data.shuffle an epoch saw some samples twice and others not at all. At lr 0 the weights stay
// the initial ones, so a step's loss names its batch: the new run's losses must be the fresh
// run's, batch for batch.
TEST(TrainCli, AResumeFromRunCountsItsEpochsFromItsOwnFirstStep) {
  const std::string base =
      "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
      "data: {train_samples: 32, eval_samples: 16, shuffle: true}\noptimizer: {kind: sgd, lr: 0}\n";
  auto report = [&](const std::string& name, const std::string& training, const std::string& extra = "") {
    const fs::path out = wse::test::fresh_dir(dir() / name);
    Output o = wse("run " + write(name + ".yaml", base + "training: {batch_size: 16, epochs: 2, detail: none, checkpoint_every: 1" + training +
                                                      "}\n").string() +
                   " --threads 1 --out " + out.string() + extra);
    EXPECT_EQ(o.code, 0) << o.text;
    return std::pair{nlohmann::json::parse(std::ifstream(out / "report.json")), o.text};
  };
  const auto [fresh, fresh_text] = report("epochs_fresh", "");
  ASSERT_EQ(fresh["loss_per_step"].size(), 4u) << fresh.dump();
  ASSERT_NE(fresh["loss_per_step"][0], fresh["loss_per_step"][1]) << "two batches with one loss: the case cannot tell them apart";
  const std::string from = (dir() / "epochs_fresh" / "checkpoints" / "step_1.safetensors").string();
  const auto [later, later_text] = report("epochs_from_1", ", resume_from: " + from);
  EXPECT_EQ(later["first_step"], 1);
  EXPECT_EQ(later["loss_per_step"], fresh["loss_per_step"]) << "the run's 4 steps take the fresh run's 4 batches, in order";
  const nlohmann::json& passes = later["test_accuracy_per_epoch"];
  ASSERT_EQ(passes.size(), 2u) << passes.dump();
  EXPECT_EQ(passes[0]["epoch"], 1);
  EXPECT_EQ(passes[0]["step"], 3);  // the run's 2nd step: the end of its first epoch
  EXPECT_EQ(passes[1]["epoch"], 2);
  EXPECT_EQ(passes[1]["step"], 5);
  EXPECT_NE(later_text.find("step     5  epoch 2  loss"), std::string::npos) << later_text;
  // Finishing that run from its step 3 goes on with its epochs, not from step 3 nor step 0.
  const fs::path finish = wse::test::fresh_dir(dir() / "epochs_finish");
  Output o = wse("run " + (dir() / "epochs_from_1.yaml").string() + " --threads 1 --resume " +
                 (dir() / "epochs_from_1" / "checkpoints" / "step_3.safetensors").string() + " --out " + finish.string());
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json done = nlohmann::json::parse(std::ifstream(finish / "report.json"));
  ASSERT_EQ(done["loss_per_step"].size(), 2u) << done.dump();
  EXPECT_EQ(done["loss_per_step"][0], fresh["loss_per_step"][2]);
  EXPECT_EQ(done["loss_per_step"][1], fresh["loss_per_step"][3]);
  ASSERT_EQ(done["test_accuracy_per_epoch"].size(), 1u) << done.dump();
  EXPECT_EQ(done["test_accuracy_per_epoch"][0]["step"], 5);
  EXPECT_EQ(done["test_accuracy_per_epoch"][0]["epoch"], 2);
}

// Mixed precision's default loss scale is 128, as the config reference says: the same losses and
// recorded settings as a config that gives 128 (a mutation test's survivor, forty-fourth round: a
// default of 1 passed every test).
TEST(TrainCli, MixedPrecisionsDefaultLossScaleIs128) {
  auto run = [](const std::string& name, const std::string& scale) {
    const std::string yaml = "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
                             "data: {train_samples: 32, eval_samples: 0}\ntraining: {batch_size: 16, precision: mixed, detail: none" + scale + "}\n";
    const fs::path out = wse::test::fresh_dir(dir() / name);
    Output o = wse("run " + write(name + ".yaml", yaml).string() + " --out " + out.string());
    EXPECT_EQ(o.code, 0) << o.text;
    const std::string bytes = [&] {
      std::ifstream in(out / "checkpoints" / "step_2.safetensors", std::ios::binary);
      return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    }();
    uint64_t n = 0;
    std::memcpy(&n, bytes.data(), 8);
    const nlohmann::json settings = nlohmann::json::parse(nlohmann::json::parse(bytes.substr(8, n))["__metadata__"]["run_settings"].get<std::string>());
    return std::pair{nlohmann::json::parse(std::ifstream(out / "report.json"))["loss_per_step"], settings["training.loss_scale"]};
  };
  const auto [default_losses, default_scale] = run("scale_default", "");
  const auto [given_losses, given_scale] = run("scale_128", ", loss_scale: 128");
  EXPECT_EQ(default_scale, "128");
  EXPECT_EQ(given_scale, "128");
  EXPECT_EQ(default_losses, given_losses);
}

// The log line's epoch is the epoch of the step it ends: 2 steps an epoch, the 2nd step is still
// epoch 1, the 3rd epoch 2 (a mutation test's survivor, forty-fourth round: counted from the
// steps done, the last step of each epoch was said to be the next epoch's).
TEST(TrainCli, ALogLinesEpochIsItsStepsEpoch) {
  const std::string yaml = "machine: wse2\nmesh: {width: 4, height: 2}\nkernel: fc_train\nmodel: {layers: [784, 16, 10]}\n"
                           "data: {train_samples: 32, eval_samples: 0}\ntraining: {batch_size: 16, epochs: 2, log_every: 1, detail: none}\n";
  Output o = wse("run " + write("log_epoch.yaml", yaml).string() + " --out " + wse::test::fresh_dir(dir() / "log_epoch").string());
  ASSERT_EQ(o.code, 0) << o.text;
  for (const char* line : {"step     1  epoch 1 ", "step     2  epoch 1 ", "step     3  epoch 2 ", "step     4  epoch 2 "})
    EXPECT_NE(o.text.find(line), std::string::npos) << line << "\n" << o.text;
}

TEST(TrainCli, ValidateOnlyAndCompileOnlyRunNothing) {
  fs::path out = dir() / "compile_out";
  fs::remove_all(out);
  fs::path cfg = write("small_c.yaml", kSmall);
  Output v = wse("run " + cfg.string() + " --validate_only --out " + out.string());
  ASSERT_EQ(v.code, 0) << v.text;
  EXPECT_NE(v.text.find("every layer maps"), std::string::npos) << v.text;
  EXPECT_FALSE(fs::exists(out / "report.json"));
  Output c = wse("run " + cfg.string() + " --compile_only --out " + out.string());
  ASSERT_EQ(c.code, 0) << c.text;
  nlohmann::json prog = nlohmann::json::parse(std::ifstream(out / "mesh_program.json"));
  EXPECT_EQ(prog["mesh"]["width"], 4);
  EXPECT_EQ(prog["machine"], "wse2");  // (it did not say, forty-second round)
  EXPECT_EQ(prog["layers"][0]["columns"][3]["k_rows"], 196 + 1);  // 784 over 4 columns, plus the ones row
  EXPECT_GT(prog["routes"].size(), 8u);
  EXPECT_LE(prog["sram_plan"]["peak_bytes_max"], 49152);
  EXPECT_FALSE(fs::exists(out / "report.json"));
  Output i = wse("inspect " + (out / "streams" / "fc1_fwd_col03.wsws").string());
  ASSERT_EQ(i.code, 0) << i.text;
  EXPECT_NE(i.text.find("layer fc1 (#0) step 1 (field 'step' 0), forward pass, dense fp32, 785 x 16 matrix, column 3 holds rows [588, 785), 3152 weights in 3152 words"), std::string::npos) << i.text;
}

// Found by a mutation test (four mistakes no test caught, each in a figure a user reads):
// - the SRAM plan's peak taken from the last PE planned (the east-most, bottom) instead of the
//   largest: in mixed precision with a 1000-wide layer, the other columns' PEs hold a staging
//   buffer the east-most do not (32,752 bytes against 26,144);
// - the "it fits with ... batch_size N" advice not counting the wafers (half the batch that fits);
// - a resumed run's host_seconds_per_step over every step since 0, not the run's own;
// - training's tile_cycles_per_second over width x width tiles (the kernel report had a test).
TEST(TrainCli, ThePlansPeakIsItsLargestPEs) {
  const fs::path out = wse::test::fresh_dir(dir() / "plan_peak");
  std::string cfg = kSmall;
  cfg.replace(cfg.find("{width: 4, height: 2}"), 21, "{width: 3, height: 2}");
  cfg.replace(cfg.find("[784, 16, 10]"), 13, "[784, 1000, 10]");
  cfg.replace(cfg.find("batch_size: 16"), 14, "batch_size: 10, precision: mixed");
  const fs::path file = write("plan_peak.yaml", cfg);
  Output c = wse("run " + file.string() + " --compile_only --out " + out.string());
  ASSERT_EQ(c.code, 0) << c.text;
  const nlohmann::json plan = nlohmann::json::parse(std::ifstream(out / "mesh_program.json"))["sram_plan"];
  uint32_t largest = 0, last = 0;
  for (const auto& pe : plan["per_pe"]) largest = std::max(largest, pe["peak_bytes"].get<uint32_t>()), last = pe["peak_bytes"];
  EXPECT_EQ(plan["peak_bytes_max"].get<uint32_t>(), largest);
  EXPECT_GT(largest, last) << "the case needs a PE planned before the last to be the largest";
  Output v = wse("run " + file.string() + " --validate_only");
  ASSERT_EQ(v.code, 0) << v.text;
  EXPECT_NE(v.text.find("peak SRAM per PE " + std::to_string(largest) + " of 49152 bytes"), std::string::npos) << v.text;
}

// A refusal's advice is one a user can follow (a scale audit, forty-fourth round): "use more PE
// columns" was given where no width of the machine would do (a layer's whole-width buffer, a
// sparse slice beyond 16 bits on 750 columns), and "more PE rows or a smaller batch" at one sample
// per PE row. Where more columns do help, the fewest that fit is named, and checked here by
// running both it and one fewer.
TEST(TrainCli, ARefusalsAdviceIsOneTheMachineAllows) {
  auto validate = [](const std::string& name, const std::string& machine, const std::string& layers, uint32_t width, const std::string& extra = "") {
    const std::string yaml = "machine: " + machine + "\nmesh: {width: " + std::to_string(width) + ", height: 1}\nkernel: fc_train\nmodel: {layers: " +
                             layers + "}\ndata: {train_samples: 16, eval_samples: 0}\ntraining: {batch_size: 1}\n" + extra;
    return wse("run " + write(name, yaml).string() + " --validate_only");
  };
  // fc1's accumulator holds every one of its 13,000 outputs on every PE: no width fits it.
  Output o = validate("advice_acc.yaml", "wse2", "[784, 13000, 10]", 4);
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("even one sample per PE row does not fit, on 4 PE columns or on any number of them a wse2 has (at most 750): a smaller "
                        "model (model.layers) or more SRAM per PE (machine.sram_bytes_per_pe)"), std::string::npos) << o.text;
  // 784 -> 6000 fits on some width: the one named fits, one fewer does not.
  o = validate("advice_cols.yaml", "wse2", "[784, 6000, 10]", 2);
  ASSERT_EQ(o.code, 2) << o.text;
  const std::string use = "even one sample per PE row does not fit on 2 PE columns: use at least ";
  const size_t at = o.text.find(use);
  ASSERT_NE(at, std::string::npos) << o.text;
  const uint32_t named = uint32_t(std::stoul(o.text.substr(at + use.size())));
  EXPECT_EQ(validate("advice_cols_n.yaml", "wse2", "[784, 6000, 10]", named).code, 0) << named;
  EXPECT_EQ(validate("advice_cols_n1.yaml", "wse2", "[784, 6000, 10]", named - 1).code, 2) << named;
  // There, two samples per PE row do not fit and one does: said in the singular ("1 samples").
  o = wse("run " + write("advice_one.yaml", "machine: wse2\nmesh: {width: " + std::to_string(named) +
                                               ", height: 1}\nkernel: fc_train\nmodel: {layers: [784, 6000, 10]}\n"
                                               "data: {train_samples: 16, eval_samples: 0}\ntraining: {batch_size: 2}\n").string() +
          " --validate_only");
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("; it fits with 1 sample per PE row, i.e. batch_size 1 on this mesh"), std::string::npos) << o.text;
  // Sparse: 784 -> 1000 on 4 columns is 197 rows x 1000 positions; 61 + 1 rows fit 16 bits at 13
  // columns (784 / 13 rounds up to 61, the east-most one's bias row besides), 66 + 1 at 12 do not.
  const std::string sparse = "weights: {encoding: sparse}\nsparsity: {sparsity: 0.5}\n";
  o = validate("advice_sparse.yaml", "wse2", "[784, 1000, 10]", 4, sparse);
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("beyond the 16-bit index of a sparse wavelet; use at least 13 PE columns (mesh.width)"), std::string::npos) << o.text;
  // fc2, 8192 -> 8192 sparse: 11 + 1 rows of 8,192 positions even on 750 columns.
  o = validate("advice_sparse_wide.yaml", "{preset: wse2, sram_bytes_per_pe: 16777216}", "[784, 8192, 8192, 10]", 750, sparse);
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("layer fc2 (8192 -> 8192): a column's weight slice has 98304 positions"), std::string::npos) << o.text;
  EXPECT_NE(o.text.find("no number of PE columns a wse2 has (at most 750) takes it sparse: dense weight streams (weights.encoding: dense)"),
            std::string::npos) << o.text;
  // A DSD beyond 65,535 elements at one sample per PE row: fewer rows or samples cannot help.
  o = validate("advice_dsd.yaml", "{preset: wse2, sram_bytes_per_pe: 16777216}", "[784, 65536, 10]", 4);
  EXPECT_EQ(o.code, 2) << o.text;
  EXPECT_NE(o.text.find("for 1 sample per PE row make a vector of 65536 elements, beyond a DSD's 65,535 (a u16); one sample per PE row is the "
                        "fewest: a narrower layer (model.layers)"), std::string::npos) << o.text;
}

TEST(TrainCli, TheBatchThatFitsCountsEveryWafer) {
  // 784 -> 256 on 2 x 2 PEs and two wafers: batch 64 is 16 rows per PE, too many.
  auto config = [](uint32_t batch) {
    std::string cfg = kSmall;
    cfg.replace(cfg.find("{width: 4, height: 2}"), 21, "{width: 2, height: 2}");
    cfg.replace(cfg.find("[784, 16, 10]"), 13, "[784, 256, 10]");
    cfg.replace(cfg.find("batch_size: 16"), 14, "batch_size: " + std::to_string(batch) + ", num_csx: 2");
    return write("fits_" + std::to_string(batch) + ".yaml", cfg);
  };
  Output o = wse("run " + config(64).string() + " --validate_only");
  ASSERT_EQ(o.code, 2) << o.text;
  const std::string said = "i.e. batch_size ";
  const size_t at = o.text.find(said);
  ASSERT_NE(at, std::string::npos) << o.text;
  const uint32_t fits = uint32_t(std::stoul(o.text.substr(at + said.size())));
  EXPECT_EQ(fits % 4, 0u) << "a row of samples on each of the 2 PE rows of both wafers";
  EXPECT_EQ(wse("run " + config(fits).string() + " --validate_only").code, 0) << "batch_size " << fits << " was said to fit";
  Output more = wse("run " + config(fits + 4).string() + " --validate_only");
  EXPECT_EQ(more.code, 2) << "batch_size " << fits + 4 << " fits too: the advice was not the largest\n" << more.text;
}

TEST(TrainCli, AResumedRunsFiguresAreItsOwn) {
  const fs::path first = wse::test::fresh_dir(dir() / "own_first"), second = wse::test::fresh_dir(dir() / "own_second");
  std::string cfg = kSmall;
  cfg.replace(cfg.find("{width: 4, height: 2}"), 21, "{width: 1, height: 4}");  // not square: tiles are width x height
  cfg.replace(cfg.find("eval_samples: 32"), 16, "eval_samples: 0");
  const fs::path file = write("own.yaml", cfg);
  ASSERT_EQ(wse("run " + file.string() + " --threads 1 --out " + first.string()).code, 0);
  Output r = wse("run " + file.string() + " --threads 1 --resume " + (first / "checkpoints" / "step_3.safetensors").string() + " --out " +
                 second.string());
  ASSERT_EQ(r.code, 0) << r.text;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(second / "report.json"));
  ASSERT_EQ(j["loss_per_step"].size(), 3u);  // steps 4 to 6
  EXPECT_NEAR(j["host_seconds"].get<double>() / j["host_seconds_per_step"].get<double>(), 3.0, 1e-9);
  // Every step cycle by cycle on one wafer with no test pass: the engine ran the input feed and
  // each layer's two passes, as the report counts them, and nothing else.
  uint64_t cycles = j["input"]["cycles"].get<uint64_t>();
  for (const auto& l : j["layers"]) cycles += l["forward"]["cycles"].get<uint64_t>() + l["backward"]["cycles"].get<uint64_t>();
  EXPECT_EQ(j["engine_cycles"].get<uint64_t>(), cycles);
  EXPECT_NEAR(j["tile_cycles_per_second"].get<double>(), 4.0 * double(cycles) / j["engine_seconds"].get<double>(),
              1e-9 * j["tile_cycles_per_second"].get<double>());
}

// Two wafers on two threads run side by side: engine_seconds is the wall time their cycle-level
// runs covered, inside the training loop's host_seconds (no test pass here, whose runs fall
// outside it), and tile_cycles_per_second is over it. It summed each wafer's seconds (5.2 s of
// engine time in a 3.1 s loop, found by a speed-figures audit). `waiting` is over every wafer's
// runs on more than one worker, and says how many seconds those were.
TEST(TrainCli, TwoWafersEngineSecondsAreTheWallTimeTheirRunsCovered) {
  const fs::path out = wse::test::fresh_dir(dir() / "two_wafer_seconds");
  std::string cfg = kSmall;
  cfg.replace(cfg.find("batch_size: 16"), 14, "batch_size: 16, num_csx: 2");
  cfg.replace(cfg.find("eval_samples: 32"), 16, "eval_samples: 0");
  Output o = wse("run " + write("two_wafer_seconds.yaml", cfg).string() + " --threads 4 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  const nlohmann::json j = nlohmann::json::parse(std::ifstream(out / "report.json"));
  ASSERT_EQ(j["threads_detail"]["wafers_at_once"], 2) << j["threads_detail"];
  const double engine = j["engine_seconds"].get<double>(), loop = j["host_seconds"].get<double>();
  EXPECT_GT(engine, 0.0);
  EXPECT_LE(engine, loop) << "the wafers' runs are inside the training loop";
  EXPECT_NEAR(j["tile_cycles_per_second"].get<double>(), 8.0 * j["engine_cycles"].get<double>() / engine,
              1e-9 * j["tile_cycles_per_second"].get<double>());
  ASSERT_EQ(j["threads_detail"]["workers_per_wafer"], 2) << j["threads_detail"];
  ASSERT_EQ(j["threads_detail"]["waiting"].size(), 2u) << j["threads_detail"];
  // Two wafers' runs on two workers each: their summed seconds, never more than twice the wall
  // time the runs covered. (Each wafer's runs take 65-70% of the loop on the project's two-CPU
  // host, so the old sum, about as much as this one, exceeded the loop: the check above fails on
  // it, the more so on a host where the wafers have cores of their own.)
  const double shared = j["threads_detail"]["multi_worker_seconds"].get<double>();
  EXPECT_GT(shared, 0.0);
  EXPECT_LE(shared, 2.0 * engine * (1 + 1e-9));
}

// Two wafers score the test set as one does: SwarmX adds the wafers' correct counts up the tree
// with their losses. Found by a mutation test: dropping the counts passed every test (the losses
// were compared, the accuracy was not) and two wafers said 23.44% where one said 48.44%.
TEST(TrainCli, TwoWafersScoreTheTestSetAsOneDoes) {
  std::map<int, nlohmann::json> reports;
  for (int wafers : {1, 2}) {
    const fs::path out = wse::test::fresh_dir(dir() / ("score_" + std::to_string(wafers)));
    std::string cfg = kSmall;
    cfg.replace(cfg.find("batch_size: 16"), 14, "batch_size: 16, epochs: 2, num_csx: " + std::to_string(wafers));
    cfg.replace(cfg.find("eval_samples: 32"), 16, "eval_samples: 64");
    Output o = wse("run " + write("score_" + std::to_string(wafers) + ".yaml", cfg).string() + " --threads 1 --out " + out.string());
    ASSERT_EQ(o.code, 0) << o.text;
    reports[wafers] = nlohmann::json::parse(std::ifstream(out / "report.json"));
  }
  const nlohmann::json &one = reports[1], &two = reports[2];
  // The same training but for the order SwarmX adds the wafers' gradients in (losses to 1e-7): a
  // test sample's class could flip only at a near tie, so the counts agree to one.
  ASSERT_EQ(one["loss_per_step"].size(), two["loss_per_step"].size());
  for (size_t s = 0; s < one["loss_per_step"].size(); ++s)
    EXPECT_NEAR(one["loss_per_step"][s].get<double>(), two["loss_per_step"][s].get<double>(), 1e-6) << "step " << s + 1;
  EXPECT_EQ(two["test_samples"], 64);
  EXPECT_NEAR(one["test_accuracy"].get<double>(), two["test_accuracy"].get<double>(), 1.0 / 64);
  ASSERT_EQ(two["test_accuracy_per_epoch"].size(), 2u);
  for (size_t e = 0; e < 2; ++e) {
    EXPECT_NEAR(one["test_accuracy_per_epoch"][e]["correct"].get<double>(), two["test_accuracy_per_epoch"][e]["correct"].get<double>(), 1.0)
        << "epoch " << e + 1;
    EXPECT_GT(two["test_accuracy_per_epoch"][e]["correct"].get<uint32_t>(), 6u) << "better than chance, or the test cannot tell";
  }
}

TEST(TrainCli, CorruptStreamMissingDataAndOversizedLayersExitWith2) {
  // A truncated WeightStream file.
  fs::path out = wse::test::fresh_dir(dir() / "compile_bad");
  ASSERT_EQ(wse("run " + write("small_b.yaml", kSmall).string() + " --compile_only --out " + out.string()).code, 0);
  fs::path stream = out / "streams" / "fc1_fwd_col00.wsws";
  fs::resize_file(stream, fs::file_size(stream) / 2);
  Output bad = wse("inspect " + stream.string());
  EXPECT_EQ(bad.code, 2) << bad.text;
  EXPECT_NE(bad.text.find("not a valid WeightStream"), std::string::npos) << bad.text;
  EXPECT_NE(bad.text.find(stream.string()), std::string::npos) << bad.text;

  std::string missing = kSmall;
  missing += "# data dir override\n";
  missing.replace(missing.find("data: {"), 7, "data: {dir: /nonexistent/fmnist, ");
  Output m = wse("run " + write("missing.yaml", missing).string() + " --out " + wse::test::fresh_dir(dir() / "m").string());
  EXPECT_EQ(m.code, 2) << m.text;
  EXPECT_NE(m.text.find("/nonexistent/fmnist/train-images-idx3-ubyte"), std::string::npos) << m.text;

  std::string big = kSmall;
  big.replace(big.find("[784, 16, 10]"), 13, "[784, 2048, 10]");
  Output s = wse("run " + write("big.yaml", big).string() + " --validate_only");
  EXPECT_EQ(s.code, 2) << s.text;
  EXPECT_NE(s.text.find("does not fit PE SRAM"), std::string::npos) << s.text;
  EXPECT_NE(s.text.find("big.yaml"), std::string::npos) << s.text;

  // The backward program keeps two asynchronous ops in flight; a machine of one microthread
  // passed --validate_only (the program is loaded only when a backward pass runs) and the run
  // failed at its first backward pass.
  for (const char* mt : {"1", "2"}) {
    std::string few = kSmall;
    few.replace(few.find("machine: wse2"), 13, std::string("machine: {preset: wse2, microthreads: ") + mt + "}");
    Output f = wse("run " + write(std::string("microthreads") + mt + ".yaml", few).string() + " --validate_only");
    if (mt[0] == '1') {
      EXPECT_EQ(f.code, 2) << f.text;
      EXPECT_NE(f.text.find("program 'fc_backward' has up to 2 asynchronous ops in flight at once, but a wse2 PE has 1 "
                            "microthreads (machine.microthreads)"),
                std::string::npos) << f.text;
    } else {
      EXPECT_EQ(f.code, 0) << f.text;
    }
  }
}

// Found by a training-edge audit: a sparsity that prunes a whole weight matrix (0.999 of fc2's 160
// weights rounds to all of them) ran with no word, training only the output bias; a training set
// that is not a multiple of the batch lost its remainder silently, where a test set's is noted.
TEST(TrainCli, AMatrixPrunedWholeAndATrainingRemainderAreSaid) {
  std::string pruned = kSmall;
  pruned += "sparsity: {sparsity: 0.999}\n";
  Output v = wse("run " + write("pruned_whole.yaml", pruned).string() + " --validate_only");
  EXPECT_EQ(v.code, 0) << v.text;
  EXPECT_NE(v.text.find("warning: sparsity prunes every weight of fc2.weight (160 of 160): nothing passes through its layer"),
            std::string::npos) << v.text;
  EXPECT_EQ(v.text.find("fc1.weight (12544 of 12544)"), std::string::npos) << v.text;  // 0.999 of 12544 keeps 13
  std::string rest = kSmall;
  rest.replace(rest.find("train_samples: 96"), 17, "train_samples: 90");
  rest.replace(rest.find("log_every: 2"), 12, "log_every: 2, max_steps: 1");
  Output r = wse("run " + write("remainder.yaml", rest).string() + " --threads 1 --out " + wse::test::fresh_dir(dir() / "remainder").string());
  EXPECT_EQ(r.code, 0) << r.text;
  EXPECT_NE(r.text.find("note: data.train_samples (90) is not a multiple of batch_size (16): each epoch trains on 80 samples in 5 "
                        "whole batches; the last 10 of its order are left out (the same ones every epoch)"),
            std::string::npos) << r.text;
}

TEST(TrainCli, TraceRecordsOneLayerPassOfTheFirstStep) {
  fs::path cfg = write("small_t.yaml", kSmall);
  fs::path out = dir() / "trace_out";
  fs::remove_all(out);
  Output o = wse("trace " + cfg.string() + " --layer fc1 --pass fwd --interval 200 --threads 2 --out " + out.string());
  ASSERT_EQ(o.code, 0) << o.text;
  nlohmann::json j = nlohmann::json::parse(std::ifstream(out / "report.json"));
  // Counters are reset before the traced kernel: the report holds fc1's forward pass alone.
  EXPECT_EQ(j["macs"], 785 * 16 * 16);
  EXPECT_EQ(j["layer"]["stats"]["macs"], 785 * 16 * 16);
  EXPECT_EQ(j["layer"]["stats"]["cycles"], j["cycles"]);
  EXPECT_EQ(j["trace"]["layer"], "fc1");
  EXPECT_TRUE(fs::exists(out / "activity.wsad"));
  EXPECT_TRUE(fs::exists(out / "trace.pftrace"));
  Output b = wse("trace " + cfg.string() + " --layer fc2 --pass bwd --interval 200 --out " + wse::test::fresh_dir(dir() / "trace_bwd").string());
  ASSERT_EQ(b.code, 0) << b.text;
  nlohmann::json jb = nlohmann::json::parse(std::ifstream(dir() / "trace_bwd" / "report.json"));
  // fc2 backward: dW (17 x 10 per sample) and dX (16 x 10 per sample) over 16 samples.
  EXPECT_EQ(jb["macs"], (17 * 10 + 16 * 10) * 16);
  Output bad = wse("trace " + cfg.string() + " --layer fc9 --out " + (dir() / "t9").string());
  EXPECT_EQ(bad.code, 2);
  EXPECT_NE(bad.text.find("has layers fc1 .. fc2"), std::string::npos) << bad.text;
}

}  // namespace
