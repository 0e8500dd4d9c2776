// AMX tile operations, as the broadcast strategy's tile gemm reads them
// (kernels/strategies/broadcast/tile_gemm.hpp): eight tiles of 16 rows x 64 bytes, loaded from and
// stored to memory with a row stride, and the tile dots, which add to each int32 of a C tile the
// dot of an A row's four bytes with a B column's four bytes, over all 64 bytes of the row:
//
//   C[m][n] += sum over k < 64 of A[m][k] * B[k / 4][4 n + k % 4]      (exact int32)
//
// with A s8 and B u8 (tdpbsud, dot_su: the int8 ceiling's loop) or both s8 (tdpbssd, dot_ss: the
// gemm, whose B holds the weights themselves).
//
// AmxTiles issues the instructions (inline assembly: the tile numbers are template arguments, and
// GCC 12's intrinsics take them only as literals); EmulatedTiles computes the same in plain loops on
// per-thread arrays, so the test suite runs the tile gemm's every index and stride on any CPU.
// Include from kernels/targets/avx512vnni/gfni_kernels.cpp only (and tools/mca/tile_bounds.cpp,
// which times the tile gemm's instructions by hand).
#pragma once

#include <cstdint>
#include <cstring>

namespace ternlab::isa {

inline constexpr int kTiles = 8, kTileRows = 16, kTileBytes = 64;

#if !defined(TERNLAB_AVX512_EMULATED)
struct AmxTiles {
  // The catalog's name of the build that runs the tile gemm (KernelVariant::name), which its
  // refusals quote.
  static constexpr const char* name = "avx512vnni+gfni+amx";
  // Palette 1, every tile 16 rows of 64 bytes. The configuration is per thread: a gemm call loads
  // it first and releases the tiles last (an idle thread then saves no tile state when switched).
  struct alignas(64) Config {
    std::uint8_t palette = 1, start_row = 0, reserved[14] = {};
    std::uint16_t bytes_per_row[16] = {};
    std::uint8_t rows[16] = {};
  };
  static void configure() {
    Config c;
    for (int t = 0; t < kTiles; ++t) {
      c.bytes_per_row[t] = kTileBytes;
      c.rows[t] = kTileRows;
    }
    __asm__ volatile("ldtilecfg %0" : : "m"(c));
  }
  static void release() { __asm__ volatile("tilerelease" ::: "memory"); }
  template <int T>
  static void zero() {
    __asm__ volatile("tilezero %%tmm%c0" : : "i"(T));
  }
  template <int T>
  static void load(const void* p, std::int64_t stride) {
    __asm__ volatile("tileloadd (%0,%1,1), %%tmm%c2" : : "r"(p), "r"(stride), "i"(T) : "memory");
  }
  template <int T>
  static void store(void* p, std::int64_t stride) {
    __asm__ volatile("tilestored %%tmm%c2, (%0,%1,1)" : : "r"(p), "r"(stride), "i"(T) : "memory");
  }
  // C += A (s8) x B (u8).
  template <int C, int A, int B>
  static void dot_su() {
    __asm__ volatile("tdpbsud %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(C), "i"(A), "i"(B));
  }
  // C += A (s8) x B (s8).
  template <int C, int A, int B>
  static void dot_ss() {
    __asm__ volatile("tdpbssd %%tmm%c2, %%tmm%c1, %%tmm%c0" : : "i"(C), "i"(A), "i"(B));
  }
};
#endif

struct EmulatedTiles {
  static constexpr const char* name = "avx512vnni+gfni+amx-simde";
  struct State {
    alignas(64) std::uint8_t tile[kTiles][kTileRows][kTileBytes];
  };
  static State& state() {
    thread_local State s;
    return s;
  }
  static void configure() { std::memset(&state(), 0, sizeof(State)); }
  static void release() {}
  template <int T>
  static void zero() {
    std::memset(state().tile[T], 0, sizeof(state().tile[T]));
  }
  template <int T>
  static void load(const void* p, std::int64_t stride) {
    for (int r = 0; r < kTileRows; ++r) std::memcpy(state().tile[T][r], static_cast<const std::uint8_t*>(p) + r * stride, kTileBytes);
  }
  template <int T>
  static void store(void* p, std::int64_t stride) {
    for (int r = 0; r < kTileRows; ++r) std::memcpy(static_cast<std::uint8_t*>(p) + r * stride, state().tile[T][r], kTileBytes);
  }
  template <int C, int A, int B>
  static void dot_su() {
    dot<C, A, B, std::uint8_t>();
  }
  template <int C, int A, int B>
  static void dot_ss() {
    dot<C, A, B, std::int8_t>();
  }
  // B's bytes read as BByte.
  template <int C, int A, int B, class BByte>
  static void dot() {
    State& s = state();
    for (int m = 0; m < kTileRows; ++m)
      for (int n = 0; n < kTileBytes / 4; ++n) {
        std::int32_t c;
        std::memcpy(&c, s.tile[C][m] + 4 * n, 4);
        for (int k = 0; k < kTileBytes; ++k)
          c += std::int32_t(static_cast<std::int8_t>(s.tile[A][m][k])) * std::int32_t(static_cast<BByte>(s.tile[B][k / 4][4 * n + k % 4]));
        std::memcpy(s.tile[C][m] + 4 * n, &c, 4);
      }
  }
};

}  // namespace ternlab::isa
