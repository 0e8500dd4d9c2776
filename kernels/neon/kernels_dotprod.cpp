// Armv8.2 dotprod builds of the strategies. Compiled with -march=armv8.2-a+dotprod (CMakeLists.txt);
// called only where kernels/cpu.hpp reports HWCAP_ASIMDDP.
#include "kernels/neon/neon_kernels.hpp"
#include "kernels/neon/strategies.hpp"

#if !defined(__ARM_FEATURE_DOTPROD)
#error "kernels_dotprod.cpp must be compiled with dotprod enabled (-march=armv8.2-a+dotprod)"
#endif

namespace ternlab::neon {

// No slot-mask here: slot-mask/dotprod is the shared slot-mask template's (kernels/arm_dotprod.cpp).
NeonEntry dotprod_entry(NeonStrategy s) { return checked_entry<Sdot, NeonStrategy::unpack, NeonStrategy::base3>(s); }

}  // namespace ternlab::neon
