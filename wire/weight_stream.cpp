#include "wire/weight_stream.hpp"

#include <bit>

#include "core/errors.hpp"
#include "core/half.hpp"
#include "wire/stream_validation.hpp"
#include "schemas/weight_stream_generated.h"

namespace wse {

namespace {

// Calls fn(position, k, n, value) for every weight of a slice, in stream order.
template <class Fn>
void for_each_weight(const LayerView& l, StreamSlice s, Fn&& fn) {
  uint32_t pos = 0;
  for (uint32_t k = s.begin; k < s.end; ++k)
    for (uint32_t n = 0; n < l.out; ++n) fn(pos++, k, n, l.at(k, n));
}

uint32_t half_bits(float v) { return float_to_half_bits(v); }

}  // namespace

const char* encoding_name(StreamEncoding e) {
  switch (e) {
    case StreamEncoding::Dense: return "dense fp32";
    case StreamEncoding::Sparse: return "sparse fp16+index";
    case StreamEncoding::DenseHalf: return "dense fp16 pairs";
  }
  return "unknown";
}

uint64_t stream_words(const LayerView& layer, StreamPass, StreamEncoding encoding, StreamSlice slice) {
  const uint64_t all = uint64_t(slice.end - slice.begin) * layer.out;
  if (encoding == StreamEncoding::Dense) return all;
  if (encoding == StreamEncoding::DenseHalf) return (all + 1) / 2;
  uint64_t n = 0;
  for_each_weight(layer, slice, [&](uint32_t, uint32_t k, uint32_t c, float) { n += layer.kept(k, c); });
  return n;
}

std::vector<SharedBuffer> encode_weight_streams(const LayerView& layer, uint64_t step, StreamPass pass,
                                                StreamEncoding encoding, const std::vector<StreamSlice>& slices) {
  std::vector<SharedBuffer> out;
  std::vector<uint32_t> payload;
  for (uint32_t c = 0; c < slices.size(); ++c) {
    payload.clear();
    bool too_far = false;
    // Row by row, a loop per encoding (what for_each_weight() gives, in the same order): a call,
    // a switch and a push per weight were a sixth of a functional training step.
    const StreamSlice sl = slices[c];
    const uint32_t out_n = layer.out;
    const uint64_t all = uint64_t(sl.end - sl.begin) * out_n;
    if (encoding == StreamEncoding::Dense) payload.resize(all);
    else if (encoding == StreamEncoding::DenseHalf) payload.assign((all + 1) / 2, 0u);
    uint64_t pos = 0;
    for (uint32_t k = sl.begin; k < sl.end; ++k) {
      const float* row = layer.row(k);
      const uint8_t* mask = layer.mask_row(k);
      switch (encoding) {
        case StreamEncoding::Dense:
          for (uint32_t n = 0; n < out_n; ++n) payload[pos + n] = std::bit_cast<uint32_t>(row[n]);
          break;
        case StreamEncoding::DenseHalf:
          for (uint32_t n = 0; n < out_n; ++n) {
            const uint64_t p = pos + n;
            payload[p / 2] |= half_bits(row[n]) << (p % 2 ? 16 : 0);
          }
          break;
        case StreamEncoding::Sparse:
          for (uint32_t n = 0; n < out_n; ++n) {
            const uint32_t h = half_bits(row[n]);
            if (!LayerView::kept(mask, n)) continue;
            const uint64_t p = pos + n;
            too_far |= p > 0xffff;
            payload.push_back(h | uint32_t(p << 16));
          }
          break;
      }
      pos += out_n;
    }
    const uint32_t weights = encoding == StreamEncoding::Sparse ? uint32_t(payload.size()) : uint32_t(all);
    if (too_far)
      throw UsageError("layer " + layer.name + ": a sparse weight stream slice holds more than 65536 positions, beyond a 16-bit index; use more PE columns");
    flatbuffers::FlatBufferBuilder fbb(1024 + payload.size() * 4);
    auto name = fbb.CreateString(layer.name);
    auto words = fbb.CreateVector(payload);
    fb::WeightStreamBuilder b(fbb);
    b.add_layer(name);
    b.add_layer_index(layer.index);
    b.add_step(step);
    b.add_pass(fb::Pass(pass));
    b.add_encoding(fb::Encoding(encoding));
    b.add_rows(layer.in + 1);
    b.add_cols(layer.out);
    b.add_column(c);
    b.add_row_begin(slices[c].begin);
    b.add_row_end(slices[c].end);
    b.add_nonzeros(weights);
    b.add_payload(words);
    fbb.Finish(b.Finish(), fb::WeightStreamIdentifier());
    out.push_back(std::make_shared<const Buffer>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize()));
  }
  return out;
}

namespace {

// The verifier, then the meaning checks; the buffer's table once both have passed.
const fb::WeightStream* checked(const Buffer& buffer, const std::string& what, const WeightStreamExpectation* expect) {
  flatbuffers::Verifier verifier(buffer.data(), buffer.size());
  if (buffer.size() < 8 || !fb::WeightStreamBufferHasIdentifier(buffer.data()) || !fb::VerifyWeightStreamBuffer(verifier))
    throw UsageError(what + ": not a valid WeightStream buffer (" + std::to_string(buffer.size()) +
                     " bytes failed the FlatBuffers verifier: corrupt or truncated)");
  const fb::WeightStream* ws = fb::GetWeightStream(buffer.data());
  const auto* payload = ws->payload();
  WeightStreamFields f;
  if (ws->layer()) f.layer = ws->layer()->string_view();
  f.layer_index = ws->layer_index(), f.rows = ws->rows(), f.cols = ws->cols(), f.column = ws->column();
  f.row_begin = ws->row_begin(), f.row_end = ws->row_end(), f.nonzeros = ws->nonzeros(), f.step = ws->step();
  f.pass = int(ws->pass()), f.encoding = int(ws->encoding());
  f.payload = payload ? payload->data() : nullptr, f.payload_size = payload ? payload->size() : 0;
  validate_weight_stream(f, what, expect);  // meaning, not only layout: wire/stream_validation.hpp
  return ws;
}

}  // namespace

uint64_t check_weight_stream(const Buffer& buffer, const std::string& what, const WeightStreamExpectation* expect) {
  const fb::WeightStream* ws = checked(buffer, what, expect);
  return (ws->payload() ? ws->payload()->size() : 0) + 1;
}

DecodedStream decode_weight_stream(const Buffer& buffer, const std::string& what, const WeightStreamExpectation* expect) {
  const fb::WeightStream* ws = checked(buffer, what, expect);
  const auto* payload = ws->payload();
  const uint32_t n = payload ? payload->size() : 0;
  DecodedStream d;
  d.column = ws->column();
  d.layer_index = ws->layer_index();
  d.layer = ws->layer() ? ws->layer()->str() : "";
  d.step = ws->step();
  d.rows = ws->rows();
  d.cols = ws->cols();
  d.slice_begin = ws->row_begin();
  d.slice_end = ws->row_end();
  d.pass = StreamPass(ws->pass());
  d.encoding = StreamEncoding(ws->encoding());
  d.weights = ws->nonzeros();
  d.words.reserve(n + 1);
  d.words.push_back(d.weights);
  if (payload) d.words.insert(d.words.end(), payload->begin(), payload->end());
  return d;
}

}  // namespace wse
