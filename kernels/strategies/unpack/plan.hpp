// The unpack strategy's recognition and activation order: natural 2-bit order (one row per block,
// weight k in byte payload + k/4, field k%4), what table-lookup / shift / mask unpackers assume.
#pragma once

#include <cstdint>
#include <string>

#include "kernels/kernel_plan.hpp"

namespace ternlab {

// Empty when the layout is in natural 2-bit order; else what differs, in words.
std::string natural_two_bit_why_not(const LayoutInfo& layout);
inline bool natural_two_bit(const LayoutInfo& layout) { return natural_two_bit_why_not(layout).empty(); }

// Activations of one token in the order the stock unpack kernel leaves its codes (spec 6.2: within
// each 32-value group, byte 8j + b holds value 4b + j), 128 bytes per block, plus BlockActs. The
// fork permutes them inside every row's dot product; they depend on the token only, so the tuned
// baseline permutes once per token.
SlotActs prepare_natural_acts(const BlockQ8K* x, std::int64_t blocks128, int slot);
SlotActs prepare_natural_acts_into(const BlockQ8K* x, std::int64_t blocks128, std::uint8_t* mem);
SlotActs prepare_natural_acts_x4(const BlockQ8Kx4* x, int m, std::int64_t blocks128, int slot);

}  // namespace ternlab
