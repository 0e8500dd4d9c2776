// The one source of the record matvec kernels, y = W x for a matrix in any record layout, over a
// float-lane policy P (kernels/isa/f32_lanes.hpp: scalar, AVX2, AVX-512, NEON).
//
// The value select is a table lookup (spec §5.7): per call, every (gain, class) pair's ≤ 8 values
// times its gain centroid are premultiplied into one resident table, so a block's table is one load
// at its 10-bit header. Each lane's index (level, block within the step, sign) is gathered from 16
// record bytes by a byte shuffle, a per-lane shift and weighted byte sums (P::gather_index), at
// positions derived from the declaration: straight from the record where the sign mask and level
// planes share one bit offset mod 8 (Planes14, Planes12x); otherwise from the four words a reader
// derived from the declaration yields (sign and three level-index planes: Slot32's one-hot masks and
// Golay70's codeword, picks and computed signs fold into planes there, spec §5.2, §5.5 hoisted).
// The sign bit flips lanes; one fma per lane into one accumulator per vector of the block. A policy
// whose lookup spans kTableBlocks tables does that many blocks per step (AVX-512: 2 blocks = 3 x 16
// lanes).
// Per row: row scale x (sum of the accumulators), then the exception blocks (exact Planes14
// records; their main-stream records are origin records and add nothing), then the f32 tail.
//
// Include after the policy's target pragma. Every function is a member of a template on P, so
// each ISA unit's code stays its own symbol.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <cstring>

#include "lattice/golay.hpp"
#include "lattice/records.hpp"

namespace ternlab::lattice {

template <class P>
struct RecordKernel {
  struct Decoded {
    std::uint32_t id = 0, gain = 0, sign = 0, p0 = 0, p1 = 0, p2 = 0;
  };

  // n ≤ 24 bits at a declared bit offset: one 8-byte load at its byte (streams are padded).
  template <int bit, int n>
  static std::uint32_t field(const std::uint8_t* rec) {
    static_assert(bit % 8 + n <= 64);
    std::uint64_t w;
    std::memcpy(&w, rec + bit / 8, 8);
    return std::uint32_t((w >> (bit % 8)) & ((std::uint64_t{1} << n) - 1));
  }
  template <const records::RecordSpec& S, records::FieldKind K, int level = 0>
  static std::uint32_t get(const std::uint8_t* rec) {
    constexpr records::Field f = records::field(S, K, level);
    return field<f.bit, f.bits>(rec);
  }

  // The resident tables, fetched once per call.
  struct Tables {
    const ClassValues* golay = golay70_table().data();
    const std::uint32_t* words = golay_words().data();
    const std::uint8_t* levels = class_levels().data();
  };

  template <const records::RecordSpec& S>
  static Decoded read(const std::uint8_t* rec, const Tables& tb) {
    using records::FieldKind;
    Decoded d;
    d.id = get<S, FieldKind::class_id>(rec);
    d.gain = get<S, FieldKind::gain>(rec);
    if constexpr (records::has_field(S, FieldKind::golay_rank)) {
      const ClassValues& t = tb.golay[d.id];
      const std::uint32_t c = tb.words[get<S, FieldKind::golay_rank>(rec)];
      const std::uint32_t a = get<S, FieldKind::golay_pick>(rec), b = get<S, FieldKind::golay_sign>(rec);
      const std::uint32_t f0 = 0u - (t.flags & 1), f1 = 0u - (t.flags >> 1 & 1), f2 = 0u - (t.flags >> 2 & 1),
                          f3 = 0u - (t.flags >> 3 & 1);
      const std::uint32_t lo = (a & f1) | (~a & f0), hi = (a & f3) | (~a & f2);
      const std::uint32_t odd = 0u - t.odd;
      const std::uint32_t fw = ((b & hi) | (~b & lo)) & odd;
      d.p0 = a;
      d.p1 = (b & odd) | (c & ~odd);
      d.sign = ((c ^ fw) & odd) | (b & ~odd);
      d.sign &= 0xFFFFFF;
    } else if constexpr (records::has_field(S, FieldKind::level_mask, 1)) {
      // Masks beyond the class's levels are not in the record: forced to zero from L.
      const std::uint32_t levels = tb.levels[d.id];
      const auto keep = [&](std::uint32_t k) { return 0u - std::uint32_t(levels > k); };
      const std::uint32_t m1 = get<S, FieldKind::level_mask, 1>(rec) & keep(1);
      const std::uint32_t m2 = get<S, FieldKind::level_mask, 2>(rec) & keep(2);
      const std::uint32_t m3 = get<S, FieldKind::level_mask, 3>(rec) & keep(3);
      const std::uint32_t m4 = get<S, FieldKind::level_mask, 4>(rec) & keep(4);
      d.sign = get<S, FieldKind::sign_mask>(rec);
      d.p0 = m1 | m3, d.p1 = m2 | m3, d.p2 = m4;
    } else {
      d.sign = get<S, FieldKind::sign_mask>(rec);
      d.p0 = get<S, FieldKind::level_plane, 0>(rec);
      d.p1 = get<S, FieldKind::level_plane, 1>(rec);
      if constexpr (records::has_field(S, FieldKind::level_plane, 2)) d.p2 = get<S, FieldKind::level_plane, 2>(rec);
    }
    return d;
  }

