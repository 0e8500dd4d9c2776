// The prefill kind, pp N: one N-token prompt from an empty context per arm (gemm in
// prefill_chunk batches), every arm's greedy tokens checked against the baseline arm's first.
#include "experiments/kinds.hpp"
#include "experiments/model_arms.hpp"

namespace ternlab::experiments {

namespace prefill_key {
constexpr IntegerKey tokens{"tokens", 64, 1, 1 << 20};
}

// Its small overrides take the tiny preset: micro's 260-row output matrix does not fit t2r's 16-row blocks.
void register_prefill_kind() {
  KindInfo prefill = model_kind("prefill", "pp N: prompt tokens/s of a whole model per arm (layout x kernel x threads x load)",
                                {prefill_key::tokens.spec("prompt length")}, [](const RunSpec& r) { prefill_key::tokens(r); },
                                [](const RunSpec& r, RunContext& c) { return run_speed_phase(r, c, false, int(prefill_key::tokens(r))); },
                                [](const RunSpec& r) { return model_units(r, 5, 1); });
  prefill.model.context_tokens = prefill_key::tokens;
  prefill.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "tokens=8"});
  register_kind(std::move(prefill));
}

}  // namespace ternlab::experiments
