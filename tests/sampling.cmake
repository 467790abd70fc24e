# Sampling by bytes (MEMTRACE_SAMPLE_BYTES): sampling/sampling_prog.c holds known amounts per
# site; sampling/sampling_test.py compares sampled captures (fixed MEMTRACE_SAMPLE_SEED) with
# an exact one: estimates, the capture's pairing and meta, the reports' note.
if(TARGET memtrace AND TARGET memtrace_launcher AND NOT MEMTRACE_SANITIZE)
  add_executable(sampling_prog sampling/sampling_prog.c)
  target_compile_options(sampling_prog PRIVATE -g -O1 -fno-builtin -fno-omit-frame-pointer)
  target_link_libraries(sampling_prog PRIVATE Threads::Threads)
  memtrace_driver_cases(SAMPLING_CASES ${CMAKE_CURRENT_SOURCE_DIR}/sampling/sampling_test.py)
  foreach(case ${SAMPLING_CASES})
    add_test(NAME e2e.sampling_${case}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/sampling/sampling_test.py
              $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
              $<TARGET_FILE:sampling_prog> ${CMAKE_CURRENT_BINARY_DIR}/sampling-e2e ${case}
              $<TARGET_FILE:e2e_signal_alloc> $<TARGET_FILE:mmap_prog>)
    set_tests_properties(e2e.sampling_${case} PROPERTIES LABELS e2e TIMEOUT 300)
  endforeach()
endif()

# The set of sampled blocks and the countdown, without LD_PRELOAD (as unit.core: the base and
# core objects, no shim).
add_executable(test_sampling unit/test_sampling.c ${MEMTRACE_PRELOAD_OBJECTS})
target_include_directories(test_sampling PRIVATE ${MEMTRACE_PRELOAD_INCLUDES})
target_compile_definitions(test_sampling PRIVATE _GNU_SOURCE)
target_compile_options(test_sampling PRIVATE -ftls-model=initial-exec -fno-omit-frame-pointer)
target_link_libraries(test_sampling PRIVATE memtrace_common_nosan memtrace_warnings
                      PkgConfig::SQLITE3 PkgConfig::LIBUNWIND PkgConfig::LIBDW Threads::Threads
                      ${CMAKE_DL_LIBS} m)
add_test(NAME unit.sampling COMMAND test_sampling)
set_tests_properties(unit.sampling PROPERTIES LABELS unit TIMEOUT 120)
