# run(<output variable> <command...>), for the install tests' scripts: runs the command without LD_LIBRARY_PATH and
# DAQX_MODULE_PATH (an install must find its libraries and modules on its own) and stops the test on a nonzero exit
# status with the command's output; sets <output variable> to its stdout and <output variable>_errors to its stderr.
# skip_unless(<program> <package>): ends the test as skipped (ctest's SKIP_REGULAR_EXPRESSION "install test skipped")
# when <program> is missing, or fails it when DAQX_TRANSPORT_REQUIRE=1 (CI, where scripts/dev.sh installs it).
function(skip_unless program package)
  find_program(found_${program} ${program})
  if(found_${program})
    return()
  endif()
  if("$ENV{DAQX_TRANSPORT_REQUIRE}" STREQUAL "1")
    message(FATAL_ERROR "${program} not found (Debian's ${package}; scripts/dev.sh installs it)")
  endif()
  message("install test skipped: ${program} not found (Debian's ${package})")
  # A script cannot choose its exit status: stop here, successfully; the message makes ctest report a skip.
  set(DAQX_SKIPPED TRUE PARENT_SCOPE)
endfunction()

function(run out)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH --unset=DAQX_MODULE_PATH ${ARGN}
    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${output}\n${errors}")
  endif()
  set(${out} "${output}" PARENT_SCOPE)
  set(${out}_errors "${errors}" PARENT_SCOPE)
endfunction()
