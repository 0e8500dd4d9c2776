// The record matvec kernels: y = W x for a matrix in a record layout (lattice/records.hpp), one
// generic source (lattice/record_kernel.hpp) built per ISA. Interface for experiments: the matrix
// carries its layout id, record stream, side channels, row scales, gain centroids and f32 tail;
// activations and outputs are f32.
#pragma once
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lattice/records.hpp"

namespace ternlab::lattice {

using RecordMatvecFn = void (*)(const RecordMatrix& m, const float* x, float* y, std::int64_t row_begin, std::int64_t row_end);

struct RecordKernelVariant {
  std::string name;  // "scalar", "avx2", "avx512", "neon" (tests add "avx512-simde")
  RecordMatvecFn fn = nullptr;
};

// The variants this build and this CPU can run, scalar first.
std::vector<RecordKernelVariant> record_kernels();
// The richest of them.
const RecordKernelVariant& best_record_kernel();

// Rows [row_begin, row_end) of y = W x (row_end -1: all rows). x holds cols floats, y rows floats.
// Errors name the tensor and what does not fit: the sizes of x and y, the row range, a matrix
// without a layout or whose side data do not match its shape.
void record_matvec(const RecordMatrix& m, std::span<const float> x, std::span<float> y, const RecordKernelVariant& k,
                   std::int64_t row_begin = 0, std::int64_t row_end = -1);

namespace detail {
void record_matvec_scalar(const RecordMatrix&, const float*, float*, std::int64_t, std::int64_t);
void record_matvec_avx2(const RecordMatrix&, const float*, float*, std::int64_t, std::int64_t);
void record_matvec_avx512(const RecordMatrix&, const float*, float*, std::int64_t, std::int64_t);
void record_matvec_neon(const RecordMatrix&, const float*, float*, std::int64_t, std::int64_t);
bool record_avx2_built();
bool record_avx512_built();
bool record_neon_built();
}  // namespace detail

}  // namespace ternlab::lattice
