// Which kernels can run a layout on this machine: the reference kernel always, plus every SIMD
// strategy x ISA whose layout property and CPU features are present. The oracle tests, the
// quickstart and benchmarks iterate this list, so a new strategy is checked the moment it is listed.
#pragma once

#include <string>
#include <vector>

#include "kernels/kernel.hpp"
#include "kernels/kernel_id.hpp"

namespace ternlab {

struct KernelVariant {
  Strategy strategy = Strategy::reference;
  Isa isa = Isa::scalar;
  GemvFn gemv = nullptr;
  GemmFn gemm = nullptr;
  GemvPhases phases{};  // set where the gemv's activations are prepared once per call (run_gemv)
  bool emulated = false;  // the ISA's kernels built through SIMDe (tests only): named "isa-simde"
  bool gfni = false;      // the build that also uses GFNI (kernels/targets/avx512vnni/gfni_kernels.cpp): "isa+gfni"
  bool amx = false;       // the GFNI build with its gemm on AMX tiles (gfni_kernels.cpp): "isa+gfni+amx"
  // The build whose gemv has no software prefetches, its weights streamed by the hardware
  // prefetcher alone (strategies::Streaming): "isa+hw-prefetch".
  bool hardware_prefetch = false;
  // A slot-mask build whose plan has no fold shortcut at its width (SlotVectorPlan::fold_words,
  // fold_pair_words and fold_halves false): each row's pair sums are gathered across the vector's lanes every block.
  // What dispatch's rule for CPUs that split 512-bit ops reads.
  bool gathers_rows = false;
  std::string name() const {
    return kernel_name(strategy, isa) + (gfni ? "+gfni" : "") + (amx ? "+amx" : "") + (emulated ? "-simde" : "") +
           std::string(hardware_prefetch ? kHardwarePrefetchSuffix : "");
  }
};

std::vector<KernelVariant> kernels_for(const LayoutInfo& layout);

// The strategies whose layout property `layout` has (kernels/strategies/all.hpp), in the list's
// order; permute, the fallback, reads every layout. The reference kernel is not among them: it
// runs every layout everywhere.
std::vector<Strategy> admitted_strategies(const LayoutInfo& layout);
// What each strategy recognises in the layout ("slot-vectorizable(row-pairs)", "row-interleaved"),
// then the properties of its geometry (LayoutInfo::properties), for `ternlab layouts`.
std::vector<std::string> layout_properties(const LayoutInfo& layout);

// A strategy that the layout's properties admit, on an ISA this CPU runs, whose plan refused the
// layout at that ISA's width (t2w3's 96-byte payload is no whole number of 64-byte vectors).
struct KernelGap {
  Strategy strategy;
  Isa isa;
  std::string why;
};
std::vector<KernelGap> kernel_gaps(const LayoutInfo& layout);

// Why kernels_for lists no `strategy` build on `isa` for `layout` ("" when it lists one), in the
// strategies' own words: the CPU lacks the ISA, the layout lacks the property the strategy reads,
// its scales, or the strategy's plan refused the layout at that ISA's width. What the tests expect
// of any layout, so a valid layout they have never seen needs no second model of admissibility.
std::string kernel_why_not(const LayoutInfo& layout, Strategy strategy, Isa isa);

// Why `strategy` cannot read `layout`'s scales ("" when it can): every SIMD strategy takes one
// scale per row per 128-weight block, and slot-mask's builds also a block of several 128-weight
// chunks under one scale per row (chunked_block_scales, kernels/strategies/slot_mask/plan.hpp). The one gate of
// the catalog and of the tests' emulated kernels.
std::string scales_why_not(Strategy strategy, const LayoutInfo& layout);

namespace detail {
// Lists the kernel when its plan accepted the layout (`why` empty), else records the gap.
inline void add_or_note(std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps, Strategy strategy, Isa isa,
                        const std::string& why, const KernelFns& k) {
  if (why.empty())
    out.push_back({strategy, isa, k.gemv, k.gemm, k.phases});
  else if (gaps)
    gaps->push_back({strategy, isa, why});
}
}  // namespace detail

}  // namespace ternlab
