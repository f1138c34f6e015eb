#include "wire/stream_validation.hpp"

#include "core/errors.hpp"

namespace wse {

namespace {

std::string n(uint64_t v) { return std::to_string(v); }

[[noreturn]] void reject(const std::string& what, const std::string& field, const std::string& why) {
  throw UsageError(what + ": field '" + field + "': " + why);
}

const char* pass_name(StreamPass p) { return p == StreamPass::Forward ? "Forward" : "Backward"; }

void check_words(const WeightStreamFields& f, uint64_t words, const std::string& what) {
  if (f.payload_size != words)
    reject(what, "payload", n(f.payload_size) + " words for " + n(f.nonzeros) + " weights, expected " + n(words));
}

// Dense fp32: one word per position of the slice, in order; any bit pattern is a float.
void check_dense(const WeightStreamFields& f, uint64_t positions, const std::string& what) {
  if (f.nonzeros != positions)
    reject(what, "nonzeros", n(f.nonzeros) + " weights, expected " + n(positions) + " (a dense stream carries every position of its slice)");
  check_words(f, f.nonzeros, what);
}

// Dense fp16 pairs (mixed precision): every position, two per word, low half first; an odd
// count leaves the last word's high half 0.
void check_dense_half(const WeightStreamFields& f, uint64_t positions, const std::string& what) {
  if (f.nonzeros != positions)
    reject(what, "nonzeros", n(f.nonzeros) + " weights, expected " + n(positions) + " (a dense stream carries every position of its slice)");
  check_words(f, (uint64_t(f.nonzeros) + 1) / 2, what);
  if (f.nonzeros % 2 && f.payload_size && (f.payload[f.payload_size - 1] >> 16))
    reject(what, "payload[" + n(f.payload_size - 1) + "]", "the high half of the last word holds a weight beyond the slice's " + n(positions));
}

// Sparse fp16 value | 16-bit index << 16: at most one word per position, indices inside the
// slice and strictly increasing (the encoder emits positions in order, zeros left out).
void check_sparse(const WeightStreamFields& f, uint64_t positions, const std::string& what) {
  check_words(f, f.nonzeros, what);
  if (positions > 65536)
    reject(what, "row_end", "the slice covers " + n(positions) + " positions, more than a 16-bit sparse index can address (65536)");
  if (f.nonzeros > positions)
    reject(what, "nonzeros", n(f.nonzeros) + " weights, expected at most the slice's " + n(positions) + " positions");
  int64_t prev = -1;
  for (uint32_t i = 0; i < f.payload_size; ++i) {
    const uint32_t index = f.payload[i] >> 16;
    if (index >= positions)
      reject(what, "payload[" + n(i) + "]", "index " + n(index) + " is outside the slice (expected below " + n(positions) + ")");
    if (int64_t(index) <= prev)
      reject(what, "payload[" + n(i) + "]",
             "index " + n(index) + (int64_t(index) == prev ? " repeats" : " comes after") + " index " + n(uint64_t(prev)) +
                 " (expected strictly increasing indices: each position at most once, in order)");
    prev = index;
  }
}

// The rules of each encoding, by its value on the wire. A new encoding adds its StreamEncoding
// value, a check_* function and a case here.
using EncodingCheck = void (*)(const WeightStreamFields&, uint64_t positions, const std::string& what);
EncodingCheck encoding_check(int encoding) {
  switch (encoding) {
    case int(StreamEncoding::Dense): return check_dense;
    case int(StreamEncoding::Sparse): return check_sparse;
    case int(StreamEncoding::DenseHalf): return check_dense_half;
  }
  return nullptr;
}

}  // namespace

uint64_t slice_positions(uint32_t, uint32_t cols, StreamPass, StreamSlice s) {
  const uint64_t span = s.end >= s.begin ? s.end - s.begin : 0;
  return span * cols;  // both passes stream rows of the (inputs + bias) x outputs matrix
}

// The layer's name against the model's for the index it gave: a stream of another model's layer
// of the same shape would otherwise pass.
static void check_name(std::string_view got, std::string_view want, const std::string& what) {
  if (!want.empty() && got != want)
    reject(what, "layer", "'" + std::string(got) + "', expected '" + std::string(want) + "' (the model's layer at layer_index)");
}

void validate_weight_stream(const WeightStreamFields& f, const std::string& what, const WeightStreamExpectation* expect) {
  if (f.pass != int(StreamPass::Forward) && f.pass != int(StreamPass::Backward))
    reject(what, "pass", "value " + std::to_string(f.pass) + " is not a known pass (expected 0 = Forward or 1 = Backward)");
  const EncodingCheck check_encoding = encoding_check(f.encoding);
  if (!check_encoding)
    reject(what, "encoding", "value " + std::to_string(f.encoding) + " is not a known encoding (expected 0 = Dense, 1 = Sparse or 2 = DenseHalf)");
  const auto pass = StreamPass(f.pass);
  const auto encoding = StreamEncoding(f.encoding);
  if (f.rows < 2) reject(what, "rows", n(f.rows) + ", expected at least 2 (the layer's inputs plus the bias row)");
  if (f.cols < 1) reject(what, "cols", "0, expected at least 1 (the layer's outputs)");
  if (f.row_begin > f.row_end)
    reject(what, "row_begin", "slice [" + n(f.row_begin) + ", " + n(f.row_end) + ") is reversed (expected row_begin <= row_end)");
  // Both passes' slices cut the (inputs + bias) rows.
  if (f.row_end > f.rows)
    reject(what, "row_end", n(f.row_end) + " is outside the " + n(f.rows) + " x " + n(f.cols) + " matrix (a slice cuts its " +
                                n(f.rows) + " rows)");
  const uint64_t positions = slice_positions(f.rows, f.cols, pass, {f.row_begin, f.row_end});
  check_encoding(f, positions, what);
  if (!expect) return;
  const auto differs = [&](const char* field, uint64_t got, uint64_t want) {
    if (got != want) reject(what, field, n(got) + ", expected " + n(want) + " for the model reading it");
  };
  differs("layer_index", f.layer_index, expect->layer_index);
  check_name(f.layer, expect->layer, what);
  differs("rows", f.rows, expect->rows);
  differs("cols", f.cols, expect->cols);
  differs("column", f.column, expect->column);
  differs("step", f.step, expect->step);
  if (pass != expect->pass) reject(what, "pass", std::string(pass_name(pass)) + ", expected " + pass_name(expect->pass));
  if (encoding != expect->encoding)
    reject(what, "encoding", std::string(encoding_name(encoding)) + ", expected " + encoding_name(expect->encoding));
  differs("row_begin", f.row_begin, expect->slice.begin);
  differs("row_end", f.row_end, expect->slice.end);
}

void validate_gradient_stream(const GradientStreamFields& f, const std::string& what, const GradientStreamExpectation* expect) {
  if (f.rows < 1) reject(what, "rows", "0, expected at least 1");
  if (f.cols < 1) reject(what, "cols", "0, expected at least 1");
  const uint64_t numel = uint64_t(f.rows) * f.cols;
  if (!f.has_indices) {
    if (f.values != numel)
      reject(what, "values", n(f.values) + " values, expected rows x cols = " + n(f.rows) + " x " + n(f.cols) + " = " + n(numel));
  } else {
    // Sparse: a value per index, indices inside the matrix and strictly increasing.
    if (f.values != f.index_count)
      reject(what, "values", n(f.values) + " values for " + n(f.index_count) + " indices (expected one value per index)");
    if (f.index_count > numel) reject(what, "indices", n(f.index_count) + " indices for a " + n(numel) + "-element gradient");
    int64_t prev = -1;
    for (uint64_t i = 0; i < f.index_count; ++i) {
      const uint32_t index = f.indices[i];
      if (index >= numel)
        reject(what, "indices[" + n(i) + "]", "index " + n(index) + " is outside the " + n(f.rows) + " x " + n(f.cols) + " gradient");
      if (int64_t(index) <= prev)
        reject(what, "indices[" + n(i) + "]", "index " + n(index) + " after " + n(uint64_t(prev)) + " (expected strictly increasing indices)");
      prev = index;
    }
  }
  if (!expect) return;
  const auto differs = [&](const char* field, uint64_t got, uint64_t want) {
    if (got != want) reject(what, field, n(got) + ", expected " + n(want) + " for the model reading it");
  };
  differs("layer_index", f.layer_index, expect->layer_index);
  check_name(f.layer, expect->layer, what);
  differs("rows", f.rows, expect->rows);
  differs("cols", f.cols, expect->cols);
  differs("step", f.step, expect->step);
  if (f.wafer >= expect->wafers) reject(what, "wafer", n(f.wafer) + ", expected below " + n(expect->wafers) + " (the wafers in the run)");
}

}  // namespace wse