  static constexpr int G = P::kTableBlocks;
  static constexpr int W = P::kLanes;
  static constexpr int kVecs = 24 * G / W;
  static_assert(24 * G % W == 0, "a step is whole vectors");
  static_assert(G <= 2, "the block within a step is one index bit (bit 3)");
  // A plain array: std::array would drop the vector types' alignment attributes.
  struct Acc {
    typename P::F v[kVecs];
    void clear() {
      for (auto& a : v) a = P::zero();
    }
  };

  // The reader's four words as a 16-byte record the gather reads: plane 0, 1, 2 and sign at bytes
  // 0, 4, 8, 12 (little-endian, spec §5.7).
  static typename P::R words(const Decoded& d) {
    return P::record(d.p0 | std::uint64_t(d.p1) << 32, d.p2 | std::uint64_t(d.sign) << 32);
  }
  static constexpr isa::RecordBitGather kWordGather = [] {
    isa::RecordBitGather g{};
    for (int j = 0; j < 24; ++j) {
      for (int k = 0; k < 4; ++k) g.byte[j][k] = std::uint8_t(4 * k + j / 8);
      g.shift[j] = std::uint32_t(j % 8);
    }
    return g;
  }();

  // The premultiplied tables: row (gain << 9 | class id) = the class's 8 values x centroid[gain];
  // 1024 rows so any 10-bit header indexes in bounds (ids that are not a class are zero).
  struct Premultiplied {
    alignas(64) float v[1024][8];
    Premultiplied(const ClassValues* table, const float* centroid) {
      for (int g = 0; g < 2; ++g)
        for (int id = 0; id < 512; ++id)
          for (int i = 0; i < 8; ++i) v[g << 9 | id][i] = table[id].v[std::size_t(i)] * centroid[g];
    }
    const float* row(const Decoded& d) const { return v[d.gain << 9 | d.id]; }
    const float* row(std::uint32_t id, std::uint32_t gain) const { return v[gain << 9 | id]; }
    const float* zero() const { return v[0]; }  // the origin: all zero
  };

  // Layouts whose sign mask and level planes sit at one bit offset mod 8 within the record's first 16
  // bytes (Planes14, Planes12x): each lane's index comes straight from the record bytes
  // (P::gather_index) instead of through the reader's words and the spread table.
  template <const records::RecordSpec& S>
  static constexpr bool direct() {
    using records::FieldKind;
    if (!records::has_field(S, FieldKind::sign_mask) || !records::has_field(S, FieldKind::level_plane, 0) ||
        records::has_field(S, FieldKind::level_mask, 1) || records::has_field(S, FieldKind::golay_rank))
      return false;
    const int offset = records::field(S, FieldKind::sign_mask).bit % 8;
    for (int k = 0; k < 3; ++k)
      if (records::has_field(S, FieldKind::level_plane, k)) {
        const records::Field& f = records::field(S, FieldKind::level_plane, k);
        if (f.bit % 8 != offset || f.bit + 24 > 128 || f.bits != 24) return false;
      }
    return records::field(S, FieldKind::sign_mask).bit + 24 <= 128;
  }
  template <const records::RecordSpec& S>
  static constexpr isa::RecordBitGather gather_of() {
    using records::FieldKind;
    isa::RecordBitGather g{};
    for (int j = 0; j < 24; ++j)
      for (int k = 0; k < 4; ++k) {
        const bool sign = k == 3;
        if (!sign && !records::has_field(S, FieldKind::level_plane, k)) {
          g.byte[j][k] = 0x80;
          continue;
        }
        const int bit = (sign ? records::field(S, FieldKind::sign_mask) : records::field(S, FieldKind::level_plane, k)).bit + j;
        g.byte[j][k] = std::uint8_t(bit / 8);
        g.shift[j] = std::uint32_t(bit % 8);
      }
    return g;
  }
  template <const records::RecordSpec& S>
  static constexpr isa::RecordBitGather kGather = gather_of<S>();

  // G blocks (their premultiplied rows and lane indices) against 24 G activations; index(s) gives
  // lanes s … s + W - 1.
  template <class Index>
  static void step(Acc& acc, const float* const* rows, const Index& index, const float* x) {
    const typename P::T t = P::table(rows);
    for (int v = 0; v < kVecs; ++v) {
      const typename P::U idx = index(v * W);
      const typename P::F val = P::flip(P::lookup(t, idx), idx);
      acc.v[v] = P::fma(val, P::load(x + v * W), acc.v[v]);
    }
  }

  static float total(const Acc& acc) {
    float s = 0;
    for (int v = 0; v < kVecs; ++v) s += P::sum(acc.v[v]);
    return s;
  }

