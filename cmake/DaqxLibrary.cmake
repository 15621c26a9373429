# daqx_add_library(<name> <sources...>): one of daqx's shared libraries, the same way for every component:
# target daqx_<name>, alias daqx::<name> (the name it is exported under), its include/ folder public in the
# build and installed, warnings as errors, versioned, installed and exported with the CMake package. Its users
# compile with C++20 (the headers use it), which the exported target carries, and once installed it finds the
# other daqx libraries in its own folder ($ORIGIN).
function(daqx_add_library name)
  set(target daqx_${name})
  add_library(${target} SHARED ${ARGN})
  add_library(daqx::${name} ALIAS ${target})
  set_target_properties(${target} PROPERTIES EXPORT_NAME ${name} OUTPUT_NAME ${target}
    VERSION ${PROJECT_VERSION} SOVERSION ${PROJECT_VERSION_MAJOR} INSTALL_RPATH "$ORIGIN")
  target_compile_features(${target} PUBLIC cxx_std_20)
  target_include_directories(${target} PUBLIC
    $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include>
    $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  daqx_target_warnings(${target})
  install(TARGETS ${target} EXPORT daqxTargets
    LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR})
  install(DIRECTORY include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endfunction()
