# NPU compiler log import and the StaticAllocation heap plot (issue 3).
memtrace_unit_test(import_npu)
target_compile_definitions(test_import_npu PRIVATE
  NPU_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu")
memtrace_unit_test(plot_npu)
target_compile_definitions(test_plot_npu PRIVATE
  NPU_FIXTURES="${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu")

# memreport's --data against an independent Python-regex reimplementation of upstream's
# rules, on the fixtures and on random trap-filled logs.
add_test(NAME e2e.npu_oracle
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/npu/diff_oracle.py
          $<TARGET_FILE:memreport> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu
          ${CMAKE_CURRENT_BINARY_DIR}/npu-oracle 200)
add_test(NAME e2e.npu_cli
  COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/npu/cli.sh $<TARGET_FILE:memreport>
          ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu ${CMAKE_CURRENT_BINARY_DIR}/npu-cli)
set_tests_properties(e2e.npu_oracle e2e.npu_cli PROPERTIES LABELS e2e TIMEOUT 300)

# The native time plot (issue 5, `memreport plot` on a native capture): unit test on a
# capture built with the writer, and a traced program (not under sanitizers: the tracer
# is never built with them).
memtrace_unit_test(plot_native)
if(NOT MEMTRACE_SANITIZE)
  add_test(NAME e2e.plot_native
    COMMAND bash ${CMAKE_CURRENT_SOURCE_DIR}/npu/plot_native.sh
            $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:memreport>
            ${CMAKE_CURRENT_BINARY_DIR}/plot-native)
  set_tests_properties(e2e.plot_native PROPERTIES LABELS e2e TIMEOUT 120)
endif()

set_tests_properties(unit.import_npu unit.plot_npu unit.plot_native e2e.npu_oracle e2e.npu_cli
  PROPERTIES ENVIRONMENT
  "LSAN_OPTIONS=suppressions=${CMAKE_CURRENT_SOURCE_DIR}/npu/lsan.supp:print_suppressions=0")
