// What a kind's run receives from the runner: the persistent thread pools and the progress bar.
#pragma once

#include <iosfwd>

#include "experiments/measure.hpp"
#include "experiments/progress.hpp"

namespace ternlab::experiments {

struct RunContext {
  Pools& pools;
  Progress& progress;
  std::ostream& log;  // one-line notes while running (stdout of the CLI)
};

}  // namespace ternlab::experiments
