// The permute strategy: one template for every valid layout, two-bit or base-3, whatever its word
// structure. It follows the layout's runtime PermutePlan (plan.hpp):
//
//   per token, once:  the activation under every byte of every item (0 under bytes without a
//                     weight) + BlockActs
//   per block:        for each accumulator, for each of its items: each op loads a vector at its
//                     block offset, shuffles bytes within 16-byte lanes (P::shuffle_bytes: pshufb,
//                     tbl) where the plan permutes, extracts one 2-bit field or base-3 digit as a
//                     code (PermuteProgram<P>, ops.hpp), ORs it into the item; then dot4 of the codes
//                     with the item's activations. Each int32 lane of an accumulator holds
//                     one row's products, brought to its row by the plan's lane_row (x86: fixed
//                     lane permutations or a half fold derived at plan time, rows kept in a vector;
//                     NEON: scalar adds); the +1 code offset leaves with the q8_K partial sums
//                     (S - ysum); one fma per row. Slot-run plans take 4 (AVX-512: 8) row groups
//                     a pass, so each activation vector is loaded once for all of them.
//
// The richer strategies (broadcast, slot-mask, unpack, base3) are preferred wherever a layout
// admits them; this is the fallback that keeps every layout off the scalar reference.
//
// Exactness: codes are 0..3 (2-bit) or 0..2 (trits), so the policies' dot4 cannot saturate
// (Prog::kAccItems bounds a narrow accumulator); a block's sum per row is at most 128 * 3 * 128
// and the fma association is gemv_reference's, so the floats are bit-identical.
//
// Include only from an ISA translation unit (after its #pragma GCC target).
#pragma once

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <string>

#include "common/error.hpp"
#include "kernels/kernel.hpp"
#include "kernels/strategies/permute/ops.hpp"
#include "kernels/strategies/permute/plan.hpp"
#include "kernels/strategies/block_scales.hpp"
#include "kernels/strategies/permute/strategy.hpp"
#include "layouts/matrix.hpp"

namespace ternlab::strategies {

template <class P>
struct Permute {
  using Prog = PermuteProgram<P>;        // codes and dots (ops.hpp)
  using B = decltype(P::load(nullptr));  // a vector of bytes
  static constexpr int kLanes = P::kBytes / 4;
  // A block read through a padded copy when the plan reaches outside the matrix's buffer.
  static constexpr int kPad = 2 * P::kBytes;

  static const PermutePlan& plan(const LayoutInfo& L) { return permute_plan(L, P::kBytes, Prog::kAccItems); }

  static const PermutePlan& bound(const void* plan, const PackedMatrix& w) {
    const auto& p = *static_cast<const PermutePlan*>(plan);
    if (p.layout != w.layout)
      fail("permute/", P::name, " kernel bound to layout '", p.layout->name, "' was handed layout '", w.layout->name, "'");
    return p;
  }
  template <int Mode>
  static const PermutePlan& checked_plan(const LayoutInfo& L) {
    const PermutePlan& p = plan(L);
    if (!p.why_not.empty()) fail("permute/", P::name, " kernel cannot run layout '", L.name, "': ", p.why_not);
    if (mode(p) != Mode)
      fail("permute/", P::name, " kernel of mode ", Mode, " was handed layout '", L.name, "' of mode ", mode(p));
    return p;
  }

  static B code(const PermutePlan& p, const PermutePlan::Op& op, const std::uint8_t* blk, bool two_bit) {
    B v = P::load(blk + op.offset);
    if (op.shuffle >= 0) v = P::shuffle_bytes(v, P::load(p.shuffles.data() + op.shuffle));
    return two_bit ? Prog::field(v, op.param) : Prog::trit(v, op.param);
  }

