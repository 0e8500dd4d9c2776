// The fp16 control of the lattice experiments (spec §6, M7): a plain matvec of f16 weights (row-major,
// rows x cols) by f32 activations into f32 outputs, one generic source (f16_matvec_kernel.hpp) over
// the float-lane policies of the record kernels (kernels/isa/f32_lanes.hpp), one unit per ISA.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

namespace ternlab {

struct F16Matrix {
  std::string name;
  std::int64_t rows = 0, cols = 0;
  std::vector<std::uint16_t> w;  // IEEE binary16 bits, rows x cols, row-major
};

using F16MatvecFn = void (*)(const F16Matrix& m, const float* x, float* y, std::int64_t row_begin, std::int64_t row_end);

struct F16KernelVariant {
  std::string name;  // "scalar", "avx2", "avx512", "neon"
  F16MatvecFn fn = nullptr;
};

// The variants this build and this CPU can run, scalar first; the richest last.
std::vector<F16KernelVariant> f16_kernels();
const F16KernelVariant& best_f16_kernel();

// Rows [row_begin, row_end) of y = W x (row_end -1: all rows). Errors name the tensor and what does
// not fit: the sizes of x, y and the weights, the row range.
void f16_matvec(const F16Matrix& m, std::span<const float> x, std::span<float> y, const F16KernelVariant& k,
                std::int64_t row_begin = 0, std::int64_t row_end = -1);

namespace detail {
void f16_matvec_avx2(const F16Matrix&, const float*, float*, std::int64_t, std::int64_t);
void f16_matvec_avx512(const F16Matrix&, const float*, float*, std::int64_t, std::int64_t);
void f16_matvec_neon(const F16Matrix&, const float*, float*, std::int64_t, std::int64_t);
bool f16_avx2_built();
bool f16_avx512_built();
bool f16_neon_built();
}  // namespace detail

}  // namespace ternlab
