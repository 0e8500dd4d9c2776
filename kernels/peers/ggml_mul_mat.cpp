#include "kernels/peers/ggml_mul_mat.hpp"

#include "common/error.hpp"
#include "kernels/cpu.hpp"

namespace ternlab::peers::ggml {

bool avx2_path() {
  static const bool avx2 = isa_supported(Isa::avx2);
  return avx2;
}

void check_blocks(std::string_view format, const std::string& tensor, std::int64_t rows, std::int64_t cols) {
  if (rows <= 0 || cols <= 0 || cols % kBlock != 0)
    fail(format, " tensor '", tensor, "': ", rows, " x ", cols, " is not a whole number of ", kBlock, "-weight blocks per row");
}

void check_scales_finite(std::string_view format, const std::string& tensor, std::int64_t rows, std::int64_t cols,
                         const std::uint8_t* bytes, int block_bytes, int scale_offset) {
  const std::int64_t blocks = cols / kBlock;
  for (std::int64_t r = 0; r < rows; ++r)
    for (std::int64_t b = 0; b < blocks; ++b) {
      std::uint16_t d;
      std::memcpy(&d, bytes + (r * blocks + b) * block_bytes + scale_offset, 2);
      if (!std::isfinite(fp16_to_float(d)))
        fail(format, " tensor '", tensor, "': row ", r, " block ", b, " has the scale ", fp16_to_float(d), ", which is not finite");
    }
}

void check_mul_mat(std::string_view format, const std::string& tensor, std::int64_t rows, std::int64_t cols, const Q8KBatch& x,
                   std::int64_t ldy) {
  check_blocks(format, tensor, rows, cols);
  if (x.cols != cols)
    fail(format, " mul_mat: activations have ", x.cols, " elements but the ", format, " tensor '", tensor, "' (", rows, " x ", cols,
         ") needs ", cols);
  if (x.tokens < 1) fail(format, " mul_mat: no activation token");
  if (x.tokens > 1 && ldy < rows)
    fail(format, " mul_mat: output row stride ", ldy, " is smaller than the ", rows, " rows of '", tensor, "'");
}

void fail_output(std::string_view format, const std::string& tensor, std::int64_t row, std::int64_t token, float got, float want) {
  fail(format, " tensor '", tensor, "': row ", row, " token ", token, " gives ", got, ", the model of ggml's ",
       avx2_path() ? "AVX2" : "generic", " path gives ", want);
}

}  // namespace ternlab::peers::ggml