  // The bytes the plan reads of one block: the block itself, or a copy in `pad` (kMaxBlockBytes +
  // 2 kPad bytes) where the reads reach outside the matrix's buffer (zeros there), or where the
  // layout's bytes are Code::base3_banded (each copied as its Code::base3 byte, which P::trit reads).
  static const std::uint8_t* source(const PermutePlan& p, const std::uint8_t* blk, const std::uint8_t* base,
                                    std::ptrdiff_t size, std::uint8_t* pad) {
    const std::ptrdiff_t at = blk - base;
    const bool edge = at + p.read_lo < 0 || at + p.read_hi > size;  // the matrix's first or last block
    if (!edge && !p.banded) return blk;
    if (edge) std::memset(pad, 0, kMaxBlockBytes + 2 * kPad);
    const std::ptrdiff_t from = std::max<std::ptrdiff_t>(p.read_lo, -at);
    const std::ptrdiff_t to = std::min<std::ptrdiff_t>(p.read_hi, size - at);
    if (p.banded) {
      const std::uint8_t* to_base3 = banded_to_base3().data();
      for (std::ptrdiff_t i = from; i < to; ++i) pad[kPad + i] = to_base3[blk[i]];
    } else {
      std::memcpy(pad + kPad + from, blk + from, std::size_t(to - from));
    }
    return pad + kPad;
  }

  // Adds accumulator a's lanes to their rows.
  static void add_lanes(const typename Prog::Acc& acc, const std::int8_t* lane_row, std::int32_t* s) {
    alignas(64) std::int32_t lanes[kLanes];
    Prog::store(acc, lanes);
    for (int l = 0; l < kLanes; ++l) s[lane_row[l]] += lanes[l];
  }

  // block_dot for plans with slot_runs: each vector loaded and shuffled once for all its slots.
  template <Code C>
  static void block_dot_runs(const PermutePlan& p, const std::uint8_t* blk, const std::uint8_t* x, std::int32_t* s) {
    constexpr int kSlots = slots_per_byte(C);
    constexpr int kMul[5] = {1, 3, 9, 27, 81};  // 3^n brings digit n to the top trit
    const PermutePlan::Op* ops = p.ops.data();
    const int accs = int(p.acc_items.size()) - 1;
    for (int a = 0; a < accs; ++a) {
      typename Prog::Acc acc = Prog::zero();
      for (int i = p.acc_items[std::size_t(a)]; i < p.acc_items[std::size_t(a) + 1]; i += kSlots) {
        B v = P::load(blk + ops[i].offset);
        if (ops[i].shuffle >= 0) v = P::shuffle_bytes(v, P::load(p.shuffles.data() + ops[i].shuffle));
        const std::uint8_t* xi = x + std::size_t(i) * P::kBytes;
#pragma GCC unroll 5
        for (int sl = 0; sl < kSlots; ++sl) {
          const B c = C == Code::two_bit ? Prog::field(v, 2 * sl) : Prog::trit(v, kMul[sl]);
          acc = Prog::dot(acc, c, P::load(xi + sl * P::kBytes));
        }
      }
      add_lanes(acc, p.lane_row.data() + a * kLanes, s);
    }
  }

  // Sum of u * y of each row of one block into s[0 .. rows - 1] (s[rows]: lanes of no row).
  template <bool SingleOp>
  static void block_dot(const PermutePlan& p, const std::uint8_t* blk, const std::uint8_t* x, std::int32_t* s) {
    const bool two_bit = p.layout->code == Code::two_bit;
    const PermutePlan::Op* ops = p.ops.data();
    const int* item_ops = p.item_ops.data();
    const std::int8_t* lane_row = p.lane_row.data();
    const int accs = int(p.acc_items.size()) - 1;
    for (int a = 0; a < accs; ++a) {
      typename Prog::Acc acc = Prog::zero();
      for (int i = p.acc_items[std::size_t(a)]; i < p.acc_items[std::size_t(a) + 1]; ++i) {
        B c;
        if constexpr (SingleOp) {
          c = code(p, ops[i], blk, two_bit);
        } else {
          c = code(p, ops[item_ops[i]], blk, two_bit);
          for (int o = item_ops[i] + 1; o < item_ops[i + 1]; ++o) c = P::or_(c, code(p, ops[o], blk, two_bit));
        }
        acc = Prog::dot(acc, c, P::load(x + std::size_t(i) * P::kBytes));
      }
      add_lanes(acc, lane_row + a * kLanes, s);
    }
  }

