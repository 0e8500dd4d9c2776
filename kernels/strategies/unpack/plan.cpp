#include "kernels/strategies/unpack/plan.hpp"

#include <cstring>

#include "common/error.hpp"
#include "layouts/matrix.hpp"
#include "kernels/strategies/per_layout.hpp"

namespace ternlab {

using namespace prepared;  // the shared preparation loop (kernels/kernel_plan.hpp)

namespace {

std::string recognise(const LayoutInfo& L) {
  if (L.code != Code::two_bit) return "its code is base-3";
  if (L.rows != 1) return cat("it has ", L.rows, " rows a block (natural order has one)");
  for (int k = 0; k < L.k; ++k) {
    const Loc l = L.placement[std::size_t(k)];
    if (l.byte != L.facts.payload_begin + k / 4 || l.slot != k % 4)
      return cat("weight ", k, " sits in byte ", l.byte, " slot ", l.slot, ", not byte ", L.facts.payload_begin + k / 4,
                 " slot ", k % 4);
  }
  return "";
}

// Within each 32-value group, byte 8j + b takes value 4b + j (spec 6.2).
void natural_unpack_order(const std::int8_t* q, std::uint8_t* out) {
  for (int g = 0; g < 128; g += 32)
    for (int j = 0; j < 4; ++j)
      for (int b = 0; b < 8; ++b) out[g + 8 * j + b] = std::uint8_t(q[g + 4 * b + j]);
}

}  // namespace

std::string natural_two_bit_why_not(const LayoutInfo& layout) {
  static strategies::PerLayout<const LayoutInfo*, std::string> cache;
  return cache.get(&layout, [&] { return recognise(layout); });
}

SlotActs prepare_natural_acts_into(const BlockQ8K* x, std::int64_t nb, std::uint8_t* mem) {
  return prepare_into(mem, nb, kBlockK, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                      natural_unpack_order);
}

SlotActs prepare_natural_acts(const BlockQ8K* x, std::int64_t nb, int slot) {
  return prepare(nb, slot, kBlockK, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                 natural_unpack_order);
}

SlotActs prepare_natural_acts_x4(const BlockQ8Kx4* x, int m, std::int64_t nb, int slot) {
  return prepare(nb, slot, kBlockK, [&](std::int64_t i, std::int8_t* q) { return fetch_x4(x, m, i, q); },
                 natural_unpack_order);
}

}  // namespace ternlab
