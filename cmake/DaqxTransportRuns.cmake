# Registers one run of a Catch2 test program over one transport: its test cases as ctest entries
# "PREFIX[TRANSPORT]: ...", with DAQX_TRANSPORT=TRANSPORT, exit code 77 reported as skipped, and two labels.
# TEST_SPEC (a Catch test spec such as "~[in-process]") registers only the cases it selects.
#   daqx_add_transport_run(TARGET transport_conformance_test PREFIX conformance TRANSPORT tcp TIMEOUT 60
#                          LABELS "conformance;transport")
function(daqx_add_transport_run)
  cmake_parse_arguments(ARG "" "TARGET;PREFIX;TRANSPORT;TIMEOUT;TEST_SPEC" "LABELS" ${ARGN})
  set(spec "")
  if(ARG_TEST_SPEC)
    set(spec TEST_SPEC "${ARG_TEST_SPEC}")
  endif()
  set(list_name DAQX_${ARG_PREFIX}_${ARG_TRANSPORT}_TESTS)
  # EXTRA_ARGS names the run: catch_discover_tests tells its calls on one target apart by their arguments.
  catch_discover_tests(${ARG_TARGET} ${spec} TEST_PREFIX "${ARG_PREFIX}[${ARG_TRANSPORT}]: "
    EXTRA_ARGS --name ${ARG_PREFIX}-${ARG_TRANSPORT}
    TEST_LIST ${list_name}
    PROPERTIES ENVIRONMENT DAQX_TRANSPORT=${ARG_TRANSPORT} TIMEOUT ${ARG_TIMEOUT} SKIP_RETURN_CODE 77)
  # Two labels do not survive the properties list of catch_discover_tests: set them on the discovered list.
  set(labels_file ${CMAKE_CURRENT_BINARY_DIR}/${ARG_PREFIX}_${ARG_TRANSPORT}_labels.cmake)
  file(WRITE ${labels_file}
    "if(${list_name})\n"
    "  set_tests_properties(\${${list_name}} PROPERTIES LABELS \"${ARG_LABELS}\")\n"
    "endif()\n")
  set_property(DIRECTORY APPEND PROPERTY TEST_INCLUDE_FILES ${labels_file})
endfunction()