  // Record b's first byte: a constant stride, or Slot32's group base + position x group stride.
  template <const records::RecordSpec& S>
  static const std::uint8_t* record(const RecordMatrix& m, std::uint64_t b) {
    if constexpr (S.addressing == records::Addressing::uniform) {
      return m.stream.data() + b * std::uint64_t(S.record_bits / 8);
    } else {
      const std::uint32_t* base = m.base.data() + b / 32;
      return m.stream.data() + base[0] + (b % 32) * ((base[1] - base[0]) / 32);
    }
  }

  // Blocks [b, b + n) of one row against x (24 n activations), into acc.
  template <const records::RecordSpec& S>
  static void blocks(Acc& acc, const RecordMatrix& m, std::uint64_t b, std::int64_t n, const Premultiplied& pre,
                     const Tables& tb, const float* x) {
    std::int64_t p = 0;
    if constexpr (direct<S>()) {
      for (; p + G <= n; p += G) {
        const float* rows[G];
        typename P::R recs[G];
        for (int g = 0; g < G; ++g) {
          const std::uint8_t* rec = record<S>(m, b + std::uint64_t(p + g));
          recs[g] = P::record(rec);
          rows[g] = pre.row(get<S, records::FieldKind::class_id>(rec), get<S, records::FieldKind::gain>(rec));
        }
        step(acc, rows, [&](int s) { return P::gather_index(recs, kGather<S>, s); }, x + 24 * p);
      }
    }
    for (; p + G <= n; p += G) {
      const float* rows[G];
      typename P::R recs[G];
      for (int g = 0; g < G; ++g) {
        const Decoded d = read<S>(record<S>(m, b + std::uint64_t(p + g)), tb);
        rows[g] = pre.row(d);
        recs[g] = words(d);
      }
      step(acc, rows, [&](int s) { return P::gather_index(recs, kWordGather, s); }, x + 24 * p);
    }
    if (p < n) {  // fewer than G blocks left: zero tables and activations for the rest
      alignas(64) float xs[24 * G] = {};
      const float* rows[G];
      typename P::R recs[G];
      const int left = int(n - p);
      for (int g = 0; g < G; ++g) {
        rows[g] = pre.zero();
        recs[g] = words(Decoded{});
        if (g >= left) continue;
        const Decoded d = read<S>(record<S>(m, b + std::uint64_t(p + g)), tb);
        rows[g] = pre.row(d);
        recs[g] = words(d);
      }
      std::copy(x + 24 * p, x + 24 * n, xs);
      step(acc, rows, [&](int s) { return P::gather_index(recs, kWordGather, s); }, xs);
    }
  }

  // Rows [r0, r1) of y = W x.
  template <const records::RecordSpec& S>
  static void rows(const RecordMatrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
    constexpr bool golay = records::has_field(S, records::FieldKind::golay_rank);
    const Premultiplied pre(golay ? golay70_table().data() : level_table().data(), m.centroid.data());
    const ClassValues* exact_table = level_table().data();
    const Tables tb;
    const std::int64_t nb = m.blocks_per_row();
    const std::uint64_t first = std::uint64_t(r0) * std::uint64_t(nb);
    std::size_t e = std::size_t(std::lower_bound(m.exc_index.begin(), m.exc_index.end(), first) - m.exc_index.begin());
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::uint64_t b0 = std::uint64_t(r) * std::uint64_t(nb);
      Acc acc;
      acc.clear();
      blocks<S>(acc, m, b0, nb, pre, tb, x);
      float out = m.row_scale[std::size_t(r)] * total(acc);
      for (; e < m.exc_index.size() && m.exc_index[e] < b0 + std::uint64_t(nb); ++e) {
        const std::int64_t p = std::int64_t(m.exc_index[e] - b0);
        Acc ex;
        ex.clear();
        const Decoded d = read<records::Planes14::spec>(m.exc_data.data() + e * kExceptionRecordBytes, tb);
        alignas(64) float xs[24 * G] = {};
        std::copy(x + 24 * p, x + 24 * p + 24, xs);
        alignas(64) float exact[8];
        for (int i = 0; i < 8; ++i) exact[i] = exact_table[d.id].v[std::size_t(i)] * m.centroid[d.gain];
        const float* rows[G];
        typename P::R recs[G];
        for (int g = 0; g < G; ++g) rows[g] = g == 0 ? exact : pre.zero(), recs[g] = words(g == 0 ? d : Decoded{});
        step(ex, rows, [&](int s) { return P::gather_index(recs, kWordGather, s); }, xs);
        out += m.row_scale[std::size_t(r)] * total(ex);
      }
      const float* tail = m.tail_values.data() + r * m.tail;
      for (std::int64_t t = 0; t < m.tail; ++t) out += tail[t] * x[24 * nb + t];
      y[r] = out;
    }
  }

  static void matvec(const RecordMatrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
    switch (m.layout->id) {
      case records::RecordId::slot32:
        return rows<records::Slot32::spec>(m, x, y, r0, r1);
      case records::RecordId::planes14:
        return rows<records::Planes14::spec>(m, x, y, r0, r1);
      case records::RecordId::planes12x:
        return rows<records::Planes12x::spec>(m, x, y, r0, r1);
      case records::RecordId::golay70:
        return rows<records::Golay70::spec>(m, x, y, r0, r1);
    }
  }
};

}  // namespace ternlab::lattice
