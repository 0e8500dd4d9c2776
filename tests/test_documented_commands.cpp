// Every `build/ternlab run ...` command written in README.md, docs/**/*.md and the configs' header
// comments, run in-process: planned exactly as written (what --dry-run does), then, unless it names
// a full-size preset, run for real with small-size overrides appended. A command whose next line
// in the docs is `ternlab: error: ...` must fail with that message ("..." stands for any text).
// Commands that need a file this checkout does not have are listed in kSkipped with the reason, and
// each listed skip must still be found in the docs.
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "experiments/config.hpp"
#include "experiments/kinds.hpp"
#include "experiments/runner.hpp"
#include "tests/support.hpp"

using namespace ternlab;
using namespace ternlab::experiments;
namespace fs = std::filesystem;

namespace {

struct Documented {
  std::string where;   // "docs/model.md:52"
  std::string text;    // the command as written, continuation lines joined
  std::string error;   // the documented error message, "" when it must succeed
};

// Commands that need a file outside this checkout: skipped, with the reason.
const std::vector<std::pair<std::string, std::string>> kSkipped = {
    {"--set model=/path/to/Ternary-Bonsai-2-27B.gguf", "a real Ternary Bonsai 2 GGUF file, not in this checkout"},
    {"--set model=/work/models/bonsai-27b.gguf", "a 7.2 GB synthesized file (ternlab model synth --preset bonsai-27b), not in this checkout"},
#if defined(__aarch64__)
    {"configs/prefill-tiles.toml", "x86: its arm names the unpack-vecdot kernel, which NEON does not have"},
    {"configs/slot-accumulators.toml", "x86: its arms name AVX2 kernels"},
#endif
};

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t\r") + 1);
  return s;
}

// A header comment line of a config: the text after "#"; other lines are not documentation.
std::string doc_text(const std::string& line, bool toml) {
  if (!toml) return trim(line);
  const std::string t = trim(line);
  return t.rfind('#', 0) == 0 ? trim(t.substr(1)) : std::string();
}

std::vector<Documented> commands_in(const fs::path& file) {
  const bool toml = file.extension() == ".toml";
  std::vector<std::string> lines;
  {
    std::ifstream f(file);
    for (std::string l; std::getline(f, l);) lines.push_back(l);
  }
  const std::string name = fs::relative(file, TERNLAB_SOURCE_DIR).string();
  const std::string prefix = "build/ternlab run ";
  std::vector<Documented> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    std::string t = doc_text(lines[i], toml);
    if (t.rfind(prefix, 0) == 0) {
      Documented d{cat(name, ":", i + 1), t, ""};
      while (!d.text.empty() && d.text.back() == '\\' && i + 1 < lines.size()) d.text = trim(d.text.substr(0, d.text.size() - 1)) + " " + doc_text(lines[++i], toml);
      if (i + 1 < lines.size() && doc_text(lines[i + 1], toml).rfind("ternlab: error: ", 0) == 0)
        d.error = doc_text(lines[i + 1], toml).substr(std::string("ternlab: error: ").size());
      out.push_back(d);
      continue;
    }
    // Inline code: `build/ternlab run ...` inside prose.
    for (std::size_t at = t.find("`" + prefix); at != std::string::npos; at = t.find("`" + prefix, at + 1)) {
      const std::size_t end = t.find('`', at + 1);
      if (end != std::string::npos) out.push_back({cat(name, ":", i + 1), t.substr(at + 1, end - at - 1), ""});
    }
  }
  return out;
}

struct Command {
  std::string file;
  RunOptions opt;
};

Command parse(const std::vector<std::string>& w) {
  if (w.size() < 3 || w[0] != "build/ternlab" || w[1] != "run") fail("not a run command");
  Command c;
  c.file = w[2];
  for (std::size_t i = 3; i < w.size(); ++i) {
    if (w[i] == "--set" && i + 1 < w.size())
      c.opt.overrides.push_back(w[++i]);
    else if (w[i].rfind("--set=", 0) == 0)
      c.opt.overrides.push_back(w[i].substr(6));
    else if (w[i] == "--dry-run")
      c.opt.dry_run = true;
    else if (w[i] != "--progress" && w[i] != "--no-progress")
      fail("unknown argument '", w[i], "'");
  }
  return c;
}

