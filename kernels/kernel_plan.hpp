// Runtime kernel plans: what the SIMD strategies need to know about a layout at a given vector
// width, derived once from LayoutInfo's slot_plan / digit_plan and cached. Nothing here is ISA
// specific, so the per-ISA translation units (compiled for wider targets) only read plain arrays.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/q8k.hpp"
#include "layouts/registry.hpp"

namespace ternlab {

// Blocks the slot-mask strategy walks as 128-weight chunks (one q8_K half each) with the scales
// read from the block, k a multiple of 128: one scale per row per block (t2p: one chunk; t2p-g256,
// tq2_0: two chunks under it), or one per row per scale group where the groups split each chunk
// evenly into whole 16-activation q8_K sums (t2p-g64: two per chunk). Returns the scale groups per
// chunk (1: the chunk's one scale), 0 where the scales are read another way. Each chunk, or each
// group of it, takes its own fma as the reference and the oracle do, so the result is theirs bit
// for bit. Whether a group covers whole words of the payload is the slot plan's question.
inline constexpr int kMaxChunkScaleGroups = 8;
inline int chunk_scale_groups(const LayoutInfo& L) {
  if (L.k % 128 != 0 || L.per_tensor_scale()) return 0;
  if (L.scales_per_row() == 1) return 1;
  const int g = L.scale_group();
  if (g < 16 || g >= 128 || 128 % g != 0 || g % 16 != 0 || L.scales_per_row() != L.k / g) return 0;
  return 128 / g;
}
inline bool chunked_block_scales(const LayoutInfo& L) { return chunk_scale_groups(L) > 0; }

inline constexpr int kMaxPlanVectors = 16;  // weight vectors per block the slot-mask kernels unroll
inline constexpr int kMaxPlanRows = 8;

// The slot-mask plan at vector width `vector_bytes` (16, 32, 64): the block payload is read as
// `vectors` vectors; vector j's slot s meets an activation vector built per token ("expanded"
// activations: for every 16-byte word, 16 consecutive values, or 8 values twice for row-pair words,
// i.e. dup8). Vectors with the same activations share one expanded copy (a class). Vectors whose
// lanes feed the same rows (a group: t2p's two vectors of one row pair) share one accumulator, so
// the lanes-to-rows reduction runs once per group, not once per vector.
struct SlotVectorPlan {
  std::string why_not;  // empty when the slot-mask kernels can run this layout at this width
  const LayoutInfo* layout = nullptr;
  int vector_bytes = 0;
  int vectors = 0;        // per block
  int groups = 0;         // accumulators per block
  int group_size = 0;     // vectors per group (vectors = groups * group_size)
  int classes = 0;        // distinct activation patterns among the vectors
  int rows = 0;
  int payload_begin = 0;
  int block_bytes = 0;
  int scale_offset[kMaxPlanRows] = {};
  // A block of several 128-weight chunks (chunked_block_scales): the fields above and below describe
  // chunk 0, the first words of the block; chunk c is chunk 0's words moved by c * chunk_stride
  // bytes, and every chunk reads the block's scales (scale_offset from the block's start).
  int chunks = 1;
  int chunk_stride = 0;
  // Scale groups per chunk (chunk_scale_groups; 1: the block's one scale per row). Several: each
  // group covers whole words, a group accumulator's vectors share one group per word position,
  // and row r's pair sums of group j are pair_index[r * pairs_per_row + j * pairs_per_row /
  // scale_groups + e]; its scale is at scale_at[r][c * scale_groups + j] (chunk c) from the
  // block's start, its activation sum the q8_K sums bsums[j * group_bsums ..] of the chunk.
  int scale_groups = 1;
  int group_bsums = 8;
  static constexpr int kMaxBlockScales = 16;
  int scale_at[kMaxPlanRows][kMaxBlockScales] = {};
  // In processing order (group 0's vectors, then group 1's, ...): the vector's byte offset in the
  // block, and the byte offset of its 4 slot vectors in a block's expansion.
  int vector_offset[kMaxPlanVectors] = {};
  int class_offset[kMaxPlanVectors] = {};
  int class_vector[kMaxPlanVectors] = {};  // a vector of each class (whose words the expansion copies)
  int expanded_block_bytes = 0;            // classes * 4 * vector_bytes
  // Reduction: pairs of int32 lanes of a group's accumulator (8 bytes x 4 slots = 32 weights,
  // always one row) are summed and stored; row r owns the pair sums at
  // pair_index[r * pairs_per_row + e] of that store (the order is the ISA policy's pair_position).
  int pairs_per_row = 0;
  std::uint16_t pair_index[kMaxPlanRows * 64] = {};
  // The same gather as lane permutes, for policies that keep the pair sums in 8-lane vectors
  // (entry q of the store = lane q % 8 of vector q / 8): row r's e-th pair sum is lane
  // row_perm[k][e][r] of vector k where row_mask[k][e][r] is all ones.
  std::int32_t row_perm[8][8][8] = {};
  std::int32_t row_mask[8][8][8] = {};
  bool scales_contiguous = false;  // fp16 scales, row r's at scale_offset[0] + 2 r (one vector load)
  // Shortcuts for 8-lane policies, true when the general gather above reduces to a fold of the two
  // 128-bit halves: fold_halves - after one hadd of groups 0 and 1, row r is lanes r and r + 4
  // (t2p); group_per_row - group g's lanes all belong to row g (t2w), so a hadd tree gets there.
  bool fold_halves = false;
  bool group_per_row = false;
  // For 16-lane policies (AVX-512): every 16-byte word of each pair vector (groups 2k, 2k+1)
  // holds rows 4k .. 4k+3 in its four lanes, so summing the words gathers the rows (t2p, t2p8).
  bool fold_words = false;

