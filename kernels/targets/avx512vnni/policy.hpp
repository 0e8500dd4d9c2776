// The AVX-512 VNNI policy: 512-bit vectors (four 16-byte words), dot4 = vpdpbusd (u8 x s8 into
// int32, no saturation). Include only from kernels/targets/avx512vnni/kernels.cpp, after its target pragma;
// called only when cpu.hpp reports the features.
//
// Built a second time with TERNLAB_AVX512_EMULATED, through SIMDe's portable AVX-512 (Debian's
// libsimde-dev), so the test suite runs these exact kernels against the oracle on CPUs without
// AVX-512. The inline namespace keeps the two builds' template instantiations apart; only
// intrinsics SIMDe 0.7.4 provides are used at 512 bits (the 256-bit epilogue is native AVX2).
//
// Slot-mask runs its ShiftedSlots program over this policy (kernels/strategies/slot_mask/ops.hpp).
#pragma once

#if defined(TERNLAB_AVX512_EMULATED)
// Only the 512-bit intrinsics are emulated: the unit's target pragma enables AVX2, FMA and F16C
// (GCC's pragma does not define their feature macros, so SIMDe is told), keeping the 256-bit
// epilogue native - a portable _mm256_fmadd_ps would round twice.
#define SIMDE_X86_AVX_NATIVE
#define SIMDE_X86_AVX2_NATIVE
#define SIMDE_X86_FMA_NATIVE
#define SIMDE_X86_F16C_NATIVE
#define SIMDE_ENABLE_NATIVE_ALIASES
#include <simde/x86/avx512.h>
#if defined(TERNLAB_AVX512_GFNI)
#include <simde/x86/gfni.h>
#endif
#else
#include <immintrin.h>
#endif

#include <cstdint>
#include <cstring>

#include "kernels/cpu.hpp"
#include "kernels/isa/rows8.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"

