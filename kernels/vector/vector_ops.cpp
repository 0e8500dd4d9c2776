// The baseline build of VectorOps (the compiler's default target) and the choice among the builds.
#include "kernels/vector/vector_ops.hpp"

#include <array>
#include <vector>

#include "kernels/cpu.hpp"
#include "kernels/vector/vector_ops_impl.hpp"

namespace ternlab {
namespace {
struct BaselineTag {
  static constexpr int kRegisterFloats = 4;  // floats in one of this build's vector registers
#if defined(__aarch64__)
  static constexpr int kRegisters = 32;  // vector registers
#else
  static constexpr int kRegisters = 16;
#endif
};
constexpr VectorOps kBaseline = vector_ops_detail::Impl<BaselineTag>::ops("baseline");

// Each build with the ISA it needs; a build this binary lacks is nullptr.
struct Build {
  const VectorOps* ops;
  Isa needs;
};
std::array<Build, 3> builds() {
  return {{{&kBaseline, Isa::scalar}, {detail::vector_ops_avx2(), Isa::avx2}, {detail::vector_ops_avx512(), Isa::avx512vnni}}};
}

std::vector<const VectorOps*> runnable() {
  std::vector<const VectorOps*> v;
  for (const Build& b : builds())
    if (b.ops && isa_supported(b.needs)) v.push_back(b.ops);
  return v;
}
}  // namespace

std::span<const VectorOps* const> vector_ops_variants() {
  static const std::vector<const VectorOps*> v = runnable();
  return v;
}

const VectorOps& vector_ops() {
  const Isa best = best_isa();
  const VectorOps* chosen = &kBaseline;
  for (const Build& b : builds())
    if (b.ops && isa_supported(b.needs) && int(b.needs) <= int(best)) chosen = b.ops;
  return *chosen;
}

}  // namespace ternlab
