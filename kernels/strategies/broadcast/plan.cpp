#include "kernels/strategies/broadcast/plan.hpp"

#include <algorithm>
#include <cstring>
#include <iterator>

#include "common/error.hpp"
#include "layouts/matrix.hpp"
#include "kernels/strategies/per_layout.hpp"

namespace ternlab {

using namespace prepared;  // the shared preparation loop (kernels/kernel_plan.hpp)

namespace {

// Row-interleaved strips with lanes of `lane` bytes from payload_begin; true and k0 filled when the
// whole payload is such strips.
bool row_strips(const LayoutInfo& L, const BlockInverse& inv, int lane, StripPlan& p) {
  const int strip = lane * L.rows, strips = L.k / (4 * lane);
  if (L.k % (4 * lane) != 0 || strips > kMaxStrips) return false;
  p.payload_begin = L.facts.payload_begin;
  p.strips = strips;
  p.lane_bytes = lane;
  for (int t = 0; t < strips; ++t)
    for (int sl = 0; sl < 4; ++sl) {
      const int base = p.payload_begin + t * strip;
      int& k0 = p.k0[std::size_t(t)][std::size_t(sl)];
      k0 = inv(base, sl).k;
      if (k0 < 0 || k0 % 4 != 0) return false;
      for (int j = 0; j < L.rows; ++j)
        for (int b = 0; b < lane; ++b) {
          const RowK w = inv(base + lane * j + b, sl);
          if (w.row != j || w.k != k0 + b) return false;
        }
    }
  return true;
}

// True, and `p` filled, when the payload is base-3 strips and a tail (Base3StripPlan).
bool base3_strips(const LayoutInfo& L, const BlockInverse& inv, Base3StripPlan& p) {
  if (L.k != kBase3Strips * kBase3StripWeights + kBase3TailLanes * kBase3TailDigits) return false;
  p.payload_begin = L.facts.payload_begin;
  p.strips = kBase3Strips;
  p.tail_begin = p.payload_begin + kBase3Strips * 4 * L.rows;
  for (int t = 0; t <= kBase3Strips; ++t) {
    const bool tail = t == kBase3Strips;
    const int lane = tail ? kBase3TailLanes : 4, digits = tail ? kBase3TailDigits : 5;
    const int base = p.payload_begin + t * 4 * L.rows;
    for (int n = 0; n < 5; ++n) {
      int& k0 = p.k0[std::size_t(t)][std::size_t(n)];
      k0 = n < digits ? inv(base, n).k : 0;
      for (int j = 0; j < L.rows; ++j)
        for (int b = 0; b < lane; ++b) {
          const RowK w = inv(base + lane * j + b, n);
          if (n < digits ? w.row != j || w.k != k0 + b : w.row >= 0) return false;
        }
    }
  }
  return true;
}

struct Recognised {
  std::string why_not;
  bool two_bit = false, base3 = false;
  StripPlan strips;
  Base3StripPlan base3_strips;
};

Recognised recognise(const LayoutInfo& L) {
  Recognised r;
  if (std::find(std::begin(kRowInterleavedRows), std::end(kRowInterleavedRows), L.rows) == std::end(kRowInterleavedRows)) {
    r.why_not = cat("it has ", L.rows, " rows a block (row-interleaved blocks have 4, 8, 16 or 32)");
    return r;
  }
  const BlockInverse inv(L);
  if (L.code == Code::two_bit) {
    if (L.facts.payload_bytes != L.rows * L.k / 4) {
      r.why_not = "its payload is not a solid run of weight bytes";
      return r;
    }
    for (const int lane : kRowLaneBytes)
      if (row_strips(L, inv, lane, r.strips)) {
        r.two_bit = true;
        return r;
      }
    r.why_not = "its payload is not strips in which each row owns a lane of 4, 8 or 16 bytes, every slot the same weights of every row";
    return r;
  }
  if (L.facts.payload_bytes != L.rows * (kBase3Strips * 4 + kBase3TailLanes) || !base3_strips(L, inv, r.base3_strips)) {
    r.why_not = cat("its base-3 payload is not ", kBase3Strips, " strips of 4-byte lanes (five digits each) and a tail of ",
                    kBase3TailLanes, "-byte lanes (four digits) in which each row owns a lane");
    return r;
  }
  r.base3 = true;
  return r;
}

const Recognised& recognised(const LayoutInfo& layout) {
  static strategies::PerLayout<const LayoutInfo*, Recognised> cache;
  return cache.get(&layout, [&] { return recognise(layout); });
}

}  // namespace

const StripPlan* strip_plan(const LayoutInfo& layout) {
  const Recognised& r = recognised(layout);
  return r.two_bit ? &r.strips : nullptr;
}

const Base3StripPlan* base3_strip_plan(const LayoutInfo& layout) {
  const Recognised& r = recognised(layout);
  return r.base3 ? &r.base3_strips : nullptr;
}

std::string row_interleaved_why_not(const LayoutInfo& layout) { return recognised(layout).why_not; }

namespace {

// Strip order: strip t's slot s takes its `lane` values from k0[t][s]. The width is a constant so
// each copy is one move: through a run-time length every copy was a call to memcpy.
template <int lane>
void strip_copy(const StripPlan& p, const std::int8_t* q, std::uint8_t* out) {
  for (int t = 0; t < p.strips; ++t)
    for (int s = 0; s < 4; ++s) std::memcpy(out + 4 * lane * t + lane * s, q + p.k0[t][s], lane);
}
auto strip_order(const StripPlan& p) {
  return [&p](const std::int8_t* q, std::uint8_t* out) {
    switch (p.lane_bytes) {
      case 8: return strip_copy<8>(p, q, out);
      case 16: return strip_copy<16>(p, q, out);
      default: return strip_copy<4>(p, q, out);
    }
  };
}

// Base-3 strip order (Base3StripPlan).
auto base3_strip_order(const Base3StripPlan& p) {
  return [&p](const std::int8_t* q, std::uint8_t* out) {
    std::memset(out, 0, kBase3StripActBytes);
    for (int t = 0; t <= p.strips; ++t) {
      const bool tail = t == p.strips;
      for (int n = 0; n < (tail ? kBase3TailDigits : 5); ++n)
        std::memcpy(out + kBase3StripWeights * t + 4 * n, q + p.k0[t][n], tail ? kBase3TailLanes : 4);
    }
  };
}

}  // namespace

SlotActs prepare_base3_strip_acts_into(const Base3StripPlan& p, const BlockQ8K* x, std::int64_t nb, std::uint8_t* mem) {
  return prepare_into(mem, nb, kBase3StripActBytes, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                      base3_strip_order(p));
}

SlotActs prepare_base3_strip_acts_tiles(const Base3StripPlan& p, const Q8KBatch& x, std::int64_t tile0, int tokens,
                                        std::int64_t nb, int slot) {
  return prepare(nb * tokens, slot, kBase3StripActBytes, fetch_tiles(x, tile0, tokens), base3_strip_order(p));
}

SlotActs prepare_strip_acts_into(const StripPlan& p, const BlockQ8K* x, std::int64_t nb, std::uint8_t* mem) {
  return prepare_into(mem, nb, kBlockK, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                      strip_order(p));
}

SlotActs prepare_strip_acts(const StripPlan& p, const BlockQ8K* x, std::int64_t nb, int slot) {
  return prepare(nb, slot, kBlockK, [&](std::int64_t i, std::int8_t* q) { return fetch_plain(x, i, q); },
                 strip_order(p));
}

SlotActs prepare_strip_acts_tiles(const StripPlan& p, const Q8KBatch& x, std::int64_t tile0, int tokens,
                                  std::int64_t nb, int slot) {
  return prepare(nb * tokens, slot, kBlockK, fetch_tiles(x, tile0, tokens), strip_order(p));
}

SlotActs prepare_strip_acts_tiles_into(const StripPlan& p, const Q8KBatch& x, std::int64_t tile0, int tokens,
                                       std::int64_t nb, std::uint8_t* mem) {
  return prepare_into(mem, nb * tokens, kBlockK, fetch_tiles(x, tile0, tokens), strip_order(p));
}

}  // namespace ternlab
