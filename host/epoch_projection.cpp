#include "host/epoch_projection.hpp"

#include <algorithm>
#include <cstdio>

namespace wse {

uint64_t detailed_steps_in(const DetailPolicy& policy, uint64_t n) {
  switch (policy.mode) {
    case DetailPolicy::Mode::All: return n;
    case DetailPolicy::Mode::None: return 0;
    case DetailPolicy::Mode::Sampled: break;
  }
  // Steps 0 .. first-1 (step 0 at least: a run's first step is always detailed), and every
  // step s with (s + 1) a multiple of `every`, those among the first counted once.
  const uint64_t head = std::min<uint64_t>(n, std::max<uint64_t>(policy.first, 1));
  if (!policy.every) return head;
  return head + n / policy.every - head / policy.every;
}

std::string epoch_projection(const StepSeconds& took, uint64_t detailed, uint64_t functional, const DetailPolicy& policy,
                             uint64_t steps_per_epoch) {
  const uint64_t d = detailed_steps_in(policy, steps_per_epoch), f = steps_per_epoch - d;
  char buf[256];
  if ((d && !detailed) || (f && !functional)) {
    std::snprintf(buf, sizeof buf, "an epoch of %llu steps not projected: %llu of them would run %s, and this run timed none",
                  (unsigned long long)steps_per_epoch, (unsigned long long)(d && !detailed ? d : f),
                  d && !detailed ? "cycle by cycle" : "functionally");
    return buf;
  }
  const double secs = (d ? took.detailed / double(detailed) * double(d) : 0.0) + (f ? took.functional / double(functional) * double(f) : 0.0);
  if (d && f)
    std::snprintf(buf, sizeof buf, "%.3g s of steps per epoch of %llu (%llu of them cycle by cycle)", secs, (unsigned long long)steps_per_epoch,
                  (unsigned long long)d);
  else
    std::snprintf(buf, sizeof buf, "%.3g s of steps per epoch of %llu", secs, (unsigned long long)steps_per_epoch);
  return buf;
}

}  // namespace wse
