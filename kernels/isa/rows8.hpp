// Up to 8 rows of one block kept in a 256-bit vector, for the slot-mask epilogue of the x86
// policies (AVX2 and AVX-512 both end in 8 row lanes): the gather of pair sums into rows, the
// reference's one fma per block, the fp16 row scales and the store; the same end for 4 rows in a
// 128-bit vector; and the same for a 4 x 4 tile of results in two 256-bit vectors.
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

  // Four bytes as one int32 (an activation dword to broadcast).
  static std::int32_t load_u32(const void* p) {
    std::int32_t v;
    __builtin_memcpy(&v, p, 4);
    return v;
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
  // 4 consecutive fp16 scales (rows <= 4), lanes 4-7 zero.
  static RowF row_scales4(const std::uint8_t* p) {
    return _mm256_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p)));
  }
  static RowF row_load(const float* p) { return _mm256_loadu_ps(p); }

  // The same end for 4 rows in a 128-bit vector (the broadcast strategy's 4-row blocks), reading
  // and writing only those 4 rows' scales and results.
  using Row4F = __m128;
  static Row4F row4_zero() { return _mm_setzero_ps(); }
  template <int shift>
  static Row4F row4_fma(__m128i s, std::int32_t ysum, Row4F scales, float d, Row4F acc) {
    if constexpr (shift > 0) s = _mm_srai_epi32(s, shift);
    const __m128 sf = _mm_cvtepi32_ps(_mm_sub_epi32(s, _mm_set1_epi32(ysum)));
    return _mm_fmadd_ps(sf, _mm_mul_ps(scales, _mm_set1_ps(d)), acc);
  }
  static Row4F row4_scales(const std::uint8_t* p) { return _mm_cvtph_ps(_mm_loadl_epi64(reinterpret_cast<const __m128i*>(p))); }
  static Row4F row4_load(const float* p) { return _mm_loadu_ps(p); }
  static void row4_store(float* y, Row4F v) { _mm_storeu_ps(y, v); }

  // Int32 row sums in lanes, built from 8-lane pieces by the steps of a plan (PermutePlan::RowStep).
  using RowI = __m256i;
  static RowI rowi_zero() { return _mm256_setzero_si256(); }
  static RowI rowi_add(RowI a, RowI b) { return _mm256_add_epi32(a, b); }
  // Two row groups' sums whose 128-bit halves hold the same rows: [a's halves added | b's].
  static RowI fold_pair(RowI a, RowI b) {
    return _mm256_add_epi32(_mm256_permute2x128_si256(a, b, 0x20), _mm256_permute2x128_si256(a, b, 0x31));
  }
  // Lanes 0-3 to y0, lanes 4-7 to y1, `rows` (<= 4) each.
  static void pair_store(float* y0, float* y1, RowF v, int rows) {
    alignas(32) float t[8];
    _mm256_store_ps(t, v);
    for (int r = 0; r < rows; ++r) y0[r] = t[r], y1[r] = t[4 + r];
  }
  template <class Step>
  static RowI row_step(RowI s, const Step& st) {
    if (st.permute) s = _mm256_permutevar8x32_epi32(s, load_lanes(st.idx));
    if (st.masked) s = _mm256_and_si256(s, load_lanes(st.mask));
    return s;
  }

  static void row_store(float* y, RowF v, int rows) {
    alignas(32) float t[8];
    _mm256_store_ps(t, v);
    for (int r = 0; r < rows; ++r) y[r] = t[r];
  }

  // --- a 4 x 4 tile: four tokens of a gemm tile, or four row groups of a gemv, x four rows ---
  // 16 int32 results in two vectors, lane 4q + r: q = token or row group (0, 1 in lo; 2, 3 in
  // hi), r = row. One epilogue serves all 16.
  struct Tile16 {
    __m256i lo, hi;
  };
  struct TileF {
    __m256 lo, hi;
  };
  static TileF tile_zero() { return {_mm256_setzero_ps(), _mm256_setzero_ps()}; }
  // The fp16 scales of the four 4-row groups (a gemm tile passes its one group four times).
  static __m256 scales_pair(const std::uint8_t* a, const std::uint8_t* b) {
    std::int64_t x, y;
    __builtin_memcpy(&x, a, 8);
    __builtin_memcpy(&y, b, 8);
    return _mm256_cvtph_ps(_mm_set_epi64x(y, x));
  }
  static TileF tile_scales(const std::uint8_t* s0, const std::uint8_t* s1, const std::uint8_t* s2,
                           const std::uint8_t* s3) {
    return {scales_pair(s0, s1), scales_pair(s2, s3)};
  }
  // acc + float((s >> shift) - ysum) * (d_w * d_y) per lane: the reference's one fma per block.
  // ysum and d come one per lane (the strategy's TileActs).
  template <int shift>
  static __m256 tile_fma_half(__m256i s, const std::int32_t* ysum, const float* d, __m256 dw, __m256 acc) {
    if constexpr (shift > 0) s = _mm256_srai_epi32(s, shift);
    const __m256 sf = _mm256_cvtepi32_ps(_mm256_sub_epi32(s, load_lanes(ysum)));
    return _mm256_fmadd_ps(sf, _mm256_mul_ps(dw, _mm256_loadu_ps(d)), acc);
  }
  template <int shift, class TileActs>
  static TileF tile_fma(const Tile16& s, const TileActs& a, const TileF& dw, TileF acc) {
    return {tile_fma_half<shift>(s.lo, a.ysum, a.d, dw.lo, acc.lo),
            tile_fma_half<shift>(s.hi, a.ysum + 8, a.d + 8, dw.hi, acc.hi)};
  }
  // Lane 4q + r to y[q * ldy + r], for the first `live` q.
  static void tile_store(const TileF& acc, float* y, std::int64_t ldy, int live) {
    alignas(32) float t[16];
    _mm256_store_ps(t, acc.lo);
    _mm256_store_ps(t + 8, acc.hi);
    for (int q = 0; q < live; ++q)
      for (int r = 0; r < 4; ++r) y[q * ldy + r] = t[4 * q + r];
  }

  static __m256i load_lanes(const std::int32_t* p) { return _mm256_loadu_si256(reinterpret_cast<const __m256i*>(p)); }
};

}  // namespace ternlab::isa
