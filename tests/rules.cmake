# The rules of this test tree (tests/README.md) on the build's own test list: a label and a
# timeout each, exit 77 the only way to skip, no test area included OPTIONAL.
add_test(NAME unit.test_rules
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/rules/check_rules.py
          ${CMAKE_CTEST_COMMAND} ${PROJECT_BINARY_DIR} ${CMAKE_CURRENT_SOURCE_DIR})
set_tests_properties(unit.test_rules PROPERTIES LABELS unit TIMEOUT 60)

# The commit subject check that .ci/run makes (scripts/check-commit-subjects.sh) can fail.
add_test(NAME unit.commit_subjects
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/rules/check_commit_subjects.sh
          ${PROJECT_SOURCE_DIR}/scripts/check-commit-subjects.sh
          ${CMAKE_CURRENT_BINARY_DIR}/commit-subjects)
set_tests_properties(unit.commit_subjects PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)

# Every source folder's README.md names each of its files, and docs/architecture.md links
# every such page.
add_test(NAME unit.folder_pages
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/rules/check_folder_pages.py
          ${PROJECT_SOURCE_DIR})
set_tests_properties(unit.folder_pages PROPERTIES LABELS unit TIMEOUT 60 SKIP_RETURN_CODE 77)

# No two headers included by their bare name share it (common/include/memtrace/ apart).
add_test(NAME unit.header_names
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/rules/check_header_names.py
          ${PROJECT_SOURCE_DIR})
set_tests_properties(unit.header_names PROPERTIES LABELS unit TIMEOUT 60)

# common/ holds only what both sides link (the tracer's copy, or the template's generator).
add_test(NAME unit.common_shared
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/rules/check_common_shared.py
          ${PROJECT_SOURCE_DIR}
          "$<JOIN:$<TARGET_PROPERTY:memtrace_common_nosan,SOURCES>,|>"
          "$<JOIN:$<TARGET_PROPERTY:capture_template_gen,SOURCES>,|>")
set_tests_properties(unit.common_shared PROPERTIES LABELS unit TIMEOUT 60)

# The model says nothing itself: messages go into the caller's buffer (check_model_quiet.py).
add_test(NAME unit.model_quiet
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/rules/check_model_quiet.py
          ${CMAKE_NM} $<TARGET_FILE:memreport_model>)
set_tests_properties(unit.model_quiet PROPERTIES LABELS unit TIMEOUT 60)

# A function a header declares is named after the header (CONTRIBUTING.md, "names").
add_test(NAME unit.names
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/rules/check_names.py
          ${PROJECT_SOURCE_DIR})
set_tests_properties(unit.names PROPERTIES LABELS unit TIMEOUT 60)
