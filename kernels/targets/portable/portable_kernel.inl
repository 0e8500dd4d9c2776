// The portable kernel: the slot-mask strategy (kernels/strategies/slot_mask/kernels.hpp) over a layout's
// 16-byte slot plan, with a policy of plain C++ loops and no intrinsics. What it compiles to is the
// compiler's choice: kernels/portable_scalar.cpp and kernels/portable_autovec.cpp include this one
// source with different vectorisation settings (set per file in CMakeLists.txt), and each lists it
// as its own variant of Strategy::portable, so an experiment can time two compiles of one kernel
// side by side (configs/two-compiles.toml).
//
// The including unit defines, before including:
//   TERNLAB_PORTABLE_ISA    the Isa its build needs and is named by (scalar, avx2, neon)
//   TERNLAB_PORTABLE_NAME   that ISA's name, for messages
//   TERNLAB_PORTABLE_TARGET the name of the Target it defines (kernels/targets/targets.def)
// Everything here sits in an unnamed namespace: the two units' instantiations have the same
// names and must not be merged by the linker into one compile.
//
// Exactness: each slot is shifted down to its code u in 0..3 and multiplied by the int8 activation
// in int32, so nothing can overflow; the strategy's epilogue is the oracle's.
#include <bit>
#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "common/fp16.hpp"
#include "kernels/catalog.hpp"
#include "kernels/targets/target.hpp"
#include "kernels/strategies/slot_mask/plan.hpp"
#include "kernels/strategies/slot_mask/kernels.hpp"

namespace ternlab::detail {
namespace {

struct Portable {
  static constexpr const char* name = TERNLAB_PORTABLE_NAME;
  static constexpr Isa kIsa = Isa::TERNLAB_PORTABLE_ISA;
  static constexpr Strategy kSlotStrategy = Strategy::portable;
  static constexpr int kBytes = 16;
  static constexpr int kSlotShift = 0;
  static constexpr int kGroupVectors = kNeonGroupVectors;  // int32 lanes: no narrow limit
  // One int32 per weight byte: the four slots' products of byte j land in lane j, and the lanes of
  // each 4-byte word are summed only when pair sums are stored (a dot4's lanes, taken apart).
  struct V {
    std::int32_t l[kBytes];
  };
  // The codes are read where they are multiplied: a loop over bytes per slot is what a
  // vectoriser turns into widening loads, shifts, masks and multiplies.
  struct Slots {
    const std::uint8_t* bytes;
  };

  static const std::uint8_t* load(const void* p) { return static_cast<const std::uint8_t*>(p); }
  static Slots extract(const std::uint8_t* v) { return {v}; }
  static V slot_dot(const Slots& w, const std::uint8_t* x) {
    V acc{};
    for (int s = 0; s < 4; ++s)
      for (int j = 0; j < kBytes; ++j)
        acc.l[j] += std::int32_t((w.bytes[j] >> (2 * s)) & 3) * std::int32_t(std::int8_t(x[kBytes * s + j]));
    return acc;
  }
  static V slot_add(V a, const V& b) {
    for (int j = 0; j < kBytes; ++j) a.l[j] += b.l[j];
    return a;
  }
  static V slot_widen(V a) { return a; }
  // Per accumulator, the sums of bytes 0-7 and 8-15 (two dot4 lanes each) at 2a and 2a + 1: the
  // order pair_sum_position<16> gives (pair_add of two accumulators stored at 2a).
  template <int G>
  static void store_pair_sums(const V* c, std::int32_t* out) {
    for (int a = 0; a < G; ++a)
      for (int u = 0; u < 2; ++u) {
        std::int32_t sum = 0;
        for (int j = 8 * u; j < 8 * u + 8; ++j) sum += c[a].l[j];
        out[2 * a + u] = sum;
      }
    if (G % 2) out[2 * G] = out[2 * G + 1] = 0;
  }
  // From the bits, inlined: the scale loops call it per row and block, and fp16_to_float's table
  // lookup is a call (fp16_table()) in the hot loop. Exact: every fp16 value is a float.
  [[gnu::always_inline]] static float fp16(const std::uint8_t* p) {
    std::uint16_t h;
    std::memcpy(&h, p, 2);
    const std::uint32_t sign = std::uint32_t(h & 0x8000u) << 16, e = (h >> 10) & 31u, m = h & 0x3ffu;
    if (e == 0) return std::bit_cast<float>(sign | std::bit_cast<std::uint32_t>(float(m) * 0x1p-24f));
    return std::bit_cast<float>(sign | (e == 31 ? 0x7f800000u : (e + 112u) << 23) | (m << 13));
  }
};

void add_kernels(const LayoutInfo& L, std::vector<KernelVariant>& out, std::vector<KernelGap>* gaps) {
  if (!slot_words(L).why_not.empty()) return;
  KernelFns k;
  const std::string why = strategies::pick_slot_mask_any<Portable>(L, k);
  add_or_note(out, gaps, Strategy::portable, Portable::kIsa, why, k);
}

}  // namespace
}  // namespace ternlab::detail

