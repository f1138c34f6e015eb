#include "kernels/gemv/gemv.hpp"

#include <cstring>

#include "core/errors.hpp"
#include "core/splitmix.hpp"

namespace wse {

namespace {

// The PE program's variables, at SRAM offset 0 of every GEMV PE.
struct GemvVars {
  uint32_t a, y, x;     // byte offsets of the A tile (column-major), y, and the received x
  uint32_t m, n;        // local tile rows and columns
  uint8_t psum_in;      // colour the west neighbour's partial y arrives on
  uint8_t psum_out;     // colour this PE sends its partial y on
  uint8_t first_column;
};

constexpr uint8_t kComputeTask = 1;

// x streams in from the north: one asynchronous move into SRAM, then the compute task.
void receive_x(PeContext& ctx) {
  auto& v = *ctx.at<GemvVars>(0u);
  ctx.fmovs(mem1d(v.x, v.n), fabin(GemvKernel::kX, v.n), {.async = true, .activate = TaskRef::local(kComputeTask)});
}

// y = A x with memory DSD ops (one @fmacs per column of the tile), then the partial sum goes east:
// the first column sends its y, every other column adds its y to the partial sum streaming in
// from the west and passes it on, in one streaming @fadds.
void compute(PeContext& ctx) {
  auto& v = *ctx.at<GemvVars>(0u);
  const float* x = ctx.at<float>(v.x);
  const Dsd y = mem1d(v.y, v.m);
  for (uint32_t j = 0; j < v.n; ++j) ctx.fmacs(y, y, mem1d(v.a + j * v.m * 4, v.m), x[j]);
  if (v.first_column) ctx.fmovs(fabout(v.psum_out, v.m), y);
  else ctx.fadds(fabout(v.psum_out, v.m), y, fabin(v.psum_in, v.m));
}

float unit(uint64_t seed, uint64_t stream, uint64_t i) {
  uint64_t h = splitmix64(splitmix64(seed ^ (stream << 56)) + i);
  return float(int64_t(h >> 40) - (int64_t(1) << 23)) / float(1 << 23);
}

}  // namespace

GemvProblem GemvProblem::random(uint32_t rows, uint32_t cols, uint64_t seed) {
  GemvProblem p{rows, cols, std::vector<float>(size_t(rows) * cols), std::vector<float>(cols)};
  for (size_t i = 0; i < p.a.size(); ++i) p.a[i] = unit(seed, 1, i);
  for (size_t j = 0; j < p.x.size(); ++j) p.x[j] = unit(seed, 2, j);
  return p;
}

void GemvKernel::check_tiles(uint32_t rows, uint32_t cols, uint32_t q, uint32_t p, uint32_t sram) {
  if (q > cols)
    throw ConfigError("field 'gemv.grid.width': " + std::to_string(q) + " PE columns for A's " + std::to_string(cols) +
                      " columns (gemv.cols); every PE needs at least one element");
  if (p > rows)
    throw ConfigError("field 'gemv.grid.height': " + std::to_string(p) + " PE rows for A's " + std::to_string(rows) +
                      " rows (gemv.rows); every PE needs at least one element");
  // The largest tile (a row block and a column block of the largest sizes) must fit a PE's SRAM
  // with its x, y and the variables, as SRAM places them (each buffer rounded up to 8 bytes): said
  // here in the config's terms, where the placement would name only a buffer of one PE.
  const uint64_t mr = (uint64_t(rows) + p - 1) / p, nc = (uint64_t(cols) + q - 1) / q;
  const uint64_t need = Sram::placed(sizeof(GemvVars)) + Sram::placed(mr * nc * 4) + Sram::placed(mr * 4) + Sram::placed(nc * 4);
  if (need > sram)
    throw ConfigError("fields 'gemv.rows' and 'gemv.cols': a " + std::to_string(rows) + " x " + std::to_string(cols) +
                      " matrix on a " + std::to_string(q) + " x " + std::to_string(p) + " PE grid puts a tile of up to " +
                      std::to_string(mr) + " x " + std::to_string(nc) + " on a PE: " + std::to_string(need) +
                      " bytes with its x, y and the kernel's variables, beyond the " + std::to_string(sram) +
                      " bytes of a PE's SRAM; use a larger mesh (mesh.width, mesh.height) or a smaller matrix");
  // A tile's rows and columns are DSD extents, a u16 each (pe/pe.cpp): a machine with more SRAM
  // than a WSE-2's placed a 1 x 100,000 tile that the run then refused naming an op.
  if (mr > 0xffff || nc > 0xffff)
    throw ConfigError("fields 'gemv.rows' and 'gemv.cols': a tile of up to " + std::to_string(mr) + " x " + std::to_string(nc) +
                      " on a PE of the " + std::to_string(q) + " x " + std::to_string(p) +
                      " grid; a PE's DSDs reach at most 65,535 elements (a u16), so a tile has at most 65,535 rows and columns");
}

GemvKernel::GemvKernel(Wafer& wafer, const GemvProblem& prob, uint32_t grid_width, uint32_t grid_height) {
  const MeshShape mesh = wafer.shape();
  q_ = grid_width ? grid_width : std::min(mesh.width, prob.cols);
  p_ = grid_height ? grid_height : std::min(mesh.height, prob.rows);
  if (q_ > mesh.width || p_ > mesh.height)
    throw ConfigError("gemv: grid " + std::to_string(q_) + "x" + std::to_string(p_) + " does not fit the " +
                      std::to_string(mesh.width) + "x" + std::to_string(mesh.height) + " mesh");
  check_tiles(prob.rows, prob.cols, q_, p_, wafer.spec().sram_bytes_per_pe);
  row_split_ = {prob.rows, p_};
  col_split_ = {prob.cols, q_};

  program_.name = "gemv";
  program_.start_task = program_.local(receive_x, "receive_x");
  program_.microthreads = 1;  // x's move in from the north
  if (program_.local(compute, "compute") != kComputeTask) throw std::logic_error("gemv: compute task id");
  program_.block(kX).block(psum_colour(0)).block(psum_colour(1));

  Mesh& m = wafer.mesh();
  for (uint32_t r = 0; r < p_; ++r) {
    for (uint32_t c = 0; c < mesh.width; ++c) {
      if (c < q_) {
        Route x_route = Route::make(Dir::North, {Dir::Ramp});
        if (r + 1 < p_) x_route.tx |= bit(Dir::South);
        m.set_route({c, r}, kX, x_route);
        m.set_route({c, r}, psum_colour(c), Route::make(Dir::Ramp, {Dir::East}));
        if (c > 0) m.set_route({c, r}, psum_colour(c - 1), Route::make(Dir::West, {Dir::Ramp}));
      } else {
        m.set_route({c, r}, psum_colour(q_ - 1), Route::make(Dir::West, {Dir::East}));  // pass through to the edge
      }
    }
    EgressPort& out = m.add_egress({mesh.width - 1, r}, Dir::East);
    out.reserve(row_split_.size(r));
    egress_.push_back(&out);
  }
  for (uint32_t c = 0; c < q_; ++c) {
    IngressPort& in = m.add_ingress({c, 0}, Dir::North);
    for (uint32_t j = col_split_.begin(c); j < col_split_.begin(c + 1); ++j) in.enqueue(Wavelet::f32(kX, prob.x[j]));
  }

  // SRAM: variables, the A tile column-major (so column j is contiguous for fmac), y, psum.
  for (uint32_t r = 0; r < p_; ++r) {
    for (uint32_t c = 0; c < q_; ++c) {
      const Coord pe{c, r};
      const uint32_t mr = row_split_.size(r), nc = col_split_.size(c);
      wafer.load(pe, &program_);
      SramRef vars = wafer.allocate(pe, "vars", sizeof(GemvVars));
      SramRef a = wafer.allocate(pe, "A", mr * nc * 4);
      SramRef y = wafer.allocate(pe, "y", mr * 4);
      SramRef xs = wafer.allocate(pe, "x", nc * 4);
      uint8_t* base = wafer.pe(pe).sram.base();
      GemvVars v{a.offset, y.offset, xs.offset, mr, nc, psum_colour(c + 1), psum_colour(c), uint8_t(c == 0)};
      std::memcpy(base + vars.offset, &v, sizeof v);
      float* tile = reinterpret_cast<float*>(base + a.offset);
      const uint32_t i0 = row_split_.begin(r), j0 = col_split_.begin(c);
      for (uint32_t j = 0; j < nc; ++j)
        for (uint32_t i = 0; i < mr; ++i) tile[size_t(j) * mr + i] = prob.a[size_t(i0 + i) * prob.cols + j0 + j];
      std::memset(base + y.offset, 0, y.bytes);
    }
  }
}

std::vector<float> GemvKernel::host_sum(const GemvProblem& prob) const {
  // Each PE: y = 0, then y += A[:, j] * x[j] for its columns in order, the product rounded to fp32
  // before the sum (@fmacs is not fused: docs/pe-programming.md). Along a row: the first column's
  // y, then each column's added in turn, west to east (@fadds).
  std::vector<float> y(prob.rows, 0.0f);
  for (uint32_t i = 0; i < prob.rows; ++i) {
    float row = 0.0f;
    for (uint32_t c = 0; c < q_; ++c) {
      float part = 0.0f;
      for (uint32_t j = col_split_.begin(c); j < col_split_.begin(c + 1); ++j) {
        const float product = prob.a[size_t(i) * prob.cols + j] * prob.x[j];
        part = part + product;
      }
      row = c == 0 ? part : row + part;
    }
    y[i] = row;
  }
  return y;
}

std::vector<float> GemvKernel::result() const {
  std::vector<float> y(row_split_.total);
  for (uint32_t r = 0; r < p_; ++r) {
    const auto& got = egress_[r]->received();
    if (got.size() != row_split_.size(r))
      throw std::runtime_error("gemv: row block " + std::to_string(r) + " delivered " + std::to_string(got.size()) +
                               " of " + std::to_string(row_split_.size(r)) + " values (did the run stop early?)");
    for (size_t i = 0; i < got.size(); ++i) y[row_split_.begin(r) + i] = got[i].wavelet.as_f32();
  }
  return y;
}

}  // namespace wse
