# Warnings are errors in every daqx target; third-party headers come in as SYSTEM.
function(daqx_target_warnings target)
  target_compile_options(${target} PRIVATE -Wall -Wextra -Wpedantic -Wshadow -Wnon-virtual-dtor
    -Wold-style-cast -Wcast-align -Woverloaded-virtual -Wnull-dereference -Werror)
endfunction()
