// Every build of VectorOps (kernels/vector/) returns the bits of the scalar steps it replaces:
// quantize_row_q8k, model::fwht, the Gated DeltaNet head update as model/gated_deltanet.cpp
// specifies it, and in-order dot products. No tolerance: the builds only vectorise across
// independent elements, so any difference is a defect. The chunked Gated DeltaNet form is the one
// exception against its reference (its sums run in another order than the token-by-token steps'):
// it is held to a stated tolerance of an f64 recurrence, and its builds to one another's bits.
#include <cmath>
#include <cstring>
#include <limits>
#include <random>
#include <vector>

#include "kernels/thread_pool.hpp"
#include "kernels/vector/vector_ops.hpp"
#include "model/hadamard.hpp"
#include "tests/support.hpp"

using namespace ternlab;

namespace {

std::vector<float> normal_floats(std::size_t n, std::uint32_t seed, float scale = 1.0f) {
  std::mt19937 g(seed);
  std::normal_distribution<float> d(0.0f, scale);
  std::vector<float> v(n);
  for (float& x : v) x = d(g);
  return v;
}

bool same_bits(const void* a, const void* b, std::size_t bytes) { return std::memcmp(a, b, bytes) == 0; }

// The two passes of model/gated_deltanet.cpp's head update, written as the spec states them.
void gdn_head_steps(float* S, const float* q, const float* k, const float* v, float decay, float beta, float* o,
                    int Dk, int Dv) {
  std::vector<float> mem(static_cast<std::size_t>(Dv), 0.0f);
  for (int i = 0; i < Dk; ++i)
    for (int j = 0; j < Dv; ++j) mem[std::size_t(j)] += (S[i * Dv + j] * decay) * k[i];
  for (int j = 0; j < Dv; ++j) mem[std::size_t(j)] = beta * (v[j] - mem[std::size_t(j)]);
  for (int j = 0; j < Dv; ++j) o[j] = 0.0f;
  for (int i = 0; i < Dk; ++i)
    for (int j = 0; j < Dv; ++j) {
      S[i * Dv + j] = S[i * Dv + j] * decay + k[i] * mem[std::size_t(j)];
      o[j] += S[i * Dv + j] * q[i];
    }
}

// The spec's recurrence (§7.4.6) in f64, token by token, for one value head.
void gdn_steps_f64(std::vector<double>& S, const float* q, const float* k, const float* v, std::int64_t stride, const float* g,
                   const float* beta, int tokens, std::vector<double>& o, int Dk, int Dv) {
  std::vector<double> mem(static_cast<std::size_t>(Dv));
  for (int t = 0; t < tokens; ++t) {
    const float *qt = q + t * stride, *kt = k + t * stride, *vt = v + t * stride;
    const double decay = std::exp(double(g[t]));
    for (double& s : S) s *= decay;
    for (int j = 0; j < Dv; ++j) {
      double m = 0;
      for (int i = 0; i < Dk; ++i) m += S[std::size_t(i * Dv + j)] * kt[i];
      mem[std::size_t(j)] = beta[t] * (vt[j] - m);
    }
    for (int i = 0; i < Dk; ++i)
      for (int j = 0; j < Dv; ++j) S[std::size_t(i * Dv + j)] += kt[i] * mem[std::size_t(j)];
    for (int j = 0; j < Dv; ++j) {
      double r = 0;
      for (int i = 0; i < Dk; ++i) r += S[std::size_t(i * Dv + j)] * qt[i];
      o[std::size_t(t * Dv + j)] = r;
    }
  }
}

}  // namespace

