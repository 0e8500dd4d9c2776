// Every `build/ternlab ...` and `build/ternlab_gbench ...` command other than `ternlab run` written in
// README.md, docs/**/*.md (the walkthroughs included) and the configs' header comments, run as a
// subprocess of the built binaries: small sizes replace or join the documented ones where a flag allows,
// "/tmp/" becomes a private temporary folder, and the working folder is a temporary copy of the
// checkout's layout (links to its folders), so nothing lands in the source tree. `ternlab run` commands
// are run in-process by suite experiments-docs, and docs/new-layout.md's by suite tutorial; neither is
// run again here. Commands that need a file this checkout does not have or minutes of time are listed
// in kSkipped with the reason, and each listed skip must still be found in the docs.
// Suite docs-numbers, below, checks the pages' generated blocks of numbers against fresh runs.
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <optional>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include <nlohmann/json.hpp>

#include "common/error.hpp"
#include "common/strings.hpp"
#include "kernels/peers/peers.hpp"
#include "tests/support.hpp"

using namespace ternlab;
namespace fs = std::filesystem;

namespace {

struct Documented {
  std::string where;  // "docs/model.md:52"
  std::string text;   // the command as written, continuation lines joined
};

const std::vector<std::pair<std::string, std::string>> kSkipped = {
    {"--preset bonsai-27b", "writes full-size 27B layers: a GiB-sized file and minutes"},
    {"b27-4l.gguf", "reads the 27B-layer file the skipped synth command writes"},
    {" FILE ", "FILE stands for a model file the reader names"},
    {"[--tensors]", "the brackets mark an optional flag; `model info` without it runs from README.md"},
    {"/tmp/ternlab-report-demo", "reads the folder written by the run command above it, which suite experiments-docs runs"},
    {"llamacpp-compare-<time>", "reads the results folders the commands above it write, named by the time they started"},
    {"explore run /tmp/ri", "measures a whole space (minutes); suite explore plans and runs a six-candidate space end to end"},
    {"explore report /tmp/sf", "reads the runs the Slurm jobs above it write; suite explore runs a plan twice and reports them"},
};

// Small sizes per command: a documented value of the option is replaced, a missing option appended.
// `=` marks options written --name=value (Google Benchmark's style).
const std::map<std::string, std::vector<std::pair<std::string, std::string>>> kSmall = {
    {"bench", {{"--rounds", "1"}, {"--gemv", "256x512"}, {"--gemm", "256x512"}, {"--cols", "4"}, {"--ceiling-mib", "1"}, {"--min-seconds", "0.001"}}},
    {"kernels --plan", {{"--shape", "256x512"}, {"--tokens", "1"}}},
    {"kernels --check-estimate", {{"--shape", "256x512"}, {"--rounds", "1"}}},
    {"kernels ceilings", {{"--rounds", "1"}, {"--mib", "64"}}},
    // The model part's perplexity on the first 400 bytes of the held-out text ({tmp}: the test's folder).
    {"quickstart", {{"--rows", "256"}, {"--cols", "512"}, {"--reps", "1"}, {"--rounds", "1"}, {"--text", "{tmp}/short-text.txt"}}},
    {"model bench", {{"-p", "8"}, {"-n", "4"}, {"-t", "1"}, {"-r", "1"}, {"--warmup", "0"}}},
    {"model generate", {{"-n", "4"}}},
    {"model perplexity", {{"--tokens", "32"}}},
    {"model verify-costs", {{"--rounds", "1"}, {"--prompt", "4"}}},
    {"gbench", {{"--gemv=", "256x512"}, {"--gemm=", "256x512"}, {"--cols=", "4"}, {"--threads=", "1"}, {"--ceiling-mib=", "1"},
                {"--benchmark_min_time=", "0.001"}, {"--benchmark_repetitions=", "1"}}},
};

std::string trim(std::string s) {
  s.erase(0, s.find_first_not_of(" \t"));
  s.erase(s.find_last_not_of(" \t\r") + 1);
  return s;
}

bool is_cli(const std::string& t) {
  return (t.rfind("build/ternlab ", 0) == 0 || t.rfind("build/ternlab_gbench ", 0) == 0) && t.rfind("build/ternlab run ", 0) != 0;
}

std::vector<Documented> commands_in(const fs::path& file, const std::string& name) {
  const bool toml = file.extension() == ".toml";
  std::vector<std::string> lines;
  {
    std::ifstream f(file);
    for (std::string l; std::getline(f, l);) {
      std::string t = trim(l);
      if (toml) t = t.rfind('#', 0) == 0 ? trim(t.substr(1)) : std::string();
      lines.push_back(t);
    }
  }
  std::vector<Documented> out;
  for (std::size_t i = 0; i < lines.size(); ++i) {
    if (is_cli(lines[i])) {
      Documented d{cat(name, ":", i + 1), lines[i]};
      while (!d.text.empty() && d.text.back() == '\\' && i + 1 < lines.size()) d.text = trim(d.text.substr(0, d.text.size() - 1)) + " " + lines[++i];
      out.push_back(d);
      continue;
    }
    for (std::size_t at = lines[i].find("`build/ternlab"); at != std::string::npos; at = lines[i].find("`build/ternlab", at + 1)) {
      const std::size_t end = lines[i].find('`', at + 1);
      const std::string t = end == std::string::npos ? "" : lines[i].substr(at + 1, end - at - 1);
      if (is_cli(t)) out.push_back({cat(name, ":", i + 1), t});
    }
  }
  return out;
}

// The key into kSmall: "gbench", or the subcommand words ("model bench", "kernels --plan",
// "kernels --check-estimate", "kernels ceilings").
std::string command_key(const std::vector<std::string>& w) {
  if (w[0] == "build/ternlab_gbench") return "gbench";
  if (w.size() > 2 && w[1] == "model") return "model " + w[2];
  if (w[1] == "kernels" && std::find(w.begin(), w.end(), "--plan") != w.end()) return "kernels --plan";
  if (w[1] == "kernels" && std::find(w.begin(), w.end(), "--check-estimate") != w.end()) return "kernels --check-estimate";
  if (w.size() > 2 && w[1] == "kernels" && w[2] == "ceilings") return "kernels ceilings";
  return w[1];
}

std::vector<std::string> small_sized(std::vector<std::string> w, const std::string& tmp) {
  // Output redirection is the shell's; the test captures the output itself.
  if (const auto gt = std::find(w.begin(), w.end(), ">"); gt != w.end()) w.erase(gt, w.end());
  for (std::string& a : w)
    if (a.rfind("/tmp/", 0) == 0) a = tmp + a.substr(4);
  const auto small = kSmall.find(command_key(w));
  if (small == kSmall.end()) return w;
  for (const auto& [opt, small_value] : small->second) {
    std::string value = small_value;
    if (const std::size_t at = value.find("{tmp}"); at != std::string::npos) value.replace(at, 5, tmp);
    bool found = false;
    for (std::size_t i = 0; i < w.size(); ++i) {
      if (opt.back() == '=' && w[i].rfind(opt, 0) == 0) {
        w[i] = opt + value;
        found = true;
      } else if (w[i] == opt && i + 1 < w.size()) {
        w[i + 1] = value;
        found = true;
      }
    }
    if (found) continue;
    if (opt.back() == '=') {
      w.push_back(opt + value);
    } else {
      w.push_back(opt);
      w.push_back(value);
    }
  }
  return w;
}

// Runs argv in `dir` with stdout and stderr in `log`; returns the exit status (-1: no normal exit).
int run_in(const fs::path& dir, const std::vector<std::string>& argv, const fs::path& log, const fs::path& wisdom) {
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int fd = ::open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0 || ::chdir(dir.c_str()) != 0) ::_exit(126);
    ::dup2(fd, 1);
    ::dup2(fd, 2);
    // Measured kernel plans go to a private wisdom file, not the user's cache.
    ::setenv("TERNLAB_WISDOM", wisdom.c_str(), 1);
    std::vector<char*> args;
    for (const std::string& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    ::execv(args[0], args.data());
    ::_exit(127);
  }
  int status = 0;
  if (pid < 0 || ::waitpid(pid, &status, 0) != pid) return -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

// README.md, then docs/**/*.md.
std::vector<fs::path> markdown_pages() {
  const fs::path src = TERNLAB_SOURCE_DIR;
  std::vector<fs::path> files = {src / "README.md"};
  for (const auto& e : fs::recursive_directory_iterator(src / "docs"))
    if (e.path().extension() == ".md") files.push_back(e.path());
  std::sort(files.begin() + 1, files.end());
  return files;
}

// A working folder for documented commands: the checkout's folders as links, build/ holding the two
// binaries, so commands read the checkout's files and write nothing into it.
fs::path make_work_folder(const fs::path& work) {
  const fs::path src = TERNLAB_SOURCE_DIR;
  fs::create_directories(work / "build");
  for (const auto& e : fs::directory_iterator(src)) {
    const std::string n = e.path().filename().string();
    if (n.rfind("build", 0) != 0 && n != "results" && n[0] != '.') fs::create_directory_symlink(e.path(), work / n);
  }
  fs::create_symlink(TERNLAB_CLI, work / "build" / "ternlab");
  fs::create_symlink(TERNLAB_GBENCH, work / "build" / "ternlab_gbench");
  return work;
}

std::string tail_of(const fs::path& log) {
  std::ifstream f(log);
  std::stringstream s;
  s << f.rdbuf();
  const std::string all = s.str();
  return all.size() > 2000 ? all.substr(all.size() - 2000) : all;
}

}  // namespace

