// What bounds a gemm on AMX tiles when every 128 weights of a row carry their own scale: the tile
// gemm (kernels/strategies/broadcast/tile_gemm.hpp) must take each C tile out of the tile unit
// after the two dots of one block, where the int8 ceiling's loop (int8_compute_ceiling's
// "tdpbusd tile") never stores, and must turn each block's int32 sums into floats on the vector
// units. This times the tile gemm's own sequence of tile instructions, adding one kind of
// instruction at a time (the rows), alone and beside a block's worth of other work (the columns):
//
//   alone                  the tile instructions only;
//   + float end apart      the tile gemm's float end for 64 tokens (sums converted, times scales
//                          times d, added to accumulators in memory), reading sums in L1 that no
//                          tile store writes: no dependency on the tile unit;
//   + float end of stored  the same reading the sums the tile stores wrote the block before, as
//                          the tile gemm does;
//   + ymm float end apart  the first in 256-bit halves (other ports than 512-bit operations);
//   + zmm alu only         four 512-bit ops a token on registers, no memory operand;
//   + scalar alu only      integer ops on general registers, no vector work.
//
// in cycles a block and GMAC/s. If the units worked side by side a row's columns would cost the
// larger of "alone" and the "no tile instructions" row; on the Xeon guest of
// docs/notebook/2026-12-06-xeon-tile-bounds.md they cost about the sum. The clock is
// core_clock.hpp's. Needs AMX-INT8 and a kernel that grants the tiles; not part of the build:
//
//   g++ -O2 -std=c++20 -I. -o /tmp/tile_bounds tools/mca/tile_bounds.cpp && /tmp/tile_bounds
//
// A block (one 16-row unit x 128 weights against 64 tokens, as the tile gemm's pass of one unit):
// B tiles 6 and 7 (the block's two halves, s8 weights), C tiles 0-3 (four groups of 16 tokens),
// two tdpbssd a C tile, A tiles 4 and 5 taken in turn. The "8 dots" row beside the float end is a
// bound for any tile gemm of a format with a scale every 128 weights: both are work it cannot
// leave out, and on a core where they do not overlap their sum is its least time.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <utility>
#include <vector>

#include <immintrin.h>

#include "kernels/targets/avx512vnni/amx_tiles.hpp"
#include "tools/mca/core_clock.hpp"

namespace {

using T = ternlab::isa::AmxTiles;

// What a block's loop holds beyond the eight tile dots; each level adds to the one before, but
// for the last, whose A tiles come from 8 KiB instead (one block's: L1).
enum Level { kNone, kDots, kZero, kStore, kLoadB, kLoadA, kLoadAL1, kLevels };
constexpr const char* kNames[kLevels] = {
    "no tile instructions",
    "8 dots into 4 C tiles (no loads, no stores)",
    "+ 4 tile zeros (a C tile starts each block)",
    "+ 4 tile stores (a C tile leaves each block)",
    "+ 2 B tile loads from L1 (the block's slots)",
    "+ 8 A tile loads from 320 KiB (64 tokens x 5120)",
    "  the same A tiles from 8 KiB (one block's)",
};
// What runs beside them (the header's columns).
enum End { kNoEnd, kEndApart, kEndStored, kEndYmm, kEndAlu, kScalar, kEnds };
constexpr const char* kEndNames[kEnds] = {"alone",         "+ float end apart", "+ float end of stored", "+ ymm float end apart",
                                          "+ zmm alu only", "+ scalar alu only"};

// A block's float end as the tile gemm's, for 64 tokens: each token's 16 sums (of s8 weights:
// nothing to take off) converted, times the rows' scales times its d, added to its accumulator (in
// memory: 64 do not fit the registers).
[[gnu::target("avx512f"), gnu::always_inline]] inline void float_end(const std::int32_t (*sums)[16][16], __m512* acc,
                                                                      const float* d, __m512 scales) {
  for (int q = 0; q < 4; ++q)
    for (int m = 0; m < 16; ++m)
      acc[16 * q + m] = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_load_si512(sums[q][m])),
                                        _mm512_mul_ps(scales, _mm512_set1_ps(d[16 * q + m])), acc[16 * q + m]);
}

