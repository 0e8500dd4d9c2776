// Cache-line aligned storage for packed weights and activations: SIMD loads never straddle more
// lines than they must, and tests can assert alignment-sensitive paths deterministically.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ternlab {

inline constexpr std::size_t kAlign = 64;

// Buffers this large (packed weights, the memory-ceiling buffer) are placed on 2 MiB boundaries and
// offered to transparent huge pages: a stream over hundreds of MiB otherwise walks the page tables
// every 4 KiB, which costs this VM about a quarter of its read bandwidth (measured with the ceiling
// loop). Kernels and ceiling get the same treatment, so fractions compare like with like.
inline constexpr std::size_t kHugeThreshold = std::size_t(4) << 20;
inline constexpr std::size_t kHugeAlign = std::size_t(2) << 20;

inline void* aligned_allocate(std::size_t bytes) {
  if (bytes < kHugeThreshold) return ::operator new(bytes, std::align_val_t{kAlign});
  void* p = ::operator new(bytes, std::align_val_t{kHugeAlign});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  ::madvise(p, bytes / kHugeAlign * kHugeAlign, MADV_HUGEPAGE);  // advice only: failure changes nothing
#endif
  return p;
}
inline void aligned_deallocate(void* p, std::size_t bytes) noexcept {
  ::operator delete(p, std::align_val_t{bytes < kHugeThreshold ? kAlign : kHugeAlign});
}

template <class T>
struct AlignedAllocator {
  using value_type = T;
  AlignedAllocator() = default;
  template <class U>
  AlignedAllocator(const AlignedAllocator<U>&) noexcept {}
  T* allocate(std::size_t n) { return static_cast<T*>(aligned_allocate(n * sizeof(T))); }
  void deallocate(T* p, std::size_t n) noexcept { aligned_deallocate(p, n * sizeof(T)); }
  template <class U>
  bool operator==(const AlignedAllocator<U>&) const noexcept { return true; }
};

template <class T>
using AlignedVector = std::vector<T, AlignedAllocator<T>>;
using AlignedBytes = AlignedVector<std::uint8_t>;

}  // namespace ternlab
