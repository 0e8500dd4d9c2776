# AVX2 has 16 vector registers. Without GCC's register-pressure-aware scheduling, t2p's 4-token
# gemm loop issues every maddubs early and spills the partial sums (llvm-mca, Zen 3: 82.7 -> 60.7
# cycles a block, 70 -> 12 stack references; tools/mca/loop_cost.py).
ternlab_target_sources(SOURCES kernels.cpp GNU_OPTIONS -fschedule-insns -fsched-pressure)
# Loops start on 64-byte boundaries in the x86 kernel units. The decoded-uop cache holds code in
# 64-byte windows, so where a long loop starts changes how fast the front end feeds it (measured on
# the AVX-512 16-token gemm loop: docs/notebook/2026-12-02-sapphire-rapids-kernels.md).
ternlab_target_sources(SOURCES kernels.cpp peer_i2s.cpp peer_tq1.cpp peer_tq2.cpp GNU_OPTIONS -falign-loops=64)
