# memreport export: every format checked by the tool that reads it (tests/exports/).

# csv: msMemScope's dump layout, read back by Python's csv module and `sqlite3 .import --csv`
# on the standard fixture with marks, and on an imported NPU log.
add_test(NAME e2e.export_csv
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/exports/csv_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu/sample.log
          ${CMAKE_CURRENT_BINARY_DIR}/exports-csv)
set_tests_properties(e2e.export_csv PROPERTIES LABELS e2e TIMEOUT 120 SKIP_RETURN_CODE 77)