  // The matrix-instruction view of a 16-byte plan (the NEON i8mm smmla gemm, kernels/targets/i8mm/kernels.cpp):
  // the block's words as units, a row pair (row_a in bytes 0-7, row_b in 8-15) or a single row, in
  // the order the slot plan lists them; slot s of a unit's word holds the weights from
  // k0 + s * slot_stride, one stride for the whole layout. tile_why_not is empty when the gemm
  // runs the layout (smmla_why_not).
  struct TileUnit {
    int row_a = -1, row_b = -1;
    int word_offset[4] = {};  // from the block start
    int word_k0[4] = {};      // first weight of slot 0
  };
  std::string tile_why_not;
  bool tile_pairs = false;
  int slot_stride = 0;
  int tile_units = 0;       // row pairs, or single rows (then zipped two by two)
  int words_per_unit = 0;   // 4 for a row pair (2 x 128 weights), 2 for a single row
  TileUnit tile_unit[kMaxPlanRows] = {};
};

// Where the ISA policy stores the pair sum (group accumulator a, 16-byte word u of it, half h).
using PairPosition = int (*)(int j, int u, int h);

// Built once per (layout, vector width, policy) and cached; never throws (why_not says what failed).
// Groups hold at most `max_group` vectors (the policy's kGroupVectors); larger ones are split.
const SlotVectorPlan& slot_vector_plan(const LayoutInfo& layout, int vector_bytes, PairPosition pos,
                                       int max_group = kMaxPlanVectors);

// The NEON 16-byte policies' plan (kernels/targets/neon/policy.hpp): their pair sums come from
// vpaddq(c_a, c_a+1) = [c_a pairs 0,1 | c_a+1 pairs 0,1], and their group sums are int32.
int neon_pair_position(int a, int u, int h);
inline constexpr int kNeonGroupVectors = 8;
const SlotVectorPlan& neon_slot_plan(const LayoutInfo& layout);
// Why the NEON i8mm smmla gemm cannot run `layout` (its plan's tile_why_not, or why the layout has
// no 16-byte slot plan at all); empty when it can. The one rule the catalog and the tests read.
std::string smmla_why_not(const LayoutInfo& layout);

// Expands one 128-value activation block for the plan into `out` (expanded_block_bytes).
void expand_slot_activations(const SlotVectorPlan& plan, const LayoutInfo& layout, const std::int8_t* q128,
                             std::uint8_t* out);

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
inline constexpr int kScratchAreas = 24;

// Bytes of a prepared-activations buffer for `blocks128` blocks of `block_bytes` values each: the
// BlockActs first (aligned), then the values. SlotActs views such a buffer.
std::size_t prepared_acts_bytes(std::int64_t blocks128, int block_bytes);
SlotActs view_prepared_acts(const std::uint8_t* mem, std::int64_t blocks128);

// `slot` picks one of several simultaneously live scratch areas of the calling thread
// (0 .. kActsScratchAreas - 1); the *_into forms write into `mem` (prepared_acts_bytes long).
SlotActs prepare_slot_acts_into(const SlotVectorPlan& plan, const LayoutInfo& layout, const BlockQ8K* x,
                                std::int64_t blocks128, std::uint8_t* mem);
SlotActs prepare_slot_acts(const SlotVectorPlan& plan, const LayoutInfo& layout, const BlockQ8K* x,
                           std::int64_t blocks128, int slot);
// Token `m` of a q8_Kx4 tile row.
SlotActs prepare_slot_acts_x4(const SlotVectorPlan& plan, const LayoutInfo& layout, const BlockQ8Kx4* x, int m,
                              std::int64_t blocks128, int slot);

// Activations of one token in the order the stock unpack kernel leaves its codes (spec 6.2: within
// each 32-value group, byte 8j + b holds value 4b + j), 128 bytes per block, plus BlockActs. The
// fork permutes them inside every row's dot product; they depend on the token only, so the tuned
// baseline permutes once per token.
SlotActs prepare_natural_acts(const BlockQ8K* x, std::int64_t blocks128, int slot);
SlotActs prepare_natural_acts_into(const BlockQ8K* x, std::int64_t blocks128, std::uint8_t* mem);
SlotActs prepare_natural_acts_x4(const BlockQ8Kx4* x, int m, std::int64_t blocks128, int slot);

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

// The same for a base-3 row-interleaved layout (Base3StripPlan): per 128-block kBase3StripActBytes
// bytes, strip t's digit n at 20 t + 4 n holding values k0[t][n] .. k0[t][n] + 3; in the tail strip
// each digit's two values, then two zeros, and digit 4 all zeros (its bytes' empty digit).
inline constexpr int kBase3StripActBytes = (kBase3Strips + 1) * kBase3StripWeights;
SlotActs prepare_base3_strip_acts_into(const Base3StripPlan& p, const BlockQ8K* x, std::int64_t blocks128,
                                       std::uint8_t* mem);
SlotActs prepare_base3_strip_acts_tiles(const Base3StripPlan& p, const Q8KBatch& x, std::int64_t tile0, int tokens,
                                        std::int64_t blocks128, int slot);

// Plain (q8_K-ordered) activations of token m of a tile, for strategies that read natural order.
const BlockQ8K* deinterleave_tile_token(const BlockQ8Kx4* x, int m, std::int64_t blocks256, int slot);

// Per-thread, 64-byte aligned scratch of at least `bytes` bytes; `index` names one of the
// kScratchAreas areas (above) and is checked.
std::uint8_t* kernel_scratch(std::size_t bytes, int index);

}  // namespace ternlab

