# run(<output variable> <command...>), for the install tests' scripts: runs the command without LD_LIBRARY_PATH and
# DAQX_MODULE_PATH (an install must find its libraries and modules on its own) and stops the test on a nonzero exit
# status with the command's output; sets <output variable> to its stdout and <output variable>_errors to its stderr.
function(run out)
  execute_process(COMMAND ${CMAKE_COMMAND} -E env --unset=LD_LIBRARY_PATH --unset=DAQX_MODULE_PATH ${ARGN}
    RESULT_VARIABLE status OUTPUT_VARIABLE output ERROR_VARIABLE errors)
  if(NOT status EQUAL 0)
    message(FATAL_ERROR "failed (${status}): ${ARGN}\n${output}\n${errors}")
  endif()
  set(${out} "${output}" PARENT_SCOPE)
  set(${out}_errors "${errors}" PARENT_SCOPE)
endfunction()