namespace ternlab::isa {
#if defined(TERNLAB_AVX512_EMULATED) && defined(TERNLAB_AVX512_GFNI)
inline namespace emulated_gfni {
#elif defined(TERNLAB_AVX512_EMULATED) && defined(TERNLAB_AVX512_VBMI)
inline namespace emulated_vbmi {
#elif defined(TERNLAB_AVX512_VBMI)
inline namespace vbmi {
#elif defined(TERNLAB_AVX512_EMULATED)
inline namespace emulated {
#elif defined(TERNLAB_AVX512_GFNI)
inline namespace gfni {
#else
inline namespace native {
#endif

struct Avx512Vnni : Rows8<Avx512Vnni> {
  // Built with TERNLAB_AVX512_GFNI (kernels/targets/avx512vnni/gfni_kernels.cpp), the 16-token gemm takes each
  // slot with one gf2p8affineqb instead of a shift and an AND (LaneCodesGfni); built with
  // TERNLAB_AVX512_VBMI (kernels/targets/avx512vnni/vbmi_kernels.cpp), it also has the base-3 byte tables, under
  // the plain name (no other kernel of the catalog's runs base-3 row-interleaved layouts). The
  // names are the catalog's (KernelVariant::name), which the kernels' refusals quote.
#if defined(TERNLAB_AVX512_EMULATED) && defined(TERNLAB_AVX512_GFNI)
  static constexpr const char* name = "avx512vnni+gfni-simde";
#elif defined(TERNLAB_AVX512_EMULATED)
  static constexpr const char* name = "avx512vnni-simde";
#elif defined(TERNLAB_AVX512_GFNI)
  static constexpr const char* name = "avx512vnni+gfni";
#else
  static constexpr const char* name = "avx512vnni";
#endif
  static constexpr Isa kIsa = Isa::avx512vnni;
  static constexpr int kBytes = 64;
  using V = __m512i;

  static V load(const void* p) { return _mm512_loadu_si512(p); }
  static V zero() { return _mm512_setzero_si512(); }
  static V and_(V a, V b) { return _mm512_and_si512(a, b); }
  static V set1_u8(std::uint8_t v) { return _mm512_set1_epi8(char(v)); }
  static V add32(V a, V b) { return _mm512_add_epi32(a, b); }
  static V add64(V a, V b) { return _mm512_add_epi64(a, b); }
  static std::uint64_t sum64(V v) {
    alignas(64) std::uint64_t l[8];
    _mm512_store_si512(l, v);
    return l[0] + l[1] + l[2] + l[3] + l[4] + l[5] + l[6] + l[7];
  }
  static V sub32(V a, V b) { return _mm512_sub_epi32(a, b); }
  static V dot4(V acc, V u8, V s8) { return _mm512_dpbusd_epi32(acc, u8, s8); }

  // --- broadcast (row-interleaved layouts): 16 rows per vector, one per 32-bit lane -----------
  // acc + the dot4 of w's lanes with the int32 at x broadcast to all of them. Natively one
  // vpdpbusd with an embedded {1to16} memory operand: GCC 12 does not fold the broadcast itself,
  // and a separate vpbroadcastd per dot doubled the gemm loop's instructions.
  static V dot4_bcst(V acc, V w, const std::uint8_t* x) {
#if defined(TERNLAB_AVX512_EMULATED)
    return dot4(acc, w, _mm512_set1_epi32(load_u32(x)));
#else
    __asm__("vpdpbusd %[x]%{1to16%}, %[w], %[acc]"
            : [acc] "+v"(acc)
            : [w] "v"(w), [x] "m"(*reinterpret_cast<const std::int32_t*>(x)));
    return acc;
#endif
  }
  // With lanes of LB = 8 or 16 bytes (a row's lane spans LB / 4 32-bit lanes) the slot's LB
  // activation bytes are broadcast to every LB-byte lane: vpdpbusd embeds only a dword broadcast,
  // so it is a load of its own (vpbroadcastq, vbroadcasti32x4), shared by the strip's vectors.
  template <int LB>
  static V broadcast_lanes(const std::uint8_t* x) {
    if constexpr (LB == 8) {
      std::int64_t v;
      std::memcpy(&v, x, 8);
      return _mm512_set1_epi64(v);
    } else {
      static_assert(LB == 16, "lanes of 8 or 16 bytes");
      return _mm512_broadcast_i32x4(_mm_loadu_si128(reinterpret_cast<const __m128i*>(x)));
    }
  }
  template <int LB>
  static V dot_bcst(V acc, V w, const std::uint8_t* x) {
    if constexpr (LB == 4) return dot4_bcst(acc, w, x);
    else return dot4(acc, w, broadcast_lanes<LB>(x));
  }
  static constexpr int kRegisters = 32;  // vector registers the unrolling may plan with
  static constexpr int kLanes = 16;
  // Row groups a gemv reads side by side, and how far ahead each is prefetched: fewer streams
  // read less, more or farther no more (measured: docs/notebook/2026-12-01-sapphire-rapids-kernels.md).
  static constexpr int kGemvPrefetch = 2048;
  static constexpr int kGemvStreams = 4;
  static constexpr int kGemmTokens = 16;  // tokens a gemm pass dots each weight vector with
  // A single tile (4 tokens): four row groups side by side, each token with two accumulators
  // (TwoChains; the in-place masks' four a token would need 64 registers). A 4-token gemm is
  // nearly memory-bound, and four streams read more than one stream with in-place masks (measured:
  // docs/notebook/2026-12-02-sapphire-rapids-kernels.md).
  static constexpr int kGemm4Streams = 4;
  // gemv: each slot masked in place (u * 4^s <= 192: vpdpbusd does not saturate) into its own
  // int32 accumulator, so a strip costs four ANDs and no shift; sums combines them once per block
  // as 64 S = (a0 << 6) + (a1 << 4) + (a2 << 2) + a3 (|64 S| <= 64 * 128 * 3 * 128 < 2^31), and
  // the final >> 6 rides in lanes_fma (kShift).
  struct LaneMasked {
    static constexpr int kShift = 6;
    struct Slots {
      V s[4];
    };
    struct Acc {
      V s[4];
    };
    static Slots slots(V w) {
      return {{and_(w, set1_u8(0x03)), and_(w, set1_u8(0x0c)), and_(w, set1_u8(0x30)), and_(w, set1_u8(0xc0))}};
    }
    static Acc zero() { return {{Avx512Vnni::zero(), Avx512Vnni::zero(), Avx512Vnni::zero(), Avx512Vnni::zero()}}; }
    // Slot s's codes against the activation dword at x + 4 s, broadcast to every lane (an embedded
    // broadcast operand of vpdpbusd).
    // With LB-byte lanes, slot s's LB activation bytes at x + LB s.
    template <int LB = 4>
    static void dot(Acc& acc, const Slots& w, const std::uint8_t* x) {
      for (int s = 0; s < 4; ++s) acc.s[s] = dot_bcst<LB>(acc.s[s], w.s[s], x + LB * s);
    }
    // Codes taken whole (no slot factor) against the dword at x: base-3's top digit.
    static void dot_codes(Acc& acc, V codes, const std::uint8_t* x) { acc.s[0] = dot4_bcst(acc.s[0], codes, x); }
    static V sums(const Acc& a) {
      return add32(add32(_mm512_slli_epi32(a.s[0], 6), _mm512_slli_epi32(a.s[1], 4)),
                   add32(_mm512_slli_epi32(a.s[2], 2), a.s[3]));
    }
  };
  // gemm, sixteen tokens: each slot shifted down to its code (three shifts and four ANDs a
  // vector, shared by all of a pass's tokens), so a token needs no recombination and one
  // accumulator: sixteen chains of vpdpbusd in flight cover its latency on two ports. (Eight
  // tokens with two accumulators each, the same chains, spent twice the extraction per product
  // and read less: docs/notebook/2026-12-02-sapphire-rapids-kernels.md.)
  struct LaneCodesOne {
    static constexpr int kShift = 0;
    struct Slots {
      V s[4];
    };
    using Acc = V;
    static Slots slots(V w) {
      const V m = set1_u8(0x03);  // 16-bit shifts drag in the next byte's bits; the mask drops them
      return {{and_(w, m), and_(_mm512_srli_epi16(w, 2), m), and_(_mm512_srli_epi16(w, 4), m), and_(_mm512_srli_epi16(w, 6), m)}};
    }
    static Acc zero() { return Avx512Vnni::zero(); }
    template <int LB = 4>
    static void dot(Acc& acc, const Slots& w, const std::uint8_t* x) {
      for (int s = 0; s < 4; ++s) acc = dot_bcst<LB>(acc, w.s[s], x + LB * s);
    }
    static void dot_codes(Acc& acc, V codes, const std::uint8_t* x) { acc = dot4_bcst(acc, codes, x); }
    static V sums(Acc a) { return a; }
  };
#if defined(TERNLAB_AVX512_GFNI)
  // LaneCodesOne with each slot's code brought down by one GF(2) affine map per byte (output bits
  // 0 and 1 = input bits 2s and 2s + 1, the rest zero): four ops a weight vector instead of
  // seven, the same codes (measured: docs/notebook/2026-12-02-sapphire-rapids-kernels.md).
  struct LaneCodesGfni : LaneCodesOne {
    static V slot(V w, int s) {
      const std::uint64_t picks = (std::uint64_t{1} << (2 * s)) << 56 | (std::uint64_t{1} << (2 * s + 1)) << 48;
      return _mm512_gf2p8affine_epi64_epi8(w, _mm512_set1_epi64(static_cast<long long>(picks)), 0);
    }
    static Slots slots(V w) { return {{slot(w, 0), slot(w, 1), slot(w, 2), slot(w, 3)}}; }
  };
#endif
  // Codes' slots with two accumulators a token (slots 0 and 2, slots 1 and 3), added once per
  // block. Four tokens with one accumulator each are four chains of vpdpbusd a stream, which its
  // latency (4-5 cycles at one a cycle) leaves short of the port; two read more (GFNI's slots
  // level, bound by their own port; measured: docs/notebook/2026-12-04-zen4-kernels.md).
  template <class Codes>
  struct TwoChains {
    static constexpr int kShift = 0;
    using Slots = typename Codes::Slots;
    struct Acc {
      V even, odd;
    };
    static Slots slots(V w) { return Codes::slots(w); }
    static Acc zero() { return {Avx512Vnni::zero(), Avx512Vnni::zero()}; }
    template <int LB = 4>
    static void dot(Acc& acc, const Slots& w, const std::uint8_t* x) {
      acc.even = dot_bcst<LB>(acc.even, w.s[0], x);
      acc.odd = dot_bcst<LB>(acc.odd, w.s[1], x + LB);
      acc.even = dot_bcst<LB>(acc.even, w.s[2], x + 2 * LB);
      acc.odd = dot_bcst<LB>(acc.odd, w.s[3], x + 3 * LB);
    }
    static void dot_codes(Acc& acc, V codes, const std::uint8_t* x) { acc.even = dot4_bcst(acc.even, codes, x); }
    static V sums(const Acc& a) { return add32(a.even, a.odd); }
  };
#if defined(TERNLAB_AVX512_VBMI)
  // --- base-3 row-interleaved layouts (b3r): five digits a byte, 16 rows per vector -----------
  // A byte is 84 t0 + r (Code::base3_banded, r = digits 1-4 in base 3). Digit 0 is a 64-entry
  // lookup (vpermb) of byte >> 2 (a 16-bit shift: vpermb reads each byte's low six bits, which are
  // then the byte's own bits 2-7); digits 1-4 come from a table as t2r's four 2-bit slots, so that
  // the lane programs above take them as they take t2r's codes. vpermi2b looks up 128 entries, so
  // a byte with its top bit set is first sent, by a lookup merged under that bit, to a byte below
  // 128 with the same four digits (r itself), whose digits the second lookup reads. Against ggml's
  // ceil(256 q / 243) byte, whose digit 0 took two compares and two masked moves (no function of
  // byte >> k reads it), b3r's gemv and gemm ran faster, the strips alone more so (the tail
  // strip and the block's epilogue did not shrink; measured: docs/notebook/2026-12-05-zen4-kernels.md).
  struct Base3Table {
    V low[2];   // bytes 0-127: digits 1-4
    V high[2];  // bytes 128-255: a byte below 128 with the same digits 1-4
    V top;      // byte >> 2: digit 0
  };
  static Base3Table base3_table(const std::uint8_t* low, const std::uint8_t* high, const std::uint8_t* top) {
    return {{load(low), load(low + 64)}, {load(high), load(high + 64)}, load(top)};  // 128, 128 and 64 entries
  }
  struct Base3Digits {
    V top;  // digit 0 of every byte, 0..2
    V low;  // digits 1-4 as 2-bit fields 0-3
  };
  static Base3Digits base3_digits(V x, const Base3Table& t) {
    const V top = _mm512_permutexvar_epi8(_mm512_srli_epi16(x, 2), t.top);
    const V below = _mm512_mask2_permutex2var_epi8(t.high[0], x, _mm512_movepi8_mask(x), t.high[1]);
    return {top, _mm512_permutex2var_epi8(t.low[0], below, t.low[1])};
  }
  // Sixteen rows' two tail bytes, one pair per 32-bit lane and two zero bytes after it (a zero
  // byte is five zero digits, dotted with zero activations).
  static V widen_pairs(const std::uint8_t* p) {
#if defined(TERNLAB_AVX512_EMULATED)
    alignas(64) std::uint8_t b[64] = {};  // SIMDe 0.7.4 has no 512-bit vpmovzxwd
    for (int j = 0; j < 16; ++j) std::memcpy(b + 4 * j, p + 2 * j, 2);
    return load(b);
#else
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#endif
  }
#endif

  // One token: in-place masks, four accumulators (sixteen chains over the four streams).
  using GemvLanes = LaneMasked;
#if defined(TERNLAB_AVX512_GFNI)
  using GemmLanes = LaneCodesGfni;  // kGemmTokens tokens
#else
  using GemmLanes = LaneCodesOne;  // kGemmTokens tokens
#endif
  using Gemm4Lanes = TwoChains<GemmLanes>;  // one tile, kGemm4Streams row groups
  // 16 rows of float results. SIMDe 0.7.4 lacks the 512-bit srai and int-to-float conversion, so
  // the emulated build runs the same epilogue as two native 8-lane halves (Rows8).
#if defined(TERNLAB_AVX512_EMULATED)
  struct LaneF {
    __m256 h[2];
  };
  static LaneF lanes_zero() { return {{row_zero(), row_zero()}}; }
  static LaneF lanes_scales(const std::uint8_t* p) { return {{row_scales(p), row_scales(p + 16)}}; }
  static LaneF lanes_load(const float* p) { return {{row_load(p), row_load(p + 8)}}; }
  template <int shift>
  static LaneF lanes_fma(V s, std::int32_t ysum, LaneF scales, float d, LaneF acc) {
    return {{row_fma<shift>(_mm512_castsi512_si256(s), ysum, scales.h[0], d, acc.h[0]),
             row_fma<shift>(_mm512_extracti64x4_epi64(s, 1), ysum, scales.h[1], d, acc.h[1])}};
  }
  static void lanes_store(float* y, LaneF v) {
    _mm256_storeu_ps(y, v.h[0]);
    _mm256_storeu_ps(y + 8, v.h[1]);
  }
#else
  using LaneF = __m512;
  static LaneF lanes_zero() { return _mm512_setzero_ps(); }
  static LaneF lanes_scales(const std::uint8_t* p) {
    return _mm512_cvtph_ps(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
  }
  static LaneF lanes_load(const float* p) { return _mm512_loadu_ps(p); }
  // acc + float((s >> shift) - ysum) * (scales * d): the reference's one fma per row and block.
  template <int shift>
  static LaneF lanes_fma(V s, std::int32_t ysum, LaneF scales, float d, LaneF acc) {
    if constexpr (shift > 0) s = _mm512_srai_epi32(s, shift);
    const __m512 sf = _mm512_cvtepi32_ps(_mm512_sub_epi32(s, _mm512_set1_epi32(ysum)));
    return _mm512_fmadd_ps(sf, _mm512_mul_ps(scales, _mm512_set1_ps(d)), acc);
  }
  static void lanes_store(float* y, LaneF v) { _mm512_storeu_ps(y, v); }
#endif

  // The 512-bit hadd: per 16-byte word u, [a's lane pairs 0,1 | b's lane pairs 0,1] summed.
  static V pair_add(V a, V b) {
    const __m512 x = _mm512_castsi512_ps(a), y = _mm512_castsi512_ps(b);
    return _mm512_add_epi32(_mm512_castps_si512(_mm512_shuffle_ps(x, y, 0x88)),
                            _mm512_castps_si512(_mm512_shuffle_ps(x, y, 0xdd)));
  }
  // The sums of E rows (16: the lanes_fma vector; 8: Rows8's; 4: Rows8's 4-row one) with LB-byte
  // lanes (LB = 8 or 16), from the E * LB / 64 vectors of their int32 lanes (c[i]: rows 64 i / LB
  // ..): each row's LB / 4 lanes added by pair_add levels, then one permute puts the rows in order.
  template <int LB, int E>
  static auto lane_rows(const V* c) {
    static_assert((LB == 8 || LB == 16) && (E == 8 || E == 16 || (E == 4 && LB == 16)),
                  "8 or 16 rows with lanes of 8 or 16 bytes, or 4 rows of 16-byte lanes (one vector)");
    if constexpr (E == 16 && LB == 8) {
      // Word u: rows 2u, 2u + 1, 8 + 2u, 9 + 2u.
      return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 2, 3, 6, 7, 10, 11, 14, 15),
                                      pair_add(c[0], c[1]));
    } else if constexpr (E == 16) {
      // Word u: rows u, 4 + u, 8 + u, 12 + u.
      return _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 2, 6, 10, 14, 3, 7, 11, 15),
                                      pair_add(pair_add(c[0], c[1]), pair_add(c[2], c[3])));
    } else if constexpr (E == 8 && LB == 8) {
      // Word u: rows 2u, 2u + 1 (twice).
      return low_half(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 1, 4, 5, 8, 9, 12, 13, 0, 0, 0, 0, 0, 0, 0, 0),
                                               pair_add(c[0], c[0])));
    } else if constexpr (E == 8) {
      // Word u: rows u, 4 + u (twice).
      const V h = pair_add(c[0], c[1]);
      return low_half(_mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 1, 5, 9, 13, 0, 0, 0, 0, 0, 0, 0, 0),
                                               pair_add(h, h)));
    } else {
      // Word u: row u (four times).
      const V h = pair_add(c[0], c[0]);
      return _mm512_castsi512_si128(
          _mm512_permutexvar_epi32(_mm512_setr_epi32(0, 4, 8, 12, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0), pair_add(h, h)));
    }
  }

