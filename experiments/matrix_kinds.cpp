// What the kernel kinds share (experiments/matrix_kinds.hpp): arms of a layout x kernel x threads
// or a peer's format on synthetic weights, built, verified against the oracle and timed for one
// activation row (gemv_kind.cpp) or a batch (gemm_kind.cpp); the oracle and bandwidth kinds read
// the same arm keys.
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <limits>
#include <map>
#include <ranges>
#include <set>
#include <sstream>
#include <thread>
#include <utility>

#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/gemv_arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/matrix_kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/memory.hpp"
#include "experiments/run_context.hpp"
#include "kernels/catalog.hpp"
#include "kernels/cpu.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/oracle.hpp"
#include "kernels/peers/i2s.hpp"
#include "kernels/peers/peers.hpp"
#include "kernels/peers/tq1.hpp"
#include "kernels/peers/tq2.hpp"
#include "kernels/testdata.hpp"
#include "layouts/registry.hpp"

namespace ternlab::experiments {

namespace kernel_kind {

constexpr std::int64_t kMaxDim = std::int64_t(1) << 20;

// The peers' formats and AVX2 kernels (kernels/peers: BitNet's I2_S, ggml's TQ2_0 and TQ1_0): an
// arm whose layout names one runs it beside the layouts, verified by the peer's own bit-exact check
// and, where its arithmetic gives integers, against the oracle. The same names are declared layouts
// (one byte format per peer, layouts/tq2_0.hpp, tq1_0.hpp, i2_s.hpp): an arm naming one of the catalog's kernels
// (reference/scalar, ...) runs that kernel on the layout instead.
const peers::PeerFormat* arm_peer(const ArmSpec& arm) {
  const Located at = arm.at("layout");
  const peers::PeerFormat* p = at ? peers::find_peer(as_string(at)) : nullptr;
  const Located k = arm.at("kernel");
  if (!p || !k) return p;
  const std::string kernel = as_string(k);
  return strategy_named(kernel.substr(0, kernel.find('/'))) ? nullptr : p;
}

bool arm_spawn(const ArmSpec& arm) {
  const Located at = arm.at("spawn");
  return at ? as_boolean(at) : false;
}

// Where a gemv arm prepares its activations: once per call, shared by the threads (the default),
// or by every thread for itself (the one-phase kernel, for measuring what sharing saves).
bool arm_shared_acts(const ArmSpec& arm) {
  const Located at = arm.at("acts");
  if (!at) return true;
  const std::string v = as_string(at);
  if (v != "shared" && v != "per-thread") fail_at(at, "'", v, "' is not an activation mode (shared or per-thread)");
  return v == "shared";
}

void check_common(const RunSpec& run) {
  key::seed(run);
  key::control(run);
  check_timed_run(run);
  for (const ArmSpec& a : run.arms) {
    arm_threads(run, a);
    arm_spawn(a);
    arm_shared_acts(a);
  }
}

struct Shape {
  std::int64_t rows, cols, tokens;
};

Shape run_shape(const RunSpec& run, bool batch) {
  Shape s;
  s.rows = run.integer("shape.rows", 256, 1, kMaxDim);
  s.cols = run.integer("shape.cols", 1024, 128, kMaxDim);
  s.tokens = batch ? run.integer("shape.tokens", 4, 1, 4096) : 1;
  if (s.cols % kBlockK != 0) fail_at(run.at("shape.cols"), s.cols, " is not a multiple of ", kBlockK, " (one scale per 128 weights)");
  if (double(s.rows) * double(s.cols) > double(std::int64_t(1) << 32))
    fail_at(run.at("shape.rows"), s.rows, " x ", s.cols, " weights exceed the 2^32 this harness holds in memory");
  return s;
}

// A peer arm left to `best` on a CPU without AVX2 is skipped and named in the report, so one config
// serves x86 and ARM machines; naming the peer's kernel makes it required.
bool peer_skipped(const ArmSpec& a) {
  if (isa_supported(Isa::avx2)) return false;
  const Located k = a.at("kernel");
  return !k || as_string(k) == "best";
}

void validate_peer(const ArmSpec& a, const peers::PeerFormat& p, const Shape& s) {
  const Located at = a.at("layout");
  if (const Located k = a.at("kernel"); k && as_string(k) != "best" && as_string(k) != p.kernel)
    fail_at(k, "the ", p.label, " peer arm has one kernel, ", p.kernel, " (or best); '", as_string(k), "' is not it");
  if (!isa_supported(Isa::avx2) && !peer_skipped(a))
    fail_at(a.at("kernel"), "the ", p.label, " peer arm runs its AVX2 kernel, and this CPU (", cpu_features().model, ") has no AVX2");
  if (arm_spawn(a)) fail_at(a.at("spawn"), "the ", p.label, " peer arm runs on the persistent pool only (spawn = false)");
  if (s.cols % p.block != 0)
    fail_at(at, p.label, " holds ", p.block, "-weight blocks; shape.cols = ", s.cols, " is not a multiple of ", p.block);
}

// `weights`: "warm" runs every call on one copy of an arm's weights, which a cache holds between
// calls where it fits; "cold" cycles through as many identical copies as together hold twice the
// last-level cache (the ceiling buffer where the CPU reports no cache size), so that every call
// reads its weights from memory, as the memory ceiling does, and a fraction of it is one.
struct WeightCopies {
  std::int64_t set_bytes = 0;  // 0: warm
  int count = 0;               // weight_copies: this many, whatever the size
  std::string why;             // "2 x the 480 MiB last-level cache"
  bool cold() const { return set_bytes > 0 || count > 1; }
};

WeightCopies weight_copies(const RunSpec& run) {
  const std::string mode = run.string("weights", "warm");
  if (mode != "warm" && mode != "cold")
    fail_at(run.at("weights"), "'", mode, "' is not a weights mode (warm: one copy, cold: copies beyond the last-level cache)");
  if (run.at("weight_copies")) {
    if (run.at("weights")) fail_at(run.at("weight_copies"), "give weights or weight_copies, not both");
    const auto n = int(run.integer("weight_copies", 1, 1, 1 << 16));
    return {0, n, cat(n, " copies (weight_copies)")};
  }
  if (mode == "warm") return {};
  // A smaller set for tests and small machines, named in every report that uses it.
  if (const char* env = std::getenv("TERNLAB_COLD_WEIGHTS_MIB")) {
    char* end = nullptr;
    const long long mib = std::strtoll(env, &end, 10);
    if (end == env || *end != '\0' || mib < 1 || mib > (1 << 20))
      fail("TERNLAB_COLD_WEIGHTS_MIB=", env, " is not a whole number of MiB from 1 to 1048576");
    return {std::int64_t(mib) << 20, 0, cat(mib, " MiB (TERNLAB_COLD_WEIGHTS_MIB)")};
  }
  if (const std::int64_t llc = last_level_cache_bytes(); llc > 0) {
    const std::int64_t set = cold_set_bytes(llc);
    return {set, 0,
            set == 2 * llc ? cat("2 x the ", llc >> 20, " MiB last-level cache")
                           : cat(set >> 20, " MiB, over 2 x the ", llc >> 20, " MiB last-level cache")};
  }
  const std::int64_t ceiling = key::ceiling_mib(run) << 20;
  return {ceiling, 0, cat("the ", ceiling >> 20, " MiB ceiling buffer (this CPU reports no cache size)")};
}

// The report's sentence on where the weights are read from.
std::string weights_sentence(const WeightCopies& w, std::int64_t llc) {
  if (!w.cold())
    return cat(" Each arm reads one copy of its weights every call (weights = \"warm\")",
               llc > 0 ? cat(": a matrix under the ", llc >> 20, " MiB last-level cache is read from it, not from memory.") : std::string("."));
  return cat(" Each arm's calls cycle through copies of its weights (", w.why, "; the count is the arm's copies=), so they read them from memory.");
}

int copies_of(const WeightCopies& w, double bytes) {
  if (w.count > 0) return w.count;
  return w.set_bytes <= 0 ? 1 : std::max(1, int(std::ceil(double(w.set_bytes) / bytes)));
}

// Refuses a cold run whose copies would not fit in memory, before they are made.
void check_copies_fit(const RunSpec& run, const WeightCopies& w, double total_bytes) {
  const AvailableMemory m = available_memory();
  if (!w.cold() || m.bytes < 0 || total_bytes + double(memory_margin(std::int64_t(total_bytes))) <= double(m.bytes)) return;
  fail_at(run.at(w.count > 0 ? "weight_copies" : "weights"), "the weights' copies need ", gib_text(total_bytes), " (", w.why,
          " per layout), and ", gib_text(double(m.bytes)), " is available (", m.source,
          "): run fewer layouts at once, or one copy (weights = \"warm\")");
}

void validate_matrix_arm(const RunSpec& run, const ArmSpec& a, const Shape& s, bool batch) {
  if (const peers::PeerFormat* p = arm_peer(a)) {
    validate_peer(a, *p, s);
    return;
  }
  const LayoutInfo& L = arm_layout(a);
  if (s.rows % L.rows != 0)
    fail_at(run.at("shape.rows"), s.rows, " rows cannot be packed as ", L.name, " (arm '", a.name, "'): rows must be a multiple of ", L.rows);
  arm_kernel(a, L, batch);
  if (batch) {
    const Located at = a.at("leftover");
    if (at) {
      const std::string v = as_string(at);
      if (v != "pad" && v != "gemv") fail_at(at, "'", v, "' is not a leftover strategy (pad: one zero-padded tile pass; gemv: one gemv per leftover row)");
    }
  }
}

void validate_matrix_kind(const RunSpec& run, bool batch) {
  check_common(run);
  weight_copies(run);
  const Shape s = run_shape(run, batch);
  for (const ArmSpec& a : run.arms) validate_matrix_arm(run, a, s, batch);
}

// Runs fn(t) on `threads` threads: from the persistent pool, or spawned fresh for this call.
std::function<void(const std::function<void(int)>&)> dispatcher(Pools& pools, int threads, bool spawn) {
  if (!spawn) {
    ThreadPool* pool = &pools.get(threads);
    return [pool](const std::function<void(int)>& fn) { pool->run(fn); };
  }
  return [threads](const std::function<void(int)>& fn) {
    std::vector<std::thread> ts;
    ts.reserve(std::size_t(threads));
    for (int t = 0; t < threads; ++t) ts.emplace_back(fn, t);
    for (auto& t : ts) t.join();
  };
}

struct MatrixData {
  TernaryMatrix weights;
  UnitActivations acts;
  Q8KBatch x;
  std::vector<std::int64_t> want;
  std::map<std::string, std::vector<PackedMatrix>> packed;  // by layout name: its copies (`weights`)
};

// One arm's turn through identical copies of its weights (shared by the arms of one layout): each
// call takes the next; one thread times an arm, so the turn needs no lock.
template <class M>
struct Rotation {
  std::shared_ptr<const std::vector<M>> copies;
  std::size_t turn = 0;
  const M& next() { return (*copies)[turn++ % copies->size()]; }
};

std::string compare_exact(const std::vector<float>& y, const std::vector<std::int64_t>& want, std::int64_t rows) {
  for (std::size_t i = 0; i < want.size(); ++i)
    if (!(double(y[i]) == double(want[i])))
      return cat("token ", i / std::size_t(rows), " row ", i % std::size_t(rows), ": got ", y[i], ", oracle ", want[i]);
  return "";
}

// A ggml peer (TQ2_0, TQ1_0) on the run's q8_K blocks: ggml's mul_mat over rotating copies of
// `first`, checked bit for bit against the model of the path that ran and against the oracle.
// Returns the number of copies.
template <class M>
int ggml_peer(M first, void (*run)(ThreadPool&, const M&, const Q8KBatch&, float*, std::int64_t),
              void (*check_model)(const M&, const Q8KBatch&, std::span<const float>, std::int64_t),
              const std::shared_ptr<const MatrixData>& data, ThreadPool* pool, const std::shared_ptr<std::vector<float>>& y,
              std::int64_t rows, const WeightCopies& cold, ArmSetup& setup, std::function<std::string()>& check) {
  setup.weight_bytes = double(first.bytes.size());
  const int copies = copies_of(cold, setup.weight_bytes);
  const auto w = std::make_shared<Rotation<M>>(Rotation<M>{std::make_shared<const std::vector<M>>(std::size_t(copies), std::move(first))});
  setup.call = [=] { run(*pool, w->next(), data->x, y->data(), rows); };
  check = [=] {
    check_model(w->copies->front(), data->x, *y, rows);
    return compare_exact(*y, data->want, rows);
  };
  return copies;
}

// A peer arm on the run's weights (unit scales: I2_S's one per-tensor scale is 1, and TQ2_0's and
// TQ1_0's 256-weight block scales are 1) and the run's activations: I2_S quantises the same floats to
// its I8_S, the ggml peers read the q8_K blocks the layouts read, so their outputs are the oracle's
// integers too.
ArmSetup peer_arm(const ArmSpec& a, const peers::PeerFormat& peer, const std::shared_ptr<const MatrixData>& data, const Shape& s,
                  int threads, ThreadPool* pool, double act_bytes, double out_bytes, const WeightCopies& cold) {
  auto y = std::make_shared<std::vector<float>>(std::size_t(s.rows * s.tokens));
  const std::int64_t rows = s.rows;
  ArmSetup setup;
  std::function<std::string()> check;
  int copies = 1;
  if (peer.layout == "i2_s") {
    peers::I2sMatrix first = peers::pack_i2s(data->weights, a.name);
    setup.weight_bytes = double(first.bytes.size());
    copies = copies_of(cold, setup.weight_bytes);
    const auto w = std::make_shared<Rotation<peers::I2sMatrix>>(
        Rotation<peers::I2sMatrix>{std::make_shared<const std::vector<peers::I2sMatrix>>(std::size_t(copies), std::move(first))});
    const auto x = std::make_shared<const peers::I8sActs>(peers::quantize_i8s(data->acts.f.data(), s.tokens, s.cols));
    if (s.tokens == 1)
      setup.call = [=] { peers::run_i2s_gemv(*pool, w->next(), *x, y->data()); };
    else
      setup.call = [=] { peers::run_i2s_gemm(*pool, w->next(), *x, y->data(), rows); };
    check = [=] {
      peers::check_i2s(w->copies->front(), *x, *y, rows);
      return std::string();
    };
  } else if (peer.layout == "tq2_0") {
    copies = ggml_peer(peers::pack_tq2(data->weights, a.name), peers::run_tq2_mul_mat, peers::check_tq2, data, pool, y, rows, cold,
                       setup, check);
  } else if (peer.layout == "tq1_0") {
    copies = ggml_peer(peers::pack_tq1(data->weights, a.name), peers::run_tq1_mul_mat, peers::check_tq1, data, pool, y, rows, cold,
                       setup, check);
  } else {
    fail("peer arm '", a.name, "': no driver for the peer format ", peer.layout);
  }
  setup.name = a.name;
  setup.layout = std::string(peer.layout);
  setup.kernel = std::string(peer.kernel);
  setup.threads = threads;
  setup.options = copies > 1 ? cat("peer copies=", copies) : "peer";
  setup.bits_per_weight = setup.weight_bytes * 8 / double(s.rows * s.cols);
  setup.bytes = setup.weight_bytes + act_bytes + out_bytes;
  setup.weights = double(s.rows * s.cols);
  setup.macs = setup.weights * double(s.tokens);
  const auto call = setup.call;
  setup.verify = [=] {
    std::fill(y->begin(), y->end(), std::numeric_limits<float>::quiet_NaN());
    call();
    try {
      return check();
    } catch (const Error& e) {
      return std::string(e.what());
    }
  };
  return setup;
}

// The arms of `specs` on the run's synthetic ternary weights (seed from the run): the gemv and gemm
// kinds' arms, and the ternary family of the lattice layout-scale kind.
struct MatrixArms {
  std::vector<ArmSetup> arms;
  std::vector<std::string> skipped;
  std::set<int> thread_counts;
};

MatrixArms build_matrix_arms(const RunSpec& run, const std::vector<const ArmSpec*>& specs, const Shape& s, bool batch, Pools& pools) {
  MatrixArms out;
  std::vector<ArmSetup>& arms = out.arms;
  std::vector<std::string>& skipped = out.skipped;
  std::set<int>& thread_counts = out.thread_counts;
  const auto seed = std::uint64_t(key::seed(run));
  auto data = std::make_shared<MatrixData>();
  data->weights = make_weights(s.rows, s.cols, seed, Fill::random, ScaleKind::unit);
  data->acts = make_unit_activations(s.tokens, s.cols, seed + 1);
  data->x = quantize_batch(data->acts.f.data(), s.tokens, s.cols);
  data->want = oracle_int(data->weights, data->acts.i8, s.tokens);
  const double act_bytes = double(s.tokens * data->x.blocks()) * sizeof(BlockQ8K);
  const double out_bytes = double(s.rows * s.tokens) * sizeof(float);
  const WeightCopies cold = weight_copies(run);
  {
    std::set<std::string> layouts;  // peers' formats are declared layouts too, of the same size
    for (const ArmSpec* ap : specs)
      if (!(arm_peer(*ap) && peer_skipped(*ap))) layouts.insert(as_string(ap->at("layout")));
    double total = 0;
    for (const std::string& name : layouts) {
      const double bytes = double(s.rows) * double(s.cols) * find_layout(name).bits_per_weight() / 8;
      total += bytes * copies_of(cold, bytes);
    }
    check_copies_fit(run, cold, total);
  }

  for (const ArmSpec* ap : specs) {
    const ArmSpec& a = *ap;
    if (const peers::PeerFormat* peer = arm_peer(a)) {
      if (peer_skipped(a)) {
        skipped.push_back(cat("arm '", a.name, "' (", peer->label, ") skipped: its kernel is AVX2 code, and this CPU (",
                              cpu_features().model, ") has no AVX2"));
        continue;
      }
      const int threads = arm_threads(run, a);
      thread_counts.insert(threads);
      arms.push_back(peer_arm(a, *peer, data, s, threads, &pools.get(threads), act_bytes, out_bytes, cold));
      continue;
    }
    const LayoutInfo& L = arm_layout(a);
    const KernelVariant k = arm_kernel(a, L, batch);
    const int threads = arm_threads(run, a);
    const bool spawn = arm_spawn(a);
    const std::string leftover = batch && a.at("leftover") ? as_string(a.at("leftover")) : "pad";
    thread_counts.insert(threads);
    if (!data->packed.count(std::string(L.name))) {
      PackedMatrix first = pack(data->weights, L);
      const int copies = copies_of(cold, double(first.bytes.size()));
      data->packed.emplace(std::string(L.name), std::vector<PackedMatrix>(std::size_t(copies), std::move(first)));
    }
    // Every copy is verified below; the rotation's pointer shares the run's data, which owns the copies.
    const auto rotation = std::make_shared<Rotation<PackedMatrix>>(
        Rotation<PackedMatrix>{std::shared_ptr<const std::vector<PackedMatrix>>(data, &data->packed.at(std::string(L.name)))});
    const std::vector<PackedMatrix>* copies = rotation->copies.get();
    const auto next = [rotation] { return &rotation->next(); };
    const PackedMatrix* first = &copies->front();
    auto y = std::make_shared<std::vector<float>>(std::size_t(s.rows * s.tokens));
    const auto run_on = dispatcher(pools, threads, spawn);
    const std::int64_t groups = first->row_groups();
    std::function<void()> call;
    const bool shared = arm_shared_acts(a);
    if (!batch) {
      call = [=] {
        const PackedMatrix* p = next();
        const BlockQ8K* x = data->x.row(0);
        const std::uint8_t* acts = shared ? prepare_gemv(k, *p, x) : nullptr;
        run_on([&](int t) {
          const auto [g0, g1] = ThreadPool::split(groups, t, threads);
          if (g0 < g1) gemv_rows(k, *p, x, acts, y->data(), g0, g1);
        });
      };
    } else if (leftover == "pad" || s.tokens % 4 == 0) {
      call = [=] {
        const PackedMatrix* p = next();
        run_on([&](int t) {
          const auto [g0, g1] = ThreadPool::split(groups, t, threads);
          if (g0 < g1) k.gemm(*p, data->x, y->data(), s.rows, g0, g1);
        });
      };
    } else {
      // Full tiles through gemm, then one gemv per leftover row: each streams every weight again.
      const std::int64_t full = s.tokens / 4 * 4;
      auto head = std::make_shared<Q8KBatch>();
      if (full > 0)
        *head = batch_from_rows(std::vector<BlockQ8K>(data->x.rows.begin(), data->x.rows.begin() + full * data->x.blocks()), full, s.cols);
      call = [=] {
        const PackedMatrix* p = next();
        if (full > 0)
          run_on([&](int t) {
            const auto [g0, g1] = ThreadPool::split(groups, t, threads);
            if (g0 < g1) k.gemm(*p, *head, y->data(), s.rows, g0, g1);
          });
        for (std::int64_t j = full; j < s.tokens; ++j) {
          const std::uint8_t* acts = shared ? prepare_gemv(k, *p, data->x.row(j)) : nullptr;
          run_on([&](int t) {
            const auto [g0, g1] = ThreadPool::split(groups, t, threads);
            if (g0 < g1) gemv_rows(k, *p, data->x.row(j), acts, y->data() + j * s.rows, g0, g1);
          });
        }
      };
    }
    ArmSetup setup;
    setup.name = a.name;
    setup.layout = std::string(L.name);
    setup.kernel = k.name();
    setup.threads = threads;
    std::vector<std::string> opts;
    if (spawn) opts.push_back("spawn");
    if (!shared && k.phases) opts.push_back("acts=per-thread");
    if (batch) opts.push_back("leftover=" + leftover);
    if (copies->size() > 1) opts.push_back(cat("copies=", copies->size()));
    setup.options = join(opts, " ");
    setup.bits_per_weight = L.bits_per_weight();
    setup.weight_bytes = double(first->bytes.size());
    setup.bytes = setup.weight_bytes + act_bytes + out_bytes;
    setup.weights = double(s.rows * s.cols);
    setup.macs = setup.weights * double(s.tokens);
    setup.call = call;
    setup.verify = [=] {
      for (std::size_t c = 0; c < copies->size(); ++c) {
        std::fill(y->begin(), y->end(), std::numeric_limits<float>::quiet_NaN());
        call();
        if (std::string why = compare_exact(*y, data->want, s.rows); !why.empty()) return why;
      }
      return std::string();
    };
    arms.push_back(std::move(setup));
  }
  return out;
}

RunReport run_matrix_kind(const RunSpec& run, RunContext& ctx, bool batch) {
  const Shape s = run_shape(run, batch);
  const auto seed = std::uint64_t(key::seed(run));
  std::vector<const ArmSpec*> specs;
  for (const ArmSpec& a : run.arms) specs.push_back(&a);
  MatrixArms built = build_matrix_arms(run, specs, s, batch, ctx.pools);
  std::vector<ArmSetup>& arms = built.arms;
  const std::vector<std::string>& skipped = built.skipped;
  const std::set<int>& thread_counts = built.thread_counts;
  if (key::control(run)) {
    // Same pools and row partition as the arms, no weight bytes: dispatch and output writes only.
    for (int threads : thread_counts) {
      ThreadPool* pool = &ctx.pools.get(threads);
      const std::int64_t groups = s.rows;  // finest partition; the control has no row groups of its own
      auto y = std::make_shared<std::vector<float>>(std::size_t(s.rows * s.tokens));
      ArmSetup c;
      c.name = thread_counts.size() == 1 ? "no-weights control" : cat("no-weights control t=", threads);
      c.threads = threads;
      c.control = true;
      c.options = "no weight bytes";
      c.call = [=] {
        pool->run([&](int t) {
          const auto [r0, r1] = ThreadPool::split(groups, t, threads);
          for (std::int64_t tok = 0; tok < s.tokens; ++tok)
            std::fill(y->begin() + tok * s.rows + r0, y->begin() + tok * s.rows + r1, 0.0f);
        });
      };
      arms.push_back(std::move(c));
    }
  }
  if (thread_counts.empty())
    fail(run.file, ": every arm was skipped on this CPU (", join(skipped, "; "), ")");
  const MeasureOptions opt = measure_options(run);
  const TimingResult r = measure_arms(std::move(arms), opt, ctx.pools, ctx.progress);
  RunReport rep = report_timing(run, r);
  const WeightCopies weights = weight_copies(run);
  if (!skipped.empty()) {
    rep.markdown += cat("\n", join(skipped, "\n\n"), "\n");
    rep.json["skipped_arms"] = skipped;
  }
  rep.markdown = cat("shape ", s.rows, " x ", s.cols, batch ? cat(", ", s.tokens, " tokens") : std::string(", 1 token (gemv)"),
                     "; synthetic ternary weights (seed ", seed, ", unit scales) and integer activations, so the oracle is exact.",
                     weights_sentence(weights, last_level_cache_bytes()), "\n\n") +
                 rep.markdown;
  rep.json["weights"] = weights.cold() ? "cold" : "warm";
  // Put the shape line right under the title.
  const auto nl = rep.markdown.find("### ");
  if (nl != std::string::npos) {
    const std::string title_line = rep.markdown.substr(nl, rep.markdown.find('\n', nl) - nl + 2);
    rep.markdown.erase(nl, title_line.size());
    rep.markdown = title_line + rep.markdown;
  }
  return rep;
}

std::int64_t matrix_units(const RunSpec& run) {
  std::set<int> counts;
  std::size_t arms = 0;
  for (const ArmSpec& a : run.arms)
    if (!(arm_peer(a) && peer_skipped(a))) {
      counts.insert(arm_threads(run, a));
      ++arms;
    }
  MeasureOptions o;
  o.rounds = int(key::rounds(5)(run));
  o.warmup = int(key::warmup(1)(run));
  return measure_units(arms + (key::control(run) ? counts.size() : 0), o);
}

std::vector<KeySpec> gemv_keys() {
  std::vector<KeySpec> k = common_keys();
  for (const KeySpec& m : matrix_keys()) k.push_back(m);
  k.push_back({"arm.acts", Type::string, true,
               "gemv activations: shared (prepared once per call for all threads) or per-thread (each thread its own)"});
  return k;
}

}  // namespace kernel_kind

using namespace kernel_kind;

void validate_gemv_arm(const RunSpec& run, const ArmSpec& arm, std::int64_t rows, std::int64_t cols) {
  arm_threads(run, arm);
  arm_spawn(arm);
  arm_shared_acts(arm);
  if (cols % kBlockK != 0)
    fail_at(run.at("shape.cols"), cols, " is not a multiple of ", kBlockK, " (arm '", arm.name, "' is a ternary layout: one scale per ",
            kBlockK, " weights)");
  validate_matrix_arm(run, arm, Shape{rows, cols, 1}, false);
}

GemvArms gemv_arms(const RunSpec& run, const std::vector<const ArmSpec*>& arms, std::int64_t rows, std::int64_t cols, Pools& pools) {
  MatrixArms built = build_matrix_arms(run, arms, Shape{rows, cols, 1}, false, pools);
  return {std::move(built.arms), std::move(built.skipped)};
}

bool is_gemv_arm_skipped(const ArmSpec& arm) { return arm_peer(arm) && peer_skipped(arm); }

}  // namespace ternlab::experiments