TEST_SUITE("docs-cli") {
  TEST_CASE("small sizes replace documented values, join missing options and keep /tmp/ private") {
    const auto w = small_sized(test::shell_words("build/ternlab bench --gemv 4096x4096 --threads 1 > out.json"), "/x");
    CHECK(w == std::vector<std::string>{"build/ternlab", "bench", "--gemv", "256x512", "--threads", "1", "--rounds", "1", "--gemm", "256x512",
                                        "--cols", "4", "--ceiling-mib", "1", "--min-seconds", "0.001"});
    const auto g = small_sized(test::shell_words("build/ternlab_gbench --threads=1,2 --benchmark_filter='a|b'"), "/x");
    CHECK(g[1] == "--threads=1");
    CHECK(g[2] == "--benchmark_filter=a|b");
    CHECK(small_sized(test::shell_words("build/ternlab kernels --check-estimate --shape 32768x8192 --rounds 3"), "/x") ==
          std::vector<std::string>{"build/ternlab", "kernels", "--check-estimate", "--shape", "256x512", "--rounds", "1"});
    CHECK(small_sized(test::shell_words("build/ternlab model info /tmp/t.gguf"), "/x") ==
          std::vector<std::string>{"build/ternlab", "model", "info", "/x/t.gguf"});
    const fs::path f = fs::temp_directory_path() / cat("ternlab-cli-", getpid(), ".md");
    std::ofstream(f) << "    build/ternlab layouts   # list\n    build/ternlab run configs/tiny.toml\n"
                     << "prose `build/ternlab model info x.gguf` and `build/ternlab run configs/x.toml`\n";
    const auto c = commands_in(f, "a.md");
    REQUIRE(c.size() == 2);
    CHECK(c[0].where == "a.md:1");
    CHECK(c[1].text == "build/ternlab model info x.gguf");
    fs::remove(f);
  }

  TEST_CASE("--json on layouts, kernels, census, perplexity and sweep status: one JSON document on standard output") {
    const test::ScratchDir scratch("ternlab-json");
    const fs::path tmp = scratch.dir;
    const std::string model = TERNLAB_SOURCE_DIR "/models/bonsai-kjv-py/bonsai-kjv-py.gguf";
    const std::string text = TERNLAB_SOURCE_DIR "/models/bonsai-kjv-py/heldout-code.txt";
    const fs::path log = tmp / "log.txt";
    const auto json_of = [&](const std::vector<std::string>& argv) {
      REQUIRE(run_in(tmp, argv, log, tmp / "wisdom.toml") == 0);
      std::ifstream in(log);
      return nlohmann::json::parse(in);  // throws (fails the test) unless the whole output is one JSON document
    };
    const auto layouts = json_of({TERNLAB_CLI, "layouts", "--json"});
    REQUIRE(layouts.is_array());
    CHECK(layouts.size() >= 16);
    const auto t2p = std::find_if(layouts.begin(), layouts.end(), [](const auto& l) { return l["layout"] == "t2p"; });
    REQUIRE(t2p != layouts.end());
    CHECK((*t2p)["bits_per_weight"] == 2.125);
    const auto kernels = json_of({TERNLAB_CLI, "kernels", "--json", "--layouts", "t2p,pq2_0"});
    REQUIRE(kernels["layouts"].size() == 2);
    for (const auto& l : kernels["layouts"]) {
      const auto& v = l["variants"];
      CHECK(std::find(v.begin(), v.end(), l["chosen"]) != v.end());
    }
    // A peer's format: the peer's own kernel is the one chosen, ternlab's best listed beside it.
    const auto peer_formats = json_of({TERNLAB_CLI, "kernels", "--json", "--layouts", "tq2_0,i2_s"});
    REQUIRE(peer_formats["layouts"].size() == 2);
    for (const auto& l : peer_formats["layouts"]) {
      REQUIRE(l.contains("peer_kernel"));
      CHECK(l["chosen"] == l["peer_kernel"]["name"]);
      const std::string prefix = l["layout"] == "i2_s" ? "bitnet-i2s/" : "ggml-tq2_0/";
      CHECK(l["chosen"].get<std::string>().starts_with(prefix));
      const auto& v = l["variants"];
      CHECK(std::find(v.begin(), v.end(), l["peer_kernel"]["ternlab_best"]) != v.end());
    }
    const auto census = json_of({TERNLAB_CLI, "kernels", "census", "--json", "--layouts", "t2p"});
    REQUIRE(!census["loops"].empty());
    CHECK(census["loops"][0]["per_64"].contains("dot"));
    const auto ppl = json_of({TERNLAB_CLI, "model", "perplexity", model, "--text", text, "--tokens", "40", "--ctx", "20", "--json"});
    CHECK(ppl["predicted"] == 38);
    CHECK(ppl["windows"].size() == 2);
    CHECK(ppl["perplexity"].get<double>() > 1);
    CHECK(ppl["standard_error"].get<double>() > 0);
    const fs::path plan = tmp / "plan";
    REQUIRE(run_in(tmp, {TERNLAB_CLI, "sweep", "plan", TERNLAB_SOURCE_DIR "/configs/tiny.toml", "--set", "shape.rows=[64,128]", "-o",
                         plan.string()}, log, tmp / "wisdom.toml") == 0);
    const auto status = json_of({TERNLAB_CLI, "sweep", "status", plan.string(), "--json"});
    REQUIRE(status["points"].size() == 2);
    CHECK(status["points"][0]["state"] == "missing");
    // census honours --isa: no loop of a kernel above the ceiling is listed.
    const auto avx2 = json_of({TERNLAB_CLI, "kernels", "census", "--json", "--layouts", "t2p,pq2_0", "--isa", "avx2"});
    for (const auto& loop : avx2["loops"]) CHECK_MESSAGE(loop["kernel"].get<std::string>().find("avx512") == std::string::npos, loop["kernel"]);
  }

  TEST_CASE("quickstart times a peer's format with the peer's own kernel first, then ternlab's, each named") {
    const test::ScratchDir scratch("ternlab-quickstart-peers");
    const fs::path log = scratch.dir / "log.txt";
    REQUIRE(run_in(scratch.dir, {TERNLAB_CLI, "quickstart", "--kernels-only", "--rows", "256", "--cols", "512", "--reps", "1"}, log,
                   scratch.dir / "wisdom.toml") == 0);
    std::ifstream in(log);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    const auto row_of = [&](const std::string& layout, const std::string& whose) {
      for (std::size_t i = 0; i < lines.size(); ++i)
        if (lines[i].starts_with(layout + " ") && lines[i].find(whose) != std::string::npos) return std::optional<std::size_t>(i);
      return std::optional<std::size_t>();
    };
    for (const peers::PeerFormat& p : peers::kPeerFormats) {
      const std::string layout(p.layout), peer = p.own_label();
      CAPTURE(layout);
      const auto own = row_of(layout, peer), ternlab = row_of(layout, "ternlab's, on these bytes");
      REQUIRE(own);
      REQUIRE(ternlab);
      CHECK(*own < *ternlab);
      CHECK(lines[*own].find("exact") != std::string::npos);
      CHECK(lines[*own].find("FAIL") == std::string::npos);
    }
  }

  TEST_CASE("model bench as llama-bench: lists of lengths and threads, repetitions, every format; bad values exit 2") {
    const test::ScratchDir scratch("ternlab-bench");
    const fs::path tmp = scratch.dir;
    const std::string model = TERNLAB_SOURCE_DIR "/models/bonsai-kjv-py/bonsai-kjv-py.gguf";
    const fs::path log = tmp / "log.txt";
    const fs::path csv = tmp / "b.csv";
    const std::vector<std::string> bench = {TERNLAB_CLI, "model", "bench", model, "--layouts", "pq2_0,t2r", "-p", "8,16", "-n", "4",
                                            "-t", "1,2", "-r", "3", "--warmup", "0", "--format", "csv", "-o", csv.string()};
    REQUIRE(run_in(tmp, bench, log, tmp / "wisdom.toml") == 0);
    std::ifstream in(csv);
    std::vector<std::string> lines;
    for (std::string line; std::getline(in, line);) lines.push_back(line);
    // 2 layouts x 2 thread counts x 3 tests (pp8, pp16, tg4), after the header.
    REQUIRE(lines.size() == 1 + 12);
    CHECK(lines[0].find("model_filename,layout,kernel,n_threads,ternary_bytes_per_token,test,n_prompt,n_gen,repetitions,avg_ts,stddev_ts") == 0);
    int tg = 0, equal = 0;
    for (std::size_t i = 1; i < lines.size(); ++i) {
      tg += lines[i].find(",tg4,0,4,3,") != std::string::npos;
      equal += lines[i].find(",equal") != std::string::npos || lines[i].find(",baseline") != std::string::npos;
      // Three samples a row: two ';' between them.
      CHECK(std::count(lines[i].begin(), lines[i].end(), ';') == 2);
    }
    CHECK(tg == 4);
    CHECK(equal == 12);  // every arm's greedy tokens equal the first's (exact layouts)
    // The same results model as `ternlab run`: a results folder whose summary holds the records.
    std::vector<fs::path> folders;
    for (const auto& e : fs::directory_iterator(tmp / "results"))
      if (e.path().filename().string().starts_with("model-bench-")) folders.push_back(e.path());
    REQUIRE(folders.size() == 1);
    for (const char* f : {"summary.json", "summary.md", "rounds.csv", "index.html", "experiment.toml"})
      CHECK_MESSAGE(fs::exists(folders[0] / f), f);
    std::ifstream summary_in(folders[0] / "summary.json");
    const auto summary = nlohmann::json::parse(summary_in);
    const auto& run = summary["runs"][0];
    CHECK(run["kind"] == "model-bench");
    CHECK(run["records"].size() == 12);
    CHECK(run["tests"] == nlohmann::json::array({"pp8", "pp16", "tg4"}));
    for (const char* test : {"pp8", "pp16", "tg4"}) CHECK(run[test]["arms"].size() == 4);
    for (const auto& r : run["records"]) {
      CHECK(r["samples_ts"].size() == 3);
      CHECK(r["avg_ts"].get<double>() > 0);
    }
    // A layout map is an arm beside the layouts, named by its text, its rest in the first layout;
    // its greedy tokens equal the first layout's (exact layouts), and a bad map names the flag.
    const std::vector<std::string> mapped = {TERNLAB_CLI, "model", "bench", model, "--layouts", "t2r", "--layout-map", "ffn_*=b3r",
                                             "-p", "0", "-n", "2", "-r", "1", "--warmup", "0", "--format", "json",
                                             "-o", (tmp / "map.json").string(), "--results", (tmp / "map").string()};
    REQUIRE(run_in(tmp, mapped, log, tmp / "wisdom.toml") == 0);
    std::ifstream map_in(tmp / "map.json");
    const auto map_records = nlohmann::json::parse(map_in);
    REQUIRE(map_records.size() == 2);
    CHECK(map_records[0]["layout"] == "t2r");
    CHECK(map_records[1]["arm"].get<std::string>().starts_with("ffn_*=b3r"));
    CHECK(map_records[1]["layout"].get<std::string>().find("ffn_*: b3r") == 0);
    CHECK(map_records[1]["layout"].get<std::string>().find("rest: t2r") != std::string::npos);
    CHECK(map_records[1]["greedy_check"].get<std::string>().starts_with("equal"));
    CHECK(map_records[1]["ternary_bytes_per_token"].get<double>() < map_records[0]["ternary_bytes_per_token"].get<double>());  // b3r: 1.75 bits
    const std::vector<std::string> bad_map = {TERNLAB_CLI, "model", "bench", model, "--layouts", "t2r", "--layout-map", "ffn_*=t2q"};
    CHECK(run_in(tmp, bad_map, log, tmp / "wisdom.toml") == 2);
    CHECK(tail_of(log).find("ternlab: error: --layout-map: layout map item 'ffn_*=t2q': unknown layout 't2q'") != std::string::npos);
    const std::vector<std::string> bad = {TERNLAB_CLI, "model", "bench", model, "--layouts", "pq2_0,t2q"};
    CHECK(run_in(tmp, bad, log, tmp / "wisdom.toml") == 2);
    const std::string said = tail_of(log);
    CHECK(said.find("ternlab: error: --layouts: unknown layout 't2q' (layouts: ") != std::string::npos);
    const std::vector<std::string> typo = {TERNLAB_CLI, "model", "bnech", model};
    CHECK(run_in(tmp, typo, log, tmp / "wisdom.toml") == 2);
    CHECK(tail_of(log).find("ternlab: error: unknown command 'bnech' after 'ternlab model' (commands: ") != std::string::npos);
  }

  TEST_CASE("--requantise-scales takes the lossy path by name and says what moved; without it a lossy layout refuses") {
    const fs::path tmp = fs::temp_directory_path() / cat("ternlab-requantise-", getpid());
    fs::create_directories(tmp);
    const std::string model = TERNLAB_SOURCE_DIR "/models/bonsai-kjv-py/bonsai-kjv-py.gguf";
    const std::string text = TERNLAB_SOURCE_DIR "/models/bonsai-kjv-py/heldout-prose.txt";
    const fs::path log = tmp / "log.txt";
    const std::vector<std::string> ppl = {TERNLAB_CLI, "model", "perplexity", model, "--text", text, "--tokens", "32", "--layout", "t2p-e4m3"};
    CHECK(run_in(tmp, ppl, log, tmp / "wisdom.toml") != 0);
    const std::string refused = tail_of(log);
    for (const char* part : {"t2p-e4m3", "e4m3", "refuses", "--requantise-scales converts"}) CHECK_MESSAGE(refused.find(part) != std::string::npos, part, "\n", refused);
    std::vector<std::string> lossy = ppl;
    lossy.push_back("--requantise-scales");
    CHECK(run_in(tmp, lossy, log, tmp / "wisdom.toml") == 0);
    const std::string said = tail_of(log);
    for (const char* part : {"--requantise-scales (LOSSY): ", " scales moved (rounded to e4m3, layout t2p-e4m3); relative error max ",
                             ", mean ", "worst ", "perplexity ", "loss against the file's exact weights (pq2_0", "KL mean ",
                             "top-1 agreement ", " exact -> "})
      CHECK_MESSAGE(said.find(part) != std::string::npos, part, "\n", said);
    // generate and logits take the same flag; on an fp16 layout it moves nothing, and says so.
    const std::vector<std::string> gen = {TERNLAB_CLI, "model", "generate", model, "-p", "And the", "-n", "2", "--layout", "t2p-e8m0",
                                          "--requantise-scales"};
    CHECK(run_in(tmp, gen, log, tmp / "wisdom.toml") == 0);
    CHECK(tail_of(log).find("scales moved (rounded to e8m0") != std::string::npos);
    const std::vector<std::string> logits = {TERNLAB_CLI, "model", "logits", model, "-p", "And the", "--layout", "t2p",
                                             "--requantise-scales", "--out", (tmp / "l.npy").string()};
    CHECK(run_in(tmp, logits, log, tmp / "wisdom.toml") == 0);
    CHECK(tail_of(log).find("--requantise-scales: nothing was lost: all ") != std::string::npos);
    CHECK(tail_of(log).find("--out is deprecated; use -o/--output") != std::string::npos);  // the old spelling still works
    // A layout with one scale per 256 weights merges the file's pairs: loud too, with the weights it re-fit.
    const std::vector<std::string> merged = {TERNLAB_CLI, "model", "logits", model, "-p", "And the", "--layout", "tq2_0",
                                             "--requantise-scales", "-o", (tmp / "m.npy").string()};
    CHECK(run_in(tmp, merged, log, tmp / "wisdom.toml") == 0);
    const std::string merge_said = tail_of(log);
    for (const char* part : {"--requantise-scales (LOSSY): ", "merged into one per 256 weights, then rounded to fp16, layout tq2_0",
                             "weights re-ternarised under a merged scale: "})
      CHECK_MESSAGE(merge_said.find(part) != std::string::npos, part, "\n", merge_said);
    std::error_code ec;
    fs::remove_all(tmp, ec);
  }

  TEST_CASE("every documented ternlab command other than run runs on small sizes") {
    const fs::path src = TERNLAB_SOURCE_DIR;
    std::vector<fs::path> files = markdown_pages();
    std::erase(files, src / "docs" / "new-layout.md");
    for (const auto& e : fs::directory_iterator(src / "configs"))
      if (e.path().extension() == ".toml") files.push_back(e.path());
    // README first (markdown_pages keeps it there): later pages may use the files its commands write
    // (/tmp/tiny.gguf, results/).
    std::sort(files.begin() + 1, files.end());

    const fs::path tmp = fs::temp_directory_path() / cat("ternlab-docs-cli-", getpid());
    const fs::path work = make_work_folder(tmp / "work");
    {
      std::ifstream text(src / "models" / "bonsai-kjv-py" / "heldout-prose.txt");
      std::string head(400, '\0');
      text.read(head.data(), static_cast<std::streamsize>(head.size()));
      REQUIRE(text.gcount() == 400);
      std::ofstream(tmp / "short-text.txt") << head;
    }

    std::vector<std::string> skips_found;
    int ran = 0;
    const auto start = std::chrono::steady_clock::now();
    std::set<std::string> seen;
    for (const fs::path& file : files) {
      for (const Documented& d : commands_in(file, fs::relative(file, src).string())) {
        // The same command written twice (a chapter and the walkthroughs' index) runs once.
        if (!seen.insert(d.text).second) continue;
        const auto skip = std::find_if(kSkipped.begin(), kSkipped.end(), [&](const auto& s) { return d.text.find(s.first) != std::string::npos; });
        if (skip != kSkipped.end()) {
          MESSAGE("skipped ", d.where, ": ", d.text, " (", skip->second, ")");
          skips_found.push_back(skip->first);
          continue;
        }
        std::vector<std::string> argv = small_sized(test::shell_words(d.text), tmp.string());
        const std::string shown = join(argv, " ");
        argv[0] = argv[0] == "build/ternlab" ? TERNLAB_CLI : TERNLAB_GBENCH;
        const fs::path log = tmp / "log.txt";
        const int rc = run_in(work, argv, log, tmp / "wisdom.toml");
        CHECK_MESSAGE(rc == 0, d.where, ": ", d.text, "\nran: ", shown, "\nexit status ", rc, "\n", tail_of(log));
        ++ran;
      }
    }
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE(ran, " commands run in ", seconds, " s, ", skips_found.size(), " skipped");
    CHECK(ran >= 30);
    for (const auto& [text, why] : kSkipped) CHECK_MESSAGE(std::count(skips_found.begin(), skips_found.end(), text) >= 1, text);
    std::error_code ec;
    fs::remove_all(tmp, ec);
  }
}

