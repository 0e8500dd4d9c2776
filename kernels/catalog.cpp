#include "kernels/catalog.hpp"

#include <utility>

#include <range/v3/view/map.hpp>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/arm_kernels.hpp"
#include "kernels/cpu.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/portable/portable.hpp"
#include "kernels/targets/sse41/kernels.hpp"
#include "kernels/x86_kernels.hpp"

namespace ternlab {

namespace {
constexpr std::pair<Strategy, std::string_view> kStrategyNames[] = {
    {Strategy::reference, "reference"}, {Strategy::broadcast, "broadcast"},
    {Strategy::slot_mask, "slot-mask"}, {Strategy::base3, "base3"},
    {Strategy::unpack, "unpack"},       {Strategy::unpack_vecdot, "unpack-vecdot"},
    {Strategy::prism_neon, "prism-neon"}, {Strategy::permute, "permute"},
    {Strategy::slot_mask_widen, "slot-mask-widen"}, {Strategy::portable, "portable"},
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
      for (const std::string& s : layout.strategies())
        if (s != "reference") gaps->push_back({parse_strategy(s), best_isa(), why});
    return v;
  }
  // x86 strategies (broadcast, slot-mask, unpack, base3) per ISA the CPU runs; each adds only what
  // the layout's properties and plan admit.
  if (isa_supported(Isa::sse41)) detail::add_sse41_kernels(layout, v, gaps);
  if (isa_supported(Isa::avx2)) detail::add_avx2_kernels(layout, v, gaps);
  if (isa_supported(Isa::avx512vnni)) detail::add_avx512vnni_kernels(layout, v, gaps);
  // The same strategies per aarch64 feature level (plain NEON, dotprod), then i8mm's smmla gemm,
  // which pairs with the dotprod gemv listed before it.
  if (isa_supported(Isa::neon)) detail::add_neon_kernels(layout, v, gaps);
  if (isa_supported(Isa::dotprod)) detail::add_dotprod_kernels(layout, v, gaps);
  if (isa_supported(Isa::i8mm)) detail::add_i8mm_kernels(layout, v, gaps);
  // One plain C++ kernel source in two compiles (kernels/portable/): for experiments, never chosen
  // by default (named_only).
  detail::add_portable_scalar_kernels(layout, v, gaps);
  if (isa_supported(detail::kPortableAutovecIsa)) detail::add_portable_autovec_kernels(layout, v, gaps);
  if (!layout.block_scales_128()) {
    // A chunked block: the strategies that read it stay, the others become gaps with the reason.
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
  return cat("layout '", layout.name, "' lacks what ", strategy_name(strategy), " reads (its strategies: ", join(layout.strategies()), ")");
}

}  // namespace ternlab

