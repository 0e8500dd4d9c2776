#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>

// Runs with weights = "cold" (ternlab bench's default) cycle copies that together hold 1 MiB, not
// twice the last-level cache (hundreds of MiB on some CPUs): the tests check the rotation and the
// results, not the memory system. Inherited by the ternlab binaries the tests start.
[[maybe_unused]] static const int kColdWeightsSet = setenv("TERNLAB_COLD_WEIGHTS_MIB", "1", 0);

// The default kernel plan (auto) reads the wisdom file: a developer's own measured choices must not
// steer the tests or the ternlab binaries they start, so they read a file that does not exist
// unless a test names its own.
[[maybe_unused]] static const int kNoUserWisdom = setenv("TERNLAB_WISDOM", "/nonexistent/ternlab-tests-wisdom.toml", 1);
