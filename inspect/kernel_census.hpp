// The census of a kernel as the dispatcher runs it: the kernel's gemv (its rows phase, where it has
// phases) or gemm is run on a small matrix of the layout, and the loop that ran is read back
// (inspect::census_of with a run), so a loop of a path the layout's plan does not take is never
// the one counted.
#pragma once

#include "inspect/census.hpp"
#include "kernels/catalog.hpp"

namespace ternlab::inspect {

enum class KernelOp { gemv, gemm };
const char* to_string(KernelOp op);

// The function a census of k's op starts from: the gemv's rows phase where it has phases, else
// the gemv; the gemm. nullptr where k has no such op.
const void* kernel_entry(const KernelVariant& k, KernelOp op);

// The hot loop of k's op on layout L: the gemv over 8 row groups, the gemm of 16 tokens, each
// 1024 columns wide (or one block of L where that is wider).
LoopCensus kernel_census(const LayoutInfo& L, const KernelVariant& k, KernelOp op);

}  // namespace ternlab::inspect
