# Flow graphs: memreport flow (lines of code, the bytes that flow between them).

# The flow graph of the model (flowgraph.h) on hand-built stacks.
memtrace_unit_test(flowgraph)
