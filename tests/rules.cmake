# The rules of this test tree (tests/README.md) on the build's own test list: a label and a
# timeout each, exit 77 the only way to skip, no test area included OPTIONAL.
add_test(NAME unit.test_rules
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/rules/check_rules.py
          ${CMAKE_CTEST_COMMAND} ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(unit.test_rules PROPERTIES LABELS unit TIMEOUT 60)
