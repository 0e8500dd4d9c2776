// Slot32: one-hot level masks, only as many as the class has levels (10 + 24 L bits), in groups of 32
// records whose stride is the group's widest record (spec §5.2). Mask m_k marks the slots of level
// k; level 0 is the slots in no mask. The u32 base table (one entry per group, plus the stream
// length) is the side channel.
#pragma once
#include "layouts/record_dsl.hpp"

namespace ternlab::records {

struct Slot32 {
  static constexpr RecordSpec spec{
      .name = "slot32",
      .summary = "one-hot level masks, 10 + 24 L bits, groups of 32 at the widest record's byte stride",
      .id = RecordId::slot32,
      .addressing = Addressing::grouped32,
      .record_bits = 130,
      .window_bytes = 20,  // a 24-bit in-word shift + 130 bits fit in 5 words
      .exceptions = ExceptionRule::none,
      .fields = {{{"class", FieldKind::class_id, 0, 9},
                  {"gain", FieldKind::gain, 9, 1},
                  {"smask", FieldKind::sign_mask, 10, 24},
                  {"m1", FieldKind::level_mask, 34, 24, 1, 2},
                  {"m2", FieldKind::level_mask, 58, 24, 2, 3},
                  {"m3", FieldKind::level_mask, 82, 24, 3, 4},
                  {"m4", FieldKind::level_mask, 106, 24, 4, 5}}},
      .side = {{{"base table", SideKind::base_table, 32, "u32 byte offset of each group of 32 records, and the stream length"}}},
  };
};
static_assert(RecordLayout<Slot32>, "slot32 must be a valid record layout");

}  // namespace ternlab::records
