// The permute plan builder (see PermutePlan in plan.hpp): derived from the layout's placement
// table alone, so it serves every valid layout, two-bit or base-3, whatever its word structure.
#include <algorithm>
#include <map>
#include <tuple>
#include <vector>

#include "common/aligned.hpp"
#include "common/error.hpp"
#include "kernels/strategies/per_layout.hpp"
#include "kernels/strategies/permute/plan.hpp"
#include "layouts/matrix.hpp"

namespace ternlab {

namespace {

constexpr std::uint8_t kZeroByte = 0x80;  // a shuffle index that zeroes its byte (pshufb, tbl)

// One item under construction: its ops, and per byte its shuffle index and activation; per 4-byte
// lane its row (-1: none yet).
struct ItemDraft {
  std::vector<PermutePlan::Op> ops;
  std::vector<std::vector<std::uint8_t>> op_shuffles;  // per op, empty: none
  std::vector<std::int16_t> act;
  std::vector<int> lane_row;
};

int op_param(Code code, int slot) {
  if (code == Code::two_bit) return 2 * slot;
  int m = 1;
  for (int n = 0; n < slot; ++n) m = m * 3 % 256;
  return m;
}

// In place: item (v, s) is slot s of the v-th vector from the payload's first byte. Each 16-byte
// lane keeps its bytes where its 4-byte groups are single-row in this slot; otherwise its codes
// are sorted into groups by row (possible when the rows' counts, rounded up to 4, fit 16 bytes).
bool draft_in_place(const LayoutInfo& L, const BlockInverse& inv, int vb, std::vector<ItemDraft>& items, int& shuffled) {
  const int slots = slots_per_byte(L.code);
  const int begin = L.facts.payload_begin, vectors = (L.facts.payload_bytes + vb - 1) / vb;
  for (int v = 0; v < vectors; ++v)
    for (int s = 0; s < slots; ++s) {
      ItemDraft d;
      d.act.assign(std::size_t(vb), -1);
      d.lane_row.assign(std::size_t(vb / 4), -1);
      std::vector<std::uint8_t> idx(static_cast<std::size_t>(vb));
      bool any = false, permuted = false;
      for (int u = 0; u < vb / 16; ++u) {
        const int base = begin + v * vb + 16 * u;
        RowK src[16];
        for (int e = 0; e < 16; ++e) src[e] = inv(base + e, s);
        bool identity = true;
        for (int g = 0; g < 4; ++g)
          for (int e = 4 * g; e < 4 * g + 4; ++e)
            for (int f = 4 * g; f < e; ++f)
              identity = identity && (src[e].row < 0 || src[f].row < 0 || src[e].row == src[f].row);
        if (identity) {
          for (int e = 0; e < 16; ++e) {
            idx[std::size_t(16 * u + e)] = std::uint8_t(e);
            if (src[e].row < 0) continue;
            any = true;
            d.act[std::size_t(16 * u + e)] = std::int16_t(src[e].k);
            d.lane_row[std::size_t(4 * u + e / 4)] = src[e].row;
          }
          continue;
        }
        // Sort by row: each row's codes fill whole 4-byte groups from the next free one.
        std::map<int, std::vector<int>> by_row;
        for (int e = 0; e < 16; ++e)
          if (src[e].row >= 0) by_row[src[e].row].push_back(e);
        int group = 0;
        for (const auto& [row, es] : by_row) group += (int(es.size()) + 3) / 4;
        if (group > 4) return false;
        for (int e = 0; e < 16; ++e) idx[std::size_t(16 * u + e)] = kZeroByte;
        group = 0;
        for (const auto& [row, es] : by_row) {
          for (std::size_t j = 0; j < es.size(); ++j) {
            const int to = 4 * group + int(j % 4) + 4 * int(j / 4);
            idx[std::size_t(16 * u + to)] = std::uint8_t(es[j]);
            d.act[std::size_t(16 * u + to)] = std::int16_t(src[es[j]].k);
            d.lane_row[std::size_t(4 * u + to / 4)] = row;
          }
          group += (int(es.size()) + 3) / 4;
        }
        any = true;
        permuted = true;
        ++shuffled;
      }
      if (!any) continue;
      d.ops.push_back({begin + v * vb, op_param(L.code, s), -1});
      d.op_shuffles.push_back(permuted ? idx : std::vector<std::uint8_t>{});
      items.push_back(std::move(d));
    }
  return true;
}

// Gather: item o holds the 16-byte chunks o * (vb / 16) .. of the block's (row, k) order (chunk c =
// weights 16 (c % (k / 16)) .. + 15 of row c / (k / 16)). Each op takes, for every lane, the
// 16-byte window of the block starting at a multiple of 16 (offset + 16 lane) and one slot; ops are
// added until every weight of the item is covered.
void draft_gather(const LayoutInfo& L, int vb, std::vector<ItemDraft>& items) {
  const int per_row = L.k / 16, chunks = L.rows * per_row, lanes16 = vb / 16;
  for (int o = 0; o * lanes16 < chunks; ++o) {
    ItemDraft d;
    d.act.assign(std::size_t(vb), -1);
    d.lane_row.assign(std::size_t(vb / 4), -1);
    std::vector<Loc> src(static_cast<std::size_t>(vb));
    std::vector<bool> done(std::size_t(vb), true);
    for (int e = 0; e < vb; ++e) {
      const int c = o * lanes16 + e / 16;
      if (c >= chunks) continue;
      const int r = c / per_row, k = 16 * (c % per_row) + e % 16;
      src[std::size_t(e)] = L.placement[std::size_t(r * L.k + k)];
      done[std::size_t(e)] = false;
      d.act[std::size_t(e)] = std::int16_t(k);
      d.lane_row[std::size_t(e / 4)] = r;
    }
    for (int e = 0; e < vb; ++e) {
      if (done[std::size_t(e)]) continue;
      const Loc first = src[std::size_t(e)];
      const int offset = first.byte / 16 * 16 - 16 * (e / 16);
      std::vector<std::uint8_t> idx(std::size_t(vb), kZeroByte);
      for (int f = e; f < vb; ++f) {
        const Loc l = src[std::size_t(f)];
        const int window = offset + 16 * (f / 16);
        if (done[std::size_t(f)] || l.slot != first.slot || l.byte < window || l.byte >= window + 16) continue;
        idx[std::size_t(f)] = std::uint8_t(l.byte - window);
        done[std::size_t(f)] = true;
      }
      d.ops.push_back({offset, op_param(L.code, first.slot), -1});
      d.op_shuffles.push_back(std::move(idx));
    }
    items.push_back(std::move(d));
  }
}

// The offset of `idx` in the plan's shuffle table, appended when new (plans hold a few).
int shuffle_at(std::vector<std::uint8_t>& table, const std::vector<std::uint8_t>& idx) {
  const std::size_t n = idx.size();
  for (std::size_t at = 0; at + n <= table.size(); at += n)
    if (std::equal(idx.begin(), idx.end(), table.begin() + std::ptrdiff_t(at))) return int(at);
  table.insert(table.end(), idx.begin(), idx.end());
  return int(table.size() - n);
}

// The epilogue steps (PermutePlan::RowStep) of one 8-lane piece whose lane l feeds row lanes[l]
// (>= rows: none, a lane that holds 0).
void add_row_steps(const std::int8_t* lanes, int rows, std::vector<PermutePlan::RowStep>& out) {
  std::vector<int> of_row[8];
  int zero = -1, steps = 0;
  for (int l = 0; l < 8; ++l) {
    if (lanes[l] < rows)
      of_row[lanes[l]].push_back(l);
    else if (zero < 0)
      zero = l;
  }
  for (int r = 0; r < rows; ++r) steps = std::max(steps, int(of_row[r].size()));
  for (int e = 0; e < steps; ++e) {
    PermutePlan::RowStep st;
    for (int j = 0; j < 8; ++j) {
      st.mask[j] = -1;
      st.idx[j] = j;  // lanes past the rows are never stored
      if (j >= rows) continue;
      if (e < int(of_row[j].size()))
        st.idx[j] = of_row[j][std::size_t(e)];
      else if (lanes[j] < rows && zero >= 0)
        st.idx[j] = zero;
      else if (lanes[j] < rows)
        st.mask[j] = 0, st.masked = true;
      st.permute = st.permute || st.idx[j] != j;
    }
    out.push_back(st);
  }
}

// The vector epilogue of plan p (PermutePlan::row_vectors and what follows it).
void derive_row_epilogue(PermutePlan& p, const LayoutInfo& L) {
  const int vb = p.vector_bytes, pieces = vb / 32, accs = int(p.acc_items.size()) - 1, R = p.rows;
  p.row_vectors = R <= 8 && (vb == 32 || vb == 64);
  if (!p.row_vectors) return;
  p.piece_steps.push_back(0);
  for (int a = 0; a < accs; ++a) {
    const std::int8_t* lanes = p.lane_row.data() + std::size_t(a) * std::size_t(vb / 4);
    // Summing the pieces first is exact when each lane position feeds at most one row across them.
    std::int8_t merged[8];
    bool fold = pieces > 1;
    for (int l = 0; l < 8; ++l) {
      merged[l] = std::int8_t(R);
      for (int j = 0; j < pieces; ++j) {
        const std::int8_t r = lanes[8 * j + l];
        if (r >= R) continue;
        fold = fold && (merged[l] >= R || merged[l] == r);
        merged[l] = r;
      }
    }
    p.acc_fold.push_back(fold ? 1 : 0);
    for (int j = 0; j < PermutePlan::kMaxRowPieces; ++j) {
      if (j < pieces && (!fold || j == 0)) add_row_steps(fold ? merged : lanes + 8 * j, R, p.row_steps);
      p.piece_steps.push_back(int(p.row_steps.size()));
    }
  }
  p.half_fold = R <= 4;
  for (std::size_t a = 0; p.half_fold && a < p.lane_row.size(); a += 8)
    for (int l = 0; l < 4; ++l) {
      const int lo = p.lane_row[a + std::size_t(l)], hi = p.lane_row[a + std::size_t(l) + 4];
      p.half_fold = p.half_fold && (lo >= R || lo == l) && (hi >= R || hi == l);
    }
  // One vector load converts consecutive fp16 scales; other formats go through the decoder per row.
  bool consecutive = L.scale_format() == ScaleFormat::fp16;
  for (int r = 0; r < R; ++r) consecutive = consecutive && L.scale_offset(r) == L.scale_offset(0) + 2 * r;
  if (consecutive && L.scale_offset(0) + 16 <= p.block_bytes)
    p.scale_read = 16;
  else if (consecutive && R <= 4 && L.scale_offset(0) + 8 <= p.block_bytes)
    p.scale_read = 8;
}

PermutePlan build_permute_plan(const LayoutInfo& L, int vb, int max_acc_items) {
  PermutePlan p;
  p.layout = &L;
  p.vector_bytes = vb;
  p.rows = L.rows;
  p.block_bytes = L.block_bytes();
  if (!L.block_scales_128()) {
    p.why_not = L.block_scales_why_not();
    return p;
  }
  if (L.rows > kMaxPermuteRows) {
    p.why_not = cat(L.rows, " rows per block (at most ", kMaxPermuteRows, ")");
    return p;
  }
  for (int r = 0; r < L.rows; ++r) p.scale_offset[r] = L.scale_offset(r);

  std::vector<ItemDraft> items;
  p.in_place = draft_in_place(L, BlockInverse(L), vb, items, p.shuffled_lanes);
  if (!p.in_place) {
    items.clear();
    p.shuffled_lanes = 0;
    draft_gather(L, vb, items);
  }

  // Items with the same lane-to-row map share an accumulator (split at max_acc_items).
  std::vector<std::vector<int>> accs;
  {
    std::map<std::vector<int>, std::vector<int>> by_rows;
    std::vector<std::vector<int>> order;
    for (int i = 0; i < int(items.size()); ++i) {
      auto [it, fresh] = by_rows.try_emplace(items[std::size_t(i)].lane_row);
      if (fresh) order.push_back(items[std::size_t(i)].lane_row);
      it->second.push_back(i);
    }
    for (const auto& rows : order) {
      const std::vector<int>& members = by_rows[rows];
      for (std::size_t j = 0; j < members.size(); j += std::size_t(max_acc_items))
        accs.emplace_back(members.begin() + std::ptrdiff_t(j),
                          members.begin() + std::ptrdiff_t(std::min(members.size(), j + std::size_t(max_acc_items))));
    }
  }

  p.read_lo = 0;
  p.read_hi = p.block_bytes;
  p.banded = L.code == Code::base3_banded;
  p.single_op = true;
  p.acc_items.push_back(0);
  for (const std::vector<int>& acc : accs) {
    for (int i : acc) {
      const ItemDraft& d = items[std::size_t(i)];
      p.item_ops.push_back(int(p.ops.size()));
      p.single_op = p.single_op && d.ops.size() == 1;
      for (std::size_t j = 0; j < d.ops.size(); ++j) {
        PermutePlan::Op op = d.ops[j];
        if (!d.op_shuffles[j].empty()) op.shuffle = shuffle_at(p.shuffles, d.op_shuffles[j]);
        p.read_lo = std::min(p.read_lo, op.offset);
        p.read_hi = std::max(p.read_hi, op.offset + vb);
        p.ops.push_back(op);
      }
      p.act_k.insert(p.act_k.end(), d.act.begin(), d.act.end());
    }
    for (int r : items[std::size_t(acc.front())].lane_row) p.lane_row.push_back(std::int8_t(r < 0 ? L.rows : r));
    p.acc_items.push_back(p.acc_items.back() + int(acc.size()));
  }
  p.item_ops.push_back(int(p.ops.size()));
  p.expanded_block_bytes = int(p.act_k.size());

  const int slots = slots_per_byte(L.code);
  p.slot_runs = p.in_place && p.single_op;
  for (std::size_t a = 0; p.slot_runs && a + 1 < p.acc_items.size(); ++a) {
    const int b = p.acc_items[a], e = p.acc_items[a + 1];
    p.slot_runs = (e - b) % slots == 0;
    for (int i = b; p.slot_runs && i < e; ++i) {
      const PermutePlan::Op& first = p.ops[std::size_t(b + (i - b) / slots * slots)];
      const PermutePlan::Op& op = p.ops[std::size_t(i)];
      p.slot_runs = op.offset == first.offset && op.shuffle == first.shuffle && op.param == op_param(L.code, (i - b) % slots);
    }
  }
  derive_row_epilogue(p, L);
  return p;
}

}  // namespace

std::string PermutePlan::describe() const {
  if (!why_not.empty()) return why_not;
  const int items = int(item_ops.size()) - 1, accs = int(acc_items.size()) - 1;
  return cat(in_place ? "in place" : "gathered in (row, k) order", slot_runs ? " (one load a vector's slots)" : "", ", ",
             items, " items of ", vector_bytes,
             " bytes, ", ops.size(), " ops, ", accs, " accumulators",
             in_place ? cat(", ", shuffled_lanes, " permuted 16-byte lanes") : std::string());
}

const PermutePlan& permute_plan(const LayoutInfo& layout, int vector_bytes, int max_acc_items) {
  static strategies::PerLayout<std::tuple<const LayoutInfo*, int, int>, PermutePlan> cache;
  return cache.get({&layout, vector_bytes, max_acc_items},
                   [&] { return build_permute_plan(layout, vector_bytes, max_acc_items); });
}

SlotActs prepare_permute_acts_into(const PermutePlan& plan, const BlockQ8K* x, std::int64_t nb, std::uint8_t* mem) {
  const SlotActs view = view_prepared_acts(mem, nb);
  auto* acts = const_cast<BlockActs*>(view.blocks);
  auto* out = const_cast<std::uint8_t*>(view.expanded);
  const std::size_t e = std::size_t(plan.expanded_block_bytes);
  for (std::int64_t i = 0; i < nb; ++i, out += e) {
    const BlockQ8K& b = x[i / 2];
    const std::int8_t* q = b.qs + 128 * (i % 2);
    acts[i] = block_acts(b, int(i % 2));
    for (std::size_t j = 0; j < e; ++j) {
      const int k = plan.act_k[j];
      out[j] = k < 0 ? 0 : std::uint8_t(q[k]);
    }
  }
  return view;
}

}  // namespace ternlab
