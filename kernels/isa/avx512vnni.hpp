// The AVX-512 VNNI policy: 512-bit vectors (four 16-byte words), dot4 = vpdpbusd (u8 x s8 into
// int32, no saturation). Include only from a translation unit compiled for
// avx512f,avx512bw,avx512vl,avx512vnni (see kernels/x86_avx512vnni.cpp); called only when
// cpu.hpp reports the features.
//
// Every slot is masked in place (64u <= 192 fits u8 and vpdpbusd does not saturate), and the
// 1/4/16/64 recombination is folded Horner-style into one accumulator: start from slot 3 (64u),
// shift right by 2 before adding the next lower slot. Each shift is exact: the lane is a multiple
// of 4 at that point (it only holds 4^k multiples, k >= 1).
#pragma once

#include <immintrin.h>

#include <cstdint>

namespace ternlab::isa {

struct Avx512Vnni {
  static constexpr const char* name = "avx512vnni";
  static constexpr int kBytes = 64;
  using V = __m512i;

  static V load(const void* p) { return _mm512_loadu_si512(p); }
  static V zero() { return _mm512_setzero_si512(); }
  static V and_(V a, V b) { return _mm512_and_si512(a, b); }
  static V set1_u8(std::uint8_t v) { return _mm512_set1_epi8(char(v)); }
  static V add32(V a, V b) { return _mm512_add_epi32(a, b); }
  static V sub32(V a, V b) { return _mm512_sub_epi32(a, b); }
  static V dot4(V acc, V u8, V s8) { return _mm512_dpbusd_epi32(acc, u8, s8); }

  static constexpr int kSlotShift = 0;
  static constexpr int kGroupVectors = 8;  // int32 group sums: no narrow limit
  struct Slots {
    V s[4];
  };
  static Slots extract(V v) {
    return {{and_(v, set1_u8(0x03)), and_(v, set1_u8(0x0c)), and_(v, set1_u8(0x30)), and_(v, set1_u8(0xc0))}};
  }
  static V slot_dot(const Slots& w, const std::uint8_t* x) {
    V acc = _mm512_dpbusd_epi32(zero(), w.s[3], load(x + 192));
    acc = _mm512_dpbusd_epi32(_mm512_srai_epi32(acc, 2), w.s[2], load(x + 128));
    acc = _mm512_dpbusd_epi32(_mm512_srai_epi32(acc, 2), w.s[1], load(x + 64));
    return _mm512_dpbusd_epi32(_mm512_srai_epi32(acc, 2), w.s[0], load(x));
  }

  static V slot_add(V a, V b) { return add32(a, b); }
  static V slot_widen(V a) { return a; }

  template <int NV>
  static void store_pair_sums(const V* c, std::int32_t* out) {
    for (int j = 0; j < NV; ++j)
      _mm512_store_si512(out + 16 * j, _mm512_add_epi32(c[j], _mm512_shuffle_epi32(c[j], _MM_PERM_CDAB)));
  }
  // Lane 2p (and 2p+1) of accumulator a's store holds pair p; word u covers pairs 2u, 2u+1.
  static int pair_position(int a, int u, int h) { return 16 * a + 4 * u + 2 * h; }

  static std::int32_t reduce_add(V v) { return _mm512_reduce_add_epi32(v); }
  static void reduce_add4(V a, V b, V c, V d, std::int32_t* out) {
    out[0] = reduce_add(a), out[1] = reduce_add(b), out[2] = reduce_add(c), out[3] = reduce_add(d);
  }

  // --- natural 2-bit order: the 256-bit recipe of spec 6.2 in both halves -----------------------
  static V unpack_natural(const std::uint8_t* codes) {
    const V b = _mm512_permutexvar_epi64(_mm512_setr_epi64(0, 0, 0, 0, 1, 1, 1, 1),
                                         _mm512_castsi128_si512(_mm_loadu_si128(reinterpret_cast<const __m128i*>(codes))));
    return and_(_mm512_srlv_epi64(b, _mm512_setr_epi64(0, 2, 4, 6, 0, 2, 4, 6)), set1_u8(3));
  }
  // One 128-weight block against T tokens' activations in unpack order: int32 lanes of sum u * y.
  template <int T>
  static void natural_block(const std::uint8_t* codes, const std::uint8_t* const* y, V* out) {
    for (int t = 0; t < T; ++t) out[t] = zero();
    for (int k = 0; k < 2; ++k) {
      const V c = unpack_natural(codes + 16 * k);
      for (int t = 0; t < T; ++t) out[t] = _mm512_dpbusd_epi32(out[t], c, load(y[t] + 64 * k));
    }
  }

  static float fp16(const std::uint8_t* p) {
    std::uint16_t h;
    __builtin_memcpy(&h, p, 2);
    return _cvtsh_ss(h);
  }
};

}  // namespace ternlab::isa