// The same in 256-bit halves.
[[gnu::target("avx2,fma"), gnu::always_inline]] inline void float_end_ymm(const std::int32_t (*sums)[16][16], __m256* acc,
                                                                          const float* d, __m256 scales) {
  for (int q = 0; q < 4; ++q)
    for (int m = 0; m < 16; ++m)
      for (int h = 0; h < 2; ++h) {
        const __m256i s = _mm256_load_si256(reinterpret_cast<const __m256i*>(sums[q][m] + 8 * h));
        acc[2 * (16 * q + m) + h] = _mm256_fmadd_ps(_mm256_cvtepi32_ps(s), _mm256_mul_ps(scales, _mm256_set1_ps(d[16 * q + m])),
                                                    acc[2 * (16 * q + m) + h]);
      }
}
// Four vector ops a token with no memory operand: 16 independent chains.
[[gnu::target("avx512f"), gnu::always_inline]] inline void alu_only(__m512* r) {
  for (int m = 0; m < 64; ++m) {
    __m512& a = r[m % 16];
    a = _mm512_fmadd_ps(_mm512_cvtepi32_ps(_mm512_sub_epi32(_mm512_castps_si512(a), _mm512_set1_epi32(1))), a, a);
    a = _mm512_mul_ps(a, a);
  }
}

// Eight chains of rotate, add and xor on general registers (768 ops), kept by the asm barrier.
[[gnu::always_inline]] inline void scalar_only(std::uint64_t* x) {
  for (int k = 0; k < 32; ++k)
    for (int c = 0; c < 8; ++c) {
      x[c] = ((x[c] << 7) | (x[c] >> 57)) ^ (x[c] + 0x9e3779b97f4a7c15ull);
      __asm__ volatile("" : "+r"(x[c]));
    }
}

template <int L, int E>
[[gnu::noinline, gnu::target("avx512f,fma")]] double run(long blocks, const std::uint8_t* acts, std::int64_t act_blocks,
                                                     const std::uint8_t* slots, std::int32_t (*sums)[16][16]) {
  alignas(64) static std::int32_t apart[4][16][16];
  alignas(64) static __m512 acc[64];
  alignas(64) static __m256 acc_ymm[128];
  __m512 regs[16];
  for (__m512& r : regs) r = _mm512_setzero_ps();
  std::uint64_t gprs[8] = {1, 2, 3, 4, 5, 6, 7, 8};
  alignas(64) static float d[64];
  static std::uint64_t gpr_sink;
  const __m512 scales = _mm512_set1_ps(1.0f);
  T::configure();
  T::load<4>(acts, 128);
  T::load<5>(acts, 128);
  T::load<6>(slots, 64);
  T::load<7>(slots, 64);
  const double t = now_seconds();
  for (long i = 0; i < blocks; ++i) {
    const std::uint8_t* xa = acts + (L == kLoadAL1 ? 0 : (i % act_blocks) * 64 * 128);
    if constexpr (L >= kLoadB) {
      T::load<6>(slots + (i % 2) * 2048, 64);
      T::load<7>(slots + (i % 2) * 2048 + 1024, 64);
    }
    if constexpr (L >= kZero) {
      T::zero<0>();
      T::zero<1>();
      T::zero<2>();
      T::zero<3>();
    }
    // Half by half across the groups, as the tile gemm: consecutive dots feed different C tiles.
    if constexpr (L >= kLoadA) T::load<4>(xa, 128);
    if constexpr (L >= kDots) T::dot_ss<0, 4, 6>();
    if constexpr (L >= kLoadA) T::load<5>(xa + 16 * 128, 128);
    if constexpr (L >= kDots) T::dot_ss<1, 5, 6>();
    if constexpr (L >= kLoadA) T::load<4>(xa + 32 * 128, 128);
    if constexpr (L >= kDots) T::dot_ss<2, 4, 6>();
    if constexpr (L >= kLoadA) T::load<5>(xa + 48 * 128, 128);
    if constexpr (L >= kDots) T::dot_ss<3, 5, 6>();
    if constexpr (L >= kLoadA) T::load<4>(xa + 64, 128);
    if constexpr (L >= kDots) T::dot_ss<0, 4, 7>();
    if constexpr (L >= kLoadA) T::load<5>(xa + 16 * 128 + 64, 128);
    if constexpr (L >= kDots) T::dot_ss<1, 5, 7>();
    if constexpr (L >= kLoadA) T::load<4>(xa + 32 * 128 + 64, 128);
    if constexpr (L >= kDots) T::dot_ss<2, 4, 7>();
    if constexpr (L >= kLoadA) T::load<5>(xa + 48 * 128 + 64, 128);
    if constexpr (L >= kDots) T::dot_ss<3, 5, 7>();
    if constexpr (E == kEndApart) float_end(apart, acc, d, scales);
    if constexpr (E == kEndStored) float_end(sums + 4 * ((i + 1) % 2), acc, d, scales);
    if constexpr (E == kEndYmm) float_end_ymm(apart, acc_ymm, d, _mm256_set1_ps(1.0f));
    if constexpr (E == kEndAlu) alu_only(regs);
    if constexpr (E == kScalar) scalar_only(gprs);
    if constexpr (L >= kStore) {
      T::store<0>(sums[4 * (i % 2) + 0], 64);
      T::store<1>(sums[4 * (i % 2) + 1], 64);
      T::store<2>(sums[4 * (i % 2) + 2], 64);
      T::store<3>(sums[4 * (i % 2) + 3], 64);
    }
  }
  const double s = now_seconds() - t;
  T::store<0>(sums[0], 64);
  T::release();
  for (const __m512& r : regs) acc[0] = _mm512_add_ps(acc[0], r);
  for (const std::uint64_t g : gprs) gpr_sink += g;
  return s;
}

}  // namespace

