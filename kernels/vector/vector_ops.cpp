// The baseline build of VectorOps (the compiler's default target) and the choice among the builds.
#include "kernels/vector/vector_ops.hpp"

#include <vector>

#include "kernels/cpu.hpp"
#include "kernels/vector/vector_ops_impl.hpp"

namespace ternlab {
namespace {
struct BaselineTag {};
constexpr VectorOps kBaseline = vector_ops_detail::Impl<BaselineTag>::ops("baseline");

std::vector<const VectorOps*> runnable() {
  std::vector<const VectorOps*> v{&kBaseline};
  if (const VectorOps* o = detail::vector_ops_avx2(); o && isa_supported(Isa::avx2)) v.push_back(o);
  if (const VectorOps* o = detail::vector_ops_avx512(); o && isa_supported(Isa::avx512vnni)) v.push_back(o);
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
  if (const VectorOps* o = detail::vector_ops_avx2(); o && int(best) >= int(Isa::avx2)) chosen = o;
  if (const VectorOps* o = detail::vector_ops_avx512(); o && int(best) >= int(Isa::avx512vnni)) chosen = o;
  return *chosen;
}

}  // namespace ternlab
