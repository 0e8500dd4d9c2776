// The decode kind, tg N: N single-token steps (gemv) from an empty context per arm, and the decode
// bandwidth fraction (ternary weight bytes per token / time per token / memory read ceiling);
// every arm's greedy tokens checked against the baseline arm's first.
#include "experiments/kinds.hpp"
#include "experiments/model_arms.hpp"

namespace ternlab::experiments {

namespace decode_key {
constexpr IntegerKey tokens{"tokens", 32, 1, 1 << 20};
}

// Its small overrides take the tiny preset: micro's 260-row output matrix does not fit t2r's 16-row blocks.
void register_decode_kind() {
  KindInfo decode = model_kind("decode", "tg N: decode tokens/s and the decode bandwidth fraction against the memory read ceiling",
                               {decode_key::tokens.spec("decoded tokens per call")}, [](const RunSpec& r) { decode_key::tokens(r); },
                               [](const RunSpec& r, RunContext& c) { return run_speed_phase(r, c, true, int(decode_key::tokens(r))); },
                               [](const RunSpec& r) { return model_units(r, 5, 1); });
  decode.model.context_tokens = decode_key::tokens;
  decode.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "tokens=8"});
  register_kind(std::move(decode));
}

}  // namespace ternlab::experiments
