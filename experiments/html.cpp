#include "experiments/html.hpp"

#include <algorithm>
#include <fstream>
#include <map>
#include <ostream>
#include <sstream>

#include "common/error.hpp"
#include "common/files.hpp"
#include "common/xml.hpp"
#include "experiments/compare.hpp"
#include "experiments/sweep_plan.hpp"

namespace ternlab::experiments {

namespace fs = std::filesystem;

namespace {

// Marks a comparison page, so `ternlab report` overwrites its own page and nothing else.
constexpr std::string_view kReportGenerator = "<meta name=\"generator\" content=\"ternlab report\">";

// `code` and **bold** within one line of escaped text; tags left open at the end are closed.
std::string inline_html(std::string_view line) {
  std::string o;
  bool code = false, bold = false;
  for (std::size_t i = 0; i < line.size(); ++i) {
    if (line[i] == '`') {
      o += code ? "</code>" : "<code>";
      code = !code;
    } else if (!code && line.compare(i, 2, "**") == 0) {
      o += bold ? "</strong>" : "<strong>";
      bold = !bold;
      ++i;
    } else {
      o += xml_escape(line.substr(i, 1));
    }
  }
  if (code) o += "</code>";
  if (bold) o += "</strong>";
  return o;
}

// The cells of "| a | b\| c |" (a '|' escaped as "\|" inside a cell).
std::vector<std::string> table_cells(std::string_view line) {
  std::vector<std::string> cells;
  std::string cur;
  const std::size_t end = line.find_last_not_of(" \r");
  for (std::size_t i = 1; i <= end; ++i) {
    if (line[i] == '\\' && i + 1 <= end && line[i + 1] == '|') {
      cur += '|';
      ++i;
    } else if (line[i] == '|') {
      const std::size_t a = cur.find_first_not_of(' '), b = cur.find_last_not_of(' ');
      cells.push_back(a == std::string::npos ? "" : cur.substr(a, b - a + 1));
      cur.clear();
    } else {
      cur += line[i];
    }
  }
  return cells;
}

const char* kStyle = R"(body{font-family:"DejaVu Sans",Helvetica,Arial,sans-serif;margin:1.5em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;margin:.6em 0;font-size:13px}th,td{border:1px solid #ccc;padding:3px 7px}
th{background:#f2f2f2}td.num,th.num{text-align:right}dl.machine{display:grid;grid-template-columns:max-content auto;gap:2px 12px}
dl.machine dt{font-weight:bold}dl.machine dd{margin:0;word-break:break-word}pre{background:#f7f7f7;padding:8px;overflow-x:auto}
figure.plot{margin:1em 0}figure.plot svg{max-width:100%;height:auto}section.machine{border-top:3px solid #4e79a7;margin-top:2em}
#page-check{display:none})";

// Records script errors and console errors into #page-check, and counts the plots that drew, so a
// headless browser's --dump-dom says whether the page rendered (tests/browser/report_page.sh).
const char* kCheckScript = R"(window.ternlabErrors=[];
window.addEventListener('error',function(e){window.ternlabErrors.push(String(e.message))});
(function(){var ce=console.error;console.error=function(){window.ternlabErrors.push(Array.prototype.join.call(arguments,' '));ce.apply(console,arguments)}})();
window.addEventListener('load',function(){var figs=document.querySelectorAll('figure.plot'),drawn=0;
figs.forEach(function(f){var s=f.querySelector('svg');if(s&&s.getBBox().width>0)drawn++});
var c=document.getElementById('page-check');c.setAttribute('data-plots',figs.length);c.setAttribute('data-drawn',drawn);
c.setAttribute('data-errors',window.ternlabErrors.length);c.textContent=window.ternlabErrors.join('\n')});)";

std::string page_head(const std::string& title, bool comparison, std::size_t plots) {
  return cat("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n",
             comparison ? std::string(kReportGenerator) + "\n" : std::string(), "<title>", xml_escape(title), "</title>\n<style>",
             kStyle, "</style>\n<script>", kCheckScript, "</script>\n</head>\n<body data-expected-plots=\"", plots, "\">\n");
}

std::string page_tail() { return "<div id=\"page-check\"></div>\n</body>\n</html>\n"; }

std::string machine_html(const Json& machine) {
  std::string s = "<dl class=\"machine\">\n";
  for (const auto& [k, v] : machine.items()) s += cat("<dt>", xml_escape(k), "</dt><dd>", xml_escape(text_of(v)), "</dd>\n");
  return s + "</dl>\n";
}

// The folder's summary with its plots inline where summary.md names them.
std::string folder_body(const ResultFolder& r, int heading_shift) {
  std::map<std::string, const std::string*> svg;
  for (const auto& [file, text] : r.plots) svg[file] = &text;
  std::string md = r.markdown;
  if (heading_shift > 0) {  // nest the folder's headings under the comparison page's
    std::string shifted, line;
    std::istringstream in(md);
    while (std::getline(in, line)) {
      if (line.starts_with("#")) shifted.append(std::size_t(heading_shift), '#');
      shifted += line;
      shifted += '\n';
    }
    md = shifted;
  }
  std::string s = markdown_html(md, [&](const std::string& file) {
    const auto it = svg.find(file);
    return it == svg.end() ? cat("<p>(plot ", xml_escape(file), " missing)</p>\n")
                           : cat("<figure class=\"plot\" data-file=\"", xml_escape(file), "\">", inline_svg(*it->second), "</figure>\n");
  });
  const Json& sum = r.summary;
  s += "<details open><summary>machine record</summary>\n" + machine_html(sum["machine"]) + "</details>\n";
  std::string overrides;
  for (const Json& o : sum["overrides"]) overrides += " --set " + text_of(o);
  s += cat("<details><summary>config: ", xml_escape(text_of(sum["file"])), overrides.empty() ? "" : xml_escape(overrides),
           "</summary>\n<pre>", xml_escape(r.config), "</pre>\n</details>\n");
  return s;
}

const Json& field(const Json& j, const std::string& key, const fs::path& file, const std::string& path) {
  if (!j.is_object() || !j.contains(key)) fail(file.string(), ": no field '", path, "'");
  return j[key];
}

}  // namespace

std::string markdown_html(std::string_view md, const std::function<std::string(const std::string&)>& image) {
  std::vector<std::string> lines;
  {
    std::string line;
    std::istringstream in{std::string(md)};
    while (std::getline(in, line)) lines.push_back(line);
  }
  std::string o, para;
  const auto flush_para = [&] {
    if (!para.empty()) o += "<p>" + para + "</p>\n";
    para.clear();
  };
  for (std::size_t i = 0; i < lines.size(); ++i) {
    const std::string& l = lines[i];
    if (l.empty()) {
      flush_para();
    } else if (l[0] == '#') {
      flush_para();
      const std::size_t level = std::min<std::size_t>(l.find_first_not_of('#'), 6);
      o += cat("<h", level, ">", inline_html(std::string_view(l).substr(std::min(l.size(), level + 1))), "</h", level, ">\n");
    } else if (l.starts_with("![")) {
      flush_para();
      const std::size_t open = l.find("](");
      const std::size_t close = l.rfind(')');
      if (open != std::string::npos && close != std::string::npos && close > open) o += image(l.substr(open + 2, close - open - 2));
    } else if (l[0] == '|') {
      flush_para();
      const std::vector<std::string> head = table_cells(l);
      std::vector<bool> right(head.size(), false);
      std::size_t j = i + 1;
      if (j < lines.size() && lines[j].starts_with("|")) {
        const auto rule = table_cells(lines[j]);
        for (std::size_t c = 0; c < rule.size() && c < right.size(); ++c) right[c] = rule[c].ends_with(":");
        ++j;
      }
      o += "<table>\n<thead><tr>";
      for (std::size_t c = 0; c < head.size(); ++c)
        o += cat("<th", right[c] ? " class=\"num\"" : "", ">", inline_html(head[c]), "</th>");
      o += "</tr></thead>\n<tbody>\n";
      for (; j < lines.size() && lines[j].starts_with("|"); ++j) {
        const auto cells = table_cells(lines[j]);
        o += "<tr>";
        for (std::size_t c = 0; c < cells.size(); ++c)
          o += cat("<td", c < right.size() && right[c] ? " class=\"num\"" : "", ">", inline_html(cells[c]), "</td>");
        o += "</tr>\n";
      }
      o += "</tbody>\n</table>\n";
      i = j - 1;
    } else if (l.starts_with("- ")) {
      flush_para();
      o += "<ul>\n";
      for (; i < lines.size() && lines[i].starts_with("- "); ++i) o += "<li>" + inline_html(std::string_view(lines[i]).substr(2)) + "</li>\n";
      o += "</ul>\n";
      --i;
    } else {
      if (!para.empty()) para += '\n';
      para += inline_html(l);
    }
  }
  flush_para();
  return o;
}

std::string inline_svg(std::string_view svg) {
  if (svg.starts_with("<?xml")) {
    const std::size_t end = svg.find("?>");
    if (end != std::string_view::npos) svg.remove_prefix(end + 2);
  }
  while (!svg.empty() && (svg.front() == '\n' || svg.front() == '\r')) svg.remove_prefix(1);
  return std::string(svg);
}

std::string ResultFolder::cpu() const { return summary["machine"]["cpu"].get<std::string>(); }

ResultFolder read_result_folder(const fs::path& dir) {
  ResultFolder r;
  r.dir = dir;
  const fs::path file = dir / "summary.json";
  if (!fs::is_regular_file(file)) fail(dir.string(), ": no summary.json (not a results folder of `ternlab run`)");
  try {
    r.summary = Json::parse(read_text(file));
  } catch (const nlohmann::json::parse_error& e) {
    fail(file.string(), ": not valid JSON: ", e.what());
  }
  const Json& version = field(r.summary, "results_version", file, "results_version");
  if (!version.is_number_integer() || version.get<int>() != kResultsVersion)
    fail(file.string(), ": field 'results_version' is ", version.dump(), "; this ternlab reads results version ", kResultsVersion,
         " (rerun the experiment with this build)");
  const Json& machine = field(r.summary, "machine", file, "machine");
  if (!field(machine, "cpu", file, "machine.cpu").is_string()) fail(file.string(), ": field 'machine.cpu' is not text");
  field(r.summary, "file", file, "file");
  if (!field(r.summary, "overrides", file, "overrides").is_array()) fail(file.string(), ": field 'overrides' is not a list");
  const Json& runs = field(r.summary, "runs", file, "runs");
  if (!runs.is_array()) fail(file.string(), ": field 'runs' is not a list");
  const auto read_plots = [&](const Json& plots, const std::string& where) {
    if (!plots.is_array()) fail(file.string(), ": field '", where, "' is not a list");
    for (const Json& p : plots) {
      const std::string name = p.is_string() ? p.get<std::string>() : "";
      if (name.empty() || name.find('/') != std::string::npos || name.starts_with("."))
        fail(file.string(), ": field '", where, "' names ", p.dump(), ", not a file of this folder");
      if (!fs::is_regular_file(dir / name)) fail(file.string(), ": field '", where, "' lists ", name, ", which ", dir.string(), " lacks");
      r.plots.emplace_back(name, read_text(dir / name));
    }
  };
  for (std::size_t i = 0; i < runs.size(); ++i) read_plots(field(runs[i], "plots", file, cat("runs[", i, "].plots")), cat("runs[", i, "].plots"));
  read_plots(field(r.summary, "plots", file, "plots"), "plots");
  r.markdown = fs::is_regular_file(dir / "summary.md") ? read_text(dir / "summary.md") : "";
  r.config = fs::is_regular_file(dir / "experiment.toml") ? read_text(dir / "experiment.toml") : "";
  return r;
}

std::vector<ResultFolder> collect_result_folders(const std::vector<std::string>& dirs) {
  if (dirs.empty()) fail("ternlab report: name at least one results folder");
  std::vector<ResultFolder> out;
  for (const std::string& d : dirs) {
    const fs::path dir = d;
    if (!fs::is_directory(dir)) fail(d, ": not a folder");
    if (is_sweep_folder(dir)) fail(d, ": a sweep plan folder: merge it with `ternlab report merge`");
    // A sweep point's folder: its results count only once its job wrote its exit status.
    if (fs::exists(dir / "job.json") && !fs::exists(dir / "exit.json"))
      fail(d, ": a sweep point with no exit.json: its job died half-way or is still running, so nothing of it is merged "
              "(`ternlab sweep status` on its plan folder says which; `ternlab sweep resubmit` runs it again)");
    if (fs::exists(dir / "summary.json")) {
      out.push_back(read_result_folder(dir));
      continue;
    }
    std::vector<fs::path> subs;
    for (const auto& e : fs::directory_iterator(dir))
      if (e.is_directory() && !e.path().filename().string().starts_with(".") && fs::exists(e.path() / "summary.json"))
        subs.push_back(e.path());
    if (subs.empty()) {
      for (const auto& e : fs::directory_iterator(dir))
        if (e.is_directory() && e.path().filename().string().starts_with(".") && e.path().filename().string().ends_with(".partial"))
          fail(d, ": holds only ", e.path().filename().string(), ", the temporary folder of a run that died half-way (or is still "
                  "running): nothing complete to report; run the experiment again");
      fail(d, ": no summary.json here nor in any subfolder: no results to report");
    }
    std::sort(subs.begin(), subs.end());
    for (const fs::path& s : subs) out.push_back(read_result_folder(s));
  }
  return out;
}

std::vector<std::pair<std::string, std::vector<const ResultFolder*>>> group_by_machine(const std::vector<ResultFolder>& folders) {
  std::vector<std::pair<std::string, std::vector<const ResultFolder*>>> groups;
  for (const ResultFolder& f : folders) {
    const std::string features = f.summary["machine"].value("features", std::string());
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) {
      return g.first == f.cpu() && g.second.front()->summary["machine"].value("features", std::string()) == features;
    });
    if (it == groups.end()) it = groups.insert(groups.end(), {f.cpu(), {}});
    it->second.push_back(&f);
  }
  return groups;
}

std::string results_page(const ResultFolder& r) {
  const std::string title = r.summary.contains("name") ? text_of(r.summary["name"]) : r.dir.filename().string();
  return page_head(title, false, r.plots.size()) + folder_body(r, 0) + page_tail();
}

std::string comparison_page(const std::vector<ResultFolder>& folders, const std::string& sweep_html, std::size_t sweep_plots,
                            const std::string& side_by_side) {
  std::size_t plots = sweep_plots;
  for (const ResultFolder& f : folders) plots += f.plots.size();
  const auto groups = group_by_machine(folders);
  std::string s = page_head("ternlab results comparison", true, plots);
  s += sweep_html;
  s += cat("<h1>Results comparison: ", folders.size(), " folder", folders.size() == 1 ? "" : "s", " on ", groups.size(), " machine",
           groups.size() == 1 ? "" : "s", "</h1>\n<table>\n<thead><tr><th>machine</th><th>results folder</th><th>experiment</th>"
           "<th>overrides</th><th>git</th><th>started (UTC)</th><th class=\"num\">warnings</th></tr></thead>\n<tbody>\n");
  for (const auto& [cpu, members] : groups)
    for (const ResultFolder* f : members) {
      const Json& j = f->summary;
      std::string overrides;
      for (const Json& o : j["overrides"]) {
        if (!overrides.empty()) overrides += ' ';
        overrides += text_of(o);
      }
      s += cat("<tr><td>", xml_escape(cpu), "</td><td>", xml_escape(f->dir.filename().string()), "</td><td>", xml_escape(text_of(j["file"])),
               "</td><td>", xml_escape(overrides), "</td><td>", xml_escape(text_of(j["machine"].value("git", Json("unknown")))), "</td><td>",
               xml_escape(text_of(j["machine"].value("started_utc", Json("")))), "</td><td class=\"num\">",
               j.contains("warnings") ? j["warnings"].size() : 0, "</td></tr>\n");
    }
  s += "</tbody>\n</table>\n";
  s += side_by_side;
  for (const auto& [cpu, members] : groups) {
    // Machines of one CPU model with different features (a BIOS switch, a VM's CPU model) apart.
    const bool twin = std::count_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == cpu; }) > 1;
    const std::string title = twin ? cat(cpu, " (", text_of(members.front()->summary["machine"].value("features", Json(""))), ")") : cpu;
    s += cat("<section class=\"machine\">\n<h2>", xml_escape(title), "</h2>\n", machine_html(members.front()->summary["machine"]));
    for (const ResultFolder* f : members)
      s += cat("<article class=\"results\">\n<p>folder <code>", xml_escape(f->dir.string()), "</code></p>\n", folder_body(*f, 2),
               "</article>\n");
    s += "</section>\n";
  }
  return s + page_tail();
}

