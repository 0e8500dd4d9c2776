// The aarch64 kernels: NEON strategies for every layout property, each in a plain-NEON build and a
// dotprod build, plus the i8mm (smmla) gemm for row-pair layouts. Each ISA's code sits in its own
// translation unit compiled with that ISA's -march flags, so one generic aarch64 binary carries every
// path; `add_neon_kernels` lists only the paths kernels/cpu.hpp reports the CPU can run.
#pragma once

#include <vector>

#include "kernels/catalog.hpp"
#include "kernels/neon/plans.hpp"

namespace ternlab::neon {

#if defined(__aarch64__)

// Which NEON strategies a layout admits, from its facts and plans (never from its name).
struct NeonSupport {
  bool unpack = false;     // natural 2-bit, one row: the stock pq2_0 kernel
  bool base3 = false;      // digit-planar base-3 whose plan the kernel can gather
  bool slot_mask = false;  // slot-vectorizable with a regular per-unit word program
  bool smmla = false;      // slot-mask with row-pair words on 8-aligned chunks: smmla gemm
};
NeonSupport neon_support(const LayoutInfo& layout);

// Appends the NEON / dotprod / i8mm variants for `layout` that this CPU can run.
void add_neon_kernels(const LayoutInfo& layout, std::vector<KernelVariant>& out);

// A strategy's entry points in one ISA build (gemm "rows": one gemv per token, see split_gemm.cpp);
// each ISA's unit makes them from strategies.hpp. Empty (null gemv) for a strategy the build lacks.
struct NeonEntry {
  const char* isa;
  GemvFn gemv;
  GemmFn gemm;
};
NeonEntry neon_entry(NeonStrategy strategy);     // plain NEON: unpack, base3, slot_mask
NeonEntry dotprod_entry(NeonStrategy strategy);  // dotprod: unpack, base3
void gemm_slot_mask_i8mm(const PackedMatrix&, const Q8KBatch&, float*, std::int64_t, std::int64_t, std::int64_t);

// The gemm of a strategy without a matrix instruction (spec 5.9): each token of the batch runs the
// gemv, row-group chunk by chunk so a chunk's weights are reused from cache by the other tokens.
void gemm_by_rows(GemvFn gemv, const PackedMatrix& w, const Q8KBatch& x, float* y, std::int64_t ldy, std::int64_t g0,
                  std::int64_t g1);

#endif

}  // namespace ternlab::neon
