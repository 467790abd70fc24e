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
