// The one list of strategies. A target's compile unit instantiates every entry with its policies
// (add_strategies, kernels/strategies/add_all.hpp); the catalog asks each which layouts it reads.
// A new strategy is its folder kernels/strategies/<name>/ and one entry here.
#pragma once

#include <vector>

#include "kernels/strategies/base3/strategy.hpp"
#include "kernels/strategies/broadcast/strategy.hpp"
#include "kernels/strategies/permute/strategy.hpp"
#include "kernels/strategies/slot_mask/strategy.hpp"
#include "kernels/strategies/unpack/strategy.hpp"

namespace ternlab::strategies {

// In listing order; dispatch ranks by kStrategyPreference (kernels/kernel_id.hpp), not by this.
using AllStrategies = StrategyList<BroadcastStrategy, SlotMaskStrategy, UnpackStrategy, Base3Strategy, PermuteStrategy>;

// Calls f.template operator()<S>() for every S of the list, in order.
template <class F, class... S>
void for_each_strategy(StrategyList<S...>, F&& f) {
  (f.template operator()<S>(), ...);
}

}  // namespace ternlab::strategies
