// The one source of the record matvec kernels, y = W x for a matrix in any record layout, over a
// float-lane policy P (kernels/isa/f32_lanes.hpp: scalar, AVX2, AVX-512, NEON).
//
// Per block, a reader derived from the layout's declaration turns the record into the same five
// words whatever the layout: class id, gain, a sign word and three level-index planes (Slot32's
// one-hot masks and Golay70's codeword, picks and computed signs fold into planes here, spec §5.2,
// §5.5 hoisted). The value select is a table lookup (spec §5.7): the class's ≤ 8 values times the
// gain centroid sit in a small table, and each lane's plane bits form its index; the sign word
// flips lanes; one fma per lane into one accumulator per vector of the block. A policy whose lookup
// spans kTableBlocks tables does that many blocks per step (AVX-512: 2 blocks = 3 x 16 lanes).
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
  // A plain array: std::array would drop the vector types' alignment attributes.
  struct Acc {
    typename P::F v[kVecs];
    void clear() {
      for (auto& a : v) a = P::zero();
    }
  };

  // `n` decoded blocks (n ≤ G; the rest count as zero blocks) against 24 G activations.
  static void step(Acc& acc, const Decoded* d, int n, const ClassValues* table, const float* centroid, const float* x) {
    alignas(64) float tab[8 * G];
    std::uint64_t p0 = 0, p1 = 0, p2 = 0, sign = 0;
    for (int g = 0; g < G; ++g) {
      if (g >= n) {
        for (int i = 0; i < 8; ++i) tab[8 * g + i] = 0.0f;
        continue;
      }
      const float gamma = centroid[d[g].gain];
      const ClassValues& t = table[d[g].id];
      for (int i = 0; i < 8; ++i) tab[8 * g + i] = t.v[std::size_t(i)] * gamma;
      p0 |= std::uint64_t(d[g].p0) << (24 * g);
      p1 |= std::uint64_t(d[g].p1) << (24 * g);
      p2 |= std::uint64_t(d[g].p2) << (24 * g);
      sign |= std::uint64_t(d[g].sign) << (24 * g);
    }
    for (int v = 0; v < kVecs; ++v) {
      const int s = v * W;
      typename P::U idx = P::or_(P::or_(P::bits(std::uint32_t(p0 >> s)), P::template shl<1>(P::bits(std::uint32_t(p1 >> s)))),
                                 P::template shl<2>(P::bits(std::uint32_t(p2 >> s))));
      if constexpr (G > 1) {
        // Lanes of block g read the g-th table: index + 8 g.
        const std::uint64_t second = std::uint64_t(0xFFFFFF) << 24;
        idx = P::or_(idx, P::template shl<3>(P::bits(std::uint32_t(second >> s))));
      }
      const typename P::F val = P::flip(P::lookup(tab, idx), P::bits(std::uint32_t(sign >> s)));
      acc.v[v] = P::fma(val, P::load(x + s), acc.v[v]);
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
  static void blocks(Acc& acc, const RecordMatrix& m, std::uint64_t b, std::int64_t n, const ClassValues* table,
                     const Tables& tb, const float* x) {
    std::int64_t p = 0;
    for (; p + G <= n; p += G) {
      Decoded d[G];
      for (int g = 0; g < G; ++g) d[g] = read<S>(record<S>(m, b + std::uint64_t(p + g)), tb);
      step(acc, d, G, table, m.centroid.data(), x + 24 * p);
    }
    if (p < n) {  // fewer than G blocks left: their activations padded with zeros
      alignas(64) float xs[24 * G] = {};
      Decoded d[G];
      const int left = int(n - p);
      for (int g = 0; g < left; ++g) d[g] = read<S>(record<S>(m, b + std::uint64_t(p + g)), tb);
      std::copy(x + 24 * p, x + 24 * n, xs);
      step(acc, d, left, table, m.centroid.data(), xs);
    }
  }

  // Rows [r0, r1) of y = W x.
  template <const records::RecordSpec& S>
  static void rows(const RecordMatrix& m, const float* x, float* y, std::int64_t r0, std::int64_t r1) {
    constexpr bool golay = records::has_field(S, records::FieldKind::golay_rank);
    const ClassValues* table = golay ? golay70_table().data() : level_table().data();
    const ClassValues* exact_table = level_table().data();
    const Tables tb;
    const std::int64_t nb = m.blocks_per_row();
    const std::uint64_t first = std::uint64_t(r0) * std::uint64_t(nb);
    std::size_t e = std::size_t(std::lower_bound(m.exc_index.begin(), m.exc_index.end(), first) - m.exc_index.begin());
    for (std::int64_t r = r0; r < r1; ++r) {
      const std::uint64_t b0 = std::uint64_t(r) * std::uint64_t(nb);
      Acc acc;
      acc.clear();
      blocks<S>(acc, m, b0, nb, table, tb, x);
      float out = m.row_scale[std::size_t(r)] * total(acc);
      for (; e < m.exc_index.size() && m.exc_index[e] < b0 + std::uint64_t(nb); ++e) {
        const std::int64_t p = std::int64_t(m.exc_index[e] - b0);
        Acc ex;
        ex.clear();
        const Decoded d = read<records::Planes14::spec>(m.exc_data.data() + e * kExceptionRecordBytes, tb);
        alignas(64) float xs[24 * G] = {};
        std::copy(x + 24 * p, x + 24 * p + 24, xs);
        step(ex, &d, 1, exact_table, m.centroid.data(), xs);
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
