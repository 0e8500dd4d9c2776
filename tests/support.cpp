#include "tests/support.hpp"

#include "kernels/cpu.hpp"
#include "kernels/x86_kernels.hpp"

namespace ternlab::test {

std::vector<KernelVariant> checked_kernels_for(const LayoutInfo& L) {
  std::vector<KernelVariant> ks = kernels_for(L);
#if defined(__x86_64__)
  if (isa_supported(Isa::avx2)) detail::add_avx512vnni_emulated_kernels(L, ks);
#endif
  return ks;
}

}  // namespace ternlab::test
