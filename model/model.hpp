// The Bonsai 2 (qwen35) forward pass over a GGUF file (spec §7): packed ternary embedding with the
// inverse rotation, 48-style Gated DeltaNet and gated full-attention layers, SwiGLU MLP, final norm
// and the untied ternary head. Every ternary weight is repacked at load into the layout the caller
// names and multiplied by a kernel from kernels_for(); prompts run in chunks through gemm, decode
// through gemv.
#pragma once

#include <algorithm>
#include <array>
#include <functional>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "common/aligned.hpp"
#include "kernels/planner.hpp"
#include "kernels/thread_pool.hpp"
#include "kernels/vector/vector_ops.hpp"
#include "model/config.hpp"
#include "model/gguf.hpp"
#include "model/layout_map.hpp"
#include "model/linear.hpp"
#include "model/weight_codes.hpp"

namespace ternlab::model {

struct LoadOptions {
  std::string layout = "";  // empty: keep the file's own format (pq2_0 / ptq1_0)
  // Mixed layouts per tensor (model/layout_map.hpp): each matmul takes its first matching rule's
  // layout, a measured rule's the fastest candidate for its shape; a matmul no rule matches takes
  // `layout` above. Exact layouts only: no requantising, no peer kernel, no float or Λ24 weights.
  LayoutMap layout_map;
  // The token batch a measured rule times its candidates at: 1 a gemv (decode), more a gemm of that
  // many tokens (prefill, in prefill_chunk batches).
  int plan_tokens = 1;
  // How long a measured rule times each candidate kernel: rounds, each pass at least two calls and
  // this many seconds (kernels/planner.hpp measure_variants).
  int plan_rounds = 3;
  double plan_seconds = 0.02;
  // 0: a measured rule rates each candidate as the planner times it, calls after calls on one copy,
  // which the cache holds when the matrix fits ("warm"). More: each timed call first reads a buffer
  // of this many bytes (twice the last-level cache), so the weights come from memory as they do when
  // a model past the cache decodes ("cold"); the kernel is still the planner's warm choice.
  std::int64_t plan_cold_bytes = 0;
  // LOSSY: round every ternary tensor's scales to the layout's scale format (layouts/matrix.hpp
  // requantise) where the exact repack would refuse; Model::scale_requantisation() says what moved.
  bool requantise_scales = false;
  // empty: the planner's choice (below), or for a peer format (i2_s, tq2_0, tq1_0) the peer's own kernel;
  // a peer's kernel ("bitnet-i2s", "ggml-tq2_0", "ggml-tq1_0") runs its format (model/linear.hpp peer_for).
  std::string kernel = "";
  // How the kernel is chosen when none is named (kernels/planner.hpp), for the output head (the
  // largest matrix, a gemv as in decode): auto = the wisdom file's measured choice where it holds
  // one, else best_kernel; estimate = best_kernel (the ISA ladder); measure = the planner times every
  // candidate once, or reads its earlier choice from the wisdom file.
  PlanMode plan = PlanMode::automatic;
  std::string wisdom = "";  // empty: Wisdom::default_path()
  gguf::LoadMode mode = gguf::LoadMode::mmap;
  int threads = 1;
  int prefill_chunk = 64;  // tokens per gemm batch
  // Tokens a chunk of the Gated DeltaNet's chunked form (spec §7.4.7; HF and llama.cpp use 64),
  // which then runs a forward call of more than one token (a prompt's gemm batches) unless the
  // call records a StateRing or the session asks for steps (Session::gdn_steps). 0 (the default):
  // token by token always, bit-exact against decoding. The chunked form is the same recurrence
  // with its sums in another order: a prompt's logits then differ from decoding's by rounding.
  int gdn_chunk = 0;
  // Called as each layer's weights are read and repacked with (layers done, layer count): a progress
  // bar for the minutes a full-size model takes.
  std::function<void(int, int)> progress;
  // The weights of every ternary matrix (matmuls and embedding table) taken instead from a file of
  // their latent float values (model/weight_codes.hpp): as they are (float32), or coded with Λ24 in
  // the record layout `record` (lattice). The ternary tensors still give the shapes.
  WeightCode weights = WeightCode::ternary;
  std::string float_weights;
  std::string record = "planes14";
  std::string lattice_cache;  // empty: default_lattice_cache(float_weights); "none": neither read nor written
  // Called as Λ24 encoding proceeds with (tensor, rows done, rows); matrices read from the cache skip it.
  std::function<void(const std::string&, std::int64_t, std::int64_t)> encode_progress;
};

// What a model loaded with LoadOptions::weights = lattice holds: the record layout, the §5.8
// accounting over all its Λ24 matrices, and how many came from the cache.
struct LatticeWeightsInfo {
  const records::RecordSpec* record = nullptr;
  records::MatrixCounts counts{};
  records::Accounting accounting{};
  int matrices = 0, from_cache = 0;
  std::string cache;  // the cache file read or written ("" when "none")
};

struct GdnWeights {
  TernaryLinear qkv, gate, out;
  // beta's and alpha's dense rows transposed in tiles of VectorOps::kLaneTile rows: lane l (beta
  // row l, then alpha row l - v_heads) has its weight i at (l / kLaneTile * n_embd + i) *
  // kLaneTile + l % kLaneTile, a last partial tile padded with zeros. One pass over the input
  // feeds a tile's dot products as vector lanes, and a thread reads its tiles as one contiguous
  // stream. Kept as the file's BF16 (half the bytes a token: 47 MB at full size) whenever every
  // weight is a BF16 value, as the spec's files are; as floats otherwise. Exactly one is filled.
  static constexpr int kLaneTile = VectorOps::kLaneTile;
  std::vector<std::uint16_t> beta_alpha_bf16;
  std::vector<float> beta_alpha_f32;
  std::vector<float> conv;         // [kernel][channels], channel index fastest (the file's, transposed)
  std::vector<float> ssm_a, dt_bias, norm;
};

struct AttnWeights {
  TernaryLinear q, k, v, out;
  std::vector<float> q_norm, k_norm;
};

struct LayerWeights {
  bool gdn = true;
  std::vector<float> attn_norm, post_norm;
  GdnWeights linear;
  AttnWeights attn;
  TernaryLinear ffn_gate, ffn_up, ffn_down;
};

// One GDN layer's recurrent state, [v_heads][Dk][Dv] (3 MiB at full size). Aligned storage so
// that it sits on huge pages (common/aligned.hpp): every decode token reads and writes all 48
// layers' states, and on 4 KiB pages the head updates took 10% longer.
using GdnState = AlignedVector<float>;

// Attention's cached keys, per KV head in tiles of VectorOps::kLaneTile positions
// ([tile][head_dim][lane]), so that a query's dots with 16 keys run as vector lanes, each lane its
// own in-order sum, and the query heads sharing the KV head read each tile once
// (VectorOps::tiles_dot_queries_f32): stored one position after another, each dot was a chain of
// head_dim dependent adds. Lanes past `positions` hold stale or zero keys and are never read.
struct KeyCache {
  int kv_heads = 0, head_dim = 0;
  std::int64_t positions = 0;
  std::vector<std::vector<float>> heads;  // per KV head

