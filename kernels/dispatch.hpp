// Choosing a kernel and running it on a thread pool.
//
// best_kernel(layout, ceiling) picks, among kernels_for(layout), the richest ISA not above the
// ceiling and, within it, the first strategy of kStrategyPreference (kernel_id.hpp); the permute
// strategy only where no other SIMD kernel runs, the reference kernel last. It also says, per
// candidate, why it was taken or passed over, so a run can record the path it measured
// (`ternlab kernels`, `--isa`).
#pragma once

#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "kernels/catalog.hpp"
#include "kernels/cpu.hpp"
#include "kernels/thread_pool.hpp"

namespace ternlab {

struct KernelChoice {
  KernelVariant variant;
  std::vector<std::string> notes;  // one line per candidate: "slot-mask/avx2: chosen", "...: above ceiling avx2"
};

// Ceiling defaults to best_isa() (the CPU's richest, or the one set_isa_ceiling() imposed).
KernelChoice best_kernel(const LayoutInfo& layout, Isa ceiling);
KernelChoice best_kernel(const LayoutInfo& layout);
// The same choice restricted to one strategy ("slot-mask": its richest ISA at or below the ceiling);
// throws naming the layout's kernels when the strategy has none here.
KernelChoice best_kernel_of(const LayoutInfo& layout, Strategy strategy, Isa ceiling);
KernelChoice best_kernel_of(const LayoutInfo& layout, Strategy strategy);

// The variant (strategy, isa) for this layout, not the GFNI build, the one with software
// prefetches unless hardware_prefetch; throws listing the available ones.
KernelVariant find_kernel(const LayoutInfo& layout, Strategy strategy, Isa isa, bool hardware_prefetch = false);

// ISAs compare only within one architecture's ladder (scalar is below all of them).
bool isa_at_or_below(Isa isa, Isa ceiling);

// kernels_for(layout) without the variants above the ISA ceiling: every arm a run may measure
// (bench, the planner's measured choice); select_kernel picks from the same set.
std::vector<KernelVariant> kernels_under_ceiling(const LayoutInfo& layout);

// The one selector behind every `kernel` option (the model's --kernel, experiment arms, bench):
// "" or "best" = best_kernel; a bare strategy ("slot-mask") = best_kernel_of; "strategy/isa" =
// that variant, refused when the strategy or ISA is unknown, the ISA absent from this CPU or above
// the ISA ceiling (the message names which). Each honours the process ceiling (set_isa_ceiling,
// CLI --isa).
KernelVariant select_kernel(const LayoutInfo& layout, const std::string& text);

// y = W x for one token, row groups shared over the pool's threads in whole row groups of the
// layout: each thread starts on its static share (ThreadPool::split) and takes it kGemvChunkBytes
// at a time, then the others' tails (SharedRanges), so a slower thread does not hold up the call.
// Arguments are checked first.
void run_gemv(ThreadPool& pool, const KernelVariant& k, const PackedMatrix& w, const BlockQ8K* x,
              std::int64_t x_cols, std::span<float> y);
inline constexpr std::int64_t kGemvChunkBytes = std::int64_t(256) << 10;
// Row groups of w in one take (at least 1).
std::int64_t gemv_chunk_groups(const PackedMatrix& w);
// The row groups thread t of the pool takes first in run_gemv over w: the first take of its share
// (its whole share where the pool does not share tails, the whole matrix on one thread).
std::pair<std::int64_t, std::int64_t> gemv_first_part(const PackedMatrix& w, int t, const ThreadPool& pool);
void run_gemv(ThreadPool& pool, const KernelVariant& k, const PackedMatrix& w, const Q8KBatch& x,
              std::span<float> y);  // x must hold one token
// run_gemv's two phases, for callers that drive their own threads: the activations prepared once,
// on the calling thread (nullptr for a kernel without phases), then one thread's row groups,
// reading them. The buffer is the calling thread's and valid until its next prepare_gemv.
const std::uint8_t* prepare_gemv(const KernelVariant& k, const PackedMatrix& w, const BlockQ8K* x);
void gemv_rows(const KernelVariant& k, const PackedMatrix& w, const BlockQ8K* x, const std::uint8_t* acts, float* y,
               std::int64_t g0, std::int64_t g1);

// Several matrices of one input (a layer's projections that share their rotated input) in one pool
// job: each thread runs its row groups of every matrix in turn, so the matrices stream back to back
// with no barrier between them. For one token the activations are prepared once when every kernel
// reads the same bytes (gemv_shares_activations), else one run_gemv each. Each y is x.tokens x
// w.rows; the bits are those of one run_gemv / run_gemm each (a row's result does not depend on
// the split).
struct MatmulOutput {
  const KernelVariant* kernel;
  const PackedMatrix* w;
  float* y;
};
void run_matmuls(ThreadPool& pool, std::span<const MatmulOutput> outputs, const Q8KBatch& x);

// Starts fetching, into this core's L2, the first kGemvStartBytes of each weight stream that k's
// gemv over w's row groups [g0, g1) begins with (GemvPhases::streams; one from g0 for a kernel that
// does not say), for a thread that will run that range. A gemv that starts cold reads below the
// bandwidth until the hardware prefetcher has found every stream, a fixed cost a call that a
// model's hundred small calls a token add up. Issued while the core computes what comes before the
// call (a norm, a rotation), not straight after another call, whose streams still fill the memory
// queues: there it gained nothing (measured: docs/notebook/2026-12-07-zen4-gemv-starts.md).
// A range of more bytes than kGemvStartMaxRangeBytes is left to the hardware prefetcher: the
// fixed cost is a small part of such a call, and on the 27B shape's calls (5-24 MB a thread) the
// fetch gained nothing and may have cost a little (same notebook).
inline constexpr std::int64_t kGemvStartBytes = 32768;
inline constexpr std::ptrdiff_t kGemvStartMaxRangeBytes = std::ptrdiff_t(4) << 20;
void prefetch_gemv_start(const KernelVariant& k, const PackedMatrix& w, std::int64_t g0, std::int64_t g1);
// Whether prefetch_gemv_start fetches anything for w's row groups [g0, g1): a range that is not
// empty and not above kGemvStartMaxRangeBytes. Lets a caller skip handing out a job with nothing in it.
bool gemv_start_fetched(const PackedMatrix& w, std::int64_t g0, std::int64_t g1);

// Whether b's gemv reads the activations a's prepares: one plan, one prepare step, one layout and
// input width.
bool gemv_shares_activations(const MatmulOutput& a, const MatmulOutput& b);

// Y[t * ldy + row] for every token of x.
void run_gemm(ThreadPool& pool, const KernelVariant& k, const PackedMatrix& w, const Q8KBatch& x,
              std::span<float> y, std::int64_t ldy);

// Before any timing: the outputs y of kernel k (tokens x ldy, as run_gemv / run_gemm write them)
// must equal the reference kernels' bit for bit on the first and the last 8 row groups; throws
// naming layout, kernel, token and row otherwise.
void check_against_reference(const PackedMatrix& w, const KernelVariant& k, std::span<const float> y,
                             const Q8KBatch& x, std::int64_t ldy);

}  // namespace ternlab
