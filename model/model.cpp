#include <optional>
#include "model/model.hpp"

#include <algorithm>
#include <array>
#include <atomic>
#include <bit>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <ctime>
#include <map>
#include <string_view>
#include <tuple>

#include "common/error.hpp"
#include "common/fp16.hpp"
#include "common/strings.hpp"
#include "common/table.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/measure.hpp"
#include "kernels/testdata.hpp"
#include "kernels/vector/vector_ops.hpp"
#include "lattice/records.hpp"
#include "layouts/records/all.hpp"
#include "layouts/registry.hpp"

namespace ternlab::model {

// --- shared numerics ----------------------------------------------------------------------------

// Each row's sum of squares in double, in order of i (ggml accumulates the squares in double),
// eight rows at a time side by side (VectorOps::squares_sums).
constexpr int kInterleave = 8;

void rms_norm_rows(const float* x, std::int64_t x_stride, const float* g, float* y, std::int64_t y_stride, int rows,
                   std::int64_t n, float eps) {
  for (int r0 = 0; r0 < rows; r0 += kInterleave) {
    const int block = std::min(kInterleave, rows - r0);
    double sums[kInterleave];
    vector_ops().squares_sums(x + r0 * x_stride, x_stride, block, n, sums);
    for (int r = 0; r < block; ++r) {
      const float mean = float(sums[r] / double(n));
      const float scale = 1.0f / std::sqrt(mean + eps);
      const float* xr = x + (r0 + r) * x_stride;
      float* yr = y + (r0 + r) * y_stride;
      for (std::int64_t i = 0; i < n; ++i) yr[i] = xr[i] * scale * g[i];
    }
  }
}

void l2_norm_rows(float* x, std::int64_t stride, int rows, std::int64_t n, float eps) {
  for (int r0 = 0; r0 < rows; r0 += kInterleave) {
    const int block = std::min(kInterleave, rows - r0);
    double sums[kInterleave];
    vector_ops().squares_sums(x + r0 * stride, stride, block, n, sums);
    for (int r = 0; r < block; ++r) {
      const float scale = 1.0f / std::max(std::sqrt(float(sums[r])), eps);  // ggml_l2_norm: x / max(||x||, eps)
      float* xr = x + (r0 + r) * stride;
      for (std::int64_t i = 0; i < n; ++i) xr[i] *= scale;
    }
  }
}

float softplus(float x) { return x > 20.0f ? x : std::log1p(std::exp(x)); }

const char* OpProfile::name(int op) {
  static const char* names[] = {"ternary matmul", "q8_K quantize", "Hadamard", "Gated DeltaNet",
                                "attention",      "norms",         "other"};
  return names[op];
}

OpTimer::OpTimer(OpProfile* p, OpProfile::Op op) : p_(p), op_(op), t0_(0) {
  if (p_) t0_ = std::chrono::steady_clock::now().time_since_epoch().count();
}
OpTimer::~OpTimer() {
  if (p_)
    p_->seconds[op_] += double(std::chrono::steady_clock::now().time_since_epoch().count() - t0_) *
                        double(std::chrono::steady_clock::period::num) / double(std::chrono::steady_clock::period::den);
}

Q8KBatch rotate_and_quantize(const ModelConfig& c, std::vector<float> x, int tokens, std::int64_t k, ThreadPool& pool,
                             OpProfile* profile, const RowsStep& before, OpProfile::Op before_op) {
  // The sign vector is looked up once; signs_for throws for a width without one or one that is
  // not a multiple of the block, so the blocks are whole.
  const std::vector<float>* signs = c.rotation.identity ? nullptr : &c.rotation.signs_for(k);
  const std::int64_t block = c.rotation.identity ? kQK : c.rotation.block;
  // One token goes through gemv (TernaryLinear::apply), which reads rows only.
  const Q8KTiles tiles = tokens == 1 ? Q8KTiles::skip : Q8KTiles::build;
  const auto rotate = [&](std::int64_t t0, std::int64_t t1, std::int64_t c0, std::int64_t c1) {
    if (signs)
      for (std::int64_t t = t0; t < t1; ++t)
        for (std::int64_t b = c0 / block; b < c1 / block; ++b) c.rotation.forward_block(x.data() + t * k, *signs, b);
  };
  // Units of whole rotation blocks and whole 256-blocks: each (a tile's tokens x a rotation block,
  // or 256 columns) is made, rotated and quantised while it sits in the core's cache, one pass over
  // the floats. A width of a half 256-block at its end (cols % 256 == 128) takes the passes one by one.
  const std::int64_t unit = std::max<std::int64_t>(block, kQK);
  if (k % unit != 0) {
    if (before) {
      OpTimer t(profile, before_op);
      pool.run_split(tokens, tokens == 1, [&](std::int64_t t0, std::int64_t t1) { before(t0, t1, 0, k); });
    }
    {
      OpTimer t(profile, OpProfile::hadamard);
      pool.run_split(tokens, tokens == 1, [&](std::int64_t t0, std::int64_t t1) { rotate(t0, t1, 0, k); });
    }
    OpTimer t(profile, OpProfile::quantize);
    return quantize_batch(x.data(), tokens, k, pool, tiles);
  }
  // Profiled, the pass's wall time is shared among its steps as the threads spent it: each step's
  // summed thread time over the threads that ran the pass, the quantisation the rest.
  std::atomic<std::int64_t> before_ns{0}, rotate_ns{0};
  const auto now_ns = [&] {
    return profile ? std::chrono::steady_clock::now().time_since_epoch() / std::chrono::nanoseconds(1) : 0;
  };
  const double start = profile ? seconds_now(false) : 0.0;
  Q8KBatch out = quantize_batch(x.data(), tokens, k, pool, tiles, unit, [&](std::int64_t t0, std::int64_t t1, std::int64_t c0, std::int64_t c1) {
    const std::int64_t a = now_ns();
    if (before) before(t0, t1, c0, c1);
    const std::int64_t b = now_ns();
    rotate(t0, t1, c0, c1);
    if (profile) {
      if (before) before_ns += b - a;
      rotate_ns += now_ns() - b;
    }
  });
  if (!profile) return out;
  const double wall = seconds_now(false) - start;
  const std::int64_t units = (std::int64_t(tokens) + 3) / 4 * (k / unit);
  const double threads = tokens == 1 ? 1.0 : double(std::min<std::int64_t>(pool.size(), units));
  const double before_s = std::min(wall, double(before_ns) * 1e-9 / threads);
  const double rotate_s = std::min(wall - before_s, double(rotate_ns) * 1e-9 / threads);
  profile->seconds[before_op] += before_s;
  profile->seconds[OpProfile::hadamard] += rotate_s;
  profile->seconds[OpProfile::quantize] += wall - before_s - rotate_s;
  return out;
}

namespace {

// "blk.12.ffn_down.weight" -> "ffn_down": the tensor's role in any layer.
std::string_view tensor_role(std::string_view name) {
  if (name.starts_with("blk.")) {
    const auto dot = name.find('.', 4);
    if (dot != std::string_view::npos) name.remove_prefix(dot + 1);
  }
  if (name.ends_with(".weight")) name.remove_suffix(7);
  return name;
}

// Times `run` into profile->seconds[matmul] and, per call, into profile->matmul_calls.
template <class Run>
void timed_matmuls(std::span<const LinearOutput> outputs, std::int64_t tokens, OpProfile* profile, Run&& run) {
  if (!profile) return run();
  const double t0 = seconds_now(false);
  run();
  const double dt = seconds_now(false) - t0;
  profile->seconds[OpProfile::matmul] += dt;
  OpProfile::MatmulCall call{"", dt, 0};
  for (const LinearOutput& o : outputs) {
    if (!call.role.empty()) call.role += '+';
    call.role += tensor_role(o.linear->name);
    call.bytes += double(o.linear->bytes());
    call.macs += double(o.linear->in()) * double(o.linear->out()) * double(tokens);
  }
  profile->matmul_calls.push_back(std::move(call));
}

}  // namespace

void matmul(const TernaryLinear& w, const Q8KBatch& x, float* y, ThreadPool& pool, OpProfile* profile) {
  const LinearOutput one{&w, y};
  timed_matmuls(std::span(&one, 1), x.tokens, profile, [&] { w.apply(x, y, pool); });
}

void matmuls(std::initializer_list<LinearOutput> outputs, const Q8KBatch& x, ThreadPool& pool, OpProfile* profile) {
  const std::span all(outputs.begin(), outputs.size());
  timed_matmuls(all, x.tokens, profile, [&] { apply_all(all, x, pool); });
}

// --- loading ------------------------------------------------------------------------------------

namespace {

std::vector<float> read_floats(const gguf::File& f, const std::string& name) {
  const gguf::TensorInfo& t = f.tensor(name);
  const auto bytes = f.data(t);
  std::vector<float> out(std::size_t(t.elements()));
  if (t.tensor_type() == gguf::TensorType::f32) {
    std::memcpy(out.data(), bytes.data(), out.size() * 4);
  } else if (t.tensor_type() == gguf::TensorType::bf16) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t b;
      std::memcpy(&b, bytes.data() + 2 * i, 2);
      const std::uint32_t u = std::uint32_t(b) << 16;
      std::memcpy(&out[i], &u, 4);
    }
  } else if (t.tensor_type() == gguf::TensorType::f16) {
    for (std::size_t i = 0; i < out.size(); ++i) {
      std::uint16_t h;
      std::memcpy(&h, bytes.data() + 2 * i, 2);
      out[i] = fp16_to_float(h);
    }
  } else {
    fail(f.source, ": tensor '", name, "' is not a float tensor");
  }
  for (float v : out)
    if (!std::isfinite(v)) fail(f.source, ": tensor '", name, "' holds a non-finite value");
  f.release(t);
  return out;
}

