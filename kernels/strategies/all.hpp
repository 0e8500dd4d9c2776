// The one list of strategies, made from kernels/strategies/strategies.def. A target's compile unit
// instantiates every entry with its policies (add_strategies, kernels/strategies/add_all.hpp); the
// catalog asks each which layouts it reads. A new strategy is its folder kernels/strategies/<name>/
// and its line in strategies.def (cmake/strategies.cmake finds the folder's headers).
#pragma once

#include <cstddef>

#include "kernels/strategies/strategy.hpp"
#include "ternlab_strategies.hpp"  // every kernels/strategies/*/strategy.hpp (generated)

namespace ternlab::strategies {

namespace typelist {
template <class... S>
StrategyList<S...> list_of(std::nullptr_t, S*...);
}  // namespace typelist

// In strategies.def's order, which is also dispatch's preference (kStrategyPreference).
using AllStrategies = decltype(typelist::list_of(nullptr
#define TERNLAB_STRATEGY(id, spelling, Descriptor) , static_cast<Descriptor*>(nullptr)
#define TERNLAB_STRATEGY_BUILD(id, spelling)
#include "kernels/strategies/strategies.def"
#undef TERNLAB_STRATEGY
#undef TERNLAB_STRATEGY_BUILD
                                               ));

// Each descriptor is the strategy its line names.
#define TERNLAB_STRATEGY(name, spelling, Descriptor) \
  static_assert(Descriptor::id == Strategy::name, "strategies.def: " #Descriptor " is not Strategy::" #name);
#define TERNLAB_STRATEGY_BUILD(id, spelling)
#include "kernels/strategies/strategies.def"
#undef TERNLAB_STRATEGY
#undef TERNLAB_STRATEGY_BUILD

// Calls f.template operator()<S>() for every S of the list, in order.
template <class F, class... S>
void for_each_strategy(StrategyList<S...>, F&& f) {
  (f.template operator()<S>(), ...);
}

}  // namespace ternlab::strategies
