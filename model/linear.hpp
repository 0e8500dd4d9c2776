// One ternary matmul: the weight repacked into the chosen layout, the kernel chosen from
// kernels/dispatch.hpp (best_kernel, or by name), run with run_gemv/run_gemm on the thread pool.
// Activations are q8_K; one token goes through gemv, a batch through gemm.
// For the quality comparison of docs/lattice.md the same matmul can run on the matrix's latent float
// weights or their Λ24 records instead (model/weight_codes.hpp); those paths take the same q8_K
// activations, dequantised, so that only the weight code differs from the ternary model.
#pragma once

#include <initializer_list>
#include <memory>
#include <span>
#include <string>

#include "kernels/catalog.hpp"
#include "kernels/peers/peer_matmul.hpp"
#include "kernels/thread_pool.hpp"
#include "layouts/matrix.hpp"
#include "lattice/record_kernels.hpp"

namespace ternlab::model {

struct TernaryLinear {
  std::string name;
  PackedMatrix w;
  KernelVariant kernel;
  // When set, the weight used instead of `w` (whose shape it has): out() x in() f32, row-major, or
  // Λ24 records run by record_kernel.
  std::shared_ptr<const std::vector<float>> dense;
  std::shared_ptr<const lattice::RecordMatrix> records;
  lattice::RecordKernelVariant record_kernel;
  // When set, a peer's own format and kernel (BitNet's I2_S, ggml's TQ2_0) run the matmul instead
  // of `kernel`; `w` then keeps only the shape (the peer holds the bytes).
  std::shared_ptr<const peers::PeerMatmul> peer;
  std::int64_t in() const { return w.cols; }
  std::int64_t out() const { return w.rows; }
  // y is tokens x out(), row-major.
  void apply(const Q8KBatch& x, float* y, ThreadPool& pool) const;
  std::size_t bytes() const { return peer ? peer->bytes() : w.bytes.size(); }
  // The kernel that runs this matmul: the peer's ("ggml-tq2_0/avx2") or ternlab's ("t2r"'s "broadcast/avx512vnni").
  std::string kernel_name() const;

 private:
  void apply_float(const Q8KBatch& x, float* y, ThreadPool& pool) const;
};

// Before a one-token call of these matmuls: each of the pool's threads starts fetching the first
// lines of the weight streams its first part of each will begin with (gemv_first_part,
// prefetch_gemv_start), while the caller computes the call's input. A detached job
// (ThreadPool::run_detached): the caller goes on once its own fetches are issued, and the workers
// are waited for only when the matmul's job starts. Dense, record and peer weights are skipped,
// and so are shares prefetch_gemv_start leaves alone; returns whether any thread had something
// to fetch (no job is handed out otherwise).
bool prefetch_gemv_starts(std::initializer_list<const TernaryLinear*> linears, ThreadPool& pool);

// Several matmuls of one input, each y tokens x out() (a layer's projections that share their
// rotated input): one pool job for the ternary ones (run_matmuls, kernels/dispatch.hpp); where a
// weight is dense or records, one apply each.
struct LinearOutput {
  const TernaryLinear* linear;
  float* y;
};
void apply_all(std::span<const LinearOutput> outputs, const Q8KBatch& x, ThreadPool& pool);

// The kernel for `layout`: the one named `kernel` ("strategy/isa" or just "strategy") if given,
// otherwise best_kernel(layout) (kernels/dispatch.hpp: the richest ISA under the ceiling).
KernelVariant choose_kernel(const LayoutInfo& layout, const std::string& kernel = "");

// The peer whose own kernel runs a model loaded in `layout` with `kernel` named (empty: none named):
// a peer kernel named ("bitnet-i2s", "ggml-tq2_0/avx2"), or, with none named, the peer whose format
// `layout` is; null where ternlab's kernels run. Throws where a peer kernel is named for another
// layout than its own format, naming both.
const peers::PeerFormat* peer_for(const std::string& layout, const std::string& kernel);

}  // namespace ternlab::model
