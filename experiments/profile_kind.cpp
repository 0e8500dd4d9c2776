// The profile kind: per-op wall time of one decode token (model::OpProfile) per arm, after a
// prefilled context, beside the memory read ceiling; optionally with the barrier detour's
// disturbance (a competing busy thread, or the same niced) and pinned pool workers.
#include <algorithm>
#include <array>
#include <map>
#include <atomic>
#include <memory>
#include <span>
#include <sstream>
#include <thread>
#include <utility>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "common/strings.hpp"
#include "common/table.hpp"
#include "experiments/arms.hpp"
#include "experiments/kinds.hpp"
#include "experiments/measure.hpp"
#include "experiments/model_arms.hpp"
#include "experiments/report.hpp"
#include "experiments/run_context.hpp"
#include "kernels/cpu.hpp"
#include "kernels/thread_pool.hpp"
#include "model/experiments.hpp"

namespace ternlab::experiments {

namespace {

using model::Model;

// The kind's own keys, each with its default and bounds.
namespace profile_key {
constexpr IntegerKey prompt_tokens{"prompt_tokens", 16, 1, 1 << 20};
constexpr IntegerKey tokens{"tokens", 1, 1, 1 << 16};
}

// The profile kind's barrier detour: a competing busy thread (or none), and pinned pool workers.
const std::vector<std::string> kDisturbances = {"none", "busy", "busy-niced"};

std::string arm_disturbance(const ArmSpec& a) {
  const Located at = a.at("disturb");
  if (!at) return "none";
  const std::string v = as_string(at);
  if (std::find(kDisturbances.begin(), kDisturbances.end(), v) == kDisturbances.end())
    fail_at(at, "'", v, "' is not a disturbance (", join(kDisturbances), ")");
  return v;
}
bool arm_pins_workers(const ArmSpec& a) {
  const Located at = a.at("pin_workers");
  return at ? as_boolean(at) : false;
}
bool arm_shares_tails(const ArmSpec& a) {
  const Located at = a.at("share_tails");
  return at ? as_boolean(at) : true;
}

// A competing busy thread on one CPU, the barrier detour's disturbance: created once per arm before
// anything is timed, it spins only while that arm's calls run and sleeps otherwise. Niced to 19 it
// is the same load with the model at the higher priority (the blog's fix, from the other side).
class BusyThread {
 public:
  BusyThread(int cpu, bool niced) : thread_([this, cpu, niced] { loop(cpu, niced); }) {}
  ~BusyThread() {
    stop_.store(true, std::memory_order_release);
    set(true);
    thread_.join();
  }
  BusyThread(const BusyThread&) = delete;
  BusyThread& operator=(const BusyThread&) = delete;
  void set(bool on) {
    on_.store(on, std::memory_order_release);
    if (on) on_.notify_all();
  }