  static void store(void* p, V v) { _mm512_storeu_si512(p, v); }

  // --- rows kept in one 8-lane vector, for the slot-mask epilogue (Rows8) ----------------------
  static __m256i low_half(V v) { return _mm512_castsi512_si256(v); }
  static __m256i high_half(V v) { return _mm512_extracti64x4_epi64(v, 1); }
  // The four words of v summed: lanes 0-3 (and again 4-7).
  static __m256i fold_words(V v) {
    const __m256i h = _mm256_add_epi32(low_half(v), high_half(v));
    return _mm256_add_epi32(h, _mm256_permute2x128_si256(h, h, 1));
  }
  template <int G, int E, class Plan>
  static __m256i rows_from_pairs(const V* c, const Plan& p) {
    constexpr int K = (G + 1) / 2;
    V h[K];
    for (int k = 0; k < K; ++k) h[k] = pair_add(c[2 * k], 2 * k + 1 < G ? c[2 * k + 1] : zero());
    // The plan's shortcut (t2p, t2p8): every word of a pair_add holds the same four rows.
    if constexpr (E == 4 && (G == 2 || G == 4))
      if (p.fold_words) {
        if constexpr (G == 2) return fold_words(h[0]);
        return _mm256_permute2x128_si256(fold_words(h[0]), fold_words(h[1]), 0x20);
      }
    __m256i pieces[2 * K];
    for (int k = 0; k < K; ++k) pieces[2 * k] = low_half(h[k]), pieces[2 * k + 1] = high_half(h[k]);
    return gather_rows<2 * K, E>(pieces, p);
  }

