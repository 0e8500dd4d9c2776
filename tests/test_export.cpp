// `model export`: ternary tensors re-encoded for llama.cpp (TQ2_0, TQ1_0) load back to the same
// model; scales a target cannot hold are refused by name or merged with a report; the F32 unfold
// computes the folded model's function without a rotation; unfolded (upstream-convention) files load.
#include <cmath>
#include <filesystem>
#include <random>
#include <unistd.h>

#include "common/fp16.hpp"
#include "layouts/registry.hpp"
#include "model/experiments.hpp"
#include "model/export.hpp"
#include "model/model.hpp"
#include "model/synth.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::model;

namespace {

using ExportDir = test::ScratchDir;

std::string synth(const ExportDir& s, const std::string& name, int type, int scale_group, bool unfolded = false) {
  SynthOptions o;
  o.ternary_type = type;
  o.scale_group = scale_group;
  o.unfolded = unfolded;
  const std::string p = s(name);
  write_synthetic(find_preset("tiny"), p, o);
  return p;
}

const std::vector<std::int32_t> kPrompt = {72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33};

std::vector<float> logits_of(const std::string& path, const std::string& layout) {
  LoadOptions lo;
  lo.layout = layout;
  auto m = Model::load(path, lo);
  return all_logits(*m, kPrompt);
}

ExportReport run(const std::string& in, const std::string& out, const std::string& type, bool unfold = false,
                 bool lossy = false) {
  ExportOptions o;
  o.type = type;
  o.unfold = unfold;
  o.lossy = lossy;
  return export_model(in, out, o);
}

// y = W x in double from a GGUF tensor (ternary via the codec, or F32), rows x cols.
std::vector<double> apply(const gguf::File& f, const std::string& name, const std::vector<double>& x) {
  const gguf::TensorInfo& t = f.tensor(name);
  const auto rows = std::int64_t(t.ne[1]), cols = std::int64_t(t.ne[0]);
  REQUIRE(std::int64_t(x.size()) == cols);
  std::vector<double> y(static_cast<std::size_t>(rows), 0.0);
  const auto bytes = f.data(t);
  if (gguf::is_ternary(t.tensor_type())) {
    const TernaryMatrix m = unpack(adopt_bytes(find_layout(gguf::ternary_layout_name(t.type, name)), rows, cols,
                                               bytes.data(), bytes.size(), name));
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t k = 0; k < cols; ++k)
        y[std::size_t(r)] += double(m.weight(r, k)) * double(fp16_to_float(m.scale_bits(r, k / kBlockK))) * x[std::size_t(k)];
  } else {
    REQUIRE(t.tensor_type() == gguf::TensorType::f32);
    for (std::int64_t r = 0; r < rows; ++r)
      for (std::int64_t k = 0; k < cols; ++k) {
        float w;
        std::memcpy(&w, bytes.data() + 4 * std::size_t(r * cols + k), 4);
        y[std::size_t(r)] += double(w) * x[std::size_t(k)];
      }
  }
  return y;
}

}  // namespace

