#pragma once
// How long an epoch of training would take on this host, from the steps a run took: the figure
// at the end of a training run ("s of steps per epoch of N"). A run's steps are of two kinds whose host
// times differ by orders of magnitude (training.detail: a cycle-level step of a 16 x 16 mesh takes
// a second, a functional one milliseconds), so each kind is timed apart and the epoch is its
// steps of each kind at their own mean. The steps per epoch times the mean of a run's steps made
// a one-step run with `detail: {every: 200, first: 1}` say 38.2 s for an epoch that ran in 0.5 s.
#include <cstdint>
#include <string>

#include "cluster/step_plan.hpp"

namespace wse {

// Host seconds of a run's steps (train_step alone: not checkpoints or test passes), by kind.
struct StepSeconds {
  double detailed = 0;    // the steps run cycle by cycle
  double functional = 0;  // the others
};

// Of steps 0 .. n-1 of a run started at step 0, how many `policy` runs cycle by cycle.
uint64_t detailed_steps_in(const DetailPolicy& policy, uint64_t n);

// "0.796 s of steps per epoch of 200 (2 of them cycle by cycle)": the first epoch's steps of each
// kind at the mean of this run's steps of that kind (`detailed` and `functional` steps, taking
// `took`); or why it is not known (the epoch has steps of a kind this run did not time). The
// steps alone: an epoch's test pass and checkpoints come on top.
std::string epoch_projection(const StepSeconds& took, uint64_t detailed, uint64_t functional, const DetailPolicy& policy,
                             uint64_t steps_per_epoch);

}  // namespace wse
