// The slot-mask strategy's plans. What it recognises in a layout (slot_words: the payload as 16-byte
// words whose 2-bit slots each hold 16 consecutive weights of one row, or 8 of a row pair), and
// what its kernels follow at a vector width (SlotVectorPlan), the NEON smmla gemm's view of the same
// words, and the per-token activation expansion. Built at run time from the layout's placement,
// once per layout, so a layout needs no declaration beyond its geometry.
#pragma once

#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "kernels/kernel_plan.hpp"

namespace ternlab {

inline constexpr int kWordBytes = 16;  // one 128-bit vector: the unit the slot-mask strategy reasons in

// The lanes of one (16-byte word, slot): 16 consecutive weights of row_a, or (row pair) 8
// consecutive weights of row_a followed by the same 8 of row_b.
struct SlotLanes {
  int row_a = -1;
  int row_b = -1;  // -1: all 16 lanes belong to row_a
  int k0 = 0;      // first weight (within the block) of the 8 or 16 consecutive ones
};

struct WordPlan {
  int byte_offset = 0;  // from the block start
  std::array<SlotLanes, 4> slot{};
};

// Slot-vectorizable: the weight bytes form 16-byte words (starting at a weight byte, so scales
// placed between pieces are stepped over) and for every word and 2-bit slot the 16 lanes are 16
// consecutive weights of one row, or 8 consecutive weights of row a then the same 8 of row b. One
// AND per slot then yields a vector ready for a 4-wide dot (sdot / vpdpbusd) or, for row pairs, a
// 2x8 matrix-multiply operand (smmla). One kind of word per layout keeps each kernel one template.
struct SlotWords {
  std::string why_not;      // empty when the layout is slot-vectorizable
  bool pairs_rows = false;  // the words are row pairs (not single rows)
  std::vector<WordPlan> words;
};
const SlotWords& slot_words(const LayoutInfo& layout);

// Slot s masked in place (AND 3 << 2s) leaves the factor 4^s on u; kernels fold it back once per block.
constexpr int slot_factor(int slot) { return 1 << (2 * slot); }

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
  const SlotWords* words = nullptr;  // what the plan was made of (slot_words of the layout)
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
  // The same fold for a block of four rows in one group whose words each hold one row pair, rows
  // 0-1 in two words and rows 2-3 in the other two, wherever they sit (t2p-split: the scales
  // between its k pieces leave each vector both pairs' words of one piece). Pair-adding the 0-1
  // words with the 2-3 words gathers rows 0-3 in two words. pair_word_gather[0] and [1] pick the
  // 0-1 and the 2-3 words of accumulators a and b as 64-bit lane indices over (a, b) (one vpermt2q
  // each): a's words to words 0-1, b's to words 2-3.
  bool fold_pair_words = false;
  std::int64_t pair_word_gather[2][8] = {};

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

// Where the slot-mask strategy stores pair sums from vectors of kVectorBytes (store_pair_sums in
// kernels.hpp): pair_add(c_a, c_a+1) = per 16-byte word u, [c_a pairs 0,1 | c_a+1 pairs 0,1] (x86's
// hadd, NEON's vpaddq), each pair of accumulators' result stored after the previous one.
template <int kVectorBytes>
int pair_sum_position(int a, int u, int h) {
  return kVectorBytes / 4 * (a / 2) + 4 * u + 2 * (a % 2) + h;
}

// The NEON 16-byte policies' plan (kernels/targets/neon/policy.hpp): int32 group sums.
inline constexpr int kNeonGroupVectors = 8;
const SlotVectorPlan& neon_slot_plan(const LayoutInfo& layout);
// Why the NEON i8mm smmla gemm cannot run `layout` (its plan's tile_why_not, or why the layout has
// no 16-byte slot plan at all); empty when it can. The one rule the catalog and the tests read.
std::string smmla_why_not(const LayoutInfo& layout);

// Expands one 128-value activation block for the plan into `out` (expanded_block_bytes).
void expand_slot_activations(const SlotVectorPlan& plan, const std::int8_t* q128,
                             std::uint8_t* out);

// `slot` picks one of several simultaneously live scratch areas of the calling thread
// (0 .. kActsScratchAreas - 1); the *_into forms write into `mem` (prepared_acts_bytes long).
SlotActs prepare_slot_acts_into(const SlotVectorPlan& plan, const LayoutInfo& layout, const BlockQ8K* x,
                                std::int64_t blocks128, std::uint8_t* mem);
SlotActs prepare_slot_acts(const SlotVectorPlan& plan, const LayoutInfo& layout, const BlockQ8K* x,
                           std::int64_t blocks128, int slot);
// Token `m` of a q8_Kx4 tile row.
SlotActs prepare_slot_acts_x4(const SlotVectorPlan& plan, const LayoutInfo& layout, const BlockQ8Kx4* x, int m,
                              std::int64_t blocks128, int slot);

}  // namespace ternlab
