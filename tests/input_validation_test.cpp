// Checkpoints (safetensors) and datasets (IDX) checked in meaning before use: every file below
// is well-formed enough to parse, and contradicts itself or the model; each must be a UsageError
// naming the file, the field and what was expected, and nothing is allocated from its claims.
#include <gtest/gtest.h>
#include <zlib.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iterator>
#include <nlohmann/json.hpp>

#include "address_space_limit.hpp"
#include "cli_support.hpp"
#include "core/yaml_fields.hpp"
#include "host/dataset.hpp"
#include "host/job.hpp"
#include "host/memory_budget.hpp"
#include "kernels/gemv/gemv.hpp"
#include "io/memory_limit.hpp"
#include "memoryx/memoryx.hpp"
#include "memoryx/safetensors.hpp"
#include "test_support.hpp"

namespace wse {
namespace {

namespace fs = std::filesystem;

fs::path dir() { return test::scratch_dir("wse_input_validation_test"); }

// A safetensors file: 8-byte length, the header text as given, then `data` bytes.
fs::path safetensors(const std::string& name, const std::string& header, size_t data_bytes) {
  const fs::path p = dir() / name;
  std::ofstream out(p, std::ios::binary);
  const uint64_t len = header.size();
  out.write(reinterpret_cast<const char*>(&len), 8);
  out << header << std::string(data_bytes, '\0');
  return p;
}

void bad_checkpoint(const std::string& name, const std::string& header, size_t data, std::initializer_list<std::string> fragments) {
  const fs::path p = safetensors(name, header, data);
  std::vector<std::string> all = {"checkpoint " + p.string()};
  all.insert(all.end(), fragments.begin(), fragments.end());
  try {
    SafetensorsFile f(p);
    ADD_FAILURE() << name << ": accepted";
  } catch (const UsageError& e) {
    for (const auto& s : all) EXPECT_NE(std::string(e.what()).find(s), std::string::npos) << name << ": '" << s << "' not in: " << e.what();
  }
}

TEST(CheckpointValidation, AWellFormedCheckpointIsRead) {
  const fs::path p = safetensors("ok.safetensors",
                                 R"({"__metadata__":{"step":"3"},"a":{"dtype":"F32","shape":[2,3],"data_offsets":[0,24]},)"
                                 R"("b":{"dtype":"F32","shape":[],"data_offsets":[24,28]}})",
                                 28);
  const SafetensorsFile f(p);
  ASSERT_EQ(f.tensors().size(), 2u);
  EXPECT_EQ(f.find("a")->numel, 6u);
  EXPECT_EQ(f.find("b")->numel, 1u);  // a scalar
  EXPECT_EQ(f.metadata().at("step"), "3");
}

TEST(CheckpointValidation, EveryContradictionIsNamed) {
  const std::string t = R"("dtype":"F32","shape":[2,3])";
  bad_checkpoint("dtype.st", R"({"a":{"dtype":"F33","shape":[1],"data_offsets":[0,4]}})", 4, {"tensor 'a'", "field 'dtype'", "\"F33\" is not a safetensors dtype"});
  bad_checkpoint("f16.st", R"({"a":{"dtype":"F16","shape":[2],"data_offsets":[0,4]}})", 4, {"field 'dtype'", "F16 is not supported"});
  bad_checkpoint("span.st", "{\"a\":{" + t + R"(,"data_offsets":[0,20]}})", 24, {"field 'data_offsets'", "spans 20 bytes", "needs 24"});
  bad_checkpoint("beyond.st", "{\"a\":{" + t + R"(,"data_offsets":[8,32]}})", 24, {"field 'data_offsets'", "[8, 32) is not inside the 24 data bytes"});
  bad_checkpoint("reversed.st", "{\"a\":{" + t + R"(,"data_offsets":[24,0]}})", 24, {"field 'data_offsets'", "[24, 0)"});
  bad_checkpoint("overlap.st", "{\"a\":{" + t + R"(,"data_offsets":[0,24]},"b":{"dtype":"F32","shape":[2],"data_offsets":[16,24]}})", 24,
                 {"tensors 'a' and 'b' overlap"});
  bad_checkpoint("twice.st", "{\"a\":{" + t + R"(,"data_offsets":[0,24]},"a":{)" + t + R"(,"data_offsets":[0,24]}})", 24, {"names 'a' twice"});
  bad_checkpoint("negative.st", R"({"a":{"dtype":"F32","shape":[-1],"data_offsets":[0,4]}})", 4, {"field 'shape[0]'", "-1 is not a dimension"});
  bad_checkpoint("fraction.st", R"({"a":{"dtype":"F32","shape":[1.5],"data_offsets":[0,4]}})", 4, {"field 'shape[0]'"});
  // 2^32-1 cubed elements: the product saturates, it never wraps around to the 4-byte span.
  bad_checkpoint("wrap.st", R"({"a":{"dtype":"F32","shape":[4294967295,4294967295,4294967295],"data_offsets":[0,4]}})", 4,
                 {"field 'data_offsets'", "more than 2^64"});
  bad_checkpoint("extra.st", R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4],"x":1}})", 4, {"unknown field 'x'"});
  bad_checkpoint("missing.st", R"({"a":{"dtype":"F32","shape":[1]}})", 4, {"tensor 'a'", "missing data_offsets"});
  bad_checkpoint("meta.st", R"({"__metadata__":{"step":3}})", 0, {"field '__metadata__.step'", "expected a string"});
  bad_checkpoint("meta2.st", R"({"__metadata__":[1,2]})", 0, {"field '__metadata__'", "expected an object"});
  // The parser's words without its exception's id ("[json.exception.parse_error.101] ").
  bad_checkpoint("notjson.st", "{\"a\":", 0, {"header is not valid JSON: parse error at line 1, column 6: "});
  // Found by a fuzzing campaign of large inputs: a dtype nested 100,000 lists deep overflowed the
  // stack when its message printed it (SIGSEGV), and a shape of 500,000 dimensions made a message
  // of a megabyte.
  bad_checkpoint("deep.st", R"({"a":{"dtype":)" + std::string(100000, '[') + std::string(100000, ']') + R"(,"shape":[1],"data_offsets":[0,4]}})",
                 4, {"header nests values more than 4 levels deep"});
  {
    std::string dims;
    for (int i = 0; i < 500000; ++i) dims += i ? ",1" : "1";
    const fs::path p = safetensors("long_shape.st", R"({"a":{"dtype":"F32","shape":[)" + dims + R"(],"data_offsets":[0,4]}})", 4);
    try {
      SafetensorsFile f(p);
      ADD_FAILURE() << "accepted";
    } catch (const UsageError& e) {
      const std::string what = e.what();
      EXPECT_NE(what.find("field 'shape': expected a list of at most 8 dimensions, got [1,1,1"), std::string::npos) << what.substr(0, 300);
      EXPECT_NE(what.find("(1000001 characters)"), std::string::npos) << what.substr(0, 300);
      EXPECT_LT(what.size(), 400u);
    }
  }
  bad_checkpoint("array.st", "[1,2,3]", 0, {"header is not a JSON object"});
  // What the reference reader refuses and this one took (a CLI audit, forty-sixth round): a header
  // padded with NUL bytes, not spaces, and bytes after the last tensor's data.
  const std::string one = R"({"a":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}})";
  bad_checkpoint("nul_pad.st", one + std::string(3, '\0'), 4, {"header holds a NUL byte at offset " + std::to_string(8 + one.size())});
  bad_checkpoint("trailing.st", one, 4 + 5, {"5 bytes after the last tensor's data (at byte " + std::to_string(8 + one.size() + 4)});
  EXPECT_NO_THROW(SafetensorsFile(safetensors("space_pad.st", one + "   ", 4)));  // spaces are the format's padding
  // A header length past the end of the file.
  const fs::path p = dir() / "len.st";
  std::ofstream(p, std::ios::binary).write("\xff\xff\xff\xff\x00\x00\x00\x00{}", 10);
  test::expect_error<UsageError>([&] { SafetensorsFile f(p); }, {p.string(), "header length 4294967295 is beyond the file"});
  test::expect_error<UsageError>([&] { SafetensorsFile f(dir()); }, {dir().string(), "not a regular file"});
}