  KeyCache() = default;
  KeyCache(int kv_heads, int head_dim) : kv_heads(kv_heads), head_dim(head_dim), heads(std::size_t(kv_heads)) {}
  // One position's keys, kv_heads x head_dim floats.
  void append(const float* keys);
  // Keeps the first n positions (a rollback, a reset).
  void cut(std::int64_t n) { positions = std::min(positions, n); }
  // Every position's keys, kv_heads x head_dim each, one after another (as appended).
  std::vector<float> rows() const;
  // For `queries` query vectors q + r * head_dim and the first n = min(upto, positions) keys:
  // out[r * padded(n) + s] = the in-order fused multiply-adds over i of q[r * head_dim + i] and key
  // s of KV head m [i], for s < n (the lanes past n in its last tile are left unspecified).
  void dots(int m, const float* q, int queries, std::int64_t upto, float* out) const;
  static std::int64_t padded(std::int64_t positions);  // out's length for `positions` keys
};

// Per-sequence state: GDN conv windows and recurrent states, attention KV cache.
struct Session {
  int pos = 0;
  // Every forward call runs the Gated DeltaNet token by token, whatever LoadOptions::gdn_chunk says
  // (speculative verification: a verify pass must give plain decoding's bits).
  bool gdn_steps = false;
  std::vector<std::vector<float>> conv;  // per layer: [kernel-1][channels], oldest first
  std::vector<GdnState> state;           // per layer
  std::vector<KeyCache> k_cache;                     // per layer
  std::vector<std::vector<float>> v_cache;           // per layer: [pos][kv_heads * head_dim]
};

// The Gated DeltaNet states after each token of one forward call, so that a rejected draft can be
// undone (model/speculative.hpp): the recurrence cannot be run backwards, and attention's KV cache
// is simply truncated. Slot t holds every GDN layer's conv window and recurrent state after token t
// of the call; the last token's states are the session's own, so a call of n tokens fills n - 1
// slots. Buffers keep their capacity from call to call (rollback swaps them with the session's).
struct StateRing {
  int pos0 = 0;   // the session position before the recorded call
  int slots = 0;  // tokens recorded: the call's first `slots` tokens
  std::vector<std::vector<std::vector<float>>> conv;  // [layer][slot]
  std::vector<std::vector<GdnState>> state;           // [layer][slot]
  double record_seconds = 0;  // time spent copying states in, summed over calls
  bool cpu_clock = false;     // record_seconds in process CPU time instead of wall time
  void record(int layer, int slot, const std::vector<float>& conv_now, const GdnState& state_now);
};

// Seconds on the steady clock, or of this process's CPU time (all its threads) when `cpu`: on a
// machine shared with other jobs, CPU time leaves out the time the scheduler gives them.
double seconds_now(bool cpu);

// Wall time per op kind, for one forward call (experiment hook).
struct OpProfile {
  enum Op { matmul, quantize, hadamard, gdn, attention, norm, other, count };
  std::array<double, count> seconds{};
  // Each matmul call of the forward, in order: its tensors' role without the layer ("ffn_down",
  // "ffn_gate+ffn_up" for a call of several, "output"), wall time, weight bytes and multiply-
  // accumulates. Shows which
  // shapes keep the matmul line below the kernels' own rate.
  struct MatmulCall {
    std::string role;
    double seconds = 0, bytes = 0, macs = 0;  // macs: weights x tokens
  };
  std::vector<MatmulCall> matmul_calls;
  static const char* name(int op);
};

class Model {
 public:
  static std::unique_ptr<Model> load(const std::string& path, const LoadOptions& o = {});

