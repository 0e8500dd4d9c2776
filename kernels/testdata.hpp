// Deterministic synthetic inputs for the oracle, the quickstart and benchmarks.
#pragma once

#include <cstdint>
#include <vector>

#include "kernels/q8k.hpp"
#include "layouts/matrix.hpp"

namespace ternlab {

enum class Fill { random, zero, all_plus, all_minus, code3, all_code3 };
enum class ScaleKind { unit, random };

// Ternary weights (codes 0..2; Fill::code3 sprinkles u = 3 among them, Fill::all_code3 sets every
// one), scales 1.0 or uniform in [0.005, 0.05] rounded through fp16.
TernaryMatrix make_weights(std::int64_t rows, std::int64_t cols, std::uint64_t seed, Fill fill = Fill::random,
                           ScaleKind scales = ScaleKind::unit);

enum class ActFill { random, extreme, constant, zero };

// Where the generator forces the -127 that pins a block's scale to 1: in every 256-block (correct),
// or only in the first 256 values of each token, which leaves later random blocks with a scale of
// amax/127 != 1 so an exact comparison fails for the test's fault, not the kernel's. The second is
// kept to reproduce that mistake (configs/oracle-test-scale.toml).
enum class ForcedMax { every_block, first_256_only };

// Integer-valued activations whose every 256-block quantises to d = 1 exactly: values in [-127,
// 126] with at least one -127 and never +127 per block (zero blocks quantise to d = 0). Returned as
// floats (tokens x cols) for the quantiser and as int8 for the oracle.
struct UnitActivations {
  std::vector<float> f;
  std::vector<std::int8_t> i8;
};
UnitActivations make_unit_activations(std::int64_t tokens, std::int64_t cols, std::uint64_t seed,
                                      ActFill fill = ActFill::random, ForcedMax forced = ForcedMax::every_block);

// Real-valued activations (normal-ish), for scaled float checks.
std::vector<float> make_float_activations(std::int64_t tokens, std::int64_t cols, std::uint64_t seed);

}  // namespace ternlab