// The model the resume tests use: 4 -> 3 -> 2 with SGD (a momentum state per parameter).
const std::vector<LayerSpec> kModel = {{"fc1", 4, 3}, {"fc2", 3, 2}};

fs::path good_checkpoint(const std::string& name, const std::string& optimizer = "sgd") {
  MemoryXConfig cfg;
  cfg.optimizer.kind = optimizer;
  MemoryX mx(cfg, kModel);
  const fs::path p = dir() / name;
  mx.write_checkpoint(p);
  return p;
}

// A checkpoint's header lists its tensors in the order their bytes lie (each parameter, then its
// optimizer states), as written since the first checkpoint: written through json_text as a
// plain json, the header came out sorted, and the same run's checkpoint changed its bytes.
TEST(CheckpointValidation, TheHeaderKeepsTheOrderTheTensorsAreWrittenIn) {
  const fs::path p = good_checkpoint("order.safetensors");
  std::ifstream in(p, std::ios::binary);
  uint64_t n = 0;
  in.read(reinterpret_cast<char*>(&n), 8);
  std::string header(n, '\0');
  in.read(header.data(), std::streamsize(n));
  std::vector<size_t> at;
  for (const char* key : {"\"__metadata__\"", "\"fc1.weight\"", "\"fc1.weight.momentum\"", "\"fc1.bias\"", "\"fc2.weight\""}) {
    at.push_back(header.find(key));
    ASSERT_NE(at.back(), std::string::npos) << key << " in " << header;
  }
  EXPECT_TRUE(std::is_sorted(at.begin(), at.end())) << header;
  // And the offsets rise in that order: the bytes lie as the header lists them.
  const nlohmann::ordered_json h = nlohmann::ordered_json::parse(header);
  uint64_t end = 0;
  for (const auto& [name, t] : h.items()) {
    if (name == "__metadata__") continue;
    EXPECT_EQ(t["data_offsets"][0].get<uint64_t>(), end) << name;
    end = t["data_offsets"][1].get<uint64_t>();
  }
}

