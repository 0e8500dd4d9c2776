// `ternlab model synth|info|generate|logits|bench` and `ternlab tokenize`: write synthetic Bonsai-format
// files, inspect any GGUF, run the forward pass in any layout, and show tokenisation.
#include <algorithm>
#include <chrono>
#include <iomanip>
#include <optional>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>
#include <memory>
#include <sstream>

#include <unistd.h>

#include <nlohmann/json.hpp>
#include <toml++/toml.h>

#include "cli/commands.hpp"
#include "common/table.hpp"
#include "common/error.hpp"
#include "common/files.hpp"
#include "common/memory.hpp"
#include "common/npy.hpp"
#include "common/strings.hpp"
#include "layouts/registry.hpp"
#include "experiments/measure.hpp"
#include "experiments/model_arms.hpp"
#include "experiments/progress.hpp"
#include "experiments/results.hpp"
#include "experiments/runner.hpp"
#include "model/experiments.hpp"
#include "model/export.hpp"
#include "model/model.hpp"
#include "model/sampler.hpp"
#include "model/speculative.hpp"
#include "model/synth.hpp"
#include "model/tokenizer.hpp"

namespace ternlab::cli {

namespace {

using namespace ternlab::model;

std::string shape_of(const gguf::TensorInfo& t) {
  std::string s;
  for (auto d : t.ne) s += cat(s.empty() ? "" : ", ", d);
  return "[" + s + "]";
}

std::string value_text(const gguf::Value& v) {
  std::ostringstream os;
  std::visit(
      [&](const auto& x) {
        using T = std::decay_t<decltype(x)>;
        if constexpr (std::is_same_v<T, std::string>) {
          os << '"' << (x.size() > 60 ? x.substr(0, 60) + "..." : x) << '"';
        } else if constexpr (std::is_same_v<T, bool>) {
          os << (x ? "true" : "false");
        } else if constexpr (requires { x.size(); }) {
          os << "[" << x.size() << " x " << gguf::type_name(v.elem) << "]";
          if (!x.empty()) {
            os << " {";
            for (std::size_t i = 0; i < std::min<std::size_t>(x.size(), 4); ++i) os << (i ? ", " : "") << x[i];
            os << (x.size() > 4 ? ", ...}" : "}");
          }
        } else {
          os << x;
        }
      },
      v.v);
  return os.str();
}

void run_info(const std::string& path, bool tensors) {
  const auto f = gguf::File::open(path, gguf::LoadMode::mmap);
  std::cout << path << ": GGUF v" << f.version << ", " << f.file_size() << " bytes, alignment " << f.alignment
            << ", data at " << f.data_offset << ", " << f.kv.size() << " keys, " << f.tensors.size() << " tensors\n";
  for (const auto& k : f.key_order)
    std::cout << "  " << std::left << std::setw(48) << k << " " << gguf::type_name(f.kv.at(k).type) << "  "
              << value_text(f.kv.at(k)) << "\n";
  if (tensors)
    for (const auto& t : f.tensors)
      std::cout << "  " << std::left << std::setw(36) << t.name << " " << std::setw(7)
                << gguf::traits_of(t.type, t.name).name << std::setw(18) << shape_of(t) << " offset " << t.offset
                << "\n";
  const auto c = ModelConfig::from_gguf(f);
  int gdn = 0;
  for (int l = 0; l < c.n_layer; ++l) gdn += c.is_gdn(l);
  std::cout << "model: qwen35, " << c.n_layer << " layers (" << gdn << " Gated DeltaNet, " << c.n_layer - gdn
            << " attention), hidden " << c.n_embd << ", ffn " << c.n_ff << ", vocab " << c.n_vocab
            << (c.rotation.identity ? std::string(", unfolded (no Hadamard rotation; upstream llama.cpp's convention)")
                                    : cat(", Hadamard block ", c.rotation.block))
            << ", ternary type "
            << gguf::traits_of(std::uint32_t(c.ternary_type), "").name << " (all tensors validated)\n";
}

// Where a model's matmul weights come from besides its ternary tensors (docs/lattice.md).
struct WeightArgs {
  std::string float_weights, lattice_weights, record = "planes14", lattice_cache;
};

struct GenerateOptions {
  std::string path, prompt = "Hello", layout, kernel, mode = "mmap", layout_map, measure_weights = "cold";
  std::string plan = "auto";
  bool requantise = false;
  int n = 16, threads = 1, gdn_chunk = 0;
  float temperature = 0, top_p = 1;
  std::uint64_t seed = 1;
  // Speculative decoding (model/speculative.hpp); empty draft: none.
  std::string draft, rollback = "ring";
  int draft_len = 2, ngram = 3;
  double corrupt = 0.5;
  WeightArgs weights;
  std::uint64_t draft_seed = 1;
};

// A progress bar on stderr for a model load (minutes at full size; silent off a terminal).
void show_load_progress(LoadOptions& lo, const std::string& what) {
  auto bar = std::make_shared<std::unique_ptr<experiments::Progress>>();
  lo.progress = [bar, what](int done, int total) {
    if (!*bar) *bar = std::make_unique<experiments::Progress>(total);
    (*bar)->step(cat("loading ", what, ": layer ", done, "/", total));
    if (done == total) (*bar)->finish();
  };
}

// One line for every comparison of a model's logits with a reference's (lossy loads, --kl-base, lossy
// exports): KL(p_ref || p_this) per predicted token, top-1 agreement, the largest logit difference
// and both perplexities ("A<ref_word> -> B") with the log ratio and difference and their errors.
std::string divergence_text(const LogitDivergence& d, const std::string& ref_word) {
  return cat("KL mean ", fixed_text(d.kl_mean, 6), ", p90 ", fixed_text(d.kl_p90, 6), ", p99 ", fixed_text(d.kl_p99, 6), ", max ",
             fixed_text(d.kl_max, 6), " nats a token; top-1 agreement ", fixed_text(100 * d.top1_agreement, 2),
             "%; max |logit difference| ", fixed_text(d.max_abs_logit, 4), "; perplexity ", fixed_text(d.ref_ppl.value(), 4),
             ref_word, " -> ", fixed_text(d.other_ppl.value(), 4), " (ln ratio ", fixed_text(d.log_ratio, 6), " +/- ",
             fixed_text(d.log_ratio_error, 6), ", difference ", fixed_text(d.other_ppl.value() - d.ref_ppl.value(), 4), " +/- ",
             fixed_text(d.other_ppl.value() * d.log_ratio_error, 4), ")");
}

// What --requantise-scales did: the lossy path is only ever taken by name, and says what it changed:
// scales moved (merged under a wider scale group, rounded to the layout's format, or both), weights whose
// code a merge changed, and the largest change of an effective weight. Nothing moved is said as such.
void print_requantisation(const Model& m, bool requested) {
  if (!requested) return;
  const ScaleRequantisation& r = m.scale_requantisation();
  const LayoutInfo& L = m.layout();
  const bool merges = L.per_tensor_scale() || L.scale_group() > kBlockK;
  if (r.changed == 0 && r.weights_changed == 0) {
    std::cout << "--requantise-scales: nothing was lost: all " << r.scales << " scales and every weight are held exactly by "
              << L.name << "\n";
    return;
  }
  std::cout << "--requantise-scales (LOSSY): " << r.changed << " of " << r.scales << " scales moved ("
            << (L.per_tensor_scale() ? "merged into one per tensor, then " : merges ? cat("merged into one per ", L.scale_group(), " weights, then ") : std::string())
            << "rounded to " << scale_format_name(L.scale_format()) << ", layout " << L.name << "); relative error max "
            << r.max_rel_error << ", mean " << r.mean_rel_error << " (over all scales)" << (r.worst.empty() ? "" : "; worst " + r.worst) << "\n";
  if (merges)
    std::cout << "  weights re-ternarised under a merged scale: " << r.weights_changed << " of " << r.weights
              << " changed code; largest change of an effective weight (w x scale) " << r.max_abs_weight_error << "\n";
}

// --layout-map's text, parsed; its errors name the flag.
LayoutMap relocated_map(const std::string& text) {
  try {
    return parse_layout_map(text);
  } catch (const Error& e) {
    fail("--layout-map: ", e.what());
  }
}

// --layout-map and --measure-weights, which the commands that load a model share (model bench's
// --layout-map adds arms instead: add_bench_options).
constexpr const char* kLayoutMapHelp =
    "Mixed layouts per tensor: 'ffn_*=b3r,*=t2r' (glob patterns over matmul tensor names, first match wins; a target "
    "'t2r|b3r' or 'measure' is timed per shape; docs/model.md)";
void add_measure_weights_option(CLI::App* c, std::string& measure_weights) {
  c->add_option("--measure-weights", measure_weights,
                "How a measured --layout-map rule times its candidates: cold (each timed call after reading twice the "
                "last-level cache, as a model past the cache decodes) or warm (calls after calls on one copy)")
      ->capture_default_str()
      ->check(CLI::IsMember({"cold", "warm"}));
}
void add_layout_map_options(CLI::App* c, std::string& layout_map, std::string& measure_weights) {
  c->add_option("--layout-map", layout_map, cat(kLayoutMapHelp, "; the rest take --layout"));
  add_measure_weights_option(c, measure_weights);
}

// ", Gated DeltaNet chunked (64 tokens a chunk)" where a prompt runs the chunked form, else "".
std::string gdn_form_text(const Model& m) {
  return m.gdn_chunk() > 0 ? cat(", Gated DeltaNet chunked (", m.gdn_chunk(), " tokens a chunk)") : std::string();
}

void add_gdn_chunk_option(CLI::App* c, int& gdn_chunk) {
  c->add_option("--gdn-chunk", gdn_chunk,
                "Tokens a chunk of the Gated DeltaNet's chunked form (spec 7.4.7; HF and llama.cpp use 64) for a prompt's "
                "batches; 0: token by token, a prompt's logits then decoding's bits")
      ->capture_default_str()
      ->check(CLI::NonNegativeNumber);
}

// The load options the model commands share.
LoadOptions load_options(const std::string& layout, const std::string& kernel, int threads, const std::string& mode,
                         bool requantise, const std::string& layout_map = "", const std::string& measure_weights = "cold",
                         int gdn_chunk = 0) {
  LoadOptions lo;
  lo.gdn_chunk = gdn_chunk;
  lo.layout = layout;
  if (!layout_map.empty()) lo.layout_map = relocated_map(layout_map);
  if (lo.layout_map.measured()) lo.plan_cold_bytes = experiments::cold_measure_bytes(measure_weights, experiments::cold_set_bytes(0));
  lo.kernel = kernel;
  lo.threads = threads;
  lo.mode = gguf::parse_mode(mode);
  lo.requantise_scales = requantise;
  return lo;
}

void add_weight_options(CLI::App* c, WeightArgs& w) {
  c->add_option("--float-weights", w.float_weights, "Run every ternary matrix on its latent float weights from this GGUF "
                                                    "(F32/F16 tensors under the same names: tools/train/train.py --export-float)");
  c->add_option("--lattice-weights", w.lattice_weights, "Run every ternary matrix on this float GGUF's weights coded with the "
                                                        "Λ24 lattice (encoded once, kept in the cache)");
  c->add_option("--record", w.record, "With --lattice-weights: the record layout (slot32, planes14, planes12x, golay70)")
      ->capture_default_str();
  c->add_option("--lattice-cache", w.lattice_cache, "With --lattice-weights: the encoding cache (default FILE.l24 beside the "
                                                    "float file, keyed by its hash; none: neither read nor written)");
}

void apply_weight_options(LoadOptions& lo, const WeightArgs& w) {
  if (!w.float_weights.empty() && !w.lattice_weights.empty()) fail("--float-weights and --lattice-weights exclude each other");
  if (!w.float_weights.empty()) lo.weights = WeightCode::float32, lo.float_weights = w.float_weights;
  if (!w.lattice_weights.empty()) lo.weights = WeightCode::lattice, lo.float_weights = w.lattice_weights;
  lo.record = w.record;
  lo.lattice_cache = w.lattice_cache;
  if (lo.weights != WeightCode::lattice) return;
  // Plain lines, not a bar: the encoding is minutes and often runs unattended.
  auto t0 = std::make_shared<double>(seconds_now(false));
  lo.encode_progress = [t0](const std::string& name, std::int64_t done, std::int64_t rows) {
    if (done == rows || done % 256 == 0)
      std::cerr << "Λ24 encoding " << name << ": " << done << "/" << rows << " rows (" << fixed_text(seconds_now(false) - *t0, 0)
                << " s)\n";
  };
}

// What the matmuls ran on, with its bits per weight.
void print_weights(const Model& m) {
  if (m.weight_code() == WeightCode::float32) {
    std::cout << "weights: latent float32 (32 bits/weight), f32 matvec\n";
  } else if (m.weight_code() == WeightCode::lattice) {
    const LatticeWeightsInfo& l = m.lattice_weights();
    std::cout << "weights: Λ24 " << l.record->name << " records, kernel " << lattice::best_record_kernel().name << ": "
              << fixed_text(l.accounting.memory_bpw, 4) << " bits/weight in memory, " << fixed_text(l.accounting.disk_bpw, 4)
              << " on disk (code " << fixed_text(l.accounting.code_bpw, 4) << "; f32 tails " << l.counts.tail_weights
              << " of " << l.counts.weights() << " weights and row scales included; " << l.counts.exceptions
              << " exception blocks) over " << l.matrices << " matrices, " << l.from_cache << " from the cache "
              << (l.cache.empty() ? std::string("(none)") : l.cache) << "\n";
  }
}

// Model::load, its refusal of a lossy layout followed by the flag that takes the lossy path, and
// what that path changed when taken.
std::unique_ptr<Model> load_model(const std::string& path, const LoadOptions& lo) {
  try {
    auto m = Model::load(path, lo);
    print_requantisation(*m, lo.requantise_scales);
    return m;
  } catch (const Error& e) {
    if (lo.requantise_scales || lo.layout.empty()) throw;
    const LayoutInfo& L = find_layout(lo.layout);
    if (L.holds_exact_fp16_per128_scales()) throw;
    fail(e.what(), " (layout ", lo.layout, " ", L.lossy_scales_why(),
         ": --requantise-scales converts the file's scales to them, lossily, and prints what moved)");
  }
}

void run_generate(const GenerateOptions& o) {
  LoadOptions lo = load_options(o.layout, o.kernel, o.threads, o.mode, o.requantise, o.layout_map, o.measure_weights, o.gdn_chunk);
  lo.plan = parse_plan_mode(o.plan);
  apply_weight_options(lo, o.weights);
  show_load_progress(lo, o.layout.empty() ? "model" : o.layout);
  auto m = load_model(o.path, lo);
  print_weights(*m);
  const auto tok = Tokenizer::from_gguf(m->file());
  const auto prompt = tok.encode(o.prompt);
  if (prompt.empty()) fail("the prompt encodes to no tokens");
  const Rollback rollback = parse_rollback(o.rollback);
  if (!o.draft.empty()) check_draft_len(*m, o.draft_len, "--draft-len");
  Sampler sampler({o.temperature, o.top_p, o.seed});
  Session s = m->new_session();
  auto logits = m->forward(s, prompt);
  std::vector<std::int32_t> out;
  const auto t0 = std::chrono::steady_clock::now();
  for (int i = 0; i < o.n; ++i) {
    const auto next = sampler.sample(logits);
    out.push_back(next);
    if (next == tok.eos()) break;
    if (i + 1 < o.n) logits = m->forward(s, std::span(&next, 1));
  }
  const double plain_seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  std::cout << "layout " << m->layout_text() << ", kernel " << m->kernel_name() << gdn_form_text(*m) << "\n";
  if (m->mixed()) std::cout << "  " << fixed_text(m->bits_per_weight(), 4) << " bits/weight over the matmuls\n";
  for (const std::string& n : m->layout_notes()) std::cout << "  " << n << "\n";
  if (lo.plan == PlanMode::measure)
    for (const std::string& n : m->kernel_notes()) std::cout << "  " << n << "\n";
  std::cout << "prompt tokens:";
  for (auto t : prompt) std::cout << " " << t;
  std::cout << "\noutput tokens:";
  for (auto t : out) std::cout << " " << t;
  std::cout << "\ntext: " << o.prompt << tok.decode(out) << "\n";
  if (o.draft.empty()) return;

  // The plain run above is the reference: the oracle and controlled drafters replay it, and the
  // speculative tokens must equal it.
  DrafterOptions d;
  d.name = o.draft;
  d.ngram = o.ngram;
  d.corrupt = o.corrupt;
  d.seed = o.draft_seed;
  d.continuation = out;
  d.prompt_tokens = int(prompt.size());
  auto drafter = make_drafter(d, m->config().n_vocab);
  SpeculativeStats st;
  const auto spec = generate_speculative(*m, prompt, o.n, *drafter, {o.draft_len, rollback, tok.eos()},
                                         &st);
  if (spec != out) fail("speculative decoding with the ", o.draft, " drafter diverged from plain greedy decoding");
  const double plain_tok_s = out.size() > 1 ? double(out.size() - 1) / plain_seconds : 0.0;
  std::cout << std::fixed << std::setprecision(2) << "speculative: " << o.draft << " drafter, draft length "
            << o.draft_len << ", rollback " << o.rollback << "; tokens identical to plain greedy decoding\n"
            << "  acceptance " << st.accepted << "/" << st.drafted << " (" << 100.0 * st.acceptance() << "%), "
            << st.tokens_per_pass() << " tokens per verification pass (" << st.passes << " passes, " << st.rollbacks
            << " rollbacks)\n"
            << "  decode tok/s (after the first token): " << st.decode_tok_s() << " with speculation, " << plain_tok_s
            << " without (" << (plain_tok_s > 0 ? st.decode_tok_s() / plain_tok_s : 0.0) << "x)\n"
            << std::setprecision(4) << "  seconds: draft " << st.draft_seconds << ", verify " << st.verify_seconds
            << ", rollback " << st.rollback_seconds << " (speculative); decode " << plain_seconds << " (plain)\n";
}

struct VerifyCostOptions {
  std::string path, layout, mode = "mmap", clock = "wall";
  int threads = 1, max_batch = 5, rounds = 3, prompt = 16;
};

// Verification and rollback costs per batch (model/speculative.hpp measure_verify_costs), and the
// tokens per pass each batch needs to beat plain decoding.
void run_verify_costs(const VerifyCostOptions& o) {
  LoadOptions lo;
  lo.layout = o.layout;
  lo.threads = o.threads;
  lo.mode = gguf::parse_mode(o.mode);
  show_load_progress(lo, o.layout.empty() ? "model" : o.layout);
  auto m = Model::load(o.path, lo);
  check_draft_len(*m, o.max_batch - 1 < 1 ? 1 : o.max_batch - 1, "--max-batch - 1");
  const auto prompt = random_tokens(o.prompt, m->config().n_vocab, 7);
  if (o.clock != "wall" && o.clock != "cpu") fail("--clock must be wall or cpu, got '", o.clock, "'");
  const VerifyCosts c = measure_verify_costs(*m, prompt, o.max_batch, o.rounds, o.clock == "cpu");
  int gdn = 0;
  for (int l = 0; l < m->config().n_layer; ++l) gdn += m->config().is_gdn(l);
  std::cout << "layout " << m->layout().name << ", kernel " << m->kernel_name() << ", " << o.threads
            << " threads, " << m->config().n_layer << " layers (" << gdn << " Gated DeltaNet), hidden "
            << m->config().n_embd << "; after a " << o.prompt << "-token prompt, median of " << o.rounds
            << " interleaved rounds, " << (o.clock == "cpu" ? "process CPU time" : "wall time") << "\n"
            << "one ring slot (every GDN layer's conv window + recurrent state): " << std::fixed
            << std::setprecision(2) << double(c.state_bytes) / double(1 << 20) << " MiB\n"
            << std::right << std::setw(6) << "batch" << std::setw(8) << "drafts" << std::setw(13) << "forward ms"
            << std::setw(12) << "x batch 1" << std::setw(16) << "ring copies ms" << std::setw(16) << "ring forward ms"
            << std::setw(14) << "rollback ms" << std::setw(20) << "recompute keep 1 ms" << "\n";
  const double one = c.forward_seconds[0];
  const double slot = c.record_seconds.size() > 1 ? c.record_seconds[1] : 0.0;  // batch 2 records one slot
  for (std::size_t i = 0; i < c.forward_seconds.size(); ++i)
    std::cout << std::setw(6) << i + 1 << std::setw(8) << i << std::setprecision(2) << std::setw(13)
              << 1e3 * c.forward_seconds[i] << std::setw(12) << c.forward_seconds[i] / one << std::setw(16)
              << 1e3 * c.record_seconds[i] << std::setw(16) << 1e3 * c.ring_forward_seconds[i] << std::setw(14)
              << 1e3 * c.rollback_seconds[i] << std::setw(20) << (i ? 1e3 * (slot + one) : 0.0) << "\n";
  std::cout << "a pass of T tokens pays when it emits more than (forward ms / batch-1 forward ms) tokens on average\n";
}

struct LogitsOptions {
  std::string path, prompt, tokens, layout, kernel, mode = "mmap", layout_map, measure_weights = "cold";
  std::vector<std::string> out;
  int threads = 1, gdn_chunk = 0;
  bool requantise = false;
};

// "1, 2 3" -> {1, 2, 3}: ids separated by commas and/or spaces.
std::vector<std::int32_t> parse_ids(const std::string& text) {
  std::vector<std::int32_t> ids;
  std::string cur;
  auto flush = [&] {
    if (cur.empty()) return;
    std::size_t used = 0;
    long long v = -1;
    try {
      v = std::stoll(cur, &used);
    } catch (const std::exception&) {
      used = 0;
    }
    if (used != cur.size() || v < 0 || v > std::numeric_limits<std::int32_t>::max()) fail("--tokens: '", cur, "' is not a token id");
    ids.push_back(std::int32_t(v));
    cur.clear();
  };
  for (char ch : text) {
    if (ch == ',' || ch == ' ' || ch == '\t' || ch == '\n') flush();
    else cur += ch;
  }
  flush();
  return ids;
}

void run_logits(const LogitsOptions& o) {
  if (o.prompt.empty() == o.tokens.empty()) fail("model logits: give exactly one of --prompt TEXT and --tokens IDS");
  for (const std::string& out : o.out)
    if (!out.ends_with(".npy") && !out.ends_with(".csv"))
      fail("model logits: -o/--output ", out, ": the name must end in .npy or .csv (the format written)");
  auto m = load_model(o.path, load_options(o.layout, o.kernel, o.threads, o.mode, o.requantise, o.layout_map, o.measure_weights, o.gdn_chunk));
  std::vector<std::int32_t> ids;
  if (!o.prompt.empty()) {
    ids = Tokenizer::from_gguf(m->file()).encode(o.prompt);
    if (ids.empty()) fail("model logits: the prompt encodes to no tokens");
  } else {
    ids = parse_ids(o.tokens);
    if (ids.empty()) fail("model logits: --tokens holds no ids");
  }
  const auto logits = all_logits(*m, ids);
  const std::int64_t rows = std::int64_t(ids.size()), cols = m->config().n_vocab;
  for (const std::string& out : o.out) {
    if (out.ends_with(".npy")) write_npy_f32(out, logits, rows, cols);
    else write_csv_f32(out, logits, rows, cols);
  }
  std::cout << "layout " << m->layout_text() << ", kernel " << m->kernel_name() << gdn_form_text(*m) << "\n";
  std::cout << "tokens:";
  for (auto t : ids) std::cout << " " << t;
  std::cout << "\nlogits: " << rows << " positions x " << cols << " vocab (float32; row t scores the token after token t)";
  for (const std::string& out : o.out) std::cout << "\nwrote " << out;
  std::cout << "\n";
}

struct PerplexityOptions {
  std::string path, text, layout, kernel, mode = "mmap", save_logits, kl_base, layout_map, measure_weights = "cold";
  int tokens = 0, chunk = 64, stride = 0, threads = 1, gdn_chunk = 0;
  bool json = false;
  bool requantise = false;
  WeightArgs weights;
};

// What --save-logits writes beside the logits (FILE.npy.json): what they were scored on, so that a
// later --kl-base run can refuse a comparison over other tokens or windows.
nlohmann::json logits_record(const PerplexityOptions& o, const Model& m, const std::vector<std::int32_t>& targets) {
  return {{"model", o.path}, {"layout", m.layout_text()}, {"text", o.text}, {"chunk", o.chunk},
          {"stride", o.stride}, {"vocab", m.config().n_vocab}, {"targets", targets}};
}

// Perplexity of a text file, tokenised with the file's tokenizer, in windows each from a fresh state,
// the way llama-perplexity reports it: every window's value, the estimate with its standard error,
// and optionally the scored logits saved (--save-logits) or compared with saved ones (--kl-base).
void run_perplexity(const PerplexityOptions& o) {
  const std::string text = read_text(o.text);
  if (o.stride >= o.chunk) fail("model perplexity: --stride ", o.stride, " must be below --ctx ", o.chunk);
  LoadOptions lo = load_options(o.layout, o.kernel, o.threads, o.mode, o.requantise, o.layout_map, o.measure_weights, o.gdn_chunk);
  apply_weight_options(lo, o.weights);
  auto m = load_model(o.path, lo);
  std::vector<std::int32_t> ids = Tokenizer::from_gguf(m->file()).encode(text);
  if (o.tokens > 0 && ids.size() > std::size_t(o.tokens)) ids.resize(std::size_t(o.tokens));
  if (ids.size() < 2) fail("model perplexity: ", o.text, " encodes to ", ids.size(), " tokens (at least 2 are needed)");
  const int vocab = m->config().n_vocab;
  // The base's logits (a float32 [positions, vocab] .npy) and what they were scored on.
  NpyMatrix base;
  nlohmann::json base_record;
  if (!o.kl_base.empty()) {
    base = read_npy_f32(o.kl_base);
    const std::string side = o.kl_base + ".json";
    std::ifstream in(side);
    if (!in) fail(o.kl_base, ": no ", side, " beside it (written by --save-logits with the logits)");
    try {
      base_record = nlohmann::json::parse(in);
    } catch (const nlohmann::json::exception& e) {
      fail(side, ": not the JSON --save-logits writes (", e.what(), ")");
    }
    if (base.cols != vocab) fail(o.kl_base, ": ", base.cols, " logits a position, this model's vocabulary is ", vocab);
  }
  std::vector<float> saved;
  std::vector<std::int32_t> targets;
  std::optional<DivergenceAccumulator> kl;
  if (!o.kl_base.empty()) kl.emplace(vocab);
  const Perplexity p = perplexity(*m, ids, o.chunk, o.stride, [&](const float* l, std::int32_t next) {
    if (!o.save_logits.empty()) saved.insert(saved.end(), l, l + vocab);
    if (kl) {
      const auto at = targets.size();
      if (at >= std::size_t(base.rows))
        fail(o.kl_base, ": holds ", base.rows, " positions, this run scores more (other text, --tokens, --ctx or --stride?)");
      const auto& want = base_record.at("targets");
      if (at >= want.size() || want[at].get<std::int32_t>() != next)
        fail(o.kl_base, ": position ", at, " scored token ", at < want.size() ? want[at].get<std::int32_t>() : -1, ", this run ",
             next, ": not the same text, --tokens, --ctx and --stride (", base_record.at("text").get<std::string>(), ", ctx ",
             base_record.at("chunk").get<int>(), ", stride ", base_record.at("stride").get<int>(), ")");
      kl->add(base.values.data() + at * std::size_t(vocab), l, next);
    }
    targets.push_back(next);
  });
  if (kl && targets.size() != std::size_t(base.rows))
    fail(o.kl_base, ": holds ", base.rows, " positions, this run scored ", targets.size(), " (other text, --tokens, --ctx or --stride?)");
  if (!o.save_logits.empty()) {
    write_npy_f32(o.save_logits, saved, std::int64_t(targets.size()), vocab);
    replace_file_atomically(o.save_logits + ".json", [&](const std::filesystem::path& part) {
      std::ofstream(part) << logits_record(o, *m, targets).dump(1) << "\n";
    });
  }
  if (o.json) {
    nlohmann::ordered_json j = {{"model", o.path}, {"text", o.text}, {"layout", m->layout_text()},
                                {"kernel", m->kernel_name()}, {"tokens", ids.size()}, {"ctx", o.chunk}, {"stride", o.stride},
                                {"predicted", p.predicted}, {"perplexity", p.value()}, {"standard_error", p.standard_error()},
                                {"windows", p.chunk_values}};
    if (kl) {
      const LogitDivergence d = kl->result();
      j["kl_base"] = {{"file", o.kl_base}, {"kl_mean", d.kl_mean}, {"kl_p90", d.kl_p90}, {"kl_p99", d.kl_p99}, {"kl_max", d.kl_max},
                      {"top1_agreement", d.top1_agreement}, {"base_perplexity", d.ref_ppl.value()},
                      {"log_ratio", d.log_ratio}, {"log_ratio_error", d.log_ratio_error}};
    }
    if (!o.save_logits.empty()) j["saved_logits"] = o.save_logits;
    std::cout << j.dump(1) << "\n";
    return;
  }
  std::cout << "layout " << m->layout_text() << " (" << fixed_text(m->bits_per_weight(), 4) << " bits/weight), kernel "
            << m->kernel_name() << (m->weight_code() == WeightCode::ternary ? "" : " (shapes only)") << gdn_form_text(*m) << "\n";
  print_weights(*m);
  std::cout << "windows:";
  for (std::size_t i = 0; i < p.chunk_values.size(); ++i) std::cout << " [" << i + 1 << "]" << fixed_text(p.chunk_values[i], 4);
  std::cout << "\n";
  std::cout << "perplexity " << fixed_text(p.value(), 4) << " +/- " << fixed_text(p.standard_error(), 4) << " over " << p.predicted
            << " predicted tokens of " << o.text << " (" << ids.size() << " tokens, windows of " << o.chunk
            << (o.stride ? cat(" every ", o.stride, " tokens, each scoring its last ", o.stride) : std::string())
            << ", each from a fresh state; uniform guessing scores " << vocab << ")\n";
  if (!o.save_logits.empty()) {
    std::cout << "saved the logits of " << targets.size() << " scored positions to " << o.save_logits << " (and "
              << o.save_logits << ".json): compare another layout or a lossy variant with --kl-base " << o.save_logits << "\n";
  }
  if (kl) {
    const LogitDivergence d = kl->result();
    std::cout << "against " << o.kl_base << " (" << base_record.at("layout").get<std::string>() << "): "
              << divergence_text(d, "") << "\n";
  }
  const ScaleRequantisation& r = m->scale_requantisation();
  if (!o.requantise || (r.changed == 0 && r.weights_changed == 0) || kl) return;
  // The loss in the units that matter for a model: its logits against the file's exact weights, on the same text.
  auto ref = Model::load(o.path, load_options("", "", o.threads, o.mode, false, "", "cold", o.gdn_chunk));
  const LogitDivergence d = logit_divergence(*ref, *m, ids, o.chunk);
  std::cout << "loss against the file's exact weights (" << ref->layout().name << ", same text and chunks): "
            << divergence_text(d, " exact") << "\n";
}

struct BenchOptions {
  std::string path, layouts = "pq2_0,ptq1_0,t2x4,t2p,t2r", mode = "mmap", plan = "auto", format = "md", output, results = "results";
  std::vector<int> prompt{64}, gen{32}, threads{1};
  std::vector<std::string> layout_maps;  // each an arm beside the layouts
  std::string measure_weights = "cold";
  int repetitions = 5, warmup = 1, gdn_chunk = 0;
  bool requantise = false;
};

// `model bench` as llama-bench: pp (prefill of P tokens from an empty context) and tg (N tokens
// decoded one at a time from an empty context) for every layout x thread count. The flags become
// a `model-bench` experiment (experiments/model_bench_kind.cpp) that the runner of `ternlab run`
// measures: arms interleaved within every repetition beside the read ceiling, greedy tokens checked
// against the first layout's before timing, a results folder written. Its summary (t/s as mean and
// standard deviation, llama-bench's field names) goes to standard output or -o as markdown, CSV or
// JSON; the runner's own tables go to standard error.
void run_bench(const BenchOptions& o) {
  if (o.format != "md" && o.format != "csv" && o.format != "json")
    fail("model bench: --format '", o.format, "' (md, csv or json)");
  std::vector<std::string> tests;
  for (int p : o.prompt)
    if (p > 0) tests.push_back(cat("pp", p));
  for (int n : o.gen)
    if (n > 0) tests.push_back(cat("tg", n));
  if (tests.empty()) fail("model bench: no test: every -p and -n is 0");
  toml::array layouts, threads;
  std::stringstream names(o.layouts);
  for (std::string name; std::getline(names, name, ',');) layouts.push_back(name);
  if (layouts.empty()) fail("model bench: no layout named (--layouts)");
  for (int t : o.threads) threads.push_back(t);
  toml::array arms{toml::table{{"layout", layouts}, {"threads", threads}}};
  // Each map an arm named by its text; the tensors it leaves take the first layout.
  for (const std::string& map : o.layout_maps) {
    relocated_map(map);  // its errors name the flag before anything loads
    arms.push_back(toml::table{{"name", map}, {"layout", *layouts.front().value<std::string>()}, {"layout_map", map}, {"threads", threads}});
  }
  // The baseline is the first layout at each arm's thread count: its ratios compare like with like.
  toml::table config{{"kind", "model-bench"}, {"name", "model-bench"}, {"model", o.path}, {"output", o.results},
                     {"tests", join(tests, ",")}, {"rounds", o.repetitions}, {"warmup", o.warmup}, {"sample_ms", 0.001},
                     {"load", o.mode}, {"plan", o.plan}, {"requantise_scales", o.requantise}, {"measure_weights", o.measure_weights},
                     {"gdn_chunk", o.gdn_chunk}, {"baseline", *layouts.front().value<std::string>()}, {"arm", std::move(arms)}};
  const experiments::RunOutcome outcome =
      experiments::run_experiment_text(cat("# ternlab model bench ", o.path, "\n", config, "\n"), "model-bench", {}, std::cerr);
  std::ifstream in(std::filesystem::path(outcome.folder) / "summary.json");
  const experiments::Json summary = experiments::Json::parse(in);
  const experiments::Json& records = summary.at("runs").at(0).at("records");

  std::ostringstream out;
  if (o.format == "md") {
    Table table({{"layout"}, {"kernel"}, {"threads", Align::right}, {"MB/token", Align::right}, {"test"}, {"t/s", Align::right},
                 {"of read ceiling", Align::right}, {"greedy check"}});
    for (const auto& r : records) {
      const double fraction = experiments::stat_from(r.at("read_ceiling_fraction")).median;
      table.add({r.at("layout").get<std::string>(), r.at("kernel").get<std::string>(), cat(r.at("n_threads").get<int>()),
                 fixed_text(r.at("ternary_bytes_per_token").get<double>() / 1e6, 2), r.at("test").get<std::string>(),
                 r.at("verified").get<bool>() ? cat(fixed_text(experiments::number_of(r.at("avg_ts")), 2), " ± ",
                                                    fixed_text(experiments::number_of(r.at("stddev_ts")), 2))
                                              : "—",
                 std::isfinite(fraction) ? fixed_text(fraction * 100, 1) + "%" : "—", r.at("greedy_check").get<std::string>()});
    }
    out << table.markdown();
    out << "\nt/s: mean ± standard deviation over " << o.repetitions << " repetitions after " << o.warmup
        << " untimed; pp: P prompt tokens in one batch, tg: N tokens decoded one at a time, both from an empty context; "
           "arms interleaved within every repetition; of read ceiling: ternary weight bytes per repetition / its time / the "
           "memory read ceiling measured beside it (median). greedy check: an 8-token prompt's greedy tokens against the first "
           "layout's at the same thread count, before timing. Results folder: "
        << outcome.folder << "\n";
  } else if (o.format == "csv") {
    experiments::Rows rows;
    rows.file = "bench.csv";
    rows.columns = {"model_filename", "layout", "kernel", "n_threads", "ternary_bytes_per_token", "test", "n_prompt", "n_gen",
                    "repetitions", "avg_ts", "stddev_ts", "avg_ns", "stddev_ns", "samples_ts", "greedy_check"};
    for (const auto& r : records) {
      std::string joined;
      for (const auto& x : r.at("samples_ts")) joined += cat(joined.empty() ? "" : ";", fixed_text(x.get<double>(), 3));
      rows.add({r.at("model_filename").get<std::string>(), r.at("layout").get<std::string>(), r.at("kernel").get<std::string>(),
                r.at("n_threads").get<int>(), r.at("ternary_bytes_per_token").get<std::int64_t>(), r.at("test").get<std::string>(),
                r.at("n_prompt").get<int>(), r.at("n_gen").get<int>(), r.at("repetitions").get<int>(),
                experiments::number_of(r.at("avg_ts")), experiments::number_of(r.at("stddev_ts")), experiments::number_of(r.at("avg_ns")),
                experiments::number_of(r.at("stddev_ns")), joined, r.at("greedy_check").get<std::string>()});
    }
    out << experiments::csv_text(rows);
  } else {
    out << records.dump(1) << "\n";
  }
  if (o.output.empty()) {
    std::cout << out.str();
  } else {
    write_file_atomically(o.output, out.str());
    std::cout << "wrote " << o.output << " (" << o.format << ", " << records.size() << " rows); results folder " << outcome.folder << "\n";
  }
  if (outcome.exit_code) fail("model bench: some arm failed to load or its greedy check (see the greedy check column)");
}

void add_verify_costs_command(CLI::App* model) {
  static VerifyCostOptions v;
  auto* vc = model->add_subcommand("verify-costs",
                                   "Speculative decoding's costs: forward time per verification batch, the state "
                                   "ring's copies and rollback, recomputation");
  vc->add_option("file", v.path, "GGUF file")->required();
  vc->add_option("--layout", v.layout, "Repack every ternary tensor into this layout: " + layout_names())->check(known_layouts());
  vc->add_option("--threads", v.threads, "Threads")->capture_default_str()->check(CLI::PositiveNumber);
  vc->add_option("--max-batch", v.max_batch, "Largest verification batch (drafts + 1)")->capture_default_str()
      ->check(CLI::Range(2, 1 << 20));
  vc->add_option("--rounds", v.rounds, "Interleaved rounds (median)")->capture_default_str()->check(CLI::PositiveNumber);
  vc->add_option("--prompt", v.prompt, "Prompt tokens before the measured passes")->capture_default_str()
      ->check(CLI::PositiveNumber);
  vc->add_option("--load", v.mode, "Load mode: mmap or memory")->capture_default_str();
  vc->add_option("--clock", v.clock, "wall, or cpu: this process's CPU time (all threads), which leaves out time "
                                     "other jobs take on a shared machine")->capture_default_str();
  vc->callback([] { run_verify_costs(v); });
}


struct ExportArgs {
  std::string path, out, type, eval_text;
  bool unfold = false, lossy = false;
  int eval_tokens = 1024, eval_chunk = 128, threads = 1;
};

// A lossy export says what it cost in the units that matter: the scales and weights that moved, and
// the KL divergence of the exported model's logits from the original's on a held-out text.
void run_export(const ExportArgs& a) {
  if (a.lossy && a.eval_text.empty() && a.type != "f32")
    fail("model export --lossy: name a held-out text with --eval-text FILE, so the loss is measured "
         "(KL divergence of the logits against ", a.path, ")");
  ExportOptions o;
  o.type = a.type;
  o.unfold = a.unfold;
  o.lossy = a.lossy;
  std::unique_ptr<experiments::Progress> bar;
  o.progress = [&](std::size_t done, std::size_t total, const std::string& name) {
    if (!bar) bar = std::make_unique<experiments::Progress>(std::int64_t(total));
    bar->step(cat("writing ", name, " (", done, "/", total, ")"));
  };
  ExportReport r;
  try {
    r = export_model(a.path, a.out, o);
  } catch (const Error& e) {
    if (a.lossy) throw;
    const std::string what = e.what();
    if (what.find("scale") == std::string::npos || a.type == "f32") throw;
    fail(what, " (", a.type, " cannot hold the file's scales there: --lossy merges them into the larger and "
               "re-ternarises, reporting what moved and the KL divergence on --eval-text)");
  }
  if (bar) bar->finish();
  std::cout << "wrote " << a.out << ": " << r.bytes << " bytes, " << r.converted << " ternary tensors as "
            << gguf::traits_of(r.type, "").name << (a.unfold ? ", Hadamard fold undone" : "") << "\n";
  if (r.fold_kept)
    std::cout << "note: the file keeps its prism.hadamard fold. ternlab (and PrismML's llama.cpp fork) apply it; "
                 "upstream llama.cpp ignores those keys and so runs the same shapes at the same speed but computes "
                 "another function (docs/llamacpp.md). For upstream's logits of this model: --type f32 --unfold.\n";
  if (r.type == std::uint32_t(gguf::TensorType::f32))
    std::cout << "unfolded weights: " << r.unfolded_weights << ", " << r.unfolded_rounded << " rounded to float32"
              << (r.unfolded_rounded ? cat(" (max relative error ", r.unfolded_max_rel_error, ")") : std::string(" (exact)"))
              << "\n";
  const ScaleRequantisation& s = r.scales;
  if (a.lossy || !r.exact()) {
    std::cout << "scales: " << s.changed << " of " << s.scales << " moved (relative error max " << s.max_rel_error
              << ", mean " << s.mean_rel_error << (s.worst.empty() ? "" : "; worst " + s.worst) << "); weights: "
              << s.weights_changed << " of " << s.weights << " re-ternarised under a merged scale changed code"
              << " (max |effective weight error| " << s.max_abs_weight_error << ")\n";
  } else {
    std::cout << "exact: every scale and weight is held as it was\n";
  }
  if (!a.lossy || a.type == "f32" || a.eval_text.empty()) return;
  LoadOptions lo = load_options("", "", a.threads, "mmap", false);
  auto ref = Model::load(a.path, lo);
  auto got = Model::load(a.out, lo);
  const Tokenizer tok = Tokenizer::from_gguf(ref->file());
  std::vector<std::int32_t> ids = tok.encode(read_text(a.eval_text));
  if (ids.size() > std::size_t(a.eval_tokens)) ids.resize(std::size_t(a.eval_tokens));
  if (ids.size() < 2) fail(a.eval_text, " encodes to ", ids.size(), " tokens (at least 2 are needed)");
  const LogitDivergence d = logit_divergence(*ref, *got, ids, a.eval_chunk);
  std::cout << "loss on " << a.eval_text << " (" << d.positions << " predicted tokens, chunks of " << a.eval_chunk
            << "), the original against the export: " << divergence_text(d, " original") << "\n";
}

}  // namespace

void add_model_commands(CLI::App& app) {
  auto* model = app.add_subcommand("model", "Bonsai 2 (qwen35) GGUF models: synthesize, inspect, run");
  model->require_subcommand(1);

  static std::string preset = "tiny", out, type = "pq2_0";
  static std::uint64_t seed = 2026;
  static int layers = 0, scale_group = 128;
  static bool unfolded = false;
  auto* synth = model->add_subcommand("synth", "Write a synthetic model in the exact Bonsai GGUF format");
  std::vector<std::string> preset_names;
  for (const auto& p : synth_presets()) preset_names.push_back(p.name);
  synth->add_option("--preset", preset, "Preset: " + join(preset_names))->capture_default_str();
  synth->add_option("-o,--output", out, "Output .gguf path")->required();
  synth->add_option("--type", type, "Ternary tensor type: pq2_0, ptq1_0, tq2_0 or tq1_0")->capture_default_str();
  synth->add_option("--scale-group", scale_group,
                    "Weights under one scale: 128, or 256 (pairs of groups share one; what TQ2_0/TQ1_0 hold)")
      ->capture_default_str();
  synth->add_flag("--unfolded", unfolded,
                  "No Hadamard fold (no prism.hadamard keys): a plain qwen35 model that upstream llama.cpp runs as ternlab does");
  synth->add_option("--seed", seed, "Random seed")->capture_default_str();
  synth->add_option("--layers", layers, "Layers (default: the preset's); the layer shapes stay the preset's")
      ->check(CLI::PositiveNumber);
  synth->callback([] {
    SynthOptions so;
    so.seed = seed;
    so.ternary_type = int(gguf::ternary_type_id(type, "--type"));
    so.scale_group = scale_group;
    so.unfolded = unfolded;
    std::unique_ptr<experiments::Progress> bar;
    so.progress = [&](std::size_t done, std::size_t total, const std::string& name) {
      if (!bar) bar = std::make_unique<experiments::Progress>(std::int64_t(total));
      bar->step(cat("writing ", name, " (", done, "/", total, ")"));
    };
    const auto bytes = write_synthetic(layers ? with_layers(find_preset(preset), layers) : find_preset(preset), out, so);
    if (bar) bar->finish();
    std::cout << "wrote " << out << ": preset " << preset << (layers ? cat(", ", layers, " layers") : "") << ", " << type
              << (unfolded ? ", unfolded" : "") << ", " << bytes << " bytes\n";
  });

  static ExportArgs ex;
  auto* exp = model->add_subcommand(
      "export", "Re-write a model for llama.cpp: ternary tensors as TQ2_0/TQ1_0 (or PQ2_0/PTQ1_0), or the fold undone into F32");
  exp->add_option("file", ex.path, "Input GGUF (a Bonsai 2 / qwen35 ternary model)")->required();
  exp->add_option("-o,--output", ex.out, "Output .gguf path (written whole or not at all)")->required();
  exp->add_option("--type", ex.type, "Target: tq2_0, tq1_0 (ggml's, upstream llama.cpp), pq2_0, ptq1_0, or f32 (with --unfold)")
      ->required();
  exp->add_flag("--unfold", ex.unfold, "Undo the Hadamard fold (weights, embedding rows, ssm_out to tiled order) and drop "
                                       "prism.hadamard: the model upstream llama.cpp computes as ternlab does (needs --type f32 "
                                       "unless the file is unfolded already)");
  exp->add_flag("--lossy", ex.lossy, "LOSSY, by name: merge scale groups the target cannot hold (one scale per 256 "
                                     "weights in TQ2_0/TQ1_0) and report what moved");
  exp->add_option("--eval-text", ex.eval_text, "With --lossy: held-out text for the KL divergence of the logits");
  exp->add_option("--eval-tokens", ex.eval_tokens, "With --eval-text: tokens of it to score")->capture_default_str()
      ->check(CLI::PositiveNumber);
  exp->add_option("--eval-chunk", ex.eval_chunk, "With --eval-text: tokens per chunk from a fresh state")
      ->capture_default_str()->check(CLI::Range(2, 1 << 20));
  exp->add_option("-t,--threads", ex.threads, "Threads for the KL evaluation")->capture_default_str()->check(CLI::PositiveNumber);
  exp->callback([] { run_export(ex); });

  static std::string info_path;
  static bool info_tensors = false;
  auto* info = model->add_subcommand("info", "Print a GGUF file's metadata and validate it as a Bonsai 2 model");
  info->add_option("file", info_path, "GGUF file")->required();
  info->add_flag("--tensors", info_tensors, "List every tensor");
  info->callback([] { run_info(info_path, info_tensors); });

  static GenerateOptions g;
  auto* gen = model->add_subcommand("generate", "Run the model on a prompt (prefill via gemm, decode via gemv)");
  gen->add_option("file", g.path, "GGUF file")->required();
  gen->add_option("-p,--prompt", g.prompt, "Prompt text")->capture_default_str();
  gen->add_option("-n", g.n, "Tokens to generate")->capture_default_str()->check(CLI::PositiveNumber);
  gen->add_option("--layout", g.layout, "Repack every ternary tensor into this layout: " + layout_names())->check(known_layouts());
  add_layout_map_options(gen, g.layout_map, g.measure_weights);
  add_gdn_chunk_option(gen, g.gdn_chunk);
  gen->add_option("--kernel", g.kernel, "Kernel (strategy or strategy/isa, or a peer's own: bitnet-i2s, ggml-tq2_0, ggml-tq1_0); default: the best listed, a peer format's own");
  gen->add_option("--threads", g.threads, "Threads")->capture_default_str()->check(CLI::PositiveNumber);
  gen->add_option("--temperature", g.temperature, "0 = greedy")->capture_default_str();
  gen->add_option("--top-p", g.top_p, "Nucleus mass")->capture_default_str();
  gen->add_option("--seed", g.seed, "Sampling seed")->capture_default_str();
  add_weight_options(gen, g.weights);
  gen->add_option("--load", g.mode, "Load mode: mmap or memory")->capture_default_str();
  gen->add_flag("--requantise-scales", g.requantise, "LOSSY, by name: round the file's scales to the layout's scale format (bf16, e4m3, e8m0) where the exact repack "
                                      "refuses, and print how many moved and their max / mean relative error");
  gen->add_option("--plan", g.plan, "Kernel choice without --kernel: auto (the wisdom file's measured choice for the output head, "
                                    "else the estimate), estimate (the ISA ladder) or measure (time the candidates on the output "
                                    "head once, kept in the wisdom file)")->capture_default_str();
  gen->add_option("--draft", g.draft, "Speculative decoding (greedy only) with this drafter: " + join(drafter_names()))
      ->check([](const std::string& v) {
        const auto& n = drafter_names();
        return std::find(n.begin(), n.end(), v) != n.end() ? std::string()
                                                           : cat("unknown drafter '", v, "' (known: ", join(n), ")");
      });
  gen->add_option("--draft-len", g.draft_len, "Drafts verified per pass (1 .. the gemm batch - 1)")->capture_default_str();
  gen->add_option("--ngram", g.ngram, "prompt-lookup: longest n-gram matched")->capture_default_str();
  gen->add_option("--corrupt", g.corrupt, "controlled: probability that a draft is replaced")->capture_default_str();
  gen->add_option("--draft-seed", g.draft_seed, "junk, controlled: random seed")->capture_default_str();
  gen->add_option("--rollback", g.rollback, "ring (states kept per draft) or recompute (re-run the accepted tokens)")
      ->capture_default_str();
  gen->callback([] {
    if (!g.draft.empty() && g.temperature != 0) fail("--draft needs greedy decoding (--temperature 0)");
    run_generate(g);
  });

  static LogitsOptions lg;
  auto* logits = model->add_subcommand("logits", "Every position's logits of a prompt (teacher forced) as .npy and/or CSV");
  logits->add_option("file", lg.path, "GGUF file")->required();
  logits->add_option("-p,--prompt", lg.prompt, "Prompt text (tokenised with the file's tokenizer)");
  logits->add_option("--tokens", lg.tokens, "Token ids, separated by commas or spaces");
  logits->add_option("--layout", lg.layout, "Repack every ternary tensor into this layout: " + layout_names())->check(known_layouts());
  add_layout_map_options(logits, lg.layout_map, lg.measure_weights);
  add_gdn_chunk_option(logits, lg.gdn_chunk);
  logits->add_option("--kernel", lg.kernel, "Kernel (strategy or strategy/isa, or a peer's own: bitnet-i2s, ggml-tq2_0, ggml-tq1_0); default: the best listed, a peer format's own");
  logits->add_option("--threads", lg.threads, "Threads")->capture_default_str()->check(CLI::PositiveNumber);
  logits->add_option("--load", lg.mode, "Load mode: mmap or memory")->capture_default_str();
  logits->add_flag("--requantise-scales", lg.requantise, "LOSSY, by name: round the file's scales to the layout's scale format (bf16, e4m3, e8m0) where the exact repack "
                                      "refuses, and print how many moved and their max / mean relative error");
  add_output_option(logits, lg.out, "Output file, .npy (float32 [positions, vocab]) or .csv; repeatable", "--out", true);
  logits->callback([] { run_logits(lg); });

  static PerplexityOptions px;
  auto* ppl = model->add_subcommand("perplexity", "Perplexity of a text file (the file's tokenizer), in chunks from a fresh state");
  ppl->add_option("file", px.path, "GGUF file")->required();
  ppl->add_option("--text", px.text, "Text file")->required();
  ppl->add_option("--tokens", px.tokens, "Use only the first N tokens (0: all)")->capture_default_str()->check(CLI::NonNegativeNumber);
  ppl->add_option("-c,--ctx,--chunk", px.chunk, "Tokens per window, each from a fresh state")->capture_default_str()->check(CLI::Range(2, 1 << 20));
  ppl->add_option("--stride", px.stride, "0: windows do not overlap; S: a window every S tokens, each scoring only its last S")
      ->capture_default_str()->check(CLI::NonNegativeNumber);
  ppl->add_flag("--json", px.json, "Print the result (windows, estimate, error, --kl-base comparison) as JSON");
  ppl->add_option("--save-logits", px.save_logits, "Write the scored positions' logits (.npy, float32) and FILE.json beside them");
  ppl->add_option("--kl-base", px.kl_base, "Compare with logits a --save-logits run wrote: KL divergence, top-1 agreement, "
                                           "perplexity ratio with its error");
  ppl->add_option("--layout", px.layout, "Repack every ternary tensor into this layout: " + layout_names())->check(known_layouts());
  add_layout_map_options(ppl, px.layout_map, px.measure_weights);
  add_gdn_chunk_option(ppl, px.gdn_chunk);
  ppl->add_option("--kernel", px.kernel, "Kernel (strategy or strategy/isa, or a peer's own: bitnet-i2s, ggml-tq2_0, ggml-tq1_0); default: the best listed, a peer format's own");
  ppl->add_option("--threads", px.threads, "Threads")->capture_default_str()->check(CLI::PositiveNumber);
  ppl->add_option("--load", px.mode, "Load mode: mmap or memory")->capture_default_str();
  ppl->add_flag("--requantise-scales", px.requantise, "LOSSY, by name: round the file's scales to the layout's scale format (bf16, e4m3, e8m0) where the exact repack "
                                      "refuses, and print how many moved and their max / mean relative error");
  add_weight_options(ppl, px.weights);
  ppl->callback([] { run_perplexity(px); });

  static BenchOptions b;
  auto* bench = model->add_subcommand("bench", "Prefill (pp) and decode (tg) tok/s per layout and thread count, as llama-bench measures them");
  bench->add_option("file", b.path, "GGUF file")->required();
  bench->add_option("--layouts", b.layouts, "Comma-separated layouts")->capture_default_str()->check(known_layouts());
  bench->add_option("--layout-map", b.layout_maps,
                    cat(kLayoutMapHelp, "; each an arm beside the layouts, its rest in the first of --layouts; repeatable"));
  add_measure_weights_option(bench, b.measure_weights);
  add_gdn_chunk_option(bench, b.gdn_chunk);
  bench->add_option("-p,--n-prompt", b.prompt, "Prompt lengths of the pp tests, comma-separated (0: none)")
      ->delimiter(',')->capture_default_str()->check(CLI::NonNegativeNumber);
  bench->add_option("-n,--n-gen", b.gen, "Lengths of the tg tests, comma-separated (0: none)")
      ->delimiter(',')->capture_default_str()->check(CLI::NonNegativeNumber);
  bench->add_option("-t,--threads", b.threads, "Thread counts, comma-separated")->delimiter(',')->capture_default_str()
      ->check(CLI::PositiveNumber);
  bench->add_option("-r,--repetitions", b.repetitions, "Timed repetitions of every test")->capture_default_str()
      ->check(CLI::PositiveNumber);
  bench->add_option("--warmup", b.warmup, "Untimed runs of every test first")->capture_default_str()->check(CLI::NonNegativeNumber);
  bench->add_option("--format", b.format, "md, csv or json")->capture_default_str();
  add_output_option(bench, b.output, "Write the table to this file (default: standard output)");
  bench->add_option("--results", b.results, "Folder for the results folder (as `ternlab run` writes it)")->capture_default_str();
  // The options this command had before llama-bench's: still accepted, each saying what replaced it.
  static std::vector<int> old_prompt, old_decode;
  static int old_ppl = 0;
  bench->add_option("--prompt", old_prompt, "deprecated: -p")->group("")->each([](const std::string& v) {
    std::cerr << "ternlab: note: --prompt is deprecated here (it is text in generate); use -p/--n-prompt\n";
    b.prompt = {std::stoi(v)};
  });
  bench->add_option("--decode", old_decode, "deprecated: -n")->group("")->each([](const std::string& v) {
    std::cerr << "ternlab: note: --decode is deprecated; use -n/--n-gen\n";
    b.gen = {std::stoi(v)};
  });
  bench->add_option("--ppl-tokens", old_ppl, "deprecated")->group("")->each([](const std::string&) {
    std::cerr << "ternlab: note: --ppl-tokens is ignored: model bench measures speed; perplexity on a real text is "
                 "`ternlab model perplexity`\n";
  });
  bench->add_option("--load", b.mode, "Load mode: mmap or memory")->capture_default_str();
  bench->add_flag("--requantise-scales", b.requantise, "LOSSY, by name: round the file's scales to the layout's scale format (bf16, e4m3, e8m0) where the exact repack "
                                      "refuses, and print how many moved and their max / mean relative error");
  bench->add_option("--plan", b.plan, "Kernel choice: auto (the wisdom file's measured choice, else the estimate), estimate (the ISA "
                                      "ladder) or measure (time the candidates once, kept in the wisdom file)")->capture_default_str();
  bench->callback([] { run_bench(b); });
  add_verify_costs_command(model);
}

void add_tokenize_command(CLI::App& app) {
  static std::string path, text;
  static bool pieces = false;
  auto* t = app.add_subcommand("tokenize", "Tokenise text with a GGUF file's tokenizer");
  t->add_option("file", path, "GGUF file")->required();
  t->add_option("text", text, "Text")->required();
  t->add_flag("--pieces", pieces, "Also print the pre-tokenizer pieces");
  t->callback([] {
    const auto f = gguf::File::open(path, gguf::LoadMode::mmap);
    const auto tok = Tokenizer::from_gguf(f);
    if (pieces) {
      std::cout << "pieces:";
      for (const auto& p : tok.split(text)) std::cout << " [" << p << "]";
      std::cout << "\n";
    }
    const auto ids = tok.encode(text);
    std::cout << ids.size() << " tokens:";
    for (auto id : ids) std::cout << " " << id;
    std::cout << "\ndecoded: " << tok.decode(ids) << "\n";
  });
}

}  // namespace ternlab::cli
