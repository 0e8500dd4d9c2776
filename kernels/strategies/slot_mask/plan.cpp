#include "kernels/strategies/slot_mask/plan.hpp"

#include <algorithm>
#include <cstring>
#include <tuple>
#include <vector>

#include "common/error.hpp"
#include "kernels/strategies/per_layout.hpp"
#include "layouts/matrix.hpp"

namespace ternlab {

using namespace prepared;  // the shared preparation loop (kernels/kernel_plan.hpp)

namespace {

// The next 16-byte word of weights at or after `byte`: words start at a weight byte, so scales
// placed between pieces are stepped over and the words need not sit on a 16-byte grid.
int next_word(const BlockInverse& inv, int byte, int payload_end) {
  while (byte < payload_end && !inv.holds_weight(byte)) ++byte;
  return byte;
}

// The lanes of (word, slot), or false when they are neither one row's 16 consecutive weights nor a
// row pair's 8 and 8.
bool classify_word(const BlockInverse& inv, int word, int slot, SlotLanes& out) {
  std::array<RowK, kWordBytes> lane{};
  for (int j = 0; j < kWordBytes; ++j) {
    lane[std::size_t(j)] = inv(word + j, slot);
    if (lane[std::size_t(j)].row < 0) return false;
  }
  const auto consecutive = [&](int from, int to) {
    for (int j = from + 1; j < to; ++j)
      if (lane[std::size_t(j)].row != lane[std::size_t(from)].row || lane[std::size_t(j)].k != lane[std::size_t(from)].k + (j - from))
        return false;
    return true;
  };
  if (consecutive(0, 16)) {
    out = {lane[0].row, -1, lane[0].k};
    return true;
  }
  if (consecutive(0, 8) && consecutive(8, 16) && lane[8].k == lane[0].k && lane[8].row != lane[0].row) {
    out = {lane[0].row, lane[8].row, lane[0].k};
    return true;
  }
  return false;
}

SlotWords recognise_slot_words(const LayoutInfo& L) {
  SlotWords r;
  const auto refuse = [&](std::string why) {
    r = {};
    r.why_not = std::move(why);
    return r;
  };
  if (L.code != Code::two_bit) return refuse("its code is base-3 (slot-mask masks 2-bit fields)");
  if (L.facts.weight_bytes != L.rows * L.k / 4) return refuse("some of its weight bytes hold fewer than four weights");
  if (L.facts.weight_bytes % kWordBytes != 0)
    return refuse(cat("its ", L.facts.weight_bytes, " weight bytes are not whole 16-byte words"));
  const BlockInverse inv(L);
  const int payload_end = L.facts.payload_begin + L.facts.payload_bytes;
  bool pairs = false, singles = false;
  for (int w = next_word(inv, L.facts.payload_begin, payload_end); w < payload_end;
       w = next_word(inv, w + kWordBytes, payload_end)) {
    WordPlan word{w, {}};
    for (int sl = 0; sl < 4; ++sl) {
      if (!classify_word(inv, w, sl, word.slot[std::size_t(sl)]))
        return refuse(cat("slot ", sl, " of its 16-byte word at byte ", w,
                          " holds neither 16 consecutive weights of one row nor 8 of a row pair"));
      (word.slot[std::size_t(sl)].row_b < 0 ? singles : pairs) = true;
    }
    r.words.push_back(word);
  }
  if (pairs && singles) return refuse("it mixes single-row words with row-pair words (each kernel reads one kind)");
  r.pairs_rows = pairs;
  return r;
}

}  // namespace

const SlotWords& slot_words(const LayoutInfo& layout) {
  static strategies::PerLayout<const LayoutInfo*, SlotWords> cache;
  return cache.get(&layout, [&] { return recognise_slot_words(layout); });
}

namespace {

// The smmla gemm's units (SlotVectorPlan::TileUnit) of a 16-byte plan; returns why not, or "".
// smmla multiplies a 2x8 weight operand by two tokens' 8 activations: a row-pair slot is that
// operand as stored; single-row words are zipped two by two, which needs both rows' word k to
// cover the same weights. Either way each slot must start on an 8-weight chunk of q8_Kx4.
std::string build_tiles(const LayoutInfo& L, SlotVectorPlan& p) {
  const SlotWords& recognised = slot_words(L);
  const std::vector<WordPlan>& word_list = recognised.words;
  if (p.vector_bytes != kWordBytes) return cat("the smmla gemm reads ", kWordBytes, "-byte words");
  if (p.scale_groups > 1)
    return cat(L.scale_group(), "-weight scale groups (the smmla gemm takes one scale per row per 128-weight chunk)");
  if (L.k != kBlockK) return cat("blocks of ", L.k, " weights (the q8_Kx4 chunks assume ", kBlockK, ")");
  p.tile_pairs = recognised.pairs_rows;
  p.words_per_unit = p.tile_pairs ? 4 : 2;
  const int lanes = p.tile_pairs ? 8 : 16;
  p.slot_stride = word_list.front().slot[1].k0 - word_list.front().slot[0].k0;
  if (p.slot_stride < lanes || p.slot_stride % lanes != 0)
    return cat("slot stride ", p.slot_stride, " is not a whole number of ", lanes, "-weight lanes");
  int filled[kMaxPlanRows] = {};
  for (const WordPlan& w : word_list) {
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
  const SlotWords& recognised = slot_words(L);
  const std::vector<WordPlan>& word_list = recognised.words;
  SlotVectorPlan p;
  p.layout = &L;
  p.vector_bytes = vb;
  const auto reject = [&](auto... why) {
    p.why_not = cat(why...);
    return p;
  };
  if (!recognised.why_not.empty()) return reject("the layout is not slot-vectorizable: ", recognised.why_not);
  p.words = &recognised;
  if (!chunked_block_scales(L)) return reject(L.block_scales_why_not());
  // Chunk c's words are chunk 0's moved by c chunk strides and c * 128 weights, listed after them,
  // so the kernels run chunk 0's plan at each chunk's offset.
  p.chunks = L.k / kBlockK;
  const int words = int(word_list.size()) / p.chunks;
  if (p.chunks > 1) p.chunk_stride = word_list[std::size_t(words)].byte_offset - word_list[0].byte_offset;
  for (int c = 0; c < p.chunks; ++c)
    for (int i = 0; i < words; ++i) {
      const WordPlan& a = word_list[std::size_t(i)];
      const WordPlan& b = word_list[std::size_t(c * words + i)];
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
      const WordPlan& w = word_list[std::size_t(i)];
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
  p.payload_begin = word_list[0].byte_offset;
  // A vector is one load: its words must be adjacent (scales between pieces may split the payload,
  // but not inside a vector).
  for (int j = 0; j < p.vectors; ++j)
    for (int u = 1; u < vw; ++u)
      if (word_list[std::size_t(j * vw + u)].byte_offset != word_list[std::size_t(j * vw)].byte_offset + u * kWordBytes)
        return reject("the words of ", vb, "-byte vector ", j, " are not adjacent (bytes ",
                      word_list[std::size_t(j * vw)].byte_offset, " and ", word_list[std::size_t(j * vw + u)].byte_offset,
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
  for (const WordPlan& w : word_list)
    for (int s = 1; s < 4; ++s)
      if (w.slot[s].row_a != w.slot[0].row_a || w.slot[s].row_b != w.slot[0].row_b)
        return reject("word at byte ", w.byte_offset, " feeds different rows from different slots");

  // Groups: vectors whose lanes feed the same rows and scale groups, in the same places. Equal-sized groups are
  // processed group by group; otherwise every vector is its own group.
  const auto same_rows = [&](int a, int b) {
    for (int u = 0; u < vw; ++u) {
      const SlotLanes& x = word_list[std::size_t(a * vw + u)].slot[0];
      const SlotLanes& y = word_list[std::size_t(b * vw + u)].slot[0];
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
        const SlotLanes& x = word_list[std::size_t(a * vw + u)].slot[s];
        const SlotLanes& y = word_list[std::size_t(b * vw + u)].slot[s];
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
    p.vector_offset[i] = word_list[std::size_t(j * vw)].byte_offset;
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
        const SlotLanes& l = word_list[std::size_t(groups[std::size_t(a)][0] * vw + u)].slot[0];
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
  // One group of four words, two holding row pair 0-1 and two row pair 2-3, in any order.
  if (p.groups == 1 && vw == 4 && L.rows == 4) {
    int found[2] = {};
    p.fold_pair_words = true;
    for (int u = 0; u < vw; ++u) {
      const SlotLanes& l = word_list[std::size_t(groups[0][0] * vw + u)].slot[0];
      const int pair = l.row_a / 2;
      p.fold_pair_words = l.row_a % 2 == 0 && l.row_b == l.row_a + 1 && found[pair] < 2;
      if (!p.fold_pair_words) break;
      const int n = found[pair]++;
      for (int from = 0; from < 2; ++from)
        for (int q = 0; q < 2; ++q) p.pair_word_gather[pair][4 * from + 2 * n + q] = 8 * from + 2 * u + q;
    }
  }
  // The register shortcuts sum a row's pair sums into one; split scale groups keep them apart.
  if (p.scale_groups > 1) p.fold_halves = p.fold_words = p.fold_pair_words = p.group_per_row = false;
  p.scales_contiguous = L.scale_format() == ScaleFormat::fp16;
  for (int r = 0; r < L.rows; ++r) p.scales_contiguous = p.scales_contiguous && p.scale_offset[r] == p.scale_offset[0] + 2 * r;
  p.tile_why_not = build_tiles(L, p);
  return p;
}

}  // namespace

const SlotVectorPlan& slot_vector_plan(const LayoutInfo& layout, int vector_bytes, PairPosition pos, int max_group) {
  static strategies::PerLayout<std::tuple<const LayoutInfo*, int, PairPosition, int>, SlotVectorPlan> cache;
  return cache.get({&layout, vector_bytes, pos, max_group},
                   [&] { return build_slot_plan(layout, vector_bytes, pos, max_group); });
}

const SlotVectorPlan& neon_slot_plan(const LayoutInfo& layout) {
  return slot_vector_plan(layout, kWordBytes, &pair_sum_position<kWordBytes>, kNeonGroupVectors);
}

std::string smmla_why_not(const LayoutInfo& layout) {
  const SlotVectorPlan& p = neon_slot_plan(layout);
  return p.why_not.empty() ? p.tile_why_not : p.why_not;
}

void expand_slot_activations(const SlotVectorPlan& p, const std::int8_t* q, std::uint8_t* out) {
  const int vw = p.vector_bytes / kWordBytes;
  const std::vector<WordPlan>& word_list = p.words->words;
  for (int c = 0; c < p.classes; ++c)
    for (int s = 0; s < 4; ++s)
      for (int u = 0; u < vw; ++u) {
        const SlotLanes& l = word_list[std::size_t(p.class_vector[c] * vw + u)].slot[s];
        std::uint8_t* dst = out + (c * 4 + s) * p.vector_bytes + u * kWordBytes;
        if (l.row_b < 0) {
          std::memcpy(dst, q + l.k0, 16);
        } else {  // dup8: the same 8 activations meet row a's and row b's 8 weights
          std::memcpy(dst, q + l.k0, 8);
          std::memcpy(dst + 8, q + l.k0, 8);
        }
      }
}

namespace {
// A plan is its layout's: activations expanded for another layout's words would be silently wrong.
void check_bound(const SlotVectorPlan& p, const LayoutInfo& L) {
  if (p.layout != &L) fail("slot-mask activations: the plan was made for another layout than '", L.name, "'");
}
}  // namespace

SlotActs prepare_slot_acts_into(const SlotVectorPlan& p, const LayoutInfo& L, const BlockQ8K* x, std::int64_t nb,
                                std::uint8_t* mem) {
  check_bound(p, L);
  return prepare_into(mem, nb, p.expanded_block_bytes,
                      [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                      [&](const std::int8_t* q, std::uint8_t* out) { expand_slot_activations(p, q, out); });
}

SlotActs prepare_slot_acts(const SlotVectorPlan& p, const LayoutInfo& L, const BlockQ8K* x, std::int64_t nb,
                           int slot) {
  check_bound(p, L);
  return prepare(nb, slot, p.expanded_block_bytes, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                 [&](const std::int8_t* q, std::uint8_t* out) { expand_slot_activations(p, q, out); });
}

SlotActs prepare_slot_acts_x4(const SlotVectorPlan& p, const LayoutInfo& L, const BlockQ8Kx4* x, int m,
                              std::int64_t nb, int slot) {
  check_bound(p, L);
  return prepare(nb, slot, p.expanded_block_bytes, [&](std::int64_t i, std::int8_t* q) { return fetch_x4(x, m, i, q); },
                 [&](const std::int8_t* q, std::uint8_t* out) { expand_slot_activations(p, q, out); });
}

}  // namespace ternlab
