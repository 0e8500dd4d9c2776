// What bounds a gemm on AMX tiles when every 128 weights of a row carry their own scale: the tile
// gemm (kernels/strategies/broadcast/tile_gemm.hpp) must take each C tile out of the tile unit
// after the two dots of one block, where the int8 ceiling's loop (int8_compute_ceiling's
// "tdpbusd tile") never stores. This times the tile gemm's own sequence of tile instructions with
// nothing else in the loop, adding one kind of instruction at a time, in cycles per tile dot and
// GMAC/s, so that the vector work of a kernel (unpacking, the float end) can be read against what
// the tile unit alone allows. The clock is core_clock.hpp's. Needs AMX-INT8 and a kernel that
// grants the tiles; not part of the build:
//
//   g++ -O2 -std=c++20 -I. -o /tmp/tile_bounds tools/mca/tile_bounds.cpp && /tmp/tile_bounds
//
// A block (one 16-row unit x 128 weights against 64 tokens, as the tile gemm's pass): B tiles 6
// and 7 (the block's two halves), C tiles 0-3 (four groups of 16 tokens), two dots a C tile, A
// tiles 4 and 5 taken in turn.
#include <sys/syscall.h>
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <vector>

#include "kernels/targets/avx512vnni/amx_tiles.hpp"
#include "tools/mca/core_clock.hpp"

namespace {

using T = ternlab::isa::AmxTiles;

// What a block's loop holds beyond the eight tile dots; each level adds to the one before, but
// for the last, whose A tiles come from 8 KiB instead (one block's: L1).
enum Level { kDots, kZero, kStore, kLoadB, kLoadA, kLoadAL1, kLevels };
constexpr const char* kNames[kLevels] = {
    "8 dots into 4 C tiles (no loads, no stores)",
    "+ 4 tile zeros (a C tile starts each block)",
    "+ 4 tile stores (a C tile leaves each block)",
    "+ 2 B tile loads from L1 (the block's slots)",
    "+ 8 A tile loads from 320 KiB (64 tokens x 5120)",
    "  the same A tiles from 8 KiB (one block's)",
};

template <int L>
[[gnu::noinline]] double run(long blocks, const std::uint8_t* acts, std::int64_t act_blocks, const std::uint8_t* slots,
                             std::int32_t (*sums)[16][16]) {
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
    T::dot_su<0, 4, 6>();
    if constexpr (L >= kLoadA) T::load<5>(xa + 16 * 128, 128);
    T::dot_su<1, 5, 6>();
    if constexpr (L >= kLoadA) T::load<4>(xa + 32 * 128, 128);
    T::dot_su<2, 4, 6>();
    if constexpr (L >= kLoadA) T::load<5>(xa + 48 * 128, 128);
    T::dot_su<3, 5, 6>();
    if constexpr (L >= kLoadA) T::load<4>(xa + 64, 128);
    T::dot_su<0, 4, 7>();
    if constexpr (L >= kLoadA) T::load<5>(xa + 16 * 128 + 64, 128);
    T::dot_su<1, 5, 7>();
    if constexpr (L >= kLoadA) T::load<4>(xa + 32 * 128 + 64, 128);
    T::dot_su<2, 4, 7>();
    if constexpr (L >= kLoadA) T::load<5>(xa + 48 * 128 + 64, 128);
    T::dot_su<3, 5, 7>();
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
  constexpr long kBlocks = 2'000'000;
  using Fn = double (*)(long, const std::uint8_t*, std::int64_t, const std::uint8_t*, std::int32_t(*)[16][16]);
  const Fn fns[kLevels] = {&run<kDots>, &run<kZero>, &run<kStore>, &run<kLoadB>, &run<kLoadA>, &run<kLoadAL1>};
  std::printf("%-50s  %14s  %8s\n", "a block's tile instructions", "cycles a dot", "GMAC/s");
  for (int round = 0; round < 3; ++round)
    for (int l = 0; l < kLevels; ++l) {
      const double s = fns[l](kBlocks, acts, kActBlocks, slots, sums);
      const double dots = 8.0 * kBlocks;
      std::printf("%-50s  %14.1f  %8.0f\n", kNames[l], s / cycle / dots, dots * 16384 / s * 1e-9);
    }
  return int(sums[0][0][0] == 12345);
}
