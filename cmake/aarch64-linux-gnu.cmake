# Cross build for 64-bit ARM Linux (phones' and ARM laptops' CPUs) with Debian's cross
# compiler (g++-aarch64-linux-gnu) and arm64 libraries (multiarch); the programs run on an ARM
# machine or under qemu-user (scripts/test-arm64.sh). Use:
#   cmake -S . -B build-arm64 -G Ninja -DCMAKE_TOOLCHAIN_FILE=cmake/aarch64-linux-gnu.cmake
set(CMAKE_SYSTEM_NAME Linux)
set(CMAKE_SYSTEM_PROCESSOR aarch64)
set(CMAKE_C_COMPILER aarch64-linux-gnu-gcc)
set(CMAKE_CXX_COMPILER aarch64-linux-gnu-g++)
set(CMAKE_LIBRARY_ARCHITECTURE aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH /usr/aarch64-linux-gnu)
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE BOTH)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE BOTH)
set(ENV{PKG_CONFIG_LIBDIR} /usr/lib/aarch64-linux-gnu/pkgconfig:/usr/share/pkgconfig)
# Tests run through qemu when the build machine is not ARM.
find_program(REPRISE_QEMU_AARCH64 qemu-aarch64)
if(REPRISE_QEMU_AARCH64)
  set(CMAKE_CROSSCOMPILING_EMULATOR ${REPRISE_QEMU_AARCH64} -L /usr/aarch64-linux-gnu)
endif()