  // Rows of groups [g0, g1) against one token's prepared activations; y[g * rows + r].
  // Mode: 0 slot runs of 2-bit fields, 1 slot runs of base-3 digits, 2 one op an item, 3 several.
  template <int Mode>
  static void rows_of(const PermutePlan& p, const PackedMatrix& w, const SlotActs& a, float* y, std::int64_t g0,
                      std::int64_t g1) {
    const std::int64_t nb = w.blocks_per_row();
    const int R = p.rows;
    const std::uint8_t* base = w.bytes.data();
    const std::ptrdiff_t size = std::ptrdiff_t(w.bytes.size());
    alignas(64) std::uint8_t pad[kMaxBlockBytes + 2 * kPad];
    for (std::int64_t g = g0; g < g1; ++g) {
      float acc[kMaxPermuteRows] = {};
      const std::uint8_t* blk = w.block(g, 0);
      const std::uint8_t* xe = a.expanded;
      for (std::int64_t i = 0; i < nb; ++i, blk += p.block_bytes, xe += p.expanded_block_bytes) {
        prefetch_ahead(blk, p.block_bytes);
        const std::uint8_t* src = source(p, blk, base, size, pad);
        std::int32_t s[kMaxPermuteRows + 1] = {};
        if constexpr (Mode == 0)
          block_dot_runs<Code::two_bit>(p, src, xe, s);
        else if constexpr (Mode == 1)
          block_dot_runs<Code::base3>(p, src, xe, s);
        else
          block_dot<Mode == 2>(p, src, xe, s);
        const BlockActs b = a.blocks[i];
        for (int r = 0; r < R; ++r)
          acc[r] = scalar_fma<P>(float(s[r] - b.ysum), block_scale<P>(p.layout->scale_format(), blk + p.scale_offset[r]) * b.d, acc[r]);
      }
      for (int r = 0; r < R; ++r) y[g * R + r] = acc[r];
    }
  }

  // --- the vector epilogue (policies with 8-lane row vectors: Rows8) ---------------------------
  // Rows stay in a vector from the accumulators to the store: each accumulator's pieces reach the
  // row lanes by the plan's fixed steps, then one fma per row lane and block. NG row groups go
  // through a block together, so each activation vector is loaded once for all of them.
  static constexpr bool kRowVectors = requires { typename P::RowI; };
  // Row groups per pass: each adds an accumulator and a code vector to the loop's registers
  // (16 on AVX2, 32 on AVX-512, where eight groups share each activation load and the block loop).
  static constexpr int kGroups = P::kBytes >= 64 ? 8 : 4;

  // The codes of op `op` for each of NG blocks.
  template <int NG>
  static void codes(const PermutePlan& p, const PermutePlan::Op& op, const std::uint8_t* const* blk, bool two_bit,
                    B* c) {
    if (op.shuffle >= 0) {
      const B idx = P::load(p.shuffles.data() + op.shuffle);
      for (int q = 0; q < NG; ++q) c[q] = P::shuffle_bytes(P::load(blk[q] + op.offset), idx);
    } else {
      for (int q = 0; q < NG; ++q) c[q] = P::load(blk[q] + op.offset);
    }
    for (int q = 0; q < NG; ++q) c[q] = two_bit ? Prog::field(c[q], op.param) : Prog::trit(c[q], op.param);
  }