// The message matches the documented one: "..." stands for any text, the rest in order from the start.
bool matches(const std::string& got, const std::string& documented) {
  std::size_t pos = 0;
  std::size_t from = 0;
  bool first = true;
  while (true) {
    const std::size_t dots = documented.find("...", from);
    const std::string piece = documented.substr(from, dots == std::string::npos ? std::string::npos : dots - from);
    const std::size_t at = got.find(piece, pos);
    if (at == std::string::npos || (first && at != 0)) return false;
    pos = at + piece.size();
    first = false;
    if (dots == std::string::npos) return pos == got.size();
    from = dots + 3;
  }
}

// Small sizes per kind (each kind declares its own, KindInfo::small_overrides), appended after the
// documented overrides (later --set wins).
std::vector<std::string> small_sizes(const std::string& kind, const std::string& output) {
  std::vector<std::string> s = {"output=" + output};
  const std::vector<std::string>& small = find_kind(kind, {}).small_overrides;
  s.insert(s.end(), small.begin(), small.end());
  return s;
}

// Runs in the source tree (the commands' paths are relative to it) and returns to where it was.
struct InSourceTree {
  fs::path was = fs::current_path();
  InSourceTree() { fs::current_path(TERNLAB_SOURCE_DIR); }
  ~InSourceTree() { fs::current_path(was); }
};

std::vector<Documented> all_documented() {
  std::vector<fs::path> files = {fs::path(TERNLAB_SOURCE_DIR) / "README.md"};
  for (const auto& e : fs::recursive_directory_iterator(fs::path(TERNLAB_SOURCE_DIR) / "docs"))
    if (e.path().extension() == ".md") files.push_back(e.path());
  for (const auto& e : fs::directory_iterator(fs::path(TERNLAB_SOURCE_DIR) / "configs"))
    if (e.path().extension() == ".toml") files.push_back(e.path());
  std::sort(files.begin(), files.end());
  std::vector<Documented> all;
  for (const fs::path& f : files)
    for (Documented& d : commands_in(f)) all.push_back(std::move(d));
  return all;
}

}  // namespace

