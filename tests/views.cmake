# Function views: memreport top (self and total per function, callers and callees).

# The call graph of the model (callgraph.h) on hand-built stacks and the standard fixture.
memtrace_unit_test(callgraph ${REPORTS_FIXTURE})

# memreport top on an imported NPU log and, with the tracer, on a traced program whose
# functions allocate known bytes along known paths (views/top_prog.c).
set(TOP_TEST_ARGS $<TARGET_FILE:memreport> ${CMAKE_CURRENT_SOURCE_DIR}/fixtures/npu/corner.log
    ${CMAKE_CURRENT_BINARY_DIR}/views-top)
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(top_prog views/top_prog.c views/top_prog_b.c)
  target_link_libraries(top_prog PRIVATE Threads::Threads)
  target_compile_definitions(top_prog PRIVATE _GNU_SOURCE)
  target_compile_options(top_prog PRIVATE -g -O0 -fno-inline -fno-omit-frame-pointer)
  list(APPEND TOP_TEST_ARGS $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:top_prog>)
endif()
add_test(NAME e2e.top
  COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/views/top_test.py ${TOP_TEST_ARGS})
set_tests_properties(e2e.top PROPERTIES LABELS e2e TIMEOUT 120)

# One question, one number: top, stats, the flame graph page, folded, diff and summary on a
# program whose functions allocate known bytes (views/agree_prog.c), and on a python3 run.
if(TARGET memtrace AND TARGET memtrace_launcher)
  add_executable(agree_prog views/agree_prog.c)
  target_compile_options(agree_prog PRIVATE -g -O0 -fno-inline -fno-omit-frame-pointer)
  add_test(NAME e2e.views_agree
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/views/views_agree_test.py
            $<TARGET_FILE:memreport> $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:agree_prog>
            ${CMAKE_CURRENT_BINARY_DIR}/views-agree)
  set_tests_properties(e2e.views_agree PROPERTIES LABELS e2e TIMEOUT 300)
endif()
