# Installation layout, man pages and the Debian package (`make install`, `make deb`).
#   bin/memtrace, bin/memreport
#   lib/memtrace/libmemtrace.so   (a preload library, not one to link with: kept out of the
#                                  linker's path, as heaptrack does; the launcher finds it
#                                  at ../lib/memtrace beside its own executable)
#   include/memtrace.h            (the annotation API)
#   share/man/man1/memtrace.1, memreport.1 (generated from the programs' --help)
#   share/doc/memtrace/README.md, docs/  (the pages --help and the man pages point to; the
#                                  README's links stay true beside them)
# The targets' install() rules are in preload/ and reporter/.

# Man pages written from the built programs' own --help, so they always match them.
# Sanitized builds run memreport --help under ASan: its leak check is not wanted there.
set(MEMTRACE_MAN_DIR ${PROJECT_BINARY_DIR}/man)
add_custom_command(OUTPUT ${MEMTRACE_MAN_DIR}/memtrace.1 ${MEMTRACE_MAN_DIR}/memreport.1
  COMMAND ${CMAKE_COMMAND} -E make_directory ${MEMTRACE_MAN_DIR}
  COMMAND ${PROJECT_SOURCE_DIR}/scripts/gen-man.sh memtrace $<TARGET_FILE:memtrace_launcher>
          ${PROJECT_VERSION} ${MEMTRACE_MAN_DIR}/memtrace.1
  COMMAND ${CMAKE_COMMAND} -E env ASAN_OPTIONS=detect_leaks=0
          ${PROJECT_SOURCE_DIR}/scripts/gen-man.sh memreport $<TARGET_FILE:memreport>
          ${PROJECT_VERSION} ${MEMTRACE_MAN_DIR}/memreport.1
  DEPENDS memtrace_launcher memreport ${PROJECT_SOURCE_DIR}/scripts/gen-man.sh
  COMMENT "Writing man pages memtrace.1 and memreport.1 from --help"
  VERBATIM)
add_custom_target(man ALL DEPENDS ${MEMTRACE_MAN_DIR}/memtrace.1 ${MEMTRACE_MAN_DIR}/memreport.1)
install(FILES ${MEMTRACE_MAN_DIR}/memtrace.1 ${MEMTRACE_MAN_DIR}/memreport.1
  DESTINATION share/man/man1)
install(FILES ${PROJECT_SOURCE_DIR}/preload/include/memtrace.h DESTINATION include)
install(FILES ${PROJECT_SOURCE_DIR}/README.md DESTINATION share/doc/memtrace)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/docs DESTINATION share/doc/memtrace)

# Debian package: `cpack -G DEB` in the build directory (`make deb`). Installs under /usr.
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME memtrace)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
  "native memory profiler: LD_PRELOAD heap tracer (memtrace) and reporter (memreport)")
set(CPACK_PACKAGE_DESCRIPTION
  "memtrace records every heap call of a dynamically linked program, with its native stack, \
into an SQLite capture file; memreport turns captures into summaries, leak reports, plots \
and flame graphs.")
set(CPACK_PACKAGE_CONTACT "memtrace dev <dev@memtrace.local>")
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION devel)
# Runtime dependencies are read from the binaries by dpkg-shlibdeps (dpkg-dev); without it,
# the packages Debian 12 ships the libraries in. The tracer links SQLite and zstd statically.
find_program(MEMTRACE_DPKG_SHLIBDEPS dpkg-shlibdeps)
if(MEMTRACE_DPKG_SHLIBDEPS)
  set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
else()
  set(CPACK_DEBIAN_PACKAGE_DEPENDS
    "libc6, libunwind8, libdw1, libelf1, libsqlite3-0, libzstd1, libcairo2, libjansson4")
endif()
include(CPack)