PackedMatrix read_packed(const gguf::File& f, const std::string& name, const LayoutInfo& to,
                         ScaleRequantisation* lossy = nullptr) {
  const gguf::TensorInfo& t = f.tensor(name);
  const LayoutInfo& from = find_layout(gguf::ternary_layout_name(t.type, f.source + ": tensor '" + name + "'"));
  const auto bytes = f.data(t);
  PackedMatrix p =
      adopt_bytes(from, std::int64_t(t.ne[1]), std::int64_t(t.ne[0]), bytes.data(), bytes.size(), name);
  f.release(t);  // the source pages go before the repacked copy is made: one tensor in flight
  if (&to == &from) return p;
  if (!lossy) return transcode(p, to, name);
  ScaleRequantisation one;
  PackedMatrix q = requantise(p, to, name, &one);
  accumulate(*lossy, one, name);
  return q;
}

// The rate of kernel k on w with its weights read from memory: before each timed call a buffer of
// `evict_bytes` is read, which pushes the weights out of every cache level; the median of
// 2 x `rounds` single calls, Gweights/s (tokens 1) or GMAC/s.
double cold_rate(const PackedMatrix& w, const KernelVariant& k, std::int64_t tokens, ThreadPool& pool, int rounds,
                 std::int64_t evict_bytes) {
  static std::vector<std::uint64_t> evict;  // kept: one fill for every candidate of every load
  [[maybe_unused]] static volatile std::uint64_t sink = 0;  // a volatile store: the reads are kept
  if (evict.size() * 8 < std::size_t(evict_bytes)) evict.assign(std::size_t(evict_bytes) / 8, 1);
  const std::vector<float> xf = make_float_activations(tokens, w.cols, 17);
  const Q8KBatch x = quantize_batch(xf.data(), tokens, w.cols);
  std::vector<float> y(std::size_t(tokens * w.rows));
  const double work = double(w.rows) * double(w.cols) * double(tokens) / 1e9;
  std::vector<double> rates;
  for (int r = 0; r < 2 * rounds; ++r) {
    std::uint64_t acc = 0;
    for (std::size_t i = 0; i < std::size_t(evict_bytes) / 8; i += 8) acc += evict[i];  // a word a cache line
    sink = acc;
    rates.push_back(work / seconds_of([&] {
                      if (tokens == 1)
                        run_gemv(pool, k, w, x, y);
                      else
                        run_gemm(pool, k, w, x, y, w.rows);
                    }));
  }
  return median(rates);
}

}  // namespace