  // A fold_pair_words plan's accumulators a and b: words 0-1 hold a's rows 0-3, words 2-3 b's.
  static V pair_words_added(V a, V b, const SlotVectorPlan& p) {
    const V rows01 = _mm512_permutex2var_epi64(a, load(p.pair_word_gather[0]), b);
    const V rows23 = _mm512_permutex2var_epi64(a, load(p.pair_word_gather[1]), b);
    return pair_add(rows01, rows23);
  }

  // --- a 4 x 4 tile (Rows8::Tile16) of a plan with two row pairs that folds words (t2p, t2p-split)
  static bool tile_fits(const SlotVectorPlan& p) { return p.fold_words || p.fold_pair_words; }
  static constexpr bool kTileGemv = true;  // gemv's four row groups fit the 32 registers
  static V transpose_add(V a, V b, V even, V odd) {
    return add32(_mm512_permutex2var_epi64(a, even, b), _mm512_permutex2var_epi64(a, odd, b));
  }
  // c[q][a]: row pair a's accumulator of token (or row group) q (fold_words). After pair_add,
  // word u of x[q] holds rows 0..3 over word u's weights; two levels of "words 0, 2 of a and b"
  // plus "words 1, 3 of a and b" transpose the words and add as they go, leaving q's row sums in
  // word q.
  static Tile16 tile_rows(const V (*c)[2], const SlotVectorPlan&) {
    V x[4];
    for (int q = 0; q < 4; ++q) x[q] = pair_add(c[q][0], c[q][1]);
    const V even = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), odd = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
    const V r = transpose_add(transpose_add(x[0], x[1], even, odd), transpose_add(x[2], x[3], even, odd), even, odd);
    return {low_half(r), high_half(r)};
  }
  // c[q][0]: the one accumulator of token (or row group) q (fold_pair_words). Two q's rows fill one
  // vector (q in words 0-1, q + 1 in words 2-3), so one transpose level leaves q's sums in word q.
  static Tile16 tile_rows(const V (*c)[1], const SlotVectorPlan& p) {
    const V even = _mm512_setr_epi64(0, 1, 4, 5, 8, 9, 12, 13), odd = _mm512_setr_epi64(2, 3, 6, 7, 10, 11, 14, 15);
    const V r = transpose_add(pair_words_added(c[0][0], c[1][0], p), pair_words_added(c[2][0], c[3][0], p), even, odd);
    return {low_half(r), high_half(r)};
  }

  // Horizontal sums: two pair_add levels leave [a, b, c, d] word sums in every word.
  static void reduce_add4(V a, V b, V c, V d, std::int32_t* out) {
    _mm_storeu_si128(reinterpret_cast<__m128i*>(out),
                     _mm256_castsi256_si128(fold_words(pair_add(pair_add(a, b), pair_add(c, d)))));
  }
  static std::int32_t reduce_add(V v) {
    alignas(16) std::int32_t s[4];
    reduce_add4(v, zero(), zero(), zero(), s);
    return s[0];
  }

  // --- natural 2-bit order: the 256-bit recipe of spec 6.2 in both halves -----------------------
  static V unpack_natural(const std::uint8_t* codes) {
    const V b = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 0, 0, 0, 1, 1, 1, 1),
                                         _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes))));
    return and_(_mm512_srlv_epi64(b, _mm512_setr_epi64(0, 2, 4, 6, 0, 2, 4, 6)), set1_u8(3));
  }

  // --- basic operations the permute strategy reads (permute/ops.hpp) -------------------------
  static V or_(V a, V b) { return _mm512_or_si512(a, b); }
  static V shuffle_bytes(V a, V idx) { return _mm512_shuffle_epi8(a, idx); }  // within 16-byte lanes
  static V srli16(V a, int n) { return _mm512_srli_epi16(a, unsigned(n)); }
  static V set1_i16(std::int16_t v) { return _mm512_set1_epi16(v); }
  // Byte-wise product mod 256 (even bytes' multipliers in `even`, odd bytes' in `odd`, as 16-bit
  // values): two 16-bit multiplies, each keeping the byte it got right.
  static V mul_u8(V x, V even, V odd) {
    const V lo = and_(_mm512_mullo_epi16(x, even), _mm512_set1_epi16(0x00ff));
    const V hi = _mm512_mullo_epi16(and_(x, _mm512_set1_epi16(std::int16_t(0xff00))), odd);
    return _mm512_or_si512(lo, hi);
  }
  // The top trit of each byte, floor(3 x / 256) = (x >= 86) + (x >= 171), by saturating subtracts.
  static V top_trit(V x) {
    const V one = set1_u8(1);
    return _mm512_add_epi8(_mm512_min_epu8(_mm512_subs_epu8(x, set1_u8(85)), one),
                           _mm512_min_epu8(_mm512_subs_epu8(x, set1_u8(170)), one));
  }

  // Always inlined: the scale loops call it per row and block, and out of line (GCC's choice for
  // some instantiations) every call was a call in a hot loop.
  [[gnu::always_inline]] static float fp16(const std::uint8_t* p) {
    std::uint16_t h;
    __builtin_memcpy(&h, p, 2);
    return _cvtsh_ss(h);
  }
};

}  // namespace
}  // namespace ternlab::isa
