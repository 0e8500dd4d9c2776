// The forward pass: Hadamard sites against the spec's vectors, the engine against the plain
// reference (tests/model_reference.cpp), greedy equivalence across layouts, prefill vs decode.
#include <cmath>
#include <cstring>
#include <cstdlib>
#include <filesystem>
#include <unistd.h>

#include "kernels/catalog.hpp"
#include "kernels/dispatch.hpp"
#include "model/experiments.hpp"
#include "model/model.hpp"
#include "model/sampler.hpp"
#include "model/synth.hpp"
#include "tests/model_reference.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::model;

namespace {

// The tiny preset written once per process (PQ2_0 and PTQ1_0 twins share trits and scales).
struct TempFiles {
  std::map<int, std::string> paths;  // by type * 1000 + scale group
  ~TempFiles() {
    for (const auto& [type, p] : paths) std::filesystem::remove(p);
  }
};

const std::string& tiny_path(int type = 142, int scale_group = 128) {
  static TempFiles files;
  auto& p = files.paths[type * 1000 + scale_group];
  if (p.empty()) {
    p = (std::filesystem::temp_directory_path() / cat("ternlab-test-", getpid(), "-tiny-", type, "-g", scale_group, ".gguf")).string();
    write_synthetic(find_preset("tiny"), p, {2026, type, scale_group});
  }
  return p;
}

const std::vector<std::int32_t> kFullPrompt = {72, 101, 108, 108, 111, 32, 119, 111, 114, 108, 100, 33};

// Under qemu (the aarch64 suite sets TERNLAB_EXPECT_CPU) the reference kernels run ~50x slower:
// the same checks run on a 4-token prompt there.
const bool kEmulated = std::getenv("TERNLAB_EXPECT_CPU") != nullptr;
const std::vector<std::int32_t> kPrompt(kFullPrompt.begin(), kFullPrompt.begin() + (kEmulated ? 4 : 12));

double max_abs(const std::vector<float>& a) {
  double m = 0;
  for (float x : a) m = std::max(m, double(std::fabs(x)));
  return m;
}

}  // namespace

