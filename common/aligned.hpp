// Cache-line aligned storage for packed weights and activations: SIMD loads never straddle more
// lines than they must, and tests can assert alignment-sensitive paths deterministically.
#pragma once
#include <cstddef>
#include <cstdint>
#include <new>
#include <type_traits>
#include <vector>

#if defined(__linux__)
#include <sys/mman.h>
#endif

namespace ternlab {

inline constexpr std::size_t kAlign = 64;

// Buffers this large (packed weights, the Gated DeltaNet states, the memory-ceiling buffer) are
// placed on 2 MiB boundaries and offered to transparent huge pages: a stream over them otherwise
// walks the page tables every 4 KiB and the hardware prefetcher stops at every page, which costs
// much of the read bandwidth (the ceiling loop: docs/notebook/2026-11-29-zen3-kernels.md; a 1.5-1.7
// MiB matrix or state a layer: docs/notebook/2026-12-07-zen4-small-pages.md). A mapping is whole
// huge pages, so from 1 MiB up a buffer holds at most twice its bytes.
// They are mapped fresh rather than taken from the C heap: a heap block reuses pages a freed
// buffer already faulted in at 4 KiB, and the advice does not rebuild those, so a model packed
// tensor by tensor had one matrix in six on small pages.
inline constexpr std::size_t kHugeThreshold = std::size_t(1) << 20;
inline constexpr std::size_t kHugeAlign = std::size_t(2) << 20;

#if defined(__linux__) && defined(MADV_HUGEPAGE) && !defined(__SANITIZE_ADDRESS__)
inline std::size_t huge_mapping_bytes(std::size_t bytes) { return (bytes + kHugeAlign - 1) / kHugeAlign * kHugeAlign; }
inline void* aligned_allocate(std::size_t bytes) {
  if (bytes < kHugeThreshold) return ::operator new(bytes, std::align_val_t{kAlign});
  // Over-map by one huge page, then unmap the unaligned head and the rest of the tail.
  const std::size_t len = huge_mapping_bytes(bytes);
  void* raw = ::mmap(nullptr, len + kHugeAlign, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  if (raw == MAP_FAILED) throw std::bad_alloc();
  const auto base = reinterpret_cast<std::uintptr_t>(raw);
  const std::uintptr_t aligned = (base + kHugeAlign - 1) / kHugeAlign * kHugeAlign;
  if (aligned > base) ::munmap(raw, aligned - base);
  if (const std::size_t tail = base + kHugeAlign - aligned; tail > 0) ::munmap(reinterpret_cast<void*>(aligned + len), tail);
  void* p = reinterpret_cast<void*>(aligned);
  ::madvise(p, len, MADV_HUGEPAGE);  // advice only: failure changes nothing
  return p;
}
inline void aligned_deallocate(void* p, std::size_t bytes) noexcept {
  if (bytes < kHugeThreshold)
    ::operator delete(p, std::align_val_t{kAlign});
  else
    ::munmap(p, huge_mapping_bytes(bytes));
}
#else
// Elsewhere, and under AddressSanitizer (whose redzones then guard these buffers too), the C heap.
inline void* aligned_allocate(std::size_t bytes) {
  if (bytes < kHugeThreshold) return ::operator new(bytes, std::align_val_t{kAlign});
  void* p = ::operator new(bytes, std::align_val_t{kHugeAlign});
#if defined(__linux__) && defined(MADV_HUGEPAGE)
  ::madvise(p, bytes / kHugeAlign * kHugeAlign, MADV_HUGEPAGE);
#endif
  return p;
}
inline void aligned_deallocate(void* p, std::size_t bytes) noexcept {
  ::operator delete(p, std::align_val_t{bytes < kHugeThreshold ? kAlign : kHugeAlign});
}
#endif

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

// The same memory, but resize leaves new elements default-initialised (no zeros written), for
// buffers whose every element is written before it is read (a prompt batch's quantised
// activations). Other constructions (copies, values given) go through allocator_traits as usual.
template <class T>
struct UninitialisedAllocator : AlignedAllocator<T> {
  UninitialisedAllocator() = default;
  template <class U>
  UninitialisedAllocator(const UninitialisedAllocator<U>&) noexcept {}
  template <class U>
  void construct(U* p) noexcept(std::is_nothrow_default_constructible_v<U>) {
    ::new (static_cast<void*>(p)) U;
  }
};
template <class T>
using UninitialisedVector = std::vector<T, UninitialisedAllocator<T>>;

}  // namespace ternlab
