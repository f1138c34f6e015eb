#include "tools/dump_view.hpp"

#include <fstream>
#include <iterator>
#include <set>

#include "core/errors.hpp"
#include "core/shown.hpp"
#include "io/input_file.hpp"
#include "io/memory_limit.hpp"
#include "schemas/activity_dump_generated.h"

namespace wse {

namespace {

struct Reader {
  std::string file;

  [[noreturn]] void fail(const std::string& why) const {
    throw UsageError("activity dump " + file + ": " + why);
  }

  // Decodes a column of `expect` varints; anything else is a corrupt dump.
  template <class Out>
  void column(const fb::Column* c, size_t expect, const char* what, Out&& out) const {
    if (!c || !c->varints()) fail(std::string("missing column in ") + what);
    if (c->count() != expect)
      fail(std::string(what) + ": a column holds " + std::to_string(c->count()) + " values, expected " +
           std::to_string(expect));
    const uint8_t* p = c->varints()->data();
    const uint8_t* end = p + c->varints()->size();
    for (size_t i = 0; i < expect; ++i) {
      uint64_t v = 0;
      for (int shift = 0;; shift += 7) {
        if (p == end || shift > 63) fail(std::string(what) + ": truncated or malformed varint column");
        const uint8_t b = *p++;
        v |= uint64_t(b & 0x7f) << shift;
        if (!(b & 0x80)) break;
      }
      out(i, v);
    }
    if (p != end) fail(std::string(what) + ": trailing bytes in a varint column");
  }

