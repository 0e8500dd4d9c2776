// Entry points of the aarch64 translation units that instantiate the shared strategies. Each
// appends what its ISA can run on `layout`; callers first check isa_supported().
#pragma once

#include <vector>

#include "kernels/catalog.hpp"

namespace ternlab::detail {

void add_dotprod_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out,
                      std::vector<KernelGap>* gaps = nullptr);

}  // namespace ternlab::detail
