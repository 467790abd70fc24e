// SPDX-License-Identifier: MIT
// The memreport subcommands. Each takes the arguments after its name (argv[0] is the
// subcommand) and returns an exit code (base/messages.h).
#ifndef MR_CMD_H
#define MR_CMD_H

int mr_cmd_summary(int argc, char** argv);
int mr_cmd_stacks(int argc, char** argv);
int mr_cmd_top(int argc, char** argv);
int mr_cmd_leaks(int argc, char** argv);
int mr_cmd_stats(int argc, char** argv);
int mr_cmd_flamegraph(int argc, char** argv);
int mr_cmd_import(int argc, char** argv);
int mr_cmd_plot(int argc, char** argv);
int mr_cmd_export(int argc, char** argv);
int mr_cmd_sql(int argc, char** argv);
int mr_cmd_diff(int argc, char** argv);
int mr_cmd_flow(int argc, char** argv);
int mr_cmd_live(int argc, char** argv);
int mr_cmd_view(int argc, char** argv);

#endif