std::unique_ptr<Model> Model::load(const std::string& path, const LoadOptions& o) {
  auto m = std::unique_ptr<Model>(new Model());
  m->file_ = gguf::File::open(path, o.mode);
  const gguf::File& f = m->file_;
  m->cfg_ = ModelConfig::from_gguf(f);
  const ModelConfig& c = m->cfg_;
  const LayoutInfo& stored = find_layout(gguf::ternary_layout_name(std::uint32_t(c.ternary_type), f.source));
  // A peer's kernel named without a layout runs that peer's format.
  const peers::PeerFormat* named_peer = o.layout.empty() ? peers::find_peer_kernel(o.kernel) : nullptr;
  m->layout_ = named_peer ? &find_layout(named_peer->layout) : o.layout.empty() ? &stored : &find_layout(o.layout);
  m->layout_map_ = o.layout_map;
  const bool mixed = !o.layout_map.empty();
  if (mixed) {
    const std::string what = cat("layout map '", o.layout_map.text(), "'");
    if (o.requantise_scales) fail(what, ": a mixture takes exact layouts only; --requantise-scales has nothing to round");
    if (peers::find_peer_kernel(o.kernel)) fail(what, ": a peer's kernel ('", o.kernel, "') runs its own format only, not a mixture");
    if (o.weights != WeightCode::ternary) fail(what, ": float or Λ24 weights have no ternary layout to mix");
    if (!m->layout_->holds_exact_fp16_per128_scales())
      fail(what, ": the rest take layout ", m->layout_->name, ", which ", m->layout_->lossy_scales_why(), "; give an exact one");
    check_layout_map(o.layout_map, matmul_tensors(c), true, f.source);
  }
  const peers::PeerFormat* peer = mixed ? nullptr : peer_for(std::string(m->layout_->name), o.kernel);
  if (peer && o.weights != WeightCode::ternary)
    fail(peer->label, "'s kernel multiplies ternary weights; float or Λ24 weights run ternlab's (give --kernel with a ternlab kernel)");
  m->chunk_ = std::max(1, o.prefill_chunk);
  if (o.gdn_chunk < 0) fail("gdn_chunk must be 0 (token by token) or a chunk length, got ", o.gdn_chunk);
  m->gdn_chunk_ = o.gdn_chunk;
  if (o.threads < 1) fail("threads must be at least 1");
  m->pool_ = std::make_unique<ThreadPool>(o.threads);
  // The kernel is chosen once per layout, on the first matrix read in it (the output head for a
  // single layout): by name, by the ISA ladder, or by the planner measuring that matrix. A measured
  // rule of a layout map chooses layout and kernel together, per shape (measured_choice below).
  std::map<const LayoutInfo*, KernelVariant> kernels;
  std::optional<Wisdom> wisdom;
  const auto wisdom_file = [&]() -> Wisdom& {
    if (!wisdom) wisdom.emplace(o.wisdom.empty() ? Wisdom::default_path() : std::filesystem::path(o.wisdom));
    return *wisdom;
  };
  const auto kernel_for = [&](const PackedMatrix& w) -> KernelVariant {
    const LayoutInfo* L = w.layout;
    if (auto it = kernels.find(L); it != kernels.end()) return it->second;
    KernelChoice ch{};
    if (!o.kernel.empty()) {
      ch = {choose_kernel(*L, o.kernel), {}};
      ch.notes = {ch.variant.name() + ": named"};
    } else {  // estimate: best_kernel; auto: the wisdom file's choice, else best_kernel; measure: timed here
      ch = plan_kernel(w, 1, *m->pool_, o.plan, o.plan != PlanMode::estimate ? &wisdom_file() : nullptr);
    }
    if (kernels.empty()) {
      m->kernel_notes_ = std::move(ch.notes);
    } else {
      for (const std::string& n : ch.notes) m->kernel_notes_.push_back(cat(L->name, ": ", n));
    }
    kernels.emplace(L, ch.variant);
    return ch.variant;
  };
  // A measured rule's choice for one shape: every candidate layout's best kernel at the load's
  // threads and token batch, from wisdom or timed on this matrix (and then kept in wisdom); the
  // fastest pair wins. Once per (rule, shape): the other tensors of that shape take the same.
  struct Measured {
    const LayoutInfo* layout;
    KernelVariant kernel;
  };
  std::map<std::tuple<int, std::int64_t, std::int64_t>, Measured> measured;
  const auto measured_choice = [&](int rule, const std::string& name) -> Measured {
    const gguf::TensorInfo& t = f.tensor(name);
    const std::int64_t rows = std::int64_t(t.ne[1]), cols = std::int64_t(t.ne[0]);
    if (auto it = measured.find({rule, rows, cols}); it != measured.end()) return it->second;
    const LayoutRule& r = o.layout_map.rules[std::size_t(rule)];
    std::vector<std::string> skipped;
    const std::vector<const LayoutInfo*> cands = measure_candidates(r, rows, cols, &skipped);
    if (cands.empty())
      fail(f.source, ": tensor ", name, " (", rows, " x ", cols, "), layout map item '", r.pattern, "=", r.target,
           "': no candidate layout runs it here (", join(skipped, "; "), ")");
    const PackedMatrix src = read_packed(f, name, stored);
    const int tokens = std::max(1, o.plan_tokens);
    const char* unit = tokens == 1 ? " Gweights/s" : " GMAC/s";
    Wisdom& wis = wisdom_file();
    std::optional<Measured> best;
    double best_rate = -1;
    bool recorded = false;
    std::vector<std::string> rates;
    const bool cold = o.plan_cold_bytes > 0;
    for (const LayoutInfo* L : cands) {
      const PlanKey key = plan_key(*L, rows, cols, tokens, m->pool_->size());
      PlanKey cold_key = key;
      cold_key.op += " cold";  // a rate of its own: the same kernel, weights from memory
      std::optional<KernelVariant> kernel;
      double rate = 0;
      std::optional<PackedMatrix> packed;
      const auto matrix = [&]() -> const PackedMatrix& {
        if (!packed) packed = L == src.layout ? src : transcode(src, *L, name);
        return *packed;
      };
      std::string from = "wisdom";
      if (const std::optional<KernelChoice> c = cold ? wisdom_choice(*L, cold_key, wis) : std::nullopt) {
        kernel = c->variant;
        rate = wis.find(cold_key)->rate;
      } else if (const std::optional<KernelChoice> c = wisdom_choice(*L, key, wis)) {
        kernel = c->variant;
        rate = wis.find(key)->rate;
      } else {  // the planner's measurement, every variant checked against the reference first
        const std::vector<MeasuredVariant> mv = measure_variants(matrix(), tokens, *m->pool_, std::max(1, o.plan_rounds), o.plan_seconds);
        if (mv.empty()) continue;  // measure_candidates kept only layouts with a kernel to time
        const auto top = std::max_element(mv.begin(), mv.end(), [](const auto& x, const auto& y) { return x.rate < y.rate; });
        std::vector<std::string> others;
        for (const MeasuredVariant& v : mv)
          if (&v != &*top) others.push_back(cat(v.variant.name(), " ", v.rate));
        kernel = top->variant;
        rate = top->rate;
        wis.record({key, kernel->name(), rate, join(others)});
        recorded = true;
        from = "measured";
      }
      if (cold && !wis.find(cold_key)) {
        const double warm = rate;
        rate = cold_rate(matrix(), *kernel, tokens, *m->pool_, std::max(1, o.plan_rounds), o.plan_cold_bytes);
        wis.record({cold_key, kernel->name(), rate, cat("warm ", warm)});
        recorded = true;
        from = "measured";
      }
      rates.push_back(cat(L->name, " ", fixed_text(rate, 2), " (", kernel->name(), ", ", from, ")"));
      if (rate > best_rate) best_rate = rate, best = Measured{L, *kernel};
    }
    if (!best) fail(f.source, ": tensor ", name, ": no candidate of '", r.pattern, "=", r.target, "' could be timed");
    std::string kept;
    if (recorded) {
      try {
        wis.save();
        kept = "; kept in " + wis.path().string();
      } catch (const Error& e) {  // the choice stands; only a later load's shortcut is lost
        kept = cat("; not kept (", e.what(), ")");
      }
    }
    m->layout_notes_.push_back(cat(short_tensor_name(name), " ", rows, " x ", cols, " (", tokens == 1 ? std::string("gemv") : cat("gemm", tokens),
                                   cold ? " cold" : "", ", ", m->pool_->size(), " thread(s)): ", best->layout->name, " chosen; ", join(rates, ", "), unit, kept,
                                   skipped.empty() ? "" : "; not candidates: " + join(skipped, "; ")));
    measured.emplace(std::tuple{rule, rows, cols}, *best);
    return *best;
  };
  // The weights in another code (LoadOptions::weights): each matrix's floats from the float file,
  // as they are or Λ24-coded (from the cache when it holds this file's encoding).
  m->weight_code_ = o.weights;
  std::optional<gguf::File> floats;
  LatticeEncodings cache;
  std::filesystem::path cache_path;
  if (o.weights != WeightCode::ternary) {
    if (o.float_weights.empty()) fail("float or Λ24 weights need a float weight file (--float-weights / --lattice-weights)");
    floats.emplace(gguf::File::open(o.float_weights, gguf::LoadMode::mmap));
  }
  if (o.weights == WeightCode::lattice) {
    m->lattice_.record = records::find_record_layout(o.record);
    if (!m->lattice_.record) fail("unknown record layout '", o.record, "' (slot32, planes14, planes12x, golay70)");
    const std::uint64_t hash = file_fnv1a64(o.float_weights);
    if (o.lattice_cache != "none") {
      cache_path = o.lattice_cache.empty() ? default_lattice_cache(o.float_weights) : std::filesystem::path(o.lattice_cache);
      m->lattice_.cache = cache_path.string();
      cache = read_lattice_cache(cache_path);
      if (cache.source_hash != hash) cache.matrices.clear();  // another float file's encoding: not used
    }
    cache.source_hash = hash;
  }
  const auto alternative = [&](TernaryLinear& l) {
    if (o.weights == WeightCode::ternary) return;
    auto w = read_float_matrix(*floats, o.float_weights, l.name, l.w.rows, l.w.cols);
    if (o.weights == WeightCode::float32) {
      l.dense = std::make_shared<const std::vector<float>>(std::move(w));
      return;
    }
    auto it = cache.matrices.find(l.name);
    if (it != cache.matrices.end() && it->second.rows == l.w.rows && it->second.cols == l.w.cols) {
      ++m->lattice_.from_cache;
    } else {
      const auto progress = [&](std::int64_t done, std::int64_t rows) {
        if (o.encode_progress) o.encode_progress(l.name, done, rows);
      };
      it = cache.matrices.insert_or_assign(l.name, encode_matrix_parallel(w, l.w.rows, l.w.cols, l.name, *m->pool_,
                                                                          progress)).first;
      // Saved after every matrix: an encoding of many minutes that is interrupted keeps what it did.
      if (!cache_path.empty()) write_lattice_cache(cache_path, cache);
    }
    auto r = std::make_shared<lattice::RecordMatrix>(lattice::transcode(it->second, *m->lattice_.record));
    records::MatrixCounts c = r->counts();
    records::MatrixCounts& t = m->lattice_.counts;
    t.rows += c.rows, t.blocks += c.blocks, t.tail_weights += c.tail_weights, t.exceptions += c.exceptions;
    t.stream_bytes += c.stream_bytes, t.base_entries += c.base_entries;
    t.matrices = std::uint64_t(++m->lattice_.matrices);
    l.records = std::move(r);
    l.record_kernel = lattice::best_record_kernel();
  };
  const auto linear = [&](const std::string& name) {
    TernaryLinear l;
    l.name = name;
    const int rule = mixed ? o.layout_map.match(name) : -1;
    std::optional<Measured> chosen;
    if (rule >= 0 && o.layout_map.rules[std::size_t(rule)].measured()) chosen = measured_choice(rule, name);
    const LayoutInfo& to = chosen ? *chosen->layout : rule >= 0 ? find_layout(o.layout_map.rules[std::size_t(rule)].layouts.front()) : *m->layout_;
    l.w = read_packed(f, name, to, o.requantise_scales ? &m->requantised_ : nullptr);
    if (peer) {
      l.peer = peers::pack_peer(*peer, unpack(l.w), name);
      l.w.bytes = {};  // the peer holds the weights in its own bytes
      if (m->kernel_notes_.empty())
        m->kernel_notes_ = {cat(peers::peer_kernel_name(*peer), ": ", peer->label, "'s own algorithm (", peer->port_note(), "), what ",
                                peer->layout, " runs unless --kernel names one of ternlab's kernels for its bytes")};
      return l;
    }
    l.kernel = chosen && o.kernel.empty() ? chosen->kernel : kernel_for(l.w);
    m->tensor_layouts_.push_back({name, std::string(l.w.layout->name), l.kernel.name(), rule, l.w.rows, l.w.cols, l.w.bytes.size()});
    alternative(l);
    return l;
  };
  // A lookup table: stays in the file's format where its blocks are the 128-weight scale groups the
  // row decode walks; ggml's 256-weight blocks (TQ2_0, TQ1_0) become PQ2_0's, exactly.
  m->embd_ = read_packed(f, "token_embd.weight", stored.rows == 1 && stored.block_scales_128() ? stored : find_layout("pq2_0"));
  if (o.weights != WeightCode::ternary) {  // the table decoded once: floats, rotated rows as stored
    TernaryLinear e;
    e.name = "token_embd.weight";
    e.w.rows = m->embd_.rows, e.w.cols = m->embd_.cols;
    alternative(e);
    m->embd_f32_ = e.dense ? *e.dense : lattice::decode_matrix(lattice::untranscode(*e.records));
  }
  m->output_norm_ = read_floats(f, "output_norm.weight");
  m->head_ = linear("output.weight");
  for (int l = 0; l < c.n_layer; ++l) {
    LayerWeights w;
    w.gdn = c.is_gdn(l);
    w.attn_norm = read_floats(f, blk(l, "attn_norm.weight"));
    w.post_norm = read_floats(f, blk(l, "post_attention_norm.weight"));
    if (w.gdn) {
      w.linear.qkv = linear(blk(l, "attn_qkv.weight"));
      w.linear.gate = linear(blk(l, "attn_gate.weight"));
      w.linear.out = linear(blk(l, "ssm_out.weight"));
      {
        const std::vector<float> alpha = read_floats(f, blk(l, "ssm_alpha.weight"));
        const std::vector<float> beta = read_floats(f, blk(l, "ssm_beta.weight"));
        const std::int64_t d = c.n_embd, hv = c.ssm_v_heads;
        if (std::int64_t(alpha.size()) != d * hv || beta.size() != alpha.size())
          fail(f.source, ": ", blk(l, "ssm_alpha.weight"), " and ", blk(l, "ssm_beta.weight"), " hold ", alpha.size(),
               " and ", beta.size(), " values, expected ", d, " x ", hv);
        constexpr std::int64_t tile = GdnWeights::kLaneTile;
        const std::int64_t tiles = (2 * hv + tile - 1) / tile;
        std::vector<float> tiled(std::size_t(tiles * d * tile), 0.0f);
        for (std::int64_t l = 0; l < 2 * hv; ++l) {
          const float* row = l < hv ? beta.data() + l * d : alpha.data() + (l - hv) * d;
          for (std::int64_t i = 0; i < d; ++i) tiled[std::size_t((l / tile * d + i) * tile + l % tile)] = row[i];
        }
        const auto bits = [](float v) { return std::bit_cast<std::uint32_t>(v); };
        if (std::all_of(tiled.begin(), tiled.end(), [&](float v) { return (bits(v) & 0xffffu) == 0; })) {
          w.linear.beta_alpha_bf16.resize(tiled.size());
          std::transform(tiled.begin(), tiled.end(), w.linear.beta_alpha_bf16.begin(),
                         [&](float v) { return std::uint16_t(bits(v) >> 16); });
        } else {
          w.linear.beta_alpha_f32 = std::move(tiled);
        }
      }
      {
        // The file's [channels][kernel] (tap fastest) stored tap-major, so the conv reads each tap's
        // weights as one contiguous row beside the state's row of the same tap. The tensor
        // inventory (config.cpp) has already checked its shape against the metadata.
        const std::vector<float> conv = read_floats(f, blk(l, "ssm_conv1d.weight"));
        const std::int64_t ch = c.conv_channels(), taps = c.ssm_conv;
        w.linear.conv.resize(conv.size());
        for (std::int64_t j = 0; j < ch; ++j)
          for (std::int64_t tau = 0; tau < taps; ++tau) w.linear.conv[std::size_t(tau * ch + j)] = conv[std::size_t(j * taps + tau)];
      }
      w.linear.ssm_a = read_floats(f, blk(l, "ssm_a"));
      w.linear.dt_bias = read_floats(f, blk(l, "ssm_dt.bias"));
      w.linear.norm = read_floats(f, blk(l, "ssm_norm.weight"));
    } else {
      w.attn.q = linear(blk(l, "attn_q.weight"));
      w.attn.k = linear(blk(l, "attn_k.weight"));
      w.attn.v = linear(blk(l, "attn_v.weight"));
      w.attn.out = linear(blk(l, "attn_output.weight"));
      w.attn.q_norm = read_floats(f, blk(l, "attn_q_norm.weight"));
      w.attn.k_norm = read_floats(f, blk(l, "attn_k_norm.weight"));
    }
    w.ffn_gate = linear(blk(l, "ffn_gate.weight"));
    w.ffn_up = linear(blk(l, "ffn_up.weight"));
    w.ffn_down = linear(blk(l, "ffn_down.weight"));
    m->layers_.push_back(std::move(w));
    if (o.progress) o.progress(l + 1, c.n_layer);
  }
  if (o.weights == WeightCode::lattice) m->lattice_.accounting = records::account(*m->lattice_.record, m->lattice_.counts);
  return m;
}