TEST_SUITE("model") {
  TEST_CASE("prefetch_gemv_starts hands out a job only where some thread's share has something to fetch") {
    // The bytes are never read as weights here, only prefetched: zeros of the packed size will do.
    const auto linear = [](std::int64_t rows, std::int64_t cols) {
      TernaryLinear l;
      l.name = "test.weight";
      l.w.layout = &find_layout("t2r");
      l.w.rows = rows;
      l.w.cols = cols;
      l.w.bytes.resize(l.w.blocks_bytes());
      l.kernel = choose_kernel(*l.w.layout, "");
      return l;
    };
    const TernaryLinear small = linear(256, 1024);
    // Just under two caps of bytes: one thread's whole range is above the cap, each half of it not.
    const std::int64_t cols = 4096, group = small.w.layout->rows;
    const std::int64_t group_bytes = std::int64_t(linear(group, cols).w.bytes.size());
    const TernaryLinear big = linear((2 * kGemvStartMaxRangeBytes / group_bytes - 2) * group, cols);
    REQUIRE(std::ptrdiff_t(big.w.bytes.size()) > kGemvStartMaxRangeBytes);
    REQUIRE(std::ptrdiff_t(big.w.bytes.size()) <= 2 * kGemvStartMaxRangeBytes);
    TernaryLinear dense = linear(256, 1024);
    dense.dense = std::make_shared<const std::vector<float>>(std::size_t(256 * 1024), 0.0f);
    // Declared after the weights, so destroyed first: the destructor waits for the detached
    // fetches still reading them.
    ThreadPool one(1), two(2);
    CHECK(prefetch_gemv_starts({&small}, one));
    CHECK(prefetch_gemv_starts({&small}, two));
    CHECK_FALSE(prefetch_gemv_starts({&big}, one));
    CHECK(prefetch_gemv_starts({&big}, two));
    CHECK(prefetch_gemv_starts({&big, &small}, one));  // any one matrix with a share to fetch is enough
    CHECK_FALSE(prefetch_gemv_starts({&dense}, two));
  }

  TEST_CASE("FWHT and rotation vectors (spec 10.1)") {
    float x[4] = {1, 2, 3, 4};
    fwht(x, 4);
    CHECK(x[0] == 5.0f);
    CHECK(x[1] == -1.0f);
    CHECK(x[2] == -2.0f);
    CHECK(x[3] == 0.0f);
    Rotation r;
    r.block = 4;
    r.signs[4] = {1, -1, 1, -1};
    float y[4] = {1, 2, 3, 4};
    r.forward(y, 4);
    CHECK(y[0] == -1.0f);
    CHECK(y[1] == 5.0f);
    CHECK(y[2] == 0.0f);
    CHECK(y[3] == -2.0f);
    r.inverse(y, 4);
    for (int i = 0; i < 4; ++i) CHECK(y[i] == float(i + 1));
    // Block b alone, with the looked-up signs, is forward's block b: the pool splits rows this way.
    float z[8] = {1, 2, 3, 4, 5, 6, 7, 8}, whole[8] = {1, 2, 3, 4, 5, 6, 7, 8};
    r.signs[8] = {1, -1, -1, 1, 1, 1, -1, -1};
    r.forward(whole, 8);
    r.forward_block(z, r.signs_for(8), 1);
    r.forward_block(z, r.signs_for(8), 0);
    for (int i = 0; i < 8; ++i) CHECK(z[i] == whole[i]);
    // A width without a sign vector, or not a whole number of blocks, is refused by name.
    test::check_error([&] { (void)r.signs_for(12); }, "no sign vector", "12");
    r.signs[6] = {1, 1, 1, 1, 1, 1};
    test::check_error([&] { (void)r.signs_for(6); }, "input width 6", "not a multiple of the block 4");
    // B = 1024: H e_j [i] = (-1)^popcount(i & j) / 32, exactly.
    std::vector<float> e(1024, 0.0f);
    e[37] = 1.0f;
    fwht(e.data(), 1024);
    for (int i = 0; i < 1024; ++i) CHECK(e[std::size_t(i)] == ((std::popcount(unsigned(i & 37)) & 1) ? -1.0f : 1.0f) / 32.0f);
  }

  TEST_CASE("the norms over several rows: each row the bits of its own in-order double sum") {
    // Row counts below, at and past the rows summed together (8), strided rows, in place and not.
    const std::int64_t n = 37, stride = 41;
    const float eps = 1e-6f;
    std::vector<float> g(static_cast<std::size_t>(n));
    for (std::int64_t i = 0; i < n; ++i) g[std::size_t(i)] = 0.5f + 0.01f * float(i);
    for (const int rows : {1, 3, 8, 11, 17}) {
      CAPTURE(rows);
      std::vector<float> x(static_cast<std::size_t>(rows * stride));
      for (std::size_t i = 0; i < x.size(); ++i) x[i] = std::sin(0.37f * float(i)) * (1.0f + float(i % 7));
      std::vector<float> want_rms(static_cast<std::size_t>(rows * n)), want_l2 = x;
      for (int r = 0; r < rows; ++r) {
        const float* xr = x.data() + r * stride;
        double sum = 0;
        for (std::int64_t i = 0; i < n; ++i) sum += double(xr[i]) * double(xr[i]);
        const float scale = 1.0f / std::sqrt(float(sum / double(n)) + eps);
        for (std::int64_t i = 0; i < n; ++i) want_rms[std::size_t(r * n + i)] = xr[i] * scale * g[std::size_t(i)];
        const float l2 = 1.0f / std::max(std::sqrt(float(sum)), eps);
        for (std::int64_t i = 0; i < n; ++i) want_l2[std::size_t(r * stride + i)] = xr[i] * l2;
      }
      std::vector<float> got(want_rms.size(), -1.0f);
      model::rms_norm_rows(x.data(), stride, g.data(), got.data(), n, rows, n, eps);
      CHECK(std::memcmp(got.data(), want_rms.data(), 4 * got.size()) == 0);
      std::vector<float> in_place = x;
      model::rms_norm_rows(in_place.data(), stride, g.data(), in_place.data(), stride, rows, n, eps);
      for (int r = 0; r < rows; ++r)
        CHECK(std::memcmp(in_place.data() + r * stride, want_rms.data() + r * n, 4 * n) == 0);
      std::vector<float> l2 = x;
      model::l2_norm_rows(l2.data(), stride, rows, n, eps);
      CHECK(std::memcmp(l2.data(), want_l2.data(), 4 * l2.size()) == 0);  // the gaps between rows untouched
    }
  }

  TEST_CASE("GDN tiled -> grouped permutation (spec 10.1)") {
    const float tiled[6] = {0, 1, 2, 3, 4, 5};
    float grouped[6];
    tiled_to_grouped(tiled, grouped, 1, 2, 3);
    const float want[6] = {0, 2, 4, 1, 3, 5};
    for (int i = 0; i < 6; ++i) CHECK(grouped[i] == want[i]);
  }

  TEST_CASE("attention's key cache: the bits of one dot a position, across tiles, for a prefix and after a cut") {
    const int kv_heads = 2, head_dim = 40, queries = 3;
    const std::int64_t kv = kv_heads * head_dim;
    unsigned x = 7;
    const auto rnd = [&] { x = x * 1664525u + 1013904223u; return float(int(x >> 9) % 4001 - 2000) / 997.0f; };
    KeyCache cache(kv_heads, head_dim);
    std::vector<float> keys;  // the same keys one position after another
    const auto append = [&](int n) {
      for (int p = 0; p < n; ++p) {
        std::vector<float> row(static_cast<std::size_t>(kv));
        for (auto& v : row) v = rnd();
        cache.append(row.data());
        keys.insert(keys.end(), row.begin(), row.end());
      }
    };
    const auto cut = [&](std::int64_t n) {
      cache.cut(n);
      keys.resize(std::size_t(n * kv));
    };
    std::vector<float> q(queries * head_dim);
    for (auto& v : q) v = rnd();
    // Every key's dots, then (as a prompt's earlier tokens read the cache) the first `prefix` only.
    const auto check = [&](const char* when, std::int64_t prefix) {
      const std::int64_t all = std::int64_t(keys.size()) / kv, n = std::min(all, prefix), width = KeyCache::padded(n);
      REQUIRE(cache.positions == all);
      CHECK(cache.rows() == keys);
      std::vector<float> got(std::size_t(queries * width));
      for (int m = 0; m < kv_heads; ++m) {
        cache.dots(m, q.data(), queries, prefix, got.data());
        int same = 0;
        for (int r = 0; r < queries; ++r)
          for (std::int64_t s = 0; s < n; ++s) {
            float want = 0;
            for (int i = 0; i < head_dim; ++i) want = std::fma(q[std::size_t(r * head_dim + i)], keys[std::size_t(s * kv + m * head_dim + i)], want);
            same += std::memcmp(&want, &got[std::size_t(r * width + s)], sizeof want) == 0;
          }
        INFO(when, ", KV head ", m, ", the first ", n, " keys");
        CHECK(same == queries * n);
      }
    };
    append(37);  // three tiles, the last partial
    check("37 keys", 37);
    check("37 keys", 17);
    check("37 keys", 16);
    cut(20);  // a rollback into the second tile, then new keys over the old ones
    append(5);
    check("cut to 20, then 5 new keys", 25);
    check("cut to 20, then 5 new keys", 1000);
    cut(0);
    append(3);
    check("cut to 0, then 3 new keys", 3);
  }

  TEST_CASE("the engine matches the reference forward pass on the tiny preset") {
    auto m = Model::load(tiny_path());
    Session s = m->new_session();
    const auto got = m->forward(s, kPrompt, true);
    test::ReferenceModel ref(tiny_path());
    const Eigen::MatrixXd want = ref.forward(kPrompt);
    const int V = m->config().n_vocab;
    double max_diff = 0, max_logit = 0;
    for (std::size_t t = 0; t < kPrompt.size(); ++t)
      for (int v = 0; v < V; ++v) {
        max_diff = std::max(max_diff, std::fabs(double(got[t * std::size_t(V) + std::size_t(v)]) - want(Eigen::Index(t), v)));
        max_logit = std::max(max_logit, std::fabs(want(Eigen::Index(t), v)));
      }
    std::vector<double> per_position;
    for (std::size_t t = 0; t < kPrompt.size(); ++t) {
      double dt = 0;
      for (int v = 0; v < V; ++v)
        dt = std::max(dt, std::fabs(double(got[t * std::size_t(V) + std::size_t(v)]) - want(Eigen::Index(t), v)));
      per_position.push_back(dt);
    }
    MESSAGE("engine vs q8-input reference: max |logit diff| ", max_diff, " (max |logit| ", max_logit,
            "), first positions ", per_position[0], " ", per_position[1], " ", per_position[2],
            kEmulated ? " (emulated: 4-token prompt)" : "");
    // Both sides feed the same q8_K rounding to every ternary matmul; what differs is f32 vs f64
    // arithmetic elsewhere (~1e-7 relative). Until a q8 rounding decision flips, the logits agree
    // to ~1e-7 of their range (measured: positions 0-2 of this prompt); 1e-5 leaves headroom.
    for (std::size_t t = 0; t < 3 && t < kPrompt.size(); ++t) CHECK(per_position[t] < 1e-5 * max_logit);
    // Once an activation lands within ~1e-7 of a q8 rounding boundary, one quantum (1/127 of its
    // block maximum) differs and persists in the recurrent state and KV cache: measured ~1% of
    // the logit range on this prompt; 2% bounds it.
    CHECK(max_diff < 0.02 * max_logit);
    for (std::size_t t = 0; t < kPrompt.size(); ++t) {
      const std::span<const float> row(got.data() + t * std::size_t(V), std::size_t(V));
      Eigen::VectorXd r = want.row(Eigen::Index(t)).transpose();
      Eigen::Index best;
      const double top = r.maxCoeff(&best);
      r(best) = -1e300;
      if (top - r.maxCoeff() > 2 * max_diff) CHECK(argmax(row) == best);  // clear winners must agree
    }

    // Without the activation rounding the reference is the float model; q8_K inputs cost ~0.4%
    // per activation, so the logits agree to a few percent of their range.
    ref.q8_activations = false;
    const Eigen::MatrixXd exact = ref.forward(kPrompt);
    double float_diff = 0;
    for (std::size_t t = 0; t < kPrompt.size(); ++t)
      for (int v = 0; v < V; ++v)
        float_diff = std::max(float_diff, std::fabs(double(got[t * std::size_t(V) + std::size_t(v)]) - exact(Eigen::Index(t), v)));
    MESSAGE("engine vs float reference: max |logit diff| ", float_diff);
    CHECK(float_diff < 0.05 * max_logit);

    // The check is sensitive: skipping the ssm_out permutation moves the logits far more.
    ref.q8_activations = true;
    ref.permute_ssm_out = false;
    const Eigen::MatrixXd wrong = ref.forward(kPrompt);
    const double wrong_diff = (wrong - want).cwiseAbs().maxCoeff();
    MESSAGE("reference without the ssm_out permutation: max |logit diff| ", wrong_diff);
    CHECK(wrong_diff > 0.1 * max_logit);
    CHECK((wrong.row(0) - want.row(0)).cwiseAbs().maxCoeff() > 1e4 * per_position[0]);
  }

  TEST_CASE("beta and alpha weights that are not BF16 values stay floats, and the engine still matches the reference") {
    // The tiny model rewritten with ssm_alpha / ssm_beta as F32 whose values sit between BF16
    // neighbours: a loader that narrowed them to BF16 would reproduce the original's logits.
    const auto src = gguf::File::open(tiny_path(), gguf::LoadMode::memory);
    const auto is_ab = [](const std::string& n) {
      return n.ends_with("ssm_alpha.weight") || n.ends_with("ssm_beta.weight");
    };
    gguf::Writer w;
    for (const std::string& key : src.key_order) w.set(key, src.kv.at(key));
    for (const gguf::TensorInfo& t : src.tensors)
      w.add_tensor(t.name, is_ab(t.name) ? gguf::TensorType::f32 : t.tensor_type(), t.ne);
    const std::string path = (std::filesystem::temp_directory_path() / cat("ternlab-test-", getpid(), "-f32-beta.gguf")).string();
    int widened = 0;
    w.write(path, [&](std::size_t i, const gguf::TensorInfo&, std::span<std::uint8_t> out) {
      const gguf::TensorInfo& t = src.tensors[i];
      const auto bytes = src.data(t);
      if (!is_ab(t.name)) {
        std::memcpy(out.data(), bytes.data(), out.size());
        return;
      }
      REQUIRE(t.tensor_type() == gguf::TensorType::bf16);
      ++widened;
      for (std::size_t e = 0; e < bytes.size() / 2; ++e) {
        std::uint16_t b;
        std::memcpy(&b, bytes.data() + 2 * e, 2);
        const std::uint32_t bits = (std::uint32_t(b) << 16) | 0x5a5au;  // below the next BF16 value
        std::memcpy(out.data() + 4 * e, &bits, 4);
      }
    });
    REQUIRE(widened > 0);
    auto m = Model::load(path);
    Session s = m->new_session();
    const auto got = m->forward(s, kPrompt, true);
    auto original = Model::load(tiny_path());
    Session so = original->new_session();
    const auto narrowed = original->forward(so, kPrompt, true);
    test::ReferenceModel ref(path);
    const Eigen::MatrixXd want = ref.forward(kPrompt);
    std::filesystem::remove(path);
    const int V = m->config().n_vocab;
    double max_logit = 0, moved = 0;
    std::vector<double> per_position(kPrompt.size(), 0.0);
    for (std::size_t t = 0; t < kPrompt.size(); ++t)
      for (int v = 0; v < V; ++v) {
        const std::size_t i = t * std::size_t(V) + std::size_t(v);
        per_position[t] = std::max(per_position[t], std::fabs(double(got[i]) - want(Eigen::Index(t), v)));
        max_logit = std::max(max_logit, std::fabs(want(Eigen::Index(t), v)));
        moved = std::max(moved, std::fabs(double(got[i]) - double(narrowed[i])));
      }
    MESSAGE("F32 beta/alpha: engine vs reference, first positions ", per_position[0], " ", per_position[1],
            "; vs the BF16 original ", moved);
    CHECK(moved > 0.0);  // the low bits reached the sums
    // The same bound as the BF16 file's engine-vs-reference test above, for the same reason.
    for (std::size_t t = 0; t < 3 && t < kPrompt.size(); ++t) CHECK(per_position[t] < 1e-5 * max_logit);
  }

  TEST_CASE("decode after prefill equals token-by-token decode; the chunked Gated DeltaNet within rounding of it") {
    // Two threads too: a prompt's Gated DeltaNet runs every token's conv in one job and its heads
    // in another, each thread walking its own channels and heads. gdn_chunk 0 runs the recurrence
    // token by token (bit-exact against decoding); 4 runs the chunked form, chunks of 4 and 1
    // tokens in each 5-token gemm batch.
    for (int threads : {1, 2})
      for (int gdn_chunk : {0, 4}) {
        CAPTURE(threads);
        CAPTURE(gdn_chunk);
        LoadOptions o;
        o.prefill_chunk = 5;  // several gemm chunks, one of them partial
        o.threads = threads;
        o.gdn_chunk = gdn_chunk;
        auto m = Model::load(tiny_path(), o);
        Session a = m->new_session(), b = m->new_session();
        const auto batched = m->forward(a, kPrompt, true);
        std::vector<float> stepped;
        for (auto t : kPrompt) {
          const auto l = m->forward(b, std::span(&t, 1));
          stepped.insert(stepped.end(), l.begin(), l.end());
        }
        REQUIRE(batched.size() == stepped.size());
        const std::size_t V = std::size_t(m->config().n_vocab);
        double diff = 0, max_logit = 0;
        std::vector<double> per_position(kPrompt.size(), 0.0);
        for (std::size_t i = 0; i < batched.size(); ++i) {
          per_position[i / V] = std::max(per_position[i / V], double(std::fabs(batched[i] - stepped[i])));
          max_logit = std::max(max_logit, double(std::fabs(stepped[i])));
        }
        std::string by_position;
        for (const double d : per_position) {
          diff = std::max(diff, d);
          char cell[32];
          std::snprintf(cell, sizeof cell, " %.3g", d);
          by_position += cell;
        }
        MESSAGE("prefill (gemm) vs token-by-token (gemv): max |logit diff| ", diff, " of max |logit| ", max_logit,
                "; by position:", by_position);
        const std::int32_t next = argmax(std::span(batched).last(std::size_t(m->config().n_vocab)));
        if (gdn_chunk == 0) {
          // gemm and gemv kernels promise identical bits per row, and the rest of the layer runs the
          // same code per token: the results must be bit-identical.
          CHECK(diff == 0.0);
        } else {
          // The chunked sums round differently (~1e-7 relative, vector-ops suite), so until a later
          // activation's q8_K rounding flips the logits stay within 1e-5 of their range. A flip (one
          // quantum of an activation) persists in the state and the KV cache and moves them by up to
          // ~1% of their range, as in the reference check above: 2% bounds it. Every build computes
          // the same bits, so where this fixture flips is fixed. Not zero: the chunked form ran.
          CHECK(diff > 0.0);
          CHECK(per_position[0] <= 1e-5 * max_logit);
          CHECK(diff <= 0.02 * max_logit);
          std::vector<float> last(stepped.end() - std::ptrdiff_t(V), stepped.end());
          const std::int32_t want_next = argmax(std::span(last));
          const float top = last[std::size_t(want_next)];
          last[std::size_t(want_next)] = -INFINITY;
          if (top - *std::max_element(last.begin(), last.end()) > 2 * diff) CHECK(next == want_next);  // a clear winner
        }
        // The last token's logits alone: the earlier chunks skip their heads, and the rest is unchanged.
        Session c = m->new_session();
        const auto last = m->forward(c, kPrompt);
        CHECK(std::vector<float>(batched.end() - std::ptrdiff_t(last.size()), batched.end()) == last);
        const auto after = m->forward(a, std::span(&next, 1));
        if (gdn_chunk == 0) CHECK(m->forward(b, std::span(&next, 1)) == after);
        CHECK(m->forward(c, std::span(&next, 1)) == after);
      }
  }

  TEST_CASE("a reset session decodes as a fresh one") {
    auto m = Model::load(tiny_path());
    Session used = m->new_session(), fresh = m->new_session();
    m->forward(used, kPrompt);  // states, conv windows and KV caches all non-empty
    REQUIRE(used.pos == int(kPrompt.size()));
    m->reset_session(used);
    CHECK(used.pos == 0);
    // Bit-identical logits at every position, prompt and a decoded token alike: a state left
    // non-zero or a KV row left behind changes them.
    CHECK(m->forward(used, kPrompt, true) == m->forward(fresh, kPrompt, true));
    const std::int32_t next = 7;
    CHECK(m->forward(used, std::span(&next, 1)) == m->forward(fresh, std::span(&next, 1)));
    // A session of another shape (here one layer short) is refused.
    Session foreign = m->new_session();
    foreign.state.pop_back();
    CHECK_THROWS_WITH_AS(m->reset_session(foreign), doctest::Contains("another model"), Error);
  }

  TEST_CASE("greedy tokens and perplexity are identical in every layout") {
    const auto text = random_tokens(kEmulated ? 4 : 8, 512, 5);
    const std::vector<std::int32_t> prompt(kPrompt.begin(), kPrompt.begin() + (kEmulated ? 2 : 5));
    // The yardstick: the file's own layout through the scalar reference kernel. Every other
    // (layout, kernel, file type) is compared with it; that one combination is not re-run.
    LoadOptions ref_opts;
    ref_opts.layout = "pq2_0";
    ref_opts.kernel = "reference/scalar";
    const auto ref_model = Model::load(tiny_path(142), ref_opts);
    std::vector<std::vector<float>> want_logits;
    const std::vector<std::int32_t> want = greedy(*ref_model, prompt, 3, &want_logits);
    const double want_ppl = perplexity(*ref_model, text, 8).value();
    int compared = 0;
    for (const LayoutInfo* layout : all_layouts()) {
      for (int type : {142, 143}) {
        // The PTQ1_0 twin carries the same trits: read it into the two stock layouts only.
        if (type == 143 && layout->gguf_type < 0) continue;
        LoadOptions o;
        o.layout = std::string(layout->name);
        // The expected skips: the tiny model's matrices have power-of-two row counts, so a layout
        // whose blocks hold another number of rows (the test-only t2w3) cannot take them; and its
        // scales are fp16 values that a layout with another scale format (t2p-e4m3, ...) cannot
        // hold exactly, so the exact repack refuses. Either must say so naming the layout. Any
        // other load failure fails the test.
        // A layout whose one scale covers 256 weights or the whole tensor (tq2_0, tq1_0, i2_s)
      // cannot hold the model's per-128 scales either: the exact repack refuses, naming the tensor.
      const bool fits = (layout->rows & (layout->rows - 1)) == 0 && layout->scale_format() == ScaleFormat::fp16 &&
                        layout->scale_group() <= 128 && !layout->per_tensor_scale();
        std::unique_ptr<Model> m;
        try {
          m = Model::load(tiny_path(type), o);
        } catch (const Error& e) {
          CHECK_MESSAGE(!fits, "layout ", layout->name, " failed to load: ", std::string(e.what()));
          CHECK(std::string(e.what()).find(layout->name) != std::string::npos);
          MESSAGE("expected skip: layout ", layout->name, " (", layout->rows, " rows per block): ", std::string(e.what()));
          continue;
        }
        CHECK_MESSAGE(fits, "layout ", layout->name, " loaded matrices whose rows are no multiple of ", layout->rows);
        for (const auto& k : kernels_for(*layout)) {
          if (type == 142 && layout->name == "pq2_0" && k.name() == "reference/scalar") continue;  // the yardstick
          o.kernel = k.name();
          if (m->kernel().name() != k.name()) m = Model::load(tiny_path(type), o);
          std::vector<std::vector<float>> logits;
          const auto got = greedy(*m, prompt, 3, &logits);
          const double ppl = perplexity(*m, text, 8).value();
          ++compared;
          double diff = 0;
          for (std::size_t i = 0; i < logits.size(); ++i)
            for (std::size_t j = 0; j < logits[i].size(); ++j)
              diff = std::max(diff, double(std::fabs(logits[i][j] - want_logits[i][j])));
          MESSAGE(layout->name, " from type ", type, " kernel ", k.name(), ": max |logit diff| ", diff,
                  ", perplexity ", ppl);
          CHECK(got == want);
          CHECK(diff == 0.0);  // every kernel returns the same bits (kernels/kernel.hpp)
          CHECK(std::fabs(ppl - want_ppl) < 1e-4);
          CHECK(max_abs(logits[0]) > 0.0);
        }
      }
    }
    CHECK(want.size() == 3);
    MESSAGE("(layout, kernel, file type) combinations compared with the reference: ", compared);
    CHECK(compared >= int(all_layouts().size()));
  }

  TEST_CASE("an exact load into another scale format refuses; the requantising load rounds and reports") {
    LoadOptions o;
    o.layout = "t2p-bf16";
    test::check_error([&] { Model::load(tiny_path(), o); }, "output.weight", "t2p-bf16", "bf16", "refuses");
    o.requantise_scales = true;
    const auto lossy = Model::load(tiny_path(), o);
    const ScaleRequantisation& r = lossy->scale_requantisation();
    MESSAGE("bf16 requantisation: ", r.changed, " of ", r.scales, " scales moved, max relative error ", r.max_rel_error,
            " (", r.worst, "), mean ", r.mean_rel_error);
    CHECK(r.changed > 0);
    CHECK(r.changed <= r.scales);
    CHECK(r.max_rel_error > 0);
    CHECK(r.max_rel_error <= 0x1p-8);  // half a unit in bf16's 8th significant bit
    CHECK(r.mean_rel_error <= r.max_rel_error);
    CHECK(r.worst.find(".weight row ") != std::string::npos);
    const auto exact = Model::load(tiny_path());
    CHECK(exact->scale_requantisation().scales == 0);
    Session a = lossy->new_session(), b = exact->new_session();
    const std::vector<float> la = lossy->forward(a, kPrompt), lb = exact->forward(b, kPrompt);
    CHECK(la != lb);  // the rounded scales reach the logits
    CHECK(std::all_of(la.begin(), la.end(), [](float v) { return std::isfinite(v); }));
  }

  TEST_CASE("mmap and memory loads give the same logits") {
    LoadOptions a, b;
    a.mode = gguf::LoadMode::mmap;
    b.mode = gguf::LoadMode::memory;
    b.threads = 2;
    auto ma = Model::load(tiny_path(), a), mb = Model::load(tiny_path(), b);
    Session sa = ma->new_session(), sb = mb->new_session();
    CHECK(ma->forward(sa, kPrompt) == mb->forward(sb, kPrompt));
  }

  TEST_CASE("a planner-measured kernel gives the estimate's logits, and says what it measured") {
    const std::string wisdom = (std::filesystem::temp_directory_path() / cat("ternlab-model-wisdom-", getpid(), ".toml")).string();
    for (const char* layout : {"t2w", "t2r"}) {
      CAPTURE(layout);
      LoadOptions est, mea;
      est.layout = mea.layout = layout;
      mea.plan = PlanMode::measure;
      mea.wisdom = wisdom;
      auto me = Model::load(tiny_path(), est), mm = Model::load(tiny_path(), mea);
      Session se = me->new_session(), sm = mm->new_session();
      CHECK(me->forward(se, kPrompt) == mm->forward(sm, kPrompt));
      // Measured where the layout has SIMD kernels here; a reference-only layout (t2r on aarch64)
      // keeps the estimate, which says so.
      const bool simd = kernels_for(find_layout(layout)).size() > 1;
      const auto& notes = mm->kernel_notes();
      CHECK(std::any_of(notes.begin(), notes.end(), [&](const std::string& n) {
        return n.starts_with(mm->kernel().name()) && n.find(simd ? "measured" : "chosen") != std::string::npos;
      }));
    }
    std::filesystem::remove(wisdom);
  }

  TEST_CASE("sampling: greedy at temperature 0, reproducible with a seed, top-p keeps the head") {
    const std::vector<float> logits = {0.0f, 5.0f, 1.0f, 4.9f};
    CHECK(Sampler({0.0f, 1.0f, 1}).sample(logits) == 1);
    Sampler a({1.0f, 0.9f, 42}), b({1.0f, 0.9f, 42});
    for (int i = 0; i < 50; ++i) {
      const auto x = a.sample(logits);
      CHECK(x == b.sample(logits));
      CHECK((x == 1 || x == 3));  // top-p 0.9 leaves only the two large logits
    }
  }

  TEST_CASE("a profile of one decode token accounts for every op kind") {
    auto m = Model::load(tiny_path());
    const OpProfile p = profile_decode(*m, kPrompt);
    CHECK(p.seconds[OpProfile::matmul] > 0);
    CHECK(p.seconds[OpProfile::gdn] > 0);
    CHECK(p.seconds[OpProfile::attention] > 0);
    CHECK(p.seconds[OpProfile::hadamard] > 0);
  }

  TEST_CASE("perplexity windows: every token scored once, strided windows score only what is new, errors and divergence") {
    auto m = Model::load(tiny_path());
    const auto text = random_tokens(kEmulated ? 24 : 70, m->config().n_vocab, 11);
    std::vector<std::int32_t> scored;
    const Perplexity plain = perplexity(*m, text, 16, 0, [&](const float*, std::int32_t next) { scored.push_back(next); });
    // Windows of 16 that do not overlap: the first token of each is context only.
    const std::size_t windows = (text.size() + 15) / 16;
    CHECK(plain.chunk_values.size() == windows);
    CHECK(plain.predicted == std::int64_t(text.size() - windows));
    CHECK(std::int64_t(scored.size()) == plain.predicted);
    CHECK(plain.standard_error() > 0);
    CHECK(plain.standard_error() < plain.value());
    // Strided windows: each token after the first is scored exactly once, in order.
    scored.clear();
    const Perplexity strided = perplexity(*m, text, 16, 4, [&](const float*, std::int32_t next) { scored.push_back(next); });
    CHECK(strided.predicted == std::int64_t(text.size() - 1));
    CHECK(scored == std::vector<std::int32_t>(text.begin() + 1, text.end()));
    // Its first window is the plain run's first window: the same value.
    CHECK(strided.chunk_values.front() == plain.chunk_values.front());
    test::check_error([&] { perplexity(*m, text, 16, 16); }, "stride 16", "below the chunk 16");

    // The divergence of a model from itself is zero; from a lossy copy it is not, and the log
    // ratio it reports is the log of the two perplexities' ratio.
    LoadOptions lossy;
    lossy.layout = "t2p-e8m0";
    lossy.requantise_scales = true;
    auto q = Model::load(tiny_path(), lossy);
    const LogitDivergence same = logit_divergence(*m, *m, text, 16);
    CHECK(same.kl_max == 0);
    CHECK(same.top1_agreement == 1);
    CHECK(same.log_ratio == 0);
    const LogitDivergence d = logit_divergence(*m, *q, text, 16);
    CHECK(d.positions == plain.predicted);
    CHECK(d.kl_mean > 0);
    // The mean and the largest KL against a direct computation from both models' logits on one window.
    const std::vector<std::int32_t> window(text.begin(), text.begin() + 16);
    const auto p = all_logits(*m, window), lq = all_logits(*q, window);
    const int V = m->config().n_vocab;
    double kl_sum = 0, kl_top = 0;
    for (int t = 0; t + 1 < 16; ++t) {
      const float* a = p.data() + t * V;
      const float* b = lq.data() + t * V;
      double za = 0, zb = 0;
      for (int v = 0; v < V; ++v) za += std::exp(double(a[v])), zb += std::exp(double(b[v]));
      double kl = 0;
      for (int v = 0; v < V; ++v) {
        const double pa = std::exp(double(a[v])) / za;
        kl += pa * (std::log(pa) - (double(b[v]) - std::log(zb)));
      }
      kl_sum += kl;
      kl_top = std::max(kl_top, kl);
    }
    const LogitDivergence w = logit_divergence(*m, *q, window, 16);
    CHECK(w.positions == 15);
    CHECK(w.kl_mean == doctest::Approx(kl_sum / 15).epsilon(1e-6));
    CHECK(w.kl_max == doctest::Approx(kl_top).epsilon(1e-6));
    CHECK(d.ref_ppl.value() == doctest::Approx(plain.value()).epsilon(1e-12));
    CHECK(d.log_ratio == doctest::Approx(std::log(d.other_ppl.value() / d.ref_ppl.value())).epsilon(1e-9));
    CHECK(d.log_ratio_error > 0);
  }

  TEST_CASE("a peer's format runs the peer's own kernel, named; ternlab's kernel for its bytes when asked") {
    // ggml's TQ2_0 holds this file exactly (one scale per 256 weights). The yardstick: the same
    // file repacked into pq2_0, which every ternlab kernel computes to the same bits.
    const std::string& path = tiny_path(35, 256);
    LoadOptions base;
    base.layout = "pq2_0";
    const auto want_model = Model::load(path, base);
    std::vector<std::vector<float>> want_logits;
    const auto want = greedy(*want_model, kPrompt, 3, &want_logits);
    const auto max_diff = [&](Model& m) {
      std::vector<std::vector<float>> logits;
      CHECK(greedy(m, kPrompt, 3, &logits) == want);
      double d = 0;
      for (std::size_t i = 0; i < logits.size(); ++i)
        for (std::size_t j = 0; j < logits[i].size(); ++j) d = std::max(d, double(std::fabs(logits[i][j] - want_logits[i][j])));
      return d;
    };
    const std::string path_name = isa_supported(Isa::avx2) ? "/avx2" : "/generic";
    LoadOptions o;
    o.layout = "tq2_0";
    const auto peer = Model::load(path, o);
    CHECK(peer->kernel_name() == "ggml-tq2_0" + path_name);
    REQUIRE(!peer->kernel_notes().empty());
    CHECK(peer->kernel_notes().front().find("ggml TQ2_0's own algorithm") != std::string::npos);
    // ggml's own float order: not the same bits, but the same greedy tokens (checked in max_diff)
    // and a perplexity within the 1% the runner allows a peer. ggml's generic path (aarch64) moves
    // this model's logits and perplexity far more than its rounding explains, an open question
    // (docs/notebook/2026-12-05-zen4-peers.md), so that path is held to 0.5 and 5% until explained.
    const bool avx2 = isa_supported(Isa::avx2);
    const double peer_diff = max_diff(*peer);
    MESSAGE("ggml TQ2_0's own kernel (", peer->kernel_name(), ") against pq2_0: max |logit diff| ", peer_diff);
    CHECK(peer_diff < (avx2 ? 1e-3 : 0.5));
    // 128 tokens: over a short text one q8_K rounding that goes the other way in the peer's order
    // (an activation at a boundary) can move this random model's perplexity by as much as the
    // tolerance itself; a longer text dilutes it, as the runner's default 256 tokens do.
    const auto text = random_tokens(128, want_model->config().n_vocab, 3);
    CHECK(std::fabs(perplexity(*peer, text, 8).value() / perplexity(*want_model, text, 8).value() - 1) < (avx2 ? 1e-2 : 5e-2));
    // Named alone, the peer's kernel brings its format.
    LoadOptions named;
    named.kernel = "ggml-tq2_0";
    CHECK(Model::load(path, named)->kernel_name() == "ggml-tq2_0" + path_name);
    // ternlab's kernel on the peer's bytes: ternlab's bits.
    o.kernel = "slot-mask";
    const auto own = Model::load(path, o);
    CHECK(own->kernel_name().starts_with("slot-mask/"));
    CHECK(max_diff(*own) == 0.0);
    // A peer's kernel for another format is refused, naming both.
    LoadOptions wrong;
    wrong.layout = "t2r";
    wrong.kernel = "bitnet-i2s";
    test::check_error([&] { Model::load(path, wrong); }, "bitnet-i2s", "i2_s", "t2r");
    // BitNet's format holds one scale per tensor: the requantising load runs BitNet's own kernel.
    LoadOptions i2s;
    i2s.layout = "i2_s";
    i2s.requantise_scales = true;
    const auto bitnet = Model::load(path, i2s);
    CHECK(bitnet->kernel_name() == "bitnet-i2s" + path_name);
    CHECK(bitnet->scale_requantisation().changed > 0);
    CHECK(std::isfinite(perplexity(*bitnet, kPrompt, 8).value()));
  }
}
