// The integer oracle: every layout x every kernel, compared EXACTLY (no tolerance) with a plain
// scalar loop over int8 weights and int8 activations. Activations are built so that every q8_K
// block, not only the first, quantises with d = 1 (asserted), and weight scales are 1, so each
// float output equals the integer dot exactly (all sums < 2^24).
#include <algorithm>
#include <cmath>

#include "kernels/catalog.hpp"
#include "kernels/oracle.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

using namespace ternlab;

namespace {

struct Case {
  std::int64_t rows, cols, tokens;
  Fill weights = Fill::random;
  ActFill acts = ActFill::random;
};


// Runs every kernel of `L` on the case; returns how many (kernel, output) pairs were compared.
std::int64_t run_case(const LayoutInfo& L, const Case& c, std::uint64_t seed) {
  const TernaryMatrix w = make_weights(c.rows, c.cols, seed, c.weights, ScaleKind::unit);
  const UnitActivations a = make_unit_activations(c.tokens, c.cols, seed + 1, c.acts);
  const Q8KBatch x = quantize_batch(a.f.data(), c.tokens, c.cols);
  if (c.acts != ActFill::zero)
    for (const BlockQ8K& b : x.rows) REQUIRE(b.d == 1.0f);  // the blog post's bug: not only the first block
  const std::vector<std::int64_t> want = oracle_int(w, a.i8, c.tokens);
  const PackedMatrix p = pack(w, L);
  std::int64_t compared = 0;
  for (const KernelVariant& k : test::checked_kernels_for(L)) {
    CAPTURE(k.name());
    std::vector<float> y(std::size_t(c.tokens * c.rows), NAN);
    for (std::int64_t t = 0; t < c.tokens; ++t) k.gemv(p, x.row(t), y.data() + t * c.rows, 0, p.row_groups());
    std::vector<float> Y(std::size_t(c.tokens * c.rows), NAN);
    k.gemm(p, x, Y.data(), c.rows, 0, p.row_groups());
    for (std::size_t i = 0; i < want.size(); ++i) {
      if (double(y[i]) != double(want[i]) || double(Y[i]) != double(want[i])) {
        FAIL_CHECK("token ", i / std::size_t(c.rows), " row ", i % std::size_t(c.rows), ": oracle ", want[i],
                   ", gemv ", y[i], ", gemm ", Y[i]);
        return compared;
      }
      compared += 2;
    }
  }
  return compared;
}

}  // namespace

