# Installing and packaging: `make install`'s layout (cmake --install with DESTDIR) and the
# Debian package of `make deb` (unpacked into a temporary root), each used as a user would:
# a program traced by the installed memtrace, its capture read by the installed memreport.
# Not in sanitized builds: those are not what is installed.
if(TARGET memtrace AND TARGET memtrace_launcher AND TARGET memreport AND NOT MEMTRACE_SANITIZE)
  add_test(NAME e2e.install COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check_install.sh
    install ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/install/probe.c
    ${CMAKE_CURRENT_BINARY_DIR}/install.d)
  # cpack first builds the `preinstall` target of this build tree: never while e2e.install
  # copies from it.
  set_tests_properties(e2e.install PROPERTIES LABELS e2e TIMEOUT 300
    RESOURCE_LOCK memtrace_install_tree)
  # Without dpkg-deb the script exits 77: the test shows as skipped, not absent.
  add_test(NAME e2e.deb COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check_install.sh
    deb ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR}/install/probe.c
    ${CMAKE_CURRENT_BINARY_DIR}/deb.d)
  set_tests_properties(e2e.deb PROPERTIES LABELS e2e TIMEOUT 600
    RESOURCE_LOCK memtrace_install_tree SKIP_RETURN_CODE 77)
endif()

# `make demo` in a fresh build directory: quiet, builds only what the demo runs, and every
# file it names is written. Needs make and the tree's Makefile (not in sanitized builds).
find_program(MEMTRACE_MAKE NAMES make gmake)
if(MEMTRACE_MAKE AND EXISTS ${PROJECT_SOURCE_DIR}/Makefile AND NOT MEMTRACE_SANITIZE)
  add_test(NAME e2e.make_demo COMMAND ${CMAKE_CURRENT_SOURCE_DIR}/install/check_make_demo.sh
    ${PROJECT_SOURCE_DIR} ${CMAKE_CURRENT_BINARY_DIR}/make_demo.d)
  set_tests_properties(e2e.make_demo PROPERTIES LABELS e2e TIMEOUT 900)
endif()
