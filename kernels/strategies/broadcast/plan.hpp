// The broadcast strategy's plans. What it recognises in a layout: row-interleaved strips, 2-bit
// (StripPlan: lanes of 4, 8 or 16 bytes) or base-3 (Base3StripPlan), in which every row owns a lane
// and every slot holds the same weights of every row; and the per-token activations in strip order.
// Built at run time from the layout's placement, once per layout.
#pragma once

#include <array>
#include <cstdint>
#include <string>

#include "kernels/kernel_plan.hpp"

namespace ternlab {

inline constexpr int kMaxStrips = 16;  // row-interleaved strips per block (at least 16 weights of every row each)
// The lane widths of row-interleaved strips: a row's lane is one dword (t2r), a qword or 16 bytes,
// what a broadcast of one activation dword, qword or 16-byte word serves.
inline constexpr int kRowLaneBytes[] = {4, 8, 16};
// The row counts of row-interleaved blocks: the broadcast kernels are built for each (a vector of
// 16, 32 or 64 bytes holds whole strips of some of them, which each target's build says).
inline constexpr int kRowInterleavedRows[] = {4, 8, 16, 32};

// Row-interleaved (2-bit): 4, 8, 16 or 32 rows per block, the payload read as strips of lane_bytes * rows
// bytes in which row j's lane is the lane_bytes bytes at lane_bytes * j and slot s of the lane holds
// weights k0[t][s] .. k0[t][s] + lane_bytes - 1 of row j, the same k0 for every row. One AND per
// slot then gives a vector whose 32-bit lanes dot4 (vpdpbusd) against a broadcast of the slot's
// lane_bytes activation bytes (a dword, qword or 16-byte word), each 32-bit lane accumulating part
// of its own row: no horizontal sums across rows, and per block one convert and one fma for all
// rows (with wider lanes after adding each row's lane_bytes / 4 dwords).
struct StripPlan {
  int payload_begin = 0;
  int strips = 0;
  int lane_bytes = 4;
  std::array<std::array<int, 4>, kMaxStrips> k0{};
};

// Base-3 row-interleaved blocks: 4, 8, 16 or 32 rows (the base-3 build reads 16), 128 weights a row as six strips of 20 (five digits
// x four bytes) and a tail of 8 (four digits x two bytes), five digits a byte (1.75 bits a weight
// with an fp16 scale, against t2r's 2.125). A byte vector's digits come out through byte tables
// (digit 0 and the other four as 2-bit fields), after which each lane dots against broadcast
// activation dwords as in the 2-bit build.
inline constexpr int kBase3Strips = 6;
inline constexpr int kBase3StripWeights = 20;
inline constexpr int kBase3TailLanes = 2;  // bytes of every row in the tail
inline constexpr int kBase3TailDigits = 4;

// Strip t < strips is 4 * rows bytes from payload_begin + t * 4 * rows, row j's byte 4 j + b holding
// in digit n the weight k0[t][n] + b; the tail is 2 * rows bytes from tail_begin, row j's byte 2 j + b
// holding in digit n < 4 the weight k0[strips][n] + b (digit 4 empty, so zero). The same k0 for
// every row.
struct Base3StripPlan {
  int payload_begin = 0;
  int strips = 0;
  int tail_begin = 0;
  std::array<std::array<int, 5>, kBase3Strips + 1> k0{};
};

// The layout's plan, or nullptr with why_not saying what it lacks (in words). The address is stable:
// kernels compare it with the plan a prepared activation buffer was made for.
const StripPlan* strip_plan(const LayoutInfo& layout);
const Base3StripPlan* base3_strip_plan(const LayoutInfo& layout);
// Empty when the layout is row-interleaved, 2-bit or base-3.
std::string row_interleaved_why_not(const LayoutInfo& layout);

// Activations of one token in a row-interleaved layout's strip order (the broadcast strategy): in
// each 128-block's 128 bytes, with lanes of n = lane_bytes bytes, byte 4 n t + n s + b is value
// k0[t][s] + b, so strip t's slot s reads n bytes at 4 n t + n s (the identity for t2r).
SlotActs prepare_strip_acts(const StripPlan& p, const BlockQ8K* x, std::int64_t blocks128, int slot);
SlotActs prepare_strip_acts_into(const StripPlan& p, const BlockQ8K* x, std::int64_t blocks128, std::uint8_t* mem);
// The same for `tokens` tokens (a multiple of 4) of consecutive q8_Kx4 tiles from tile0, block-major:
// block i of token m is entry i * tokens + m (its 128 bytes and its BlockActs), so one pointer and
// constant offsets reach every token of a block.
SlotActs prepare_strip_acts_tiles(const StripPlan& p, const Q8KBatch& x, std::int64_t tile0, int tokens,
                                  std::int64_t blocks128, int slot);
// The same into `mem`, prepared_acts_bytes(blocks128 * tokens, kBlockK) bytes of the caller's.
SlotActs prepare_strip_acts_tiles_into(const StripPlan& p, const Q8KBatch& x, std::int64_t tile0, int tokens,
                                       std::int64_t blocks128, std::uint8_t* mem);

// The same for a base-3 row-interleaved layout (Base3StripPlan): per 128-block kBase3StripActBytes
// bytes, strip t's digit n at 20 t + 4 n holding values k0[t][n] .. k0[t][n] + 3; in the tail strip
// each digit's two values, then two zeros, and digit 4 all zeros (its bytes' empty digit).
inline constexpr int kBase3StripActBytes = (kBase3Strips + 1) * kBase3StripWeights;
SlotActs prepare_base3_strip_acts_into(const Base3StripPlan& p, const BlockQ8K* x, std::int64_t blocks128,
                                       std::uint8_t* mem);
SlotActs prepare_base3_strip_acts_tiles(const Base3StripPlan& p, const Q8KBatch& x, std::int64_t tile0, int tokens,
                                        std::int64_t blocks128, int slot);

}  // namespace ternlab