  // Adds accumulator a's lanes, for each of NG groups, to their row lanes in rows[q].
  template <class RowI, int NG>
  static void reduce_acc(const PermutePlan& p, int a, const typename Prog::Acc* acc, RowI* rows) {
    constexpr int kPieces = P::kBytes / 32;
    const int* steps = p.piece_steps.data() + a * PermutePlan::kMaxRowPieces;
    const bool fold = p.acc_fold[std::size_t(a)] != 0;
    for (int q = 0; q < NG; ++q) {
      RowI piece[kPieces];
      Prog::pieces(acc[q], piece);
      if (p.half_fold) {  // the halves are folded once the block's pieces are summed
        for (int j = 0; j < kPieces; ++j) rows[q] = P::rowi_add(rows[q], piece[j]);
        continue;
      }
      if (fold)
        for (int j = 1; j < kPieces; ++j) piece[0] = P::rowi_add(piece[0], piece[j]);
      for (int j = 0; j < (fold ? 1 : kPieces); ++j)
        for (int t = steps[j]; t < steps[j + 1]; ++t)
          rows[q] = P::rowi_add(rows[q], P::row_step(piece[j], p.row_steps[std::size_t(t)]));
    }
  }

  // The int32 row sums of one block of each of NG groups (blk[q]): rows[q] lane r = row r.
  template <int Mode, int NG, class RowI>
  static void block_rows(const PermutePlan& p, const std::uint8_t* const* blk, const std::uint8_t* x, RowI* rows) {
    constexpr Code C = Mode == 1 ? Code::base3 : Code::two_bit;
    constexpr int kSlots = slots_per_byte(C);
    constexpr int kMul[5] = {1, 3, 9, 27, 81};  // 3^n brings digit n to the top trit
    const PermutePlan::Op* ops = p.ops.data();
    const int accs = int(p.acc_items.size()) - 1;
    for (int q = 0; q < NG; ++q) rows[q] = P::rowi_zero();
    for (int a = 0; a < accs; ++a) {
      typename Prog::Acc acc[NG];
      for (int q = 0; q < NG; ++q) acc[q] = Prog::zero();
      const int end = p.acc_items[std::size_t(a) + 1];
      if constexpr (Mode <= 1) {  // slot runs: one load and shuffle a vector, all its slots
        for (int i = p.acc_items[std::size_t(a)]; i < end; i += kSlots) {
          B v[NG];
          if (ops[i].shuffle >= 0) {
            const B idx = P::load(p.shuffles.data() + ops[i].shuffle);
            for (int q = 0; q < NG; ++q) v[q] = P::shuffle_bytes(P::load(blk[q] + ops[i].offset), idx);
          } else {
            for (int q = 0; q < NG; ++q) v[q] = P::load(blk[q] + ops[i].offset);
          }
          const std::uint8_t* xi = x + std::size_t(i) * P::kBytes;
#pragma GCC unroll 5
          for (int sl = 0; sl < kSlots; ++sl) {
            const B y = P::load(xi + sl * P::kBytes);
            for (int q = 0; q < NG; ++q)
              acc[q] = Prog::dot(acc[q], C == Code::two_bit ? Prog::field(v[q], 2 * sl) : Prog::trit(v[q], kMul[sl]), y);
          }
        }
      } else {
        const bool two_bit = p.layout->code == Code::two_bit;
        const int* item_ops = p.item_ops.data();
        for (int i = p.acc_items[std::size_t(a)]; i < end; ++i) {
          B c[NG];
          codes<NG>(p, ops[item_ops[i]], blk, two_bit, c);
          if constexpr (Mode == 3)
            for (int o = item_ops[i] + 1; o < item_ops[i + 1]; ++o) {
              B more[NG];
              codes<NG>(p, ops[o], blk, two_bit, more);
              for (int q = 0; q < NG; ++q) c[q] = P::or_(c[q], more[q]);
            }
          const B y = P::load(x + std::size_t(i) * P::kBytes);
          for (int q = 0; q < NG; ++q) acc[q] = Prog::dot(acc[q], c[q], y);
        }
      }
      reduce_acc<RowI, NG>(p, a, acc, rows);
    }
  }

