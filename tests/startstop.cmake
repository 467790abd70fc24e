# Start and stop (MEMTRACE_START, MEMTRACE_SIGNAL, memtrace --delay) and bounded captures
# (MEMTRACE_MAX_MB): startstop/startstop_prog.c allocates known amounts in phases the test
# drives over a pipe, toggling recording between them; startstop_test.py checks the capture
# against what was recorded, and the output and status against an untraced run.
if(TARGET memtrace AND TARGET memtrace_launcher AND NOT MEMTRACE_SANITIZE)
  add_executable(startstop_prog startstop/startstop_prog.c)
  target_compile_options(startstop_prog PRIVATE -g -O0 -fno-builtin -fno-omit-frame-pointer)
  memtrace_driver_cases(STARTSTOP_CASES ${CMAKE_CURRENT_SOURCE_DIR}/startstop/startstop_test.py)
  foreach(case ${STARTSTOP_CASES})
    add_test(NAME e2e.startstop_${case}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/startstop/startstop_test.py
              $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
              $<TARGET_FILE:startstop_prog> ${CMAKE_CURRENT_BINARY_DIR}/startstop-e2e ${case})
    set_tests_properties(e2e.startstop_${case} PROPERTIES LABELS e2e TIMEOUT 300)
  endforeach()
endif()
