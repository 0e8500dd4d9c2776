// The memory estimate of a model run (docs/experiments.md, "Memory"): each arm's resident memory by
// part (repacked weights, embedding, floats, file copy, repack copy, sessions, scratch) from the
// model's tensor shapes, held against the memory available. It refuses, before anything loads, a
// run whose arms cannot fit, and prints the estimate in the plan. The parts that depend on the kind
// (context length, logit rows, state copies, the ceiling buffer) come from its ModelKindHooks.
#include <algorithm>
#include <filesystem>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "common/strings.hpp"
#include "experiments/arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/memory.hpp"
#include "experiments/model_arms.hpp"
#include "model/config.hpp"
#include "model/experiments.hpp"
#include "model/synth.hpp"

namespace ternlab::experiments {

namespace {

namespace fs = std::filesystem;

// The tensors of a model as the estimate needs them: from the GGUF file's header, or from the
// preset's hyperparameters (its file may not be written yet).
struct ModelShape {
  struct Tensor {
    std::string name;
    bool ternary = false;
    std::int64_t rows = 0, cols = 0;  // ternary: output rows x input columns
    std::uint64_t stored = 0;         // bytes in the file
    std::int64_t elements = 0;
  };
  std::optional<model::ModelConfig> config;
  std::vector<Tensor> tensors;
  std::uint64_t file_bytes = 0;
  std::string unreadable;  // why the file's shapes are unknown (the load will say so for the arm)
};

std::uint64_t packed_bytes(const LayoutInfo& L, std::int64_t rows, std::int64_t cols) {
  return std::uint64_t((rows + L.rows - 1) / L.rows) * std::uint64_t((cols + L.k - 1) / L.k) * std::uint64_t(L.block_bytes());
}

ModelShape shape_of(const std::string& path, const ModelSource& src) {
  ModelShape s;
  if (path == src.path && !src.preset.empty()) {
    const model::ModelConfig c = model::synth_config(preset_of(src), src.synth);
    const LayoutInfo& stored = find_layout(gguf::ternary_layout_name(std::uint32_t(src.synth.ternary_type), src.path));
    for (const model::TensorSpec& t : model::tensor_specs(c)) {
      std::int64_t n = 1;
      for (std::uint64_t e : t.ne) n *= std::int64_t(e);
      ModelShape::Tensor x{t.name, t.kind == model::Kind::ternary, 0, 0, 0, n};
      if (x.ternary) {
        x.cols = std::int64_t(t.ne[0]);
        x.rows = std::int64_t(t.ne[1]);
        x.stored = packed_bytes(stored, x.rows, x.cols);
      } else {
        x.stored = std::uint64_t(n) * (t.kind == model::Kind::bf16 ? 2 : 4);
      }
      s.file_bytes += x.stored;
      s.tensors.push_back(std::move(x));
    }
    s.config = c;
    return s;
  }
  try {
    const gguf::File f = gguf::File::open(path, gguf::LoadMode::mmap);
    s.file_bytes = f.file_size();
    s.config = model::ModelConfig::from_gguf(f);
    for (const gguf::TensorInfo& t : f.tensors) {
      ModelShape::Tensor x{t.name, gguf::is_ternary(t.tensor_type()), 0, 0, t.bytes, t.elements()};
      if (x.ternary) {
        x.cols = std::int64_t(t.ne[0]);
        x.rows = t.ne.size() > 1 ? std::int64_t(t.ne[1]) : 1;
      }
      s.tensors.push_back(std::move(x));
    }
  } catch (const Error& e) {
    s.unreadable = e.what();
    if (s.file_bytes == 0 && fs::is_regular_file(path)) s.file_bytes = fs::file_size(path);
  }
  return s;
}

// Tokens a session of this run holds at most: the greedy check's, or the kind's own.
std::int64_t context_tokens(const RunSpec& run, const ModelKindHooks& kind) {
  const std::int64_t check = 8 + key::verify_tokens(run);
  return kind.context_tokens ? std::max(check, kind.context_tokens(run)) : check;
}

// One arm's resident memory, by part (docs/experiments.md, "Memory").
struct ArmMemory {
  std::string arm;
  std::int64_t weights = 0;    // every ternary matrix but the embedding, repacked into the arm's layout
  std::int64_t embedding = 0;  // the embedding table, kept in the file's format
  std::int64_t floats = 0;     // norms, conv and gate tensors, widened to f32
  std::int64_t file = 0;       // load = "memory": the whole file on the heap
  std::int64_t repack = 0;     // the largest ternary tensor's source copy while it is repacked
  std::int64_t sessions = 0;   // two sessions (KV cache, conv and recurrent state) at the run's context
  std::int64_t scratch = 0;    // one chunk's activations, the logits, the greedy check's logits
  std::string unknown;         // the file could not be read: only its size is counted
  std::int64_t total() const { return weights + embedding + floats + file + repack + sessions + scratch; }
};

struct RunMemory {
  std::vector<ArmMemory> arms;
  std::int64_t ceiling = 0;  // the memory read ceiling's buffer (one at a time, whatever the arms)
  bool one_at_a_time = false;
  AvailableMemory available;
  // The arms held at once: all of them, or the largest alone.
  std::int64_t arms_bytes() const {
    std::int64_t sum = 0, most = 0;
    for (const ArmMemory& a : arms) {
      sum += a.total();
      most = std::max(most, a.total());
    }
    return one_at_a_time ? most : sum;
  }
  std::int64_t margin() const { return memory_margin(arms_bytes() + ceiling); }
  std::int64_t needed() const { return arms_bytes() + ceiling + margin(); }
  bool fits() const { return available.bytes < 0 || needed() <= available.bytes; }
};

RunMemory estimate_memory(const RunSpec& run) {
  RunMemory m;
  m.one_at_a_time = one_at_a_time(run);
  m.available = available_memory();
  const ModelKindHooks& kind = find_kind(run.kind, run.at("kind")).model;
  if (kind.read_ceiling) m.ceiling = key::ceiling_mib(run) << 20;
  const ModelSource src = model_source(run);
  const std::int64_t ctx = context_tokens(run, kind);
  const std::int64_t chunk = std::min<std::int64_t>(ctx, key::prefill_chunk(run));
  const std::int64_t verify = key::verify_tokens(run);
  std::map<std::string, ModelShape> shapes;
  for (const ArmSpec& a : run.arms) {
    const std::string path = arm_model_path(a, src);
    if (!shapes.count(path)) shapes.emplace(path, shape_of(path, src));
    const ModelShape& s = shapes.at(path);
    const LayoutInfo& L = model_arm_layout(a, src);
    const model::LayoutMap map = arm_layout_map(a);
    // A tensor's repacked bytes: in its rule's layout; a measured rule's choice is not known before
    // the load, so its largest candidate.
    const auto repacked = [&](const ModelShape::Tensor& t) {
      const int r = map.match(t.name);
      if (r < 0) return packed_bytes(L, t.rows, t.cols);
      const model::LayoutRule& rule = map.rules[std::size_t(r)];
      if (!rule.measured()) return packed_bytes(find_layout(rule.layouts.front()), t.rows, t.cols);
      std::uint64_t most = 0;
      for (const LayoutInfo* c : model::measure_candidates(rule, t.rows, t.cols)) most = std::max(most, packed_bytes(*c, t.rows, t.cols));
      return most;
    };
    ArmMemory e;
    e.arm = a.name;
    if (arm_load(run, a) == gguf::LoadMode::memory) e.file = std::int64_t(s.file_bytes);
    if (!s.config) {
      e.unknown = s.unreadable;
      e.weights = std::int64_t(s.file_bytes);
      m.arms.push_back(e);
      continue;
    }
    for (const ModelShape::Tensor& t : s.tensors) {
      if (!t.ternary) {
        e.floats += 4 * t.elements;
      } else if (t.name == "token_embd.weight") {
        e.embedding += std::int64_t(t.stored);
      } else {
        e.weights += std::int64_t(repacked(t));
        e.repack = std::max(e.repack, std::int64_t(t.stored));
      }
    }
    const model::ModelConfig& c = *s.config;
    const std::int64_t gdn = c.recurrent_state_bytes();
    std::int64_t session = 0;
    for (int l = 0; l < c.n_layer; ++l)
      if (!c.is_gdn(l))  // values, and keys in whole tiles of positions (model::KeyCache)
        session += 4 * (ctx + model::KeyCache::padded(ctx)) * std::int64_t(c.n_head_kv) * c.head_dim;
    e.sessions = 2 * (session + gdn);
    if (kind.state_copies) e.sessions += kind.state_copies(run) * gdn;
    const std::int64_t width = std::max({c.n_embd, c.n_ff, c.conv_channels(), 2 * c.attn_dim()});
    const std::int64_t logit_rows = kind.logit_rows ? kind.logit_rows(run) : 1;
    e.scratch = 4 * chunk * 8 * width + 4 * std::int64_t(c.n_vocab) * (logit_rows + verify);
    m.arms.push_back(e);
  }
  return m;
}

std::string estimate_text(const RunMemory& m) {
  std::vector<std::string> per_arm;
  for (const ArmMemory& a : m.arms)
    per_arm.push_back(cat("'", a.arm, "' ", gib_text(double(a.total())), a.unknown.empty() ? "" : " (file size only: " + a.unknown + ")"));
  return cat(join(per_arm), "; ", m.one_at_a_time ? "one at a time, the largest arm " : "interleaved, all arms together ",
             gib_text(double(m.arms_bytes())), " + ceiling buffer ", gib_text(double(m.ceiling)), " + margin ",
             gib_text(double(m.margin())), " = ", gib_text(double(m.needed())));
}

std::string available_text(const AvailableMemory& a) {
  return a.bytes < 0 ? "unknown here (no /proc/meminfo): not checked" : cat(gib_text(double(a.bytes)), " available (", a.source, ")");
}

}  // namespace

// Refuses, before anything loads, a run whose arms cannot fit in the memory available.
void check_memory(const RunSpec& run) {
  const RunMemory m = estimate_memory(run);
  if (m.fits()) return;
  const Located arms_at = run.at("arms");
  const Located& at = arms_at ? arms_at : run.arms.front().table;
  if (m.one_at_a_time)
    fail_at(at, "even one arm at a time needs more memory than there is: estimated ", estimate_text(m), ", against ",
            available_text(m.available), "; use a smaller model or preset, a smaller ceiling_mib, or a machine with more memory");
  RunMemory one = m;
  one.one_at_a_time = true;
  if (!one.fits())
    fail_at(at, "the ", m.arms.size(), " arms cannot fit in memory together, nor one at a time: estimated ", estimate_text(m),
            ", against ", available_text(m.available), "; one at a time would need ", gib_text(double(one.needed())),
            ": use a smaller model or preset, a smaller ceiling_mib, or a machine with more memory");
  fail_at(at, "the ", m.arms.size(), " arms cannot fit in memory together: estimated ", estimate_text(m), ", against ",
          available_text(m.available), "; keep fewer arms, or set arms = \"one-at-a-time\" to load, measure and free each arm in ",
          "turn (needs ", gib_text(double(one.needed())), "; marked not interleaved: its ratios compare separate passes)");
}

std::string memory_notes(const RunSpec& run) {
  if (run.arms.empty()) return "";
  const RunMemory m = estimate_memory(run);
  return cat("    memory (estimate): ", estimate_text(m), "; ", available_text(m.available), "\n");
}

}  // namespace ternlab::experiments
