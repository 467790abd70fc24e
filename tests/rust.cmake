# Rust programs traced (tests/rust/check_rust.py, one test per case): rustc builds them in
# the test itself, which is skipped (77) where rustc is missing. Exit status and output as
# untraced; every block a program counted itself is in the capture.
if(TARGET memtrace AND NOT MEMTRACE_SANITIZE)
  memtrace_driver_cases(RUST_CASES ${CMAKE_CURRENT_SOURCE_DIR}/rust/check_rust.py)
  foreach(case ${RUST_CASES})
    add_test(NAME e2e.rust_${case} COMMAND ${Python3_EXECUTABLE}
      ${CMAKE_CURRENT_SOURCE_DIR}/rust/check_rust.py --lib $<TARGET_FILE:memtrace>
      --memreport $<TARGET_FILE:memreport>
      --workdir ${CMAKE_CURRENT_BINARY_DIR}/rust_${case}.d ${case})
    set_tests_properties(e2e.rust_${case} PROPERTIES LABELS e2e TIMEOUT 300)
  endforeach()
endif()
