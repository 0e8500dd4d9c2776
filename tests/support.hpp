// Shared helpers for the test suites.
#pragma once

#include <unistd.h>

#include <algorithm>
#include <filesystem>
#include <numeric>

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/error.hpp"
#include "kernels/catalog.hpp"
#include "layouts/matrix.hpp"
#include "layouts/registry.hpp"

namespace ternlab::model {
struct SynthOptions;
}

namespace ternlab::test {

// The synthetic `preset` model written with `options` into `folder`, once per process (later calls
// with the same folder, preset and options return the same file), its path.
const std::string& synthetic_model(const std::filesystem::path& folder, const std::string& preset,
                                   const model::SynthOptions& options);

// A folder of its own under the temp directory (name and process id), made now and removed with
// everything in it when it goes.
struct ScratchDir {
  std::filesystem::path dir;
  explicit ScratchDir(const std::string& name)
      : dir(std::filesystem::temp_directory_path() / (name + "-" + std::to_string(getpid()))) {
    std::filesystem::create_directories(dir);
  }
  ~ScratchDir() {
    std::error_code ec;
    std::filesystem::remove_all(dir, ec);
  }
  ScratchDir(const ScratchDir&) = delete;
  ScratchDir& operator=(const ScratchDir&) = delete;
  std::string operator()(const std::string& file) const { return (dir / file).string(); }
};

// A scratch folder per test process and name, made on first use and removed at exit.
template <const char* Name>
const std::filesystem::path& scratch_folder() {
  static ScratchDir f(Name);
  return f.dir;
}

// Runs `f`, expecting a ternlab::Error whose message contains every fragment.
template <class F, class... S>
void check_error(F&& f, const S&... fragments) {
  std::string msg;
  try {
    f();
  } catch (const Error& e) {
    msg = e.what();
  }
  INFO("error message: ", msg);
  CHECK_FALSE(msg.empty());
  for (const std::string& f : {std::string(fragments)...}) CHECK(msg.find(f) != std::string::npos);
}

// kernels_for(L), plus, on x86 CPUs with AVX2, the AVX-512 VNNI kernels built through SIMDe
// (tests/avx512_emulated.cpp; ISA "avx512vnni-simde"): the oracle suites check every kernel the
// project ships, whatever this CPU runs natively, and on AVX-512 machines the SIMDe build is
// checked beside the native one, so neither can break unseen where the other runs.
std::vector<KernelVariant> checked_kernels_for(const LayoutInfo& L);

// The smallest row count that is a multiple of both `n` and L's rows per block: whole blocks of
// the layout, and `n` itself for every power-of-two block height (a 3-row layout gets 48 for 16).
inline std::int64_t whole_rows(const LayoutInfo& L, std::int64_t n) { return std::lcm(n, std::int64_t(L.rows)); }

// `m` with the scales L's scale groups can hold exactly: every 128-weight scale under one of L's
// scales (a 256-weight group, or the whole tensor) set to the first of them. Registry-driven tests
// draw random scales per 128 weights; a layout with wider groups would refuse them.
inline TernaryMatrix share_scales(TernaryMatrix m, const LayoutInfo& L) {
  const std::int64_t span = L.per_tensor_scale() ? std::int64_t(m.scales.size()) : std::max(1, L.scale_group() / 128);
  for (std::size_t j = 0; j < m.scales.size(); ++j) m.scales[j] = m.scales[j - j % std::size_t(span)];
  return m;
}

// Whether a rows x cols matrix fits L's blocks (tq2_0 and tq1_0 take 256-weight blocks).
inline bool fits(const LayoutInfo& L, std::int64_t rows, std::int64_t cols) { return rows % L.rows == 0 && cols % L.k == 0; }

// A documented command line split as a shell would: single and double quotes, backslash escapes;
// a '#' starting a word ends the line (a comment).
std::vector<std::string> shell_words(const std::string& s);

}  // namespace ternlab::test
