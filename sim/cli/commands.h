/* commands.h: the bellows subcommands. Each takes the arguments after its name and returns a
 * status (BW_OK, BW_EUSAGE, BW_ERUNTIME) that main turns into the exit code; each prints its
 * own one-line error, prefixed "bellows: ", before returning a failure. */
#ifndef BELLOWS_COMMANDS_H
#define BELLOWS_COMMANDS_H

int cmd_train(int argc, char **argv);
int cmd_models(int argc, char **argv);
int cmd_platform(int argc, char **argv);
int cmd_run(int argc, char **argv);
int cmd_compare(int argc, char **argv);
int cmd_replay(int argc, char **argv);
int cmd_plot(int argc, char **argv);
int cmd_policies(int argc, char **argv);
int cmd_compressors(int argc, char **argv);

#endif
