// What the kernel kinds share (experiments/matrix_kinds.cpp): the arm checks and the matrix run of
// the gemv and gemm kinds, which the oracle and bandwidth kinds read too. Internal to the kinds.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "experiments/config.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/report.hpp"

namespace ternlab::experiments {
struct RunContext;
}

namespace ternlab::experiments::kernel_kind {

// The checks every kernel kind runs: arms, threads and the common keys.
void check_common(const RunSpec& run);
// Whether an arm builds a fresh thread pool inside each timed call (arm.spawn).
bool arm_spawn(const ArmSpec& arm);
// The gemv (batch false) or gemm kind: validation, the run, its progress units.
void validate_matrix_kind(const RunSpec& run, bool batch);
RunReport run_matrix_kind(const RunSpec& run, RunContext& ctx, bool batch);
std::int64_t matrix_units(const RunSpec& run);
// "" when a kernel's outputs equal the oracle's integers for `rows` rows of each token, else where
// and by how much they differ.
std::string compare_exact(const std::vector<float>& y, const std::vector<std::int64_t>& want, std::int64_t rows);
// The keys of the gemv kind (the gemm kind adds its own).
std::vector<KeySpec> gemv_keys();

}  // namespace ternlab::experiments::kernel_kind
