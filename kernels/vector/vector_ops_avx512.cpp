// The AVX-512 (512-bit lanes) build of VectorOps; chosen only after kernels/cpu.hpp confirmed the features.
#include "kernels/vector/vector_ops.hpp"

#if defined(__x86_64__)
// The standard and project headers first, so their inline functions keep the default target (a
// shared inline built for AVX-512 here could be the copy the linker keeps for every unit).
#include <algorithm>
#include <cstdint>
#include <cstring>
#include <immintrin.h>

#include "kernels/q8k.hpp"

#pragma GCC push_options
#pragma GCC target("avx512f,avx512bw,avx512vl,avx512dq,avx2,fma,f16c")
#include "kernels/vector/vector_ops_impl.hpp"

namespace ternlab::detail {
namespace {
struct Tag {
  static constexpr int kRegisterFloats = 16;  // floats in one of this build's vector registers
  static constexpr int kRegisters = 32;       // vector registers
#if !defined(__clang__)  // GCC honours the target pragma; clang ignores it and takes Impl's lane-wise forms
  // Every lane *p, from memory (no shuffle port taken).
  template <class V>
  static V broadcast(const float* p) {
    return V(_mm512_set1_ps(*p));
  }
  template <class V>
  static V mul_add(V a, V b, V c) {
    return V(_mm512_fmadd_ps(__m512(a), __m512(b), __m512(c)));
  }
#endif
};
constexpr VectorOps kOps = vector_ops_detail::Impl<Tag>::ops("avx512");
}  // namespace
const VectorOps* vector_ops_avx512() { return &kOps; }
}  // namespace ternlab::detail
#pragma GCC pop_options

#else
namespace ternlab::detail {
const VectorOps* vector_ops_avx512() { return nullptr; }
}  // namespace ternlab::detail
#endif
