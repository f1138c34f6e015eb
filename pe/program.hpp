#pragma once
// A PE program: what CSL is to the real machine. Tasks are plain functions; a data task is bound
// to a colour and fires once per wavelet arriving on it, with the wavelet as its argument; local
// tasks are activated by other tasks. A program's variables live in its PE's SRAM, not in C++
// objects, so one Program value is shared by every PE that runs it.
#include <array>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

#include "fabric/machine_spec.hpp"
#include "fabric/wavelet.hpp"

namespace wse {

class PeContext;
using DataTask = void (*)(PeContext&, Wavelet);
using LocalTask = void (*)(PeContext&);

struct Program {
  std::string name;
  std::array<DataTask, MachineSpec::kMaxColours> data_tasks{};
  std::vector<LocalTask> local_tasks;  // id = index, at most 32
  int start_task = -1;                 // local task activated at cycle 0, if any

  Program& on(Colour c, DataTask t) {
    if (c >= data_tasks.size()) throw std::invalid_argument("Program::on: colour " + std::to_string(c) + " out of range");
    data_tasks[c] = t;
    return *this;
  }
  uint8_t local(LocalTask t) {
    if (local_tasks.size() == 32) throw std::invalid_argument("Program::local: at most 32 local tasks");
    local_tasks.push_back(t);
    return uint8_t(local_tasks.size() - 1);
  }
};

}  // namespace wse
