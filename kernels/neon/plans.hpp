// Run-time kernel programs for the NEON strategies, derived once per layout from LayoutInfo's plans
// (slot_plan, digit_plan, facts) and cached: the kernels read offsets from here, never from a layout
// name. Plain data, built in plans.cpp (compiled without ISA extensions) and read by every ISA's unit.
#pragma once

#include <array>
#include <cstdint>

#include "layouts/registry.hpp"

namespace ternlab::neon {

// The slot-mask program. A unit is what one 16-byte word feeds: a row pair (row_a in bytes 0-7,
// row_b in bytes 8-15) or a single row. Each word of a unit holds, in slot s, the lanes starting at
// weight kbase + s * slot_stride (8 for t2p's pairs, 16 for t2x4's rows, 32 for t2w's half rows);
// a layout without one such stride gets no slot-mask NEON kernel (the reference still runs it).
struct SlotWord {
  int byte_offset = 0;  // from the block start
  int kbase = 0;        // first weight (within the block) of slot 0
};
struct SlotUnit {
  int row_a = -1, row_b = -1;
  std::array<SlotWord, 4> words{};  // a pair unit covers 2 x 128 weights in 4 words, a single row in 2
};
struct SlotProgram {
  bool ok = false;
  bool pairs = false;
  bool chunk_aligned = false;  // every kbase a multiple of 8: smmla reads q8_Kx4 chunks directly
  bool shared_kbase = false;   // word k of every unit starts at the same weight: activations load once
  int slot_stride = 0;         // weights from slot s to slot s + 1 of a word (a multiple of its lanes)
  int rows = 0;
  int units = 0;
  int words_per_unit = 0;
  std::array<int, 16> scale_offset{};  // per row, from the block start
  std::array<SlotUnit, 16> unit{};
};

// The base-3 program: the block's 128 weights as 8 vectors of 16 consecutive weights. Vector c is
// the byte vector at `direct_offset` (when its 16 lanes are 16 consecutive bytes sharing a digit) or
// gathered by a table lookup with `gather` from [bytes 0-15 | last 16 bytes of the block], then
// multiplied lane by lane with `pow3` (3^digit, mod 256) so that the digit becomes the top trit.
struct Base3Program {
  bool ok = false;
  int block_bytes = 0;
  int scale_offset = 0;
  int tail_offset = 0;  // block_bytes - 16: where the table's second 16 bytes start
  std::array<int, 8> direct_offset{};  // -1: gather
  std::array<std::array<std::uint8_t, 16>, 8> gather{};
  std::array<std::array<std::uint8_t, 16>, 8> pow3{};
};

const SlotProgram& slot_program(const LayoutInfo& layout);
const Base3Program& base3_program(const LayoutInfo& layout);

// Throws ternlab::Error naming the kernel (strategy_name/isa: "slot-mask/neon", ...), the layout and
// the reason, unless `layout` has what that kernel reads. Entry points call it once per call, before
// any load.
enum class NeonStrategy { unpack, base3, slot_mask, smmla };
void require_layout(const LayoutInfo& layout, NeonStrategy strategy, const char* isa);

// A kernel name's strategy part: "unpack", "base3", "slot-mask" (smmla is slot-mask's i8mm gemm).
const char* strategy_name(NeonStrategy strategy);

}  // namespace ternlab::neon
