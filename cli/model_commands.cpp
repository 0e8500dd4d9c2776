// `ternlab model synth|info|generate|bench` and `ternlab tokenize`: write synthetic Bonsai-format
// files, inspect any GGUF, run the forward pass in any layout, and show tokenisation.
#include <algorithm>
#include <iomanip>
#include <iostream>
#include <memory>
#include <sstream>

#include "cli/commands.hpp"
#include "common/table.hpp"
#include "common/error.hpp"
#include "common/memory.hpp"
#include "common/strings.hpp"
#include "layouts/stock.hpp"
#include "experiments/progress.hpp"
#include "model/experiments.hpp"
#include "model/model.hpp"
#include "model/sampler.hpp"
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
            << ", Hadamard block " << c.rotation.block << ", ternary type "
            << gguf::traits_of(std::uint32_t(c.ternary_type), "").name << " (all tensors validated)\n";
}

struct GenerateOptions {
  std::string path, prompt = "Hello", layout, kernel, mode = "mmap";
  std::string plan = "estimate";
  int n = 16, threads = 1;
  float temperature = 0, top_p = 1;
  std::uint64_t seed = 1;
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

void run_generate(const GenerateOptions& o) {
  LoadOptions lo;
  lo.layout = o.layout;
  lo.kernel = o.kernel;
  lo.plan = parse_plan_mode(o.plan);
  lo.threads = o.threads;
  lo.mode = gguf::parse_mode(o.mode);
  show_load_progress(lo, o.layout.empty() ? "model" : o.layout);
  auto m = Model::load(o.path, lo);
  const auto tok = Tokenizer::from_gguf(m->file());
  const auto prompt = tok.encode(o.prompt);
  if (prompt.empty()) fail("the prompt encodes to no tokens");
  Sampler sampler({o.temperature, o.top_p, o.seed});
  Session s = m->new_session();
  auto logits = m->forward(s, prompt);
  std::vector<std::int32_t> out;
  for (int i = 0; i < o.n; ++i) {
    const auto next = sampler.sample(logits);
    out.push_back(next);
    if (next == tok.eos()) break;
    if (i + 1 < o.n) logits = m->forward(s, std::span(&next, 1));
  }
  std::cout << "layout " << m->layout().name << ", kernel " << m->kernel().name() << "\n";
  if (lo.plan == PlanMode::measure)
    for (const std::string& n : m->kernel_notes()) std::cout << "  " << n << "\n";
  std::cout << "prompt tokens:";
  for (auto t : prompt) std::cout << " " << t;
  std::cout << "\noutput tokens:";
  for (auto t : out) std::cout << " " << t;
  std::cout << "\ntext: " << o.prompt << tok.decode(out) << "\n";
}

struct BenchOptions {
  std::string path, layouts = "pq2_0,ptq1_0,t2x4,t2p,t2r", mode = "mmap", plan = "estimate";
  int prompt = 64, decode = 32, threads = 1, ppl_tokens = 128;
};

void run_bench(const BenchOptions& o) {
  Table table({{"layout"}, {"kernel"}, {"pp tok/s", Align::right}, {"tg tok/s", Align::right}, {"MB/token", Align::right},
               {"ppl", Align::right}, {"greedy tokens"}});
  std::vector<std::string> skipped;
  std::stringstream names(o.layouts);
  std::string name;
  while (std::getline(names, name, ',')) {
    LoadOptions lo;
    lo.layout = name;
    lo.plan = parse_plan_mode(o.plan);
    lo.threads = o.threads;
    lo.mode = gguf::parse_mode(o.mode);
    show_load_progress(lo, name);
    std::unique_ptr<Model> m;
    try {
      m = Model::load(o.path, lo);
    } catch (const Error& e) {
      skipped.push_back(cat(name, ": ", e.what()));
      continue;
    }
    const auto prompt = random_tokens(o.prompt, m->config().n_vocab, 7);
    const Speed s = measure_speed(*m, prompt, o.decode);
    const auto text = random_tokens(o.ppl_tokens, m->config().n_vocab, 11);
    const Perplexity p = perplexity(*m, text, 64);
    const auto g = greedy(*m, std::span(prompt).first(8), 8);
    std::vector<std::string> tokens;
    for (auto t : g) tokens.push_back(cat(t));
    table.add({name, m->kernel().name(), fixed_text(s.prefill_tok_s(), 1), fixed_text(s.decode_tok_s(), 1),
               fixed_text(double(m->ternary_bytes_per_token()) / 1e6, 2), fixed_text(p.value(), 4), join(tokens, " ")});
  }
  std::cout << table.text();
  for (const std::string& s : skipped) std::cout << "skipped " << s << "\n";
  std::cout << "peak resident memory: " << std::fixed << std::setprecision(2) << double(peak_rss_bytes()) / double(1 << 30)
            << " GiB (all layouts above, loaded one after another)\n";
}

}  // namespace