// Generated numbers (docs/writing-docs.md): a block of a page between
//   <!-- generated: COMMAND (noise: BAND) -->  and  <!-- end generated -->
// holds what COMMAND printed when scripts/regen-docs.sh last ran it. Suite docs-numbers runs every
// block's command again and compares the two texts: the words must be the same and each number within
// BAND of the fresh one (`exact`: the same digits; `±P%`: relative; `±X`: absolute). Timings do not
// repeat, so a block may not hold a rate; those are quoted as past measurements (machine, date,
// command) instead.
namespace {

struct GeneratedBlock {
  std::string where;    // "docs/model.md:52", the start marker's line
  int first_line = 0;   // the first line of the quoted output
  std::string command;
  std::string band;     // as written: "exact", "±0.02%", "±0.001"
  std::string text;     // the quoted output, lines joined with '\n'
};

// The blocks of one page, or the reason the page's markers are malformed.
std::vector<GeneratedBlock> generated_blocks(const fs::path& file, const std::string& name, std::vector<std::string>& malformed) {
  static const std::regex start(R"(^<!-- generated: (.*) \(noise: ([^)]*)\) -->$)");
  const std::string end = "<!-- end generated -->";
  std::vector<GeneratedBlock> out;
  std::ifstream f(file);
  GeneratedBlock* open = nullptr;
  int n = 0;
  for (std::string line; std::getline(f, line);) {
    ++n;
    std::smatch m;
    if (std::regex_match(line, m, start)) {
      if (open) malformed.push_back(cat(open->where, ": no '", end, "' before the next block"));
      // BAND, then optionally ", markdown" (the output pasted verbatim, which the comparison does not mind).
      std::string band = m[2];
      if (const std::size_t comma = band.find(", "); comma != std::string::npos) {
        if (band.substr(comma + 2) != "markdown") malformed.push_back(cat(name, ":", n, ": noise '", band, "': after the band only ', markdown'"));
        band.resize(comma);
      }
      out.push_back({cat(name, ":", n), n + 1, m[1], band, ""});
      open = &out.back();
    } else if (line == end) {
      if (!open) malformed.push_back(cat(name, ":", n, ": '", end, "' without a block"));
      open = nullptr;
    } else if (line.rfind("<!-- generated", 0) == 0 || line.rfind("<!-- end generated", 0) == 0) {
      // (An indented marker is an example in a code block, not a block.)
      malformed.push_back(cat(name, ":", n, ": not a block marker (its own line, `<!-- generated: COMMAND (noise: BAND) -->`): ", line));
    } else if (open) {
      open->text += (open->text.empty() ? "" : "\n") + line;
    }
  }
  if (open) malformed.push_back(cat(open->where, ": no '", end, "'"));
  return out;
}

struct TextPiece {
  bool is_number = false;
  std::string text;   // a number as written; other text with its white space collapsed to one space
  double value = 0;
  int line = 0;       // counted from the text's first line, 0-based
};

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }
bool digit(char c) { return std::isdigit(static_cast<unsigned char>(c)); }

