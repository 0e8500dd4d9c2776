// Cache-line aligned storage for packed weights and activations: SIMD loads never straddle more
// lines than they must, and tests can assert alignment-sensitive paths deterministically.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

namespace ternlab {

inline constexpr std::size_t kAlign = 64;

template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(::operator new(n * sizeof(T), std::align_val_t{kAlign})); }
  void deallocate(T* p, std::size_t) noexcept { ::operator delete(p, std::align_val_t{kAlign}); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept { return true; }
};

template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;
using AlignedBytes = AlignedVector<std::uint8_t>;

}  // namespace ternlab
