// Shared helpers for the test suites.
#pragma once

#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "common/error.hpp"
#include "kernels/catalog.hpp"
#include "layouts/registry.hpp"
#include "layouts/stock.hpp"
#include "tests/layouts/t2p8.hpp"
#include "tests/layouts/t2r_slot_major.hpp"

namespace ternlab::test {

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

}  // namespace ternlab::test