// Numbers and the text between them, no piece across a line end. A number is digits with optional
// thousands commas ("2,621,440"), fraction and exponent; a leading '-' counts when it follows a space or
// a bracket. Digits that are part of a name (t2p, q8_K) are text; letters after a number (1.5x) are text.
std::vector<TextPiece> pieces_of(const std::string& s) {
  std::vector<TextPiece> out;
  std::string words;
  int line = 0, words_line = 0;
  const auto flush = [&] {
    std::string collapsed;
    for (char c : words) {
      if (std::isspace(static_cast<unsigned char>(c))) {
        if (!collapsed.empty() && collapsed.back() != ' ') collapsed += ' ';
      } else {
        collapsed += c;
      }
    }
    while (!collapsed.empty() && collapsed.back() == ' ') collapsed.pop_back();
    if (!collapsed.empty()) out.push_back({false, collapsed, 0, words_line});
    words.clear();
  };
  for (std::size_t i = 0; i < s.size();) {
    const bool after_word = i > 0 && (word_char(s[i - 1]) || s[i - 1] == '.');
    const bool sign = s[i] == '-' && i + 1 < s.size() && digit(s[i + 1]) &&
                      (i == 0 || std::isspace(static_cast<unsigned char>(s[i - 1])) || s[i - 1] == '(' || s[i - 1] == '[');
    if ((digit(s[i]) && !after_word) || sign) {
      std::size_t j = i + (sign ? 1 : 0);
      while (j < s.size() && digit(s[j])) ++j;
      while (j + 3 < s.size() && s[j] == ',' && digit(s[j + 1]) && digit(s[j + 2]) && digit(s[j + 3]) && (j + 4 >= s.size() || !digit(s[j + 4])))
        j += 4;
      if (j + 1 < s.size() && s[j] == '.' && digit(s[j + 1])) {
        ++j;
        while (j < s.size() && digit(s[j])) ++j;
      }
      if (j + 1 < s.size() && (s[j] == 'e' || s[j] == 'E')) {
        std::size_t k = j + 1;
        if (k < s.size() && (s[k] == '+' || s[k] == '-')) ++k;
        if (k < s.size() && digit(s[k])) {
          while (k < s.size() && digit(s[k])) ++k;
          j = k;
        }
      }
      flush();
      std::string written = s.substr(i, j - i);
      std::string plain = written;
      std::erase(plain, ',');
      out.push_back({true, written, std::strtod(plain.c_str(), nullptr), line});
      i = j;
      continue;
    }
    if (s[i] == '\n') {
      // One piece per line at most, so a difference is reported at its own line.
      flush();
      ++line;
      ++i;
      continue;
    }
    if (words.empty()) words_line = line;
    words += s[i++];
  }
  flush();
  return out;
}

