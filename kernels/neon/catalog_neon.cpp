// Which NEON paths a layout gets on this CPU. Plain translation unit: it only decides and points;
// the dotprod and i8mm code it points to runs only behind the HWCAP checks of kernels/cpu.cpp.
#include <algorithm>

#include "common/error.hpp"
#include "kernels/cpu.hpp"
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/plans.hpp"

namespace ternlab::neon {

namespace {

// Strategy s of an ISA build as a catalog entry; callers ask only for strategies the build carries.
KernelVariant variant(NeonStrategy s, NeonEntry (*build)(NeonStrategy)) {
  const NeonEntry e = build(s);
  if (!e.gemv) fail("no ", e.isa, " build of NEON strategy ", strategy_name(s));
  return {strategy_name(s), e.isa, e.gemv, e.gemm};
}

}  // namespace

NeonSupport neon_support(const LayoutInfo& L) {
  NeonSupport s;
  s.unpack = L.facts.natural_two_bit && L.k == 128;
  s.base3 = base3_program(L).ok;
  const SlotProgram& p = slot_program(L);
  s.slot_mask = p.ok;
  s.smmla = p.ok && p.chunk_aligned && (p.pairs || (p.units % 2 == 0 && p.shared_kbase));
  return s;
}

void add_neon_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out) {
  const NeonSupport s = neon_support(L);
  const bool dotprod = isa_supported(Isa::dotprod), i8mm = isa_supported(Isa::i8mm);
  if (s.unpack) {
    out.push_back(variant(NeonStrategy::unpack, neon_entry));
    if (dotprod) out.push_back(variant(NeonStrategy::unpack, dotprod_entry));
  }
  if (s.base3) {
    out.push_back(variant(NeonStrategy::base3, neon_entry));
    if (dotprod) out.push_back(variant(NeonStrategy::base3, dotprod_entry));
  }
  if (s.slot_mask) {
    out.push_back(variant(NeonStrategy::slot_mask, neon_entry));
    // slot-mask/dotprod (gemv and its dotprod-only gemm) is the shared slot-mask template's NEON
    // instantiation (kernels/arm_dotprod.cpp, listed before this runs); the i8mm variant pairs that
    // same gemv with the smmla gemm.
    const auto dot = std::find_if(out.begin(), out.end(),
                                  [](const KernelVariant& k) { return k.strategy == "slot-mask" && k.isa == "dotprod"; });
    if (i8mm && s.smmla && dot != out.end()) out.push_back({"slot-mask", "i8mm", dot->gemv, &gemm_slot_mask_i8mm, dot->phases});
  }
}

}  // namespace ternlab::neon
