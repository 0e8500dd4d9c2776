// What a strategy is to the rest of ternlab: a descriptor in kernels/strategies/<name>/strategy.hpp
// naming its Strategy, the layout property it reads (admits / why_not, in words), and
// `template <class Target> add(layout, out, gaps)`, defined beside its kernels
// (kernels/strategies/<name>/kernels.hpp) and instantiated by each target's compile unit through
// one typelist (kernels/strategies/all.hpp). No other file names the strategy x ISA matrix.
//
// A Target (the traits a target's compile unit declares) names its ISA and its policies:
//   kIsa                 the Isa its kernels are named for;
//   Policy               its vector-width policy (kernels/targets/<isa>/policy.hpp);
//   Wide (optional)      a 32-byte policy where Policy is narrower (NEON's register pairs);
//   WidenSlots (opt.)    Policy without the trick with 4 and 16 (slot-mask-widen's arm);
// and, for builds a target adds beyond the shared templates, hooks its strategy names.
#pragma once

#include <concepts>
#include <string>
#include <vector>

#include "kernels/catalog.hpp"
#include "kernels/targets/isa_policy.hpp"

namespace ternlab::strategies {

template <class S>
concept StrategyDescriptor = requires(const LayoutInfo& layout) {
  { S::id } -> std::convertible_to<Strategy>;
  { S::admits(layout) } -> std::same_as<bool>;
  { S::why_not(layout) } -> std::convertible_to<std::string>;
  { S::property(layout) } -> std::convertible_to<std::string>;  // what it recognised, for `ternlab layouts`
};

template <StrategyDescriptor... S>
struct StrategyList {};

// The target's 32-byte policy: Wide where it declares one, else Policy.
template <class T>
struct wide_policy {
  using type = typename T::Policy;
};
template <class T>
  requires requires { typename T::Wide; }
struct wide_policy<T> {
  using type = typename T::Wide;
};
template <class T>
using WidePolicy = typename wide_policy<T>::type;

}  // namespace ternlab::strategies
