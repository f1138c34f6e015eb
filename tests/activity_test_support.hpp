#pragma once
// A GEMV run recorded by an ActivityRecorder, for the activity and trace tests.
#include <filesystem>
#include <string>

#include "kernels/gemv/gemv.hpp"
#include "test_support.hpp"
#include "tools/dump_view.hpp"
#include "wafer/activity_recorder.hpp"

namespace wse::test {

inline std::filesystem::path temp_file(const std::string& name) {
  std::filesystem::path dir = std::filesystem::temp_directory_path() / "wse_activity_test";
  std::filesystem::create_directories(dir);
  return dir / name;
}

// A GEMV run recorded every `interval` cycles, with the tasks of the top-left 2x2 PEs traced.
struct RecordedGemv {
  Wafer wafer;
  GemvProblem problem;
  GemvKernel kernel;
  WaferRun run;
  std::vector<uint8_t> bytes;
  std::vector<TracedPe> traced;
  std::vector<StreamPhase> phases;
  DumpView view;

  RecordedGemv(MeshShape mesh, uint32_t rows, uint32_t cols, Cycle interval, unsigned threads, const std::string& file,
               MachineSpec spec = MachineSpec{})
      : wafer(spec, mesh), problem(GemvProblem::random(rows, cols, 3)), kernel(wafer, problem) {
    wafer.finalize(threads);
    ActivityRecorder rec(wafer, {"gemv", "fwd"}, interval);
    rec.trace_tasks({0, 0, 2, 2});
    run = wafer.run(10'000'000, rec.hooks());
    rec.write(temp_file(file));
    bytes = rec.dump();
    traced = rec.traced();
    phases = rec.stream_phases();
    view = load_dump_view(temp_file(file));
  }
};

}  // namespace wse::test
