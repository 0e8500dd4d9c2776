#include <algorithm>

#include "kernels/neon/neon_kernels.hpp"

namespace ternlab::neon {

// Spec 5.9 splits each q8_Kx4 block back into four q8_K rows; a Q8KBatch already carries every
// token's q8_K row (the same integers, bsums included), so the split reads those. Row groups go in
// chunks, every token over one chunk before the next, so the chunk's weights (32 groups: 136 KiB of
// t2p at K = 4096) stay in L2 for the other tokens instead of streaming from memory once per token.
void gemm_by_rows(GemvFn gemv, const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                  std::int64_t g1) {
  constexpr std::int64_t kChunkGroups = 32;
  for (std::int64_t c = g0; c < g1; c += kChunkGroups) {
    const std::int64_t e = std::min(g1, c + kChunkGroups);
    for (std::int64_t t = 0; t < x.tokens; ++t) gemv(w, x.row(t), y + t * ldy, c, e);
  }
}

}  // namespace ternlab::neon
