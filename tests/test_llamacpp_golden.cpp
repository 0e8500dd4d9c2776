// llama.cpp as an independent golden (tests/fixtures/llamacpp, made by tools/golden/llamacpp_golden.py
// with upstream llama.cpp as llama-cpp-python 0.3.36 vendors it): ternlab's logits and greedy tokens
// against llama.cpp's on the same models, ternlab's tokenizer against llama.cpp's, and a file
// llama.cpp's own llama-quantize wrote.
//
// Tolerances (measured when the fixtures were made, Zen 4; docs/llamacpp.md "The golden"):
// - kjv (the trained model): llama.cpp runs the fold undone into F32 weights with f32 activations;
//   ternlab rounds every matmul input to q8_K. Measured per position: relative RMS <= 0.013, cosine
//   >= 0.99995, max |d logit| 0.086. Bound: relative RMS 0.03, cosine 0.9995.
// - plain_tq2_0 / plain_tq1_0 (random unfolded weights): both engines round to q8_K, but a random
//   4-layer model amplifies any last-bit difference that moves a q8_K value: ternlab vs llama.cpp
//   measured relative RMS <= 0.056 (median 0.033), and llama.cpp's own TQ2_0 run against its own F32
//   run of the same weights 0.065 (median 0.038). Bound: relative RMS 0.12, cosine 0.99.
// - folded_tq2_0: llama.cpp ignores prism.hadamard, so its logits belong to another function
//   (measured relative RMS ~1.3, cosine ~0): the bound must reject them, or it could not fail.
#include <toml++/toml.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <unistd.h>

#include "layouts/matrix.hpp"
#include "layouts/registry.hpp"
#include "model/experiments.hpp"
#include "model/export.hpp"
#include "model/gguf.hpp"
#include "model/model.hpp"
#include "model/synth.hpp"
#include "model/tokenizer.hpp"
#include "model/weight_codes.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::model;

namespace {

const std::filesystem::path kDir = TERNLAB_LLAMACPP_DIR;
const std::filesystem::path kModels = TERNLAB_MODELS_DIR;

struct Bound {
  double rel_rms, cosine;
};
constexpr Bound kTrained{0.03, 0.9995};
constexpr Bound kRandomQ8{0.12, 0.99};

struct Case {
  std::string name;
  std::vector<std::int32_t> prompt, greedy;
  std::vector<double> margins;
  int positions = 0, vocab = 0;
  std::vector<float> logits;  // llama.cpp's, positions x vocab
  const toml::table* t = nullptr;
};

const toml::table& fixtures() {
  static const toml::table t = toml::parse_file((kDir / "llamacpp_golden.toml").string());
  return t;
}

template <class T>
std::vector<T> array_of(const toml::table& t, const char* key) {
  const toml::array* a = t[key].as_array();
  REQUIRE_MESSAGE(a, key);
  std::vector<T> out;
  for (const auto& v : *a) out.push_back(T(*v.value<double>()));
  return out;
}

Case load_case(const std::string& name) {
  const toml::table* t = fixtures()[name].as_table();
  REQUIRE_MESSAGE(t, name);
  Case c;
  c.name = name;
  c.t = t;
  c.prompt = array_of<std::int32_t>(*t, "prompt");
  c.greedy = array_of<std::int32_t>(*t, "greedy");
  c.margins = array_of<double>(*t, "greedy_margins");
  c.positions = int(*(*t)["positions"].value<std::int64_t>());
  c.vocab = int(*(*t)["vocab"].value<std::int64_t>());
  REQUIRE(c.positions == int(c.prompt.size() + c.greedy.size()));
  std::ifstream in(kDir / *(*t)["logits"].value<std::string>(), std::ios::binary);
  c.logits.resize(std::size_t(c.positions) * std::size_t(c.vocab));
  in.read(reinterpret_cast<char*>(c.logits.data()), std::streamsize(c.logits.size() * 4));
  REQUIRE(in.gcount() == std::streamsize(c.logits.size() * 4));
  return c;
}

std::vector<std::int32_t> sequence(const Case& c) {
  std::vector<std::int32_t> s = c.prompt;
  s.insert(s.end(), c.greedy.begin(), c.greedy.end());
  return s;
}

// Writes the synthetic model a case names (its `synth` arguments) and checks it is the file
// llama.cpp ran, byte for byte (FNV-1a 64).
std::string synthesize(const Case& c, const std::filesystem::path& path) {
  const toml::array* a = (*c.t)["synth"].as_array();
  REQUIRE(a);
  std::vector<std::string> args;
  for (const auto& v : *a) args.push_back(*v.value<std::string>());
  SynthOptions o;
  std::string preset;
  for (std::size_t i = 0; i < args.size(); ++i) {
    if (args[i] == "--preset") preset = args[++i];
    else if (args[i] == "--type") o.ternary_type = int(export_type(args[++i]));
    else if (args[i] == "--scale-group") o.scale_group = std::stoi(args[++i]);
    else if (args[i] == "--seed") o.seed = std::stoull(args[++i]);
    else if (args[i] == "--unfolded") o.unfolded = true;
  }
  write_synthetic(find_preset(preset), path.string(), o);
  char hex[17];
  std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(file_fnv1a64(path)));
  REQUIRE_MESSAGE(std::string(hex) == *(*c.t)["fnv1a64"].value<std::string>(),
                  "ternlab's synth no longer writes the file llama.cpp ran: regenerate with tools/golden/llamacpp_golden.py");
  return path.string();
}