std::string Model::layout_text() const {
  return layout_map_.empty() ? std::string(layout_->name) : layout_summary(layout_map_, tensor_layouts_);
}

double Model::bits_per_weight() const {
  return layout_map_.empty() ? layout_->bits_per_weight() : mixture_bits_per_weight(tensor_layouts_);
}

std::string Model::kernel_name() const {
  if (layout_map_.empty()) return head_.kernel_name();
  std::vector<std::string> names;  // each layout's kernels, in the order the load met them
  for (const TensorLayout& t : tensor_layouts_) {
    const std::string n = t.layout + " " + t.kernel;
    if (std::find(names.begin(), names.end(), n) == names.end()) names.push_back(n);
  }
  return join(names, " + ");
}

Session Model::new_session() const {
  Session s;
  const ModelConfig& c = cfg_;
  s.conv.resize(std::size_t(c.n_layer));
  s.state.resize(std::size_t(c.n_layer));
  s.k_cache.resize(std::size_t(c.n_layer));
  s.v_cache.resize(std::size_t(c.n_layer));
  for (int l = 0; l < c.n_layer; ++l)
    if (c.is_gdn(l)) {
      s.conv[std::size_t(l)].assign(std::size_t(c.ssm_conv - 1) * std::size_t(c.conv_channels()), 0.0f);
      s.state[std::size_t(l)].assign(std::size_t(c.ssm_v_heads) * std::size_t(c.ssm_state * c.ssm_state), 0.0f);
    } else {
      s.k_cache[std::size_t(l)] = KeyCache(c.n_head_kv, c.head_dim);
    }
  return s;
}