  const ModelConfig& config() const { return cfg_; }
  // The layout every matmul was repacked into; for a mixture, the one the tensors no rule matches
  // take (tensor_layouts() says each one's).
  const LayoutInfo& layout() const { return *layout_; }
  bool mixed() const { return !layout_map_.empty(); }
  const LayoutMap& layout_map() const { return layout_map_; }
  // Every matmul's layout and kernel, in load order (the head first).
  const std::vector<TensorLayout>& tensor_layouts() const { return tensor_layouts_; }
  // The layout's name, or for a mixture what each rule chose ("ffn_*: b3r (48 tensors); rest: t2r (64)").
  std::string layout_text() const;
  // Bits per weight of the matmuls as repacked (for a mixture, over all of them together).
  double bits_per_weight() const;
  // How each measured rule chose, per shape: the candidates' rates and where they came from.
  const std::vector<std::string>& layout_notes() const { return layout_notes_; }
  const KernelVariant& kernel() const { return head_.kernel; }
  // The kernel every matmul runs, by name: ternlab's (kernel()) or a peer's own ("bitnet-i2s/avx2");
  // for a mixture each layout's ("b3r base3/avx512vbmi + t2r broadcast/avx512vnni").
  std::string kernel_name() const;
  // Why that kernel: the planner's or dispatch's notes.
  const std::vector<std::string>& kernel_notes() const { return kernel_notes_; }
  // What LoadOptions::requantise_scales did over all ternary tensors repacked (all zero when off).
  const ScaleRequantisation& scale_requantisation() const { return requantised_; }
  const gguf::File& file() const { return file_; }
  WeightCode weight_code() const { return weight_code_; }
  const LatticeWeightsInfo& lattice_weights() const { return lattice_; }
  Session new_session() const;
  // Returns a session of this model to an empty context in place: states zeroed, KV caches
  // emptied with their capacity kept, so repeated calls from an empty context (a benchmark's)
  // do not map and fault in fresh state buffers each time.
  void reset_session(Session& s) const;

  // Runs `tokens` at positions s.pos... and returns logits: for the last token only, or for every
  // token when `all_logits` (tokens x vocab, row-major).
  // With a `ring`, the GDN states after each token but the last are recorded into it (the tokens
  // must then fit one gemm batch, max_batch()), so rollback() can return to any of them.
  std::vector<float> forward(Session& s, std::span<const std::int32_t> tokens, bool all_logits = false,
                             OpProfile* profile = nullptr, StateRing* ring = nullptr);
  // Undoes the last forward call recorded in `ring` down to its first `keep` tokens: the session
  // position moves back, the KV caches are truncated and the GDN states are swapped with the
  // ring's slot keep - 1 (the same floats a forward of those tokens alone leaves). keep may be
  // 1 .. ring.slots + 1; the latter changes nothing.
  void rollback(Session& s, StateRing& ring, int keep) const;
  // Tokens per gemm batch: a prompt runs in chunks of this many, and a forward call recording a
  // StateRing must fit one.
  int max_batch() const { return chunk_; }
  // LoadOptions::gdn_chunk, and how many passes a fresh forward call of `tokens` makes over each
  // Gated DeltaNet state: one a token, or one a chunk where the chunked form runs.
  int gdn_chunk() const { return gdn_chunk_; }
  int gdn_state_passes(int tokens) const;

