/* runner.h: simulations in child processes (SimGrid allows one engine per process). A child
 * runs one scenario into its own folder and sends its headline figures back through a pipe;
 * the pool keeps up to `jobs` children running and hands each row to the parent as it ends.
 * Used by compare and sweep. */
#ifndef BELLOWS_RUNNER_H
#define BELLOWS_RUNNER_H

#include <stdio.h>

#include "run_args.h"

typedef struct {
    int rc; /* BW_OK, or the failure's status */
    char status[32];
    char error[512];
    double final, best, tta, sim_time, bytes, compute, compress, comm, wait;
    /* --topology islands: the bytes that crossed the WAN, per worker (RunResult.wan_bytes /
     * workers); NAN otherwise. A command whose runs are all on islands shows these as its
     * bytes (runner_show_wan): an island's own ring is not what islands are about. */
    double wan_bytes;
    /* tta's resolution: simulated seconds from the evaluation before the one that reached the
     * target to that one (the crossing lies in between); NAN if not reached */
    double tta_res;
    long steps;
    char never_exchanged[320]; /* RunResult's: what the policy never exchanged, "" when all */
} RunRow;

/* In a child: runs cfg (SimGrid options from f, the network model from R) into dir (below the
 * command's output folder root; NULL: no result files, for a run wanted only for its
 * --record-trace), writes the row to fd and exits. */
void runner_child(const RunConfig *cfg, const char *model, const char *command, const Flags *f,
                  const char *root, const char *dir, int fd);

/* Until outfile_unguard_exit, an exit() in the run (a policy plugin's, policy: the run's
 * spec) is a failure that says so, not a success without results (outfile_guard_exit). */
void runner_guard_exit(const char *policy);

/* Runs the rest of the process (bellows run, compare, replay, sweep; once a process) in a child
 * and returns there; this process waits and exits as the child did, removing the empty folders
 * a failed child made (outfile_share_dirs). A plug-in that ends the child with _exit() or
 * os._exit(), which no handler of the child's sees, is named (plugguard's record) and the exit is
 * 1, not 0; a child that ended with status 0 without saying so is a failure too. Signals: a Ctrl-C
 * reaches the child with the process group; a SIGTERM or SIGHUP to this process is passed on; the
 * child ends when this process dies. Returns unsupervised if it cannot fork. */
void runner_supervise(void);

/* Runs jobs 0..n-1, at most `jobs` at a time. start(job, fd, ctx) runs in the child and must
 * end in runner_child (or _exit); done(job, row, ctx) runs in the parent when a job ends (a
 * child that died yields rc BW_ERUNTIME). Returns BW_OK, or BW_ERUNTIME if it could not fork. */
int runner_pool(int n, int jobs, void (*start)(int job, int fd, void *ctx),
                void (*done)(int job, RunRow *row, void *ctx), void *ctx, BwError *err);

/* The result columns compare.csv and sweep.csv share, "status,...,steps" (no newline), and one
 * row's values for them. speedup and bytes_ratio are against the baseline (NaN: none). A
 * failed row is "failed" and empty fields. The files differ in how they write a figure that is
 * not finite: compare.csv as printf does ("nan"), but for an empty time to accuracy, speedup
 * and ratio; sweep.csv as an empty field throughout. */
typedef enum { RUNNER_CSV_COMPARE, RUNNER_CSV_SWEEP } RunnerCsvStyle;
/* A row of a command whose runs are all on islands: its bytes become the WAN's (issue 49 item
 * 33), so the tables, ratios and files show them (runner_csv_header's islands). */
void runner_show_wan(RunRow *row);

/* islands (--topology islands): columns 6 and 7 are wan_bytes_per_worker and wan_bytes_ratio,
 * the rows' bytes being the WAN's (RunRow.bytes); bytes_per_worker and bytes_ratio otherwise. */
void runner_csv_header(FILE *f, int islands);
void runner_csv_row(FILE *f, const RunRow *row, double speedup, double bytes_ratio,
                    RunnerCsvStyle style);

/* A run's bytes against its baseline's. With --stop-at-target (stop_at_target) a run that
 * reached the target stopped there and one that did not ran whole: the two compare only when
 * both reached it (NAN otherwise, as when the baseline has no bytes). */
double runner_bytes_ratio(const RunRow *x, const RunRow *base, int stop_at_target);

/* Statistics over seeds. runner_mean_ci: the mean of x[0..n-1] and its 95% interval from
 * Student's t distribution (mean +- t(0.975, n-1) sd / sqrt(n)); lo and hi NAN when n < 2, all
 * three NAN when n is 0. runner_paired_speedups: base[i] / tta[i] for each i where both are
 * finite, into out; returns how many. */
void runner_mean_ci(const double *x, int n, double *mean, double *lo, double *hi);
int runner_paired_speedups(const double *base, const double *tta, int n, double *out);
/* The paired speedups sp[0..n-1] (each > 0) summed up on the log scale, where a ratio's
 * interval belongs: their geometric mean exp(mean log sp) and the 95% interval exp(mean +-
 * t(0.975, n-1) sd(log sp) / sqrt(n)), which is never negative; lo and hi NAN when n < 2 (too
 * few seeds), all three NAN when n is 0. */
void runner_speedup_ci(const double *sp, int n, double *gmean, double *lo, double *hi);
/* The speedup and its interval as the tables print them: "1.40x" (with "~" when the interval
 * contains 1: not told apart from the baseline) and "[1.31,1.49]" (empty without an interval;
 * "-" for an unknown speedup). Returns 1 if marked "~". */
int runner_format_speedup(double mean, double lo, double hi, char *sp, size_t n_sp, char *ci,
                          size_t n_ci);

/* "3-static-level-1" from 2 and "static:level=1": a folder name for a policy spec. A plugin's
 * path stays inside the folder: '/' becomes '_' ("2-._my.so-k-1"), and any byte but
 * [A-Za-z0-9._+-] becomes '-'. */
void runner_folder_name(int i, const char *spec, char *buf, size_t n);

#endif