  static uint32_t u32(uint64_t v) { return v > UINT32_MAX ? UINT32_MAX : uint32_t(v); }
};

std::string str(const flatbuffers::String* s) { return s ? s->str() : std::string(); }

// Names and units wse writes are a few words; many entries of a dump may point at one table, so a
// long name copied per entry multiplied the file (a megabyte's name, 3000 times: gigabytes).
constexpr size_t kMaxNameBytes = 256;

// The verifier checks a vector's length word for 4-byte alignment, not its elements: a corrupt
// buffer can put 8-byte numbers at an address 4 mod 8, and reading them is undefined (found by
// fuzz_activity_dump). A writer's buffer never does; such a vector is a corrupt dump.
bool aligned(const flatbuffers::Vector<uint64_t>* v) {
  return reinterpret_cast<uintptr_t>(v->data()) % alignof(uint64_t) == 0;
}

}  // namespace

DumpView load_dump_view(const std::filesystem::path& path) {
  Reader rd{path.string()};
  // A FlatBuffer is at most 2 GiB.
  const std::vector<uint8_t> bytes = read_input_file(path, "activity dump", uint64_t(1) << 31);
  if (bytes.size() < 8 || !fb::ActivityDumpBufferHasIdentifier(bytes.data()))
    rd.fail("not an activity dump (no WSAD identifier; empty, truncated or another file type)");
  flatbuffers::Verifier verifier(bytes.data(), bytes.size(), 64, 100'000'000);
  if (!fb::VerifyActivityDumpBuffer(verifier)) rd.fail("corrupt or truncated (FlatBuffers verification failed)");
  const fb::ActivityDump* d = fb::GetActivityDump(bytes.data());
  if (d->format_version() != 1)
    rd.fail("format version " + std::to_string(d->format_version()) + " is not supported (expected 1)");

  DumpView v;
  v.width = d->width(), v.height = d->height();
  v.machine = str(d->machine()), v.layer = str(d->layer()), v.pass = str(d->pass());
  v.interval_cycles = d->interval_cycles(), v.cycles = d->cycles(), v.start_cycle = d->start_cycle();
  if (!d->interval_starts()) rd.fail("missing interval_starts");
  if (!aligned(d->interval_starts())) rd.fail("corrupt: field 'interval_starts' is not 8-byte aligned");
  v.interval_starts.assign(d->interval_starts()->begin(), d->interval_starts()->end());
  const size_t n = v.interval_starts.size();
  // Every rate the pictures and the viewer draw divides by an interval's length: the header's
  // interval must be at least a cycle, the first interval start at the dump's cycle 0, and no
  // interval longer than the header's (an edited `cycles` of 10^12 had the last one's wavelets
  // spread over 10^12 cycles).
  if (v.interval_cycles == 0) rd.fail("field 'interval_cycles' is 0 (expected at least 1 cycle)");
  if (n > 0 && v.interval_starts[0] != 0)
    rd.fail("field 'interval_starts': the first interval starts at cycle " + std::to_string(v.interval_starts[0]) + ", expected 0");
  for (size_t k = 0; k < n; ++k) {
    const uint64_t end = k + 1 < n ? v.interval_starts[k + 1] : v.cycles;
    if (v.interval_starts[k] > end) rd.fail("interval starts out of order");
    if (end - v.interval_starts[k] > v.interval_cycles)
      rd.fail("interval " + std::to_string(k) + " is " + std::to_string(end - v.interval_starts[k]) + " cycles long, beyond the " +
              std::to_string(v.interval_cycles) + " of field 'interval_cycles'" + (k + 1 == n ? " (field 'cycles' " + std::to_string(v.cycles) + ")" : ""));
  }
  if (v.width == 0 || v.height == 0 || v.width > (1u << 16) || v.height > (1u << 16))
    rd.fail("mesh " + std::to_string(v.width) + "x" + std::to_string(v.height) + " is out of range");
  const uint64_t grid = uint64_t(v.width) * v.height;

  // Stored tiles: ascending ids, delta-encoded.
  uint64_t tile = 0;
  const size_t ntiles = d->tiles() ? d->tiles()->count() : 0;
  if (ntiles > grid) rd.fail("more stored tiles than the mesh has");
  v.tiles.resize(ntiles);
  rd.column(d->tiles(), ntiles, "tiles", [&](size_t i, uint64_t delta) {
    tile += delta;
    if (delta >= grid || tile >= grid || (i > 0 && delta == 0)) rd.fail("tile ids out of range or not ascending");
    v.tiles[i] = uint32_t(tile);
  });

  // The view is dense (a W x H grid per metric and interval, zeros for tiles not stored): make
  // sure it fits before allocating it, so a huge mesh in a small file is refused, not a bad_alloc.
  {
    const auto count = [](const auto* v) -> uint64_t { return v ? v->size() : 0; };
    const uint64_t pe_grids = add_sat(mul_sat(add_sat(count(d->pe_metrics()), 1), n), count(d->sram_buffers()));  // + busy_cycles
    uint64_t cells = mul_sat(pe_grids, grid);
    cells = add_sat(cells, mul_sat(mul_sat(count(d->link_metrics()), n), count(d->links())));
    cells = add_sat(cells, mul_sat(mul_sat(count(d->colour_metrics()), n), d->colours()));
    cells = add_sat(cells, mul_sat(mul_sat(count(d->lane_metrics()), n), count(d->lanes())));
    try {
      check_memory(mul_sat(cells, sizeof(uint32_t)), "viewing it (a " + std::to_string(v.width) + "x" + std::to_string(v.height) + " mesh over " +
                                                         std::to_string(n) + " intervals)");
    } catch (const UsageError& e) {
      rd.fail(e.what());
    }
  }

  auto name = [&](const flatbuffers::String* text, const char* what) {
    if (text && text->size() > kMaxNameBytes)
      rd.fail(std::string("a ") + what + " of " + std::to_string(text->size()) + " bytes (at most " + std::to_string(kMaxNameBytes) + " expected)");
    // Names reach the terminal, pictures' titles and the viewer's page: a control byte (an escape
    // that would act on the terminal) is no name wse writes.
    std::string s = str(text);
    if (shown(s) != s) rd.fail(std::string("a ") + what + " holding a control byte: '" + shown(s) + "' (expected printable text)");
    return s;
  };
  auto metric_frames = [&](const fb::Metric* m, size_t expect_frames, size_t count, const char* what,
                           auto&& store) {
    if (!m || !m->frames()) rd.fail(std::string("missing frames in ") + what);
    if (m->frames()->size() != expect_frames)
      rd.fail(std::string(what) + " '" + str(m->name()) + "' has " + std::to_string(m->frames()->size()) +
              " frames, expected " + std::to_string(expect_frames));
    for (size_t k = 0; k < expect_frames; ++k) rd.column(m->frames()->Get(uint32_t(k)), count, what, [&](size_t i, uint64_t x) {
      store(k, i, x);
    });
  };
  auto pe_grids = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::Metric>>* ms, size_t frames,
                      std::vector<MetricGrid>& out, const char* what) {
    if (!ms) return;
    for (const fb::Metric* m : *ms) {
      if (!m) rd.fail(std::string("missing ") + what);
      MetricGrid g{name(m->name(), "name"), name(m->unit(), "unit"),
                   std::vector<std::vector<uint32_t>>(frames, std::vector<uint32_t>(grid, 0))};
      metric_frames(m, frames, ntiles, what, [&](size_t k, size_t i, uint64_t x) { g.frames[k][v.tiles[i]] = Reader::u32(x); });
      out.push_back(std::move(g));
    }
  };
  auto flat = [&](const flatbuffers::Vector<flatbuffers::Offset<fb::Metric>>* ms, size_t count,
                  std::vector<MetricGrid>& out, const char* what) {
    if (!ms) return;
    for (const fb::Metric* m : *ms) {
      if (!m) rd.fail(std::string("missing ") + what);
      MetricGrid g{name(m->name(), "name"), name(m->unit(), "unit"), std::vector<std::vector<uint32_t>>(n, std::vector<uint32_t>(count))};
      metric_frames(m, n, count, what, [&](size_t k, size_t i, uint64_t x) { g.frames[k][i] = Reader::u32(x); });
      out.push_back(std::move(g));
    }
  };

