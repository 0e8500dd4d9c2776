// A kernel's identity: the strategy it runs and the ISA it is built for. Both are enums; their
// spellings ("slot-mask/avx2", as the CLI, TOML files and results write them) are made and read
// here and in cpu.hpp only.
#pragma once

#include <optional>
#include <string>
#include <string_view>

#include "kernels/cpu.hpp"

namespace ternlab {

// The reference, then every line of kernels/strategies/strategies.def.
enum class Strategy {
  reference,  // the scalar kernel every other one is checked against
#define TERNLAB_STRATEGY(id, spelling, Descriptor) id,
#define TERNLAB_STRATEGY_BUILD(id, spelling) id,
#include "kernels/strategies/strategies.def"
#undef TERNLAB_STRATEGY
#undef TERNLAB_STRATEGY_BUILD
};

// Which strategy best_kernel takes when several run on the same ISA, first preferred: the order of
// strategies.def, the reference last.
inline constexpr Strategy kStrategyPreference[] = {
#define TERNLAB_STRATEGY(id, spelling, Descriptor) Strategy::id,
#define TERNLAB_STRATEGY_BUILD(id, spelling) Strategy::id,
#include "kernels/strategies/strategies.def"
#undef TERNLAB_STRATEGY
#undef TERNLAB_STRATEGY_BUILD
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
