# Golden outputs (tests/golden/README.md): every memreport report, in its main modes, on
# the fixture captures and the imported NPU logs, compared byte for byte with
# tests/golden/expected, so a refactor of the reporter that changes an output fails here.
add_test(NAME reports.golden
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/golden/run_golden.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          $<TARGET_FILE:reports_deep_fixture> ${CMAKE_CURRENT_BINARY_DIR}/golden)
set_tests_properties(reports.golden PROPERTIES LABELS unit TIMEOUT 300)
