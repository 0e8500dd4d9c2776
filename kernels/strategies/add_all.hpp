// Every strategy of the typelist instantiated for one target. Include only from a target's compile
// unit, after its target pragma and its policy: each strategy's kernels are compiled for that ISA.
#pragma once

#include <vector>

#include "kernels/strategies/all.hpp"
#include "ternlab_strategy_kernels.hpp"  // every kernels/strategies/*/kernels.hpp (generated)

namespace ternlab::strategies {
namespace {

// Each strategy that reads the layout's property adds its builds for T (or gaps saying why not).
template <class T>
void add_strategies(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  for_each_strategy(AllStrategies{}, [&]<class S>() {
    if (S::admits(L)) S::template add<T>(L, out, gaps);
  });
}

}  // namespace
}  // namespace ternlab::strategies
