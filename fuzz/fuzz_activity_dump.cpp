// libFuzzer target: an activity dump (.wsad) through load_dump_view, then the checks and the
// per-tile metrics the viewers compute from it.
#include "fuzz_support.hpp"
#include "tools/dump_view.hpp"
#include "tools/viz/viz.hpp"

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  wse::fuzz::init();
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const auto path = wse::fuzz::write("dump.wsad", data, size);
  return wse::fuzz::expect_accept_or_usage_error([&] {
    const wse::DumpView v = wse::load_dump_view(path);
    wse::viz::check_dump_view(v);
    for (const wse::MetricGrid& m : wse::viz::tile_metrics(v)) wse::viz::run_summary(v, m);
  });
}
