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
  // Built with TERNLAB_AVX512_GFNI (kernels/targets/avx512vnni/gfni_kernels.cpp) it has the affine
  // byte map, through which the broadcast strategy's 16-token gemm takes each slot in one op
  // (Dot4LaneCodesGf2); built with TERNLAB_AVX512_VBMI (kernels/targets/avx512vnni/vbmi_kernels.cpp),
  // the byte lookups of the base-3 build, under the plain name (no other kernel of the catalog's runs base-3 row-interleaved layouts). The
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
  static V add8(V a, V b) { return _mm512_add_epi8(a, b); }
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
  static constexpr int kRegisters = 32;  // vector registers the unrolling may plan with
  static constexpr int kLanes = 16;
  template <int n>
  static V slli32(V a) { return _mm512_slli_epi32(a, n); }
  static V srli16(V a, int n) { return _mm512_srli_epi16(a, unsigned(n)); }
#if defined(TERNLAB_AVX512_GFNI)
  // Every byte's GF(2) affine map by the 8 x 8 bit matrix m (gf2p8affineqb): output bit i is the
  // parity of the byte AND m's byte 7 - i.
  static V gf2_affine(V x, std::uint64_t m) {
    return _mm512_gf2p8affine_epi64_epi8(x, _mm512_set1_epi64(static_cast<long long>(m)), 0);
  }
#endif
#if defined(TERNLAB_AVX512_VBMI)
  // --- byte lookups (VBMI), which the base-3 broadcast build reads -----------------------------
  static V lookup64(V idx, V table) { return _mm512_permutexvar_epi8(idx, table); }
  static V lookup128(V idx, V t0, V t1) { return _mm512_permutex2var_epi8(t0, idx, t1); }
  static V lookup128_high(V idx, V t0, V t1) {
    return _mm512_mask2_permutex2var_epi8(t0, idx, _mm512_movepi8_mask(idx), t1);
  }
  // Sixteen uint16 values, each zero-extended into its int32 lane.
  static V load_u16_as_u32(const std::uint8_t* p) {
#if defined(TERNLAB_AVX512_EMULATED)
    alignas(64) std::uint8_t b[64] = {};  // SIMDe 0.7.4 has no 512-bit vpmovzxwd
    for (int j = 0; j < 16; ++j) std::memcpy(b + 4 * j, p + 2 * j, 2);
    return load(b);
#else
    return _mm512_cvtepu16_epi32(_mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)));
#endif
  }
#endif

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
  static void store(void* p, V v) { _mm512_storeu_si512(p, v); }

  // --- 256-bit halves, and the four words of a vector summed ---------------------------------
  static __m256i low_half(V v) { return _mm512_castsi512_si256(v); }
  static __m256i high_half(V v) { return _mm512_extracti64x4_epi64(v, 1); }
  // The four words of v summed: lanes 0-3 (and again 4-7).
  static __m256i fold_words(V v) {
    const __m256i h = _mm256_add_epi32(low_half(v), high_half(v));
    return _mm256_add_epi32(h, _mm256_permute2x128_si256(h, h, 1));
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
