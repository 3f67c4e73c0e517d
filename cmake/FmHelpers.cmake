# Helpers shared by every folder of featmatch.

# GoogleTest: the installed package where there is one (Debian's libgtest-dev), otherwise the
# sources (GTEST_SOURCE_DIR, default /usr/src/googletest) built as part of the project.
macro(fm_find_gtest)
  find_package(GTest QUIET)
  if(NOT GTest_FOUND)
    set(GTEST_SOURCE_DIR "/usr/src/googletest" CACHE PATH "GoogleTest sources")
    if(NOT EXISTS "${GTEST_SOURCE_DIR}/CMakeLists.txt")
      message(FATAL_ERROR "GoogleTest not found: install libgtest-dev or set GTEST_SOURCE_DIR")
    endif()
    set(INSTALL_GTEST OFF CACHE BOOL "" FORCE)
    set(BUILD_GMOCK OFF CACHE BOOL "" FORCE)
    add_subdirectory(${GTEST_SOURCE_DIR} ${CMAKE_BINARY_DIR}/_googletest EXCLUDE_FROM_ALL)
    add_library(GTest::gtest ALIAS gtest)
    add_library(GTest::gtest_main ALIAS gtest_main)
  endif()
  include(GoogleTest)
endmacro()

# fm_add_test(NAME SOURCES ... LIBS ... [LABELS ...])
# One test executable whose GoogleTest cases are registered with CTest one by one.
function(fm_add_test name)
  cmake_parse_arguments(T "" "" "SOURCES;LIBS;LABELS" ${ARGN})
  add_executable(${name} ${T_SOURCES})
  target_link_libraries(${name} PRIVATE ${T_LIBS} GTest::gtest GTest::gtest_main)
  target_compile_definitions(${name} PRIVATE
    FM_SOURCE_DIR="${PROJECT_SOURCE_DIR}" FM_BINARY_DIR="${PROJECT_BINARY_DIR}")
  gtest_discover_tests(${name} DISCOVERY_TIMEOUT 60 PROPERTIES LABELS "${T_LABELS}")
endfunction()

# Warnings for the project's own targets.
function(fm_warnings target)
  target_compile_options(${target} PRIVATE
    $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wno-unused-parameter>)
endfunction()