void Model::reset_session(Session& s) const {
  const auto layers = std::size_t(cfg_.n_layer);
  if (s.conv.size() != layers || s.state.size() != layers || s.k_cache.size() != layers || s.v_cache.size() != layers)
    fail(file_.source, ": reset_session was given a session of another model (", s.state.size(), " layers, the model has ",
         layers, ")");
  s.pos = 0;
  for (auto& c : s.conv) std::fill(c.begin(), c.end(), 0.0f);
  for (auto& st : s.state) std::fill(st.begin(), st.end(), 0.0f);
  for (auto& k : s.k_cache) k.cut(0);
  for (auto& v : s.v_cache) v.clear();
}

std::uint64_t Model::ternary_bytes_per_token() const {
  std::uint64_t n = head_.bytes();
  for (const auto& w : layers_) {
    n += w.ffn_gate.bytes() + w.ffn_up.bytes() + w.ffn_down.bytes();
    n += w.gdn ? w.linear.qkv.bytes() + w.linear.gate.bytes() + w.linear.out.bytes()
               : w.attn.q.bytes() + w.attn.k.bytes() + w.attn.v.bytes() + w.attn.out.bytes();
  }
  return n;
}

std::vector<float> Model::embed(std::int32_t token) const {
  if (token < 0 || token >= cfg_.n_vocab) fail("token id ", token, " is outside the vocabulary (", cfg_.n_vocab, ")");
  const std::int64_t d = cfg_.n_embd;
  std::vector<float> e(static_cast<std::size_t>(d));
  if (!embd_f32_.empty()) {
    std::copy_n(embd_f32_.begin() + std::ptrdiff_t(token) * d, d, e.begin());
    cfg_.rotation.inverse(e.data(), d);
    return e;
  }
  std::uint8_t codes[kBlockK];
  std::uint16_t scale;
  for (std::int64_t b = 0; b < d / kBlockK; ++b) {
    decode_block(*embd_.layout, embd_.block(token, b), codes, &scale);
    const float s = embd_.layout->scale(embd_.block(token, b), 0);
    for (int j = 0; j < kBlockK; ++j) e[std::size_t(b * kBlockK + j)] = float(int(codes[j]) - 1) * s;
  }
  cfg_.rotation.inverse(e.data(), d);  // the table stores R . e: transform first, then signs
  return e;
}

