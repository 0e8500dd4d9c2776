#include "kernels/kernel_plan.hpp"

#include <array>
#include <cstring>

#include "common/aligned.hpp"
#include "common/error.hpp"
#include "layouts/matrix.hpp"

namespace ternlab {

namespace {

struct Scratch {
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  ~Scratch() { ::operator delete(data, std::align_val_t{kAlign}); }
};

}  // namespace

using prepared::align_up;

std::uint8_t* kernel_scratch(std::size_t bytes, int index) {
  thread_local Scratch areas[kScratchAreas];
  if (index < 0 || index >= kScratchAreas) fail("kernel scratch area ", index, " does not exist (0..", kScratchAreas - 1, ")");
  Scratch& a = areas[index];
  if (a.size < bytes) {
    ::operator delete(a.data, std::align_val_t{kAlign});
    a.data = static_cast<std::uint8_t*>(::operator new(align_up(bytes), std::align_val_t{kAlign}));
    a.size = align_up(bytes);
  }
  return a.data;
}

BlockActs block_acts(const BlockQ8K& b, int h) {
  BlockActs a{b.d, half_sum(b, h), {}};
  for (int g = 0; g < 8; ++g) a.bsums[g] = b.bsums[8 * h + g];
  return a;
}

BlockActs block_acts_x4(const BlockQ8Kx4& b, int m, int h) {
  BlockActs a{b.d[m], half_sum_x4(b, m, h), {}};
  for (int g = 0; g < 8; ++g) a.bsums[g] = b.bsums[x4_bsum_index(m, 8 * h + g)];
  return a;
}

std::size_t prepared_acts_bytes(std::int64_t nb, int block_bytes) {
  return align_up(std::size_t(nb) * sizeof(BlockActs)) + std::size_t(nb) * std::size_t(block_bytes);
}

SlotActs view_prepared_acts(const std::uint8_t* mem, std::int64_t nb) {
  return {mem + align_up(std::size_t(nb) * sizeof(BlockActs)), reinterpret_cast<const BlockActs*>(mem)};
}

const BlockQ8K* deinterleave_tile_token(const BlockQ8Kx4* x, int m, std::int64_t nb256, int slot) {
  auto* out = reinterpret_cast<BlockQ8K*>(kernel_scratch(std::size_t(nb256) * sizeof(BlockQ8K), slot));
  for (std::int64_t i = 0; i < nb256; ++i) out[i] = deinterleave_x4(x[i], m);
  return out;
}

const Base3DigitTables& base3_digit_tables() {
  static const Base3DigitTables tables = [] {
    constexpr Code kCode = Code::base3_banded;
    const auto digits = [](int x) {
      int f = 0;
      for (int n = 1; n < 5; ++n) f |= decode_digit(kCode, std::uint8_t(x), n) << (2 * (n - 1));
      return f;
    };
    Base3DigitTables t;
    for (int x = 0; x < 128; ++x)
      if (banded_writes(x)) t.low[std::size_t(x)] = std::uint8_t(digits(x));
    for (int x = 128; x < 256; ++x) {
      if (!banded_writes(x)) continue;
      int below = 0;
      while (below < 128 && !(banded_writes(below) && digits(below) == digits(x))) ++below;
      if (below == 128) fail("base-3 byte ", x, ": no byte below 128 has its digits 1-4");
      t.high[std::size_t(x - 128)] = std::uint8_t(below);
    }
    std::array<int, 64> seen;
    seen.fill(-1);
    for (int x = 0; x < 256; ++x)
      if (banded_writes(x)) {
        const int top = decode_digit(kCode, std::uint8_t(x), 0);
        int& s = seen[std::size_t(x >> 2)];
        if (s >= 0 && s != top) fail("base-3 byte ", x, ": digit 0 is not a function of byte >> 2");
        s = top;
        t.top[std::size_t(x >> 2)] = std::uint8_t(top);
      }
    return t;
  }();
  return tables;
}

}  // namespace ternlab