 private:
  void loop(int cpu, bool niced) {
    pin_current_thread(cpu);
    if (niced) setpriority(PRIO_PROCESS, id_t(syscall(SYS_gettid)), 19);
    while (!stop_.load(std::memory_order_acquire)) {
      on_.wait(false, std::memory_order_acquire);
      for (volatile std::uint64_t n = 0; on_.load(std::memory_order_relaxed) && !stop_.load(std::memory_order_relaxed);) n = n + 1;
    }
  }
  std::atomic<bool> on_{false}, stop_{false};
  std::thread thread_;  // last: starts after the flags exist
};

// Every arm's profiled calls (one forward each), in the order made.
std::vector<const std::vector<model::OpProfile>*> profiled_calls(const auto& profiled) {
  std::vector<const std::vector<model::OpProfile>*> out;
  for (const auto& p : profiled) out.push_back(&p->calls);
  return out;
}

// The matmul line split by the tensors' role (ffn_down, ffn_gate+ffn_up, output, ...): per arm and
// role, the median over kept rounds of the per-call time, its GB/s (decode) or GMAC/s (a batch) and
// its fraction of that round's read or int8 ceiling. A role well below the kernels' own rate is
// where the matmul line loses. Also written to summary.json's arms[].matmul_roles.
std::string matmul_roles_text(const ModelArms& m, const TimingResult& r,
                              const std::vector<const std::vector<model::OpProfile>*>& calls, bool decode, Json& js) {
  Table table({{"arm"}, {"matmul role"}, {"calls", Align::right}, {"MB", Align::right}, {"ms", Align::right},
               {"share of matmul", Align::right}, {decode ? "GB/s" : "GMAC/s", Align::right},
               {decode ? "of read ceiling" : "of int8 ceiling", Align::right}});
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ArmTiming& t = r.arms[i];
    if (!t.verified || t.reps == 0 || calls[i]->empty()) continue;
    // Roles in the order of the first profiled call (layer 0's, then the head).
    struct PerCall {
      int calls = 0;
      double bytes = 0, macs = 0;
    };
    std::vector<std::string> roles;
    std::map<std::string, PerCall> per_call;
    for (const auto& c : calls[i]->front().matmul_calls) {
      auto [it, fresh] = per_call.try_emplace(c.role);
      if (fresh) roles.push_back(c.role);
      it->second.calls += 1;
      it->second.bytes += c.bytes;
      it->second.macs += c.macs;
    }
    std::map<std::string, std::vector<double>> seconds;  // role -> per kept round, mean per profiled call
    std::vector<double> totals;
    for (int k = 0; k < r.rounds; ++k) {
      const std::size_t first = 1 + std::size_t(r.warmup + k) * std::size_t(t.reps);  // after the calibration call
      std::map<std::string, double> sum;
      double total = 0;
      for (std::size_t c = first; c < first + std::size_t(t.reps) && c < calls[i]->size(); ++c)
        for (const auto& mc : (*calls[i])[c].matmul_calls) {
          sum[mc.role] += mc.seconds / t.reps;
          total += mc.seconds / t.reps;
        }
      for (const auto& role : roles) seconds[role].push_back(sum[role]);
      totals.push_back(total);
    }
    const std::vector<double> ceils = decode ? r.ceiling_of(t) : r.compute_of(t);
    Json arm_roles = Json::array();
    for (const auto& role : roles) {
      const PerCall& pc = per_call[role];
      std::vector<double> rate, frac, share;
      const auto& sec = seconds[role];
      for (std::size_t k = 0; k < sec.size(); ++k) {
        if (sec[k] <= 0) continue;
        rate.push_back((decode ? pc.bytes : pc.macs) / sec[k] / 1e9);
        share.push_back(sec[k] / totals[k]);
        if (k < ceils.size()) frac.push_back(rate.back() / ceils[k]);
      }
      const Stat ms = stat_of(sec), g = stat_of(rate), f = stat_of(frac), sh = stat_of(share);
      table.add({m.arms[i].name, role, std::to_string(pc.calls), sig(pc.bytes / 1e6), with_range(ms, "", 1e3), with_range(sh, "%", 100),
                 g.valid ? sig(g.median) : "—", with_range(f, "%", 100)});
      Json j = {{"role", role}, {"calls", pc.calls}, {"bytes", pc.bytes}, {"macs", pc.macs},
                {"ms", stat_json(Stat{ms.median * 1e3, ms.min * 1e3, ms.max * 1e3, ms.valid})}};
      j[decode ? "gbps" : "gmacs"] = stat_json(g);
      j[decode ? "fraction_of_read_ceiling" : "fraction_of_int8_ceiling"] = stat_json(f);
      arm_roles.push_back(std::move(j));
    }
    for (Json& arm : js["arms"])
      if (arm["name"] == m.arms[i].name) arm["matmul_roles"] = std::move(arm_roles);
  }
  return std::string("\nThe ternary matmul line by the tensors' role (one call of several tensors sharing an input is one role): "
                     "calls and MB of weights in the profiled forward call, ms in it, median [min–max] over kept rounds; ") +
         (decode ? "GB/s = the role's weight bytes / its time; of read ceiling against that round's ceiling.\n\n"
                 : "GMAC/s = the role's weights x tokens / its time; of int8 ceiling against that round's ceiling.\n\n") +
         table.markdown();
}

RunReport run_profile(const RunSpec& run, RunContext& ctx) {
  const int prompt_len = int(profile_key::prompt_tokens(run));
  // 1: one decode token (gemv), rated against the read ceiling; more: one prompt batch of that many
  // tokens (gemm, in the model's prefill_chunk batches), rated against the int8 compute ceiling.
  const int batch = int(profile_key::tokens(run));
  const int verify_n = int(key::verify_tokens(run));
  ModelArms m = plan_arms(run, ctx, 8, verify_n);
  std::vector<std::int32_t> prompt;  // drawn once the baseline has told the vocabulary
  // Each arm decodes the same token after the same prefilled context: a snapshot assigned to the
  // call's session per call (outside the profiled forward call).
  struct Profiled {
    model::Session snapshot, session;
    std::vector<model::OpProfile> calls;
    double state_bytes = 0;  // the recurrent state, read and written back once a pass
    double state_passes = 0;  // passes over it in one profiled call: a token each, or a chunk each (chunked form)
  };
  std::vector<std::shared_ptr<Profiled>> profiled(m.arms.size());
  const auto prepare = [&](std::size_t i, ModelArm& a) {
    if (prompt.empty()) prompt = model::random_tokens(prompt_len + batch, std::max(m.vocab, 1), run_seed(run) + 3);
    ArmSetup s = setup_of(a);
    auto p = std::make_shared<Profiled>();
    if (a.model && a.failure.empty()) {
      Model* model = a.model.get();
      // Worker t on CPU t; the calling thread (t = 0) stays free, as it also runs the other arms.
      if (arm_pins_workers(run.arms[i])) model->pool().run([](int t) {
          if (t > 0) pin_current_thread(t);
        });
      model->pool().set_shares_tails(arm_shares_tails(run.arms[i]));
      const std::string disturb = arm_disturbance(run.arms[i]);
      p->snapshot = model->new_session();
      model->forward(p->snapshot, std::span(prompt.data(), std::size_t(prompt_len)));
      const std::span<const std::int32_t> next(prompt.data() + prompt_len, std::size_t(batch));
      s.weight_bytes = s.bytes = double(model->ternary_bytes_per_token());
      p->state_bytes = double(model->config().recurrent_state_bytes());
      p->state_passes = model->gdn_state_passes(batch);
      s.call = [model, p, next] {
        // Assigned into the last call's session, whose caches keep the capacity that call grew:
        // a fresh copy holds exactly its keys and values, so each call's first append moved
        // them all (megabytes at a long context), and the attention line measured that.
        p->session = p->snapshot;
        model::OpProfile prof;
        model->forward(p->session, next, false, &prof);
        p->calls.push_back(prof);
      };
      if (disturb != "none") {
        // On the last pool thread's CPU: the one a pinned worker cannot leave.
        auto busy = std::make_shared<BusyThread>(a.threads - 1, disturb == "busy-niced");
        s.call = [call = std::move(s.call), busy] {
          busy->set(true);
          call();
          busy->set(false);
        };
      }
    }
    profiled[i] = p;
    return std::vector<ArmSetup>{std::move(s)};
  };
  const TimingResult r = run_arms(run, ctx, m, {measure_options(run)}, prepare).front();

  RunReport rep;
  rep.title = run.name();
  constexpr int kOps = model::OpProfile::count;
  std::ostringstream md;
  md << "### " << rep.title << "\n\n" << model_line(m);
  const std::string profiled_call = batch == 1 ? "one decode token" : cat("one ", batch, "-token prompt batch");
  md << "kind profile: wall time per op of " << profiled_call << " after a " << prompt_len << "-token context, from model::OpProfile; "
     << r.rounds << " rounds kept after " << r.warmup << " warm-up; " << arms_order_text(r) << "; every arm's greedy tokens checked against the baseline "
     << "'" << m.arms[m.baseline].name << "' before timing (ratios against " << r.baseline_label
     << "). Cells: ms, median over rounds of the per-round mean.\n\n";
  md << ceilings_text(r);
  std::vector<Column> columns = {{"arm"}, {"layout"}, {"kernel"}, {"thr", Align::right}, {"greedy check"}};
  for (int op = 0; op < kOps; ++op) columns.push_back({model::OpProfile::name(op), Align::right});
  // A decode token is rated by its bytes against the read ceiling, a prompt batch by its
  // multiply-accumulates against the int8 compute ceiling.
  const bool decode = batch == 1;
  for (const char* c : {"total ms", "tok/s", "matmul share", "spread"}) columns.push_back({c, Align::right});
  for (const char* c : decode ? std::vector<const char*>{"matmul GB/s", "matmul of read ceiling", "state GB/s", "token bytes of read ceiling"}
                              : std::vector<const char*>{"matmul GMAC/s", "matmul of int8 ceiling", "state GB/s", "batch of int8 ceiling"})
    columns.push_back({c, Align::right});
  columns.push_back({ratio_header(r), Align::right});
  Table table(std::move(columns));
  NoiseChecks noise;
  noise.ceilings(r);
  cache_check(m, r, 1, noise);
  rep.rows.columns = {"run", "round", "arm", "layout", "kernel", "threads", "op", "seconds"};
  Json js = run_json_head(run, rep.title, m);
  js["prompt_tokens"] = prompt_len;
  js["tokens"] = batch;
  js["rounds"] = r.rounds;
  js["arms"] = Json::array();
  // Per arm, per kept round: mean seconds per op, and the total.
  std::vector<std::vector<std::array<double, kOps>>> per_round(m.arms.size());
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ArmTiming& t = r.arms[i];
    const auto& calls = profiled[i]->calls;
    if (!t.verified || t.reps == 0) continue;
    for (int k = 0; k < r.rounds; ++k) {
      const std::size_t first = 1 + std::size_t(r.warmup + k) * std::size_t(t.reps);  // after the calibration call
      std::array<double, kOps> mean{};
      for (std::size_t c = first; c < first + std::size_t(t.reps) && c < calls.size(); ++c)
        for (int op = 0; op < kOps; ++op) mean[std::size_t(op)] += calls[c].seconds[std::size_t(op)] / t.reps;
      per_round[i].push_back(mean);
    }
  }
  const auto totals = [&](std::size_t i) {
    std::vector<double> v;
    for (const auto& a : per_round[i]) {
      double s = 0;
      for (double x : a) s += x;
      v.push_back(s);
    }
    return v;
  };
  std::vector<StackedBar> bars;
  for (std::size_t i = 0; i < m.arms.size(); ++i) {
    const ModelArm& a = m.arms[i];
    const ArmTiming& t = r.arms[i];
    if (!t.verified) rep.ok = false;
    std::vector<std::string> cells = {a.name + (m.ratios.is_baseline(i) ? " (baseline)" : ""), a.layout, a.kernel,
                                      threads_cell(a.threads), check_cell(a, i == m.baseline)};
    Json arm = arm_json_head(a);
    arm["ms"] = Json::object();
    for (int op = 0; op < kOps; ++op) {
      std::vector<double> v;
      for (const auto& round : per_round[i]) v.push_back(round[std::size_t(op)] * 1e3);
      const Stat s = stat_of(v);
      cells.push_back(s.valid ? sig(s.median) : "—");
      arm["ms"][model::OpProfile::name(op)] = stat_json(s);
    }
    const std::vector<double> tot = totals(i), base_totals = totals(m.ratios.of[i]);
    // rate: matmul GB/s (decode) or GMAC/s (batch); frac: of that round's read or int8 ceiling;
    // whole: the token's bytes (weights + state both ways) of the read ceiling, or the batch's
    // multiply-accumulates over its whole time of the int8 ceiling.
    std::vector<double> rate, frac, speed, toks, share, state_gbps, whole;
    const std::vector<double> ceils = decode ? r.ceiling_of(t) : r.compute_of(t);
    const double state_bytes = profiled[i]->state_bytes;
    // A call's multiply-accumulates as its matmuls counted them (every token of the batch, the
    // head the last alone), from the calibration call: every call runs the same matmuls.
    double macs = 0;
    if (!profiled[i]->calls.empty())
      for (const auto& c : profiled[i]->calls.front().matmul_calls) macs += c.macs;
    for (std::size_t k = 0; k < per_round[i].size(); ++k) {
      const double mm = per_round[i][k][model::OpProfile::matmul], gdn = per_round[i][k][model::OpProfile::gdn];
      toks.push_back(batch / tot[k]);
      share.push_back(mm / tot[k]);
      rate.push_back((decode ? t.setup.weight_bytes : macs) / mm / 1e9);
      if (state_bytes > 0 && gdn > 0) state_gbps.push_back(2 * state_bytes * profiled[i]->state_passes / gdn / 1e9);
      if (k < ceils.size()) {
        frac.push_back(rate.back() / ceils[k]);
        whole.push_back((decode ? t.setup.weight_bytes + 2 * state_bytes : macs) / tot[k] / 1e9 / ceils[k]);
      }
      if (k < base_totals.size()) speed.push_back(base_totals[k] / tot[k]);
      for (int op = 0; op < kOps; ++op)
        rep.rows.add({run.index, k, a.name, a.layout, a.kernel, a.threads, model::OpProfile::name(op), per_round[i][k][std::size_t(op)]});
    }
    const Stat total = stat_of(tot), g = stat_of(rate), f = stat_of(frac), sp = stat_of(speed), ts = stat_of(toks),
               sh = stat_of(share), sg = stat_of(state_gbps), tf = stat_of(whole);
    if (t.verified && m.ratios.of[i] != i) noise.ratio(a.name, speed);
    noise.fraction(a.name, decode ? "its matmul fraction of the read ceiling" : "its matmul fraction of the int8 ceiling", frac);
    for (std::string c : {with_range(total, "", 1e3), ts.valid ? sig(ts.median) : "—", with_range(sh, "%", 100), spread_cell(tot), g.valid ? sig(g.median) : "—", with_range(f, "%", 100),
                          sg.valid ? sig(sg.median) : "—", with_range(tf, "%", 100), with_range(sp, "×")})
      cells.push_back(std::move(c));
    table.add(std::move(cells));
    arm["total_ms"] = stat_json(Stat{total.median * 1e3, total.min * 1e3, total.max * 1e3, total.valid});
    arm["spread"] = json_number(spread(tot));
    arm["tok_s"] = stat_json(ts);
    arm["matmul_share"] = stat_json(sh);
    arm["disturb"] = arm_disturbance(run.arms[i]);
    arm["pin_workers"] = arm_pins_workers(run.arms[i]);
    arm["share_tails"] = arm_shares_tails(run.arms[i]);
    arm["state_bytes_per_token"] = json_number(state_bytes);
    arm["state_passes"] = json_number(profiled[i]->state_passes);
    arm["state_gbps"] = stat_json(sg);
    if (decode) {
      arm["matmul_gbps"] = stat_json(g);
      arm["matmul_fraction_of_read_ceiling"] = stat_json(f);
      arm["token_bytes_fraction_of_read_ceiling"] = stat_json(tf);
    } else {
      arm["matmul_gmacs"] = stat_json(g);
      arm["matmul_fraction_of_int8_ceiling"] = stat_json(f);
      arm["batch_fraction_of_int8_ceiling"] = stat_json(tf);
    }
    arm["speedup_vs_baseline"] = stat_json(sp);
    js["arms"].push_back(std::move(arm));
  }
  md << table.markdown() << arms_footer(m);
  // The plot reads the arm rows just written, so it draws what summary.json says.
  std::vector<std::string> op_names;
  for (int op = 0; op < kOps; ++op) op_names.push_back(model::OpProfile::name(op));
  for (const Json& arm : js["arms"]) {
    const Stat total = stat_from(arm["total_ms"]);
    if (!total.valid) continue;
    StackedBar b{arm["name"].get<std::string>(), {}, "total " + sig(total.median) + " ms"};
    for (const std::string& op : op_names) b.parts.push_back(stat_from(arm["ms"][op]).median);
    bars.push_back(std::move(b));
  }
  if (decode)
    md << "\nmatmul GB/s = ternary weight bytes per token / matmul time; of read ceiling: against that round's memory read ceiling on the "
          "arm's thread count; state GB/s = the Gated DeltaNet state a token reads and writes back (twice its size) / the Gated "
          "DeltaNet time; token bytes of read ceiling = (weight bytes + twice the state) per token / total time, against the same "
          "ceiling: what a decode token must move, where the decode bandwidth fraction bills the weights alone; ";
  else
    md << "\nmatmul GMAC/s = ternary weights x " << batch << " tokens / matmul time; of int8 ceiling: against that round's int8 "
          "compute ceiling (a register-only dot loop) on the arm's thread count; state GB/s = the Gated DeltaNet state read and "
          "written back (twice its size, from cache where it fits) once a token, or once a chunk where the chunked form runs "
          "(gdn_chunk), over the batch / the Gated DeltaNet time; batch of int8 "
          "ceiling = the batch's multiply-accumulates / total time, against the same ceiling; ";
  md << spread_note() << " of the totals; " << ratio_note(r) << ", of the totals.\n";
  md << matmul_roles_text(m, r, profiled_calls(profiled), decode, js);
  if (!bars.empty())
    rep.svgs.emplace_back("decode_ms.svg", svg_stacked_bars(rep.title + ": one decode token by op", "ms", op_names, bars,
                                                            "each part: that op's median over kept rounds; total: median of per-round totals"));
  rep.warnings = std::move(noise.warnings);
  rep.markdown = md.str();
  rep.json = std::move(js);
  return rep;
}

}  // namespace

