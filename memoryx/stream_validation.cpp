#include "memoryx/stream_validation.hpp"

#include "fabric/errors.hpp"

namespace wse {

namespace {

std::string n(uint64_t v) { return std::to_string(v); }

[[noreturn]] void reject(const std::string& what, const std::string& field, const std::string& why) {
  throw UsageError(what + ": field '" + field + "': " + why);
}

const char* pass_name(StreamPass p) { return p == StreamPass::Forward ? "Forward" : "Backward"; }
const char* encoding_name(StreamEncoding e) { return e == StreamEncoding::Dense ? "Dense" : "Sparse"; }

// Dense fp32: one word per position of the slice, in order; any bit pattern is a float.
void check_dense(const WeightStreamFields& f, uint64_t positions, const std::string& what) {
  if (f.nonzeros != positions)
    reject(what, "nonzeros", n(f.nonzeros) + " weights, expected " + n(positions) + " (a dense stream carries every position of its slice)");
}

// Sparse fp16 value | 16-bit index << 16: at most one word per position, indices inside the
// slice and strictly increasing (the encoder emits positions in order, zeros left out).
void check_sparse(const WeightStreamFields& f, uint64_t positions, const std::string& what) {
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

// The rules of each encoding, by its value on the wire. A new encoding (dense fp16 pairs, two
// weights a word, say) adds its StreamEncoding value, a check_* function and a case here.
using EncodingCheck = void (*)(const WeightStreamFields&, uint64_t positions, const std::string& what);
EncodingCheck encoding_check(int encoding) {
  switch (encoding) {
    case int(StreamEncoding::Dense): return check_dense;
    case int(StreamEncoding::Sparse): return check_sparse;
  }
  return nullptr;
}

}  // namespace

uint64_t slice_positions(uint32_t rows, uint32_t cols, StreamPass pass, StreamSlice s) {
  const uint64_t span = s.end >= s.begin ? s.end - s.begin : 0;
  return pass == StreamPass::Forward ? span * cols : span * (rows ? rows - 1 : 0);
}

void validate_weight_stream(const WeightStreamFields& f, const std::string& what, const WeightStreamExpectation* expect) {
  if (f.pass != int(StreamPass::Forward) && f.pass != int(StreamPass::Backward))
    reject(what, "pass", "value " + std::to_string(f.pass) + " is not a known pass (expected 0 = Forward or 1 = Backward)");
  const EncodingCheck check_encoding = encoding_check(f.encoding);
  if (!check_encoding)
    reject(what, "encoding", "value " + std::to_string(f.encoding) + " is not a known encoding (expected 0 = Dense or 1 = Sparse)");
  const auto pass = StreamPass(f.pass);
  const auto encoding = StreamEncoding(f.encoding);
  if (f.rows < 2) reject(what, "rows", n(f.rows) + ", expected at least 2 (the layer's inputs plus the bias row)");
  if (f.cols < 1) reject(what, "cols", "0, expected at least 1 (the layer's outputs)");
  if (f.row_begin > f.row_end)
    reject(what, "row_begin", "slice [" + n(f.row_begin) + ", " + n(f.row_end) + ") is reversed (expected row_begin <= row_end)");
  // Forward slices cut the (inputs + bias) rows; backward slices cut the output columns.
  const uint32_t extent = pass == StreamPass::Forward ? f.rows : f.cols;
  if (f.row_end > extent)
    reject(what, "row_end", n(f.row_end) + " is outside the " + n(f.rows) + " x " + n(f.cols) + " matrix (a " +
                                (pass == StreamPass::Forward ? "forward slice cuts its " + n(f.rows) + " rows"
                                                             : "backward slice cuts its " + n(f.cols) + " columns") +
                                ")");
  if (f.nonzeros != f.payload_size)
    reject(what, "nonzeros", n(f.nonzeros) + " weights, but the payload carries " + n(f.payload_size));
  const uint64_t positions = slice_positions(f.rows, f.cols, pass, {f.row_begin, f.row_end});
  check_encoding(f, positions, what);
  if (!expect) return;
  const auto differs = [&](const char* field, uint64_t got, uint64_t want) {
    if (got != want) reject(what, field, n(got) + ", expected " + n(want) + " for the model reading it");
  };
  differs("layer_index", f.layer_index, expect->layer_index);
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
  if (f.values != uint64_t(f.rows) * f.cols)
    reject(what, "values", n(f.values) + " values, expected rows x cols = " + n(f.rows) + " x " + n(f.cols) + " = " +
                               n(uint64_t(f.rows) * f.cols));
  if (!expect) return;
  const auto differs = [&](const char* field, uint64_t got, uint64_t want) {
    if (got != want) reject(what, field, n(got) + ", expected " + n(want) + " for the model reading it");
  };
  differs("layer_index", f.layer_index, expect->layer_index);
  differs("rows", f.rows, expect->rows);
  differs("cols", f.cols, expect->cols);
  differs("step", f.step, expect->step);
  if (f.wafer >= expect->wafers) reject(what, "wafer", n(f.wafer) + ", expected below " + n(expect->wafers) + " (the wafers in the run)");
}

}  // namespace wse
