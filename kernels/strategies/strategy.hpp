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
//   SlotPolicy (opt.)    the slot program (kernels/strategies/slot_mask/ops.hpp) its int8 dot
//                        suits, over Policy;
//   WidenSlots (opt.)    a slot program without the trick with 4 and 16 (slot-mask-widen's arm);
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

// The policy a target declares for a role (Role<T> names the member: Wide, SlotPolicy), else its
// Policy.
template <class T, template <class> class Role>
struct RolePolicy {
  using type = typename T::Policy;
};
template <class T, template <class> class Role>
  requires requires { typename Role<T>; }
struct RolePolicy<T, Role> {
  using type = Role<T>;
};

// The target's 32-byte policy: Wide where it declares one.
template <class T>
using WideRole = typename T::Wide;
template <class T>
using WidePolicy = typename RolePolicy<T, WideRole>::type;

// The policy slot-mask runs on: SlotPolicy (one of strategies/slot_mask/ops.hpp's slot programs
// over the target's policy), or the policy itself where it carries its own (the portable one).
template <class T>
using SlotRole = typename T::SlotPolicy;
template <class T>
using SlotPolicyOf = typename RolePolicy<T, SlotRole>::type;

}  // namespace ternlab::strategies