// Its small overrides take the tiny preset: micro's 260-row output matrix does not fit t2r's 16-row blocks.
void register_profile_kind() {
  KindInfo profile = model_kind(
      "profile", "per-op wall time of one decode token (matmul, quantize, Hadamard, GDN, attention, norms, other)",
      {profile_key::prompt_tokens.spec("context before the profiled token"),
       {"arm.disturb", Type::string, true,
        "none (default), busy (a competing busy thread on the last pool thread's CPU while the arm runs) "
        "or busy-niced (the same at nice 19)"},
       {"arm.pin_workers", Type::boolean, true, "pin the model's pool worker t to CPU t (default false)"},
       {"arm.share_tails", Type::boolean, true,
        "let a pool thread that has finished its share of a matmul take the others' tails (default true; "
        "false: static shares, to measure what it changes)"},
       profile_key::tokens.spec("tokens in the profiled forward call: 1 a decode token (gemv, against the read ceiling), "
                                "more a prompt batch (gemm in prefill_chunk batches, against the int8 compute ceiling)")},
      [](const RunSpec& r) {
        profile_key::prompt_tokens(r);
        profile_key::tokens(r);
        for (const ArmSpec& a : r.arms) {
          if (arm_disturbance(a) != "none" && arm_threads(r, a) < 2)
            fail_at(a.at("disturb"), "a disturbance needs at least 2 threads (it competes with the last pool thread)");
          arm_pins_workers(a);
          arm_shares_tails(a);
        }
      },
      run_profile, [](const RunSpec& r) { return model_units(r, 5, 1); });
  profile.model.context_tokens = [](const RunSpec& r) { return profile_key::prompt_tokens(r) + profile_key::tokens(r); };
  profile.small_overrides = timed_small_overrides({"preset=tiny", "verify_tokens=2", "prompt_tokens=4"});
  register_kind(std::move(profile));
}

}  // namespace ternlab::experiments
