# Captures at and beyond the limits the reader holds events to (docs/capture-format.md,
# "Limits"), crafted with the project's writer (limits/mklimits.c): every report command
# prints exact figures or refuses the capture with exit 2, and none crashes
# (limits/check_limits.py, one test per case).
add_executable(limits_fixture limits/mklimits.c ${REPORTS_FIXTURE})
target_include_directories(limits_fixture PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}/reports)
target_link_libraries(limits_fixture PRIVATE memtrace_common memtrace_warnings PkgConfig::SQLITE3)
target_compile_definitions(limits_fixture PRIVATE _GNU_SOURCE)
# ASan reserves terabytes of address space: no ulimit -v under it.
set(LIMITS_SANITIZED "")
if(MEMTRACE_SANITIZE)
  set(LIMITS_SANITIZED --sanitized)
endif()
memtrace_driver_cases(LIMITS_CASES ${CMAKE_CURRENT_SOURCE_DIR}/limits/check_limits.py)
foreach(case ${LIMITS_CASES})
  add_test(NAME e2e.limits_${case} COMMAND ${Python3_EXECUTABLE}
    ${CMAKE_CURRENT_SOURCE_DIR}/limits/check_limits.py
    --memreport $<TARGET_FILE:memreport> --fixture $<TARGET_FILE:limits_fixture>
    --workdir ${CMAKE_CURRENT_BINARY_DIR}/limits_${case}.d ${LIMITS_SANITIZED} ${case})
  set_tests_properties(e2e.limits_${case} PROPERTIES LABELS e2e TIMEOUT 300)
endforeach()
