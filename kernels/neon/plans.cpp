#include "kernels/neon/plans.hpp"

#include <map>
#include <memory>
#include <mutex>

#include "common/error.hpp"

namespace ternlab::neon {

namespace {

SlotProgram make_slot_program(const LayoutInfo& L) {
  SlotProgram p;
  if (!L.facts.slot_vectorizable || L.slot_plan.empty() || L.rows > 16 || L.k != 128) return p;
  p.pairs = L.facts.pairs_rows;
  p.rows = L.rows;
  p.words_per_unit = p.pairs ? 4 : 2;
  const int lanes = p.pairs ? 8 : 16;
  // One stride for every word, at least a word's lanes (slots never overlap) and whole lanes apart.
  p.slot_stride = L.slot_plan.front().slot[1].k0 - L.slot_plan.front().slot[0].k0;
  if (p.slot_stride < lanes || p.slot_stride % lanes != 0) return p;
  for (int r = 0; r < L.rows; ++r) p.scale_offset[std::size_t(r)] = L.scale_offset(r);
  std::array<int, 16> filled{};
  p.chunk_aligned = true;
  for (const WordPlan& w : L.slot_plan) {
    const SlotLanes& s0 = w.slot[0];
    for (int s = 1; s < 4; ++s)  // one unit per word, slots at a fixed stride
      if (w.slot[s].row_a != s0.row_a || w.slot[s].row_b != s0.row_b || w.slot[s].k0 != s0.k0 + s * p.slot_stride)
        return p;
    int u = 0;
    while (u < p.units && (p.unit[std::size_t(u)].row_a != s0.row_a || p.unit[std::size_t(u)].row_b != s0.row_b)) ++u;
    if (u == p.units) {
      if (p.units == 16) return p;
      p.unit[std::size_t(u)].row_a = s0.row_a;
      p.unit[std::size_t(u)].row_b = s0.row_b;
      ++p.units;
    }
    int& n = filled[std::size_t(u)];
    if (n == p.words_per_unit) return p;
    p.unit[std::size_t(u)].words[std::size_t(n++)] = {w.byte_offset, s0.k0};
    p.chunk_aligned = p.chunk_aligned && s0.k0 % 8 == 0;
  }
  for (int u = 0; u < p.units; ++u)
    if (filled[std::size_t(u)] != p.words_per_unit) return p;
  p.shared_kbase = true;
  for (int u = 1; u < p.units; ++u)
    for (int k = 0; k < p.words_per_unit; ++k) {
      const std::size_t w = std::size_t(k);
      p.shared_kbase = p.shared_kbase && p.unit[std::size_t(u)].words[w].kbase == p.unit[0].words[w].kbase;
    }
  p.ok = p.units * (p.pairs ? 2 : 1) == p.rows;
  return p;
}

Base3Program make_base3_program(const LayoutInfo& L) {
  Base3Program p;
  const int B = L.block_bytes();
  if (!L.facts.digit_planar || L.digit_plan.empty() || L.k != 128 || B < 16 || B > 32) return p;
  p.block_bytes = B;
  p.scale_offset = L.scale_offset(0);
  p.tail_offset = B - 16;
  for (int c = 0; c < 8; ++c) {
    std::array<int, 16> byte{}, digit{};
    for (int j = 0; j < 16; ++j) {
      const int k = 16 * c + j;
      byte[std::size_t(j)] = -1;
      for (const DigitSegment& s : L.digit_plan)
        if (k >= s.k_begin && k < s.k_begin + s.lanes * s.digits) {
          byte[std::size_t(j)] = s.byte_offset + (k - s.k_begin) % s.lanes;
          digit[std::size_t(j)] = (k - s.k_begin) / s.lanes;
        }
      if (byte[std::size_t(j)] < 0 || digit[std::size_t(j)] > 4) return p;
    }
    bool direct = true;
    for (int j = 0; j < 16; ++j) {
      direct = direct && byte[std::size_t(j)] == byte[0] + j && digit[std::size_t(j)] == digit[0];
      int pow = 1;
      for (int n = 0; n < digit[std::size_t(j)]; ++n) pow *= 3;
      p.pow3[std::size_t(c)][std::size_t(j)] = std::uint8_t(pow);
      const int b = byte[std::size_t(j)];
      p.gather[std::size_t(c)][std::size_t(j)] = std::uint8_t(b < 16 ? b : 16 + b - p.tail_offset);
    }
    p.direct_offset[std::size_t(c)] = direct ? byte[0] : -1;
  }
  p.ok = true;
  return p;
}

// Programs are built on first use and kept for the process: kernels fetch them on every call.
template <class Program, Program (*make)(const LayoutInfo&)>
const Program& cached(const LayoutInfo& L) {
  static std::mutex mutex;
  static std::map<const LayoutInfo*, std::unique_ptr<Program>> cache;
  const std::lock_guard lock(mutex);
  auto& slot = cache[&L];
  if (!slot) slot = std::make_unique<Program>(make(L));
  return *slot;
}

}  // namespace

const SlotProgram& slot_program(const LayoutInfo& L) { return cached<SlotProgram, make_slot_program>(L); }
const Base3Program& base3_program(const LayoutInfo& L) { return cached<Base3Program, make_base3_program>(L); }

const char* strategy_name(NeonStrategy strategy) {
  switch (strategy) {
    case NeonStrategy::unpack: return "unpack";
    case NeonStrategy::base3: return "base3";
    case NeonStrategy::slot_mask:
    case NeonStrategy::smmla: return "slot-mask";
  }
  return "?";
}

void require_layout(const LayoutInfo& L, NeonStrategy strategy, const char* isa) {
  const auto refuse = [&](const char* why) {
    fail(strategy_name(strategy), "/", isa, " kernel cannot run layout '", L.name, "': ", why);
  };
  switch (strategy) {
    case NeonStrategy::unpack:
      if (!L.facts.natural_two_bit || L.k != 128) refuse("not natural 2-bit (one row, weight k in byte k/4, field k%4)");
      return;
    case NeonStrategy::base3:
      if (!L.facts.digit_planar) refuse("not digit-planar base-3");
      if (!base3_program(L).ok) refuse("its digit plan has no NEON program (block over 32 bytes)");
      return;
    case NeonStrategy::slot_mask:
    case NeonStrategy::smmla: {
      if (!L.facts.slot_vectorizable) refuse("not slot-vectorizable");
      const SlotProgram& p = slot_program(L);
      if (!p.ok) refuse("its slot plan has no NEON program (units of irregular words)");
      if (strategy == NeonStrategy::smmla && !(p.chunk_aligned && (p.pairs || (p.units % 2 == 0 && p.shared_kbase))))
        refuse("smmla needs 8-weight chunks in row-pair words, or single-row words pairable by zips");
      return;
    }
  }
}

}  // namespace ternlab::neon
