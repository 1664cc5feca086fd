/* plugguard.h: which plug-in (a policy or schedule .so, a Python policy) bellows is running,
 * so that a plug-in that ends the process its own way (exit(), _exit(), os._exit(), abort(), a
 * fault) is named with its kind and what it was doing, never taken for a run that ended well.
 *
 * The record lives in a page that a process may share with a parent (plugguard_share before
 * fork, plugguard_use in the child): _exit() runs no handler, so only a parent that finds the
 * child gone without saying it was done can report it (runner_supervise, runner_pool). exit()
 * and a signal are reported by the process itself (outfile.c's handlers ask
 * plugguard_describe). Entering and leaving cost a few stores and one short copy per call. */
#ifndef BELLOWS_PLUGGUARD_H
#define BELLOWS_PLUGGUARD_H

#include <stddef.h>

typedef struct PlugGuard PlugGuard;

/* A new record in memory shared with the children forked after it; NULL if it cannot be
 * mapped (then the process keeps its own). plugguard_free unmaps it. */
PlugGuard *plugguard_share(void);
void plugguard_free(PlugGuard *g);
/* From now on this process records into g (NULL: its own record). */
void plugguard_use(PlugGuard *g);

/* Calls into a plug-in begin and end: kind "policy" or "schedule", flag "--policy", spec as
 * given, phase what it does ("loading", "init", "decision at step 3", ...). Nested calls are
 * not made; leave clears the record. */
void plugguard_enter(const char *kind, const char *flag, const char *spec, const char *phase);
void plugguard_leave(void);

/* "the schedule plug-in ./s.so (--schedule), in its decision at step 3" into buf, and 1, when a
 * plug-in was running in g (NULL: this process's record); else 0 and buf "". Async-signal-safe
 * for this process's own record. */
int plugguard_describe(const PlugGuard *g, char *buf, size_t n);

/* A plug-in's fork() is refused: its child ends at once (status 127) and the plug-in's call
 * goes on; 1 and "the policy plug-in ... , in its decision at step 2" into buf when one did in
 * this process (or its parent before forking it), for the run to fail with. A plug-in's chdir()
 * is undone when its call returns (the folder the first call began in). */
int plugguard_forked(char *buf, size_t n);

/* The process says what ended it (a normal end, or an error or crash it reported itself): a
 * parent then adds nothing. */
void plugguard_said(void);
int plugguard_was_said(const PlugGuard *g);

#endif