TEST_SUITE("experiments-docs") {
  TEST_CASE("the command extraction reads code lines, config headers, continuations, inline code and documented errors") {
    const fs::path dir = fs::temp_directory_path() / cat("ternlab-docs-", getpid());
    fs::create_directories(dir);
    std::ofstream(dir / "a.md") << "text\n    build/ternlab run configs/tiny.toml   # comment\n"
                                << "    build/ternlab run configs/x.toml --set 'a=[\"p\", \"q\"]' \\\n        --set b=1\n"
                                << "    ternlab: error: --set b=1: ... bad\n"
                                << "prose `build/ternlab run configs/y.toml --dry-run` more\n";
    std::ofstream(dir / "b.toml") << "#   build/ternlab run configs/b.toml --set c=2 \\\n#       --set d=3\nkind = \"gemv\"\n"
                                  << "x = \"build/ternlab run not-a-comment.toml\"\n";
    const auto a = commands_in(dir / "a.md");
    REQUIRE(a.size() == 3);
    CHECK(test::shell_words(a[0].text) == std::vector<std::string>{"build/ternlab", "run", "configs/tiny.toml"});
    CHECK(a[0].error.empty());
    CHECK(test::shell_words(a[1].text) == std::vector<std::string>{"build/ternlab", "run", "configs/x.toml", "--set", "a=[\"p\", \"q\"]", "--set", "b=1"});
    CHECK(a[1].error == "--set b=1: ... bad");
    CHECK(a[2].text == "build/ternlab run configs/y.toml --dry-run");
    const auto b = commands_in(dir / "b.toml");
    REQUIRE(b.size() == 1);
    CHECK(b[0].text == "build/ternlab run configs/b.toml --set c=2 --set d=3");
    CHECK(matches("--set b=1: key 'b': very bad", "--set b=1: ... bad"));
    CHECK_FALSE(matches("--set b=1: key 'b': very bad indeed", "--set b=1: ... bad"));
    CHECK_FALSE(matches("x --set b=1: bad", "--set b=1: ... bad"));
    fs::remove_all(dir);
  }

  TEST_CASE("every documented ternlab run command plans, runs on small sizes, or fails with its documented error") {
    const std::vector<Documented> all = all_documented();
    REQUIRE(all.size() >= 25);
    const fs::path out = fs::temp_directory_path() / cat("ternlab-docs-run-", getpid());
    InSourceTree here;
    // The documented full-size commands are written for the 24 GiB machine the docs describe; plan
    // them against that, not against whatever this host has free at the moment.
    const char* had_limit = std::getenv("TERNLAB_MEMORY_LIMIT_MIB");
    const std::string saved_limit = had_limit ? had_limit : "";
    ::setenv("TERNLAB_MEMORY_LIMIT_MIB", "24576", 1);
    struct RestoreLimit {
      const char* had;
      std::string value;
      ~RestoreLimit() {
        if (had)
          ::setenv("TERNLAB_MEMORY_LIMIT_MIB", value.c_str(), 1);
        else
          ::unsetenv("TERNLAB_MEMORY_LIMIT_MIB");
      }
    } restore{had_limit, saved_limit};
    std::vector<std::string> skips_found;
    int planned = 0, ran = 0, errors = 0;
    std::set<std::string> seen;
    for (const Documented& d : all) {
      INFO(d.where, ": ", d.text);
      // The same command written twice (a chapter and the walkthroughs' index) runs once.
      if (!seen.insert(d.text).second) continue;
      const auto skip = std::find_if(kSkipped.begin(), kSkipped.end(), [&](const auto& s) { return d.text.find(s.first) != std::string::npos; });
      if (skip != kSkipped.end()) {
        MESSAGE("skipped ", d.where, ": ", d.text, " (needs ", skip->second, ")");
        skips_found.push_back(skip->first);
        continue;
      }
      const Command c = parse(test::shell_words(d.text));
      std::ostringstream log;
      if (!d.error.empty()) {
        std::string got;
        try {
          run_experiment_file(c.file, RunOptions{c.opt.overrides, true, 0}, log);
        } catch (const Error& e) {
          got = e.what();
        }
        CHECK_MESSAGE(matches(got, d.error), "documented: ", d.error, "\ngot: ", got);
        ++errors;
        continue;
      }
      // 1. As written, planned only: every check that runs before anything is measured.
      Plan plan;
      try {
        run_experiment_file(c.file, RunOptions{c.opt.overrides, true, 0}, log);
        plan = load_plan(c.file, c.opt.overrides);
        ++planned;
      } catch (const Error& e) {
        FAIL_CHECK("planning failed: ", std::string(e.what()));
        continue;
      }
      // 2. Run, unless documented as a dry run or sized for the full model (never synthesized here),
      // on the command line or in the file.
      if (c.opt.dry_run || d.text.find("bonsai-27b") != std::string::npos || plan.runs.front().string("preset", "") == "bonsai-27b") continue;
      RunOptions opt = c.opt;
      const auto small = small_sizes(plan.runs.front().kind, (out / "results").string());
      opt.overrides.insert(opt.overrides.end(), small.begin(), small.end());
      opt.progress = 0;
      try {
        const RunOutcome o = run_experiment_file(c.file, opt, log);
        CHECK_MESSAGE(o.exit_code == 0, log.str());
        ++ran;
      } catch (const Error& e) {
        FAIL_CHECK("the run failed: ", std::string(e.what()), "\n", log.str());
      }
    }
    MESSAGE(planned, " planned, ", ran, " run on small sizes, ", errors, " documented errors, ", skips_found.size(), " skipped");
    CHECK(ran >= 15);
    CHECK(errors >= 2);
    // Each listed skip names a command the docs still contain.
    for (const auto& [text, why] : kSkipped) CHECK_MESSAGE(std::count(skips_found.begin(), skips_found.end(), text) >= 1, text);
    std::error_code ec;
    fs::remove_all(out, ec);
  }
}
