#include "wire/gradient_stream.hpp"

#include "core/errors.hpp"
#include "wire/stream_validation.hpp"
#include "schemas/gradient_stream_generated.h"

namespace wse {

SharedBuffer encode_gradient_stream(const GradientMessage& g) {
  flatbuffers::FlatBufferBuilder fbb(256 + g.values.size() * 4);
  auto name = fbb.CreateString(g.layer);
  auto values = fbb.CreateVector(g.values);
  const bool sparse = g.sparse || !g.indices.empty();
  auto indices = sparse ? fbb.CreateVector(g.indices) : flatbuffers::Offset<flatbuffers::Vector<uint32_t>>();
  fb::GradientStreamBuilder b(fbb);
  b.add_layer(name);
  b.add_layer_index(g.layer_index);
  b.add_step(g.step);
  b.add_wafer(g.wafer);
  b.add_rows(g.rows);
  b.add_cols(g.cols);
  b.add_values(values);
  if (sparse) b.add_indices(indices);
  fbb.Finish(b.Finish(), fb::GradientStreamIdentifier());
  return std::make_shared<const Buffer>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

GradientMessage decode_gradient_stream(const Buffer& buffer, const std::string& what, const GradientStreamExpectation* expect) {
  flatbuffers::Verifier verifier(buffer.data(), buffer.size());
  if (buffer.size() < 8 || !fb::GradientStreamBufferHasIdentifier(buffer.data()) || !fb::VerifyGradientStreamBuffer(verifier))
    throw UsageError(what + ": not a valid GradientStream buffer (" + std::to_string(buffer.size()) +
                     " bytes failed the FlatBuffers verifier: corrupt or truncated)");
  const fb::GradientStream* gs = fb::GetGradientStream(buffer.data());
  GradientStreamFields f;
  if (gs->layer()) f.layer = gs->layer()->string_view();
  f.layer_index = gs->layer_index(), f.wafer = gs->wafer(), f.rows = gs->rows(), f.cols = gs->cols(), f.step = gs->step();
  f.values = gs->values() ? gs->values()->size() : 0;
  if (gs->indices()) f.has_indices = true, f.indices = gs->indices()->data(), f.index_count = gs->indices()->size();
  validate_gradient_stream(f, what, expect);  // meaning, not only layout: wire/stream_validation.hpp
  GradientMessage g;
  g.layer = gs->layer() ? gs->layer()->str() : "";
  g.layer_index = gs->layer_index();
  g.wafer = gs->wafer();
  g.rows = gs->rows();
  g.cols = gs->cols();
  g.step = gs->step();
  if (gs->values()) g.values.assign(gs->values()->begin(), gs->values()->end());
  if (gs->indices()) g.indices.assign(gs->indices()->begin(), gs->indices()->end()), g.sparse = true;
  return g;
}

}  // namespace wse