TEST_SUITE("export") {
  TEST_CASE("TQ2_0 and TQ1_0 exports of a model with one scale per 256 weights are the same model") {
    const ExportDir s("ternlab-export");
    const std::string src = synth(s, "src.gguf", 142, 256);
    const std::vector<float> want = logits_of(src, "pq2_0");
    for (const auto& [type, id, ftype] : {std::tuple{"tq2_0", 35u, 37u}, std::tuple{"tq1_0", 34u, 36u}}) {
      CAPTURE(type);
      const std::string out = s(cat(type, ".gguf"));
      const ExportReport r = run(src, out, type);
      CHECK(r.exact());
      CHECK(r.fold_kept);
      CHECK(r.type == id);
      const auto f = gguf::File::open(out, gguf::LoadMode::memory);
      const auto g = gguf::File::open(src, gguf::LoadMode::memory);
      CHECK(f.tensor("blk.0.ffn_down.weight").type == id);
      CHECK(f.tensor("token_embd.weight").type == id);
      CHECK(f.tensor("blk.0.ssm_alpha.weight").type == g.tensor("blk.0.ssm_alpha.weight").type);
      CHECK(f.get_uint("general.file_type") == ftype);
      // Every key but the file type is the source's: the tokenizer and the fold contract travel along.
      CHECK(f.key_order == g.key_order);
      for (const auto& k : g.key_order)
        if (k != "general.file_type") CHECK_MESSAGE(f.at(k) == g.at(k), k);
      // Loaded into PQ2_0 the weights are the source's bit for bit, so the logits are too.
      CHECK(logits_of(out, "pq2_0") == want);
      // And through the target's own layout (its own kernel): the same greedy continuation.
      LoadOptions lo;
      auto a = Model::load(src, lo);
      auto b = Model::load(out, lo);
      CHECK(b->layout().name == std::string_view(type));
      CHECK(greedy(*a, kPrompt, 6) == greedy(*b, kPrompt, 6));
      // Back to PQ2_0: byte-identical ternary tensors.
      const std::string back = s(cat(type, "-back.gguf"));
      CHECK(run(out, back, "pq2_0").exact());
      const auto h = gguf::File::open(back, gguf::LoadMode::memory);
      for (const auto& t : g.tensors) {
        CAPTURE(t.name);
        const auto x = g.data(t), y = h.data(h.tensor(t.name));
        CHECK(std::equal(x.begin(), x.end(), y.begin(), y.end()));
      }
    }
  }

  TEST_CASE("scales a target cannot hold are refused naming tensor, row and block, and no file is left") {
    const ExportDir s("ternlab-export");
    const std::string src = synth(s, "src.gguf", 142, 128);
    const std::string out = s("out.gguf");
    test::check_error([&] { run(src, out, "tq2_0"); }, "token_embd.weight", "row 0", "blocks 0 and 1");
    CHECK(!std::filesystem::exists(out));
    CHECK(std::distance(std::filesystem::directory_iterator(s.dir), std::filesystem::directory_iterator{}) == 1);
  }

  TEST_CASE("a lossy export merges scale groups, says what moved, and the divergence is measured") {
    const ExportDir s("ternlab-export");
    const std::string src = synth(s, "src.gguf", 142, 128);
    const std::string out = s("lossy.gguf");
    const ExportReport r = run(src, out, "tq2_0", false, true);
    CHECK(!r.exact());
    CHECK(r.scales.changed > 0);
    CHECK(r.scales.weights > 0);
    // Synth's scales lie within 0.75-1.25 of a base, so |w s / s'| > 0.5: no code moves, every
    // merged weight's value does.
    CHECK(r.scales.weights_changed == 0);
    CHECK(r.scales.max_abs_weight_error > 0);
    CHECK(!r.scales.worst.empty());
    LoadOptions lo;
    auto a = Model::load(src, lo);
    auto b = Model::load(out, lo);
    std::vector<std::int32_t> text;
    for (int i = 0; i < 40; ++i) text.push_back(std::int32_t((i * 37 + 11) % a->config().n_vocab));
    const LogitDivergence d = logit_divergence(*a, *b, text, 20);
    CHECK(d.positions == 38);
    CHECK(d.kl_mean > 0);
    CHECK(d.max_abs_logit > 0);
    CHECK(std::isfinite(d.other_ppl.value()));
    // Loading the same file into tq2_0 with --requantise-scales takes the same merge and says so
    // (a merge once counted no scale as moved, only the format's rounding).
    LoadOptions lossy_load;
    lossy_load.layout = "tq2_0";
    lossy_load.requantise_scales = true;
    auto l = Model::load(src, lossy_load);
    // (The load keeps the embedding table as stored, the export merges it too: fewer scales moved.)
    CHECK(l->scale_requantisation().changed > 0);
    CHECK(l->scale_requantisation().changed < r.scales.changed);
    CHECK(l->scale_requantisation().weights == r.scales.weights - std::int64_t(a->config().n_vocab) * a->config().n_embd);
    // The same measure between a model and its exact export is zero: the KL sees only the loss.
    const std::string exact_src = synth(s, "src256.gguf", 142, 256);
    const std::string exact_out = s("exact.gguf");
    run(exact_src, exact_out, "tq2_0");
    LoadOptions pq;
    pq.layout = "pq2_0";
    auto c = Model::load(exact_src, pq);
    auto e = Model::load(exact_out, pq);
    const LogitDivergence z = logit_divergence(*c, *e, text, 20);
    CHECK(z.kl_max == 0);
    CHECK(z.top1_agreement == 1);
  }

  TEST_CASE("the F32 unfold computes the folded model's function with no rotation") {
    const ExportDir s("ternlab-export");
    const std::string src = synth(s, "src.gguf", 142, 128);
    const std::string out = s("unfolded.gguf");
    const ExportReport r = run(src, out, "f32", true);
    // tiny's Hadamard block is 256: 1/16 is exact, and every sum of a block's products fits float32.
    CHECK(r.exact());
    CHECK(!r.fold_kept);
    CHECK(r.unfolded_weights > 0);
    const auto f = gguf::File::open(out, gguf::LoadMode::memory);
    const auto g = gguf::File::open(src, gguf::LoadMode::memory);
    for (const auto& k : f.key_order) CHECK_MESSAGE(!k.starts_with("prism."), k);
    CHECK(f.get_uint("general.file_type") == 0);
    const ModelConfig c = ModelConfig::from_gguf(g);
    std::mt19937 rng(7);
    std::normal_distribution<double> normal;
    // Folded weights: W x (unfolded) = W' R x (stored, rotated input); ssm_out also permutes.
    for (const std::string name : {"blk.0.attn_qkv.weight", "blk.0.ssm_out.weight", "blk.3.attn_output.weight",
                                   "blk.1.ffn_down.weight", "output.weight"}) {
      CAPTURE(name);
      const auto cols = std::int64_t(g.tensor(name).ne[0]);
      std::vector<double> x(static_cast<std::size_t>(cols));
      for (auto& v : x) v = normal(rng);
      std::vector<float> xr(x.begin(), x.end());
      if (name.ends_with("ssm_out.weight")) {
        std::vector<float> grouped(xr.size());
        tiled_to_grouped(xr.data(), grouped.data(), c.ssm_state, c.ssm_k_heads, c.ssm_v_heads / c.ssm_k_heads);
        xr = grouped;
      }
      c.rotation.forward(xr.data(), cols);
      const auto want = apply(g, name, std::vector<double>(xr.begin(), xr.end()));
      const auto got = apply(f, name, x);
      double scale = 0, diff = 0;
      for (std::size_t i = 0; i < want.size(); ++i) {
        scale = std::max(scale, std::fabs(want[i]));
        diff = std::max(diff, std::fabs(want[i] - got[i]));
      }
      // The rotated input is float32 (relative error ~6e-8 a value, ~1e-6 after a row's sum).
      CHECK(diff < 1e-5 * scale);
    }
    // The embedding: an unfolded row is what ternlab's lookup computes (R^T z).
    auto m = Model::load(src, LoadOptions{});
    const gguf::TensorInfo& e = f.tensor("token_embd.weight");
    const auto d = std::int64_t(e.ne[0]);
    for (int token : {0, 7, 200}) {
      const std::vector<float> row = m->embed(token);
      for (std::int64_t i = 0; i < d; ++i) {
        float w;
        std::memcpy(&w, f.data(e).data() + 4 * std::size_t(token * d + i), 4);
        CHECK(w == doctest::Approx(row[std::size_t(i)]).epsilon(1e-6));
      }
    }
  }

  TEST_CASE("unfolded models: no rotation, ssm_out tiled; the fold cannot be undone into a ternary type") {
    const ExportDir s("ternlab-export");
    const std::string plain = synth(s, "plain.gguf", 35, 256, true);
    const auto f = gguf::File::open(plain, gguf::LoadMode::memory);
    for (const auto& k : f.key_order) CHECK_MESSAGE(!k.starts_with("prism."), k);
    const ModelConfig c = ModelConfig::from_gguf(f);
    CHECK(c.rotation.identity);
    CHECK(!c.gdn_v_grouped);
    CHECK(c.ternary_type == 35);
    // Its logits do not depend on the (absent) signs: the same file's weights as PQ2_0 give the same.
    const std::string pq = s("plain-pq.gguf");
    CHECK(run(plain, pq, "pq2_0", true).exact());  // --unfold on an unfolded file: nothing to undo
    CHECK(logits_of(plain, "pq2_0") == logits_of(pq, "pq2_0"));
    // An unfolded model's embedding row is the stored row itself.
    auto m = Model::load(plain, LoadOptions{});
    const std::vector<float> row = m->embed(3);
    const auto t = unpack(adopt_bytes(find_layout("tq2_0"), std::int64_t(f.tensor("token_embd.weight").ne[1]),
                                      std::int64_t(f.tensor("token_embd.weight").ne[0]),
                                      f.data(f.tensor("token_embd.weight")).data(),
                                      f.data(f.tensor("token_embd.weight")).size()));
    for (std::int64_t i = 0; i < t.cols; ++i)
      CHECK(row[std::size_t(i)] == float(t.weight(3, i)) * fp16_to_float(t.scale_bits(3, i / kBlockK)));

    const std::string folded = synth(s, "folded.gguf", 142, 256);
    test::check_error([&] { run(folded, s("x.gguf"), "tq2_0", true); }, "real-valued", "TQ2_0", "--type f32 --unfold");
    test::check_error([&] { run(folded, s("x.gguf"), "f32"); }, "add --unfold");
    test::check_error([&] { run(folded, s("x.gguf"), "q4_0"); }, "unknown export type 'q4_0'", "tq2_0");
    CHECK(!std::filesystem::exists(s("x.gguf")));
  }
}
