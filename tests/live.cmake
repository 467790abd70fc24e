# memreport live: following a capture while its program runs (live/live_prog.c waits on
# the test between phases of known allocations): --once snapshots at each phase, the
# finished capture unharmed, and the interactive screen driven through a pseudo-terminal.
if(TARGET memtrace AND TARGET memtrace_launcher AND NOT MEMTRACE_SANITIZE)
  add_executable(live_prog live/live_prog.c)
  target_compile_options(live_prog PRIVATE -g -O0 -fno-builtin -fno-omit-frame-pointer)
  add_test(NAME e2e.live
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/live/live_test.py
            $<TARGET_FILE:memreport> $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:live_prog>
            ${CMAKE_CURRENT_BINARY_DIR}/live-e2e)
  set_tests_properties(e2e.live PROPERTIES LABELS e2e TIMEOUT 240)
endif()
