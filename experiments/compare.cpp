#include "experiments/compare.hpp"

#include <map>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "common/xml.hpp"
#include "experiments/report.hpp"

namespace ternlab::experiments {

namespace {

std::string ratio_text(double r) { return sig(r) + "x"; }

}  // namespace

FolderComparison compare_folders(const std::vector<ResultFolder>& folders) {
  FolderComparison c;
  for (const ResultFolder& f : folders) c.folders.push_back(f.dir.filename().string());
  c.rows.file = "merged.csv";
  c.rows.columns = {"folder", "cpu", "git", "started_utc", "run", "test", "arm", "layout", "kernel", "threads", "verified",
                    "seconds_median", "seconds_min", "seconds_max", "tok_s_median", "gbps_median", "fraction_of_read_ceiling_median",
                    "speedup_vs_baseline_median"};
  std::map<std::tuple<std::string, std::string, std::string>, std::size_t> index;  // (run, test, arm) -> shared row
  std::vector<SharedArm> all;
  Json arms = Json::array();
  for (std::size_t fi = 0; fi < folders.size(); ++fi) {
    const Json& s = folders[fi].summary;
    const Json& machine = s["machine"];
    for (const Json& run : s.value("runs", Json::array()))
      for (const auto& [test, obj] : run_tests(run))
        for (const Json& arm : (*obj)["arms"]) {
          if (arm.value("control", false) || !arm.contains("name")) continue;
          const std::string name = text_of(arm["name"]);
          const std::string run_name = text_of(run.value("name", Json("")));
          const Stat secs = arm.contains("seconds_per_call") ? stat_from(arm["seconds_per_call"]) : Stat{};
          const auto median = [&](const char* key) {
            return arm.contains(key) ? Cell(stat_from(arm[key]).median) : Cell();
          };
          c.rows.add({c.folders[fi], text_of(machine.value("cpu", Json(""))), text_of(machine.value("git", Json(""))),
                      text_of(machine.value("started_utc", Json(""))), run_name, test, name, text_of(arm.value("layout", Json(""))),
                      text_of(arm.value("kernel", Json(""))), arm.contains("threads") ? Cell(arm["threads"].get<std::int64_t>()) : Cell(),
                      std::string(arm.value("verified", true) ? "true" : "false"), secs.valid ? Cell(secs.median) : Cell(),
                      secs.valid ? Cell(secs.min) : Cell(), secs.valid ? Cell(secs.max) : Cell(), median("tok_s"), median("gbps"),
                      median("fraction_of_read_ceiling"), median("speedup_vs_baseline")});
          arms.push_back({{"folder", c.folders[fi]}, {"run", run_name}, {"test", test}, {"arm", name},
                          {"seconds_per_call", secs.valid ? stat_json(secs) : Json()}});
          if (!secs.valid) continue;
          const auto key = std::make_tuple(run_name, test, name);
          auto it = index.find(key);
          if (it == index.end()) {
            it = index.emplace(key, all.size()).first;
            SharedArm a{run_name, test, name, {}, {}, {}};
            a.seconds.resize(folders.size());
            all.push_back(std::move(a));
          }
          all[it->second].seconds[fi] = secs;
        }
  }
  Json shared = Json::array();
  for (SharedArm& a : all) {
    if (!a.seconds.front()) continue;
    int present = 0;
    for (const auto& s : a.seconds) present += s.has_value();
    if (present < 2) continue;
    a.ratio.resize(a.seconds.size());
    a.within_noise.resize(a.seconds.size(), false);
    const Stat& ref = *a.seconds.front();
    Json per = Json::array();
    for (std::size_t i = 0; i < a.seconds.size(); ++i) {
      if (!a.seconds[i]) {
        per.push_back(Json());
        continue;
      }
      const Stat& s = *a.seconds[i];
      a.ratio[i] = ref.median / s.median;
      a.within_noise[i] = i == 0 || (s.min <= ref.max && ref.min <= s.max);
      per.push_back({{"folder", c.folders[i]}, {"seconds_per_call", stat_json(s)}, {"speedup_vs_first", json_number(*a.ratio[i])},
                     {"within_noise", bool(a.within_noise[i])}});
    }
    shared.push_back({{"run", a.run}, {"test", a.test}, {"arm", a.arm}, {"folders", per}});
    c.shared.push_back(std::move(a));
  }
  c.json = {{"generator", "ternlab report"}, {"results_version", kResultsVersion}, {"folders", c.folders}, {"arms", arms},
            {"shared", shared},
            {"note", "speedup_vs_first = seconds per call in the first folder / here (> 1 is faster); within_noise: the two "
                     "folders' per-round ranges overlap"}};
  return c;
}

std::string shared_arms_markdown(const FolderComparison& c) {
  if (c.shared.empty())
    return cat("No arm is in the first folder and another one (an arm is matched by its run, test and name), so there is "
               "nothing to put side by side.\n");
  std::string s = "| run | test | arm |";
  for (const std::string& f : c.folders) s += cat(" ", f, " |");
  s += "\n|---|---|---|";
  for (std::size_t i = 0; i < c.folders.size(); ++i) s += "--:|";
  s += "\n";
  for (const SharedArm& a : c.shared) {
    s += cat("| ", a.run, " | ", a.test.empty() ? "-" : a.test, " | ", a.arm, " |");
    for (std::size_t i = 0; i < a.seconds.size(); ++i) {
      if (!a.seconds[i]) {
        s += " - |";
        continue;
      }
      s += cat(" ", with_range(*a.seconds[i], " s"));
      if (i > 0) s += cat(", ", ratio_text(*a.ratio[i]), a.within_noise[i] ? " (within noise)" : "");
      s += " |";
    }
    s += "\n";
  }
  return s + "\nseconds per call: median [min-max] over each folder's kept rounds; ratio = time in the first folder / "
             "time here (> 1 is faster); within noise: the two folders' per-round ranges overlap.\n";
}

std::string shared_arms_html(const FolderComparison& c) {
  std::string s = cat("<section class=\"side-by-side\">\n<h2>Side by side: the arms the folders share</h2>\n");
  if (c.shared.empty())
    return s + "<p>No arm is in the first folder and another one (an arm is matched by its run, test and name).</p>\n</section>\n";
  s += "<table>\n<thead><tr><th>run</th><th>test</th><th>arm</th>";
  for (const std::string& f : c.folders) s += cat("<th class=\"num\">", xml_escape(f), "</th>");
  s += "</tr></thead>\n<tbody>\n";
  for (const SharedArm& a : c.shared) {
    s += cat("<tr><td>", xml_escape(a.run), "</td><td>", xml_escape(a.test.empty() ? "-" : a.test), "</td><td>", xml_escape(a.arm),
             "</td>");
    for (std::size_t i = 0; i < a.seconds.size(); ++i) {
      if (!a.seconds[i]) {
        s += "<td class=\"num\">-</td>";
        continue;
      }
      std::string cell = with_range(*a.seconds[i], " s");
      if (i > 0) cell += cat("<br>", ratio_text(*a.ratio[i]), a.within_noise[i] ? " (within noise)" : "");
      s += cat("<td class=\"num\">", i > 0 ? cell : xml_escape(cell), "</td>");
    }
    s += "</tr>\n";
  }
  return s + "</tbody>\n</table>\n<p>Seconds per call: median [min–max] over each folder's kept rounds. Ratio: time in the first "
             "folder / time here (&gt; 1 is faster). Within noise: the two folders' per-round ranges overlap.</p>\n</section>\n";
}

std::vector<std::string> regressions(const FolderComparison& c, double percent) {
  std::vector<std::string> out;
  for (const SharedArm& a : c.shared)
    for (std::size_t i = 1; i < a.seconds.size(); ++i) {
      if (!a.ratio[i] || a.within_noise[i]) continue;
      const double slower = 1.0 / *a.ratio[i];  // time here / time in the first folder
      if (slower > 1.0 + percent / 100.0)
        out.push_back(cat(a.run, a.test.empty() ? "" : " / " + a.test, " / ", a.arm, ": ", c.folders[i], " ", sig(slower), "x slower than ",
                          c.folders[0], " (", with_range(*a.seconds[i], " s"), " against ", with_range(*a.seconds[0], " s"), ")"));
    }
  return out;
}

}  // namespace ternlab::experiments
