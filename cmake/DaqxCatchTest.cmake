# daqx_add_catch_test: one Catch2 program, each of its test cases its own ctest entry "NAME: case". Included by the
# top level before any component, so that a component registers its unit tests beside it (<component>/tests/), as
# tests/ registers the suites that cross components (docs/testing.md, "Where a test lives").
find_package(Catch2 REQUIRED)
include(Catch)

# The program links daqx_test_support (tests/support: the one Catch main, processes, skips), resolved by name when
# the build is generated, so a component added before tests/ may use it. A case that cannot run here ends its
# process with 77 (tests/support/process.hpp, skip_for_environment): ctest reports it skipped.
function(daqx_add_catch_test name)
  cmake_parse_arguments(ARG "" "TIMEOUT;FIXTURE" "SOURCES;LIBS;LABELS" ${ARGN})
  if(NOT ARG_TIMEOUT)
    set(ARG_TIMEOUT 300)
  endif()
  add_executable(${name} ${ARG_SOURCES})
  target_link_libraries(${name} PRIVATE daqx_test_support ${ARG_LIBS})
  daqx_target_warnings(${name})
  set(fixture "")
  if(ARG_FIXTURE)  # a ctest fixture every test case of the program needs (one: the list would split here)
    set(fixture FIXTURES_REQUIRED ${ARG_FIXTURE})
  endif()
  catch_discover_tests(${name} TEST_PREFIX "${name}: " PROPERTIES TIMEOUT ${ARG_TIMEOUT} LABELS "${ARG_LABELS}"
    SKIP_RETURN_CODE 77 ${fixture})
endfunction()