// --- forward ------------------------------------------------------------------------------------

double seconds_now(bool cpu) {
  if (!cpu) return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
  timespec ts{};
  clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
  return double(ts.tv_sec) + 1e-9 * double(ts.tv_nsec);
}

void StateRing::record(int layer, int slot, const std::vector<float>& conv_now, const GdnState& state_now) {
  const double t0 = seconds_now(cpu_clock);
  conv[std::size_t(layer)][std::size_t(slot)].assign(conv_now.begin(), conv_now.end());
  state[std::size_t(layer)][std::size_t(slot)].assign(state_now.begin(), state_now.end());
  record_seconds += seconds_now(cpu_clock) - t0;
}

void Model::rollback(Session& s, StateRing& ring, int keep) const {
  if (keep < 1 || keep > ring.slots + 1)
    fail("rollback: keep ", keep, " tokens of a recorded call of ", ring.slots + 1, " (1 .. ", ring.slots + 1, ")");
  if (s.pos != ring.pos0 + ring.slots + 1)
    fail("rollback: the session is at position ", s.pos, ", the ring recorded the call ending at ",
         ring.pos0 + ring.slots + 1);
  if (keep == ring.slots + 1) return;
  s.pos = ring.pos0 + keep;
  const std::size_t kv = std::size_t(cfg_.n_head_kv) * std::size_t(cfg_.head_dim);
  for (int l = 0; l < cfg_.n_layer; ++l) {
    const auto L = std::size_t(l);
    if (cfg_.is_gdn(l)) {
      s.conv[L].swap(ring.conv[L][std::size_t(keep - 1)]);
      s.state[L].swap(ring.state[L][std::size_t(keep - 1)]);
    } else {
      s.k_cache[L].cut(s.pos);
      s.v_cache[L].resize(std::size_t(s.pos) * kv);
    }
  }
  ring.slots = keep - 1;  // the swapped-out slots now hold later states: nothing past keep is valid
}

