# The trust audit (tests/trust/check_audit.py, one test per case, each a case_ function):
# names from a crafted capture never reach a terminal raw (messages, any format on stdout or
# through -o /dev/tty), memreport sql only reads (no file written, no function outside
# SQLite's core, --timeout and --max-memory), a FIFO where memreport reads a file never
# blocks it, --pid/--detach leave the process's descriptors, signals and
# stderr as they were (not in sanitizer builds, as attach.cmake), MEMTRACE_MMAP=1 exact and
# harmless with forks (trust/mmap_fork.c) and refused calls (trust/mmap_fail.c),
# MEMTRACE_SIGNAL never taking a fault signal (tracer/crash.c).
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(mmap_fork trust/mmap_fork.c)
  target_compile_definitions(mmap_fork PRIVATE _GNU_SOURCE)
  target_compile_options(mmap_fork PRIVATE -O1 -g)
  target_link_libraries(mmap_fork PRIVATE memtrace_warnings Threads::Threads)
  add_executable(mmap_fail trust/mmap_fail.c)
  target_compile_definitions(mmap_fail PRIVATE _GNU_SOURCE)
  target_link_libraries(mmap_fail PRIVATE memtrace_warnings)
  add_executable(spin_named trust/spin_named.c)
  target_compile_options(spin_named PRIVATE -O1 -g0)
  memtrace_driver_cases(TRUST_AUDIT_CASES ${CMAKE_CURRENT_SOURCE_DIR}/trust/check_audit.py)
  foreach(case ${TRUST_AUDIT_CASES})
    if(MEMTRACE_SANITIZE AND case MATCHES "^attach")
      continue()
    endif()
    add_test(NAME e2e.trust_audit_${case} COMMAND ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_SOURCE_DIR}/trust/check_audit.py
      --memtrace $<TARGET_FILE:memtrace_launcher> --lib $<TARGET_FILE:memtrace>
      --memreport $<TARGET_FILE:memreport> --crash $<TARGET_FILE:crash>
      --fixture $<TARGET_FILE:reports_fixture> --mmap-fork $<TARGET_FILE:mmap_fork>
      --mmap-fail $<TARGET_FILE:mmap_fail> --spin-named $<TARGET_FILE:spin_named>
      --workdir ${CMAKE_CURRENT_BINARY_DIR}/trust_audit_${case}.d ${case})
    set_tests_properties(e2e.trust_audit_${case} PROPERTIES LABELS e2e TIMEOUT 300)
  endforeach()
endif()
