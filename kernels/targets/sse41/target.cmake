# 16 vector registers, as AVX2 (avx2/target.cmake says why both options).
ternlab_target_sources(SOURCES kernels.cpp GNU_OPTIONS -fschedule-insns -fsched-pressure -falign-loops=64)
