#include "model/linear.hpp"

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/dispatch.hpp"


namespace ternlab::model {

namespace {

void check_width(const TernaryLinear& l, const Q8KBatch& x) {
  if (x.cols != l.w.cols) fail(l.name, ": activation has ", x.cols, " columns, the weight ", l.w.cols);
}

}  // namespace

void TernaryLinear::apply(const Q8KBatch& x, float* y, ThreadPool& pool) const {
  check_width(*this, x);
  if (dense || records) {
    apply_float(x, y, pool);
    return;
  }
  if (peer) return peer->apply(pool, x, y, out());
  const MatmulOutput one{&kernel, &w, y};
  run_matmuls(pool, std::span(&one, 1), x);
}

void TernaryLinear::apply_float(const Q8KBatch& x, float* y, ThreadPool& pool) const {
  const std::int64_t k = w.cols, n = w.rows, blocks = x.blocks();
  std::vector<float> xf(std::size_t(x.tokens * k));
  for (std::int64_t t = 0; t < x.tokens; ++t)
    for (std::int64_t b = 0; b < blocks; ++b) {
      const BlockQ8K& q = x.row(t)[b];
      for (std::int64_t j = 0; j < kQK && b * kQK + j < k; ++j) xf[std::size_t(t * k + b * kQK + j)] = q.d * float(q.qs[j]);
    }
  pool.run([&](int th) {
    const auto [r0, r1] = ThreadPool::split(n, th, pool.size());
    if (r0 == r1) return;
    for (std::int64_t t = 0; t < x.tokens; ++t) {
      const float* xt = xf.data() + t * k;
      float* yt = y + t * n;
      if (records) {
        lattice::record_matvec(*records, {xt, std::size_t(k)}, {yt, std::size_t(n)}, record_kernel, r0, r1);
        continue;
      }
      for (std::int64_t r = r0; r < r1; ++r) {
        const float* wr = dense->data() + r * k;
        float acc = 0;
        for (std::int64_t j = 0; j < k; ++j) acc += wr[j] * xt[j];
        yt[r] = acc;
      }
    }
  });
}

bool prefetch_gemv_starts(std::initializer_list<const TernaryLinear*> linears, ThreadPool& pool) {
  const int threads = pool.size();
  const auto share = [threads](const TernaryLinear& l, int t) { return ThreadPool::split(l.w.row_groups(), t, threads); };
  const auto fetched = [share](const TernaryLinear& l, int t) {
    if (l.dense || l.records || l.peer) return false;
    const auto [g0, g1] = share(l, t);
    return gemv_start_fetched(l.w, g0, g1);
  };
  // A job every thread would find empty (peer, dense or record weights, or shares left to the
  // hardware prefetcher) is not handed out: the handoff alone costs each thread a wake-up.
  bool any = false;
  for (const TernaryLinear* l : linears)
    for (int t = 0; t < threads && !any; ++t) any = fetched(*l, t);
  if (!any) return false;
  // By value: the job outlives this call on the workers.
  pool.run_detached([all = std::vector(linears), fetched, &pool](int t) {
    for (const TernaryLinear* l : all) {
      if (!fetched(*l, t)) continue;
      const auto [g0, g1] = gemv_first_part(l->w, t, pool);  // the streams the thread starts with
      prefetch_gemv_start(l->kernel, l->w, g0, g1);
    }
  });
  return true;
}

void apply_all(std::span<const LinearOutput> outputs, const Q8KBatch& x, ThreadPool& pool) {
  std::vector<MatmulOutput> ternary;
  for (const auto& o : outputs) {
    const TernaryLinear& l = *o.linear;
    check_width(l, x);
    if (!l.dense && !l.records && !l.peer) ternary.push_back({&l.kernel, &l.w, o.y});
  }
  if (ternary.size() == outputs.size()) return run_matmuls(pool, ternary, x);
  for (const auto& o : outputs) o.linear->apply(x, o.y, pool);
}

std::string TernaryLinear::kernel_name() const { return peer ? peers::peer_kernel_name(peer->format()) : kernel.name(); }

const peers::PeerFormat* peer_for(const std::string& layout, const std::string& kernel) {
  if (kernel.empty()) return peers::find_peer(layout);
  const peers::PeerFormat* p = peers::find_peer_kernel(kernel);
  if (p && layout != p->layout)
    fail("kernel '", kernel, "' is ", p->label, "'s own algorithm over its own format: it runs layout ", p->layout,
         ", not '", layout, "' (set the layout to ", p->layout, ")");
  return p;
}

KernelVariant choose_kernel(const LayoutInfo& layout, const std::string& kernel) {
  return select_kernel(layout, kernel);  // the same selector as everywhere else, under the ISA ceiling
}

}  // namespace ternlab::model
