// Uses the installed package's rooms from outside the tree: wse::wafer (a 2 x 2 wafer whose PEs
// pass three floats through a router) and wse::wire (a WeightStream encoded, decoded, read with
// the installed generated FlatBuffers header, and rejected when corrupt). Exit 1 on any mismatch.
#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include <flatbuffers/flatbuffers.h>

#include "core/errors.hpp"
#include "core/machine_spec.hpp"
#include "pe/pe.hpp"
#include "schemas/weight_stream_generated.h"
#include "wafer/wafer.hpp"
#include "wire/weight_stream.hpp"

namespace {

int failures = 0;

void check(bool ok, const char* what) {
  if (!ok) {
    std::fprintf(stderr, "FAIL: %s\n", what);
    ++failures;
  }
}

constexpr wse::Colour kC = 3;

// PE (0,0): streams its three floats out on colour kC.
void send_three(wse::PeContext& ctx) {
  float* v = ctx.at<float>(0u);
  ctx.fmovs(wse::fabout(kC, 3), ctx.mem(v, 3));
}

// PE (1,1): SRAM offset 0 = sum of the floats received, offset 4 = how many.
void accumulate(wse::PeContext& ctx, wse::Wavelet w) {
  float x;
  std::memcpy(&x, &w.payload, sizeof x);
  *ctx.at<float>(0u) += x;
  ++*ctx.at<uint32_t>(4u);
}

void wafer_2x2() {
  using namespace wse;
  MachineSpec spec;  // WSE-2 figures
  Wafer w(spec, {2, 2});
  Mesh& m = w.mesh();
  // (0,0) -> east -> (1,0), whose router turns the colour south -> (1,1)'s PE.
  m.set_route({0, 0}, kC, Route::make(Dir::Ramp, {Dir::East}));
  m.set_route({1, 0}, kC, Route::make(Dir::West, {Dir::South}));
  m.set_route({1, 1}, kC, Route::make(Dir::North, {Dir::Ramp}));
  Program sender;
  sender.name = "sender";
  sender.start_task = sender.local(send_three, "send");
  Program receiver;
  receiver.name = "receiver";
  receiver.on(kC, accumulate, "sum");
  w.load({0, 0}, &sender);
  w.allocate({0, 0}, "v", 12);
  const float v[3] = {1.5f, 2.25f, 4.0f};
  std::memcpy(w.pe({0, 0}).sram.base(), v, sizeof v);
  w.load({1, 1}, &receiver);
  w.allocate({1, 1}, "sum", 8);
  w.finalize(1);
  const WaferRun run = w.run(100'000);

  float sum = 0;
  uint32_t n = 0;
  std::memcpy(&sum, w.pe({1, 1}).sram.base(), sizeof sum);
  std::memcpy(&n, w.pe({1, 1}).sram.base() + 4, sizeof n);
  check(n == 3, "PE (1,1) received 3 wavelets");
  check(sum == 7.75f, "PE (1,1) summed 1.5 + 2.25 + 4");
  check(run.cycles > 0 && run.cycles < 100'000, "the wafer run ended on its own");
  std::printf("wafer 2x2: %u wavelets, sum %g, %llu cycles\n", n, double(sum), (unsigned long long)run.cycles);
}

// A PE's fmacs rounds b * s before adding a (the machine's order, docs/pe-programming.md), even
// compiled here, where the op's arithmetic is inlined under this project's flags (-march=native:
// FMA instructions). -1 + (1 + 2^-12)^2 is 2^-11 with the product rounded (ties to even drop its
// 2^-24), 2^-11 + 2^-24 fused.
void mac_one(wse::PeContext& ctx) {
  float* v = ctx.at<float>(0u);
  ctx.fmacs(ctx.mem(v, 1), ctx.mem(v, 1), ctx.mem(v + 1, 1), v[2]);
}

void fmacs_rounds_its_product() {
  using namespace wse;
  Wafer w(MachineSpec{}, {1, 1});
  Program p;
  p.name = "mac";
  p.start_task = p.local(mac_one, "mac");
  w.load({0, 0}, &p);
  w.allocate({0, 0}, "v", 12);
  const float v[3] = {-1.0f, 1.0f + 0x1p-12f, 1.0f + 0x1p-12f};
  std::memcpy(w.pe({0, 0}).sram.base(), v, sizeof v);
  w.finalize(1);
  w.run(1000);
  float got = 0;
  std::memcpy(&got, w.pe({0, 0}).sram.base(), sizeof got);
  check(got == 0x1p-11f, "fmacs rounds its product before the add (no fused multiply-add)");
  std::printf("fmacs: -1 + (1 + 2^-12)^2 = %a\n", double(got));
}

void weight_stream() {
  using namespace wse;
  const float weight[2 * 3] = {1, 2, 3, 4, 5, 6};  // in = 2, out = 3, row-major
  const float bias[3] = {0.5f, 0.25f, 0.125f};
  LayerView layer;
  layer.name = "fc1";
  layer.index = 1;
  layer.in = 2;
  layer.out = 3;
  layer.weight = weight;
  layer.bias = bias;
  const std::vector<SharedBuffer> streams =
      encode_weight_streams(layer, /*step=*/5, StreamPass::Forward, StreamEncoding::Dense, {{0, 3}});
  check(streams.size() == 1, "one stream per column");
  if (streams.size() != 1) return;

  const DecodedStream d = decode_weight_stream(*streams[0], "consumer stream");
  float payload_sum = 0;
  for (size_t i = 1; i < d.words.size(); ++i) {
    float x;
    std::memcpy(&x, &d.words[i], sizeof x);
    payload_sum += x;
  }
  check(d.layer_index == 1 && d.rows == 3 && d.cols == 3, "decoded layer index and shape");
  check(d.weights == 9 && d.words.size() == 10 && d.words[0] == 9, "header word + 9 fp32 weights");
  check(payload_sum == 21.875f, "the weights and the bias row, all of them");

  // The installed generated header reads the same bytes.
  const Buffer& b = *streams[0];
  flatbuffers::Verifier verifier(b.data(), b.size());
  check(fb::VerifyWeightStreamBuffer(verifier), "flatbuffers verifier accepts the stream");
  const fb::WeightStream* ws = fb::GetWeightStream(b.data());
  check(ws->step() == 5 && ws->layer()->str() == "fc1", "generated accessors: step and layer name");

  // A truncated buffer is a UsageError (core/errors.hpp), thrown across the installed library.
  Buffer truncated(b.begin(), b.begin() + b.size() / 2);
  bool rejected = false;
  try {
    decode_weight_stream(truncated, "truncated stream");
  } catch (const UsageError&) {
    rejected = true;
  }
  check(rejected, "a truncated stream is rejected with UsageError");
  std::printf("weight stream: %zu bytes, %u weights, sum %g\n", b.size(), d.weights, double(payload_sum));
}

}  // namespace

int main() {
  try {
    wafer_2x2();
    weight_stream();
    fmacs_rounds_its_product();
  } catch (const std::exception& e) {
    std::fprintf(stderr, "FAIL: exception: %s\n", e.what());
    return 1;
  }
  if (failures) {
    std::fprintf(stderr, "%d check(s) failed\n", failures);
    return 1;
  }
  std::printf("package consumer: all checks passed\n");
  return 0;
}
