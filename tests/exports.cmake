# memreport export: every format checked by the tool that reads it (tests/exports/).

# csv: msMemScope's dump layout, read back by Python's csv module and `sqlite3 .import --csv`
# on the standard fixture with marks, on an imported NPU log, and on python3 traced with a
# mark and a range (rows = events + marks, per-stack sums = stats).
add_test(NAME e2e.export_csv
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/exports/csv_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu/sample.log
          ${CMAKE_CURRENT_BINARY_DIR}/exports-csv
          $<$<TARGET_EXISTS:memtrace_launcher>:$<TARGET_FILE:memtrace_launcher>>)
set_tests_properties(e2e.export_csv PROPERTIES LABELS e2e TIMEOUT 120 SKIP_RETURN_CODE 77)

# folded: the lines add up to summary's total for each metric (fixtures with known truth, a
# traced program), names with ';' or newlines stay one frame; and the program's own stacks
# equal what `heaptrack_print -F` writes for it (skipped without heaptrack).
add_test(NAME e2e.export_folded
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/exports/folded_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          ${CMAKE_CURRENT_BINARY_DIR}/exports-folded
          $<$<TARGET_EXISTS:memtrace_launcher>:$<TARGET_FILE:memtrace_launcher>>
          $<$<TARGET_EXISTS:reports_prog>:$<TARGET_FILE:reports_prog>>)
set_tests_properties(e2e.export_folded PROPERTIES LABELS e2e TIMEOUT 120)
if(TARGET memtrace_launcher AND TARGET reports_prog)
  add_test(NAME e2e.export_folded_heaptrack
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/exports/folded_heaptrack_test.py
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            $<TARGET_FILE:reports_prog> ${CMAKE_CURRENT_BINARY_DIR}/exports-folded-heaptrack)
  set_tests_properties(e2e.export_folded_heaptrack PROPERTIES LABELS e2e TIMEOUT 120
                       SKIP_RETURN_CODE 77)
endif()

# pprof: `go tool pprof` (Debian golang-go) reads every sample type back on the standard
# fixture and, with the tracer, on a traced program with an inlined allocation site.
set(PPROF_TEST_ARGS $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
    ${CMAKE_CURRENT_BINARY_DIR}/exports-pprof)
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(pprof_prog exports/pprof_prog.c)
  target_compile_options(pprof_prog PRIVATE -g -O1 -fno-omit-frame-pointer)
  list(APPEND PPROF_TEST_ARGS $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:pprof_prog>)
endif()
add_test(NAME e2e.export_pprof
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/exports/pprof_test.py
          ${PPROF_TEST_ARGS})
set_tests_properties(e2e.export_pprof PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77)

# massif: valgrind's ms_print reads it and prints the fixture's known peak and tree, and
# summary's peak for python3 traced.
add_test(NAME e2e.export_massif
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/exports/massif_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu/sample.log
          ${CMAKE_CURRENT_BINARY_DIR}/exports-massif
          $<$<TARGET_EXISTS:memtrace_launcher>:$<TARGET_FILE:memtrace_launcher>>)
set_tests_properties(e2e.export_massif PROPERTIES LABELS e2e TIMEOUT 120 SKIP_RETURN_CODE 77)

# speedscope: the file validates against the schema of speedscope's npm package (ajv) and
# weighs what summary reports (fixtures, a traced program); speedscope's own page loads it
# in headless chromium. The npm packages are pinned in exports/speedscope/package-lock.json
# (scripts/install-deps.sh --test runs npm ci there); without them, or node, or chromium,
# the tests skip.
add_test(NAME e2e.export_speedscope
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/exports/speedscope_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          ${CMAKE_CURRENT_BINARY_DIR}/exports-speedscope
          $<$<TARGET_EXISTS:memtrace_launcher>:$<TARGET_FILE:memtrace_launcher>>
          $<$<TARGET_EXISTS:reports_prog>:$<TARGET_FILE:reports_prog>>)
set_tests_properties(e2e.export_speedscope PROPERTIES LABELS e2e TIMEOUT 120
                     SKIP_RETURN_CODE 77)
add_test(NAME e2e.export_speedscope_browser
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/exports/speedscope_browser.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          ${CMAKE_CURRENT_BINARY_DIR}/exports-speedscope-browser)
set_tests_properties(e2e.export_speedscope_browser PROPERTIES LABELS e2e TIMEOUT 180
                     SKIP_RETURN_CODE 77)

# chrome: the trace-event JSON parses, its heap track peaks at summary's peak, its RSS/VSZ
# tracks and marks are the capture's (the fixture's, and python3's traced with a mark and a
# range).
add_test(NAME e2e.export_chrome
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/exports/chrome_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu/sample.log
          ${CMAKE_CURRENT_BINARY_DIR}/exports-chrome
          $<$<TARGET_EXISTS:memtrace_launcher>:$<TARGET_FILE:memtrace_launcher>>)
set_tests_properties(e2e.export_chrome PROPERTIES LABELS e2e TIMEOUT 120 SKIP_RETURN_CODE 77)
