# Driven by ctest (the fixture daqx_installed): install the build tree into a scratch prefix other than the one the
# build was configured with, move the install elsewhere (nothing in it may depend on where it was installed), then
# build against it out of tree with find_package(daqx), as a user would: tests/install (a program) and the
# example module of docs/writing-an-application.md, copied with its partition. The checks and runs that follow
# are separate tests (check_installed.cmake, out_of_tree_test.cpp).
cmake_minimum_required(VERSION 3.25)
include(${CMAKE_CURRENT_LIST_DIR}/run_clean.cmake)
file(REMOVE_RECURSE ${WORK_DIR})
set(installed ${WORK_DIR}/installed-here)
set(prefix ${WORK_DIR}/moved/daqx)
if(prefix STREQUAL CONFIGURED_PREFIX OR installed STREQUAL CONFIGURED_PREFIX)
  message(FATAL_ERROR "the scratch prefix is the configured one (${CONFIGURED_PREFIX})")
endif()
run(output ${CMAKE_COMMAND} --install ${BUILD_DIR} --prefix ${installed})
file(MAKE_DIRECTORY ${WORK_DIR}/moved)
file(RENAME ${installed} ${prefix})

set(flags "")
if(SANITIZE)
  set(flags "-fsanitize=address,undefined")
endif()
# No CMAKE_CXX_STANDARD: the package says C++20 itself.
run(output ${CMAKE_COMMAND} -S ${CONSUMER_DIR} -B ${WORK_DIR}/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} -DEXAMPLES_DIR=${EXAMPLES_DIR} "-DCMAKE_CXX_FLAGS=${flags}")
run(output ${CMAKE_COMMAND} --build ${WORK_DIR}/build)
run(output ${WORK_DIR}/build/pool_example)

# The application example exactly as the guide has the user build it: its folder, `cmake -S . -B build`.
file(COPY ${EXAMPLES_DIR}/counter DESTINATION ${WORK_DIR})
run(output ${CMAKE_COMMAND} -S ${WORK_DIR}/counter -B ${WORK_DIR}/counter/build -G ${GENERATOR}
    -DCMAKE_PREFIX_PATH=${prefix} "-DCMAKE_CXX_FLAGS=${flags}")
run(output ${CMAKE_COMMAND} --build ${WORK_DIR}/counter/build)