void add_model_commands(CLI::App& app) {
  auto* model = app.add_subcommand("model", "Bonsai 2 (qwen35) GGUF models: synthesize, inspect, run");
  model->require_subcommand(1);

  static std::string preset = "tiny", out, type = "pq2_0";
  static std::uint64_t seed = 2026;
  auto* synth = model->add_subcommand("synth", "Write a synthetic model in the exact Bonsai GGUF format");
  std::vector<std::string> preset_names;
  for (const auto& p : synth_presets()) preset_names.push_back(p.name);
  synth->add_option("--preset", preset, "Preset: " + join(preset_names))->capture_default_str();
  synth->add_option("-o,--output", out, "Output .gguf path")->required();
  synth->add_option("--type", type, "Ternary tensor type: pq2_0 or ptq1_0")->capture_default_str();
  synth->add_option("--seed", seed, "Random seed")->capture_default_str();
  synth->callback([] {
    if (type != "pq2_0" && type != "ptq1_0") fail("--type must be pq2_0 or ptq1_0, got '", type, "'");
    SynthOptions so{seed, type == "pq2_0" ? 142 : 143, {}};
    std::unique_ptr<experiments::Progress> bar;
    so.progress = [&](std::size_t done, std::size_t total, const std::string& name) {
      if (!bar) bar = std::make_unique<experiments::Progress>(std::int64_t(total));
      bar->step(cat("writing ", name, " (", done, "/", total, ")"));
    };
    const auto bytes = write_synthetic(find_preset(preset), out, so);
    if (bar) bar->finish();
    std::cout << "wrote " << out << ": preset " << preset << ", " << type << ", " << bytes << " bytes\n";
  });

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
  gen->add_option("--layout", g.layout, "Repack every ternary tensor into this layout: " + layout_names());
  gen->add_option("--kernel", g.kernel, "Kernel (strategy or strategy/isa); default: the best listed");
  gen->add_option("--threads", g.threads, "Threads")->capture_default_str()->check(CLI::PositiveNumber);
  gen->add_option("--temperature", g.temperature, "0 = greedy")->capture_default_str();
  gen->add_option("--top-p", g.top_p, "Nucleus mass")->capture_default_str();
  gen->add_option("--seed", g.seed, "Sampling seed")->capture_default_str();
  gen->add_option("--load", g.mode, "Load mode: mmap or memory")->capture_default_str();
  gen->add_option("--plan", g.plan, "Kernel choice without --kernel: estimate (the ISA ladder) or measure (time the "
                                    "candidates on the output head once, kept in the wisdom file)")->capture_default_str();
  gen->callback([] { run_generate(g); });

  static BenchOptions b;
  auto* bench = model->add_subcommand("bench", "Prefill/decode tok/s, perplexity and greedy tokens per layout");
  bench->add_option("file", b.path, "GGUF file")->required();
  bench->add_option("--layouts", b.layouts, "Comma-separated layouts")->capture_default_str();
  bench->add_option("--prompt", b.prompt, "Prompt tokens (pp)")->capture_default_str()->check(CLI::PositiveNumber);
  bench->add_option("--decode", b.decode, "Decoded tokens (tg)")->capture_default_str()->check(CLI::PositiveNumber);
  bench->add_option("--ppl-tokens", b.ppl_tokens, "Tokens for perplexity")->capture_default_str();
  bench->add_option("--threads", b.threads, "Threads")->capture_default_str()->check(CLI::PositiveNumber);
  bench->add_option("--load", b.mode, "Load mode: mmap or memory")->capture_default_str();
  bench->add_option("--plan", b.plan, "Kernel choice: estimate (the ISA ladder) or measure (time the candidates once, "
                                      "kept in the wisdom file)")->capture_default_str();
  bench->callback([] { run_bench(b); });
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