struct Deviation {
  double worst_rel_rms = 0, worst_cosine = 1, max_abs = 0;
};

Deviation compare(const std::vector<float>& got, const Case& c) {
  Deviation d;
  for (int p = 0; p < c.positions; ++p) {
    double dot = 0, aa = 0, bb = 0, diff = 0;
    for (int v = 0; v < c.vocab; ++v) {
      const double a = got[std::size_t(p) * std::size_t(c.vocab) + std::size_t(v)];
      const double b = c.logits[std::size_t(p) * std::size_t(c.vocab) + std::size_t(v)];
      dot += a * b, aa += a * a, bb += b * b, diff += (a - b) * (a - b);
      d.max_abs = std::max(d.max_abs, std::fabs(a - b));
    }
    d.worst_rel_rms = std::max(d.worst_rel_rms, std::sqrt(diff / bb));
    d.worst_cosine = std::min(d.worst_cosine, dot / std::sqrt(aa * bb));
  }
  return d;
}

bool within(const Deviation& d, Bound b) { return d.worst_rel_rms <= b.rel_rms && d.worst_cosine >= b.cosine; }

std::vector<float> logits(const std::string& path, const std::string& layout, const Case& c) {
  LoadOptions lo;
  lo.layout = layout;
  auto m = Model::load(path, lo);
  const auto seq = sequence(c);
  return all_logits(*m, seq);
}

// Greedy steps compared: up to the first whose llama.cpp top-2 margin is under `margin` (twice the
// largest logit difference the bound admits there), since every later step depends on that one.
int compare_greedy(const std::string& path, const Case& c, double margin) {
  auto m = Model::load(path, LoadOptions{});
  const auto got = greedy(*m, c.prompt, int(c.greedy.size()));
  int n = 0;
  while (n < int(c.greedy.size()) && c.margins[std::size_t(n)] > margin) ++n;
  for (int i = 0; i < n; ++i) CHECK_MESSAGE(got[std::size_t(i)] == c.greedy[std::size_t(i)], c.name, " step ", i);
  return n;
}

}  // namespace

