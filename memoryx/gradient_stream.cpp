#include "memoryx/gradient_stream.hpp"

#include "fabric/errors.hpp"
#include "schemas/gradient_stream_generated.h"

namespace wse {

SharedBuffer encode_gradient_stream(const GradientMessage& g) {
  flatbuffers::FlatBufferBuilder fbb(256 + g.values.size() * 4);
  auto name = fbb.CreateString(g.layer);
  auto values = fbb.CreateVector(g.values);
  auto indices = g.indices.empty() ? flatbuffers::Offset<flatbuffers::Vector<uint32_t>>() : fbb.CreateVector(g.indices);
  fb::GradientStreamBuilder b(fbb);
  b.add_layer(name);
  b.add_layer_index(g.layer_index);
  b.add_step(g.step);
  b.add_wafer(g.wafer);
  b.add_rows(g.rows);
  b.add_cols(g.cols);
  b.add_values(values);
  if (!g.indices.empty()) b.add_indices(indices);
  fbb.Finish(b.Finish(), fb::GradientStreamIdentifier());
  return std::make_shared<const Buffer>(fbb.GetBufferPointer(), fbb.GetBufferPointer() + fbb.GetSize());
}

GradientMessage decode_gradient_stream(const Buffer& buffer, const std::string& what) {
  flatbuffers::Verifier verifier(buffer.data(), buffer.size());
  if (buffer.size() < 8 || !fb::GradientStreamBufferHasIdentifier(buffer.data()) || !fb::VerifyGradientStreamBuffer(verifier))
    throw UsageError(what + ": not a valid GradientStream buffer (" + std::to_string(buffer.size()) +
                     " bytes failed the FlatBuffers verifier: corrupt or truncated)");
  const fb::GradientStream* gs = fb::GetGradientStream(buffer.data());
  GradientMessage g;
  g.layer = gs->layer() ? gs->layer()->str() : "";
  g.layer_index = gs->layer_index();
  g.wafer = gs->wafer();
  g.rows = gs->rows();
  g.cols = gs->cols();
  g.step = gs->step();
  if (gs->values()) g.values.assign(gs->values()->begin(), gs->values()->end());
  if (gs->indices()) {
    g.indices.assign(gs->indices()->begin(), gs->indices()->end());
    if (g.indices.size() != g.values.size())
      throw UsageError(what + ": GradientStream holds " + std::to_string(g.values.size()) + " values for " +
                       std::to_string(g.indices.size()) + " indices");
    const uint64_t n = uint64_t(g.rows) * g.cols;
    for (size_t i = 0; i < g.indices.size(); ++i)
      if (g.indices[i] >= n || (i && g.indices[i] <= g.indices[i - 1]))
        throw UsageError(what + ": GradientStream index " + std::to_string(g.indices[i]) + " at " + std::to_string(i) +
                         " is outside the " + std::to_string(g.rows) + " x " + std::to_string(g.cols) + " gradient or not ascending");
    return g;
  }
  if (g.values.size() != size_t(g.rows) * g.cols)
    throw UsageError(what + ": GradientStream holds " + std::to_string(g.values.size()) + " values for a " + std::to_string(g.rows) + " x " +
                     std::to_string(g.cols) + " gradient");
  return g;
}

}  // namespace wse
