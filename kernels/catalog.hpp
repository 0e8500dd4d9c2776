// Which kernels can run a layout on this machine: the reference kernel always, plus every SIMD
// strategy x ISA whose layout property and CPU features are present. The oracle tests, the
// quickstart and benchmarks iterate this list, so a new strategy is checked the moment it is listed.
#pragma once

#include <string>
#include <vector>

#include "kernels/kernel.hpp"

namespace ternlab {

struct KernelVariant {
  std::string strategy;  // "reference", "slot-mask", "unpack", "base3"
  std::string isa;       // "scalar", "avx2", "avx512vnni", "neon", "dotprod", "i8mm"
  GemvFn gemv = nullptr;
  GemmFn gemm = nullptr;
  std::string name() const { return strategy + "/" + isa; }
};

std::vector<KernelVariant> kernels_for(const LayoutInfo& layout);

}  // namespace ternlab
