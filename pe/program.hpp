#pragma once
// A PE program: what CSL is to the real machine. Tasks are plain functions; a data task is bound
// to a colour and fires once per wavelet arriving on it, with the wavelet as its argument; local
// tasks are activated by other tasks (or by an asynchronous DSD operation that finishes). Tasks
// and colours can be blocked: a blocked colour's wavelets wait in its input queue for a DSD
// operation to read them (CSL's @block in comptime). A program's variables live in its PE's
// SRAM, not in C++ objects, so one Program value is shared by every PE that runs it.
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "core/machine_spec.hpp"
#include "fabric/wavelet.hpp"

namespace wse {

class PeContext;
using DataTask = void (*)(PeContext&, Wavelet);
using LocalTask = void (*)(PeContext&);

struct Program {
  std::string name;
  std::array<DataTask, MachineSpec::kMaxColours> data_tasks{};
  std::array<const char*, MachineSpec::kMaxColours> data_task_names{};
  std::vector<LocalTask> local_tasks;  // id = index, at most 32
  std::vector<const char*> local_task_names;
  int start_task = -1;                 // local task activated at cycle 0, if any
  uint32_t blocked_colours = 0;        // colours blocked when the program starts
  uint32_t blocked_locals = 0;         // local tasks blocked when the program starts
  // The most asynchronous ops it has in flight at once, as its kernel counts them (0: not given).
  // Checked against the machine's microthreads when the program is placed, so `--validate_only`
  // refuses a machine with too few, where the run would fail at its first op beyond them.
  uint32_t microthreads = 0;

  Program& on(Colour c, DataTask t, const char* task_name = nullptr) {
    if (c >= data_tasks.size()) throw std::invalid_argument("Program::on: colour " + std::to_string(c) + " out of range");
    data_tasks[c] = t;
    data_task_names[c] = task_name;
    return *this;
  }
  uint8_t local(LocalTask t, const char* task_name = nullptr) {
    if (local_tasks.size() == 32) throw std::invalid_argument("Program::local: at most 32 local tasks");
    local_tasks.push_back(t);
    local_task_names.push_back(task_name);
    return uint8_t(local_tasks.size() - 1);
  }
  // Wavelets of colour c are left in its input queue for DSD operations (no data task fires).
  Program& block(Colour c) {
    if (c >= data_tasks.size()) throw std::invalid_argument("Program::block: colour " + std::to_string(c) + " out of range");
    blocked_colours |= 1u << c;
    return *this;
  }
  std::string task_name(bool local, uint8_t id) const {
    const char* n = local ? (id < local_task_names.size() ? local_task_names[id] : nullptr) : data_task_names[id];
    if (n) return n;
    return local ? "local task " + std::to_string(id) : "data task c" + std::to_string(id);
  }
};

}  // namespace wse
