// Plain Armv8.0 NEON builds of the strategies (no dotprod): what cortex-a72-class cores run.
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/strategies.hpp"

namespace ternlab::neon {

NeonEntry neon_entry(NeonStrategy s) {
  return checked_entry<Mull, NeonStrategy::unpack, NeonStrategy::base3, NeonStrategy::slot_mask>(s);
}

}  // namespace ternlab::neon
