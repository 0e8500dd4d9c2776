#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

#include <cstdlib>

// Runs with weights = "cold" (ternlab bench's default) cycle copies that together hold 1 MiB, not
// twice the last-level cache (hundreds of MiB on some CPUs): the tests check the rotation and the
// results, not the memory system. Inherited by the ternlab binaries the tests start.
[[maybe_unused]] static const int kColdWeightsSet = setenv("TERNLAB_COLD_WEIGHTS_MIB", "1", 0);
