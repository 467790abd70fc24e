# Leak kinds (docs/leaks.md), each test skipped where the tool it compares with is missing:
# - e2e.leak_kinds: the scan at the capture's end against valgrind's memcheck on a program
#   with one block of each kind (tests/leaks/check_kinds.py);
# - e2e.leak_python: the same in a CPython program, whose object arenas are roots
#   (check_python.py);
# - e2e.leak_scan_fails: a scan that times out (in place or in a copy) or whose copy dies: the
#   program unharmed, the blocks unclassified, and why (check_scan_fails.py);
# - e2e.leak_detach: the scan on demand, at MEMTRACE_LEAK_SIGNAL's signal and at memtrace
#   --detach (gdb) of a program the launcher started (check_detach.py);
# - e2e.leak_roots: each module's writable segments read once, and the tracer's never, where
#   a bss past its file's last page is an anonymous mapping (check_roots.py);
# - e2e.leak_unreadable: the scan in place skips a page the program made unreadable, where a
#   copy dies of the read (check_unreadable.py).
if(TARGET memtrace AND NOT MEMTRACE_SANITIZE)
  add_executable(leaks_kinds leaks/kinds.c)
  target_compile_options(leaks_kinds PRIVATE -O1 -g)
  target_link_libraries(leaks_kinds PRIVATE Threads::Threads)
  add_executable(leaks_held_heap leaks/held_heap.c)
  target_link_libraries(leaks_held_heap PRIVATE Threads::Threads)
  add_executable(leaks_roots leaks/roots.c)
  add_executable(leaks_unreadable leaks/unreadable.c)
  target_link_libraries(leaks_unreadable PRIVATE Threads::Threads)
  function(leak_test name script)
    add_test(NAME e2e.${name} COMMAND ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_SOURCE_DIR}/leaks/${script} ${ARGN})
    set_tests_properties(e2e.${name} PROPERTIES LABELS e2e TIMEOUT 300)
  endfunction()
  leak_test(leak_kinds check_kinds.py --lib $<TARGET_FILE:memtrace>
    --memreport $<TARGET_FILE:memreport> --prog $<TARGET_FILE:leaks_kinds>
    --workdir ${CMAKE_CURRENT_BINARY_DIR}/leak_kinds.d)
  leak_test(leak_python check_python.py --lib $<TARGET_FILE:memtrace>
    --memreport $<TARGET_FILE:memreport> --workdir ${CMAKE_CURRENT_BINARY_DIR}/leak_python.d)
  leak_test(leak_scan_fails check_scan_fails.py $<TARGET_FILE:memtrace>
    $<TARGET_FILE:memreport> $<TARGET_FILE:leaks_held_heap>
    ${CMAKE_CURRENT_BINARY_DIR}/leak_scan_fails.d)
  leak_test(leak_detach check_detach.py $<TARGET_FILE:memtrace_launcher>
    $<TARGET_FILE:memreport> $<TARGET_FILE:leaks_held_heap>
    ${CMAKE_CURRENT_BINARY_DIR}/leak_detach.d)
  leak_test(leak_roots check_roots.py $<TARGET_FILE:memtrace> $<TARGET_FILE:memreport>
    $<TARGET_FILE:leaks_roots> ${CMAKE_CURRENT_BINARY_DIR}/leak_roots.d)
  leak_test(leak_unreadable check_unreadable.py $<TARGET_FILE:memtrace>
    $<TARGET_FILE:memreport> $<TARGET_FILE:leaks_unreadable>
    ${CMAKE_CURRENT_BINARY_DIR}/leak_unreadable.d)
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