TEST_SUITE("vector-ops") {
  TEST_CASE("the variants: baseline first, the chosen one among them") {
    const auto v = vector_ops_variants();
    REQUIRE(!v.empty());
    CHECK(std::string(v[0]->name) == "baseline");
    bool found = false;
    for (const VectorOps* o : v) found = found || o == &vector_ops();
    CHECK(found);
  }

  TEST_CASE("q8_K quantisation: every build gives quantize_row_q8k's bytes") {
    const int blocks = 12;
    std::vector<float> x = normal_floats(std::size_t(blocks * kQK), 7, 3.0f);
    std::fill(x.begin() + kQK, x.begin() + 2 * kQK, 0.0f);  // block 1: all zero
    x[2 * kQK] = -0.0f;                                     // block 2: ties for the largest magnitude
    x[2 * kQK + 5] = 40.0f;
    x[2 * kQK + 9] = -40.0f;
    x[2 * kQK + 200] = 40.0f;
    x[3 * kQK + 17] = std::numeric_limits<float>::quiet_NaN();  // block 3: a NaN
    x[4 * kQK + 3] = std::numeric_limits<float>::infinity();    // block 4: an infinity
    x[5 * kQK + 255] = -1e-30f;                                 // block 5: tiny values, the last one largest
    for (int j = 0; j < 255; ++j) x[std::size_t(5 * kQK + j)] = 1e-31f * float(j % 7);
    for (int j = 0; j < kQK; ++j) x[std::size_t(6 * kQK + j)] = 0.5f + float(j);  // block 6: many halves to round
    x[7 * kQK + 9] = -50.0f;  // block 7: a tie of opposite signs, the negative one first
    x[7 * kQK + 100] = 50.0f;
    x[8 * kQK + 30] = -60.0f;  // block 8: the largest magnitude negative, alone
    x[9 * kQK + 4] = -std::numeric_limits<float>::infinity();  // block 9: a negative infinity
    for (int j = 0; j < kQK; ++j) x[std::size_t(10 * kQK + j)] = j % 3 == 0 ? -0.0f : 0.0f;  // block 10: signed zeros
    for (int j = 0; j < kQK; ++j) x[std::size_t(11 * kQK + j)] = 1e-39f * float(j % 5);  // block 11: -127 / the largest
    x[11 * kQK + 70] = -1e-38f;                                                                // overflows to an infinity
    std::vector<BlockQ8K> want(static_cast<std::size_t>(blocks));
    quantize_row_q8k(x.data(), want.data(), std::int64_t(x.size()));
    for (const VectorOps* o : vector_ops_variants()) {
      CAPTURE(o->name);
      std::vector<BlockQ8K> got(static_cast<std::size_t>(blocks));
      std::memset(got.data(), 0x5a, got.size() * sizeof(BlockQ8K));
      o->quantize_q8k(x.data(), got.data(), blocks);
      for (int b = 0; b < blocks; ++b) {
        CAPTURE(b);
        CHECK(same_bits(&got[std::size_t(b)], &want[std::size_t(b)], sizeof(BlockQ8K)));
      }
    }
  }

  TEST_CASE("quantize_batch builds the same rows and tiles on one thread and on a pool") {
    const std::int64_t tokens = 6, cols = 640;  // a trailing half block, a partial tile
    const std::vector<float> x = normal_floats(std::size_t(tokens * cols), 11);
    const Q8KBatch one = quantize_batch(x.data(), tokens, cols);
    std::vector<BlockQ8K> rows(std::size_t(tokens * one.blocks()));
    for (std::int64_t t = 0; t < tokens; ++t) {
      std::vector<float> padded(std::size_t(one.blocks() * kQK), 0.0f);
      std::copy(x.begin() + t * cols, x.begin() + (t + 1) * cols, padded.begin());
      quantize_row_q8k(padded.data(), rows.data() + t * one.blocks(), std::int64_t(padded.size()));
    }
    const Q8KBatch ref = batch_from_rows(rows, tokens, cols);
    ThreadPool pool(3);
    const Q8KBatch many = quantize_batch(x.data(), tokens, cols, pool);
    for (const Q8KBatch* b : {&one, &many}) {
      REQUIRE(b->rows.size() == ref.rows.size());
      REQUIRE(b->tiles.size() == ref.tiles.size());
      CHECK(same_bits(b->rows.data(), ref.rows.data(), ref.rows.size() * sizeof(BlockQ8K)));
      CHECK(same_bits(b->tiles.data(), ref.tiles.data(), ref.tiles.size() * sizeof(BlockQ8Kx4)));
    }
    // The tiles hold the rows in q8_Kx4 order, missing tokens zero.
    CHECK(deinterleave_x4(ref.tile(1)[2], 1).qs[100] == ref.row(5)[2].qs[100]);
    CHECK(ref.tile(1)[0].d[3] == 0.0f);
  }

  TEST_CASE("the Hadamard transform and the sign multiply: model::fwht's bits") {
    for (int n = 1; n <= 2048; n *= 2) {
      CAPTURE(n);
      const std::vector<float> x = normal_floats(static_cast<std::size_t>(n), std::uint32_t(n));
      std::vector<float> want = x;
      model::fwht(want.data(), n);
      for (const VectorOps* o : vector_ops_variants()) {
        CAPTURE(o->name);
        std::vector<float> got = x;
        o->fwht(got.data(), n);
        CHECK(same_bits(got.data(), want.data(), 4 * static_cast<std::size_t>(n)));
      }
    }
    const std::vector<float> x = normal_floats(1000, 3), s = normal_floats(1000, 4);
    for (const VectorOps* o : vector_ops_variants()) {
      std::vector<float> got = x;
      o->multiply(got.data(), s.data(), 1000);
      bool all = true;
      for (int i = 0; i < 1000; ++i) {
        const float p = x[std::size_t(i)] * s[std::size_t(i)];
        all = all && same_bits(&got[std::size_t(i)], &p, 4);
      }
      CHECK(all);
    }
  }

  TEST_CASE("the Gated DeltaNet head updates: the spec's steps, bit for bit, head by head") {
    for (const auto& [Dk, Dv] : {std::pair{128, 128}, std::pair{32, 64}, std::pair{16, 40}, std::pair{5, 3}}) {
      for (int n : {1, 2, 5}) {  // one head; the overlap once; and through the middle heads
        CAPTURE(Dk);
        CAPTURE(Dv);
        CAPTURE(n);
        const auto size = [](int a) { return static_cast<std::size_t>(a); };
        const std::vector<float> S0 = normal_floats(size(n * Dk * Dv), 21, 0.3f);
        const std::vector<float> q = normal_floats(size(n * Dk), 22), k = normal_floats(size(n * Dk), 23);
        const std::vector<float> v = normal_floats(size(n * Dv), 24);
        const auto decay = [](int h) { return 0.93f - 0.01f * float(h); };
        const auto beta = [](int h) { return 0.41f + 0.02f * float(h); };
        std::vector<float> S_want = S0, o_want(size(n * Dv));
        for (int step = 0; step < 3; ++step)
          for (int h = 0; h < n; ++h)
            gdn_head_steps(S_want.data() + h * Dk * Dv, q.data() + h * Dk, k.data() + h * Dk, v.data() + h * Dv, decay(h),
                           beta(h), o_want.data() + h * Dv, Dk, Dv);
        for (const VectorOps* o : vector_ops_variants()) {
          CAPTURE(o->name);
          std::vector<float> S = S0, out(size(n * Dv), -1.0f), mem(size(n * Dv), -1.0f);
          std::vector<GdnHead> heads;
          for (int h = 0; h < n; ++h)
            heads.push_back({S.data() + h * Dk * Dv, q.data() + h * Dk, k.data() + h * Dk, v.data() + h * Dv, decay(h),
                             beta(h), mem.data() + h * Dv, out.data() + h * Dv});
          for (int step = 0; step < 3; ++step) o->gdn_heads(heads.data(), n, Dk, Dv);
          CHECK(same_bits(S.data(), S_want.data(), 4 * S.size()));
          CHECK(same_bits(out.data(), o_want.data(), 4 * out.size()));
        }
      }
    }
  }

  TEST_CASE("the chunked Gated DeltaNet: the recurrence's result within its tolerance, and one set of bits in every build") {
    // Keys and queries as the model feeds them: unit length, the query scaled by 1/sqrt(Dk). The
    // decays run from none (g = 0) to strong (g = -40: e^-40 underflows the chunk's longer spans),
    // and the `aligned` keys share one direction (k.k near 1), which makes the triangular solve's
    // coefficients large.
    for (const auto& [Dk, Dv] : {std::pair{128, 128}, std::pair{16, 40}, std::pair{5, 3}})
      for (int tokens : {1, 7, 37, 64})
        for (bool aligned : {false, true}) {
          CAPTURE(Dk);
          CAPTURE(Dv);
          CAPTURE(tokens);
          CAPTURE(aligned);
          const int n = 3;  // value heads reading one key head
          const auto size = [](std::int64_t a) { return static_cast<std::size_t>(a); };
          const std::int64_t stride = 2 * Dk + n * Dv;  // one token's row: q | k | every head's v
          std::vector<float> rows = normal_floats(size(tokens * stride), 41);
          const std::vector<float> base = normal_floats(size(Dk), 42);
          for (int t = 0; t < tokens; ++t)
            for (int part = 0; part < 2; ++part) {
              float* x = rows.data() + t * stride + part * Dk;
              if (aligned && part == 1)
                for (int i = 0; i < Dk; ++i) x[i] = base[size(i)] + 0.2f * x[i];
              double sq = 0;
              for (int i = 0; i < Dk; ++i) sq += double(x[i]) * x[i];
              const float scale = float(1.0 / std::sqrt(sq)) * (part == 0 ? 1.0f / std::sqrt(float(Dk)) : 1.0f);
              for (int i = 0; i < Dk; ++i) x[i] *= scale;
            }
          std::vector<float> g(size(n * tokens)), beta(size(n * tokens));
          for (int h = 0; h < n; ++h)
            for (int t = 0; t < tokens; ++t) {
              g[size(h * tokens + t)] = h == 0 ? 0.0f : (h == 1 ? -0.05f * float(t % 5) : (t % 9 == 4 ? -40.0f : -0.7f));
              beta[size(h * tokens + t)] = 0.05f + 0.9f * float((t * 7 + h * 3) % 11) / 10.0f;
            }
          const std::vector<float> S0 = normal_floats(size(n * Dk * Dv), 43, 0.3f);
          const float *q = rows.data(), *k = rows.data() + Dk;
          const auto v = [&](int h) { return rows.data() + 2 * Dk + h * Dv; };
          // The reference, and the f32 token-by-token steps (gdn_head_steps), whose distance from
          // it calibrates the tolerance.
          std::vector<std::vector<double>> S_ref, o_ref;
          double o_scale = 0, s_scale = 0, steps_err = 0;
          for (int h = 0; h < n; ++h) {
            S_ref.emplace_back(S0.begin() + h * Dk * Dv, S0.begin() + (h + 1) * Dk * Dv);
            o_ref.emplace_back(size(tokens * Dv));
            gdn_steps_f64(S_ref[size(h)], q, k, v(h), stride, g.data() + h * tokens, beta.data() + h * tokens, tokens,
                          o_ref[size(h)], Dk, Dv);
            for (double x : o_ref[size(h)]) o_scale = std::max(o_scale, std::fabs(x));
            for (double x : S_ref[size(h)]) s_scale = std::max(s_scale, std::fabs(x));
            std::vector<float> S(S0.begin() + h * Dk * Dv, S0.begin() + (h + 1) * Dk * Dv), o(size(Dv));
            for (int t = 0; t < tokens; ++t) {
              gdn_head_steps(S.data(), q + t * stride, k + t * stride, v(h) + t * stride, std::exp(g[size(h * tokens + t)]),
                             beta[size(h * tokens + t)], o.data(), Dk, Dv);
              for (int j = 0; j < Dv; ++j)
                steps_err = std::max(steps_err, std::fabs(o[size(j)] - o_ref[size(h)][size(t * Dv + j)]));
            }
          }
          // The check can fail: the last token's rate 1% higher moves its read-out past the bound.
          {
            std::vector<float> S = S0, out(size(tokens * n * Dv)), scratch(gdn_chunk_scratch(tokens, Dk, Dv));
            std::vector<float> wrong_beta = beta;
            wrong_beta[size(tokens - 1)] *= 1.01f;
            const GdnChunkHead head{S.data(), v(0), stride, g.data(), wrong_beta.data(), out.data(), n * Dv};
            vector_ops().gdn_chunk({q, k, stride, tokens}, &head, 1, Dk, Dv, scratch.data());
            double moved = 0;
            for (int j = 0; j < Dv; ++j)
              moved = std::max(moved, std::fabs(out[size((tokens - 1) * n * Dv + j)] - o_ref[0][size((tokens - 1) * Dv + j)]));
            CHECK(moved > 2e-5 * o_scale);
          }
          std::vector<float> first_S, first_o;
          for (const VectorOps* ops : vector_ops_variants()) {
            CAPTURE(ops->name);
            std::vector<float> S = S0, out(size(tokens * n * Dv), -1.0f);
            std::vector<float> scratch(gdn_chunk_scratch(tokens, Dk, Dv), std::numeric_limits<float>::quiet_NaN());
            std::vector<GdnChunkHead> heads;
            for (int h = 0; h < n; ++h)
              heads.push_back({S.data() + h * Dk * Dv, v(h), stride, g.data() + h * tokens, beta.data() + h * tokens,
                               out.data() + h * Dv, n * Dv});
            ops->gdn_chunk({q, k, stride, tokens}, heads.data(), n, Dk, Dv, scratch.data());
            double o_err = 0, s_err = 0;
            for (int h = 0; h < n; ++h) {
              for (int t = 0; t < tokens; ++t)
                for (int j = 0; j < Dv; ++j)
                  o_err = std::max(o_err, std::fabs(out[size(t * n * Dv + h * Dv + j)] - o_ref[size(h)][size(t * Dv + j)]));
              for (int e = 0; e < Dk * Dv; ++e)
                s_err = std::max(s_err, std::fabs(S[size(h * Dk * Dv + e)] - S_ref[size(h)][size(e)]));
            }
            if (first_S.empty())
              MESSAGE(std::string(aligned ? "aligned keys" : "random keys"), ", Dk ", Dk, " Dv ", Dv, " tokens ", tokens,
                      ": chunked |o err| ", o_err / o_scale, ", |S err| ", s_err / s_scale,
                      " of their largest; token by token in f32 ", steps_err / o_scale);
            // f32 rounding, ~6e-8 a step, grows with the sums' lengths (Dk + tokens terms) and
            // through the triangular solve; 2e-5 of the largest value bounds it with headroom
            // (the messages show the measured errors beside the f32 steps' own).
            CHECK(o_err <= 2e-5 * o_scale);
            CHECK(s_err <= 2e-5 * s_scale);
            if (first_S.empty()) {
              first_S = S;
              first_o = out;
            } else {
              CHECK(same_bits(S.data(), first_S.data(), 4 * S.size()));
              CHECK(same_bits(out.data(), first_o.data(), 4 * out.size()));
            }
          }
        }
  }

  TEST_CASE("tiles_dot: each lane the in-order fused multiply-adds of its column, in f32 and in BF16") {
    constexpr int T = VectorOps::kLaneTile;
    const int n = 777;
    const std::vector<float> x = normal_floats(static_cast<std::size_t>(n), 32);
    // 1 to 9 tiles: the groups of four, every remainder, and two groups with a remainder.
    for (int tiles = 1; tiles <= 9; ++tiles) {
      CAPTURE(tiles);
      const std::size_t count = static_cast<std::size_t>(tiles * n * T);
      std::vector<float> w = normal_floats(count, 31 + std::uint64_t(tiles));
      std::vector<std::uint16_t> w16(count);
      for (std::size_t i = 0; i < count; ++i) {  // BF16 by truncation; w16 then holds exactly w's values
        std::uint32_t bits;
        std::memcpy(&bits, &w[i], 4);
        w16[i] = std::uint16_t(bits >> 16);
        bits &= 0xffff0000u;
        std::memcpy(&w[i], &bits, 4);
      }
      std::vector<float> want(static_cast<std::size_t>(tiles * T), 0.0f);
      for (int j = 0; j < tiles; ++j)
        for (int l = 0; l < T; ++l)
          for (int i = 0; i < n; ++i)
            want[std::size_t(j * T + l)] = std::fma(w[std::size_t((j * n + i) * T + l)], x[std::size_t(i)], want[std::size_t(j * T + l)]);
      for (const VectorOps* o : vector_ops_variants()) {
        CAPTURE(o->name);
        std::vector<float> got(want.size(), -1.0f), got16(want.size(), -1.0f);
        o->tiles_dot_f32(w.data(), tiles, n, x.data(), got.data());
        o->tiles_dot_bf16(w16.data(), tiles, n, x.data(), got16.data());
        CHECK(same_bits(got.data(), want.data(), 4 * got.size()));
        CHECK(same_bits(got16.data(), want.data(), 4 * got16.size()));
      }
    }
  }

  TEST_CASE("tiles_dot_queries: each query's lanes the bits of tiles_dot alone, fp32 and BF16") {
    constexpr int T = VectorOps::kLaneTile;
    const int n = 96;
    // Query counts below, at and past every build's group (2 to 8); one tile and several; the
    // outputs packed and in rows wider than the tiles (a thread's share of a wider table).
    for (const int tiles : {1, 3, 5}) {
      for (const int queries : {1, 2, 5, 8, 13}) {
        for (const std::int64_t pad : {0, 2 * T}) {
          CAPTURE(tiles);
          CAPTURE(queries);
          CAPTURE(pad);
          const std::int64_t stride = tiles * T + pad;
          const std::vector<float> w = normal_floats(std::size_t(tiles * n * T), 50 + std::uint32_t(tiles));
          const std::vector<float> x = normal_floats(std::size_t(queries * n), 51 + std::uint32_t(queries));
          // BF16 weights: each float's top half; widened they are those floats cut to 8 bits of mantissa.
          std::vector<std::uint16_t> w16(w.size());
          std::vector<float> w_cut(w.size());
          for (std::size_t i = 0; i < w.size(); ++i) {
            std::uint32_t bits;
            std::memcpy(&bits, &w[i], 4);
            w16[i] = std::uint16_t(bits >> 16);
            bits &= 0xffff0000u;
            std::memcpy(&w_cut[i], &bits, 4);
          }
          const auto expected = [&](const std::vector<float>& weights) {
            std::vector<float> want(std::size_t(queries * stride), -1.0f);
            for (int r = 0; r < queries; ++r)
              for (int j = 0; j < tiles; ++j)
                for (int l = 0; l < T; ++l) {
                  float sum = 0.0f;
                  for (int i = 0; i < n; ++i) sum = std::fma(weights[std::size_t((j * n + i) * T + l)], x[std::size_t(r * n + i)], sum);
                  want[std::size_t(r * stride + j * T + l)] = sum;
                }
            return want;
          };
          const std::vector<float> want = expected(w), want16 = expected(w_cut);
          for (const VectorOps* o : vector_ops_variants()) {
            CAPTURE(o->name);
            // Cells outside the tiles' columns keep their -1: nothing is written past a query's tiles.
            std::vector<float> got(want.size(), -1.0f), got16(want.size(), -1.0f);
            o->tiles_dot_queries_f32(w.data(), tiles, n, x.data(), queries, got.data(), stride);
            o->tiles_dot_queries_bf16(w16.data(), tiles, n, x.data(), queries, got16.data(), stride);
            CHECK(same_bits(got.data(), want.data(), 4 * want.size()));
            CHECK(same_bits(got16.data(), want16.data(), 4 * want16.size()));
          }
        }
      }
    }
  }

  TEST_CASE("weighted_sums: each element of each query the in-order fused multiply-adds of its weighted rows") {
    // Widths around the builds' runs (one to eight registers of 4, 8 or 16 floats) with
    // remainders; rows from one to past a tile of positions; query counts below, at and past
    // every build's group (2 to 8), so each group size and remainder runs; strides wider than n.
    for (const int n : {1, 7, 16, 40, 64, 100, 128, 256, 300}) {
      for (const int rows : {1, 2, 17, 45}) {
        for (const int queries : {1, 3, 8, 11}) {
          CAPTURE(n);
          CAPTURE(rows);
          CAPTURE(queries);
          const std::int64_t stride = n + 13, w_stride = rows + 5;
          const std::vector<float> x = normal_floats(std::size_t(rows * stride), 40 + std::uint32_t(n));
          const std::vector<float> w = normal_floats(std::size_t(queries * w_stride), 41 + std::uint32_t(rows), 0.3f);
          std::vector<float> want(std::size_t(queries * n), 0.0f);
          for (int q = 0; q < queries; ++q)
            for (int r = 0; r < rows; ++r)
              for (int i = 0; i < n; ++i)
                want[std::size_t(q * n + i)] = std::fma(w[std::size_t(q * w_stride + r)], x[std::size_t(r * stride + i)], want[std::size_t(q * n + i)]);
          for (const VectorOps* o : vector_ops_variants()) {
            CAPTURE(o->name);
            std::vector<float> got(want.size() + 1, -1.0f);
            o->weighted_sums(x.data(), stride, rows, w.data(), w_stride, queries, got.data(), n);
            CHECK(same_bits(got.data(), want.data(), 4 * want.size()));
            CHECK(got.back() == -1.0f);  // nothing written past the last query's n
          }
        }
      }
    }
  }

  TEST_CASE("conv_taps: each element its taps' in-order sum from zero, in every build") {
    // Lengths around every build's register (4, 8, 16 floats) with remainders; 1 to 4 taps; the
    // weights' taps a stride apart wider than n, as the conv's channels slice them.
    for (const std::int64_t n : {1, 5, 16, 37, 128, 640}) {
      for (const int taps : {1, 2, 4}) {
        CAPTURE(n);
        CAPTURE(taps);
        const std::int64_t w_stride = n + 3;
        const std::vector<float> w = normal_floats(std::size_t(taps * w_stride), 60 + std::uint32_t(n));
        std::vector<std::vector<float>> x;
        std::vector<const float*> window;
        for (int t = 0; t < taps; ++t) x.push_back(normal_floats(std::size_t(n), 61 + std::uint32_t(t)));
        for (const auto& row : x) window.push_back(row.data());
        std::vector<float> want(static_cast<std::size_t>(n));
        for (std::int64_t j = 0; j < n; ++j) {
          float sum = 0.0f;
          for (int t = 0; t < taps; ++t) sum += x[std::size_t(t)][std::size_t(j)] * w[std::size_t(t * w_stride + j)];
          want[std::size_t(j)] = sum;
        }
        for (const VectorOps* o : vector_ops_variants()) {
          CAPTURE(o->name);
          std::vector<float> got(std::size_t(n) + 1, -1.0f);
          o->conv_taps(window.data(), w.data(), w_stride, taps, got.data(), n);
          CHECK(same_bits(got.data(), want.data(), 4 * want.size()));
          CHECK(got.back() == -1.0f);
        }
      }
    }
  }

  TEST_CASE("squares_sums: each row the bits of its own in-order double sum, in every build") {
    // Row counts below, at and past a block of eight (fewer than eight rows run as scalar chains),
    // lengths around the transposed step of eight with remainders, a stride wider than n; large
    // and tiny magnitudes so that a reassociated sum would round differently.
    for (const int rows : {1, 3, 8, 11, 16, 17}) {
      for (const std::int64_t n : {1, 7, 8, 9, 64, 100, 256}) {
        CAPTURE(rows);
        CAPTURE(n);
        const std::int64_t stride = n + 5;
        std::vector<float> x = normal_floats(std::size_t(rows * stride), 70 + std::uint32_t(n));
        for (std::size_t i = 0; i < x.size(); i += 3) x[i] *= 1e3f;
        for (std::size_t i = 1; i < x.size(); i += 5) x[i] *= 1e-3f;
        std::vector<double> want(static_cast<std::size_t>(rows));
        for (int r = 0; r < rows; ++r) {
          double sum = 0;
          for (std::int64_t i = 0; i < n; ++i) {
            const double v = x[std::size_t(r * stride + i)];
            sum += v * v;
          }
          want[std::size_t(r)] = sum;
        }
        for (const VectorOps* o : vector_ops_variants()) {
          CAPTURE(o->name);
          std::vector<double> got(std::size_t(rows) + 1, -1.0);
          o->squares_sums(x.data(), stride, rows, n, got.data());
          CHECK(std::memcmp(got.data(), want.data(), want.size() * sizeof(double)) == 0);
          CHECK(got.back() == -1.0);  // nothing written past the last row
        }
      }
    }
  }

  TEST_CASE("softmax: every build gives the baseline's bits, within 4e-6 of the double-precision softmax") {
    // Rows around the 16 running sums and every build's register (1 to 16 floats), with remainders
    // and up to a long context; scores spread so that some terms fall under e^-87.3 and are 0.
    for (const std::int64_t n : {1, 3, 15, 16, 17, 40, 100, 513, 2048}) {
      CAPTURE(n);
      const float scale = 0.0625f;
      std::vector<float> scores = normal_floats(std::size_t(n), 90 + std::uint32_t(n), 200.0f);
      if (n > 2) scores[std::size_t(n / 2)] = 2000.0f;  // one clear winner; the far tail underflows
      std::vector<double> truth(static_cast<std::size_t>(n));
      double largest = -1e300, sum = 0;
      for (const float x : scores) largest = std::max(largest, double(x * scale));
      for (std::int64_t i = 0; i < n; ++i) sum += truth[std::size_t(i)] = std::exp(double(scores[std::size_t(i)] * scale) - largest);
      for (auto& t : truth) t /= sum;
      std::vector<float> want(scores);
      vector_ops_variants()[0]->softmax(want.data(), n, scale);
      double worst = 0, total = 0;
      int zeros = 0;
      for (std::int64_t i = 0; i < n; ++i) {
        const double t = truth[std::size_t(i)], got = want[std::size_t(i)];
        total += got;
        if (t < 1e-36) {  // e^-87.3 of the largest term and below: the exponential's 0
          zeros += got == 0.0;
          CHECK(got <= 1e-36);
        } else {
          worst = std::max(worst, std::fabs(got - t) / t);
        }
      }
      INFO("worst relative error ", worst, ", ", zeros, " terms 0");
      // The exponential's 2 ulp, the n / 16 + 4 roundings of a term's way through the sums and the
      // division's half ulp: under 3e-6 of a term at 2048; 4e-6 leaves headroom.
      CHECK(worst < 4e-6);
      CHECK(std::fabs(total - 1.0) < 4e-6);
      if (n == 2048) CHECK(zeros > 0);  // the test reaches the exponential's lower end
      for (const VectorOps* o : vector_ops_variants()) {
        CAPTURE(o->name);
        std::vector<float> got(scores);
        got.push_back(-1.0f);
        o->softmax(got.data(), n, scale);
        CHECK(same_bits(got.data(), want.data(), 4 * want.size()));
        CHECK(got.back() == -1.0f);
      }
    }
  }

  TEST_CASE("SiLU: every build gives the baseline's bits, within 2.5 ulp of the true SiLU") {
    // A sweep over [-100, 100] (past both ends of the exponential's range), the ends themselves,
    // tiny and signed zeros; then NaN, which must stay NaN.
    std::vector<float> x;
    for (int i = 0; i <= 400000; ++i) x.push_back(-100.0f + 200.0f * float(i) / 400000.0f);
    for (float e : {0.0f, -0.0f, 1e-30f, -1e-30f, 88.0f, -88.0f, 87.3f, -87.3f, 88.5f, -88.5f, 1e4f, -1e4f})
      x.push_back(e);
    const std::size_t n = x.size();
    const VectorOps* base = vector_ops_variants()[0];
    std::vector<float> want(n);
    base->silu(x.data(), want.data(), std::int64_t(n));
    double worst_ulp = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double xi = x[i], truth = xi / (1.0 + std::exp(-xi));
      const double ulp = std::ldexp(1.0, std::max(std::ilogb(float(truth)), -126) - 23);
      const double err = std::fabs(double(want[i]) - truth);
      // Below x = -88 the exponential saturates to +inf and the SiLU to -0, where the true value
      // is under 1e-35 in magnitude: an absolute bound there, 2.5 ulp everywhere else (the formula's
      // own roundings, 1 + e and the division, cost that much: with the C library's expf it reaches
      // 2.31 ulp on this sweep, at x = -16.7).
      const bool underflow = std::fabs(truth) < 1e-35;
      if (!underflow) worst_ulp = std::max(worst_ulp, err / ulp);
      if (!(underflow ? err < 1e-35 : err <= 2.5 * ulp)) {
        CAPTURE(xi);
        CHECK(double(want[i]) == truth);  // reports the value that is off
      }
    }
    MESSAGE("SiLU: worst error ", worst_ulp, " ulp over ", n, " inputs");
    const float nan = std::numeric_limits<float>::quiet_NaN();
    const std::vector<float> b = normal_floats(n, 41);
    for (const VectorOps* o : vector_ops_variants()) {
      CAPTURE(o->name);
      std::vector<float> got(n, -1.0f), got_mul(n, -1.0f), want_mul(n);
      o->silu(x.data(), got.data(), std::int64_t(n));
      CHECK(same_bits(got.data(), want.data(), 4 * n));
      o->silu_mul(x.data(), b.data(), got_mul.data(), std::int64_t(n));
      for (std::size_t i = 0; i < n; ++i) want_mul[i] = want[i] * b[i];
      CHECK(same_bits(got_mul.data(), want_mul.data(), 4 * n));
      float in_place[3] = {nan, 1.0f, -2.0f}, once[3];
      o->silu(in_place, once, 3);
      o->silu(in_place, in_place, 3);  // y may be x
      CHECK(std::isnan(in_place[0]));
      CHECK(same_bits(in_place + 1, once + 1, 8));
    }
  }

  TEST_CASE("sigmoid gate: every build gives the baseline's bits, within 2.5 ulp of the true sigmoid") {
    std::vector<float> g;
    for (int i = 0; i <= 200000; ++i) g.push_back(-100.0f + 200.0f * float(i) / 200000.0f);
    const std::size_t n = g.size();
    const VectorOps* base = vector_ops_variants()[0];
    std::vector<float> want(n, 1.0f);  // y = 1: the sigmoid itself
    base->sigmoid_mul(g.data(), want.data(), std::int64_t(n));
    double worst_ulp = 0;
    for (std::size_t i = 0; i < n; ++i) {
      const double truth = 1.0 / (1.0 + std::exp(-double(g[i])));
      const double ulp = std::ldexp(1.0, std::max(std::ilogb(float(truth)), -126) - 23);
      const double err = std::fabs(double(want[i]) - truth);
      // Below g = -88 the exponential saturates and the sigmoid is 0, where it is under 1e-35.
      const bool underflow = truth < 1e-35;
      if (!underflow) worst_ulp = std::max(worst_ulp, err / ulp);
      if (!(underflow ? err < 1e-35 : err <= 2.5 * ulp)) {
        CAPTURE(g[i]);
        CHECK(double(want[i]) == truth);
      }
    }
    MESSAGE("sigmoid: worst error ", worst_ulp, " ulp over ", n, " inputs");
    const std::vector<float> y0 = normal_floats(n, 43);
    std::vector<float> want_y = y0;
    base->sigmoid_mul(g.data(), want_y.data(), std::int64_t(n));
    std::vector<float> product(n);  // y times the sigmoid, rounded once
    for (std::size_t i = 0; i < n; ++i) product[i] = y0[i] * want[i];
    CHECK(same_bits(want_y.data(), product.data(), 4 * n));
    for (const VectorOps* o : vector_ops_variants()) {
      CAPTURE(o->name);
      std::vector<float> got = y0;
      o->sigmoid_mul(g.data(), got.data(), std::int64_t(n));
      CHECK(same_bits(got.data(), want_y.data(), 4 * n));
    }
  }
}