// A copy of checkpoint `src` with its header edited by `edit` (the data kept).
fs::path edited(const fs::path& src, const std::string& name, const std::function<void(nlohmann::json&)>& edit) {
  std::ifstream in(src, std::ios::binary);
  uint64_t len = 0;
  in.read(reinterpret_cast<char*>(&len), 8);
  std::string text(len, '\0');
  in.read(text.data(), std::streamsize(len));
  const std::string data((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
  nlohmann::json j = nlohmann::json::parse(text);
  edit(j);
  const std::string out_text = j.dump();
  const fs::path p = dir() / name;
  std::ofstream out(p, std::ios::binary);
  const uint64_t out_len = out_text.size();
  out.write(reinterpret_cast<const char*>(&out_len), 8);
  out << out_text << data;
  return p;
}

TEST(CheckpointValidation, ResumeChecksNamesShapesAndOptimizerAgainstTheModel) {
  MemoryXConfig cfg;
  const fs::path ok = good_checkpoint("model.safetensors");
  EXPECT_NO_THROW(MemoryX(cfg, kModel, SafetensorsFile(ok)));
  // A checkpoint of another model: fc1 is 5 -> 3.
  {
    MemoryXConfig c;
    MemoryX other(c, {{"fc1", 5, 3}, {"fc2", 3, 2}});
    other.write_checkpoint(dir() / "other.safetensors");
  }
  test::expect_error<UsageError>([&] { MemoryX(cfg, kModel, SafetensorsFile(dir() / "other.safetensors")); },
                                 {"other.safetensors", "tensor 'fc1.weight' has shape [5, 3], but the model's is [4, 3]"});
  // A stray tensor the model does not have.
  const fs::path stray = edited(ok, "stray.safetensors", [](nlohmann::json& h) {
    h["fc3.weight"] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {0, 0}}};  // empty: no bytes to overlap
  });
  test::expect_error<UsageError>([&] { MemoryX(cfg, kModel, SafetensorsFile(stray)); },
                                 {"stray.safetensors", "tensor 'fc3.weight' is not a parameter or optimizer state of this model"});
  // Its name with an escape byte in it: shown as \x1b, not sent to the terminal (a review, forty-fifth round).
  const fs::path escaped = edited(ok, "escaped.safetensors", [](nlohmann::json& h) {
    h["fc3\x1b[2J"] = {{"dtype", "F32"}, {"shape", {0}}, {"data_offsets", {0, 0}}};
  });
  test::expect_error<UsageError>([&] { MemoryX(cfg, kModel, SafetensorsFile(escaped)); }, {"tensor 'fc3\\x1b[2J' is not a parameter"});
  // Written under Adam, resumed under SGD.
  const fs::path adam = good_checkpoint("adam.safetensors", "adam");
  test::expect_error<UsageError>([&] { MemoryX(cfg, kModel, SafetensorsFile(adam)); },
                                 {"adam.safetensors", "field '__metadata__.optimizer': 'adam'", "config's optimizer is 'sgd'"});
  const fs::path step = edited(ok, "step.safetensors", [](nlohmann::json& h) { h["__metadata__"]["step"] = "12abc"; });
  test::expect_error<UsageError>([&] { MemoryX(cfg, kModel, SafetensorsFile(step)); },
                                 {"step.safetensors", "field '__metadata__.step': '12abc' is not a step count"});
}

