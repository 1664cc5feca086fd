/* commands.h: the single-run bellows subcommands (sweep.h and reproduce.h declare the others).
 * Each takes the arguments after its name and returns a status (BW_OK, BW_EUSAGE, BW_ERUNTIME)
 * with its one-line message in err; main prints the message, once, and turns the status into
 * the exit code (Lua's `report` in lua.c works the same way). */
#ifndef BELLOWS_COMMANDS_H
#define BELLOWS_COMMANDS_H

#include "status.h"

int cmd_train(int argc, char **argv, BwError *err);
int cmd_models(int argc, char **argv, BwError *err);
int cmd_platform(int argc, char **argv, BwError *err);
int cmd_bench(int argc, char **argv, BwError *err);
int cmd_run(int argc, char **argv, BwError *err);
int cmd_compare(int argc, char **argv, BwError *err);
int cmd_replay(int argc, char **argv, BwError *err);
int cmd_plot(int argc, char **argv, BwError *err);
int cmd_policies(int argc, char **argv, BwError *err);
int cmd_compressors(int argc, char **argv, BwError *err);
int cmd_workloads(int argc, char **argv, BwError *err);
int cmd_costs(int argc, char **argv, BwError *err);
int cmd_costs_import(int argc, char **argv, BwError *err); /* costs import-nccl-tests */
int cmd_validate(int argc, char **argv, BwError *err);     /* cmd_validate.c */
int cmd_schedules(int argc, char **argv, BwError *err);

#endif
