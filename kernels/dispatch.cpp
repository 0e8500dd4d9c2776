#include "kernels/dispatch.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>
#include <optional>
#include <ranges>
#include <vector>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/kernel_plan.hpp"
#include "kernels/strategies/all.hpp"
#include "kernels/targets/target.hpp"

namespace ternlab {

namespace {

int strategy_rank(Strategy s) {
  for (int i = 0; i < int(std::size(kStrategyPreference)); ++i)
    if (s == kStrategyPreference[i]) return i;
  return int(std::size(kStrategyPreference));
}

std::string isa_names(const std::vector<Isa>& isas) { return join(isas | std::views::transform(isa_name)); }

std::string variant_names(const std::vector<KernelVariant>& all) {
  return join(all | std::views::transform([](const KernelVariant& k) { return k.name(); }));
}

// Where the CPU runs a 512-bit op as two 256-bit halves (Zen 4), the AVX-512 builds that gain
// nothing from the width count as AVX2 and rank after their AVX2 build: slot-mask's where its
// 64-byte plan gathers each row's pair sums across lanes every block (t2w, t2x4: no fold of
// words), and unpack's (pq2_0). Slot-mask's plans that fold words (t2p and its scale formats,
// t2p-split's word pairs) keep the AVX-512 build, which ran faster warm and in gemm and tied cold
// (kernels --check-estimate: docs/notebook/2026-12-05-zen4-estimate.md).
bool demoted_on_split_512bit_ops(const CpuFeatures& cpu, const KernelVariant& k) {
  if (!cpu.splits_512bit_ops || k.isa != Isa::avx512vnni) return false;
  return (k.strategy == Strategy::slot_mask && k.gathers_rows) || k.strategy == Strategy::unpack ||
         k.strategy == Strategy::unpack_vecdot;
}

// A richer strategy's SSE4.1 build ranks with the fallback, after its wider builds: half the width
// and no row vector cost more than the fallback's shuffles at 32 or 64 bytes (measured for t2p and
// t2r4: docs/notebook/2026-12-05-zen4-sse41.md, docs/notebook/2026-12-05-zen4-broadcast-rows.md).
// On a CPU without AVX2 every build is SSE4.1 and the richer strategy leads again.
bool ranks_with_fallback(const KernelVariant& k) { return k.strategy == kFallbackStrategy || k.isa == Isa::sse41; }

KernelChoice choose(const LayoutInfo& layout, Isa ceiling, std::optional<Strategy> only_strategy) {
  const std::vector<KernelVariant> listed = kernels_for(layout);
  std::vector<KernelVariant> all = listed;
  if (!only_strategy) std::erase_if(all, [](const KernelVariant& k) { return named_only(k.strategy); });
  if (only_strategy) {
    std::erase_if(all, [&](const KernelVariant& k) { return k.strategy != *only_strategy; });
    if (all.empty())
      fail("no kernel '", strategy_name(*only_strategy), "' (no variant of that strategy) for layout '", layout.name,
           "' on this CPU (available: ", variant_names(listed), ")");
  }
  // The fallback (permute) after every other SIMD kernel whatever their ISAs, so a layout that
  // admits a richer strategy keeps it (but see ranks_with_fallback); then the richest ISA (slot-mask's AVX-512 build counted as
  // AVX2, after it, where the CPU splits 512-bit ops and the width gains nothing), then the preferred strategy, then among one
  // strategy's builds the CPU's guesses: GFNI slots or not, software prefetches or not; stable
  // keeps the catalog's order otherwise.
  const CpuFeatures& cpu = cpu_features();
  const auto demoted = [&](const KernelVariant& k) { return demoted_on_split_512bit_ops(cpu, k); };
  const auto isa_rank = [&](const KernelVariant& k) { return demoted(k) ? int(Isa::avx2) : int(k.isa); };
  std::stable_sort(all.begin(), all.end(), [&](const KernelVariant& a, const KernelVariant& b) {
    const bool fa = ranks_with_fallback(a), fb = ranks_with_fallback(b);
    const bool ra = a.strategy == Strategy::reference, rb = b.strategy == Strategy::reference;
    if (ra != rb) return rb;
    if (fa != fb) return fb;
    if (isa_rank(a) != isa_rank(b)) return isa_rank(a) > isa_rank(b);
    if (a.strategy != b.strategy) return strategy_rank(a.strategy) < strategy_rank(b.strategy);
    if (a.isa != b.isa) return int(a.isa) < int(b.isa);  // a demoted AVX-512 build after its AVX2 one
    if (a.amx != b.amx) return a.amx;  // listed only where the tiles run
    if (a.gfni != b.gfni) return a.gfni == cpu.prefers_gfni_slots;
    return a.hardware_prefetch != b.hardware_prefetch && a.hardware_prefetch == cpu.prefers_hardware_prefetch;
  });
  KernelChoice c;
  bool chosen = false;
  for (const KernelVariant& k : all) {
    if (!isa_at_or_below(k.isa, ceiling)) {
      c.notes.push_back(cat(k.name(), ": passed over, above the ceiling ", isa_name(ceiling)));
    } else if (chosen) {
      const bool sibling = k.strategy == c.variant.strategy && k.isa == c.variant.isa;
      std::vector<std::string> why;
      if (sibling && k.amx != c.variant.amx)
        why.push_back("AMX tiles run the gemm here, at several times the vector dots' rate");
      else if (sibling && k.gfni != c.variant.gfni)
        why.push_back(cpu.prefers_gfni_slots ? "gf2p8affineqb takes slots faster here" : "a shift and an AND take slots faster here");
      if (demoted(k) && c.variant.strategy == k.strategy && c.variant.isa == Isa::avx2)
        why.push_back(k.strategy == Strategy::unpack
                          ? "this CPU splits 512-bit ops into halves, and unpack's 512-bit decode gains nothing from the width"
                          : "this CPU splits 512-bit ops into halves, and this layout's AVX-512 slot-mask plan gathers its rows across lanes every block");
      if (sibling && k.hardware_prefetch != c.variant.hardware_prefetch)
        why.push_back(cpu.prefers_hardware_prefetch ? "this CPU streams faster without software prefetches"
                                                    : "software prefetches stream faster on most CPUs");
      if (k.strategy != kFallbackStrategy && ranks_with_fallback(k) && c.variant.strategy == kFallbackStrategy)
        why.push_back("a richer strategy's SSE4.1 build runs slower than the fallback's wider builds");
      c.notes.push_back(cat(k.name(), ": passed over, ", c.variant.name(), " ranks first",
                            k.strategy == kFallbackStrategy && c.variant.strategy != kFallbackStrategy
                                ? " (permute is the fallback for layouts no richer strategy admits)"
                            : why.empty() ? ""
                                          : cat(" (", join(why, "; "), ": estimated)")));
    } else {
      c.variant = k;
      chosen = true;
      const bool richer_narrow = std::ranges::any_of(all, [&](const KernelVariant& o) {
        return o.strategy != kFallbackStrategy && ranks_with_fallback(o) && isa_at_or_below(o.isa, ceiling);
      });
      c.notes.push_back(cat(k.name(), ": chosen",
                            k.strategy != kFallbackStrategy ? ""
                            : richer_narrow ? " (the richer strategies' builds here are SSE4.1 only, slower than the fallback's wider ones: estimated)"
                                            : " (no richer strategy has a kernel for this layout here)"));
    }
  }
  if (!chosen)  // only with a strategy filter: the reference kernel is otherwise always at or below
    fail("no kernel of strategy '", strategy_name(*only_strategy), "' for layout '", layout.name,
         "' at or below the ISA ceiling ", isa_name(ceiling), " (available: ", variant_names(listed), ")");
  // What the layout or the CPU rules out, so the listing is explicit about the absent arms.
  std::vector<Isa> lacking;
  for (const Target* t : all_targets())
    if (!isa_supported(t->isa) && std::find(lacking.begin(), lacking.end(), t->isa) == lacking.end()) lacking.push_back(t->isa);
  for (Isa isa : lacking) c.notes.push_back(cat(isa_name(isa), ": no kernels, this CPU lacks it (", feature_string(), ")"));
  const std::vector<KernelGap> gaps = kernel_gaps(layout);
  for (const KernelGap& g : gaps)
    c.notes.push_back(cat(kernel_name(g.strategy, g.isa), ": no kernel, its plan refuses the layout: ", g.why));
  const std::vector<Strategy> admitted = admitted_strategies(layout);
  for (Strategy s : admitted)
    if (std::none_of(listed.begin(), listed.end(), [&](const KernelVariant& k) { return k.strategy == s; }) &&
        std::none_of(gaps.begin(), gaps.end(), [&](const KernelGap& g) { return g.strategy == s; }))
      c.notes.push_back(cat(strategy_name(s), ": no kernel for this CPU (", feature_string(), ")"));
  strategies::for_each_strategy(strategies::AllStrategies{}, [&]<class S>() {
    if (!S::admits(layout)) c.notes.push_back(cat(strategy_name(S::id), ": not applicable, ", S::why_not(layout)));
  });
  return c;
}

}  // namespace

bool isa_at_or_below(Isa isa, Isa ceiling) {
  if (isa == Isa::scalar) return true;
  if (ceiling != Isa::scalar && isa_family(isa) != isa_family(ceiling)) return false;
  return int(isa) <= int(ceiling);
}

KernelChoice best_kernel(const LayoutInfo& layout, Isa ceiling) { return choose(layout, ceiling, std::nullopt); }
KernelChoice best_kernel(const LayoutInfo& layout) { return best_kernel(layout, best_isa()); }
KernelChoice best_kernel_of(const LayoutInfo& layout, Strategy strategy, Isa ceiling) {
  return choose(layout, ceiling, strategy);
}
KernelChoice best_kernel_of(const LayoutInfo& layout, Strategy strategy) {
  return best_kernel_of(layout, strategy, best_isa());
}

// Named-only variants (the portable kernel's two compiles) are left out of sweeps too: an arm names them.
std::vector<KernelVariant> kernels_under_ceiling(const LayoutInfo& layout) {
  std::vector<KernelVariant> all = kernels_for(layout);
  std::erase_if(all, [](const KernelVariant& k) { return !isa_at_or_below(k.isa, best_isa()) || named_only(k.strategy); });
  return all;
}

KernelVariant select_kernel(const LayoutInfo& layout, const std::string& text) {
  if (text.empty() || text == "best") return best_kernel(layout).variant;
  const auto slash = text.find('/');
  const std::string name = text.substr(0, slash);
  const std::optional<Strategy> strategy = strategy_named(name);
  if (!strategy)
    fail("no kernel '", text, "' for layout '", layout.name, "': unknown strategy '", name, "' (strategies: ",
         strategy_names(), "; available here: ", variant_names(kernels_for(layout)), ")");
  if (slash == std::string::npos) return best_kernel_of(layout, *strategy).variant;
  // "+gfni" names the build that also uses GFNI, "+amx" (after it) that build with its gemm on AMX
  // tiles, "+hw-prefetch" (last) the build without the gemv's software prefetches; a name without
  // them reaches the build without them.
  constexpr std::string_view kGfni = "+gfni", kAmx = "+amx", kHwPrefetch = kHardwarePrefetchSuffix;
  std::string isa_text = text.substr(slash + 1);
  const bool hardware_prefetch = isa_text.ends_with(kHwPrefetch);
  if (hardware_prefetch) isa_text.resize(isa_text.size() - kHwPrefetch.size());
  const bool amx = isa_text.ends_with(kAmx);
  if (amx) isa_text.resize(isa_text.size() - kAmx.size());
  const bool gfni = isa_text.ends_with(kGfni);
  if (gfni) isa_text.resize(isa_text.size() - kGfni.size());
  const Isa isa = parse_isa(isa_text);
  if (!isa_supported(isa))
    fail("kernel '", text, "': ISA '", isa_name(isa), "' is not supported on this CPU (", cpu_features().model,
         "; supported here: ", isa_names(supported_isas()), ")");
  if (!isa_at_or_below(isa, best_isa()))
    fail("kernel '", text, "': ISA '", isa_name(isa), "' is above the ISA ceiling ", isa_name(best_isa()),
         " (--isa); name a variant at or below it");
  const std::vector<KernelVariant> all = kernels_for(layout);
  const auto build = [&](bool with_gfni, bool with_amx = false) {
    return std::ranges::find_if(all, [&](const KernelVariant& k) {
      return k.strategy == *strategy && k.isa == isa && k.gfni == with_gfni && k.amx == with_amx &&
             k.hardware_prefetch == hardware_prefetch;
    });
  };
  if (const auto it = build(gfni, amx); it != all.end()) return *it;
  if (amx)
    fail("kernel '", text, "': no AMX tile build of it here (", cpu_features().model, ": ", feature_string(),
         "; the tiles take 2-bit row-interleaved layouts with dword lanes and a '+gfni+amx' name)");
  if (gfni && build(false) != all.end())
    fail("kernel '", text, "': no GFNI build of ", build(false)->name(), " here (", cpu_features().model, ": ",
         feature_string(), ")");
  return find_kernel(layout, *strategy, isa, hardware_prefetch);  // refuses, listing what there is
}

KernelVariant find_kernel(const LayoutInfo& layout, Strategy strategy, Isa isa, bool hardware_prefetch) {
  const std::vector<KernelVariant> all = kernels_for(layout);
  for (const KernelVariant& k : all)
    if (k.strategy == strategy && k.isa == isa && !k.gfni && k.hardware_prefetch == hardware_prefetch) return k;
  KernelVariant wanted{strategy, isa};
  wanted.hardware_prefetch = hardware_prefetch;
  fail("no kernel '", wanted.name(), "' for layout '", layout.name, "' on this CPU (available: ", variant_names(all),
       ")");
}

namespace {
// The calling thread's ranges for one gemv job's matrices, kept between calls (a decode token runs
// a hundred jobs; reset() only rewrites them).
std::span<SharedRanges> gemv_ranges(std::size_t matrices) {
  thread_local std::vector<SharedRanges> ranges;
  if (ranges.size() < matrices) ranges.resize(matrices);
  return {ranges.data(), matrices};
}
}  // namespace

std::int64_t gemv_chunk_groups(const PackedMatrix& w) {
  const std::int64_t group_bytes = std::max<std::int64_t>(1, w.blocks_per_row() * w.layout->block_bytes());
  return std::max<std::int64_t>(1, kGemvChunkBytes / group_bytes);
}

namespace {
bool takes_tails(const ThreadPool& pool) { return pool.size() > 1 && pool.shares_tails(); }
// w's row groups over the pool: kGemvChunkBytes takes where threads share tails, else each
// thread's whole share in one (one thread: the whole matrix, as its widest streams want).
void reset_ranges(SharedRanges& ranges, const PackedMatrix& w, const ThreadPool& pool) {
  const bool tails = takes_tails(pool);
  ranges.reset(w.row_groups(), pool.size(), tails ? gemv_chunk_groups(w) : std::max<std::int64_t>(1, w.row_groups()), tails);
}
}  // namespace

std::pair<std::int64_t, std::int64_t> gemv_first_part(const PackedMatrix& w, int t, const ThreadPool& pool) {
  if (!takes_tails(pool)) return ThreadPool::split(w.row_groups(), t, pool.size());
  return SharedRanges::first_part(w.row_groups(), t, pool.size(), gemv_chunk_groups(w));
}

namespace {
// One pool job over the row groups of n matrices, matrix(i) each: part(i, g0, g1) for every part
// of every matrix, shared as reset_ranges says. A thread that has run out of one matrix takes the
// others' tails before it moves on to the next: no barrier between the matrices, and none needed.
// One thread: each whole matrix in one part.
template <class Matrix, class Part>
void run_parts(ThreadPool& pool, std::size_t n, const Matrix& matrix, const Part& part) {
  std::span<SharedRanges> ranges = gemv_ranges(n);
  for (std::size_t i = 0; i < n; ++i) reset_ranges(ranges[i], matrix(i), pool);
  pool.run([&](int t) {
    for (std::size_t i = 0; i < n; ++i) {
      std::int64_t g0, g1;
      while (ranges[i].next(t, g0, g1)) part(i, g0, g1);
    }
  });
}
}  // namespace

void run_gemv(ThreadPool& pool, const KernelVariant& k, const PackedMatrix& w, const BlockQ8K* x,
              std::int64_t x_cols, std::span<float> y) {
  check_gemv_args(w, x, x_cols, y.data(), std::int64_t(y.size()));
  // Prepared here, read by every thread: pool.run publishes the buffer before the workers start.
  const std::uint8_t* acts = prepare_gemv(k, w, x);
  run_parts(pool, 1, [&](std::size_t) -> const PackedMatrix& { return w; },
            [&](std::size_t, std::int64_t g0, std::int64_t g1) { gemv_rows(k, w, x, acts, y.data(), g0, g1); });
}

const std::uint8_t* prepare_gemv(const KernelVariant& k, const PackedMatrix& w, const BlockQ8K* x) {
  const GemvPhases& ph = k.phases;
  if (!ph) return nullptr;
  std::uint8_t* acts = kernel_scratch(ph.acts_bytes(ph.plan, w), kScratchSharedGemv);
  ph.prepare(ph.plan, w, x, acts);
  return acts;
}

void gemv_rows(const KernelVariant& k, const PackedMatrix& w, const BlockQ8K* x, const std::uint8_t* acts, float* y,
               std::int64_t g0, std::int64_t g1) {
  if (acts)
    k.phases.rows(k.phases.plan, w, acts, y, g0, g1);
  else
    k.gemv(w, x, y, g0, g1);
}

void run_gemv(ThreadPool& pool, const KernelVariant& k, const PackedMatrix& w, const Q8KBatch& x,
              std::span<float> y) {
  if (x.tokens != 1) fail("gemv: the activation batch holds ", x.tokens, " tokens, need exactly 1");
  run_gemv(pool, k, w, x.row(0), x.cols, y);
}

void run_gemm(ThreadPool& pool, const KernelVariant& k, const PackedMatrix& w, const Q8KBatch& x,
              std::span<float> y, std::int64_t ldy) {
  check_gemm_args(w, x, y.data(), ldy, std::int64_t(y.size()));
  run_parts(pool, 1, [&](std::size_t) -> const PackedMatrix& { return w; },
            [&](std::size_t, std::int64_t g0, std::int64_t g1) { k.gemm(w, x, y.data(), ldy, g0, g1); });
}

bool gemv_shares_activations(const MatmulOutput& a, const MatmulOutput& b) {
  const GemvPhases &pa = a.kernel->phases, &pb = b.kernel->phases;
  return pa.plan == pb.plan && pa.prepare == pb.prepare && pa.acts_bytes == pb.acts_bytes &&
         a.w->layout == b.w->layout && a.w->cols == b.w->cols;
}

bool gemv_start_fetched(const PackedMatrix& w, std::int64_t g0, std::int64_t g1) {
  return g0 < g1 && !w.bytes.empty() && w.block(g1, 0) - w.block(g0, 0) <= kGemvStartMaxRangeBytes;
}

void prefetch_gemv_start(const KernelVariant& k, const PackedMatrix& w, std::int64_t g0, std::int64_t g1) {
  if (!gemv_start_fetched(w, g0, g1)) return;
  const std::uint8_t* end = w.block(g1, 0);
  std::int64_t starts[kMaxGemvStreams];
  const int n = k.phases.streams ? k.phases.streams(w, g0, g1, starts) : (starts[0] = g0, 1);
  for (int q = 0; q < n; ++q) {
    const std::uint8_t* p = w.block(starts[q], 0);
    const std::uint8_t* last = std::min(end, p + kGemvStartBytes);
    // Into L2 (prefetcht1): a stream's first 32 KB, times every stream of one or more matrices,
    // would push the caller's own working set out of L1.
    for (; p < last; p += 64) __builtin_prefetch(p, 0, 2);
  }
}

void run_matmuls(ThreadPool& pool, std::span<const MatmulOutput> outputs, const Q8KBatch& x) {
  if (outputs.empty()) return;
  const auto matrix = [&](std::size_t i) -> const PackedMatrix& { return *outputs[i].w; };
  if (x.tokens == 1) {
    bool shared = true;
    for (const MatmulOutput& o : outputs) {
      check_gemv_args(*o.w, x.row(0), x.cols, o.y, o.w->rows);
      shared = shared && gemv_shares_activations(outputs.front(), o);
    }
    if (!shared) {
      for (const MatmulOutput& o : outputs) run_gemv(pool, *o.kernel, *o.w, x, std::span(o.y, std::size_t(o.w->rows)));
      return;
    }
    const std::uint8_t* acts = prepare_gemv(*outputs.front().kernel, *outputs.front().w, x.row(0));
    run_parts(pool, outputs.size(), matrix, [&](std::size_t i, std::int64_t g0, std::int64_t g1) {
      const MatmulOutput& o = outputs[i];
      gemv_rows(*o.kernel, *o.w, x.row(0), acts, o.y, g0, g1);
    });
    return;
  }
  for (const MatmulOutput& o : outputs) check_gemm_args(*o.w, x, o.y, o.w->rows, x.tokens * o.w->rows);
  run_parts(pool, outputs.size(), matrix, [&](std::size_t i, std::int64_t g0, std::int64_t g1) {
    const MatmulOutput& o = outputs[i];
    o.kernel->gemm(*o.w, x, o.y, o.w->rows, g0, g1);
  });
}

void check_against_reference(const PackedMatrix& w, const KernelVariant& k, std::span<const float> y,
                             const Q8KBatch& x, std::int64_t ldy) {
  const std::int64_t groups = w.row_groups(), n = std::min<std::int64_t>(groups, 8);
  std::vector<float> ref(std::size_t(x.tokens * ldy), NAN);
  for (std::int64_t g0 : {std::int64_t(0), groups - n}) {
    if (x.tokens == 1)
      gemv_reference(w, x.row(0), ref.data(), g0, g0 + n);
    else
      gemm_reference(w, x, ref.data(), ldy, g0, g0 + n);
    for (std::int64_t t = 0; t < x.tokens; ++t)
      for (std::int64_t r = g0 * w.layout->rows; r < (g0 + n) * w.layout->rows; ++r) {
        const auto i = std::size_t(t * ldy + r);
        if (std::memcmp(&y[i], &ref[i], sizeof(float)) != 0)
          fail(w.layout->name, " ", k.name(), " differs from the reference kernel at token ", t, " row ", r, " (",
               y[i], " vs ", ref[i], ")");
      }
  }
}

}  // namespace ternlab
