#include "host/thread_choice.hpp"

#include <sched.h>

#include <algorithm>
#include <thread>

#include "fabric/partition.hpp"
#include "kernels/kernel.hpp"

namespace wse {

nlohmann::json ThreadChoice::to_json() const {
  nlohmann::json j = {{"asked", automatic ? nlohmann::json("default") : nlohmann::json(threads)}, {"hardware_threads", hardware}};
  if (!note.empty()) j["note"] = note;
  return j;
}

void note_capped_threads(nlohmann::json& choice, unsigned used) {
  const nlohmann::json& asked = choice["asked"];
  std::string note = choice.value("note", std::string());
  if (asked.is_number_unsigned() && asked.get<unsigned>() > used && note.empty())
    note = "--threads " + std::to_string(asked.get<unsigned>()) + ": the run used " + std::to_string(used) + " (" + kThreadShareRule + ")";
  // More workers than CPUs: each cycle's barrier waits for a worker that is not running (a
  // 512-tile reduce at --threads 200 on two CPUs: 28.7 s against 0.12 s on one thread), with
  // nothing in the report to say why.
  const unsigned hardware = choice.value("hardware_threads", 0u);
  if (hardware && used > hardware)
    note += std::string(note.empty() ? "" : "; ") + "the run's " + std::to_string(used) + " workers are more than the " +
            std::to_string(hardware) + " hardware thread(s) this process may run on: they take turns on the cores and wait for each other " +
            "every cycle, so the run is slower (its results are the same)";
  if (!note.empty()) choice["note"] = note;
}

nlohmann::json threads_choice_json(const ThreadChoice& c, unsigned used) {
  nlohmann::json j = c.to_json();
  note_capped_threads(j, used);
  return j;
}

unsigned usable_hardware_threads() {
  // The CPUs this process may run on (`taskset`, a container's cpuset), as `nproc` counts them:
  // hardware_concurrency() counts the host's, and a default of two workers on one allowed CPU
  // spends the run taking turns (a 4096² GEMV on 256x256 under taskset -c 0: 0.81-1.11 s on two
  // workers, 0.81-0.92 s on one, 3 alternating rounds).
  cpu_set_t set;
  CPU_ZERO(&set);
  if (::sched_getaffinity(0, sizeof set, &set) == 0 && CPU_COUNT(&set) > 0) return unsigned(CPU_COUNT(&set));
  return std::max(1u, std::thread::hardware_concurrency());
}

ThreadChoice choose_threads(const RunConfig& cfg, unsigned asked) {
  ThreadChoice c;
  c.hardware = usable_hardware_threads();
  if (asked) {
    c.threads = asked;
    return c;
  }
  c.automatic = true;
  const bool training = kernel_kind(cfg.kernel, "config " + cfg.source.string()).training;
  const unsigned wafers = training ? std::max(1u, cfg.train.num_csx) : 1u;
  if (wafers >= c.hardware) {  // one thread per wafer at most: wafers take turns
    c.threads = c.hardware;
    return c;
  }
  const unsigned per_wafer = c.hardware / wafers;
  const unsigned workers = Partition::automatic_workers(cfg.mesh, per_wafer);
  c.threads = wafers * workers;
  if (workers < per_wafer)
    c.note = "the engine used " + std::to_string(workers) + " worker(s) per wafer of the " + std::to_string(per_wafer) +
             " it could: a " + std::to_string(cfg.mesh.tiles()) + "-tile mesh pays for one worker per " +
             std::to_string(Partition::kTilesPerWorker) + " tiles (--threads overrides; docs/performance.md)";
  return c;
}

ThreadChoice fit_to_kernel(ThreadChoice c, const Wafer& wafer) {
  if (!c.automatic) return c;
  const MeshShape shape = wafer.shape();
  const unsigned could = Partition::workers_for(shape, c.threads);
  const std::vector<uint32_t> work = wafer.work_estimate();
  const auto used = uint64_t(std::count_if(work.begin(), work.end(), [](uint32_t w) { return w != 0; }));
  unsigned paid = Partition::automatic_workers(shape, used, c.threads);
  const uint32_t lines = Partition::lines_with_work(shape, paid, work);
  const bool by_lines = paid > 1 && lines < paid;
  const char* line = Partition::cuts_rows(shape, paid) ? " row(s)" : " column(s)";
  if (by_lines) paid = std::max(1u, lines);
  if (paid >= could) return c;
  c.threads = paid;
  c.note = "the engine used " + std::to_string(paid) + " worker(s) of the " + std::to_string(could) + " it could: the kernel uses " +
           std::to_string(used) + " of the mesh's " + std::to_string(shape.tiles()) + " tiles (a program or a route)" +
           (by_lines ? ", all in " + std::to_string(lines) + line +
                           " of the mesh, and a worker takes whole ones"
                     : ", and pays for one worker per " + std::to_string(Partition::kTilesPerWorker) + " of them") +
           " (--threads overrides; docs/performance.md)";
  return c;
}

}  // namespace wse
