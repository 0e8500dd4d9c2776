// Mixed layouts per tensor (model/layout_map.hpp): the matching, the refusals, a mixture's logits
// bit-equal to a single layout's, the measured choice following the wisdom file's rates, and the
// experiment key arm.layout_map through the decode and perplexity kinds.
#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <set>
#include <sstream>

#include "common/strings.hpp"
#include "experiments/config.hpp"
#include "experiments/kinds.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"
#include "kernels/dispatch.hpp"
#include "kernels/planner.hpp"
#include "model/experiments.hpp"
#include "model/layout_map.hpp"
#include "model/model.hpp"
#include "model/synth.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::model;
using test::check_error;
namespace fs = std::filesystem;

namespace {

constexpr char kScratchName[] = "ternlab-layout-map";
const fs::path& scratch() { return test::scratch_folder<kScratchName>(); }

const std::string& tiny() { return test::synthetic_model(scratch(), "tiny", {.seed = 2026}); }

const std::vector<std::int32_t> kPrompt = {72, 101, 108, 108, 111};

struct Outputs {
  std::vector<std::int32_t> tokens;
  std::vector<std::vector<float>> logits;
  double ppl = 0;
};

Outputs run(Model& m) {
  Outputs o;
  o.tokens = greedy(m, kPrompt, 3, &o.logits);
  o.ppl = perplexity(m, random_tokens(24, 512, 5), 8).value();
  return o;
}

// Exact: the same tokens, the same logit bits, the same perplexity.
void check_same(const Outputs& a, const Outputs& b) {
  CHECK(a.tokens == b.tokens);
  REQUIRE(a.logits.size() == b.logits.size());
  for (std::size_t i = 0; i < a.logits.size(); ++i) CHECK(a.logits[i] == b.logits[i]);
  CHECK(a.ppl == b.ppl);
}

// A layout that has a kernel here other than the reference (layouts x86 has and NEON lacks, or the reverse).
bool simd_here(const char* layout) {
  for (const KernelVariant& k : kernels_under_ceiling(find_layout(layout)))
    if (k.strategy != Strategy::reference) return true;
  return false;
}

std::string temp_wisdom(const char* name) { return (scratch() / cat(name, "-", getpid(), ".toml")).string(); }

experiments::RunReport run_text(const std::string& text) {
  const experiments::Plan plan = experiments::load_plan_text(text, "mixed.toml", {});
  experiments::Pools pools;
  experiments::Progress progress(0, false);
  std::ostringstream log;
  experiments::RunContext ctx{pools, progress, log};
  const experiments::RunSpec& r = plan.runs.front();
  return experiments::find_kind(r.kind, r.at("kind")).run(r, ctx);
}

std::string head(const std::string& kind) {
  return cat("kind = \"", kind, "\"\npreset = \"tiny\"\nseed = 7\noutput = \"", (scratch() / "results").string(),
             "\"\nrounds = 1\nwarmup = 0\nceiling_mib = 1\nsample_ms = 0.01\nverify_tokens = 3\n");
}

}  // namespace

