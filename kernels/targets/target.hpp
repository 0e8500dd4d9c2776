// A target: one ISA's compile of the kernels, living in its own folder kernels/targets/<folder>/
// (its policy, its compile units, its peer kernels and target.cmake, which names the units to the
// build). Each folder's compile unit defines its Target; kernels/targets/targets.def lists them in
// one line each, and the catalog, dispatch and the tests iterate that one table, so a new ISA is a
// new folder and a line.
#pragma once

#include <span>
#include <string_view>
#include <vector>

#include "kernels/catalog.hpp"

namespace ternlab {

struct Target {
  std::string_view folder;  // kernels/targets/<folder>
  Isa isa;                  // the ISA its kernels are named for (several targets may share one)
  // Whether this CPU runs the unit's code: its ISA and any further feature it was compiled for.
  bool (*runs_here)();
  // Appends the kernels it builds for `layout`; where a strategy that reads the layout's property
  // refuses it, a gap in the strategy's words (when `gaps` is set).
  void (*add_kernels)(const LayoutInfo& layout, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps);
};

// Every target of this build, in targets.def's order (the catalog lists kernels in it).
std::span<const Target* const> all_targets();

}  // namespace ternlab

// Defines the target `name` that targets.def lists (declared extern first, so it is visible to the
// table's unit): TERNLAB_DEFINE_TARGET(avx2, {"avx2", Isa::avx2, &runs_here, &add_kernels}).
#define TERNLAB_DEFINE_TARGET(name, ...)  \
  namespace ternlab::targets {            \
  extern const Target name;               \
  const Target name __VA_ARGS__;          \
  }