int main() {
  // Linux hands out the tile state on request only (ARCH_REQ_XCOMP_PERM, XTILEDATA).
  if (syscall(SYS_arch_prctl, 0x1023, 18) != 0) {
    std::puts("the kernel did not grant the AMX tile state (no AMX, or Linux before 5.16)");
    return 1;
  }
  const double cycle = seconds_per_cycle();
  std::printf("core clock %.2f GHz (dependent multiplies)\n\n", 1e-9 / cycle);
  constexpr std::int64_t kActBlocks = 40;  // 5120 columns: 40 blocks x 64 tokens x 128 bytes
  // 64-byte aligned, as the kernels' scratch: a tile row across two cache lines costs several times
  // the loads.
  struct alignas(64) Line {
    std::uint8_t b[64];
  };
  std::vector<Line> act_lines(std::size_t(kActBlocks) * 64 * 2 + 1), slot_lines(64);
  for (Line& l : act_lines) std::memset(l.b, 1, 64);
  for (Line& l : slot_lines) std::memset(l.b, 1, 64);
  const std::uint8_t* acts = act_lines[0].b;
  const std::uint8_t* slots = slot_lines[0].b;
  alignas(64) static std::int32_t sums[8][16][16];
  constexpr long kBlocks = 1'000'000;
  constexpr double kBlockMacs = 16.0 * 128 * 64;
  using Fn = double (*)(long, const std::uint8_t*, std::int64_t, const std::uint8_t*, std::int32_t(*)[16][16]);
  const auto row = [&]<int L>(std::integral_constant<int, L>) {
    const Fn fns[kEnds] = {&run<L, kNoEnd>, &run<L, kEndApart>, &run<L, kEndStored>, &run<L, kEndYmm>, &run<L, kEndAlu>, &run<L, kScalar>};
    std::printf("%-50s", kNames[L]);
    for (int e = 0; e < kEnds; ++e) {
      if (L == kNone && e == kNoEnd) {
        std::printf("  %14s %6s", "-", "-");
        continue;
      }
      const double s = fns[e](kBlocks, acts, kActBlocks, slots, sums);
      std::printf("  %14.1f %6.0f", s / cycle / kBlocks, kBlocks * kBlockMacs / s * 1e-9);
    }
    std::printf("\n");
  };
  std::printf("cycles a block (16 rows x 128 weights x 64 tokens: 8 tile dots) and GMAC/s\n");
  std::printf("%-50s", "a block's tile instructions");
  for (const char* e : kEndNames) std::printf("  %21s", e);
  std::printf("\n");
  for (int round = 0; round < 3; ++round)
    [&]<int... L>(std::integer_sequence<int, L...>) {
      (row(std::integral_constant<int, L>{}), ...);
    }(std::make_integer_sequence<int, kLevels>{});
  return int(sums[0][0][0] == 12345);
}
