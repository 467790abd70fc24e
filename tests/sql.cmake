# memreport sql and the memtrace_sqlite extension (tests/sql/check_sql.py): events against
# summary's counts, allocations against leaks, seq/ts pushdown against a filtered full scan,
# --csv/--json read back, read-only opening, the extension in the sqlite3 shell.
set(SQL_TEST_ARGS $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
    $<TARGET_FILE:scale_gen_capture> $<TARGET_FILE:memtrace_sqlite>
    ${CMAKE_CURRENT_BINARY_DIR}/sql-e2e)
if(TARGET memtrace AND TARGET memtrace_launcher AND TARGET reports_prog)
  list(APPEND SQL_TEST_ARGS $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:reports_prog>)
endif()
add_test(NAME e2e.sql COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/sql/check_sql.py
         ${SQL_TEST_ARGS})
set_tests_properties(e2e.sql PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77)

# The interactive prompt through a pseudo-terminal: a query typed at it equals summary (on
# python3 traced), a two-line statement, an error shown and the prompt going on, Ctrl-D.
add_test(NAME e2e.sql_prompt
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/sql/prompt_test.py
          $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
          ${CMAKE_CURRENT_BINARY_DIR}/sql-prompt
          $<$<TARGET_EXISTS:memtrace_launcher>:$<TARGET_FILE:memtrace_launcher>>)
set_tests_properties(e2e.sql_prompt PROPERTIES LABELS e2e TIMEOUT 300 SKIP_RETURN_CODE 77)