// Found by a limits audit: under `ulimit -v` a run's SRAM arena, reserved whole, was not counted
// (a 750 x 120 GEMV of one element failed with exit 1 under 4 GiB), nor a baseline's activations
// (a batch of 60,000 on [784, 262144, 10]: 1.6 GB counted, 63 needed).
TEST(MemoryBudget, TheSramArenaAndABaselinesStepAreCounted) {
  auto gemv_on = [](uint32_t w, uint32_t h) {
    RunConfig cfg;
    cfg.source = "c.yaml", cfg.kernel = "gemv", cfg.mesh = {w, h};
    auto g = std::make_shared<GemvConfig>();
    g->rows = 1, g->cols = 1;
    cfg.kernel_config = g;
    return cfg;
  };
  const int code = test::with_address_space_room(512ull << 20, [&] {
    set_memory_limit(64ull << 30);  // --max-memory does not lift the address-space limit
    try {
      check_run_memory(gemv_on(150, 100));  // an arena of 15,000 x 49,280 bytes: 705 MiB
      return 1;
    } catch (const ConfigError& e) {
      const std::string w = e.what();
      if (w.find("of address space") == std::string::npos || w.find("SRAM arena, reserved whole: 15000 PEs x 49152 bytes") == std::string::npos)
        return 2;
    }
    try {
      check_run_memory(gemv_on(40, 40));  // 75 MiB
    } catch (...) {
      return 4;
    }
    return 0;
  });
  EXPECT_EQ(code, 0) << "1: the arena was not counted; 2: the message; 3: no limit set; 4: a small mesh refused";

  RunConfig base;
  base.source = "b.yaml", base.kernel = "fc_train";
  base.train.layers = {784, 262144, 10};
  base.train.batch_size = 60000;
  set_memory_limit(8ull << 30);
  test::expect_error<ConfigError>([&] { check_baseline_memory(base); }, {"b.yaml: this baseline needs about", "activations at training.batch_size 60000"});
  base.train.batch_size = 64;
  EXPECT_NO_THROW(check_baseline_memory(base));
  set_memory_limit(0);
}