// Whether `fresh` is within the band of `quoted`; the band as written in the marker.
bool within_band(const TextPiece& quoted, const TextPiece& fresh, const std::string& band) {
  if (band == "exact") return quoted.text == fresh.text;
  const std::string plus_minus = "±";
  if (band.rfind(plus_minus, 0) != 0) fail("noise band '", band, "': write exact, ±P% or ±X");
  std::string amount = band.substr(plus_minus.size());
  const bool relative = !amount.empty() && amount.back() == '%';
  if (relative) amount.pop_back();
  char* end = nullptr;
  const double x = std::strtod(amount.c_str(), &end);
  if (amount.empty() || *end != '\0' || x < 0) fail("noise band '", band, "': write exact, ±P% or ±X");
  const double allowed = relative ? x / 100 * std::max(std::abs(quoted.value), std::abs(fresh.value)) : x;
  return std::abs(quoted.value - fresh.value) <= allowed;
}

// The differences between a block's quoted text and a fresh run's output, one line each, naming the
// page's line; empty when they agree within the band.
std::vector<std::string> disagreements(const GeneratedBlock& b, const std::string& fresh_output, const std::string& file) {
  const auto quoted = pieces_of(b.text);
  const auto fresh = pieces_of(fresh_output);
  std::vector<std::string> out;
  const std::size_t n = std::min(quoted.size(), fresh.size());
  for (std::size_t i = 0; i < n && out.size() < 10; ++i) {
    const std::string at = cat(file, ":", b.first_line + quoted[i].line);
    if (quoted[i].is_number != fresh[i].is_number || (!quoted[i].is_number && quoted[i].text != fresh[i].text)) {
      out.push_back(cat(at, ": the text says '", quoted[i].text, "', a fresh run prints '", fresh[i].text, "' (the words differ: regenerate the block)"));
      return out;  // past a shifted word every later pair is shifted too
    }
    if (quoted[i].is_number && !within_band(quoted[i], fresh[i], b.band))
      out.push_back(cat(at, ": the text says ", quoted[i].text, ", a fresh run prints ", fresh[i].text, " (noise: ", b.band, ")"));
  }
  if (out.empty() && quoted.size() != fresh.size())
    out.push_back(cat(file, ":", b.first_line, ": the text has ", quoted.size(), " pieces, a fresh run ", fresh.size(), " (regenerate the block)"));
  return out;
}