namespace ternlab {

// The base-3 plan (digit-planar layouts) for 32-weight vectors: lane l (16 weights) of vector v
// reads a 16-byte window of the block at window[v][l]; byte e of the vector is window byte
// shuffle[v][e] multiplied by 3^n mod 256 (n = the weight's digit), which brings digit n to the top
// trit, read by the compares (x >= 86) + (x >= 171) (spec 3.4). Weights are in natural k order.
struct Base3Plan {
  std::string why_not;
  int block_bytes = 0;
  int scale_offset = 0;
  ScaleFormat scale_format = ScaleFormat::fp16;
  bool overreads = false;  // some window reaches past the block's end (the last block needs a copy)
  int window[4][2] = {};
  std::uint8_t shuffle[4][32] = {};
  std::uint16_t mul_even[4][16] = {};  // multiplier of byte 2i of vector v, for a 16-bit multiply
  std::uint16_t mul_odd[4][16] = {};   // multiplier of byte 2i+1
};
const Base3Plan& base3_plan(const LayoutInfo& layout);

// The byte tables of P::base3_digits for Code::base3_banded (layouts' own decode_digit): for
// bytes 0-127 their digits 1-4 as 2-bit fields, for bytes 128-255 a byte below 128 with the same
// digits 1-4, and for each byte >> 2 its digit 0. Bytes the code never writes (81-83 of each band,
// 252-255) hold zeros.
struct Base3DigitTables {
  std::array<std::uint8_t, 128> low{}, high{};
  std::array<std::uint8_t, 64> top{};
};
const Base3DigitTables& base3_digit_tables();

}  // namespace ternlab

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
