# Driven by ctest (the fixture daqx_package): builds the Debian package of the build tree with cpack, checks its
# control fields and contents, installs it into a throwaway dpkg root (never into the system) with its maintainer
# script run against that root, and checks what landed there: programs that answer --version, a bare module name
# found inside the package's own tree, the systemd unit template accepted by systemd-analyze. package_test.cpp
# then runs a partition with the installed executive.
cmake_minimum_required(VERSION 3.25)
file(REMOVE_RECURSE ${WORK_DIR})
set(root ${WORK_DIR}/root)
set(failures "")
include(${CMAKE_CURRENT_LIST_DIR}/run_clean.cmake)
macro(fail message)
  string(APPEND failures "\n  ${message}")
endmacro()

skip_unless(dpkg-shlibdeps dpkg-dev)
if(DAQX_SKIPPED)
  return()
endif()
run(built ${CPACK_COMMAND} -G DEB --config ${BUILD_DIR}/CPackConfig.cmake -B ${WORK_DIR}/cpack)
file(GLOB packages ${WORK_DIR}/cpack/*.deb)
list(LENGTH packages count)
if(NOT count EQUAL 1)
  message(FATAL_ERROR "cpack made ${count} packages, not one:\n${built}")
endif()

# Control fields: the version, and Depends from dpkg-shlibdeps naming the libraries the binaries link.
run(info dpkg-deb --info ${packages})
foreach(field "Package: daqx" "Version: ${VERSION}" "Architecture: ")
  string(FIND "${info}" "\n ${field}" at)
  if(at EQUAL -1)
    fail("the control file has no '${field}'")
  endif()
endforeach()
string(REGEX MATCH "\n Depends: [^\n]*" depends "${info}")
foreach(library libc6 libstdc\\+\\+6 libnuma1 libpugixml1v5 libpocofoundation[0-9]+ libpoconet[0-9]+ libpocojson[0-9]+)
  if(NOT depends MATCHES " ${library} \\(>= ")
    fail("Depends does not name ${library} with a version: '${depends}'")
  endif()
endforeach()
if(depends MATCHES "daqx")
  fail("the package depends on itself: '${depends}'")
endif()

run(contents dpkg-deb --contents ${packages})
foreach(path usr/bin/daqx-executive usr/bin/daqx-launch usr/bin/daqxctl usr/bin/daqx-evb-dump
             usr/lib/daqx/libdaqx_pttcp.so usr/lib/daqx/libdaqx_evb.so usr/lib/libdaqx_api.so.0
             usr/include/daqx/api/module.hpp usr/lib/cmake/daqx/daqxConfig.cmake
             usr/share/man/man1/daqx-executive.1 usr/share/man/man1/daqx-launch.1 usr/share/man/man1/daqxctl.1
             usr/share/bash-completion/completions/daqxctl usr/share/bash-completion/completions/daqx-launch
             usr/lib/systemd/system/daqx-executive@.service usr/lib/sysusers.d/daqx.conf
             usr/share/doc/daqx/writing-an-application.md usr/share/doc/daqx/examples/counter/counter_module.cpp)
  if(NOT contents MATCHES " \\./${path}( -> [^\n]*)?\n")  # a symbolic link shows its target
    fail("the package has no /${path}")
  endif()
endforeach()

# A dpkg root of its own: dpkg's database there, the maintainer script run outside a chroot with DPKG_ROOT set
# (the package's postinst creates the user daqx in ${root}/etc, not on this machine).
file(MAKE_DIRECTORY ${root}/var/lib/dpkg/info ${root}/var/lib/dpkg/updates ${root}/etc)
file(TOUCH ${root}/var/lib/dpkg/status)
run(installed dpkg --root=${root} --force-depends --force-script-chrootless --force-not-root --log=/dev/null
  -i ${packages})
run(status dpkg --root=${root} -s daqx)
if(NOT status MATCHES "Status: install ok installed")
  fail("dpkg does not list daqx as installed in ${root}:\n${status}")
endif()
file(READ ${root}/etc/passwd passwd)
if(NOT passwd MATCHES "(^|\n)daqx:")
  fail("the postinst did not create the user daqx in ${root}/etc/passwd")
endif()

foreach(program daqx-executive daqx-launch daqxctl daqx-evb-dump)
  run(version ${root}/usr/bin/${program} --version)
  if(NOT version MATCHES "^${program} ${VERSION}")
    fail("${program} --version printed '${version}'")
  endif()
endforeach()
run(listed ${root}/usr/bin/daqx-executive --list-params libdaqx_pttcp.so)
if(NOT listed MATCHES "^module pttcp \\(${root}/usr/lib/daqx/libdaqx_pttcp.so\\)")
  fail("daqx-executive --list-params libdaqx_pttcp.so did not load the package's module:\n${listed}")
endif()

# The unit template, with the package's paths resolved into the root, as systemd would load an instance of it.
file(READ ${root}/usr/lib/systemd/system/daqx-executive@.service unit)
if(NOT unit MATCHES "\nExecStart=/usr/bin/daqx-executive --config /etc/daqx/%i.xml")
  fail("the unit's ExecStart does not run /usr/bin/daqx-executive with /etc/daqx/%i.xml")
endif()
foreach(setting "NoNewPrivileges=yes" "LimitMEMLOCK=infinity" "Restart=on-failure" "User=daqx")
  string(FIND "${unit}" "\n${setting}\n" at)
  if(at EQUAL -1)
    fail("the unit does not set ${setting}")
  endif()
endforeach()
find_program(SYSTEMD_ANALYZE systemd-analyze)
if(SYSTEMD_ANALYZE)
  string(REPLACE "/usr/bin/daqx-executive" "${root}/usr/bin/daqx-executive" unit "${unit}")
  file(WRITE ${WORK_DIR}/systemd/daqx-executive@.service "${unit}")
  # MANPATH: its Documentation= page is the package's.
  run(verified env MANPATH=${root}/usr/share/man ${SYSTEMD_ANALYZE} verify
    ${WORK_DIR}/systemd/daqx-executive@context.service)
  if(NOT verified_errors STREQUAL "" OR NOT verified STREQUAL "")
    fail("systemd-analyze verify said:\n${verified}${verified_errors}")
  endif()
elseif("$ENV{DAQX_TRANSPORT_REQUIRE}" STREQUAL "1")
  fail("systemd-analyze not found (Debian's systemd)")
else()
  # Without systemd: the sections a unit needs, and only key=value lines in them.
  foreach(section "[Unit]" "[Service]" "[Install]")
    string(FIND "${unit}" "\n${section}\n" at)
    if(at EQUAL -1)
      fail("the unit has no ${section} section")
    endif()
  endforeach()
  string(REGEX REPLACE "\n[#[][^\n]*" "" settings "\n${unit}")
  string(REGEX REPLACE "\n[A-Za-z]+=[^\n]*" "" settings "${settings}")
  string(STRIP "${settings}" settings)
  if(NOT settings STREQUAL "")
    fail("the unit has lines that are not settings: ${settings}")
  endif()
endif()

if(failures)
  message(FATAL_ERROR "the Debian package:${failures}")
endif()
