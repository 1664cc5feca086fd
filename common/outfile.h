/* outfile.h: result files that are either complete or absent. A file is written under a
 * temporary name in its destination folder, flushed, synced, closed (every step checked, so a
 * full disk is an error and not a truncated file) and renamed over the final name. Also a tiny
 * streaming JSON writer for summaries. */
#ifndef BELLOWS_OUTFILE_H
#define BELLOWS_OUTFILE_H

#include <stdio.h>
#include <sys/types.h>

#include "status.h"

typedef struct {
    FILE *f;
    char tmp[4096];
    char path[4096];
} OutFile;

/* Creates dir and its parents (like mkdir -p); names dir in the error (as --out). */
int outdir_create(const char *dir, BwError *err);

/* Opens dir/name for writing under a temporary name. */
int outfile_open(OutFile *of, const char *dir, const char *name, BwError *err);
/* Completes the file: checks for write errors, syncs, closes and renames it into place.
 * On failure the temporary file is removed. */
int outfile_commit(OutFile *of, BwError *err);
/* Abandons the file (removes the temporary); safe on a closed or zeroed OutFile. */
void outfile_abort(OutFile *of);

/* On SIGINT, SIGTERM, SIGHUP or SIGABRT (and a crash: SIGSEGV, SIGBUS, SIGFPE, SIGILL, but
 * in a sanitizer build), sends the signal to the child processes being tracked and waits for
 * them, removes the temporary files being written and the folders outdir_create made that are
 * still empty (newest first), then dies of the signal as usual; ignores SIGXFSZ so that a
 * file-size limit is a write error. Call once. */
void outfile_cleanup_on_signals(void);
/* This process is now the command's own (a supervised child that runs it, runner.c): a Ctrl-C
 * before its run starts says so here (outfile_cleanup_on_signals sets the first). */
void outfile_main_process(void);
/* A temporary file written by other means than outfile_open (a gzip stream, the trace writer)
 * joins the list a signal removes; the path's storage must stay until outfile_untrack. */
void outfile_track(char *tmp);
void outfile_untrack(const char *tmp);
/* dir's folders below root (dir itself included; root excluded) join the folders a fatal
 * signal or outdir_remove_if_new removes when empty, made by this process or not: the run
 * folders of a compare or sweep, whose shared parents (seed-1/) one run makes and another
 * uses, so that whichever run cleans up last leaves no empty folder. */
void outdir_track_below(const char *root, const char *dir);
/* A child process running a simulation: a fatal signal is passed on to it, and waited for. */
void outfile_track_child(pid_t pid);
void outfile_untrack_child(pid_t pid);
/* While on, the first SIGINT kills at once, as a second one would, saying so: for code that
 * may never return to look at the flag (a policy plugin's decide). */
void outfile_interrupt_hard(int on);
/* Ends the process now with status, after removing what a fatal signal would (the tracked
 * children, the temporaries, the empty new folders); no atexit handler runs. For a failure with
 * no way back to main (out of memory, common/xalloc.h); the caller has written its message. */
_Noreturn void outfile_exit_now(int status);
/* While guarded, an exit() (a plugin's, say) does not end the process with its status: it
 * prints "bellows: WHAT called exit() before the run ended; no results (nothing written)",
 * cleans up as a signal would and exits 1. WHAT names the suspects. */
void outfile_guard_exit(const char *what);
void outfile_unguard_exit(void);
/* For the commands that stop cleanly (run, compare, replay, sweep): the first SIGINT only sets
 * a flag, which the driver checks at every step and the child-process runner between runs;
 * a second SIGINT dies as outfile_cleanup_on_signals says. Call after it. */
void outfile_interrupt_softly(void);
/* 1 once a SIGINT was received under outfile_interrupt_softly. */
int outfile_interrupted(void);
/* hook (async-signal-safe code only) is called from the handler at the first SIGINT under
 * outfile_interrupt_softly, after the flag is set: code that does not return to the driver's
 * checks (a Python policy's loop) is stopped there. One hook per process; NULL removes it. */
void outfile_on_interrupt(void (*hook)(void));
/* Removes dir if it is empty and did not exist before (existed: as found before creating it),
 * and every folder this process's outdir_create made that is empty now (newest first); what
 * an interrupted command leaves. */
void outdir_remove_if_new(const char *dir, int existed);

/* The folders this process records as made (outdir_create, outdir_track_below) go to a page
 * shared with the processes forked after it, so that a supervisor (runner_supervise) can remove
 * those a child made and left empty when it died without cleaning up (a plug-in's _exit()):
 * outfile_remove_dirs_of(child). Async-signal-safe. */
void outfile_share_dirs(void);
void outfile_remove_dirs_of(pid_t pid);

/* JSON writer: keys and commas are tracked per nesting level. Numbers that are not finite
 * are written as null. */
typedef struct {
    FILE *f;
    int depth;
    int first[16]; /* first[d]: nothing written yet at depth d */
} JsonW;

void jsonw_begin(JsonW *w, FILE *f);
void jsonw_object(JsonW *w, const char *key); /* key NULL inside arrays or at top level */
void jsonw_end_object(JsonW *w);
void jsonw_array(JsonW *w, const char *key);
void jsonw_end_array(JsonW *w);
void jsonw_string(JsonW *w, const char *key, const char *v); /* v NULL writes null */
void jsonw_double(JsonW *w, const char *key, double v);
void jsonw_long(JsonW *w, const char *key, long long v);
void jsonw_bool(JsonW *w, const char *key, int v);
void jsonw_null(JsonW *w, const char *key);

#endif
