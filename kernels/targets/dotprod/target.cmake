ternlab_target_sources(SOURCES kernels.cpp)