TEST_SUITE("oracle") {
  TEST_CASE("every layout x kernel equals the integer oracle over batch widths, rows and inner sizes") {
    std::int64_t compared = 0;
    for (const LayoutInfo* L : all_layouts()) {
      // One, two and three row groups of every block height (4, 8 and 12 rows for 1-row blocks),
      // and five: kernels that read several row groups side by side (four streams in the
      // AVX-512 broadcast gemv and single-tile gemm) run their side-by-side loop only from four
      // groups on, and a fifth is their one-group leftover.
      const std::int64_t group = test::whole_rows(*L, 4);
      std::int64_t of_layout = 0;
      for (std::int64_t rows : {group, 2 * group, 3 * group, 5 * group})
        for (std::int64_t cols : {128, 256, 512, 1024, 5120, 17408})
          for (std::int64_t tokens : {1, 2, 3, 4, 5, 7, 8, 17, 64}) {
            // The model's inner sizes on one row group, at the batch widths that reach each tile
            // path (gemv, a padded leftover, a tile plus one, full tiles): every other width
            // there would repeat the small sizes' paths at 10-100 times their cost (qemu, ASan).
            // Five groups take those widths at two small sizes.
            const bool model_size = cols >= 5120;
            if (model_size && (rows != group || (tokens != 1 && tokens != 3 && tokens != 5 && tokens != 64))) continue;
            if (rows == 5 * group && ((cols != 256 && cols != 1024) || (tokens != 1 && tokens != 3 && tokens != 5 && tokens != 17)))
              continue;
            if (cols % L->k != 0) continue;  // 128 columns: no whole 256-weight block (tq2_0, tq1_0)
            CAPTURE(L->name);
            CAPTURE(rows);
            CAPTURE(cols);
            CAPTURE(tokens);
            of_layout += run_case(*L, {rows, cols, tokens}, std::uint64_t(rows * 131 + cols + tokens));
          }
      CHECK_MESSAGE(of_layout > 10000, L->name, " compared only ", of_layout, " outputs");
      compared += of_layout;
    }
    CHECK(compared > 100000);
  }

  TEST_CASE("row counts a layout cannot take are rejected with the layout named") {
    for (const LayoutInfo* L : all_layouts())
      for (std::int64_t rows : {4, 8, 12})
        if (rows % L->rows != 0) {
          CAPTURE(L->name);
          const TernaryMatrix w = make_weights(rows, 256, 1);
          test::check_error([&] { pack(w, *L); }, std::string(L->name), "rows");
        }
  }

  TEST_CASE("special values: zeros, constants, extremes and the +2 code") {
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const std::int64_t rows = test::whole_rows(*L, 4);
      for (Fill wf : {Fill::zero, Fill::all_plus, Fill::all_minus, Fill::code3})
        for (ActFill af : {ActFill::zero, ActFill::constant, ActFill::extreme}) {
          if (wf == Fill::code3 && is_base3(L->code)) continue;  // cannot hold +2: bad-input suite
          CAPTURE(int(wf));
          CAPTURE(int(af));
          CHECK(run_case(*L, {rows, 1024, 5, wf, af}, 99) > 0);
        }
    }
  }

  TEST_CASE("all +1 weights against -127 activations: the largest block magnitudes come out exact") {
    const UnitActivations a = make_unit_activations(1, 512, 1, ActFill::constant);
    const Q8KBatch x = quantize_batch(a.f.data(), 1, 512);
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const std::int64_t rows = test::whole_rows(*L, 16);
      const TernaryMatrix w = make_weights(rows, 512, 1, Fill::all_plus);
      CHECK(oracle_int(w, a.i8, 1)[0] == -127 * 512);
      const PackedMatrix p = pack(w, *L);
      for (const KernelVariant& k : test::checked_kernels_for(*L)) {
        std::vector<float> y(std::size_t(rows), NAN);
        k.gemv(p, x.row(0), y.data(), 0, p.row_groups());
        for (float v : y) CHECK(v == -127.0f * 512);
      }
    }
  }

  // Code 3 (+2) and -127 everywhere drive every int16 intermediate of the SIMD strategies
  // (docs/kernels.md) to its largest magnitude, which random and sprinkled codes rarely approach:
  // an accumulator widened or folded too late fails here.
  TEST_CASE("all +2 weights against -127 activations: the largest 2-bit block magnitudes come out exact") {
    const UnitActivations a = make_unit_activations(4, 512, 1, ActFill::constant);
    const Q8KBatch x = quantize_batch(a.f.data(), 4, 512);
    for (const LayoutInfo* L : all_layouts()) {
      if (L->code != Code::two_bit) continue;
      CAPTURE(L->name);
      const std::int64_t rows = test::whole_rows(*L, 16);
      const TernaryMatrix w = make_weights(rows, 512, 1, Fill::all_code3);
      CHECK(oracle_int(w, a.i8, 4)[0] == -127 * 512 * 2);
      const PackedMatrix p = pack(w, *L);
      for (const KernelVariant& k : test::checked_kernels_for(*L)) {
        CAPTURE(k.name());
        std::vector<float> y(std::size_t(rows), NAN), yy(std::size_t(4 * rows), NAN);
        k.gemv(p, x.row(0), y.data(), 0, p.row_groups());
        k.gemm(p, x, yy.data(), rows, 0, p.row_groups());
        for (float v : y) CHECK(v == -127.0f * 512 * 2);
        for (float v : yy) CHECK(v == -127.0f * 512 * 2);
      }
    }
  }

  TEST_CASE("scaled inputs: every kernel reproduces the float oracle bit for bit") {
    // One fma per 128-weight block, in block order, with scale d_w * d_y: the association is fixed,
    // so there is no tolerance to state.
    for (const LayoutInfo* L : all_layouts()) {
      CAPTURE(L->name);
      const std::int64_t rows = test::whole_rows(*L, 16), cols = 2048, tokens = 7;
      // Random scales in the layout's own format: the oracle sees exactly the scales the kernels decode.
      const TernaryMatrix w = test::share_scales(
          requantise_scales(make_weights(rows, cols, 21, Fill::random, ScaleKind::random), L->scale_format()), *L);
      const std::vector<float> xf = make_float_activations(tokens, cols, 22);
      const Q8KBatch x = quantize_batch(xf.data(), tokens, cols);
      const std::vector<float> want = oracle_float(w, x);
      const PackedMatrix p = pack(w, *L);
      for (const KernelVariant& k : test::checked_kernels_for(*L)) {
        CAPTURE(k.name());
        std::vector<float> Y(std::size_t(tokens * rows));
        k.gemm(p, x, Y.data(), rows, 0, p.row_groups());
        auto y = std::vector<float>(std::size_t(rows));
        for (std::int64_t t = 0; t < tokens; ++t) {
          k.gemv(p, x.row(t), y.data(), 0, p.row_groups());
          for (std::int64_t n = 0; n < rows; ++n) {
            CHECK(y[std::size_t(n)] == want[std::size_t(t * rows + n)]);
            CHECK(Y[std::size_t(t * rows + n)] == want[std::size_t(t * rows + n)]);
          }
        }
      }
    }
  }
}
