// The permute strategy's plan: any valid layout, read as items of codes gathered into single-row
// 4-byte lanes (plan.cpp builds it from the layout's placement alone).
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_plan.hpp"

namespace ternlab {

// The permute plan (kernels/strategies/permute/kernels.hpp), for any valid layout at vector width
// `vector_bytes`. A block is read as *items*: vectors of codes, each built from one or more *ops*
// (load vector_bytes at a block offset, shuffle bytes within each 16-byte lane, extract one 2-bit
// field or base-3 digit, OR into the item), such that every 4-byte lane of an item holds codes of
// one row only, so a dot4 against prepared activations (activation k placed under each code, 0
// under bytes without a weight) yields per-row partial sums. Items whose lanes feed the same rows
// share an accumulator.
//
// Two ways to cut a block into items, chosen by the builder:
//   in place - the payload read as consecutive vectors, one item per (vector, slot), one op each;
//              a 16-byte lane whose 4-byte groups mix rows gets the byte permutation that sorts
//              its codes into single-row groups (t2m). Taken when every (lane, slot) admits one.
//   gather   - items in (row, k) order, 16 consecutive weights of one row per 16-byte lane, each
//              gathered by as many ops as the (window, slot)s its weights come from.
// The most rows a block may hold for the permute kernels: their per-block row sums and accumulators
// are stack arrays of this size. 32 covers the largest block the DSL accepts at 128 weights a row.
inline constexpr int kMaxPermuteRows = 32;

struct PermutePlan {
  struct Op {
    int offset = 0;   // block offset of the vector loaded (may reach outside the block: read_lo/hi)
    int param = 0;    // 2-bit: right shift 2 s of field s; base-3: 3^n mod 256 bringing digit n to the top
    int shuffle = -1; // byte offset into `shuffles`, -1: no shuffle
  };
  std::string why_not;  // empty when the permute kernels can run the layout at this width
  const LayoutInfo* layout = nullptr;
  int vector_bytes = 0;
  int rows = 0;
  int block_bytes = 0;
  bool in_place = false;
  bool banded = false;            // Code::base3_banded bytes: the kernels read each block through a
                                  // copy in Code::base3 (banded_to_base3), whose digits P::trit takes
  bool single_op = false;         // every item is one op
  bool slot_runs = false;         // in place, and each accumulator's items come in runs of one
                                  // vector's slots 0, 1, .. in order (one load and shuffle a run)
  int shuffled_lanes = 0;         // in place: 16-byte lanes that needed a byte permutation
  int read_lo = 0, read_hi = 0;   // bytes read around a block: [block + read_lo, block + read_hi)
  int scale_offset[kMaxPermuteRows] = {};
  std::vector<Op> ops;
  std::vector<int> item_ops;      // item i's ops: [item_ops[i], item_ops[i + 1])
  std::vector<int> acc_items;     // accumulator a's items: [acc_items[a], acc_items[a + 1])
  std::vector<std::int8_t> lane_row;     // accumulator a's int32 lane l feeds row lane_row[a * lanes + l]
                                         // (rows: none, a dummy row the kernel discards)
  std::vector<std::uint8_t> shuffles;    // vector_bytes each; index 0x80 zeroes the byte
  std::vector<std::int16_t> act_k;       // per item and byte: the activation under it, -1: none
  int expanded_block_bytes = 0;          // items * vector_bytes

  // The vector epilogue (policies with 8-lane int32 row vectors, x86's Rows8): an accumulator is
  // vector_bytes / 32 pieces of 8 int32 lanes; lanes of no row hold 0 (their activations are 0).
  // Each piece reaches the row vector (lane r = row r) by the fixed steps derived here: a lane
  // permutation (skipped where it is the identity) and a mask where a row has fewer lanes than
  // the step count, each step's result added. Where each lane position feeds at most one row
  // across an accumulator's pieces (AVX-512's two halves), the pieces are summed first.
  struct RowStep {
    std::int32_t idx[8] = {};   // result lane j takes piece lane idx[j]
    std::int32_t mask[8] = {};  // -1 keeps, 0 clears (only read when `masked`)
    bool permute = false;
    bool masked = false;
  };
  static constexpr int kMaxRowPieces = 2;  // vector bytes up to 64
  bool row_vectors = false;       // rows <= 8, vectors of 32 or 64 bytes: the epilogue below applies
  std::vector<std::uint8_t> acc_fold;  // per accumulator: its pieces summed before the steps
  std::vector<int> piece_steps;   // accumulator a's piece j: steps [piece_steps[a * kMaxRowPieces + j],
                                  // piece_steps[a * kMaxRowPieces + j + 1])
  std::vector<RowStep> row_steps;
  bool half_fold = false;         // rows <= 4 and every piece's lanes 4-7 feed the rows of lanes
                                  // 0-3 (or none), which are rows 0-3 in order: all pieces are summed,
                                  // then the two 128-bit halves, two row groups per vector (t2m, t2p)
  int scale_read = 0;             // the rows' fp16 scales are consecutive from scale_offset[0]: read
                                  // as one load of 16 (8: rows <= 4) bytes inside the block; 0: per row
  std::string describe() const;          // "in place, 16 items, 1 accumulator, 8 shuffled lanes"
};

// Built once per (layout, vector width, accumulator limit) and cached; never throws. An
// accumulator takes at most max_acc_items items (the policy's narrow accumulator bound).
const PermutePlan& permute_plan(const LayoutInfo& layout, int vector_bytes, int max_acc_items);

// The prepared activations of one token for the permute kernels (prepared_acts_bytes(blocks128,
// plan.expanded_block_bytes) bytes at mem): every block's BlockActs and its items' activations.
SlotActs prepare_permute_acts_into(const PermutePlan& plan, const BlockQ8K* x, std::int64_t blocks128,
                                   std::uint8_t* mem);

}  // namespace ternlab