  pe_grids(d->pe_metrics(), n, v.pe_metrics, "PE metric");
  // A tile not stored has no program and no route: idle for every cycle of every interval (by the
  // metric's definition, "no program"), not 0 as its other metrics are. (The idle map drew such
  // tiles at 0, beside tiles with only a route at the run's length.)
  for (MetricGrid& g : v.pe_metrics)
    if (g.name == "idle_cycles") {
      std::vector<bool> stored(grid, false);
      for (uint32_t t : v.tiles) stored[t] = true;
      for (size_t k = 0; k < n; ++k) {
        const uint32_t len = Reader::u32((k + 1 < n ? v.interval_starts[k + 1] : v.cycles) - v.interval_starts[k]);
        for (size_t t = 0; t < grid; ++t)
          if (!stored[t]) g.frames[k][t] = len;
      }
    }
  // Derived: busy = receive + fmac + move, the datapath's cycles (sends leave through the output
  // queues beside it).
  const MetricGrid *r = v.pe_metric("receive_cycles"), *f = v.pe_metric("fmac_cycles"), *mv = v.pe_metric("move_cycles");
  if (r && f && mv) {
    MetricGrid busy{"busy_cycles", "cycles", r->frames};
    for (size_t k = 0; k < n; ++k)
      for (uint32_t t : v.tiles) busy.frames[k][t] += f->frames[k][t] + mv->frames[k][t];
    v.pe_metrics.push_back(std::move(busy));
  }

  if (d->links()) {
    for (const fb::LinkRef* l : *d->links()) {
      if (l->src() >= grid || l->dir() > 4 || l->kind() > 3) rd.fail("a link names a tile or port that does not exist");
      v.links.push_back({l->src() % v.width, l->src() / v.width, l->dir(), l->kind()});
    }
  }
  flat(d->link_metrics(), v.links.size(), v.link_metrics, "link metric");
  v.colours = d->colours();
  if (v.colours > 64) rd.fail("more than 64 colours");
  flat(d->colour_metrics(), v.colours, v.colour_metrics, "colour metric");
  if (d->series()) {
    for (const fb::Series* s : *d->series()) {
      if (!s->values() || s->values()->size() != n) rd.fail("series '" + str(s->name()) + "' does not have one value per interval");
      if (!aligned(s->values())) rd.fail("corrupt: the values of series '" + str(s->name()) + "' are not 8-byte aligned");
      v.series.push_back({name(s->name(), "series name"), name(s->unit(), "unit"), {s->values()->begin(), s->values()->end()}});
    }
  }
  pe_grids(d->sram_buffers(), 1, v.sram_buffers, "SRAM buffer");
  if (d->lanes()) {
    for (const fb::LaneRef* l : *d->lanes()) {
      if (l->tile() >= grid || l->colour() >= 64 || l->tx() >= 32) rd.fail("a lane names a tile, colour or port that does not exist");
      v.lanes.push_back({l->tile() % v.width, l->tile() / v.width, l->colour(), l->tx()});
    }
  }
  if (d->lane_metrics() && !d->lanes()) rd.fail("lane metrics without lanes");
  flat(d->lane_metrics(), v.lanes.size(), v.lane_metrics, "lane metric");
  // A name given twice would draw one picture over the other (busy_cycles is derived from the
  // receive, fmac and move cycles: a dump's own of that name is one too many).
  auto unique = [&](const std::vector<MetricGrid>& grids, const char* what) {
    std::set<std::string> seen;
    for (const MetricGrid& g : grids)
      if (!seen.insert(g.name).second)
        rd.fail(std::string(what) + " '" + g.name + "' given twice" + (g.name == "busy_cycles" ? " (wse derives it from receive, fmac and move cycles)" : ""));
  };
  unique(v.pe_metrics, "PE metric");
  unique(v.link_metrics, "link metric");
  unique(v.colour_metrics, "colour metric");
  unique(v.lane_metrics, "lane metric");
  unique(v.sram_buffers, "SRAM buffer");
  return v;
}

}  // namespace wse
