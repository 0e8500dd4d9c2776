// Bad input is rejected with a clear error naming the thing at fault; never a crash or truncation.
#include <cmath>
#include <cstring>
#include <limits>

#include "common/fp16.hpp"
#include "kernels/kernel.hpp"
#include "kernels/testdata.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using test::check_error;

TEST_SUITE("bad-input") {
  TEST_CASE("a tensor whose size is not a whole number of blocks") {
    check_error([] { check_shape(find_layout("pq2_0"), 4, 200, "blk.0.ffn_up.weight"); }, "blk.0.ffn_up.weight",
                "200", "128");
    const std::vector<std::uint8_t> bytes(100);
    check_error([&] { adopt_bytes(find_layout("pq2_0"), 2, 256, bytes.data(), bytes.size(), "output.weight"); },
                "output.weight", "100 bytes", "136");
  }

  TEST_CASE("a row count the layout cannot take") {
    const TernaryMatrix m = make_weights(6, 256, 1);
    check_error([&] { pack(m, find_layout("t2p"), "blk.3.attn_q.weight"); }, "blk.3.attn_q.weight", "6 rows", "t2p",
                "multiple of 4");
    CHECK_NOTHROW(pack(m, find_layout("pq2_0")));
  }

  TEST_CASE("code 3 transcoded into base-3") {
    TernaryMatrix m = make_weights(1, 256, 1);
    m.codes[130] = 3;
    const PackedMatrix p = pack(m, find_layout("pq2_0"));
    check_error([&] { transcode(p, find_layout("ptq1_0"), "token_embd.weight"); }, "token_embd.weight", "weight 130",
                "code 3", "ptq1_0");
  }

  TEST_CASE("a NaN or Inf scale") {
    for (float bad : {std::numeric_limits<float>::quiet_NaN(), std::numeric_limits<float>::infinity()}) {
      TernaryMatrix m = make_weights(4, 256, 1);
      m.scales[5] = float_to_fp16(bad);  // row 2, block 1
      check_error([&] { pack(m, find_layout("t2p"), "blk.0.ffn_down.weight"); }, "blk.0.ffn_down.weight", "row 2",
                  "block 1", "non-finite scale");
    }
  }

  TEST_CASE("an unknown layout name lists the known ones") {
    check_error([] { find_layout("t3p"); }, "unknown layout 't3p'", "pq2_0", "t2p");
  }

  TEST_CASE("activation, weight and output shapes that do not agree") {
    const PackedMatrix p = pack(make_weights(4, 512, 1), find_layout("t2p"));
    const Q8KBatch x = quantize_batch(make_float_activations(1, 256, 1).data(), 1, 256);
    std::vector<float> y(4);
    check_error([&] { check_gemv_args(p, x.row(0), x.cols, y.data(), 4); }, "256", "512");
    const Q8KBatch x2 = quantize_batch(make_float_activations(3, 512, 1).data(), 3, 512);
    check_error([&] { check_gemv_args(p, x2.row(0), x2.cols, y.data(), 3); }, "output holds 3");
    check_error([&] { check_gemm_args(p, x2, y.data(), 4, 4); }, "output holds 4", "need 12");
    check_error([&] { check_gemm_args(p, x2, y.data(), 2, 100); }, "row stride 2");
    check_error([] { quantize_batch(nullptr, 1, 100); }, "inner size 100");
  }

  TEST_CASE("a misaligned buffer") {
    const PackedMatrix p = pack(make_weights(4, 256, 1), find_layout("pq2_0"));
    const Q8KBatch x = quantize_batch(make_float_activations(1, 256, 1).data(), 1, 256);
    std::vector<std::uint8_t> raw(sizeof(BlockQ8K) + 8);
    std::memcpy(raw.data() + 1, x.row(0), sizeof(BlockQ8K));
    const auto* shifted = reinterpret_cast<const BlockQ8K*>(raw.data() + 1);
    std::vector<float> y(4);
    check_error([&] { check_gemv_args(p, shifted, 256, y.data(), 4); }, "misaligned");
  }
}