std::vector<float> Model::forward(Session& s, std::span<const std::int32_t> tokens, bool all_logits,
                                  OpProfile* profile, StateRing* ring) {
  if (tokens.empty()) fail("forward: no tokens");
  if (ring) {
    if (tokens.size() > std::size_t(chunk_))
      fail("forward: ", tokens.size(), " tokens recorded for rollback must fit one gemm batch of ", chunk_);
    ring->pos0 = s.pos;
    ring->slots = int(tokens.size()) - 1;
    ring->conv.resize(std::size_t(cfg_.n_layer));
    ring->state.resize(std::size_t(cfg_.n_layer));
    for (int l = 0; l < cfg_.n_layer; ++l)
      if (cfg_.is_gdn(l) && ring->conv[std::size_t(l)].size() < std::size_t(ring->slots)) {
        ring->conv[std::size_t(l)].resize(std::size_t(ring->slots));
        ring->state[std::size_t(l)].resize(std::size_t(ring->slots));
      }
  }
  std::vector<float> logits;
  for (std::size_t i = 0; i < tokens.size(); i += std::size_t(chunk_)) {
    const auto n = std::min(tokens.size() - i, std::size_t(chunk_));
    const bool last = i + n == tokens.size();
    if (!all_logits && !last) {
      // An earlier chunk's logits are never read: its last norm and the head (the largest matrix)
      // are skipped.
      std::vector<float> none;
      forward_chunk(s, tokens.subspan(i, n), false, none, profile, ring, false);
    } else {
      forward_chunk(s, tokens.subspan(i, n), all_logits, logits, profile, ring);
    }
  }
  return logits;
}

