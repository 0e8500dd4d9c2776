// The greedy kind: greedy continuations of every arm equal to the baseline arm's, with the max
// |logit difference| (untimed).
#include <sstream>
#include <string>
#include <vector>

#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/kinds.hpp"
#include "experiments/model_arms.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"

namespace ternlab::experiments {

namespace {

namespace greedy_key {
constexpr IntegerKey tokens{"tokens", 16, 1, 1 << 20};
constexpr IntegerKey prompt_tokens{"prompt_tokens", 8, 1, 1 << 20};
}  // namespace greedy_key

RunReport run_greedy(const RunSpec& run, RunContext& ctx) {
  const int n = int(greedy_key::tokens(run));
  const int prompt_len = int(greedy_key::prompt_tokens(run));
  const ModelArms m = load_and_check_arms(run, ctx, prompt_len, n);
  RunReport rep;
  rep.title = run.name();
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << model_line(m);
  md << "kind greedy: " << n << " greedy tokens after a " << prompt_len << "-token pseudo-random prompt (seed " << run_seed(run)
     << "), every arm against the baseline '" << m.arms[m.baseline].name << "'; untimed.\n\n";
  Table table({{"arm"}, {"layout"}, {"kernel"}, {"thr", Align::right}, {"load"}, {"tokens equal", Align::right},
               {"first difference", Align::right}, {"max |Δlogit|", Align::right}, {"result"}});
  rep.rows.columns = {"run", "arm", "layout", "kernel", "threads", "load", "tokens_equal", "first_difference", "max_logit_diff",
                      "result", "tokens"};
  Json js = run_json_head(run, rep.title, m);
  js["tokens"] = n;
  js["prompt_tokens"] = prompt_len;
  js["arms"] = Json::array();
  const ModelArm& base = m.arms[m.baseline];
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ModelArm& a = m.arms[i];
    std::size_t equal = 0;
    while (equal < a.tokens.size() && equal < base.tokens.size() && a.tokens[equal] == base.tokens[equal]) ++equal;
    const bool ok = a.failure.empty();
    if (!ok) rep.ok = false;
    const std::string result = ok ? (i == m.baseline ? "baseline" : "equal") : "**FAILED**";
    table.add({a.name + (i == m.baseline ? " (baseline)" : ""), a.layout, a.kernel, threads_cell(a.threads), a.load,
               cat(equal, "/", n), a.first_difference >= 0 ? cat(a.first_difference) : "—",
               i == m.baseline ? "—" : sig(a.max_logit_diff), result});
    std::vector<std::string> toks;
    for (std::int32_t t : a.tokens) toks.push_back(cat(t));
    rep.rows.add({run.index, a.name, a.layout, a.kernel, a.threads, a.load, equal, a.first_difference, a.max_logit_diff,
                  ok ? "ok" : "failed", join(toks, " ")});
    Json arm = arm_json_head(a);
    arm["tokens_equal"] = equal;
    arm["first_difference"] = a.first_difference;
    arm["tokens"] = a.tokens;
    js["arms"].push_back(std::move(arm));
    if (ok) rep.arm_values.push_back({a.name, a.layout, {{"max_logit_diff", a.max_logit_diff}}});
  }
  md << table.markdown();
  return finish_model_report(std::move(rep), md, std::move(js), m);
}

}  // namespace

// Its small overrides take the tiny preset: micro's 260-row output matrix does not fit t2r's 16-row blocks.
void register_greedy_kind() {
  KindInfo greedy = model_kind(
      "greedy", "greedy-token equivalence of every arm with the baseline arm, max |logit difference| (untimed)",
      {greedy_key::tokens.spec("greedy tokens compared"), greedy_key::prompt_tokens.spec("pseudo-random prompt length")},
      [](const RunSpec& r) {
        greedy_key::tokens(r);
        greedy_key::prompt_tokens(r);
      },
      run_greedy, [](const RunSpec& r) { return std::int64_t(2 * r.arms.size()); });
  greedy.model.context_tokens = [](const RunSpec& r) { return greedy_key::prompt_tokens(r) + greedy_key::tokens(r); };
  greedy.model.read_ceiling = false;
  greedy.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "tokens=8", "prompt_tokens=4"});
  register_kind(std::move(greedy));
}

}  // namespace ternlab::experiments