  // Bytes of ternary weights streamed per decoded token (every ternary matrix but the embedding).
  std::uint64_t ternary_bytes_per_token() const;
  // The embedding row of `token` after the inverse rotation (d floats).
  std::vector<float> embed(std::int32_t token) const;
  ThreadPool& pool() { return *pool_; }

 private:
  // Runs one gemm batch of tokens; with `head` false the final norm and the head are skipped (no logits).
  void forward_chunk(Session& s, std::span<const std::int32_t> tokens, bool all_logits, std::vector<float>& logits,
                     OpProfile* profile, StateRing* ring, bool head = true);
  ModelConfig cfg_;
  gguf::File file_;
  const LayoutInfo* layout_ = nullptr;
  int chunk_ = 64;
  int gdn_chunk_ = 0;
  PackedMatrix embd_;
  std::vector<float> embd_f32_;  // vocab x d, rotated rows, when the weights are not the ternary ones
  WeightCode weight_code_ = WeightCode::ternary;
  LatticeWeightsInfo lattice_;
  TernaryLinear head_;
  std::vector<std::string> kernel_notes_;
  LayoutMap layout_map_;
  std::vector<TensorLayout> tensor_layouts_;
  std::vector<std::string> layout_notes_;
  ScaleRequantisation requantised_;
  std::vector<float> output_norm_;
  std::vector<LayerWeights> layers_;
  std::unique_ptr<ThreadPool> pool_;
  friend struct Forward;
};

// Layer kinds, one file each. `x` holds T tokens x d (the normed input), `xr` the same rotated.
// gated_deltanet records its states after each of the first ring->slots tokens into `ring` (layer
// `layer`) when one is given; otherwise a call of more than one token runs the recurrence in its
// chunked form, `chunk` tokens a chunk, where `chunk` is above 0 (LoadOptions::gdn_chunk).
void gated_deltanet(const ModelConfig& c, const GdnWeights& w, const std::vector<float>& x,
                    const Q8KBatch& xr, int tokens, std::vector<float>& conv_state, GdnState& state,
                    float* out, ThreadPool& pool, OpProfile* profile, StateRing* ring = nullptr, int layer = 0,
                    int chunk = 0);
void attention(const ModelConfig& c, const AttnWeights& w, const Q8KBatch& xr, int tokens, int pos0,
               KeyCache& k_cache, std::vector<float>& v_cache, float* out, ThreadPool& pool,
               OpProfile* profile);
void mlp(const ModelConfig& c, const LayerWeights& w, const std::vector<float>& f, int tokens, float* out,
         ThreadPool& pool, OpProfile* profile);

// Shared numerics (spec §7.3, §7.4.4).
// RMSNorm (x / sqrt(mean of squares + eps), times the weight g) and the l2 norm (x / max(||x||,
// eps)) of `rows` rows of n: row r at x + r * x_stride, its output at y + r * y_stride (y may be
// x). Each row's squares are summed in double in order of i, as ggml does; several rows' sums are
// computed together, each the bits of that row's sum alone.
void rms_norm_rows(const float* x, std::int64_t x_stride, const float* g, float* y, std::int64_t y_stride, int rows,
                   std::int64_t n, float eps);
void l2_norm_rows(float* x, std::int64_t stride, int rows, std::int64_t n, float eps);
float softplus(float x);
// Rotates rows of a T x k matrix (forward site) and quantises them for a ternary matmul, in one
// pass over the floats (quantize_batch's units). `before`, where given, first makes the floats of
// tokens [t0, t1) x columns [c0, c1) in x in place from nothing outside them (the MLP's SiLU
// product), accounted to `before_op` in a profile.
using RowsStep = UnitStep;
Q8KBatch rotate_and_quantize(const ModelConfig& c, std::vector<float> x, int tokens, std::int64_t k, ThreadPool& pool,
                             OpProfile* profile, const RowsStep& before = {}, OpProfile::Op before_op = OpProfile::other);
// A ternary matmul with time accounted to OpProfile::matmul.
void matmul(const TernaryLinear& w, const Q8KBatch& x, float* y, ThreadPool& pool, OpProfile* profile);
// Matmuls of one input together (apply_all), the same accounting.
void matmuls(std::initializer_list<LinearOutput> outputs, const Q8KBatch& x, ThreadPool& pool, OpProfile* profile);

// Scoped timer adding to one profile slot (no-op without a profile).
class OpTimer {
 public:
  OpTimer(OpProfile* p, OpProfile::Op op);
  ~OpTimer();
  OpTimer(const OpTimer&) = delete;
  OpTimer& operator=(const OpTimer&) = delete;

 private:
  OpProfile* p_;
  OpProfile::Op op_;
  std::int64_t t0_;
};

}  // namespace ternlab::model