int Model::gdn_state_passes(int tokens) const {
  int passes = 0;
  for (int i = 0; i < tokens; i += chunk_) {  // the gemm batches forward() splits a call into
    const int n = std::min(tokens - i, chunk_);
    passes += gdn_chunk_ > 0 && n > 1 ? (n + gdn_chunk_ - 1) / gdn_chunk_ : n;
  }
  return passes;
}

void Model::forward_chunk(Session& s, std::span<const std::int32_t> tokens, bool all_logits,
                          std::vector<float>& logits, OpProfile* profile, StateRing* ring, bool head) {
  const ModelConfig& c = cfg_;
  const int T = int(tokens.size());
  const std::int64_t d = c.n_embd;
  std::vector<float> h(static_cast<std::size_t>(T * d)), a(h.size()), m(h.size());
  {
    OpTimer t(profile, OpProfile::other);
    for (int i = 0; i < T; ++i) {
      const auto e = embed(tokens[std::size_t(i)]);
      {
        std::copy(e.begin(), e.end(), h.begin() + i * d);
      }
    }
  }
  // A layer's RMSNorm of every token: the tokens split among the pool's threads (one token: here).
  const auto norm_tokens = [&](const float* x, const std::vector<float>& g, float* y) {
    pool_->run_split(T, T == 1, [&](std::int64_t t0, std::int64_t t1) {
      rms_norm_rows(x + t0 * d, d, g.data(), y + t0 * d, d, int(t1 - t0), d, c.eps);
    });
  };
  for (int l = 0; l < c.n_layer; ++l) {
    const LayerWeights& w = layers_[std::size_t(l)];
    if (T == 1) {  // each matmul's weight streams started before its input is made (prefetch_gemv_starts)
      if (w.gdn)
        prefetch_gemv_starts({&w.linear.qkv, &w.linear.gate}, *pool_);
      else
        prefetch_gemv_starts({&w.attn.q, &w.attn.k, &w.attn.v}, *pool_);
    }
    {
      OpTimer t(profile, OpProfile::norm);
      norm_tokens(h.data(), w.attn_norm, a.data());
    }
    const Q8KBatch ar = rotate_and_quantize(c, a, T, d, *pool_, profile);  // site 1, shared by the projections
    if (w.gdn)
      gated_deltanet(c, w.linear, a, ar, T, s.conv[std::size_t(l)], s.state[std::size_t(l)], m.data(), *pool_,
                     profile, ring, l, s.gdn_steps ? 0 : gdn_chunk_);
    else
      attention(c, w.attn, ar, T, s.pos, s.k_cache[std::size_t(l)], s.v_cache[std::size_t(l)], m.data(), *pool_,
                profile);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] += m[i];
    {
      OpTimer t(profile, OpProfile::norm);
      norm_tokens(h.data(), w.post_norm, a.data());
    }
    mlp(c, w, a, T, m.data(), *pool_, profile);
    for (std::size_t i = 0; i < h.size(); ++i) h[i] += m[i];
  }
  s.pos += T;
  if (!head) return;
  const int first = all_logits ? 0 : T - 1;
  const int rows = T - first;
  std::vector<float> o(static_cast<std::size_t>(rows * d));
  if (T == 1) prefetch_gemv_starts({&head_}, *pool_);
  {
    OpTimer t(profile, OpProfile::norm);
    rms_norm_rows(h.data() + first * d, d, output_norm_.data(), o.data(), d, rows, d, c.eps);
  }
  const Q8KBatch orot = rotate_and_quantize(c, std::move(o), rows, d, *pool_, profile);  // site 5
  const std::size_t at = logits.size();
  logits.resize(at + std::size_t(rows) * std::size_t(c.n_vocab));
  matmul(head_, orot, logits.data() + at, *pool_, profile);
}

}  // namespace ternlab::model
