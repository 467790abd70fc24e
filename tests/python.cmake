# Python programs traced: Python frames in every stack (tests/python/check_python_frames.py,
# one test per case; a case whose Python is not installed is skipped with exit 77).
if(TARGET memtrace AND TARGET memtrace_launcher)
  memtrace_driver_cases(PYTHON_CASES ${CMAKE_CURRENT_SOURCE_DIR}/python/check_python_frames.py)
  foreach(case ${PYTHON_CASES})
    add_test(NAME e2e.python_${case} COMMAND ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_SOURCE_DIR}/python/check_python_frames.py
      --launcher $<TARGET_FILE:memtrace_launcher> --memreport $<TARGET_FILE:memreport>
      --workdir ${CMAKE_CURRENT_BINARY_DIR}/python_${case}.d ${case})
    set_tests_properties(e2e.python_${case} PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# CPython's own allocators as heap "python" (preload/python_heap.c), on each installed
# interpreter, against PYTHONMALLOC=malloc and tracemalloc (tests/python/check_python_heap.py).
if(TARGET memtrace AND TARGET memtrace_launcher AND TARGET nopie_prog AND NOT MEMTRACE_SANITIZE)
  memtrace_driver_cases(PYMALLOC_CASES ${CMAKE_CURRENT_SOURCE_DIR}/python/check_python_heap.py)
  foreach(case ${PYMALLOC_CASES})
    add_test(NAME e2e.pymalloc_${case} COMMAND ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_SOURCE_DIR}/python/check_python_heap.py
      --launcher $<TARGET_FILE:memtrace_launcher> --memreport $<TARGET_FILE:memreport>
      --prog $<TARGET_FILE:nopie_prog> --workdir ${CMAKE_CURRENT_BINARY_DIR}/pymalloc_${case}.d
      ${case})
    set_tests_properties(e2e.pymalloc_${case} PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77)
  endforeach()
endif()

# memreport view of a python process mapping anonymous memory: its heaps (libc and python,
# libc, python, mmap) in headless chromium against memreport summary (tests/python/view_heaps.py).
if(TARGET memtrace AND TARGET memtrace_launcher AND NOT MEMTRACE_SANITIZE)
  add_test(NAME e2e.view_heaps COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/python/view_heaps.py --launcher $<TARGET_FILE:memtrace_launcher>
    --memreport $<TARGET_FILE:memreport> --workdir ${CMAKE_CURRENT_BINARY_DIR}/view_heaps.d)
  set_tests_properties(e2e.view_heaps PROPERTIES LABELS e2e TIMEOUT 180 SKIP_RETURN_CODE 77)
endif()
