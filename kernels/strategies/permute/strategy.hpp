// The permute strategy (kernels/strategies/permute/kernels.hpp): any valid layout; byte shuffles
// gather each row's codes for dot4. The fallback every target builds.
#pragma once

#include <cstdint>

#include "common/error.hpp"
#include "kernels/strategies/permute/ops.hpp"
#include "kernels/strategies/strategy.hpp"

namespace ternlab::strategies {

template <class P>
concept PermuteOps = IsaPolicy<P> && requires {
  typename PermuteProgram<P>::Acc;  // the policy's own accumulator, or the maddubs build (ops.hpp)
  { PermuteProgram<P>::kAccItems } -> std::convertible_to<int>;
  PermuteProgram<P>::zero();
};

struct PermuteStrategy {
  static constexpr Strategy id = Strategy::permute;
  static bool admits(const LayoutInfo&) { return true; }
  static std::string why_not(const LayoutInfo&) { return ""; }
  static std::string property(const LayoutInfo&) { return ""; }  // it reads any layout: nothing to name
  template <class T>
  static void add(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps);
};

}  // namespace ternlab::strategies
