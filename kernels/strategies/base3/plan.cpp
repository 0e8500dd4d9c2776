#include "kernels/strategies/base3/plan.hpp"

#include <algorithm>
#include <vector>

#include "common/error.hpp"
#include "kernels/strategies/per_layout.hpp"

namespace ternlab {

namespace {

struct Recognised {
  std::string why_not;
  std::vector<DigitSegment> segments;
};

Recognised recognise(const LayoutInfo& L) {
  Recognised r;
  if (L.code != Code::base3) {
    r.why_not = L.code == Code::two_bit ? "its code is 2-bit" : "its bytes are banded base-3 (the multiply by 3^n reads plain base-3 bytes)";
    return r;
  }
  if (L.rows != 1) {
    r.why_not = cat("it has ", L.rows, " rows a block (digit-planar blocks have one)");
    return r;
  }
  const LayoutSpec& s = *L.spec;
  for (int p = 0; p < n_pieces(s); ++p) {
    const Piece& pc = s.pieces[std::size_t(p)];
    const Modes& km = pc.k;
    if (km.n != 2 || km.m[0].byte_stride != 1 || km.m[0].slot_stride != 0 || km.m[1].byte_stride != 0 ||
        km.m[1].slot_stride != 1) {
      r = {cat("its piece ", p, " is not (lanes along bytes, then digits): k = (j:n, digit:5) with byte stride 1 and slot stride 1"), {}};
      return r;
    }
    r.segments.push_back({pc.byte_base, km.m[0].extent, km.m[1].extent, pc.k_begin});
  }
  return r;
}

const Recognised& recognised(const LayoutInfo& layout) {
  static strategies::PerLayout<const LayoutInfo*, Recognised> cache;
  return cache.get(&layout, [&] { return recognise(layout); });
}

Base3Plan build_base3_plan(const LayoutInfo& L) {
  Base3Plan p;
  if (const std::string& why = recognised(L).why_not; !why.empty()) {
    p.why_not = cat("the layout is not digit-planar base-3: ", why);
    return p;
  }
  if (!L.block_scales_128()) {
    p.why_not = L.block_scales_why_not();
    return p;
  }
  if (L.k != 128) {  // one row a block is the recognition's rule
    p.why_not = cat("base-3 kernels take blocks of 128 weights (it has ", L.k, ")");
    return p;
  }
  p.block_bytes = L.block_bytes();
  p.scale_offset = L.scale_offset(0);
  p.scale_format = L.scale_format();
  int src[128], digit[128];
  for (const DigitSegment& s : digit_segments(L))
    for (int n = 0; n < s.digits; ++n)
      for (int m = 0; m < s.lanes; ++m) {
        src[s.k_begin + n * s.lanes + m] = s.byte_offset + m;
        digit[s.k_begin + n * s.lanes + m] = n;
      }
  for (int v = 0; v < 4; ++v)
    for (int l = 0; l < 2; ++l) {
      const int k0 = 32 * v + 16 * l;
      int lo = src[k0], hi = src[k0];
      for (int e = 0; e < 16; ++e) lo = std::min(lo, src[k0 + e]), hi = std::max(hi, src[k0 + e]);
      if (hi - lo >= 16) {
        p.why_not = cat("weights ", k0, "..", k0 + 15, " read bytes more than 16 apart");
        return p;
      }
      p.window[v][l] = lo;
      p.overreads = p.overreads || lo + 16 > p.block_bytes;
      for (int e = 0; e < 16; ++e) {
        int pow3 = 1;
        for (int n = 0; n < digit[k0 + e]; ++n) pow3 = pow3 * 3 % 256;
        p.shuffle[v][16 * l + e] = std::uint8_t(src[k0 + e] - lo);
        const int byte = 16 * l + e;
        (byte % 2 ? p.mul_odd : p.mul_even)[v][byte / 2] = std::uint16_t(pow3);
      }
    }
  return p;
}
}  // namespace

std::span<const DigitSegment> digit_segments(const LayoutInfo& layout) { return recognised(layout).segments; }

std::string digit_planar_why_not(const LayoutInfo& layout) { return recognised(layout).why_not; }

const Base3Plan& base3_plan(const LayoutInfo& layout) {
  static strategies::PerLayout<const LayoutInfo*, Base3Plan> cache;
  return cache.get(&layout, [&] { return build_base3_plan(layout); });
}

}  // namespace ternlab
