# MEMTRACE_MMAP=1: the program's anonymous mappings as heap "mmap" (mmap/mmap_prog.c, whose
# truth is known; mmap/mmap_test.py checks the capture, the reports that take --heap mmap,
# and that the setting changes neither the libc heap nor the program).
if(TARGET memtrace AND NOT MEMTRACE_SANITIZE)
  add_executable(mmap_prog mmap/mmap_prog.c)
  target_compile_options(mmap_prog PRIVATE -g -O0 -fno-builtin -fno-omit-frame-pointer)
  memtrace_driver_cases(MMAP_CASES ${CMAKE_CURRENT_SOURCE_DIR}/mmap/mmap_test.py)
  foreach(case ${MMAP_CASES})
    add_test(NAME e2e.mmap_${case}
      COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/mmap/mmap_test.py
              $<TARGET_FILE:memtrace> $<TARGET_FILE:memreport> $<TARGET_FILE:mmap_prog>
              ${CMAKE_CURRENT_BINARY_DIR}/mmap-e2e ${case})
    set_tests_properties(e2e.mmap_${case} PROPERTIES LABELS e2e TIMEOUT 300)
  endforeach()
endif()
