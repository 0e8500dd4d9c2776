// Experiment files: TOML in, an expanded plan of runs out. Every value keeps where it came from
// (file and line, or the --set that overrode it), so every error names the file, the line and the
// key, and all of them are raised before anything runs.
//
//   Sweeps: a key given as an array expands into a cartesian product of runs. Inside an [[arm]]
//   table an array expands into several arms instead; a kind may declare sections (the oracle's
//   [cases]) whose arrays form a grid inside one run.
//   Overrides: --set key=value (dotted: shape.rows=512; arm.threads=1 for every arm; arm.2.layout=t2p
//   for the third). The value is read as TOML, or as a string when it is not valid TOML.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <utility>
#include <vector>

#include <toml++/impl/forward_declarations.h>

#include "common/error.hpp"


namespace ternlab::experiments {

// A value of the experiment file and where it was written.
struct Located {
  const toml::node* node = nullptr;  // null: the key is absent (the default applies)
  std::string origin;                // config path, or "--set key=value"
  std::string key;                   // dotted path, e.g. "shape.rows" or "arm[1].layout"
  int line = 0;                      // 0 for --set

  std::string where() const;  // "file.toml:12: key 'shape.rows'" or "--set shape.rows=3: key 'shape.rows'"
  explicit operator bool() const { return node != nullptr; }
};

template <class... A>
[[noreturn]] void fail_at(const Located& at, const A&... parts) {
  fail(at.where(), ": ", parts...);
}

enum class Type { integer, number, boolean, string, section };
std::string_view type_name(Type t);

// One accepted key: its dotted path ("rounds", "shape.rows", "arm.layout", "cases.fill"), its type
// and whether an array of that type is accepted (a sweep, an arm list or a grid axis).
struct KeySpec {
  std::string path;
  Type type;
  bool sweepable = true;
  std::string help;
};

using Entries = std::map<std::string, Located>;

// One arm after expansion: its keys (without the "arm." prefix), a unique name, and the declared
// arm it came from. `identity` stays the same under sweeps and --set (what `baseline` names);
// `point` says which element of each swept key this arm holds, beyond the identity itself.
struct ArmSpec {
  std::string name;      // unique in the run: "pq2_0", "pq2_0 load=mmap", "stock layout=t2p"
  std::string sweep;     // "layout=t2p threads=2" when this arm came from an array, else ""
  std::string identity;  // the [[arm]]'s name, else its layout (the element, when swept), else "arm N"
  std::vector<std::pair<std::string, std::string>> point;  // swept keys other than the identity's
  int declared = 0;      // the [[arm]] table it came from, from 0 in file order
  Entries keys;
  Located table;      // the [[arm]] table, for messages about the arm as a whole
  Located at(const std::string& key) const;  // absent keys: a Located naming the table
};

// One run of the plan: the chosen value of every key, its arms, and the grid sections kept whole.
struct RunSpec {
  int index = 0;
  std::string file;
  std::string kind;
  Entries params;                     // scalars (swept keys hold the chosen element)
  std::vector<std::pair<std::string, std::string>> sweep_point;  // key = value of this run
  std::vector<ArmSpec> arms;          // expanded arms
  std::shared_ptr<const void> keep_alive;  // the parsed documents the nodes live in

  // Typed reads with defaults; a wrong type or range fails naming the location.
  Located at(const std::string& key) const;  // absent keys: a Located naming the file
  std::int64_t integer(const std::string& key, std::int64_t fallback, std::int64_t lo, std::int64_t hi) const;
  double number(const std::string& key, double fallback, double lo, double hi) const;
  bool boolean(const std::string& key, bool fallback) const;
  std::string string(const std::string& key, const std::string& fallback) const;
  std::string name() const;  // "name" (or the file stem) plus the sweep point
};

// A key's default and bounds, stated once: validation, the memory estimate, the plan and the run
// all read the key through one of these, so they cannot disagree. spec() is its schema entry, the
// default appended to the help: "prompt length (default 64)", or with a note "(default 256; ...)".
struct IntegerKey {
  const char* path;
  std::int64_t fallback, lo, hi;
  bool sweepable = true;
  std::int64_t operator()(const RunSpec& run) const { return run.integer(path, fallback, lo, hi); }
  KeySpec spec(const std::string& help, const std::string& note = "") const;
};
struct NumberKey {
  const char* path;
  double fallback, lo, hi;
  double operator()(const RunSpec& run) const { return run.number(path, fallback, lo, hi); }
};
struct BooleanKey {
  const char* path;
  bool fallback;
  bool sweepable = true;
  bool operator()(const RunSpec& run) const { return run.boolean(path, fallback); }
  KeySpec spec(const std::string& help, const std::string& note = "") const;
};

// Readers for one Located value (arms use these directly).
std::int64_t as_integer(const Located& v, std::int64_t lo, std::int64_t hi);
double as_number(const Located& v, double lo, double hi);
bool as_boolean(const Located& v);
std::string as_string(const Located& v);
std::vector<const toml::node*> elements(const Located& v);  // an array's elements, or the one value
std::string value_text(const toml::node& n);              // a scalar as written: 512, "t2p", true
std::string plain_text(const toml::node& n);              // the same without quotes: 512, t2p, true

struct Plan {
  std::string file;
  std::vector<RunSpec> runs;
};

// Reads `path`, applies the overrides ("key=value"), checks every key against the kind's schema
// and expands the sweeps. Throws ternlab::Error naming the file, line and key.
Plan load_plan(const std::string& path, const std::vector<std::string>& overrides);
// Same from text (tests); `origin` names it in messages.
Plan load_plan_text(const std::string& text, const std::string& origin, const std::vector<std::string>& overrides);

// The expanded plan in words, one block per run (printed by --dry-run and before every run).
std::string describe(const Plan& plan);

}  // namespace ternlab::experiments
