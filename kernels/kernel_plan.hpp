// What every SIMD strategy shares once its plan is made: each 128-weight block's activation facts
// (BlockActs), prepared activations (SlotActs) in per-thread scratch, and the generic loop that
// fills them; each strategy's own plan and its activation order live in its folder
// (kernels/strategies/<name>/plan.hpp). Nothing here is ISA specific, so the per-ISA translation
// units (compiled for wider targets) only read plain arrays.
#pragma once

#include <array>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/aligned.hpp"
#include "common/error.hpp"
#include "kernels/q8k.hpp"
#include "layouts/registry.hpp"

namespace ternlab {

// Per-block activation facts every kernel needs: scale and the sum of the block's 128 values.
struct BlockActs {
  float d;
  std::int32_t ysum;
  std::int16_t bsums[8];  // sums of each 16 values, for scale groups narrower than 128
};
// The BlockActs of half h of a q8_K block (of token m of a q8_Kx4 tile).
BlockActs block_acts(const BlockQ8K& b, int h);
BlockActs block_acts_x4(const BlockQ8Kx4& b, int m, int h);

// Prepared activations of one token for a slot-mask kernel: expansion of every 128-block plus its
// BlockActs. Memory comes from a per-thread scratch arena (reused across calls, never freed).
struct SlotActs {
  const std::uint8_t* expanded = nullptr;  // blocks * expanded_block_bytes
  const BlockActs* blocks = nullptr;
};
// Per-thread scratch areas, by name (kernel_scratch). Areas 0 .. kActsScratchAreas - 1 hold one
// token's prepared activations each (a gemm tile uses one per token); the others are named.
inline constexpr int kActsScratchAreas = 16;
inline constexpr int kScratchTileActs = 20;     // slot-mask's per-block ysum/d tiles
inline constexpr int kScratchSharedGemv = 21;   // run_gemv's prepared activations, shared by the pool
inline constexpr int kScratchTileGemm = 22;     // the tile gemm's prepared tokens (with a tile's slack)
inline constexpr int kScratchAreas = 24;

// Bytes of a prepared-activations buffer for `blocks128` blocks of `block_bytes` values each: the
// BlockActs first (aligned), then the values. SlotActs views such a buffer.
std::size_t prepared_acts_bytes(std::int64_t blocks128, int block_bytes);
SlotActs view_prepared_acts(const std::uint8_t* mem, std::int64_t blocks128);

// Plain (q8_K-ordered) activations of token m of a tile, for strategies that read natural order.
const BlockQ8K* deinterleave_tile_token(const BlockQ8Kx4* x, int m, std::int64_t blocks256, int slot);

// Per-thread, 64-byte aligned scratch of at least `bytes` bytes; `index` names one of the
// kScratchAreas areas (above) and is checked.
std::uint8_t* kernel_scratch(std::size_t bytes, int index);

// The byte tables of Base3Bytes::digits (kernels/strategies/broadcast/base3_kernels.hpp) for Code::base3_banded (layouts' own decode_digit): for
// bytes 0-127 their digits 1-4 as 2-bit fields, for bytes 128-255 a byte below 128 with the same
// digits 1-4, and for each byte >> 2 its digit 0. Bytes the code never writes (81-83 of each band,
// 252-255) hold zeros.
struct Base3DigitTables {
  std::array<std::uint8_t, 128> low{}, high{};
  std::array<std::uint8_t, 64> top{};
};
const Base3DigitTables& base3_digit_tables();

// The loop every strategy's activation preparation runs (its plan.cpp): fetch a block's 128 plain
// values and BlockActs, write the strategy's order of them.
namespace prepared {

inline std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

// Fills `mem` (prepared_acts_bytes long) with every block's BlockActs and `block_bytes` of prepared
// values, produced from the block's 128 plain activations by expand(q, out).
template <class Fetch, class Expand>
SlotActs prepare_into(std::uint8_t* mem, std::int64_t nb, int block_bytes, Fetch fetch, Expand expand) {
  auto* acts = reinterpret_cast<BlockActs*>(mem);
  std::uint8_t* expanded = mem + align_up(std::size_t(nb) * sizeof(BlockActs));
  alignas(64) std::int8_t q[128];
  for (std::int64_t i = 0; i < nb; ++i) {
    acts[i] = fetch(i, q);
    expand(q, expanded + i * block_bytes);
  }
  return {expanded, acts};
}
// The same into the calling thread's scratch area `slot`.
template <class Fetch, class Expand>
SlotActs prepare(std::int64_t nb, int slot, int block_bytes, Fetch fetch, Expand expand) {
  if (slot < 0 || slot >= kActsScratchAreas) fail("activation scratch area ", slot, " out of 0..", kActsScratchAreas - 1);
  return prepare_into(kernel_scratch(prepared_acts_bytes(nb, block_bytes), slot), nb, block_bytes, fetch, expand);
}

inline BlockActs fetch_plain(const BlockQ8K* x, std::int64_t i, std::int8_t* q) {
  const BlockQ8K& b = x[i / 2];
  std::memcpy(q, b.qs + 128 * (i % 2), 128);
  return block_acts(b, int(i % 2));
}

inline BlockActs fetch_x4(const BlockQ8Kx4* x, int m, std::int64_t i, std::int8_t* q) {
  const BlockQ8Kx4& b = x[i / 2];
  const int h = int(i % 2);
  for (int c = 0; c < 16; ++c) std::memcpy(q + 8 * c, b.qs + x4_index(m, 128 * h + 8 * c), 8);
  return block_acts_x4(b, m, h);
}

// Entry j of `tokens` tokens of consecutive tiles from tile0, block-major: block j / tokens of
// token j % tokens.
inline auto fetch_tiles(const Q8KBatch& x, std::int64_t tile0, int tokens) {
  return [&x, tile0, tokens](std::int64_t j, std::int8_t* q) {
    const int m = int(j % tokens);
    return fetch_x4(x.tile(tile0 + m / 4), m % 4, j / tokens, q);
  };
}

}  // namespace prepared

}  // namespace ternlab
