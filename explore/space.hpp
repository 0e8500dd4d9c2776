// Layout search (`ternlab explore`): a TOML space of layouts in one family, each axis a parameter
// of the family's DSL declaration, enumerated into candidates the DSL accepts; every combination
// that is not a candidate is kept with the rule that removed it. docs/explore.md is the guide.
//
//   name = "row-interleaved"
//   family = "row_interleaved"        # explore/families.cpp: which declaration the axes fill in
//   compare = ["t2r", "t2r8"]        # hand-designed layouts measured beside the candidates
//   [axes]
//   rows = [4, 8, 16]
//   lane_bytes = [4, 8, 16]
//   [[constraint]]
//   rule = "rows * lane_bytes >= 16"  # integer arithmetic, comparisons, && || !, 'text' literals
//   why = "a strip fills an SSE4.1 vector"
//   [measure]
//   gemv = "4096x4096"
//
// Candidates are registered at run time (register_candidates): the kernels plan each layout from
// its placement when it is first used (kernels/strategies/*/plan.cpp), so a candidate runs the
// same code it would run compiled in, and a search needs no build. Each candidate's header is
// still written, compiled once alone to check the declaration and time it, and a build folder is
// configured with TERNLAB_LAYOUT_DIRS pointing at them for a user who adopts one.
#pragma once

#include <cstdint>
#include <deque>
#include <filesystem>
#include <map>
#include <memory>
#include <string>
#include <variant>
#include <vector>

#include "layouts/registry.hpp"

namespace ternlab::explore {

// An axis value: an integer or a word.
using Value = std::variant<std::int64_t, std::string>;
std::string value_text(const Value& v);  // 8, after

// Where a key of the space file was written, for errors: "space.toml:12: key 'axes.rows'".
struct Where {
  std::string file;
  int line = 0;
  std::string key;
  std::string text() const;
};

struct Axis {
  std::string name;
  std::vector<Value> values;
  Where where;
  bool declared = true;  // written in the space (else the family's value; not part of the names)
};

// A constraint between axes: an expression over their names that every candidate must satisfy.
struct Constraint {
  std::string rule, why;
  std::vector<std::string> names;  // the axes it reads
  Where where;
  // Its value at `point`; throws naming the constraint for a type mismatch (an axis of words
  // against a number, ...).
  bool holds(const std::map<std::string, Value>& point) const;
  struct Expr;
  std::shared_ptr<const Expr> expr;
};

struct MeasureSpec {
  std::string gemv = "4096x4096";                 // ROWSxCOLS of the gemv rounds
  std::string gemm = "4096x4096";                 // ROWSxCOLS of the leaders' gemm
  std::vector<std::int64_t> gemm_tokens{4, 64};   // tokens of the leaders' gemm
  std::vector<std::int64_t> threads{1};           // every round at each of these thread counts
  std::string weights = "cold";                   // the gemv kind's `weights`
  double keep = 0.5;                              // fraction of candidates each halving keeps
  std::int64_t leaders = 3;                       // candidates the gemm round takes
  double first_sample_ms = 20, sample_ms = 60;   // per timed sample: the first round, later rounds
  std::int64_t first_rounds = 3, rounds = 5;      // interleaved rounds of the same
  std::int64_t ceiling_mib = 1024;                // the gemv kind's ceiling_mib
  std::string decode = "mid";                     // the leaders' decode: a model preset, or "none"
  std::int64_t decode_tokens = 16;                // tokens each decode sample generates
  std::int64_t batch = 0;                         // candidates an experiment of a round holds; 0: what half the free memory fits
};

struct Space {
  std::string file, name, family, prefix;
  std::vector<std::string> compare;  // registered layouts measured beside the candidates
  std::vector<Axis> axes;
  std::vector<Constraint> constraints;
  MeasureSpec measure;
};

// Throws ternlab::Error naming the file, line and key: an unknown axis or key, a value the family
// cannot take, a constraint naming no axis (or an unknown name), an unknown compare layout.
Space load_space(const std::filesystem::path& path);
Space load_space_text(const std::string& text, const std::string& origin);

// One declaration the DSL accepts, its strings owned here (LayoutSpec holds string_views).
struct Candidate {
  std::string name;
  std::vector<std::pair<std::string, Value>> point;  // axis = value, in the space's axis order
  LayoutSpec spec;
  Facts facts;
  std::string same_as;  // a registered layout with the same placement and scales, else ""
  std::deque<std::string> strings;
  Candidate() = default;
  Candidate(const Candidate&) = delete;
  Candidate& operator=(const Candidate&) = delete;
};

// A combination that is not a candidate, and why: the constraint that removed it (with its line),
// the family's own limit, or the DSL rule the declaration breaks.
struct Refusal {
  std::vector<std::pair<std::string, Value>> point;
  std::string by;      // "constraint", "family" or "dsl"
  std::string reason;  // the rule in words
};

struct SpacePlan {
  Space space;
  std::vector<std::unique_ptr<Candidate>> candidates;
  std::vector<Refusal> refused;
};

// Every combination of the axes' values, in order (the first axis varies slowest).
SpacePlan enumerate(const Space& space);

// The candidate as a C++ layout header (a TERNLAB_REGISTER_LAYOUT declaration).
std::string header_text(const Candidate& c, const std::string& space_file);

// Registers the plan's candidates in this process (layouts/registry.hpp), so every command that
// lists or runs layouts sees them; idempotent per process for the same plan. Returns their names.
std::vector<std::string> register_candidates(const SpacePlan& plan);

// Counts of why combinations were refused ("constraint 'rows * lane_bytes >= 16' (space.toml:9): 3").
std::vector<std::string> refusal_summary(const SpacePlan& plan);

}  // namespace ternlab::explore
