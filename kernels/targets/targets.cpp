#include "kernels/targets/target.hpp"

namespace ternlab::targets {
#define TERNLAB_TARGET(name) extern const Target name;
#include "kernels/targets/targets.def"
#undef TERNLAB_TARGET
}  // namespace ternlab::targets

namespace ternlab {

std::span<const Target* const> all_targets() {
  static const Target* const kTargets[] = {
#define TERNLAB_TARGET(name) &targets::name,
#include "kernels/targets/targets.def"
#undef TERNLAB_TARGET
  };
  return kTargets;
}

}  // namespace ternlab