  template <class RowF>
  static RowF scales_of(const PermutePlan& p, const std::uint8_t* blk) {
    if (p.scale_read == 16) return P::row_scales(blk + p.scale_offset[0]);
    if (p.scale_read == 8) return P::row_scales4(blk + p.scale_offset[0]);
    alignas(32) float d[8] = {};
    const ScaleFormat f = p.layout->scale_format();
    for (int r = 0; r < p.rows; ++r) d[r] = block_scale<P>(f, blk + p.scale_offset[r]);
    return P::row_load(d);
  }

  // The scales of two groups' rows (<= 4 each) in lanes 0-3 and 4-7.
  template <class RowF>
  static RowF pair_scales(const PermutePlan& p, const std::uint8_t* b0, const std::uint8_t* b1) {
    if (p.scale_read != 0) return P::scales_pair(b0 + p.scale_offset[0], b1 + p.scale_offset[0]);
    alignas(32) float d[8] = {};
    const ScaleFormat f = p.layout->scale_format();
    for (int r = 0; r < p.rows; ++r) d[r] = block_scale<P>(f, b0 + p.scale_offset[r]), d[4 + r] = block_scale<P>(f, b1 + p.scale_offset[r]);
    return P::row_load(d);
  }

  // Row groups [g, g + NG) against one token's prepared activations, through the vector epilogue.
  template <int Mode, int NG>
  static void rows_pass(const PermutePlan& p, const PackedMatrix& w, const SlotActs& a, float* y, std::int64_t g) {
    using RowI = typename P::RowI;
    using RowF = typename P::RowF;
    const std::int64_t nb = w.blocks_per_row();
    const std::uint8_t* base = w.bytes.data();
    const std::ptrdiff_t size = std::ptrdiff_t(w.bytes.size());
    const bool copies = p.banded || p.read_lo < 0 || p.read_hi > p.block_bytes;
    alignas(64) std::uint8_t pad[NG][kMaxBlockBytes + 2 * kPad];
    RowF acc[NG];
    const std::uint8_t* blk[NG];
    for (int q = 0; q < NG; ++q) acc[q] = P::row_zero(), blk[q] = w.block(g + q, 0);
    const std::uint8_t* xe = a.expanded;
    for (std::int64_t i = 0; i < nb; ++i, xe += p.expanded_block_bytes) {
      const std::uint8_t* src[NG];
      for (int q = 0; q < NG; ++q) {
        prefetch_ahead(blk[q], p.block_bytes);
        src[q] = copies ? source(p, blk[q], base, size, pad[q]) : blk[q];
      }
      RowI s[NG];
      block_rows<Mode, NG>(p, src, xe, s);
      const BlockActs b = a.blocks[i];
      if (p.half_fold) {  // two groups a vector: lanes 0-3 group q, 4-7 group q + 1
        for (int q = 0; q < NG; q += 2) {
          const int u = q + 1 < NG ? q + 1 : q;
          acc[q] = P::template row_fma<0>(P::fold_pair(s[q], s[u]), b.ysum, pair_scales<RowF>(p, blk[q], blk[u]), b.d,
                                          acc[q]);
        }
      } else {
        for (int q = 0; q < NG; ++q) acc[q] = P::template row_fma<0>(s[q], b.ysum, scales_of<RowF>(p, blk[q]), b.d, acc[q]);
      }
      for (int q = 0; q < NG; ++q) blk[q] += p.block_bytes;
    }
    if (p.half_fold) {
      for (int q = 0; q < NG; q += 2)
        P::pair_store(y + (g + q) * p.rows, y + (g + (q + 1 < NG ? q + 1 : q)) * p.rows, acc[q], p.rows);
    } else {
      for (int q = 0; q < NG; ++q) P::row_store(y + (g + q) * p.rows, acc[q], p.rows);
    }
  }

  template <int Mode>
  static void vector_rows_of(const PermutePlan& p, const PackedMatrix& w, const SlotActs& a, float* y,
                             std::int64_t g0, std::int64_t g1) {
    constexpr int NG = Mode <= 1 ? kGroups : 1;  // the gathered modes' op lists stay one group at a time
    std::int64_t g = g0;
    for (; g + NG <= g1; g += NG) rows_pass<Mode, NG>(p, w, a, y, g);
    if constexpr (NG > 1)
      for (; g < g1; ++g) rows_pass<Mode, 1>(p, w, a, y, g);
  }

