# Common compile options and the helpers every src/ folder uses.

add_library(reprise_options INTERFACE)
target_include_directories(reprise_options INTERFACE
  ${PROJECT_SOURCE_DIR}/src ${PROJECT_SOURCE_DIR}/include)
target_compile_options(reprise_options INTERFACE
  -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor -Wvla
  -Wno-missing-field-initializers
  $<$<BOOL:${REPRISE_WERROR}>:-Werror>)
target_link_libraries(reprise_options INTERFACE Threads::Threads)
if(REPRISE_SANITIZE)
  target_compile_options(reprise_options INTERFACE
    -fsanitize=address,undefined -fno-omit-frame-pointer -fno-sanitize-recover=all)
  target_link_options(reprise_options INTERFACE -fsanitize=address,undefined)
endif()
if(REPRISE_BUILD_FUZZERS AND CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  # Coverage instrumentation for every library the fuzz targets link.
  target_compile_options(reprise_options INTERFACE -fsanitize=fuzzer-no-link)
endif()
if(REPRISE_TSAN)
  target_compile_options(reprise_options INTERFACE -fsanitize=thread -fno-omit-frame-pointer)
  target_link_options(reprise_options INTERFACE -fsanitize=thread)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
  # GCC 12 reports false -Wrestrict positives inside std::string (GCC bug 105329).
  target_compile_options(reprise_options INTERFACE -Wno-restrict)
endif()
if(CMAKE_CXX_COMPILER_ID STREQUAL "Clang")
  target_compile_options(reprise_options INTERFACE -Wthread-safety)
endif()

# Flags for translation units that hold AVX2+FMA+F16C kernels; callers reach them only
# after run-time CPU detection.
set(REPRISE_AVX2_FLAGS -mavx2 -mfma -mf16c)
# ... those that hold AVX-VNNI kernels (vpdpbusd on ymm, VEX-encoded) ...
set(REPRISE_AVX_VNNI_FLAGS ${REPRISE_AVX2_FLAGS} -mavxvnni)
# ... and those that hold AVX-512 (F, BW, DQ, VL) + VNNI kernels.
set(REPRISE_AVX512_VNNI_FLAGS ${REPRISE_AVX2_FLAGS} -mavx512f -mavx512bw -mavx512dq -mavx512vl
  -mavx512vnni)

# ... those that hold ARM NEON kernels with the dot-product instructions (AArch64 only).
set(REPRISE_NEON_DOTPROD_FLAGS -march=armv8.2-a+dotprod)
# ... and those that also use the int8 matrix-multiply instructions (smmla, Armv8.6-A I8MM).
set(REPRISE_NEON_I8MM_FLAGS -march=armv8.2-a+dotprod+i8mm)
# Which kernel sources a build compiles: the x86 SIMD ones on x86-64, the NEON ones on AArch64
# (a cross build: cmake/aarch64-linux-gnu.cmake), neither elsewhere (scalar kernels only).
if(CMAKE_SYSTEM_PROCESSOR MATCHES "^(aarch64|arm64|ARM64)$")
  set(REPRISE_ARCH aarch64)
elseif(CMAKE_SYSTEM_PROCESSOR MATCHES "^(x86_64|AMD64|amd64)$")
  set(REPRISE_ARCH x86_64)
else()
  set(REPRISE_ARCH other)
endif()

# reprise_library(NAME folder SOURCES ... DEPS ...): one static library per src/ folder,
# named reprise_<folder>. reprise_options (warnings, -Werror, sanitizers, the src/ include
# root) is a build-tree requirement only: the installed package (cmake/RepriseInstall.cmake)
# passes none of it to the programs that embed Reprise.
function(reprise_library folder)
  set(lists SOURCES AVX2_SOURCES AVX_VNNI_SOURCES AVX512_VNNI_SOURCES NEON_DOTPROD_SOURCES
    NEON_I8MM_SOURCES DEPS PUBLIC_LIBS)
  cmake_parse_arguments(ARG "" "" "${lists}" ${ARGN})
  set(target reprise_${folder})
  if(NOT REPRISE_ARCH STREQUAL "x86_64")
    unset(ARG_AVX2_SOURCES)
    unset(ARG_AVX_VNNI_SOURCES)
    unset(ARG_AVX512_VNNI_SOURCES)
  endif()
  if(NOT REPRISE_ARCH STREQUAL "aarch64")
    unset(ARG_NEON_DOTPROD_SOURCES)
    unset(ARG_NEON_I8MM_SOURCES)
  endif()
  add_library(${target} STATIC ${ARG_SOURCES} ${ARG_AVX2_SOURCES} ${ARG_AVX_VNNI_SOURCES}
    ${ARG_AVX512_VNNI_SOURCES} ${ARG_NEON_DOTPROD_SOURCES} ${ARG_NEON_I8MM_SOURCES})
  if(ARG_NEON_DOTPROD_SOURCES)
    set_source_files_properties(${ARG_NEON_DOTPROD_SOURCES} PROPERTIES COMPILE_OPTIONS
      "${REPRISE_NEON_DOTPROD_FLAGS}")
  endif()
  if(ARG_NEON_I8MM_SOURCES)
    set_source_files_properties(${ARG_NEON_I8MM_SOURCES} PROPERTIES COMPILE_OPTIONS
      "${REPRISE_NEON_I8MM_FLAGS}")
  endif()
  target_link_libraries(${target} PUBLIC $<BUILD_INTERFACE:reprise_options> Threads::Threads
    ${ARG_DEPS} ${ARG_PUBLIC_LIBS})
  if(ARG_AVX2_SOURCES)
    set_source_files_properties(${ARG_AVX2_SOURCES} PROPERTIES COMPILE_OPTIONS
      "${REPRISE_AVX2_FLAGS}")
  endif()
  if(ARG_AVX_VNNI_SOURCES)
    set_source_files_properties(${ARG_AVX_VNNI_SOURCES} PROPERTIES COMPILE_OPTIONS
      "${REPRISE_AVX_VNNI_FLAGS}")
  endif()
  if(ARG_AVX512_VNNI_SOURCES)
    set_source_files_properties(${ARG_AVX512_VNNI_SOURCES} PROPERTIES COMPILE_OPTIONS
      "${REPRISE_AVX512_VNNI_FLAGS}")
  endif()
endfunction()

# reprise_test(folder SOURCES ... DEPS ... [LABELS ...] [NAME suffix]): the folder's test
# binary (reprise_<folder>_test, or reprise_<folder>_<suffix>_test for a second one with other
# labels, e.g. `slow`), registered with CTest through gtest_discover_tests.
function(reprise_test folder)
  if(NOT REPRISE_BUILD_TESTS)
    return()
  endif()
  cmake_parse_arguments(ARG "" "NAME" "SOURCES;DEPS;LABELS" ${ARGN})
  if(NOT ARG_LABELS)
    set(ARG_LABELS unit)
  endif()
  if(ARG_NAME)
    set(target reprise_${folder}_${ARG_NAME}_test)
  else()
    set(target reprise_${folder}_test)
  endif()
  add_executable(${target} ${ARG_SOURCES})
  target_link_libraries(${target} PRIVATE ${ARG_DEPS} reprise_test_support GTest::gtest
    GTest::gmock GTest::gtest_main)
  gtest_discover_tests(${target}
    DISCOVERY_MODE PRE_TEST
    PROPERTIES LABELS "${ARG_LABELS}"
    DISCOVERY_TIMEOUT 60)
endfunction()
