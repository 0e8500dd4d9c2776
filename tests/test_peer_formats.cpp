// The peers' formats declared in the DSL (layouts/tq2_0.hpp, tq1_0.hpp, i2_s.hpp): their bytes
// against the byte maps and test vectors of /work/shared/docs/peer-formats-spec.md (sections 2.2,
// 3.2-3.3, 4.2), written out here independently of the codec; the exact transcodes and their
// refusals; the lossy merge of scale groups; bad input; the kernels' gate; the peer arms' bytes.
#include <cmath>
#include <cstring>
#include <filesystem>
#include <unistd.h>
#include <utility>

#include "common/fp16.hpp"
#include "kernels/catalog.hpp"
#include "kernels/oracle.hpp"
#include "kernels/strategies/all.hpp"
#include "kernels/peers/i2s.hpp"
#include "kernels/peers/tq1.hpp"
#include "kernels/peers/tq2.hpp"
#include "kernels/testdata.hpp"
#include "model/experiments.hpp"
#include "model/model.hpp"
#include "model/synth.hpp"
#include "layouts/stock.hpp"
#include "tests/support.hpp"

using namespace ternlab;

namespace {

// A 1 x cols matrix of zero weights (u = 1) and unit scales, with the given weights set.
TernaryMatrix zeros(std::int64_t rows, std::int64_t cols) {
  TernaryMatrix m(rows, cols);
  std::fill(m.codes.begin(), m.codes.end(), std::uint8_t(1));
  std::fill(m.scales.begin(), m.scales.end(), float_to_fp16(1.0f));
  return m;
}

// The spec's placement formulas (not the declarations): byte and 2-bit field / digit of weight k.
Loc tq2_spec(int k) { return {32 * (k / 128) + k % 32, k % 128 / 32}; }
Loc i2s_spec(int k) { return {k % 32, 3 - k / 32}; }
Loc tq1_spec(int e) {
  if (e < 160) return {e % 32, e / 32};
  if (e < 240) return {32 + (e - 160) % 16, (e - 160) / 16};
  return {48 + (e - 240) % 4, (e - 240) / 4};
}

}  // namespace

