# `cmake --install`: what an application needs to embed Reprise, and nothing else.
#  - the public headers, include/reprise/*.h;
#  - the static libraries the API links (reprise_api and every reprise_* library below it;
#    not the command line, the converter or the test support);
#  - a CMake package: find_package(Reprise) gives Reprise::reprise, one target for the C and
#    the C++ API that brings the include folder and every library, Reprise's and third-party;
#  - a pkg-config file, reprise.pc.
# The libraries are static, so the package also finds the third-party packages they link
# (cmake/RepriseConfig.cmake.in, cmake/reprise.pc.in). examples/ builds against it.
include(GNUInstallDirs)
include(CMakePackageConfigHelpers)

# The umbrella target. Its in-tree name cannot be `reprise` (the program's); it is exported
# as Reprise::reprise, and the alias lets a project that adds this tree as a subdirectory use
# the same name.
add_library(reprise_package INTERFACE)
add_library(Reprise::reprise ALIAS reprise_package)
set_target_properties(reprise_package PROPERTIES EXPORT_NAME reprise)
target_link_libraries(reprise_package INTERFACE reprise_api)
target_include_directories(reprise_package INTERFACE
  $<BUILD_INTERFACE:${PROJECT_SOURCE_DIR}/include>
  $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)

# reprise_link_order(OUT target): `target` and the reprise_* static libraries it links,
# directly or not, each before every library it depends on: the order a linker needs.
function(_reprise_visit target)
  get_property(seen GLOBAL PROPERTY _REPRISE_VISITED)
  if(target IN_LIST seen)
    return()
  endif()
  set_property(GLOBAL APPEND PROPERTY _REPRISE_VISITED ${target})
  get_target_property(libs ${target} LINK_LIBRARIES)
  foreach(lib IN LISTS libs)
    # Generator expressions (the build-only $<BUILD_INTERFACE:reprise_options>) and
    # third-party targets are not Reprise libraries.
    if(lib MATCHES "^reprise_" AND TARGET ${lib})
      get_target_property(type ${lib} TYPE)
      if(type STREQUAL "STATIC_LIBRARY")
        _reprise_visit(${lib})
      endif()
    endif()
  endforeach()
  set_property(GLOBAL APPEND PROPERTY _REPRISE_POST_ORDER ${target})
endfunction()

function(reprise_link_order out target)
  set_property(GLOBAL PROPERTY _REPRISE_VISITED "")
  set_property(GLOBAL PROPERTY _REPRISE_POST_ORDER "")
  _reprise_visit(${target})
  # Depth-first post-order lists dependencies first; reversed, dependents come first.
  get_property(order GLOBAL PROPERTY _REPRISE_POST_ORDER)
  list(REVERSE order)
  set(${out} ${order} PARENT_SCOPE)
endfunction()

reprise_link_order(REPRISE_INSTALLED_LIBRARIES reprise_api)

install(DIRECTORY ${PROJECT_SOURCE_DIR}/include/reprise
  DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}
  FILES_MATCHING PATTERN "*.h")
install(TARGETS ${REPRISE_INSTALLED_LIBRARIES} reprise_package
  EXPORT RepriseTargets
  ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})

set(REPRISE_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/Reprise)
install(EXPORT RepriseTargets
  NAMESPACE Reprise::
  DESTINATION ${REPRISE_CMAKE_DIR})
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/RepriseConfig.cmake.in
  ${PROJECT_BINARY_DIR}/RepriseConfig.cmake
  INSTALL_DESTINATION ${REPRISE_CMAKE_DIR})
# 0.x: a minor version may break the API.
write_basic_package_version_file(${PROJECT_BINARY_DIR}/RepriseConfigVersion.cmake
  VERSION ${PROJECT_VERSION}
  COMPATIBILITY SameMinorVersion)
install(FILES
  ${PROJECT_BINARY_DIR}/RepriseConfig.cmake
  ${PROJECT_BINARY_DIR}/RepriseConfigVersion.cmake
  DESTINATION ${REPRISE_CMAKE_DIR})

# reprise.pc finds its prefix from its own folder (${pcfiledir}), so that
# `cmake --install --prefix P` gives a correct file for any P.
set(REPRISE_PC_DIR ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
file(RELATIVE_PATH REPRISE_PC_TO_PREFIX /${REPRISE_PC_DIR} /)
string(REGEX REPLACE "/$" "" REPRISE_PC_TO_PREFIX "${REPRISE_PC_TO_PREFIX}")
list(TRANSFORM REPRISE_INSTALLED_LIBRARIES PREPEND "-l" OUTPUT_VARIABLE REPRISE_PC_LIBS)
list(JOIN REPRISE_PC_LIBS " " REPRISE_PC_LIBS)
configure_file(${PROJECT_SOURCE_DIR}/cmake/reprise.pc.in ${PROJECT_BINARY_DIR}/reprise.pc @ONLY)
install(FILES ${PROJECT_BINARY_DIR}/reprise.pc DESTINATION ${REPRISE_PC_DIR})