// Runs `command` under bash from `dir`: its standard output, or throws with the exit status and errors.
std::string shell_output(const fs::path& dir, const std::string& command, const fs::path& scratch) {
  const fs::path out = scratch / "out.txt", err = scratch / "err.txt";
  const pid_t pid = ::fork();
  if (pid == 0) {
    const int o = ::open(out.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    const int e = ::open(err.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (o < 0 || e < 0 || ::chdir(dir.c_str()) != 0) ::_exit(126);
    ::dup2(o, 1);
    ::dup2(e, 2);
    ::setenv("TERNLAB_WISDOM", (scratch / "wisdom.toml").c_str(), 1);
    ::execl("/bin/bash", "bash", "-o", "pipefail", "-c", command.c_str(), static_cast<char*>(nullptr));
    ::_exit(127);
  }
  int status = 0;
  const bool exited = pid > 0 && ::waitpid(pid, &status, 0) == pid && WIFEXITED(status);
  if (!exited || WEXITSTATUS(status) != 0) fail("exit status ", exited ? WEXITSTATUS(status) : -1, "\n", tail_of(err));
  std::ifstream f(out);
  std::stringstream s;
  s << f.rdbuf();
  return s.str();
}

// Rates measured in one run: they do not repeat, so no checked block may quote one.
const std::vector<std::string> kTimingUnits = {"tok/s", "GB/s", "Gweights/s", "GMAC/s", "ms/call", "ms a token"};

}  // namespace

TEST_SUITE("docs-numbers") {
  TEST_CASE("a block's numbers are compared with a fresh run's within its band, and its words exactly") {
    const GeneratedBlock b{"a.md:3", 4, "cmd", "±0.02%", "    perplexity 36.9804 over 2,621,440 weights\n    t2p 1.5x"};
    CHECK(disagreements(b, "perplexity 36.9770 over 2,621,440 weights\nt2p 1.5x\n", "a.md").empty());
    const auto drift = disagreements(b, "perplexity 36.9000 over 2,621,440 weights\nt2p 1.5x", "a.md");
    REQUIRE(drift.size() == 1);
    CHECK(drift[0] == "a.md:4: the text says 36.9804, a fresh run prints 36.9000 (noise: ±0.02%)");
    const auto words = disagreements(b, "perplexity 36.9804 over 2,621,440 weights\nt2r 1.5x", "a.md");
    REQUIRE(words.size() == 1);
    CHECK(words[0].find("a.md:5: the text says 't2p") == 0);
    GeneratedBlock exact = b;
    exact.band = "exact";
    CHECK(disagreements(exact, "perplexity 36.9805 over 2,621,440 weights\nt2p 1.5x", "a.md").size() == 1);
    CHECK(disagreements(exact, "perplexity 36.9804 over 2,621,441 weights\nt2p 1.5x", "a.md").size() == 1);
    GeneratedBlock absolute = b;
    absolute.band = "±0.01";
    CHECK(disagreements(absolute, "perplexity 36.9900 over 2,621,440 weights\nt2p 1.5x", "a.md").empty());
    CHECK(disagreements(absolute, "perplexity 37.0000 over 2,621,440 weights\nt2p 1.5x", "a.md").size() == 1);
    const auto pieces = pieces_of("q8_K t2p -3 (-0.5e-3) 2026-12-05");
    std::vector<std::string> numbers;
    for (const auto& p : pieces)
      if (p.is_number) numbers.push_back(p.text);
    CHECK(numbers == std::vector<std::string>{"-3", "-0.5e-3", "2026", "12", "05"});
    absolute.band = "0.01";
    CHECK_THROWS(disagreements(absolute, "perplexity 36.9900 over 2,621,440 weights\nt2p 1.5x", "a.md"));
  }

  TEST_CASE("every generated block of the docs agrees with a fresh run of its command") {
    const fs::path src = TERNLAB_SOURCE_DIR;
    const test::ScratchDir scratch("ternlab-docs-numbers");
    const fs::path work = make_work_folder(scratch.dir / "work");
    std::vector<std::string> malformed;
    int blocks = 0;
    const auto start = std::chrono::steady_clock::now();
    for (const fs::path& file : markdown_pages()) {
      const std::string name = fs::relative(file, src).string();
      for (const GeneratedBlock& b : generated_blocks(file, name, malformed)) {
        ++blocks;
        for (const std::string& unit : kTimingUnits)
          CHECK_MESSAGE(b.text.find(unit) == std::string::npos, b.where, ": a timing (", unit,
                        ") in a checked block; quote it as a past measurement (machine, date, command) instead");
        std::string fresh;
        try {
          fresh = shell_output(work, b.command, scratch.dir);
        } catch (const Error& e) {
          FAIL_CHECK(b.where, ": ", b.command, "\n", e.what());
          continue;
        }
        try {
          for (const std::string& d : disagreements(b, fresh, name)) FAIL_CHECK(d, "\n  command: ", b.command);
        } catch (const Error& e) {
          FAIL_CHECK(b.where, ": ", e.what());
        }
      }
    }
    for (const std::string& m : malformed) FAIL_CHECK(m);
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    MESSAGE(blocks, " generated blocks checked in ", seconds, " s");
    CHECK(blocks >= 1);
  }
}