TEST_SUITE("peer-formats") {
  TEST_CASE("the declarations derive the peers' block geometry") {
    const LayoutInfo& tq2 = find_layout("tq2_0");
    const LayoutInfo& tq1 = find_layout("tq1_0");
    const LayoutInfo& i2s = find_layout("i2_s");
    CHECK(tq2.k == 256);
    CHECK(tq2.block_bytes() == 66);
    CHECK(tq2.bits_per_weight() == 2.0625);
    CHECK(tq2.scale_offset(0) == 64);
    CHECK(tq2.scale_group() == 256);
    CHECK(tq2.gguf_type == 35);
    CHECK(tq1.k == 256);
    CHECK(tq1.block_bytes() == 54);
    CHECK(tq1.bits_per_weight() == 1.6875);
    CHECK(tq1.scale_offset(0) == 52);
    CHECK(tq1.gguf_type == 34);
    CHECK(strategies::Base3Strategy::admits(tq1));  // three digit-plane pieces of 32, 16 and 4 bytes
    CHECK(i2s.k == 128);
    CHECK(i2s.block_bytes() == 32);
    CHECK(i2s.bits_per_weight() == 2.0);
    CHECK(i2s.per_tensor_scale());
    CHECK(i2s.scales_per_row() == 0);
    CHECK(i2s.facts.tail_bytes == 32);
    CHECK(i2s.scale_format() == ScaleFormat::fp32);
    CHECK(i2s.gguf_type == -1);
    // The properties a byte order has stay derived: both 2-bit orders are slot-vectorizable words.
    CHECK(strategies::SlotMaskStrategy::admits(tq2));
    CHECK(strategies::SlotMaskStrategy::admits(i2s));
    CHECK(i2s.formulas().front() == "k 0..127: row = (row:1), k = (m:32, s:4); byte = m, slot = 3 - s");
    CHECK(i2s.formulas().back().find("whole tensor at byte 0 of a 32-byte tail") != std::string::npos);
    const auto props = i2s.properties();
    CHECK(std::find(props.begin(), props.end(), "per-tensor-scale") != props.end());
  }

  TEST_CASE("placement: every weight where the spec's formulas put it") {
    const LayoutInfo& tq2 = find_layout("tq2_0");
    const LayoutInfo& tq1 = find_layout("tq1_0");
    const LayoutInfo& i2s = find_layout("i2_s");
    for (int k = 0; k < 256; ++k) {
      CAPTURE(k);
      CHECK(tq2.placement[std::size_t(k)].byte == tq2_spec(k).byte);
      CHECK(tq2.placement[std::size_t(k)].slot == tq2_spec(k).slot);
      CHECK(tq1.placement[std::size_t(k)].byte == tq1_spec(k).byte);
      CHECK(tq1.placement[std::size_t(k)].slot == tq1_spec(k).slot);
      if (k < 128) {
        CHECK(i2s.placement[std::size_t(k)].byte == i2s_spec(k).byte);
        CHECK(i2s.placement[std::size_t(k)].slot == i2s_spec(k).slot);
      }
    }
  }

  TEST_CASE("golden bytes: the spec's test vectors") {
    // TQ2_0 (spec 2.2): +1 at k = 0 and 127, -1 at 32 and 128; d = 1.0.
    TernaryMatrix t = zeros(1, 256);
    t.codes[0] = t.codes[127] = 2;
    t.codes[32] = t.codes[128] = 0;
    const PackedMatrix tq2 = pack(t, find_layout("tq2_0"));
    REQUIRE(tq2.bytes.size() == 66);
    for (int b = 0; b < 64; ++b) {
      CAPTURE(b);
      CHECK(int(tq2.bytes[std::size_t(b)]) == (b == 0 ? 0x52 : b == 31 ? 0x95 : b == 32 ? 0x54 : 0x55));
    }
    CHECK(tq2.bytes[64] == 0x00);
    CHECK(tq2.bytes[65] == 0x3c);
    CHECK(unpack(tq2) == t);

    // TQ1_0 (spec 3.3): qs byte 0xCF <-> t = (2,1,0,2,1), qh byte 0x92 <-> t = (1,2,0,1); zero
    // weights give qs 0x80 and qh 0x7F. Byte 0's digits are weights 0, 32, .., 128; qh[0]'s 240, 244, 248, 252.
    TernaryMatrix u = zeros(1, 256);
    const int qs0[5] = {2, 1, 0, 2, 1}, qh0[4] = {1, 2, 0, 1};
    for (int n = 0; n < 5; ++n) u.codes[std::size_t(32 * n)] = std::uint8_t(qs0[n]);
    for (int n = 0; n < 4; ++n) u.codes[std::size_t(240 + 4 * n)] = std::uint8_t(qh0[n]);
    const PackedMatrix tq1 = pack(u, find_layout("tq1_0"));
    REQUIRE(tq1.bytes.size() == 54);
    CHECK(tq1.bytes[0] == 0xCF);
    for (int b = 1; b < 48; ++b) CHECK(tq1.bytes[std::size_t(b)] == 0x80);
    CHECK(tq1.bytes[48] == 0x92);
    for (int b = 49; b < 52; ++b) CHECK(tq1.bytes[std::size_t(b)] == 0x7F);
    CHECK(tq1.bytes[52] == 0x00);
    CHECK(tq1.bytes[53] == 0x3c);
    CHECK(unpack(tq1) == u);

    // I2_S (spec 4.2): K = 128, +1 at k = 0 and 127, -1 at 32; tail 00 00 80 3F then 28 zero bytes.
    TernaryMatrix v = zeros(1, 128);
    v.codes[0] = v.codes[127] = 2;
    v.codes[32] = 0;
    const PackedMatrix i2s = pack(v, find_layout("i2_s"));
    REQUIRE(i2s.bytes.size() == 64);
    for (int b = 0; b < 32; ++b) CHECK(int(i2s.bytes[std::size_t(b)]) == (b == 0 ? 0x85 : b == 31 ? 0x56 : 0x55));
    const std::uint8_t tail[4] = {0x00, 0x00, 0x80, 0x3f};
    for (int b = 0; b < 32; ++b) CHECK(i2s.bytes[std::size_t(32 + b)] == (b < 4 ? tail[b] : 0));
    CHECK(unpack(i2s) == v);
  }

  TEST_CASE("the peer arms read the bytes the DSL codec packs") {
    const TernaryMatrix m = test::share_scales(make_weights(8, 1024, 3, Fill::random, ScaleKind::random), find_layout("tq2_0"));
    const peers::Tq2Matrix t = peers::pack_tq2(m, "w");
    const PackedMatrix p = pack(m, find_layout("tq2_0"));
    CHECK(std::equal(t.bytes.begin(), t.bytes.end(), p.bytes.begin(), p.bytes.end()));
    const TernaryMatrix m1 = test::share_scales(make_weights(8, 1024, 5, Fill::random, ScaleKind::random), find_layout("tq1_0"));
    const peers::Tq1Matrix t1 = peers::pack_tq1(m1, "w");
    const PackedMatrix p1 = pack(m1, find_layout("tq1_0"));
    CHECK(std::equal(t1.bytes.begin(), t1.bytes.end(), p1.bytes.begin(), p1.bytes.end()));
    // I2_S: the arm keeps the codes under the largest block scale.
    const TernaryMatrix r = make_weights(8, 1024, 4, Fill::random, ScaleKind::random);
    const peers::I2sMatrix i = peers::pack_i2s(r, "w");
    TernaryMatrix one = r;
    std::uint16_t big = 0;
    for (std::uint16_t h : r.scales) big = fp16_to_float(h) > fp16_to_float(big) ? h : big;
    std::fill(one.scales.begin(), one.scales.end(), big);
    const PackedMatrix q = pack(one, find_layout("i2_s"));
    CHECK(std::equal(i.bytes.begin(), i.bytes.end(), q.bytes.begin(), q.bytes.end()));
    CHECK(i.scale() == fp16_to_float(big));
  }

  TEST_CASE("exact transcodes to and from every other layout, refusing what would lose a scale") {
    for (const char* name : {"tq2_0", "tq1_0", "i2_s"}) {
      CAPTURE(name);
      const LayoutInfo& L = find_layout(name);
      const TernaryMatrix m = test::share_scales(make_weights(16, 512, 9, Fill::random, ScaleKind::random), L);
      const PackedMatrix p = pack(m, L);
      for (const LayoutInfo* other : all_layouts()) {
        if (!test::fits(*other, 16, 512) || other->scale_format() != ScaleFormat::fp16) continue;
        CAPTURE(other->name);
        const TernaryMatrix want = test::share_scales(m, *other);
        if (!(want == m)) continue;  // other's wider scale group: the refusals below
        const PackedMatrix q = transcode(p, *other, "blk.0.ffn_up");
        CHECK(transcode(q, L).bytes == p.bytes);
      }
    }
    // Two different 128-weight scales under one TQ2_0 scale: refused, naming tensor, row, weights, values.
    TernaryMatrix m = zeros(2, 512);
    m.scales[5] = float_to_fp16(0.5f);  // row 1 (4 blocks per row), weights 128..255
    const PackedMatrix pq = pack(m, find_layout("pq2_0"));
    test::check_error([&] { transcode(pq, find_layout("tq2_0"), "blk.3.attn_q"); }, "blk.3.attn_q", "row 1",
                      "weights 0..255", "1 and 0.5", "requantise");
    // Rows of different scales under I2_S's one per-tensor scale.
    test::check_error([&] { transcode(pq, find_layout("i2_s"), "blk.3.attn_q"); }, "blk.3.attn_q", "one scale for the whole tensor",
                      "row 1 block 1", "0.5");
    // +2 (code 3) into the base-3 TQ1_0.
    TernaryMatrix plus2 = zeros(1, 256);
    plus2.codes[7] = 3;
    test::check_error([&] { pack(plus2, find_layout("tq1_0"), "tok"); }, "tok", "weight 7", "tq1_0");
    // A 256-weight layout given 384 columns.
    test::check_error([&] { pack(zeros(1, 384), find_layout("tq2_0"), "odd"); }, "odd", "256-weight blocks");
  }

  TEST_CASE("requantise merges scale groups into the largest, re-ternarises, and reports what moved") {
    TernaryMatrix m = zeros(2, 256);
    m.scales[0] = float_to_fp16(1.0f);
    m.scales[1] = float_to_fp16(4.0f);  // row 0: weights 0..127 at 1.0, 128..255 at 4.0
    m.codes[5] = 2;                     // +1 x 1.0: under 4.0 it rounds to 0 (0.25)
    m.codes[130] = 0;                   // -1 x 4.0 stays
    const PackedMatrix pq = pack(m, find_layout("pq2_0"));
    ScaleRequantisation rep;
    const PackedMatrix q = requantise(pq, find_layout("tq2_0"), "w", &rep);
    const TernaryMatrix got = unpack(q);
    CHECK(got.scale_bits(0, 0) == float_to_fp16(4.0f));
    CHECK(got.scale_bits(0, 1) == float_to_fp16(4.0f));
    CHECK(got.weight(0, 5) == 0);
    CHECK(got.weight(0, 130) == -1);
    CHECK(rep.weights == 512);
    CHECK(rep.weights_changed == 1);
    CHECK(rep.max_abs_weight_error == 1.0);
    // Exact where nothing needs merging: the same bytes as the exact transcode.
    const PackedMatrix even = pack(zeros(2, 256), find_layout("pq2_0"));
    CHECK(requantise(even, find_layout("tq2_0")).bytes == transcode(even, find_layout("tq2_0")).bytes);
  }

  TEST_CASE("t2p's scale-group variants: a 128-weight scale splits into 64s exactly; merging into 256 is lossy") {
    const LayoutInfo& g64 = find_layout("t2p-g64");
    const LayoutInfo& g256 = find_layout("t2p-g256");
    CHECK(g64.block_bytes() == 144);
    CHECK(g64.scales_per_row() == 2);
    CHECK(g64.scale_offset(3, 1) == 14);
    CHECK(g256.block_bytes() == 264);
    CHECK(g256.bits_per_weight() == 2.0625);
    CHECK(strategies::SlotMaskStrategy::admits(g256));  // the t2p words, twice
    const TernaryMatrix m = make_weights(8, 512, 17, Fill::random, ScaleKind::random);
    const PackedMatrix t2p = pack(m, find_layout("t2p"));
    const PackedMatrix split = transcode(t2p, g64, "w");
    CHECK(transcode(split, find_layout("t2p")).bytes == t2p.bytes);
    for (int r = 0; r < 4; ++r)
      for (int g = 0; g < 2; ++g) CHECK(split.scale(1, 2, r, g) == fp16_to_float(m.scale_bits(4 + r, 2)));
    // Two different 64-weight scales: the layout-free form (one per 128) cannot hold them.
    PackedMatrix odd = split;
    const std::uint16_t half = float_to_fp16(0.5f);
    std::memcpy(odd.block(0, 1) + g64.scale_offset(2, 1), &half, 2);
    test::check_error([&] { unpack(odd); }, "t2p-g64", "row 2", "weights 128..255", "one scale per 128 weights");
    // ...but the reference kernel runs it, one fma per 64-weight group, and so do the slot-mask
    // kernels, which keep a chunk's two groups apart; the strategies that take one scale per
    // 128-weight chunk decline it, naming the group.
    CHECK(scales_why_not(Strategy::slot_mask, g64).empty());
    CHECK(scales_why_not(Strategy::portable, g64).empty());
    for (const Strategy s : {Strategy::broadcast, Strategy::unpack, Strategy::permute, Strategy::base3})
      CHECK(scales_why_not(s, g64).find("64-weight scale groups") != std::string::npos);
    const Q8KBatch x = quantize_batch(make_float_activations(1, 512, 18).data(), 1, 512);
    std::vector<float> want(8), got(8);
    gemv_reference(odd, x.row(0), want.data(), 0, odd.row_groups());
    for (const KernelVariant& k : kernels_for(g64)) {
      CAPTURE(k.name());
      CHECK((k.strategy == Strategy::reference || k.strategy == Strategy::slot_mask ||
             k.strategy == Strategy::slot_mask_widen || k.strategy == Strategy::portable));
      k.gemv(odd, x.row(0), got.data(), 0, odd.row_groups());
      CHECK(std::memcmp(got.data(), want.data(), sizeof(float) * want.size()) == 0);
    }
    // Into 256-weight groups: refused exactly, merged by requantise with its report.
    test::check_error([&] { transcode(t2p, g256, "blk.0.ffn_down"); }, "blk.0.ffn_down", "row 0", "weights 0..255");
    ScaleRequantisation rep;
    const PackedMatrix merged = requantise(t2p, g256, "blk.0.ffn_down", &rep);
    CHECK(rep.weights == 8 * 512);
    CHECK(rep.weights_changed > 0);
    const TernaryMatrix back = unpack(merged);
    for (std::int64_t r = 0; r < 8; ++r)
      for (std::int64_t b = 0; b < 4; b += 2) {
        const float a = fp16_to_float(m.scale_bits(r, b)), c = fp16_to_float(m.scale_bits(r, b + 1));
        CHECK(back.scale_bits(r, b) == float_to_fp16(std::max(a, c)));
        CHECK(back.scale_bits(r, b + 1) == back.scale_bits(r, b));
      }
  }

  TEST_CASE("bad input: sizes and per-tensor scales name the tensor") {
    const LayoutInfo& i2s = find_layout("i2_s");
    const PackedMatrix p = pack(zeros(4, 256), i2s);
    // The tail missing: the size does not match the declared shape.
    test::check_error([&] { adopt_bytes(i2s, 4, 256, p.bytes.data(), p.blocks_bytes(), "blk.1.ffn_gate"); },
                      "blk.1.ffn_gate", "bytes", "tail");
    std::vector<std::uint8_t> nan(p.bytes.begin(), p.bytes.end());
    const float q = NAN;
    std::memcpy(nan.data() + p.blocks_bytes(), &q, 4);
    test::check_error([&] { adopt_bytes(i2s, 4, 256, nan.data(), nan.size(), "blk.1.ffn_gate"); }, "blk.1.ffn_gate",
                      "per-tensor", "not finite");
    const PackedMatrix t = pack(zeros(4, 512), find_layout("tq2_0"));
    test::check_error([&] { adopt_bytes(find_layout("tq2_0"), 4, 768, t.bytes.data(), t.bytes.size(), "output.weight"); },
                      "output.weight", "bytes", "tq2_0");
  }

  TEST_CASE("every kernel is exact against the oracle; the SIMD strategies that decline say why") {
    // (layout, the slot-mask strategy runs it as two 128-weight chunks under one scale)
    const std::pair<const char*, bool> cases[] = {{"tq2_0", true}, {"t2p-g256", true}, {"tq1_0", false}, {"i2_s", false}};
    for (const auto& [name, chunks] : cases) {
      CAPTURE(name);
      const LayoutInfo& L = find_layout(name);
      const std::int64_t rows = 8, cols = 1536, tokens = 5;
      const TernaryMatrix w = test::share_scales(make_weights(rows, cols, 13, Fill::random, ScaleKind::random), L);
      const Q8KBatch x = quantize_batch(make_float_activations(tokens, cols, 14).data(), tokens, cols);
      const std::vector<float> want = oracle_float(w, x);
      const PackedMatrix p = pack(w, L);
      const std::vector<KernelVariant> ks = test::checked_kernels_for(L);
      CHECK((ks.size() > 1) == chunks);  // the portable slot-mask build runs on every CPU
      for (const KernelVariant& k : ks) {
        CAPTURE(k.name());
        CHECK((k.strategy == Strategy::reference || k.strategy == Strategy::slot_mask ||
               k.strategy == Strategy::slot_mask_widen || k.strategy == Strategy::portable));
        std::vector<float> Y(std::size_t(tokens * rows), NAN), y(std::size_t(rows), NAN);
        k.gemm(p, x, Y.data(), rows, 0, p.row_groups());
        for (std::int64_t t = 0; t < tokens; ++t) {
          k.gemv(p, x.row(t), y.data(), 0, p.row_groups());
          for (std::int64_t n = 0; n < rows; ++n) {
            CHECK(y[std::size_t(n)] == want[std::size_t(t * rows + n)]);
            CHECK(Y[std::size_t(t * rows + n)] == want[std::size_t(t * rows + n)]);
          }
        }
      }
      const std::vector<KernelGap> gaps = kernel_gaps(L);
      REQUIRE_FALSE(gaps.empty());
      for (const KernelGap& g : gaps) {
        CAPTURE(g.why);
        // A slot-mask plan may also decline a chunk that is no whole number of vectors at its width
        // (tq2_0's 32-byte chunk at AVX-512's 64 bytes).
        const bool width = chunks && g.strategy == Strategy::slot_mask && g.why.find("-byte vectors") != std::string::npos;
        // i8mm's smmla gemm pairs rows of q8_Kx4 chunks of 128 weights.
        const bool smmla = chunks && g.isa == Isa::i8mm && g.why.find("blocks of 256 weights") != std::string::npos;
        CHECK((width || smmla || g.why.find(L.per_tensor_scale() ? "one scale for the whole tensor" : "256-weight blocks") != std::string::npos));
      }
    }
    // A block of two chunks: 384 columns are no whole number of 256-weight blocks.
    test::check_error([] { pack(make_weights(4, 384, 3), find_layout("t2p-g256")); }, "t2p-g256", "384");
  }

  TEST_CASE("a declaration's scale site is checked: group width and per-tensor tail") {
    // At compile time, as the registry checks declarations, and at run time on the same specs.
    constexpr auto with = [](int group, int stride) {
      LayoutSpec s = ternlab::layouts::Tq2_0::spec;
      s.scales.group = group;
      s.scales.group_stride = stride;
      return s;
    };
    static_assert(find_violation(with(96, 2)).rule == Rule::scale_group);
    static_assert(find_violation(with(128, 0)).rule == Rule::scales_overlap);  // two scales on one byte pair
    static_assert(find_violation(with(128, 2)).rule == Rule::valid);
    static_assert(derive(with(128, 2)).block_bytes == 68);
    constexpr auto tail = [] {
      LayoutSpec s = ternlab::layouts::I2_s::spec;
      s.scales.tail_bytes = 2;
      return s;
    };
    static_assert(find_violation(tail()).rule == Rule::tensor_tail);
    // The same specs at run time (inputs through volatile, so nothing folds): the same verdicts.
    volatile int g96 = 96, g128 = 128, stride0 = 0, stride2 = 2;
    CHECK(find_violation(with(g96, stride2)).rule == Rule::scale_group);
    CHECK(find_violation(with(g128, stride0)).rule == Rule::scales_overlap);
    CHECK(find_violation(with(g128, stride2)).rule == Rule::valid);
    CHECK(derive(with(g128, stride2)).block_bytes == 68);
    CHECK(find_violation(tail()).rule == Rule::tensor_tail);
    CHECK(rule_text(Rule::tensor_tail) == std::string_view("a per-tensor scale must lie inside its tail_bytes"));
  }

  TEST_CASE("the model repacks into tq2_0 only through the named lossy path") {
    const std::string path =
        (std::filesystem::temp_directory_path() / cat("ternlab-peer-formats-", getpid(), ".gguf")).string();
    model::write_synthetic(model::find_preset("tiny"), path, {2026, 142});
    model::LoadOptions o;
    o.layout = "tq2_0";
    o.mode = gguf::LoadMode::memory;
    test::check_error([&] { model::Model::load(path, o); }, "tq2_0", "weight", "requantise");
    o.requantise_scales = true;
    const auto m = model::Model::load(path, o);
    const ScaleRequantisation& r = m->scale_requantisation();
    CHECK(r.weights > 0);  // every weight re-ternarised under its 256-weight group's merged scale
    CHECK(r.weights_changed <= r.weights);
    const std::vector<std::int32_t> text = {72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33};
    CHECK(std::isfinite(model::perplexity(*m, text, 8).value()));
    std::filesystem::remove(path);
  }
}
