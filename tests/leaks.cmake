# Leak kinds (docs/leaks.md): the scan at the capture's end against valgrind's memcheck on a
# program with one block of each kind (tests/leaks/check_kinds.py; skipped where valgrind
# is missing).
if(TARGET memtrace AND NOT MEMTRACE_SANITIZE)
  add_executable(leaks_kinds leaks/kinds.c)
  target_compile_options(leaks_kinds PRIVATE -O1 -g)
  target_link_libraries(leaks_kinds PRIVATE Threads::Threads)
  add_test(NAME e2e.leak_kinds COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/leaks/check_kinds.py --lib $<TARGET_FILE:memtrace>
    --memreport $<TARGET_FILE:memreport> --prog $<TARGET_FILE:leaks_kinds>
    --workdir ${CMAKE_CURRENT_BINARY_DIR}/leak_kinds.d)
  set_tests_properties(e2e.leak_kinds PROPERTIES LABELS e2e TIMEOUT 300)
endif()

# The same in a CPython program (tests/leaks/check_python.py): its object arenas are roots.
if(TARGET memtrace AND NOT MEMTRACE_SANITIZE)
  add_test(NAME e2e.leak_python COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/leaks/check_python.py --lib $<TARGET_FILE:memtrace>
    --memreport $<TARGET_FILE:memreport> --workdir ${CMAKE_CURRENT_BINARY_DIR}/leak_python.d)
  set_tests_properties(e2e.leak_python PROPERTIES LABELS e2e TIMEOUT 300)
endif()

# A scan whose copy times out or dies: the program unharmed, the blocks unclassified, and
# why (tests/leaks/check_scan_fails.py).
if(TARGET memtrace AND NOT MEMTRACE_SANITIZE)
  add_executable(leaks_held_heap leaks/held_heap.c)
  target_link_libraries(leaks_held_heap PRIVATE Threads::Threads)
  add_test(NAME e2e.leak_scan_fails COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/leaks/check_scan_fails.py $<TARGET_FILE:memtrace>
    $<TARGET_FILE:memreport> $<TARGET_FILE:leaks_held_heap>
    ${CMAKE_CURRENT_BINARY_DIR}/leak_scan_fails.d)
  set_tests_properties(e2e.leak_scan_fails PROPERTIES LABELS e2e TIMEOUT 300)
endif()

# The scan at memtrace --detach of a program the launcher started
# (tests/leaks/check_detach.py; skipped without gdb).
if(TARGET memtrace AND NOT MEMTRACE_SANITIZE)
  add_test(NAME e2e.leak_detach COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/leaks/check_detach.py $<TARGET_FILE:memtrace_launcher>
    $<TARGET_FILE:memreport> $<TARGET_FILE:leaks_held_heap>
    ${CMAKE_CURRENT_BINARY_DIR}/leak_detach.d)
  set_tests_properties(e2e.leak_detach PROPERTIES LABELS e2e TIMEOUT 300)
endif()

# memreport view's leaks by kind in headless chromium, against summary, leaks --kind and
# leaks --range on the same traced program (tests/leaks/view_kinds.py).
if(TARGET memtrace AND NOT MEMTRACE_SANITIZE)
  add_test(NAME e2e.view_leaks COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/leaks/view_kinds.py --lib $<TARGET_FILE:memtrace>
    --memreport $<TARGET_FILE:memreport> --prog $<TARGET_FILE:leaks_kinds>
    --workdir ${CMAKE_CURRENT_BINARY_DIR}/view_leaks.d)
  set_tests_properties(e2e.view_leaks PROPERTIES LABELS e2e TIMEOUT 180 SKIP_RETURN_CODE 77)
endif()