TEST_SUITE("layout-map") {
  TEST_CASE("patterns: globs over short names, or over whole names when they hold a '.'; first match wins") {
    CHECK(glob_match("ffn_*", "ffn_down"));
    CHECK(glob_match("*", ""));
    CHECK(glob_match("a*b*c", "axxbyyc"));
    CHECK_FALSE(glob_match("a*b*c", "axxbyy"));
    CHECK(glob_match("attn_?", "attn_q"));
    CHECK_FALSE(glob_match("attn_?", "attn_qkv"));
    CHECK(short_tensor_name("blk.12.ffn_down.weight") == "ffn_down");
    CHECK(short_tensor_name("output.weight") == "output");
    CHECK(pattern_matches("ffn_*", "blk.3.ffn_up.weight"));
    CHECK_FALSE(pattern_matches("ffn", "blk.3.ffn_up.weight"));  // the whole short name
    CHECK(pattern_matches("blk.1?.*", "blk.12.attn_q.weight"));
    CHECK_FALSE(pattern_matches("blk.1?.*", "blk.2.attn_q.weight"));
    const LayoutMap m = parse_layout_map(" ffn_* = t2p , attn_q*=t2x4|pq2_0, *=measure ");
    REQUIRE(m.rules.size() == 3);
    CHECK(m.text() == "ffn_*=t2p,attn_q*=t2x4|pq2_0,*=measure");
    CHECK(parse_layout_map(m.text()).text() == m.text());
    CHECK(m.match("blk.0.ffn_gate.weight") == 0);
    CHECK(m.match("blk.3.attn_qkv.weight") == 1);
    CHECK(m.match("output.weight") == 2);
    CHECK_FALSE(m.rules[0].measured());
    CHECK(m.rules[1].measured());
    CHECK(m.rules[2].measure_all);
  }

  TEST_CASE("bad maps are refused, naming the item and the layout") {
    check_error([] { parse_layout_map("ffn_*"); }, "'ffn_*'", "pattern=layout");
    check_error([] { parse_layout_map("ffn_*=t9"); }, "'ffn_*=t9'", "t9");
    check_error([] { parse_layout_map("ffn_*=t2p-e4m3"); }, "'ffn_*=t2p-e4m3'", "t2p-e4m3", "exactly");
    check_error([] { parse_layout_map("*=i2_s"); }, "i2_s", "exactly");
    check_error([] { parse_layout_map("=t2p"); }, "no pattern");
    check_error([] { parse_layout_map("ffn_*="); }, "no layout");
    check_error([] { parse_layout_map("*=t2p|t2p"); }, "twice");
    check_error([] { parse_layout_map("ffn_*=t2p,ffn_*=t2x4"); }, "'ffn_*'", "twice");
    check_error([] { parse_layout_map(" , "); }, "no pattern=layout");
    const std::vector<std::string> tensors = matmul_tensors(synth_config(find_preset("tiny"), {}));
    CHECK(tensors.front() == "output.weight");
    CHECK(std::count_if(tensors.begin(), tensors.end(), [](const std::string& t) { return t.ends_with("ffn_up.weight"); }) == 4);
    check_error([&] { check_layout_map(parse_layout_map("fnn_*=t2p"), tensors, true, "tiny.gguf"); }, "'fnn_*'",
                "matches no matmul tensor of tiny.gguf", "ffn_");
    check_error([&] { check_layout_map(parse_layout_map("*=t2p,ffn_*=t2x4"), tensors, true, "m"); }, "'ffn_*'", "earlier pattern");
    check_error([&] { check_layout_map(parse_layout_map("ffn_*=t2p"), tensors, false, "m"); }, "no pattern matches tensor output.weight");
    // The same refusal from a load, naming the file.
    LoadOptions o;
    o.layout_map = parse_layout_map("ffn_*=t2p,attn_zzz=t2x4");
    check_error([&] { Model::load(tiny(), o); }, "'attn_zzz'", tiny());
    o.layout_map = parse_layout_map("ffn_*=t2p");
    o.requantise_scales = true;
    check_error([&] { Model::load(tiny(), o); }, "exact layouts only");
  }

  TEST_CASE("a measured rule's candidates: exact layouts whose blocks tile the shape, with a kernel here") {
    std::vector<std::string> skipped;
    const auto all = measure_candidates(parse_layout_map("*=measure").rules[0], 1280, 256, &skipped);
    CHECK_FALSE(all.empty());
    for (const LayoutInfo* L : all) {
      CAPTURE(L->name);
      CHECK(L->holds_exact_fp16_per128_scales());
      CHECK(1280 % L->rows == 0);
    }
    CHECK(std::none_of(all.begin(), all.end(), [](const LayoutInfo* L) { return L->name == "t2p-e4m3" || L->name == "i2_s"; }));
    // 1288 rows: not a multiple of 16, so t2r's sixteen-row blocks are left out, saying why.
    skipped.clear();
    const auto odd = measure_candidates(parse_layout_map("*=t2r|pq2_0").rules[0], 1288, 256, &skipped);
    CHECK(std::none_of(odd.begin(), odd.end(), [](const LayoutInfo* L) { return L->name == "t2r"; }));
    CHECK(std::any_of(skipped.begin(), skipped.end(), [](const std::string& s) { return s.starts_with("t2r: its 16 x 128 blocks"); }));
  }

  TEST_CASE("a hand mixture gives the same tokens, logit bits and perplexity as a single layout") {
    LoadOptions single;
    single.layout = "pq2_0";
    const auto base = Model::load(tiny(), single);
    const Outputs want = run(*base);
    std::vector<std::string> maps = {"ffn_*=t2p,attn_*=t2x4,ssm_out=ptq1_0", "output=t2p,blk.0.*=t2x4,blk.3.*=t2p"};
    if (simd_here("b3r") && simd_here("t2r")) maps.push_back("ffn_*=b3r,*=t2r");  // the x86 pair of configs/mixed-layouts.toml
    for (const std::string& text : maps) {
      CAPTURE(text);
      for (int threads : {1, 2}) {
        LoadOptions o;
        o.layout = "pq2_0";  // the rest
        o.layout_map = parse_layout_map(text);
        o.threads = threads;
        const auto m = Model::load(tiny(), o);
        CHECK(m->mixed());
        MESSAGE(text, ": ", m->layout_text(), "; kernels ", m->kernel_name(), "; ", m->bits_per_weight(), " bits/weight");
        check_same(run(*m), want);
        // Every tensor in its rule's layout, the rest in pq2_0; bytes as summed by the model.
        std::uint64_t bytes = 0;
        for (const TensorLayout& t : m->tensor_layouts()) {
          CAPTURE(t.tensor);
          const int r = o.layout_map.match(t.tensor);
          CHECK(t.rule == r);
          CHECK(t.layout == (r < 0 ? std::string("pq2_0") : o.layout_map.rules[std::size_t(r)].layouts.front()));
          bytes += t.bytes;
        }
        CHECK(bytes == m->ternary_bytes_per_token());
        CHECK(m->tensor_layouts().size() == matmul_tensors(m->config()).size());
      }
    }
    // The summary counts per rule; the bits per weight lie between the layouts'.
    LoadOptions o;
    o.layout = "t2x4";
    o.layout_map = parse_layout_map("ffn_*=ptq1_0");
    const auto m = Model::load(tiny(), o);
    CHECK(m->layout_text() == "ffn_*: ptq1_0 (12 tensors); rest: t2x4 (14)");
    CHECK(m->bits_per_weight() > find_layout("ptq1_0").bits_per_weight());
    CHECK(m->bits_per_weight() < find_layout("t2x4").bits_per_weight());
    check_same(run(*m), want);
  }

  TEST_CASE("a measured rule times its candidates per shape, keeps them in wisdom, and stays exact") {
    const std::string wisdom = temp_wisdom("measured");
    fs::remove(wisdom);
    LoadOptions single;
    single.layout = "pq2_0";
    const Outputs want = run(*Model::load(tiny(), single));
    LoadOptions o;
    o.layout_map = parse_layout_map("ffn_*=t2p|pq2_0,*=pq2_0");
    o.wisdom = wisdom;
    o.threads = 2;
    const auto m = Model::load(tiny(), o);
    check_same(run(*m), want);
    std::set<std::pair<std::int64_t, std::int64_t>> shapes;
    for (const TensorLayout& t : m->tensor_layouts()) {
      if (t.rule != 0) continue;
      CHECK((t.layout == "t2p" || t.layout == "pq2_0"));
      shapes.insert({t.rows, t.cols});
    }
    CHECK(shapes.size() == 2);  // gate/up 1280 x 256, down 256 x 1280
    REQUIRE(m->layout_notes().size() == shapes.size());  // one timing per shape, not per tensor
    for (const std::string& n : m->layout_notes()) {
      CAPTURE(n);
      CHECK(n.find("measured") != std::string::npos);
      CHECK(n.find("(gemv, 2 thread(s))") != std::string::npos);
    }
    // Wisdom holds each candidate at each shape, for 2 threads; a second load reads it.
    const Wisdom w(wisdom);
    for (const auto& [rows, cols] : shapes)
      for (const char* layout : {"t2p", "pq2_0"})
        if (simd_here(layout)) CHECK(w.find(plan_key(find_layout(layout), rows, cols, 1, 2)) != nullptr);
    const auto again = Model::load(tiny(), o);
    for (const std::string& n : again->layout_notes()) {
      CHECK(n.find("measured") == std::string::npos);
      CHECK(n.find("wisdom") != std::string::npos);
    }
    CHECK(again->layout_text() == m->layout_text());
    // Cold: each candidate's warm kernel (read from wisdom now) timed with its weights pushed out of
    // the caches first, kept under an operation of its own.
    o.plan_cold_bytes = 1 << 20;
    const auto cold = Model::load(tiny(), o);
    check_same(run(*cold), want);
    for (const std::string& n : cold->layout_notes()) {
      CAPTURE(n);
      CHECK(n.find("(gemv cold, 2 thread(s))") != std::string::npos);
    }
    const Wisdom wc(wisdom);
    for (const auto& [rows, cols] : shapes)
      for (const char* layout : {"t2p", "pq2_0"})
        if (simd_here(layout)) {
          PlanKey k = plan_key(find_layout(layout), rows, cols, 1, 2);
          const WisdomEntry* warm = wc.find(k);
          k.op += " cold";
          const WisdomEntry* e = wc.find(k);
          REQUIRE(e != nullptr);
          REQUIRE(warm != nullptr);
          CHECK(e->variant == warm->variant);
          CHECK(e->rate > 0);
        }
    fs::remove(wisdom);
  }

  TEST_CASE("the measured choice is the candidate the wisdom file rates fastest, per shape and thread count") {
    if (!simd_here("t2p") || !simd_here("pq2_0")) return;
    const std::string path = temp_wisdom("seeded");
    const auto variant = [](const char* layout) {
      for (const KernelVariant& k : kernels_under_ceiling(find_layout(layout)))
        if (k.strategy != Strategy::reference) return k.name();
      return std::string();
    };
    const std::vector<std::string> tensors = matmul_tensors(synth_config(find_preset("tiny"), {}));
    // Rates for one thread only: t2p faster at gate/up (1280 x 256), pq2_0 at down (256 x 1280).
    {
      fs::remove(path);
      Wisdom w(path);
      for (const auto& [rows, cols, fast] : {std::tuple{1280, 256, "t2p"}, std::tuple{256, 1280, "pq2_0"}})
        for (const char* layout : {"t2p", "pq2_0"})
          w.record({plan_key(find_layout(layout), rows, cols, 1, 1), variant(layout), std::string(layout) == fast ? 50.0 : 5.0, ""});
      w.save();
    }
    LoadOptions o;
    o.layout = "pq2_0";
    o.layout_map = parse_layout_map("ffn_*=t2p|pq2_0");
    o.wisdom = path;
    const auto m = Model::load(tiny(), o);
    for (const TensorLayout& t : m->tensor_layouts()) {
      CAPTURE(t.tensor);
      if (t.tensor.ends_with("ffn_gate.weight") || t.tensor.ends_with("ffn_up.weight")) CHECK(t.layout == "t2p");
      if (t.tensor.ends_with("ffn_down.weight")) CHECK(t.layout == "pq2_0");
      if (t.rule == 0) CHECK(t.kernel == variant(t.layout.c_str()));
    }
    CHECK(m->layout_text() == "ffn_*: measured t2p|pq2_0 -> pq2_0 (4), t2p (8); rest: pq2_0 (14)");
    // Reversed rates, reversed choice.
    {
      fs::remove(path);
      Wisdom w(path);
      for (const auto& [rows, cols] : {std::pair{1280, 256}, std::pair{256, 1280}})
        for (const char* layout : {"t2p", "pq2_0"})
          w.record({plan_key(find_layout(layout), rows, cols, 1, 1), variant(layout), std::string(layout) == "pq2_0" ? 50.0 : 5.0, ""});
      w.save();
    }
    const auto r = Model::load(tiny(), o);
    for (const TensorLayout& t : r->tensor_layouts()) CHECK(t.layout == "pq2_0");
    fs::remove(path);
  }

  TEST_CASE("decode and perplexity kinds take a mixture as an arm: verified exact, reported per rule") {
    const std::string wisdom = temp_wisdom("kinds");
    fs::remove(wisdom);
    const std::string arms = cat("wisdom = \"", wisdom, "\"\nmeasure_weights = \"warm\"\nbaseline = \"t2p\"\n[[arm]]\nlayout = \"t2p\"\n"
                                 "[[arm]]\nname = \"hand\"\nlayout = \"t2p\"\nlayout_map = \"ffn_*=t2x4\"\n"
                                 "[[arm]]\nname = \"measured\"\nlayout_map = \"*=t2p|pq2_0\"\n");
    const experiments::RunReport dec = run_text(head("decode") + "tokens = 4\n" + arms);
    CHECK(dec.ok);
    CHECK(dec.markdown.find("ffn_*: t2x4 (12 tensors); rest: t2p (14)") != std::string::npos);
    CHECK(dec.markdown.find("*: measured t2p\\|pq2_0 -> ") != std::string::npos);  // a table cell: '|' escaped
    CHECK(dec.markdown.find("FAILED") == std::string::npos);
    bool saw = false;
    for (const experiments::Json& a : dec.json["arms"]) {
      if (a["name"] != "measured") continue;
      saw = true;
      CHECK(a["layout_map"] == "*=t2p|pq2_0");
      CHECK(a["tensor_layouts"].size() == 26);  // the head, 9 GDN, 4 attention and 12 FFN matmuls
      CHECK(a["layout"].get<std::string>().starts_with("*: measured t2p|pq2_0 -> "));
      CHECK(a["max_logit_diff"] == 0.0);
    }
    CHECK(saw);
    const experiments::RunReport ppl = run_text(head("perplexity") + "tokens = 24\nchunk = 8\n" + arms);
    CHECK(ppl.ok);
    REQUIRE(ppl.arm_values.size() == 3);
    for (const auto& v : ppl.arm_values) CHECK(v.get("perplexity") == ppl.arm_values.front().get("perplexity"));
    fs::remove(wisdom);
  }

  TEST_CASE("a bad layout_map key is refused before anything runs, naming the file, line and key") {
    const auto plan = [](const std::string& text) { experiments::load_plan_text(text, "mixed.toml", {}); };
    const std::string h = head("decode");  // 9 lines
    check_error([&] { plan(h + "[[arm]]\nlayout_map = \"fnn_*=t2p\"\n"); }, "mixed.toml:11: key 'arm[0].layout_map'", "'fnn_*'",
                "matches no matmul tensor");
    check_error([&] { plan(h + "[[arm]]\nlayout_map = \"ffn_*=t9\"\n"); }, "mixed.toml:11: key 'arm[0].layout_map'", "t9");
    check_error([&] { plan(h + "[[arm]]\nlayout_map = \"ffn_*=t2p-e4m3\"\n"); }, "mixed.toml:11: key 'arm[0].layout_map'", "t2p-e4m3",
                "exactly");
    check_error([&] { plan(h + "[[arm]]\nlayout = \"t2p-e4m3\"\nlayout_map = \"ffn_*=t2p\"\n"); }, "mixed.toml:11: key 'arm[0].layout'",
                "exact layouts only");
    check_error([&] { plan(h + "measure_weights = \"hot\"\n[[arm]]\nlayout = \"t2p\"\n"); }, "mixed.toml:10: key 'measure_weights'", "hot");
    check_error([&] { plan(h + "[[arm]]\nlayout = \"tq2_0\"\nkernel = \"ggml-tq2_0\"\nlayout_map = \"ffn_*=t2p\"\n"); },
                "key 'arm[0].kernel'", "mixture");
  }
}
