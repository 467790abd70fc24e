# Function views: memreport top (self and total per function, callers and callees).

# The call graph of the model (callgraph.h) on hand-built stacks and the standard fixture.
memtrace_unit_test(callgraph ${REPORTS_FIXTURE})
