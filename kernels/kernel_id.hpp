// A kernel's identity: the strategy it runs and the ISA it is built for. Both are enums; their
// spellings ("slot-mask/avx2", as the CLI, TOML files and results write them) are made and read
// here and in cpu.hpp only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kernels/cpu.hpp"

namespace ternlab {

enum class Strategy {
  reference,      // the scalar kernel every other one is checked against
  broadcast,      // row-interleaved layouts: one activation dword against 8 or 16 rows
  slot_mask,      // slot-vectorizable layouts: AND per slot, dot4, recombine
  slot_mask_widen,  // the same with each slot shifted down to 0..3 and widened on its own (an experiment arm)
  base3,          // digit-planar base-3 layouts: multiply by 3^n, read the top trit
  unpack,         // natural 2-bit order: PrismML's x86 decode (spec 6.2), tiled gemm
  unpack_vecdot,  // the same with one vec_dot per (row, token) in gemm
  prism_neon,     // PrismML's stock NEON pq2_0 kernel (spec 6.1), a faithful baseline arm
  permute,        // any valid layout: byte shuffles gather each row's codes for dot4 (the fallback)
  portable,       // slot-mask in plain C++ loops, one source built with and without auto-vectorisation
};

// Which strategy best_kernel takes when several run on the same ISA, first preferred.
inline constexpr Strategy kStrategyPreference[] = {Strategy::broadcast,     Strategy::slot_mask, Strategy::base3,
                                                   Strategy::unpack,        Strategy::unpack_vecdot,
                                                   Strategy::prism_neon,    Strategy::permute,
                                                   Strategy::slot_mask_widen, Strategy::portable,
                                                   Strategy::reference};

// Strategies that exist to be compared, not run: default selection (best_kernel) never takes them;
// an experiment arm or a filtered choice names them (kernel = "portable/avx2").
inline constexpr bool named_only(Strategy s) { return s == Strategy::portable; }

// The strategy every valid layout gets (kernels/strategies/permute/kernels.hpp): best_kernel ranks it below
// every other SIMD kernel whatever their ISAs (a layout that admits a richer strategy keeps it),
// above only the reference.
inline constexpr Strategy kFallbackStrategy = Strategy::permute;

std::string_view strategy_name(Strategy strategy);
std::optional<Strategy> strategy_named(std::string_view name);
Strategy parse_strategy(std::string_view name);  // throws ternlab::Error listing the valid names
std::string strategy_names();                      // "reference, broadcast, ..."

// "strategy/isa", e.g. "slot-mask/avx2".
std::string kernel_name(Strategy strategy, Isa isa);
// The suffix that names a broadcast build whose gemv leaves its weight streams to the hardware
// prefetcher (KernelVariant::hardware_prefetch, strategies::Streaming).
inline constexpr std::string_view kHardwarePrefetchSuffix = "+hw-prefetch";

}  // namespace ternlab
