# With 32 registers the AVX-512 unit models slower with register-pressure-aware scheduling, so it
# keeps GCC's default; its loops start on 64-byte boundaries as the AVX2 units' do (avx2/target.cmake).
ternlab_target_sources(SOURCES kernels.cpp gfni_kernels.cpp vbmi_kernels.cpp GNU_OPTIONS -falign-loops=64)
