# memreport diff: two runs compared. The model (reporter/model/diff.h) on hand-built entries;
# the command on a program traced twice with known differences, and on imported NPU logs.
memtrace_unit_test(diff)

# The command on a program with known differences between `diff_prog 1` and `diff_prog 2`
# (tests/diff/diff_prog.c), traced under the tracer; diff_prog_elsewhere is the same source
# copied to another directory and built with its code moved, so nothing but addresses and
# paths differ. Also two imported NPU logs, and a native capture against an NPU one.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(diff_prog diff/diff_prog.c)
  target_compile_options(diff_prog PRIVATE -g -O1 -fno-omit-frame-pointer)
  configure_file(diff/diff_prog.c ${CMAKE_CURRENT_BINARY_DIR}/diff-elsewhere/diff_prog.c COPYONLY)
  add_executable(diff_prog_elsewhere ${CMAKE_CURRENT_BINARY_DIR}/diff-elsewhere/diff_prog.c)
  target_compile_options(diff_prog_elsewhere PRIVATE -g -O1 -fno-omit-frame-pointer)
  target_compile_definitions(diff_prog_elsewhere PRIVATE DIFF_PROG_MOVED=1)
  add_test(NAME e2e.diff
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/diff/diff_test.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:diff_prog> $<TARGET_FILE:diff_prog_elsewhere>
            ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu ${CMAKE_CURRENT_BINARY_DIR}/diff-e2e)
  set_tests_properties(e2e.diff PROPERTIES LABELS e2e TIMEOUT 180)
endif()

# memreport diff --html, the differential flame graph, in headless chromium on the same
# two runs of diff_prog (tests/diff/diff_page_test.py): colours, exact deltas, the base
# shape for frames gone from the new run, hostile names.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_test(NAME e2e.diff_page
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/diff/diff_page_test.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:diff_prog>
            ${CMAKE_CURRENT_BINARY_DIR}/diff-page)
  set_tests_properties(e2e.diff_page PROPERTIES LABELS e2e TIMEOUT 180 SKIP_RETURN_CODE 77)
endif()
