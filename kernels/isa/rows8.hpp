// Up to 8 rows of one block kept in a 256-bit vector, for the slot-mask epilogue of the x86
// policies (AVX2 and AVX-512 both end in 8 row lanes): the gather of pair sums into rows, the
// reference's one fma per block, the fp16 row scales and the store.
//
// A template on the policy so each translation unit (compiled for its own target) gets its own
// instantiation: an inline non-template here would be one symbol built for two targets.
// Include only after the policy's target pragma (AVX2, FMA and F16C at least).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ternlab::isa {

template <class Policy>
struct Rows8 {
  using RowF = __m256;

  // The plan's general gather (SlotVectorPlan::row_perm / row_mask): `pieces` are K 8-lane
  // vectors of pair sums in the plan's store order; lanes 0 .. rows-1 of the result are the rows.
  template <int K, int E, class Plan>
  static __m256i gather_rows(const __m256i* pieces, const Plan& p) {
    __m256i s = _mm256_setzero_si256();
    for (int k = 0; k < K; ++k)
      for (int e = 0; e < E; ++e) {
        __m256i t = _mm256_permutevar8x32_epi32(pieces[k], load_lanes(p.row_perm[k][e]));
        if constexpr (K > 1) t = _mm256_and_si256(t, load_lanes(p.row_mask[k][e]));
        s = _mm256_add_epi32(s, t);
      }
    return s;
  }

  static RowF row_zero() { return _mm256_setzero_ps(); }
  // acc + float((s >> shift) - ysum) * (scales * d): per row, the reference's one fma per block.
  template <int shift>
  static RowF row_fma(__m256i s, std::int32_t ysum, RowF scales, float d, RowF acc) {
    if constexpr (shift > 0) s = _mm256_srai_epi32(s, shift);
    const __m256 sf = _mm256_cvtepi32_ps(_mm256_sub_epi32(s, _mm256_set1_epi32(ysum)));
    return _mm256_fmadd_ps(sf, _mm256_mul_ps(scales, _mm256_set1_ps(d)), acc);
  }
  // 8 consecutive fp16 scales (lanes past the block's rows are never stored).
  static RowF row_scales(const std::uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadu_si128(reinterpret_cast<const __m128i*>(p)));
  }
  static void row_store(float* y, RowF v, int rows) {
    alignas(32) float t[8];
    _mm256_store_ps(t, v);
    for (int r = 0; r < rows; ++r) y[r] = t[r];
  }

  static __m256i load_lanes(const std::int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
};

}  // namespace ternlab::isa
