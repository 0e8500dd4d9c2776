#include "kernels/kernel_plan.hpp"

#include <algorithm>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <tuple>
#include <vector>

#include "common/aligned.hpp"
#include "common/error.hpp"
#include "layouts/matrix.hpp"

namespace ternlab {

namespace {

// The smmla gemm's units (SlotVectorPlan::TileUnit) of a 16-byte plan; returns why not, or "".
// smmla multiplies a 2x8 weight operand by two tokens' 8 activations: a row-pair slot is that
// operand as stored; single-row words are zipped two by two, which needs both rows' word k to
// cover the same weights. Either way each slot must start on an 8-weight chunk of q8_Kx4.
std::string build_tiles(const LayoutInfo& L, SlotVectorPlan& p) {
  if (p.vector_bytes != kWordBytes) return cat("the smmla gemm reads ", kWordBytes, "-byte words");
  if (p.scale_groups > 1)
    return cat(L.scale_group(), "-weight scale groups (the smmla gemm takes one scale per row per 128-weight chunk)");
  if (L.k != kBlockK) return cat("blocks of ", L.k, " weights (the q8_Kx4 chunks assume ", kBlockK, ")");
  p.tile_pairs = L.facts.pairs_rows;
  p.words_per_unit = p.tile_pairs ? 4 : 2;
  const int lanes = p.tile_pairs ? 8 : 16;
  p.slot_stride = L.slot_plan.front().slot[1].k0 - L.slot_plan.front().slot[0].k0;
  if (p.slot_stride < lanes || p.slot_stride % lanes != 0)
    return cat("slot stride ", p.slot_stride, " is not a whole number of ", lanes, "-weight lanes");
  int filled[kMaxPlanRows] = {};
  for (const WordPlan& w : L.slot_plan) {
    const SlotLanes& s0 = w.slot[0];
    for (int s = 1; s < 4; ++s)
      if (w.slot[s].k0 != s0.k0 + s * p.slot_stride)
        return cat("the slots of the word at byte ", w.byte_offset, " are not ", p.slot_stride, " weights apart");
    if (s0.k0 % 8 != 0) return cat("the word at byte ", w.byte_offset, " starts off an 8-weight chunk (k ", s0.k0, ")");
    int u = 0;
    while (u < p.tile_units && (p.tile_unit[u].row_a != s0.row_a || p.tile_unit[u].row_b != s0.row_b)) ++u;
    if (u == p.tile_units) {
      if (u == kMaxPlanRows) return cat("more than ", kMaxPlanRows, " units");
      p.tile_unit[u].row_a = s0.row_a;
      p.tile_unit[u].row_b = s0.row_b;
      ++p.tile_units;
    }
    if (filled[u] == p.words_per_unit) return cat("row ", s0.row_a, " has more than ", p.words_per_unit, " words");
    p.tile_unit[u].word_offset[filled[u]] = w.byte_offset;
    p.tile_unit[u].word_k0[filled[u]++] = s0.k0;
  }
  for (int u = 0; u < p.tile_units; ++u)
    if (filled[u] != p.words_per_unit) return cat("row ", p.tile_unit[u].row_a, " has fewer than ", p.words_per_unit, " words");
  if (p.tile_units * (p.tile_pairs ? 2 : 1) != L.rows) return cat("the words' units do not cover the ", L.rows, " rows once each");
  if (!p.tile_pairs) {
    if (p.tile_units % 2 != 0) return cat(p.tile_units, " single-row units do not pair up for zips");
    for (int u = 1; u < p.tile_units; ++u)
      for (int k = 0; k < p.words_per_unit; ++k)
        if (p.tile_unit[u].word_k0[k] != p.tile_unit[0].word_k0[k])
          return "single-row words pair up for zips only when every row's word k covers the same weights";
  }
  return "";
}

SlotVectorPlan build_slot_plan(const LayoutInfo& L, int vb, PairPosition pos, int max_group) {
  SlotVectorPlan p;
  p.layout = &L;
  p.vector_bytes = vb;
  const auto reject = [&](auto... why) {
    p.why_not = cat(why...);
    return p;
  };
  if (!L.facts.slot_vectorizable || L.slot_plan.empty()) return reject("layout is not slot-vectorizable");
  if (!chunked_block_scales(L)) return reject(L.block_scales_why_not());
  // Chunk c's words are chunk 0's moved by c chunk strides and c * 128 weights, listed after them,
  // so the kernels run chunk 0's plan at each chunk's offset.
  p.chunks = L.k / kBlockK;
  const int words = int(L.slot_plan.size()) / p.chunks;
  if (p.chunks > 1) p.chunk_stride = L.slot_plan[std::size_t(words)].byte_offset - L.slot_plan[0].byte_offset;
  for (int c = 0; c < p.chunks; ++c)
    for (int i = 0; i < words; ++i) {
      const WordPlan& a = L.slot_plan[std::size_t(i)];
      const WordPlan& b = L.slot_plan[std::size_t(c * words + i)];
      bool moved = b.byte_offset == a.byte_offset + c * p.chunk_stride;
      for (int s = 0; s < 4; ++s)
        moved = moved && a.slot[s].k0 < kBlockK && b.slot[s].k0 == a.slot[s].k0 + c * kBlockK &&
                b.slot[s].row_a == a.slot[s].row_a && b.slot[s].row_b == a.slot[s].row_b;
      if (!moved)
        return reject("the word at byte ", b.byte_offset, " is not the word at byte ", a.byte_offset, " of the first 128-weight chunk moved by ",
                      c, " chunks (", L.k, "-weight blocks run as 128-weight chunks under one scale)");
    }
  // Scale groups narrower than a chunk: each word's weights must lie in one group, whose pair sums
  // then stay apart from the other groups' until the epilogue.
  p.scale_groups = chunk_scale_groups(L);
  p.group_bsums = 8 / p.scale_groups;
  if (p.chunks * p.scale_groups > SlotVectorPlan::kMaxBlockScales)
    return reject(p.chunks * p.scale_groups, " scales per row per block (at most ", SlotVectorPlan::kMaxBlockScales, ")");
  std::vector<int> word_group(std::size_t(words), 0);
  if (p.scale_groups > 1) {
    const int width = L.scale_group();
    for (int i = 0; i < words; ++i) {
      const WordPlan& w = L.slot_plan[std::size_t(i)];
      const int lanes = w.slot[0].row_b >= 0 ? 8 : 16;  // weights of one row per slot
      const int first = w.slot[0].k0 / width;
      for (int s = 0; s < 4; ++s)
        if (w.slot[s].k0 / width != first || (w.slot[s].k0 + lanes - 1) / width != first)
          return reject("the ", width, "-weight scale groups do not align to whole words (the word at byte ", w.byte_offset,
                        " holds weights ", w.slot[s].k0, "..", w.slot[s].k0 + lanes - 1, " in slot ", s, " and ",
                        w.slot[0].k0, ".. in slot 0)");
      word_group[std::size_t(i)] = first;
    }
  }
  const int payload = words * kWordBytes;
  if (payload % vb != 0) return reject("payload of ", payload, " bytes is not a whole number of ", vb, "-byte vectors");
  const int vw = vb / kWordBytes;
  p.vectors = payload / vb;
  p.rows = L.rows;
  if (p.vectors > kMaxPlanVectors) return reject(p.vectors, " vectors per block (at most ", kMaxPlanVectors, ")");
  if (L.rows > kMaxPlanRows) return reject(L.rows, " rows per block (at most ", kMaxPlanRows, ")");
  p.payload_begin = L.slot_plan[0].byte_offset;
  // A vector is one load: its words must be adjacent (scales between pieces may split the payload,
  // but not inside a vector).
  for (int j = 0; j < p.vectors; ++j)
    for (int u = 1; u < vw; ++u)
      if (L.slot_plan[std::size_t(j * vw + u)].byte_offset != L.slot_plan[std::size_t(j * vw)].byte_offset + u * kWordBytes)
        return reject("the words of ", vb, "-byte vector ", j, " are not adjacent (bytes ",
                      L.slot_plan[std::size_t(j * vw)].byte_offset, " and ", L.slot_plan[std::size_t(j * vw + u)].byte_offset,
                      ")");
  p.block_bytes = L.block_bytes();
  for (int r = 0; r < L.rows; ++r) {
    p.scale_offset[r] = L.scale_offset(r);
    for (int c = 0; c < p.chunks; ++c)
      for (int j = 0; j < p.scale_groups; ++j)
        p.scale_at[r][c * p.scale_groups + j] = L.scale_offset(r, L.scales_per_row() == 1 ? 0 : c * p.scale_groups + j);
  }

  // Slots are combined per vector before the lanes are reduced to rows, so a word's rows must not
  // depend on the slot (true of every row and row-pair layout declared so far).
  for (const WordPlan& w : L.slot_plan)
    for (int s = 1; s < 4; ++s)
      if (w.slot[s].row_a != w.slot[0].row_a || w.slot[s].row_b != w.slot[0].row_b)
        return reject("word at byte ", w.byte_offset, " feeds different rows from different slots");

  // Groups: vectors whose lanes feed the same rows and scale groups, in the same places. Equal-sized groups are
  // processed group by group; otherwise every vector is its own group.
  const auto same_rows = [&](int a, int b) {
    for (int u = 0; u < vw; ++u) {
      const SlotLanes& x = L.slot_plan[std::size_t(a * vw + u)].slot[0];
      const SlotLanes& y = L.slot_plan[std::size_t(b * vw + u)].slot[0];
      if (x.row_a != y.row_a || x.row_b != y.row_b) return false;
      if (word_group[std::size_t(a * vw + u)] != word_group[std::size_t(b * vw + u)]) return false;
    }
    return true;
  };
  std::vector<std::vector<int>> groups;
  for (int j = 0; j < p.vectors; ++j) {
    auto g = std::find_if(groups.begin(), groups.end(), [&](const auto& m) { return same_rows(m[0], j); });
    if (g == groups.end())
      groups.push_back({j});
    else
      g->push_back(j);
  }
  if (std::any_of(groups.begin(), groups.end(), [&](const auto& m) { return m.size() != groups[0].size(); })) {
    groups.clear();
    for (int j = 0; j < p.vectors; ++j) groups.push_back({j});
  }
  // A policy whose group accumulator is narrow (AVX2's int16 sums) takes at most max_group vectors
  // in one: larger groups split into equal parts with the same rows, which only adds lane pairs.
  if (int(groups[0].size()) > max_group) {
    int part = max_group;
    while (groups[0].size() % std::size_t(part) != 0) --part;
    std::vector<std::vector<int>> split;
    for (const auto& m : groups)
      for (std::size_t i = 0; i < m.size(); i += std::size_t(part)) split.emplace_back(m.begin() + std::ptrdiff_t(i), m.begin() + std::ptrdiff_t(i) + part);
    groups = std::move(split);
  }
  p.groups = int(groups.size());
  p.group_size = int(groups[0].size());
  std::vector<int> order;
  for (const auto& m : groups) order.insert(order.end(), m.begin(), m.end());

  // Classes: vectors whose words need identical activations share one expansion.
  const auto same_acts = [&](int a, int b) {
    for (int u = 0; u < vw; ++u)
      for (int s = 0; s < 4; ++s) {
        const SlotLanes& x = L.slot_plan[std::size_t(a * vw + u)].slot[s];
        const SlotLanes& y = L.slot_plan[std::size_t(b * vw + u)].slot[s];
        if (x.k0 != y.k0 || (x.row_b < 0) != (y.row_b < 0)) return false;
      }
    return true;
  };
  for (int i = 0; i < p.vectors; ++i) {
    const int j = order[std::size_t(i)];
    int c = 0;
    while (c < p.classes && !same_acts(p.class_vector[c], j)) ++c;
    if (c == p.classes) p.class_vector[p.classes++] = j;
    p.class_offset[i] = c * 4 * vb;
    p.vector_offset[i] = L.slot_plan[std::size_t(j * vw)].byte_offset;
  }
  p.expanded_block_bytes = p.classes * 4 * vb;

  // Pair sums (two int32 lanes = 8 bytes of one word) to rows.
  const int pairs = 2 * p.groups * vw;
  if (pairs % L.rows != 0) return reject(pairs, " lane pairs do not split evenly over ", L.rows, " rows");
  p.pairs_per_row = pairs / L.rows;
  if (p.pairs_per_row % p.scale_groups != 0)
    return reject(p.pairs_per_row, " lane pairs per row do not split evenly over ", p.scale_groups, " scale groups");
  const int per_group = p.pairs_per_row / p.scale_groups;
  std::vector<int> filled(std::size_t(L.rows * p.scale_groups), 0);
  p.group_per_row = p.groups == L.rows;
  for (int a = 0; a < p.groups; ++a)
    for (int u = 0; u < vw; ++u)
      for (int h = 0; h < 2; ++h) {
        const SlotLanes& l = L.slot_plan[std::size_t(groups[std::size_t(a)][0] * vw + u)].slot[0];
        const int row = (h == 1 && l.row_b >= 0) ? l.row_b : l.row_a;
        const int j = word_group[std::size_t(groups[std::size_t(a)][0] * vw + u)];
        int& n = filled[std::size_t(row * p.scale_groups + j)];
        if (n == per_group)
          return reject("row ", row, " owns more lane pairs", p.scale_groups > 1 ? cat(" of scale group ", j) : "", " than the others");
        p.group_per_row = p.group_per_row && row == a;
        p.pair_index[row * p.pairs_per_row + j * per_group + n++] = std::uint16_t(pos(a, u, h));
      }
  if (p.pairs_per_row <= 8)
    for (int r = 0; r < L.rows; ++r)
      for (int e = 0; e < p.pairs_per_row; ++e) {
        const int q = p.pair_index[r * p.pairs_per_row + e];
        if (q / 8 >= 8) continue;
        p.row_perm[q / 8][e][r] = q % 8;
        p.row_mask[q / 8][e][r] = -1;
      }
  p.fold_halves = p.groups <= 2 && p.pairs_per_row == 2;
  for (int r = 0; r < L.rows && p.fold_halves; ++r)
    p.fold_halves = p.pair_index[2 * r] == r && p.pair_index[2 * r + 1] == r + 4;
  p.fold_words = p.pairs_per_row == 4;
  for (int r = 0; r < L.rows && p.fold_words; ++r)
    for (int e = 0; e < 4; ++e) p.fold_words = p.fold_words && p.pair_index[4 * r + e] == 16 * (r / 4) + r % 4 + 4 * e;
  // The register shortcuts sum a row's pair sums into one; split scale groups keep them apart.
  if (p.scale_groups > 1) p.fold_halves = p.fold_words = p.group_per_row = false;
  p.scales_contiguous = L.scale_format() == ScaleFormat::fp16;
  for (int r = 0; r < L.rows; ++r) p.scales_contiguous = p.scales_contiguous && p.scale_offset[r] == p.scale_offset[0] + 2 * r;
  p.tile_why_not = build_tiles(L, p);
  return p;
}

struct Scratch {
  std::uint8_t* data = nullptr;
  std::size_t size = 0;
  ~Scratch() { ::operator delete(data, std::align_val_t{kAlign}); }
};

std::size_t align_up(std::size_t n) { return (n + kAlign - 1) / kAlign * kAlign; }

}  // namespace

const SlotVectorPlan& slot_vector_plan(const LayoutInfo& layout, int vector_bytes, PairPosition pos, int max_group) {
  static std::mutex mu;
  static std::map<std::tuple<const LayoutInfo*, int, PairPosition, int>, std::unique_ptr<SlotVectorPlan>> cache;
  const std::lock_guard lock(mu);
  auto& slot = cache[{&layout, vector_bytes, pos, max_group}];
  if (!slot) slot = std::make_unique<SlotVectorPlan>(build_slot_plan(layout, vector_bytes, pos, max_group));
  return *slot;
}

int neon_pair_position(int a, int /*u*/, int h) { return 4 * (a / 2) + 2 * (a % 2) + h; }

const SlotVectorPlan& neon_slot_plan(const LayoutInfo& layout) {
  return slot_vector_plan(layout, kWordBytes, &neon_pair_position, kNeonGroupVectors);
}

std::string smmla_why_not(const LayoutInfo& layout) {
  const SlotVectorPlan& p = neon_slot_plan(layout);
  return p.why_not.empty() ? p.tile_why_not : p.why_not;
}

void expand_slot_activations(const SlotVectorPlan& p, const LayoutInfo& L, const std::int8_t* q, std::uint8_t* out) {
  const int vw = p.vector_bytes / kWordBytes;
  for (int c = 0; c < p.classes; ++c)
    for (int s = 0; s < 4; ++s)
      for (int u = 0; u < vw; ++u) {
        const SlotLanes& l = L.slot_plan[std::size_t(p.class_vector[c] * vw + u)].slot[s];
        std::uint8_t* dst = out + (c * 4 + s) * p.vector_bytes + u * kWordBytes;
        if (l.row_b < 0) {
          std::memcpy(dst, q + l.k0, 16);
        } else {  // dup8: the same 8 activations meet row a's and row b's 8 weights
          std::memcpy(dst, q + l.k0, 8);
          std::memcpy(dst + 8, q + l.k0, 8);
        }
      }
}

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

namespace {
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

BlockActs fetch_plain(const BlockQ8K* x, std::int64_t i, std::int8_t* q) {
  const BlockQ8K& b = x[i / 2];
  std::memcpy(q, b.qs + 128 * (i % 2), 128);
  return block_acts(b, int(i % 2));
}

BlockActs fetch_x4(const BlockQ8Kx4* x, int m, std::int64_t i, std::int8_t* q) {
  const BlockQ8Kx4& b = x[i / 2];
  const int h = int(i % 2);
  for (int c = 0; c < 16; ++c) std::memcpy(q + 8 * c, b.qs + x4_index(m, 128 * h + 8 * c), 8);
  return block_acts_x4(b, m, h);
}

// Within each 32-value group, byte 8j + b takes value 4b + j (spec 6.2).
void natural_unpack_order(const std::int8_t* q, std::uint8_t* out) {
  for (int g = 0; g < 128; g += 32)
    for (int j = 0; j < 4; ++j)
      for (int b = 0; b < 8; ++b) out[g + 8 * j + b] = std::uint8_t(q[g + 4 * b + j]);
}
// Strip order: strip t's slot s takes its `lane` values from k0[t][s]. The width is a constant so
// each copy is one move: through a run-time length every copy was a call to memcpy.
template <int lane>
void strip_copy(const StripPlan& p, const std::int8_t* q, std::uint8_t* out) {
  for (int t = 0; t < p.strips; ++t)
    for (int s = 0; s < 4; ++s) std::memcpy(out + 4 * lane * t + lane * s, q + p.k0[t][s], lane);
}
auto strip_order(const StripPlan& p) {
  return [&p](const std::int8_t* q, std::uint8_t* out) {
    switch (p.lane_bytes) {
      case 8: return strip_copy<8>(p, q, out);
      case 16: return strip_copy<16>(p, q, out);
      default: return strip_copy<4>(p, q, out);
    }
  };
}
// Entry j of `tokens` tokens of consecutive tiles from tile0, block-major: block j / tokens of
// token j % tokens.
auto fetch_tiles(const Q8KBatch& x, std::int64_t tile0, int tokens) {
  return [&x, tile0, tokens](std::int64_t j, std::int8_t* q) {
    const int m = int(j % tokens);
    return fetch_x4(x.tile(tile0 + m / 4), m % 4, j / tokens, q);
  };
}
// Base-3 strip order (Base3StripPlan).
auto base3_strip_order(const Base3StripPlan& p) {
  return [&p](const std::int8_t* q, std::uint8_t* out) {
    std::memset(out, 0, kBase3StripActBytes);
    for (int t = 0; t <= p.strips; ++t) {
      const bool tail = t == p.strips;
      for (int n = 0; n < (tail ? kBase3TailDigits : 5); ++n)
        std::memcpy(out + kBase3StripWeights * t + 4 * n, q + p.k0[t][n], tail ? kBase3TailLanes : 4);
    }
  };
}
}  // namespace

SlotActs prepare_base3_strip_acts_into(const Base3StripPlan& p, const BlockQ8K* x, std::int64_t nb, std::uint8_t* mem) {
  return prepare_into(mem, nb, kBase3StripActBytes, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                      base3_strip_order(p));
}

SlotActs prepare_base3_strip_acts_tiles(const Base3StripPlan& p, const Q8KBatch& x, std::int64_t tile0, int tokens,
                                        std::int64_t nb, int slot) {
  return prepare(nb * tokens, slot, kBase3StripActBytes, fetch_tiles(x, tile0, tokens), base3_strip_order(p));
}

SlotActs prepare_strip_acts_into(const StripPlan& p, const BlockQ8K* x, std::int64_t nb, std::uint8_t* mem) {
  return prepare_into(mem, nb, kBlockK, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                      strip_order(p));
}

SlotActs prepare_strip_acts(const StripPlan& p, const BlockQ8K* x, std::int64_t nb, int slot) {
  return prepare(nb, slot, kBlockK, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                 strip_order(p));
}

SlotActs prepare_strip_acts_tiles(const StripPlan& p, const Q8KBatch& x, std::int64_t tile0, int tokens,
                                  std::int64_t nb, int slot) {
  return prepare(nb * tokens, slot, kBlockK, fetch_tiles(x, tile0, tokens), strip_order(p));
}

SlotActs prepare_slot_acts_into(const SlotVectorPlan& p, const LayoutInfo& L, const BlockQ8K* x, std::int64_t nb,
                                std::uint8_t* mem) {
  return prepare_into(mem, nb, p.expanded_block_bytes,
                      [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                      [&](const std::int8_t* q, std::uint8_t* out) { expand_slot_activations(p, L, q, out); });
}

SlotActs prepare_slot_acts(const SlotVectorPlan& p, const LayoutInfo& L, const BlockQ8K* x, std::int64_t nb,
                           int slot) {
  return prepare(nb, slot, p.expanded_block_bytes, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                 [&](const std::int8_t* q, std::uint8_t* out) { expand_slot_activations(p, L, q, out); });
}

SlotActs prepare_slot_acts_x4(const SlotVectorPlan& p, const LayoutInfo& L, const BlockQ8Kx4* x, int m,
                              std::int64_t nb, int slot) {
  return prepare(nb, slot, p.expanded_block_bytes, [&](std::int64_t i, std::int8_t* q) { return fetch_x4(x, m, i, q); },
                 [&](const std::int8_t* q, std::uint8_t* out) { expand_slot_activations(p, L, q, out); });
}

SlotActs prepare_natural_acts_into(const BlockQ8K* x, std::int64_t nb, std::uint8_t* mem) {
  return prepare_into(mem, nb, kBlockK, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                      natural_unpack_order);
}

SlotActs prepare_natural_acts(const BlockQ8K* x, std::int64_t nb, int slot) {
  return prepare(nb, slot, kBlockK, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                 natural_unpack_order);
}

SlotActs prepare_natural_acts_x4(const BlockQ8Kx4* x, int m, std::int64_t nb, int slot) {
  return prepare(nb, slot, kBlockK, [&](std::int64_t i, std::int8_t* q) { return fetch_x4(x, m, i, q); },
                 natural_unpack_order);
}

const BlockQ8K* deinterleave_tile_token(const BlockQ8Kx4* x, int m, std::int64_t nb256, int slot) {
  auto* out = reinterpret_cast<BlockQ8K*>(kernel_scratch(std::size_t(nb256) * sizeof(BlockQ8K), slot));
  for (std::int64_t i = 0; i < nb256; ++i) out[i] = deinterleave_x4(x[i], m);
  return out;
}

}  // namespace ternlab

namespace ternlab {

namespace {
Base3Plan build_base3_plan(const LayoutInfo& L) {
  Base3Plan p;
  if (!L.facts.digit_planar || L.digit_plan.empty()) {
    p.why_not = "layout is not digit-planar base-3";
    return p;
  }
  if (!L.block_scales_128()) {
    p.why_not = L.block_scales_why_not();
    return p;
  }
  if (L.rows != 1 || L.k != 128) {
    p.why_not = "base-3 kernels take one-row blocks of 128 weights";
    return p;
  }
  p.block_bytes = L.block_bytes();
  p.scale_offset = L.scale_offset(0);
  p.scale_format = L.scale_format();
  int src[128], digit[128];
  for (const DigitSegment& s : L.digit_plan)
    for (int n = 0; n < s.digits; ++n)
      for (int m = 0; m < s.lanes; ++m) {
        src[s.k_begin + n * s.lanes + m] = s.byte_offset + m;
        digit[s.k_begin + n * s.lanes + m] = n;
      }
  for (int v = 0; v < 4; ++v)
    for (int l = 0; l < 2; ++l) {
      const int k0 = 32 * v + 16 * l;
      int lo = src[k0], hi = src[k0];
      for (int e = 0; e < 16; ++e) lo = std::min(lo, src[k0 + e]), hi = std::max(hi, src[k0 + e]);
      if (hi - lo >= 16) {
        p.why_not = cat("weights ", k0, "..", k0 + 15, " read bytes more than 16 apart");
        return p;
      }
      p.window[v][l] = lo;
      p.overreads = p.overreads || lo + 16 > p.block_bytes;
      for (int e = 0; e < 16; ++e) {
        int pow3 = 1;
        for (int n = 0; n < digit[k0 + e]; ++n) pow3 = pow3 * 3 % 256;
        p.shuffle[v][16 * l + e] = std::uint8_t(src[k0 + e] - lo);
        const int byte = 16 * l + e;
        (byte % 2 ? p.mul_odd : p.mul_even)[v][byte / 2] = std::uint16_t(pow3);
      }
    }
  return p;
}
}  // namespace

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

const Base3Plan& base3_plan(const LayoutInfo& layout) {
  static std::mutex mu;
  static std::map<const LayoutInfo*, std::unique_ptr<Base3Plan>> cache;
  const std::lock_guard lock(mu);
  auto& slot = cache[&layout];
  if (!slot) slot = std::make_unique<Base3Plan>(build_base3_plan(layout));
  return *slot;
}

}  // namespace ternlab