// MemoryX's part of the estimate, by hand: the weights and each of their optimizer states as fp32,
// twice while an eager initialization holds the host tensors beside the store, and a mask byte a
// weight when sparse. Found by a mutation test: leaving the weights out (the states alone) passed
// every test, and `--max-memory` between the two figures was accepted.
TEST(MemoryBudget, TheMemoryXStoreIsTheWeightsAndTheirStates) {
  TrainConfig t;
  t.layers = {784, 32, 10};
  const uint64_t params = 785 * 32 + 33 * 10;  // 25,450 with the biases
  t.memoryx.optimizer.kind = "adam";
  EXPECT_EQ(memoryx_bytes(t), params * 4 * 3);  // 305,400: weights, exp_avg, exp_avg_sq
  t.memoryx.optimizer.kind = "sgd";
  EXPECT_EQ(memoryx_bytes(t), params * 4 * 2);  // weights, momentum
  t.memoryx.init.lazy = false;
  EXPECT_EQ(memoryx_bytes(t), params * 4 * 2 * 2);
  t.memoryx.init.lazy = true, t.memoryx.sparsity.enabled = true;
  EXPECT_EQ(memoryx_bytes(t), params * 4 * 2 + params);
}

// Every integer field reads YAML 1.2's integers alike (found by a config audit): a seed of 010 was
// octal 8 through yaml-cpp's as<uint64_t> while rows: 010 was 10, 08 was refused as a seed, 0x10
// was a seed but no mesh width, and 2^62 + 1 passed a range ending at 2^62 (read through a double).
TEST(ConfigIntegers, EveryFieldReadsYamlIntegersAlike) {
  auto read = [](const std::string& text, uint64_t min = 0, uint64_t max = UINT64_MAX) {
    const YAML::Node doc = YAML::Load("v: " + text);
    return yaml::integer_in(doc["v"], "config c.yaml", "v", min, max);
  };
  EXPECT_EQ(read("010"), 10u);
  EXPECT_EQ(read("08"), 8u);
  EXPECT_EQ(read("+7"), 7u);
  EXPECT_EQ(read("-0"), 0u);
  EXPECT_EQ(read("0x10"), 16u);
  EXPECT_EQ(read("0o17"), 15u);
  EXPECT_EQ(read("1e3"), 1000u);
  EXPECT_EQ(read("10.0"), 10u);
  EXPECT_EQ(read("18446744073709551615"), UINT64_MAX);
  EXPECT_EQ(read("!!int 12"), 12u);
  EXPECT_EQ(read("4611686018427387904", 1, 1ull << 62), 1ull << 62);
  const std::pair<const char*, const char*> refused[] = {
      {"4611686018427387905", "expected an integer in [1, 4611686018427387904], got '4611686018427387905'"},
      {"18446744073709551616", "got '18446744073709551616'"},
      {"4.6116860184273879e18", "beyond 2^53 a number in that form may be rounded"},
      {"-1", "got '-1'"},
      {"0x", "got '0x'"},
      {"0xg", "got '0xg'"},
      {"1.5", "got '1.5'"},
      {"\"4\"", "the quoted string '4'"},
      {"!!str 4", "tagged tag:yaml.org,2002:str"},
      {"!foo 4", "tagged !foo"},
  };
  for (const auto& [text, why] : refused)
    test::expect_error<ConfigError>([&] { read(text, 1, 1ull << 62); }, {"config c.yaml: field 'v'", why});
}

// IDX files: a header, then the bytes.
std::string idx(uint32_t magic, std::vector<uint32_t> dims, size_t payload) {
  std::string s;
  auto be = [&](uint32_t v) {
    for (int sh = 24; sh >= 0; sh -= 8) s.push_back(char(v >> sh));
  };
  be(magic);
  for (uint32_t d : dims) be(d);
  s.append(payload, char(3));
  return s;
}

