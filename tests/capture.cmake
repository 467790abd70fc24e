# Capture pipeline tests: the reader, heap map and replay as units, and the
# tracer end to end on programs with known truth (tests/e2e/progs) and on real programs,
# driven by tests/e2e/run_e2e.py (each case: untraced, baseline and traced runs).
memtrace_unit_test(capture)
memtrace_unit_test(capture_write)
memtrace_unit_test(capture_callsites)
memtrace_unit_test(capture_template)
memtrace_unit_test(capture_ahead)
memtrace_unit_test(capture_ahead_edges)
memtrace_unit_test(heapmap)
memtrace_unit_test(u64map)
# Stored bytes read a window at a time, and SipHash in pieces (reporter/base/varstream.h).
memtrace_unit_test(varstream)
memtrace_unit_test(strtab)
memtrace_unit_test(replay)

# The e2e programs: -O0 and no builtins, so every allocator call in the source is made
# (GCC may otherwise drop a malloc/free or new/delete pair whose block is unused).
set(MEMTRACE_E2E_PROGS peak leaks realloc_chain entry_points threads fork_exec exits
    signal_alloc)
foreach(prog ${MEMTRACE_E2E_PROGS})
  add_executable(e2e_${prog} e2e/progs/${prog}.c)
  target_compile_definitions(e2e_${prog} PRIVATE _GNU_SOURCE)
  target_compile_options(e2e_${prog} PRIVATE -O0 -fno-builtin)
  target_link_libraries(e2e_${prog} PRIVATE memtrace_warnings Threads::Threads)
endforeach()
add_executable(e2e_cxx e2e/progs/cxx.cpp)
target_compile_options(e2e_cxx PRIVATE -O0 -fno-builtin -fno-allocation-dce)
set_target_properties(e2e_cxx PROPERTIES CXX_STANDARD 17 CXX_STANDARD_REQUIRED ON)
target_link_libraries(e2e_cxx PRIVATE memtrace_warnings)
# Lists a capture's events with exact times (e2e.timestamps), through the reports' reader.
add_executable(e2e_dump_events e2e/dump_events.c)
target_link_libraries(e2e_dump_events PRIVATE memtrace_common memtrace_warnings)

# Two of them linked against other allocators (-ljemalloc, -ltcmalloc): the hooks wrap
# theirs, and the counts stay exact (e2e.allocator_*, skipped where a library is missing).
set(MEMTRACE_E2E_ALLOCATOR_PROGS)
foreach(alloc jemalloc tcmalloc)
  string(TOUPPER ${alloc} ALLOC)
  find_library(MEMTRACE_LIB${ALLOC} ${alloc})
  if(MEMTRACE_LIB${ALLOC})
    foreach(prog leaks threads)
      add_executable(e2e_${prog}_${alloc} e2e/progs/${prog}.c)
      target_compile_definitions(e2e_${prog}_${alloc} PRIVATE _GNU_SOURCE)
      target_compile_options(e2e_${prog}_${alloc} PRIVATE -O0 -fno-builtin)
      target_link_libraries(e2e_${prog}_${alloc} PRIVATE memtrace_warnings Threads::Threads
                            ${MEMTRACE_LIB${ALLOC}})
      list(APPEND MEMTRACE_E2E_ALLOCATOR_PROGS ${prog}_${alloc})
    endforeach()
  endif()
endforeach()

# One ctest test per case of run_e2e.py (its --list), so a failure names what broke. Never
# under ASan: it replaces malloc itself.
if(TARGET memtrace AND NOT MEMTRACE_SANITIZE)
  set(E2E_TARGETS --lib $<TARGET_FILE:memtrace> --launcher $<TARGET_FILE:memtrace_launcher>
      --memreport $<TARGET_FILE:memreport>)
  foreach(prog ${MEMTRACE_E2E_PROGS} cxx dump_events ${MEMTRACE_E2E_ALLOCATOR_PROGS})
    list(APPEND E2E_TARGETS --prog ${prog}=$<TARGET_FILE:e2e_${prog}>)
  endforeach()
  memtrace_driver_cases(MEMTRACE_E2E_CASES ${CMAKE_CURRENT_SOURCE_DIR}/e2e/run_e2e.py)
  foreach(case ${MEMTRACE_E2E_CASES})
    add_test(NAME e2e.${case}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/e2e/run_e2e.py
                     ${E2E_TARGETS} ${case})
    set_tests_properties(e2e.${case} PROPERTIES LABELS e2e TIMEOUT 120 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# memreport against damaged and unfinished captures of a real traced program:
# flipped bits in event chunks, a corpus of truncated and overwritten files, a full disk.
if(TARGET memtrace AND TARGET memtrace_launcher AND NOT MEMTRACE_SANITIZE)
  add_executable(paced_churn capture/paced_churn.c)
  target_link_libraries(paced_churn PRIVATE memtrace_warnings)
  memtrace_driver_cases(DAMAGED_CASES ${CMAKE_CURRENT_SOURCE_DIR}/capture/check_damaged.py)
  foreach(case ${DAMAGED_CASES})
    add_test(NAME e2e.capture_${case}
             COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/capture/check_damaged.py
                     --launcher $<TARGET_FILE:memtrace_launcher>
                     --memreport $<TARGET_FILE:memreport> --prog $<TARGET_FILE:paced_churn>
                     ${case})
    set_tests_properties(e2e.capture_${case} PROPERTIES LABELS e2e TIMEOUT 300
                         SKIP_RETURN_CODE 77)
  endforeach()
endif()
