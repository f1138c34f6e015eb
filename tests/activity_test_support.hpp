#pragma once
// A GEMV run recorded by an ActivityRecorder, for the activity and trace tests.
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <string>

#include "kernels/gemv/gemv.hpp"
#include "scratch.hpp"
#include "test_support.hpp"
#include "tools/dump_view.hpp"
#include "tools/json_trace_writer.hpp"
#include "tools/layer_trace.hpp"
#include "tools/pftrace_writer.hpp"
#include "wafer/activity_recorder.hpp"

namespace wse::test {

inline std::filesystem::path temp_file(const std::string& name) { return scratch_file(name); }

// A GEMV run recorded every `interval` cycles, its trace (`trace_opt`, default: every PE, native
// format) written beside the dump as <file>.pftrace or <file>.json.
struct RecordedGemv {
  Wafer wafer;
  GemvProblem problem;
  GemvKernel kernel;
  WaferRun run;
  std::vector<uint8_t> bytes;
  std::vector<StreamPhase> phases;
  DumpView view;
  std::filesystem::path trace_file;
  LayerTraceStats stats;

  RecordedGemv(MeshShape mesh, uint32_t rows, uint32_t cols, Cycle interval, unsigned threads, const std::string& file,
               MachineSpec spec = MachineSpec{}, LayerTraceOptions trace_opt = {}, bool json = false)
      : wafer(spec, mesh), problem(GemvProblem::random(rows, cols, 3)), kernel(wafer, problem) {
    wafer.finalize(threads);
    ActivityRecorder rec(wafer, {"gemv", "fwd"}, interval);
    if (trace_opt.pes.empty()) trace_opt.pes = {0, 0, mesh.width, mesh.height};
    trace_file = temp_file(file + (json ? ".json" : ".pftrace"));
    std::unique_ptr<TraceSink> sink;
    if (json) sink = std::make_unique<JsonTraceWriter>(trace_file);
    else sink = std::make_unique<PftraceWriter>(trace_file);
    LayerTrace trace(*sink, rec, trace_opt);
    if (trace_opt.detail != TraceDetail::Counters) rec.trace_tasks(trace_opt.pes);
    rec.set_observer(&trace);
    run = wafer.run(10'000'000, rec.hooks());
    rec.write(temp_file(file));
    bytes = rec.dump();
    phases = rec.stream_phases();
    trace.finish(rec);
    stats = trace.stats();
    view = load_dump_view(temp_file(file));
  }
};

inline std::string read_bytes(const std::filesystem::path& p) {
  std::ifstream in(p, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

}  // namespace wse::test