std::string text_of(const Json& j) { return j.is_string() ? j.get<std::string>() : j.dump(); }

void write_results_page(const fs::path& dir) { write_file_atomically(dir / "index.html", results_page(read_result_folder(dir))); }

fs::path write_comparison_page(const std::vector<std::string>& dirs, const fs::path& out, std::ostream& log,
                               FolderComparison* comparison) {
  if (fs::exists(out)) {
    if (!fs::is_directory(out)) fail(out.string(), ": -o/--output names a file, not a folder");
    bool ours = true;
    for (const auto& e : fs::directory_iterator(out)) {
      const std::string name = e.path().filename().string();
      const bool page = name == "index.html" && read_text(e.path()).find(kReportGenerator) != std::string::npos;
      const bool merged = (name == "merged.json" && read_text(e.path()).find("\"generator\": \"ternlab report\"") != std::string::npos) ||
                          name == "merged.csv";
      if (!page && !merged) ours = false;
    }
    if (!ours) fail(out.string(), ": -o/--output names a folder that holds other files than an earlier `ternlab report` page; refusing to write there");
  }
  // Sweep plan folders are merged point by point; any other argument is a results folder or holds them.
  std::vector<std::string> plain;
  std::vector<fs::path> sweeps;
  for (const std::string& d : dirs) {
    if (is_sweep_folder(d))
      sweeps.emplace_back(d);
    else
      plain.push_back(d);
  }
  std::vector<ResultFolder> folders = plain.empty() && !sweeps.empty() ? std::vector<ResultFolder>{} : collect_result_folders(plain);
  SweepMerge merged;
  if (!sweeps.empty()) {
    merged = merge_sweeps(sweeps);
    for (ResultFolder& f : merged.folders) folders.push_back(std::move(f));
  }
  FolderComparison shared = compare_folders(folders);
  const std::string page =
      comparison_page(folders, merged.html, merged.plots, folders.size() > 1 ? shared_arms_html(shared) : std::string());
  std::error_code ec;
  fs::create_directories(out, ec);
  if (ec) fail(out.string(), ": cannot create the -o/--output folder: ", ec.message());
  const fs::path index = out / "index.html";
  // A sweep's point table, or else every folder's arms: merged.json and merged.csv are always written.
  write_file_atomically(out / "merged.json", json_text(sweeps.empty() ? shared.json : merged.json));
  write_file_atomically(out / "merged.csv", sweeps.empty() ? csv_text(shared.rows) : merged.csv);
  write_file_atomically(index, page);
  const auto groups = group_by_machine(folders);
  log << "report: " << index.string() << " (" << folders.size() << " results folder" << (folders.size() == 1 ? "" : "s") << ", "
      << groups.size() << " machine" << (groups.size() == 1 ? "" : "s") << ")\n";
  if (comparison) *comparison = std::move(shared);
  return index;
}

}  // namespace ternlab::experiments
