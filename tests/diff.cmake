# memreport diff: two runs compared. The model (reporter/model/diff.h) on hand-built entries;
# the command on a program traced twice with known differences, and on imported NPU logs.
memtrace_unit_test(diff)