  // The mode of plan p, as rows_of takes it.
  static int mode(const PermutePlan& p) {
    if (p.slot_runs) return p.layout->code == Code::two_bit ? 0 : 1;
    return p.single_op ? 2 : 3;
  }

  // The gemv in two phases (GemvPhases): the prepared buffer holds every block's activations.
  static std::size_t gemv_acts_bytes(const void* plan, const PackedMatrix& w) {
    return prepared_acts_bytes(w.blocks_per_row(), bound(plan, w).expanded_block_bytes);
  }
  static void gemv_prepare(const void* plan, const PackedMatrix& w, const BlockQ8K* x, std::uint8_t* mem) {
    prepare_permute_acts_into(bound(plan, w), x, w.blocks_per_row(), mem);
  }
  // One rows function per mode, bound when the kernel is chosen: no per-call switch, and the
  // census reaches only the loop the plan runs.
  template <int Mode>
  static void gemv_rows(const void* plan, const PackedMatrix& w, const std::uint8_t* mem, float* y, std::int64_t g0,
                        std::int64_t g1) {
    const PermutePlan& p = bound(plan, w);
    const SlotActs a = view_prepared_acts(mem, w.blocks_per_row());
    if constexpr (kRowVectors)
      if (p.row_vectors) return vector_rows_of<Mode>(p, w, a, y, g0, g1);
    rows_of<Mode>(p, w, a, y, g0, g1);
  }
  template <int Mode>
  static void gemv(const PackedMatrix& w, const BlockQ8K* x, float* y, std::int64_t g0, std::int64_t g1) {
    const PermutePlan& p = checked_plan<Mode>(*w.layout);
    std::uint8_t* mem = kernel_scratch(gemv_acts_bytes(&p, w), 0);
    gemv_prepare(&p, w, x, mem);
    gemv_rows<Mode>(&p, w, mem, y, g0, g1);
  }
  // One token at a time from the batch's plain rows: the fallback's gemm is its gemv per token.
  template <int Mode>
  static void gemm(const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                   std::int64_t g1) {
    const PermutePlan& p = checked_plan<Mode>(*w.layout);
    std::uint8_t* mem = kernel_scratch(gemv_acts_bytes(&p, w), 0);
    for (std::int64_t t = 0; t < x.tokens; ++t) {
      gemv_prepare(&p, w, x.row(t), mem);
      gemv_rows<Mode>(&p, w, mem, y + t * ldy, g0, g1);
    }
  }

  template <int Mode>
  static KernelFns fns_of(const PermutePlan& p) {
    return {&gemv<Mode>, &gemm<Mode>, {&p, &gemv_acts_bytes, &gemv_prepare, &gemv_rows<Mode>}};
  }
  static KernelFns fns(const PermutePlan& p) {
    switch (mode(p)) {
      case 0: return fns_of<0>(p);
      case 1: return fns_of<1>(p);
      case 2: return fns_of<2>(p);
      default: return fns_of<3>(p);
    }
  }
};

// The permute kernels of layout L on policy P, or the plan's reason when there are none.
template <class P>
std::string pick_permute(const LayoutInfo& L, KernelFns& k) {
  const PermutePlan& p = Permute<P>::plan(L);
  if (p.why_not.empty()) k = Permute<P>::fns(p);
  return p.why_not;
}

template <class T>
void PermuteStrategy::add(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  using P = typename T::Policy;
  if constexpr (!PermuteOps<P>) {
    if (gaps) gaps->push_back({id, T::kIsa, cat(P::name, "'s policy lacks permute's operations (PermuteOps)")});
  } else {
    KernelFns k;
    detail::add_or_note(out, gaps, id, T::kIsa, pick_permute<P>(L, k), k);
  }
}

}  // namespace ternlab::strategies