TEST_SUITE("llamacpp-golden") {
  TEST_CASE("the trained model: ternlab's logits, greedy tokens and tokenizer agree with llama.cpp's") {
    const std::string model = (kModels / "bonsai-kjv-py" / "bonsai-kjv-py.gguf").string();
    const auto file = gguf::File::open(model, gguf::LoadMode::mmap);
    const Tokenizer tok = Tokenizer::from_gguf(file);
    int greedy_steps = 0;
    for (const char* name : {"kjv_prose", "kjv_code", "kjv_short"}) {
      const Case c = load_case(name);
      CAPTURE(c.name);
      CHECK(tok.encode(*(*c.t)["text"].value<std::string>()) == c.prompt);
      // The file's own layout, and layouts whose kernels a user would run it with (its 128-weight
      // scales differ within 256, so TQ2_0 would need a lossy load).
      for (const std::string layout : {"", "t2r", "t2p"}) {
        CAPTURE(layout);
        const Deviation d = compare(logits(model, layout, c), c);
        MESSAGE(c.name, " [", layout, "]: relative RMS ", d.worst_rel_rms, ", cosine ", d.worst_cosine, ", max |d| ", d.max_abs);
        CHECK(within(d, kTrained));
      }
      greedy_steps += compare_greedy(model, c, 0.2);
    }
    // The greedy check must compare something: margins over 0.2 leave 20 of 36 steps here (12, 1 and 7).
    CHECK(greedy_steps >= 10);
  }

  TEST_CASE("unfolded TQ2_0 and TQ1_0 models: llama.cpp's own ternary kernels agree with ternlab's") {
    const test::ScratchDir dir("ternlab-llamacpp-golden");
    std::vector<float> tq2;
    for (const char* name : {"plain_tq2_0", "plain_tq1_0"}) {
      const Case c = load_case(name);
      CAPTURE(c.name);
      const std::string path = synthesize(c, dir.dir / (c.name + ".gguf"));
      for (const std::string layout : {"", "pq2_0", "t2r"}) {
        CAPTURE(layout);
        const Deviation d = compare(logits(path, layout, c), c);
        MESSAGE(c.name, " [", layout, "]: relative RMS ", d.worst_rel_rms, ", cosine ", d.worst_cosine, ", max |d| ", d.max_abs);
        CHECK(within(d, kRandomQ8));
      }
      if (tq2.empty()) tq2 = c.logits;
      else CHECK(c.logits == tq2);  // the same weights in both ggml types: llama.cpp gives the same logits
    }
  }

  TEST_CASE("a folded model in TQ2_0: llama.cpp ignores the fold, and the bound sees it") {
    const test::ScratchDir dir("ternlab-llamacpp-golden");
    const Case c = load_case("folded_tq2_0");
    const std::string path = synthesize(c, dir.dir / "folded.gguf");
    const Deviation d = compare(logits(path, "", c), c);
    MESSAGE("ternlab (fold applied) vs llama.cpp (fold ignored): relative RMS ", d.worst_rel_rms, ", cosine ", d.worst_cosine);
    CHECK(!within(d, kRandomQ8));
    CHECK(d.worst_rel_rms > 5 * kRandomQ8.rel_rms);
  }

  TEST_CASE("a TQ2_0 file written by llama.cpp's llama-quantize loads with the weights it was made from") {
    const test::ScratchDir dir("ternlab-llamacpp-golden");
    const toml::table& q = *fixtures()["quantized"].as_table();
    const std::string written = (kDir / *q["file"].value<std::string>()).string();
    const Case c = load_case("plain_tq2_0");
    const std::string source = synthesize(c, dir.dir / "plain.gguf");
    const auto f = gguf::File::open(written, gguf::LoadMode::memory);
    const auto g = gguf::File::open(source, gguf::LoadMode::memory);
    const ModelConfig cfg = ModelConfig::from_gguf(f);
    CHECK(cfg.rotation.identity);
    CHECK(cfg.ternary_type == 35);
    int ternary = 0;
    for (const auto& t : g.tensors) {
      if (!gguf::is_ternary(t.tensor_type())) continue;
      CAPTURE(t.name);
      const gguf::TensorInfo& u = f.tensor(t.name);
      REQUIRE(u.type == 35);
      const auto a = g.data(t), b = f.data(u);
      CHECK(std::equal(a.begin(), a.end(), b.begin(), b.end()));  // llama-quantize's TQ2_0 bytes are ternlab's
      ++ternary;
    }
    int expected = 0;
    for (const TensorSpec& s : tensor_specs(cfg)) expected += s.kind == Kind::ternary;
    CHECK(ternary == expected);
    CHECK(logits(written, "pq2_0", c) == logits(source, "pq2_0", c));

    // The same file with one tensor in a type ternlab does not run is refused naming both.
    std::ifstream in(written, std::ios::binary);
    std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), {});
    const std::string name = "blk.0.ffn_up.weight";
    const auto at = std::search(bytes.begin(), bytes.end(), name.begin(), name.end());
    REQUIRE(at != bytes.end());
    // Tensor info: name, n_dims (u32), ne (u64 each), type (u32).
    const std::size_t type_at = std::size_t(at - bytes.begin()) + name.size() + 4 + 2 * 8;
    const std::uint32_t q6_k = 14;
    std::memcpy(bytes.data() + type_at, &q6_k, 4);
    test::check_error([&] { gguf::File::parse(bytes, "patched.gguf"); }, "blk.0.ffn_up.weight", "Q6_K",
                      "unsupported ggml tensor type 14");
  }
}
