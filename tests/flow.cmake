# Flow graphs: memreport flow (lines of code, the bytes that flow between them).

# The flow graph of the model (flowgraph.h) on hand-built stacks.
memtrace_unit_test(flowgraph)

# memreport flow on a traced program whose lines allocate known bytes along known paths
# (flow/flow_prog.c): JSON, DOT read back by Graphviz, SVG parsed as XML, errors; and on
# the hostile names of reports/progs/hostile_names.c (reports.cmake).
if(TARGET memtrace AND TARGET memtrace_launcher)
  set(FLOW_HOSTILE "")
  if(TARGET hostile_names)
    set(FLOW_HOSTILE $<TARGET_FILE:hostile_names>)
  endif()
  add_executable(flow_prog flow/flow_prog.c)
  target_compile_definitions(flow_prog PRIVATE _GNU_SOURCE)
  target_compile_options(flow_prog PRIVATE -g -O0 -fno-inline -fno-omit-frame-pointer)
  add_test(NAME e2e.flow
    COMMAND ${Python3_EXECUTABLE} ${CMAKE_CURRENT_SOURCE_DIR}/flow/flow_test.py
            $<TARGET_FILE:memreport> $<TARGET_FILE:memtrace_launcher> $<TARGET_FILE:flow_prog>
            ${CMAKE_CURRENT_SOURCE_DIR}/flow/flow_prog.c ${CMAKE_CURRENT_BINARY_DIR}/flow-e2e
            ${FLOW_HOSTILE})
  set_tests_properties(e2e.flow PROPERTIES LABELS e2e TIMEOUT 120 SKIP_RETURN_CODE 77)
endif()
