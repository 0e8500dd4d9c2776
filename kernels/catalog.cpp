#include "kernels/catalog.hpp"

#include <ranges>
#include <utility>

#include <range/v3/view/map.hpp>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/cpu.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"
#include "kernels/strategies/all.hpp"
#include "kernels/targets/target.hpp"

namespace ternlab {

namespace {
constexpr std::pair<Strategy, std::string_view> kStrategyNames[] = {
    {Strategy::reference, "reference"},
#define TERNLAB_STRATEGY(id, spelling, Descriptor) {Strategy::id, spelling},
#define TERNLAB_STRATEGY_BUILD(id, spelling) {Strategy::id, spelling},
#include "kernels/strategies/strategies.def"
#undef TERNLAB_STRATEGY
#undef TERNLAB_STRATEGY_BUILD
};
}  // namespace

std::string_view strategy_name(Strategy strategy) {
  for (const auto& [s, n] : kStrategyNames)
    if (s == strategy) return n;
  return "?";
}

std::optional<Strategy> strategy_named(std::string_view name) {
  for (const auto& [s, n] : kStrategyNames)
    if (n == name) return s;
  return std::nullopt;
}

std::string strategy_names() { return join(kStrategyNames | ranges::views::values); }

Strategy parse_strategy(std::string_view name) {
  if (const auto s = strategy_named(name)) return *s;
  fail("unknown kernel strategy '", name, "' (known: ", strategy_names(), ")");
}

std::string kernel_name(Strategy strategy, Isa isa) { return cat(strategy_name(strategy), "/", isa_name(isa)); }

std::string scales_why_not(Strategy strategy, const LayoutInfo& layout) {
  if (strategy == Strategy::reference || layout.block_scales_128()) return "";
  const bool chunks = strategy == Strategy::slot_mask || strategy == Strategy::slot_mask_widen || strategy == Strategy::portable;
  if (chunks && chunked_block_scales(layout)) return "";
  const std::string why = layout.block_scales_why_not();
  if (!chunked_block_scales(layout)) return why;
  return chunk_scale_groups(layout) == 1
             ? cat(why, "; only slot-mask runs a block as 128-weight chunks under one scale")
             : cat(why, "; only slot-mask keeps the ", layout.scale_group(), "-weight scale groups of a 128-weight chunk apart");
}

namespace {
std::vector<KernelVariant> collect(const LayoutInfo& layout, std::vector<KernelGap>* gaps) {
  std::vector<KernelVariant> v{KernelVariant{Strategy::reference, Isa::scalar, &gemv_reference, &gemm_reference}};
  // The SIMD strategies read one scale per row per 128-weight block from the block itself; a block
  // of whole 128-weight chunks under one scale per row, or of chunks split evenly into scale groups
  // (chunked_block_scales), runs the slot-mask strategy only, a chunk at a time. Wider or uneven
  // scale groups or a per-tensor scale run the reference kernel only, whatever the layout's byte
  // order would admit.
  if (!layout.block_scales_128() && !chunked_block_scales(layout)) {
    const std::string why = layout.block_scales_why_not();
    if (gaps)
      for (const Strategy s : admitted_strategies(layout)) gaps->push_back({s, best_isa(), why});
    return v;
  }
  // Every target this CPU runs, in targets.def's order; each adds what its strategies admit.
  const std::size_t first_gap = gaps ? gaps->size() : 0;
  for (const Target* t : all_targets())
    if (t->runs_here()) t->add_kernels(layout, v, gaps);
  if (!layout.block_scales_128()) {
    // A chunked block: the strategies that read it stay, the others become gaps with the reason;
    // where a strategy that cannot read the scales also declined for another reason, the scales
    // are the one that matters.
    if (gaps)
      for (std::size_t i = first_gap; i < gaps->size(); ++i)
        if (std::string why = scales_why_not((*gaps)[i].strategy, layout); !why.empty()) (*gaps)[i].why = std::move(why);
    std::vector<KernelVariant> kept;
    for (KernelVariant& k : v)
      if (const std::string why = scales_why_not(k.strategy, layout); why.empty())
        kept.push_back(std::move(k));
      else if (gaps)
        gaps->push_back({k.strategy, k.isa, why});
    return kept;
  }
  return v;
}
}  // namespace

std::vector<KernelVariant> kernels_for(const LayoutInfo& layout) { return collect(layout, nullptr); }

std::vector<std::string> layout_properties(const LayoutInfo& layout) {
  std::vector<std::string> out;
  strategies::for_each_strategy(strategies::AllStrategies{}, [&]<class S>() {
    if (std::string p = S::property(layout); !p.empty()) out.push_back(std::move(p));
  });
  for (std::string& p : layout.properties()) out.push_back(std::move(p));
  return out;
}

std::vector<Strategy> admitted_strategies(const LayoutInfo& layout) {
  std::vector<Strategy> out;
  strategies::for_each_strategy(strategies::AllStrategies{}, [&]<class S>() {
    if (S::admits(layout)) out.push_back(S::id);
  });
  return out;
}


std::vector<KernelGap> kernel_gaps(const LayoutInfo& layout) {
  std::vector<KernelGap> gaps;
  collect(layout, &gaps);
  return gaps;
}

std::string kernel_why_not(const LayoutInfo& layout, Strategy strategy, Isa isa) {
  if (!isa_supported(isa)) return cat("this CPU lacks ", isa_name(isa), " (", feature_string(), ")");
  std::vector<KernelGap> gaps;
  for (const KernelVariant& k : collect(layout, &gaps))
    if (k.strategy == strategy && k.isa == isa) return "";
  for (const KernelGap& g : gaps)
    if (g.strategy == strategy && g.isa == isa) return g.why;
  std::string why;
  strategies::for_each_strategy(strategies::AllStrategies{}, [&]<class S>() {
    if (S::id == strategy) why = S::why_not(layout);
  });
  if (!why.empty()) return why;
  return cat("no target of this build lists ", strategy_name(strategy), " on ", isa_name(isa), " (its strategies here: ",
             join(admitted_strategies(layout) | std::views::transform(strategy_name)), ")");
}

}  // namespace ternlab

