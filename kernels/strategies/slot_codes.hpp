// A byte vector's four 2-bit slots, each shifted down to its code 0..3: the extraction the
// slot-mask programs (slot_mask/ops.hpp) and the broadcast strategy's dot4 lane programs
// (broadcast/dot4_lanes.hpp) share, written once over a policy's AND, byte broadcast and 16-bit
// shift.
#pragma once

#include <cstdint>

namespace ternlab::strategies {

// A policy's vector of bytes (NEON's differs from its int32 V).
template <class P>
using SlotBytes = decltype(P::load(nullptr));

// Every slot shifted down to its code, one vector of bytes each (Slots: { SlotBytes<P> s[4]; }).
template <class P, class Slots>
Slots shifted_codes(SlotBytes<P> v) {
  const SlotBytes<P> m = P::set1_u8(0x03);  // 16-bit shifts drag in the next byte's bits; the mask drops them
  return {{P::and_(v, m), P::and_(P::srli16(v, 2), m), P::and_(P::srli16(v, 4), m), P::and_(P::srli16(v, 6), m)}};
}

}  // namespace ternlab::strategies
