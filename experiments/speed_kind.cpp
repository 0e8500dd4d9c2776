// The speed kind: pp N then tg N over the same loaded arms, one report with both tables and the
// arm values merged per arm; every arm's greedy tokens checked against the baseline arm's first.
#include <algorithm>
#include <cmath>
#include <sstream>
#include <utility>

#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/model_arms.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"
#include "kernels/cpu.hpp"
#include "model/experiments.hpp"

namespace ternlab::experiments {

namespace {

namespace speed_key {
constexpr IntegerKey prefill_tokens{"prefill_tokens", 64, 1, 1 << 20};
constexpr IntegerKey decode_tokens{"decode_tokens", 32, 1, 1 << 20};
}  // namespace speed_key

// pp N then tg N over the same loaded arms: one report with both tables, arm values merged per arm.
RunReport run_prefill_decode(const RunSpec& run, RunContext& ctx) {
  const int pn = int(speed_key::prefill_tokens(run)), dn = int(speed_key::decode_tokens(run));
  const int chunk = int(key::prefill_chunk(run));
  ModelArms m = plan_arms(run, ctx, 8, int(key::verify_tokens(run)));
  std::vector<std::int32_t> pstream, dstream;
  const auto prepare = [&](std::size_t, ModelArm& a) {
    if (pstream.empty()) {
      pstream = model::random_tokens(pn, std::max(m.vocab, 1), run_seed(run) + 1);
      dstream = model::random_tokens(dn, std::max(m.vocab, 1), run_seed(run) + 1);
    }
    return std::vector<ArmSetup>{speed_setup(a, false, pn, chunk, pstream), speed_setup(a, true, dn, chunk, dstream)};
  };
  const std::vector<TimingResult> r = run_arms(run, ctx, m, {measure_options(run), measure_options(run)}, prepare);
  RunReport pp = speed_report(run, m, r[0], false, pn);
  RunReport tg = speed_report(run, m, r[1], true, dn);
  RunReport rep;
  rep.title = run.name();
  rep.ok = pp.ok && tg.ok;
  rep.markdown = pp.markdown + "\n" + tg.markdown;
  rep.rows = pp.rows;
  rep.rows.rows.insert(rep.rows.rows.end(), tg.rows.rows.begin(), tg.rows.rows.end());
  rep.json = Json{{"index", run.index}, {"name", rep.title}, {"kind", "speed"}, {"prefill", std::move(pp.json)}, {"decode", std::move(tg.json)}};
  rep.svgs = pp.svgs;
  rep.svgs.insert(rep.svgs.end(), tg.svgs.begin(), tg.svgs.end());
  rep.arm_values = pp.arm_values;
  for (const RunReport::ArmValues& v : tg.arm_values) {
    auto it = std::find_if(rep.arm_values.begin(), rep.arm_values.end(), [&](const auto& x) { return x.arm == v.arm; });
    if (it == rep.arm_values.end()) continue;  // an arm is listed only when both passes verified it
    it->values.insert(it->values.end(), v.values.begin(), v.values.end());
  }
  std::erase_if(rep.arm_values, [&](const auto& x) { return std::isnan(x.get("decode_tok_s")); });
  for (NoiseWarning& w : pp.warnings) w.text = cat("pp", pn, ": ", w.text);
  for (NoiseWarning& w : tg.warnings) w.text = cat("tg", dn, ": ", w.text);
  rep.warnings = pp.warnings;
  rep.warnings.insert(rep.warnings.end(), tg.warnings.begin(), tg.warnings.end());
  return rep;
}

}  // namespace

// Its small overrides take the tiny preset: micro's 260-row output matrix does not fit t2r's 16-row blocks.
void register_speed_kind() {
  KindInfo speed = model_kind(
      "speed", "pp N and tg N over the same loaded arms: prefill and decode tokens/s, decode bandwidth fraction",
      {speed_key::prefill_tokens.spec("prompt length of pp"), speed_key::decode_tokens.spec("decoded tokens of tg")},
      [](const RunSpec& r) {
        speed_key::prefill_tokens(r);
        speed_key::decode_tokens(r);
      },
      run_prefill_decode, [](const RunSpec& r) { return model_units(r, 5, 1) + measure_units(r.arms.size(), measure_options(r)); });
  speed.model.context_tokens = [](const RunSpec& r) { return std::max(speed_key::prefill_tokens(r), speed_key::decode_tokens(r)); };
  speed.model.test_in_title = true;
  speed.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "prefill_tokens=8", "decode_tokens=4"});
  register_kind(std::move(speed));
}

}  // namespace ternlab::experiments
