// Plain Armv8.0 NEON builds of the strategies (no dotprod): what cortex-a72-class cores run.
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/strategies.hpp"

namespace ternlab::neon {

void gemv_unpack_neon(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  require_layout(*w.layout, NeonStrategy::unpack, "unpack/neon");
  gemv_unpack<Mull>(w, x, y, g0, g1);
}
void gemv_base3_neon(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  require_layout(*w.layout, NeonStrategy::base3, "base3/neon");
  gemv_base3<Mull>(w, x, y, g0, g1);
}
void gemv_slot_mask_neon(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
  require_layout(*w.layout, NeonStrategy::slot_mask, "slot-mask/neon");
  gemv_slot_mask<Mull>(w, x, y, g0, g1);
}

}  // namespace ternlab::neon
