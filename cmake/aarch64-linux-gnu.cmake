# Cross-compiles the test suite for aarch64 with Debian's g++-aarch64-linux-gnu; tests run under
# qemu-aarch64 (Debian qemu-user). Header-only dependencies come from the build machine's /usr.
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(TERNLAB_QEMU qemu-aarch64 -L /usr/aarch64-linux-gnu CACHE STRING "Emulator command for aarch64 tests")
