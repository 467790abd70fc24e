# The command line a new user meets: --version, --help,
# usage errors, "memreport: wrote FILE", --top and --all-frames (tests/cli/check_cli.py,
# one test per case).
if(TARGET memtrace AND TARGET memtrace_launcher)
  memtrace_driver_cases(CLI_CASES ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_cli.py)
  foreach(case ${CLI_CASES})
    add_test(NAME e2e.cli_${case} COMMAND ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_SOURCE_DIR}/cli/check_cli.py ${case} ${PROJECT_VERSION} ${PROJECT_SOURCE_DIR}
      $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport> $<TARGET_FILE:reports_fixture>
      ${CMAKE_CURRENT_BINARY_DIR}/cli_${case}.d)
    set_tests_properties(e2e.cli_${case} PROPERTIES LABELS e2e TIMEOUT 120)
  endforeach()
endif()
