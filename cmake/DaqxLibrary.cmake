# daqx_add_library(<name> <sources...>): one of daqx's shared libraries, the same way for every component:
# target daqx_<name>, alias daqx::<name> (the name it is exported under), its include/ folder public in the
# build and installed, warnings as errors, versioned, installed and exported with the CMake package. Its users
# compile with C++20 (the headers use it), which the exported target carries, and once installed it finds the
# other daqx libraries in its own folder ($ORIGIN).
# daqx_add_library(<name> STATIC <sources...>): a static library linked into each module that uses it (the
# modules then need no daqx library but the API's): position-independent, and its symbols hidden, so that every
# module keeps its own copy and none binds to another's.
function(daqx_add_library name)
  set(target daqx_${name})
  if(ARGV1 STREQUAL "STATIC")
    list(POP_FRONT ARGN)
    add_library(${target} STATIC ${ARGN})
    set_target_properties(${target} PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden
      VISIBILITY_INLINES_HIDDEN ON)
  else()
    add_library(${target} SHARED ${ARGN})
    set_target_properties(${target} PROPERTIES VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR}
      INSTALL_RPATH "$ORIGIN")
  endif()
  add_library(daqx::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME ${target})
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  daqx_target_warnings(${target})
  install(TARGETS ${target} EXPORT daqxTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()