std::string gz(const std::string& in) {
  z_stream z{};
  deflateInit2(&z, 6, Z_DEFLATED, 31, 8, Z_DEFAULT_STRATEGY);
  std::string out(deflateBound(&z, uLong(in.size())), '\0');
  z.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(in.data())), z.avail_in = uInt(in.size());
  z.next_out = reinterpret_cast<Bytef*>(out.data()), z.avail_out = uInt(out.size());
  deflate(&z, Z_FINISH);
  out.resize(z.total_out);
  deflateEnd(&z);
  return out;
}

void bad_idx(const std::string& images, const std::string& labels, std::initializer_list<std::string> fragments) {
  const fs::path i = test::write_file(dir() / "images-idx3-ubyte", images), l = test::write_file(dir() / "labels-idx1-ubyte", labels);
  test::expect_error<UsageError>([&] { load_idx_files(i, l, 0, "test"); }, fragments);
}

TEST(DatasetValidation, HeadersAreCheckedAgainstTheFilesBeforeAnythingIsRead) {
  const fs::path i = test::write_file(dir() / "ok-images", idx(0x803, {3, 4, 4}, 48));
  const fs::path l = test::write_file(dir() / "ok-labels", idx(0x801, {3}, 3));
  const Dataset d = load_idx_files(i, l, 0, "test");
  EXPECT_EQ(d.count, 3u);
  EXPECT_EQ(d.features, 16u);
  EXPECT_FLOAT_EQ(d.images[5], 3.0f / 255.0f);
  const fs::path gi = test::write_file(dir() / "gz-images", gz(idx(0x803, {3, 4, 4}, 48)));
  const fs::path gl = test::write_file(dir() / "gz-labels", gz(idx(0x801, {3}, 3)));
  EXPECT_EQ(load_idx_files(gi, gl, 2, "test").count, 2u);
  EXPECT_EQ(load_idx_files(gi, gl, 3, "test").count, 3u);
  // More than the files hold is refused, naming who asked and the file (it was cut to 3 quietly).
  test::expect_error<UsageError>([&] { load_idx_files(gi, gl, 4, "config c.yaml: field 'data.train_samples'"); },
                                 {"config c.yaml: field 'data.train_samples' asks for 4 samples", "gz-images holds 3", "3 or fewer"});

  bad_idx(idx(0x803, {3, 4, 4}, 47), idx(0x801, {3}, 3), {"images-idx3-ubyte", "3 images of 4 x 4 pixels, 64 bytes in all", "holds 63 bytes"});
  bad_idx(idx(0x803, {3, 4, 4}, 49), idx(0x801, {3}, 3), {"images-idx3-ubyte", "holds 65 bytes"});
  bad_idx(idx(0x803, {3, 4, 4}, 48), idx(0x801, {3}, 2), {"labels-idx1-ubyte", "3 labels", "holds 10 bytes"});
  bad_idx(gz(idx(0x803, {3, 4, 4}, 40)), idx(0x801, {3}, 3), {"images-idx3-ubyte", "a gzip stream of 56 bytes"});
  {
    // Cut short, its last four bytes are not the trailer: the size they gave (a bogus number) is
    // not printed; what decompresses is.
    std::string cut = gz(idx(0x803, {3, 4, 4}, 48));
    cut.resize(cut.size() - 9);
    bad_idx(cut, idx(0x801, {3}, 3), {"images-idx3-ubyte", "a gzip stream that is damaged or cut short after", "zlib:"});
  }
  bad_idx(idx(0x802, {3, 4, 4}, 48), idx(0x801, {3}, 3), {"images-idx3-ubyte", "magic 2050", "expected 2051"});
  bad_idx(idx(0x803, {3, 4, 4}, 48), idx(0x801, {4}, 4), {"3 images", "has 4 labels"});
  bad_idx(idx(0x803, {3, 0, 4}, 0), idx(0x801, {3}, 3), {"image size 0 x 4 is out of range"});
  bad_idx(idx(0x803, {1, 65536, 65536}, 0), idx(0x801, {1}, 1), {"image size 65536 x 65536 is out of range"});
  // A header claiming 2^31 images of 28 x 28: refused by the length check, nothing allocated.
  bad_idx(idx(0x803, {1u << 31, 28, 28}, 784), idx(0x801, {1u << 31}, 1), {"2147483648 images of 28 x 28 pixels"});
  std::string labels = idx(0x801, {3}, 0);
  labels += std::string("\x01\x0c\x02", 3);
  bad_idx(idx(0x803, {3, 4, 4}, 48), labels, {"labels-idx1-ubyte", "label 12 of sample 1 is not a class 0-9"});
  // A gzip file is read to its end, even when only its first samples are used: zlib checks the
  // CRC there, and a damaged file was used quietly when the damage lay past the samples read.
  {
    std::string crc = gz(idx(0x803, {3, 4, 4}, 48));
    crc[crc.size() - 8] ^= 0x55;  // the trailer's CRC-32, before its size
    const fs::path ci = test::write_file(dir() / "crc-images", crc);
    test::expect_error<UsageError>([&] { load_idx_files(ci, gl, 1, "test"); }, {"crc-images", "damaged", "incorrect data check"});
  }
  // As gunzip reads them: bytes after the stream's end are ignored, and members are joined (the
  // last four bytes are no size then; the message said the file held the bytes it expected).
  {
    const std::string whole = idx(0x803, {3, 4, 4}, 48);
    const fs::path trailing = test::write_file(dir() / "trailing-images", gz(whole) + std::string(8, '\0'));
    const fs::path members = test::write_file(dir() / "member-images", gz(whole.substr(0, 20)) + gz(whole.substr(20)));
    for (const fs::path& p : {trailing, members}) {
      const Dataset joined = load_idx_files(p, gl, 0, "test");
      EXPECT_EQ(joined.count, 3u) << p;
      EXPECT_EQ(joined.images, d.images) << p;
    }
  }
  // A link loop where a file should be: named, not a bare filesystem_error.
  {
    const fs::path loop = test::fresh_dir(dir() / "loop");
    fs::create_directories(loop);
    fs::create_symlink(loop / "train-images-idx3-ubyte", loop / "train-images-idx3-ubyte");
    test::expect_error<UsageError>([&] { inspect_idx_dataset(loop, "train"); },
                                   {"dataset file " + (loop / "train-images-idx3-ubyte").string(), "Too many levels of symbolic links"});
  }
  // Consistent, but more than the memory in force.
  set_memory_limit(1000);
  bad_idx(idx(0x803, {3, 16, 16}, 768), idx(0x801, {3}, 3), {"needs about", "but only 1000 bytes is available"});
  set_memory_limit(0);
}

// A run stopped by run.max_cycles: below its bound the message says to raise it; at 2^62, its
// largest value, raising is no help and the message says the kernel is likely stuck.
TEST(CycleLimit, TheMessageSaysToRaiseTheLimitOnlyBelowItsBound) {
  RunConfig cfg;
  cfg.source = "limit.yaml";
  Wafer wafer(test::spec(), {2, 2});
  cfg.max_cycles = 10;
  const std::string low = cycle_limit_error(cfg, wafer).what();
  EXPECT_NE(low.find("run.max_cycles = 10 before the kernel finished; raise run.max_cycles (at most 2^62) in limit.yaml"),
            std::string::npos) << low;
  cfg.max_cycles = kMaxRunCycles;
  const std::string top = cycle_limit_error(cfg, wafer).what();
  EXPECT_EQ(top.find("raise"), std::string::npos) << top;
  EXPECT_NE(top.find("run.max_cycles = 4611686018427387904 before the kernel finished (2^62, its largest value) in limit.yaml"),
            std::string::npos) << top;
}

}  // namespace
}  // namespace wse
