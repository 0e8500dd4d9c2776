# Two compiles of one portable kernel source: the same loops with the compiler's auto-vectoriser
# off and on, whatever the build type's optimisation level.
ternlab_target_sources(SOURCES scalar_build.cpp OPTIONS -fno-tree-vectorize -fno-tree-slp-vectorize)
# Sanitizer builds check these loops' memory accesses, not their vectorisation (the census is the
# native build's): -O3 there costs minutes of compile for nothing.
if(NOT TERNLAB_SANITIZE AND NOT TERNLAB_TSAN)
  ternlab_target_sources(SOURCES autovec_build.cpp OPTIONS -O3 -ftree-vectorize)
else()
  ternlab_target_sources(SOURCES autovec_build.cpp)
endif()
