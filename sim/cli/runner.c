/* runner.c: child processes for simulations (see runner.h). */
#include "runner.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#if defined(__linux__)
#include <sys/prctl.h>
#endif
#include <unistd.h>

#include <gsl/gsl_cdf.h>
#include <gsl/gsl_statistics_double.h>

#include "costs_band.h"
#include "engine.h"
#include "outfile.h"
#include "plugguard.h"
#include "spec.h"
#include "results.h"
#include "wallclock.h"

void runner_folder_name(int i, const char *spec, char *buf, size_t n)
{
    int used = snprintf(buf, n, "%d-", i + 1);
    for (const char *p = spec; *p && (size_t)used + 1 < n; p++)
        buf[used++] = *p == '/'                                                    ? '_'
                      : (isalnum((unsigned char)*p) || strchr("._+-", *p) != NULL) ? *p
                                                                                   : '-';
    buf[used] = '\0';
}

void runner_mean_ci(const double *x, int n, double *mean, double *lo, double *hi)
{
    *mean = n > 0 ? gsl_stats_mean(x, 1, (size_t)n) : NAN;
    *lo = *hi = NAN;
    if (n < 2) return;
    double half = gsl_cdf_tdist_Pinv(0.975, n - 1) * gsl_stats_sd(x, 1, (size_t)n) / sqrt(n);
    *lo = *mean - half;
    *hi = *mean + half;
}

void runner_speedup_ci(const double *sp, int n, double *gmean, double *lo, double *hi)
{
    double m = 0, ss = 0;
    for (int i = 0; i < n; i++) m += log(sp[i]) / n;
    for (int i = 0; i < n; i++) ss += (log(sp[i]) - m) * (log(sp[i]) - m);
    *gmean = n > 0 ? exp(m) : NAN;
    *lo = *hi = NAN;
    if (n < 2) return;
    double half = gsl_cdf_tdist_Pinv(0.975, n - 1) * sqrt(ss / (n - 1)) / sqrt(n);
    *lo = exp(m - half);
    *hi = exp(m + half);
}

int runner_paired_speedups(const double *base, const double *tta, int n, double *out)
{
    int k = 0;
    for (int i = 0; i < n; i++)
        if (isfinite(base[i]) && isfinite(tta[i]) && tta[i] > 0) out[k++] = base[i] / tta[i];
    return k;
}

int runner_format_speedup(double mean, double lo, double hi, char *sp, size_t n_sp, char *ci,
                          size_t n_ci)
{
    int ns = isfinite(lo) && isfinite(hi) && lo <= 1 && hi >= 1;
    if (isfinite(mean))
        snprintf(sp, n_sp, "%.2fx%s", mean, ns ? "~" : "");
    else
        snprintf(sp, n_sp, "-");
    if (isfinite(lo) && isfinite(hi))
        snprintf(ci, n_ci, "[%.2f,%.2f]", lo, hi);
    else
        snprintf(ci, n_ci, "%s", "");
    return ns;
}

double runner_bytes_ratio(const RunRow *x, const RunRow *base, int stop_at_target)
{
    if (stop_at_target && (!isfinite(x->tta) || !isfinite(base->tta))) return NAN;
    return base->bytes > 0 ? x->bytes / base->bytes : NAN;
}

void runner_show_wan(RunRow *row)
{
    if (!row->rc) row->bytes = row->wan_bytes;
}

void runner_csv_header(FILE *f, int islands)
{
    fprintf(f,
            "status,final_test_accuracy,best_test_accuracy,time_to_accuracy_s,speedup,"
            "%s,sim_time_s,compute_s,compression_s,communication_s,wait_s,steps",
            islands ? "wan_bytes_per_worker,wan_bytes_ratio" : "bytes_per_worker,bytes_ratio");
}

/* One figure and the comma after it; blank: an empty field. */
static void csv_figure(FILE *f, double x, const char *fmt, int blank)
{
    if (!blank) fprintf(f, fmt, x);
    fputc(',', f);
}

void runner_csv_row(FILE *f, const RunRow *row, double speedup, double bytes_ratio,
                    RunnerCsvStyle style)
{
    if (row->rc) { /* a failed run has no figures */
        fputs("failed,,,,,,,,,,,,", f);
        return;
    }
    int sw = style == RUNNER_CSV_SWEEP; /* a figure that is not finite: empty */
    fprintf(f, "%s,", row->status);
    csv_figure(f, row->final, "%.9g", sw && !isfinite(row->final));
    csv_figure(f, row->best, "%.9g", sw && !isfinite(row->best));
    csv_figure(f, row->tta, "%.9g", (sw && !isfinite(row->tta)) || isnan(row->tta));
    csv_figure(f, speedup, "%.6g", !isfinite(speedup));
    csv_figure(f, row->bytes, "%.17g", sw && !isfinite(row->bytes));
    csv_figure(f, bytes_ratio, "%.6g", !isfinite(bytes_ratio));
    csv_figure(f, row->sim_time, "%.9g", sw && !isfinite(row->sim_time));
    csv_figure(f, row->compute, "%.9g", sw && !isfinite(row->compute));
    csv_figure(f, row->compress, "%.9g", sw && !isfinite(row->compress));
    csv_figure(f, row->comm, "%.9g", sw && !isfinite(row->comm));
    csv_figure(f, row->wait, "%.9g", sw && !isfinite(row->wait));
    fprintf(f, "%ld", row->steps);
}

void runner_guard_exit(const char *policy)
{
    char what[SPEC_MAX_TEXT + 64];
    if (strchr(policy, '/') || strstr(policy, ".so"))
        snprintf(what, sizeof what, "--policy %s (or a library)", policy);
    else
        snprintf(what, sizeof what, "a library (SimGrid?)");
    outfile_guard_exit(what);
}

void runner_child(const RunConfig *cfg, const char *model, const char *command, const Flags *f,
                  const char *root, const char *dir, int fd)
{
    if (dir) /* removed on a signal while empty, shared parents too; none for a trace only */
        outdir_track_below(root, dir);
    RunRow row;
    memset(&row, 0, sizeof row);
    BwError err = {{0}};
    RunResult res;
    memset(&res, 0, sizeof res);
    double t0 = wallclock_s();
    int rc = BW_OK; /* a fast replay needs no SimGrid engine */
    if (!driver_replay_fast(cfg, NULL, 0))
        rc = engine_init(f->n_simgrid, (char **)f->simgrid_args, f->run.network_model, &err);
    outfile_interrupt_softly(); /* again: SimGrid's engine_init puts its own (exit 1) in */
    int existed = dir && access(dir, F_OK) == 0;
    if (!rc && dir) rc = outdir_create(dir, &err);
    if (!rc) {
        runner_guard_exit(cfg->policy);
        rc = driver_run(cfg, &res, &err);
        outfile_unguard_exit();
    }
    if (rc == BW_EINTR && dir) outdir_remove_if_new(dir, existed);
    if (!rc && dir) {
        RunMeta meta = {command,
                        model,
                        f->run.network_model,
                        f->run.collectives,
                        wallclock_s() - t0,
                        cfg->target_accuracy,
                        0,
                        0};
        /* compare's, replay's and sweep's runs: their band in summary.json, as the command's
         * --cost-band asks (checked by the parent before any run) */
        if (strcmp(command, "validate") != 0)
            costs_band_parse(f->run.cost_band ? f->run.cost_band : COSTS_BAND_DEFAULT,
                             &meta.cost_band, NULL);
        rc = results_write(dir, cfg, &meta, &res, &err);
    }
    if (!rc && res.output_error[0]) { /* the results are in dir; the trace is not */
        rc = BW_ERUNTIME;
        snprintf(err.msg, sizeof err.msg, "%.400s (the run's results are in its folder)",
                 res.output_error);
    }
    row.rc = rc;
    if (rc) {
        snprintf(row.error, sizeof row.error, "%s", err.msg);
        snprintf(row.status, sizeof row.status, "failed");
    } else {
        snprintf(row.status, sizeof row.status, "%s", res.status);
        row.final = res.final_accuracy;
        row.best = res.best_accuracy;
        row.tta = res.time_to_accuracy_s;
        row.sim_time = res.sim_time_s;
        row.bytes = res.bytes_per_worker;
        row.wan_bytes =
            cfg->cluster.topology == TOPO_ISLANDS ? res.wan_bytes / cfg->cluster.workers : NAN;
        row.compute = res.compute_s;
        row.comm = res.communication_s;
        row.compress = res.compression_s;
        row.wait = res.wait_s;
        row.steps = res.n_steps;
        snprintf(row.never_exchanged, sizeof row.never_exchanged, "%s", res.never_exchanged);
        row.tta_res = results_tta_resolution(&res, cfg->target_accuracy);
    }
    ssize_t w = write(fd, &row, sizeof row);
    plugguard_said();
    _exit(w == (ssize_t)sizeof row ? 0 : 1);
}

/* In a run's child: a SIGTERM when the parent dies, even of SIGKILL (Linux), so that no run
 * goes on as an orphan; it cleans up as any SIGTERM does. */
static void die_with_parent(pid_t parent)
{
#if defined(__linux__)
    prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
    if (getppid() != parent) raise(SIGTERM); /* the parent died before the line above */
}

/* The row an ended child wrote to fd (which is closed), or a failed row saying how the process
 * ended when it wrote none: in a plug-in (guard's record; its _exit() or os._exit() ran no
 * handler of the child's) or otherwise. */
static void child_row(int fd, int status, const PlugGuard *guard, RunRow *row)
{
    memset(row, 0, sizeof *row);
    ssize_t got = read(fd, row, sizeof *row);
    close(fd);
    if (got == (ssize_t)sizeof *row) return;
    memset(row, 0, sizeof *row);
    row->rc = BW_ERUNTIME;
    snprintf(row->status, sizeof row->status, "failed");
    char what[600];
    if (guard && !plugguard_was_said(guard) && plugguard_describe(guard, what, sizeof what))
        snprintf(row->error, sizeof row->error, "%.400s, ended the run process (%s %d)", what,
                 WIFSIGNALED(status) ? "signal" : "exit status",
                 WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status));
    else if (WIFSIGNALED(status))
        snprintf(row->error, sizeof row->error, "the run process died of signal %d",
                 WTERMSIG(status));
    else
        snprintf(row->error, sizeof row->error, "the run process exited with %d",
                 WEXITSTATUS(status));
}

int runner_pool(int n, int jobs, void (*start)(int job, int fd, void *ctx),
                void (*done)(int job, RunRow *row, void *ctx), void *ctx, BwError *err)
{
    pid_t *pids = bw_xcalloc((size_t)(n ? n : 1), sizeof *pids, "runner.c: pids");
    int *fds = bw_xcalloc((size_t)(n ? n : 1), sizeof *fds, "runner.c: fds");
    PlugGuard **guards =
        bw_xcalloc((size_t)(n ? n : 1), sizeof *guards, "runner.c: guards"); /* a running child's */
    if (!pids || !fds || !guards) {
        free(pids);
        free(fds);
        free(guards);
        return bw_fail(err, BW_ERUNTIME, "out of memory");
    }
    int next = 0, running = 0, rc = BW_OK, finished = 0;
    const pid_t parent = getpid();
    /* SIGINT (Ctrl-C reaches the whole process group): no new runs, the running ones stop at
     * their next step and are not results */
    outfile_interrupt_softly();
    while (next < n || running > 0) {
        while (rc == BW_OK && !outfile_interrupted() && next < n && running < jobs) {
            int p[2];
            if (pipe(p) != 0) {
                rc = bw_fail(err, BW_ERUNTIME, "pipe: %s", strerror(errno));
                break;
            }
            fflush(NULL);
            guards[next] = plugguard_share(); /* NULL: the child's end is reported unnamed */
            pid_t pid = fork();
            if (pid < 0) {
                close(p[0]);
                close(p[1]);
                plugguard_free(guards[next]);
                guards[next] = NULL;
                rc = bw_fail(err, BW_ERUNTIME, "fork: %s", strerror(errno));
                break;
            }
            if (pid == 0) {
                close(p[0]);
                die_with_parent(parent);
                plugguard_use(guards[next]);
                start(next, p[1], ctx);
                _exit(1);
            }
            outfile_track_child(pid); /* a fatal signal here is passed on, and waited for */
            close(p[1]);
            pids[next] = pid;
            fds[next] = p[0];
            next++;
            running++;
        }
        if (running == 0) break;
        int status;
        pid_t ended = wait(&status);
        if (ended < 0) {
            if (errno == EINTR) continue;
            break;
        }
        for (int i = 0; i < next; i++) {
            if (pids[i] != ended) continue;
            outfile_untrack_child(ended);
            running--;
            RunRow row;
            child_row(fds[i], status, guards[i], &row);
            plugguard_free(guards[i]);
            guards[i] = NULL;
            pids[i] = 0;
            if (row.rc == BW_EINTR || (WIFSIGNALED(status) && WTERMSIG(status) == SIGINT))
                continue; /* an interrupted run is not a result */
            finished++;
            done(i, &row, ctx);
        }
    }
    free(pids);
    free(fds);
    free(guards);
    if (rc == BW_OK && outfile_interrupted())
        rc = bw_fail(err, BW_EINTR, "interrupted; %d of %d runs finished", finished, n);
    return rc;
}

/* ---- run's supervisor ---- */

static volatile pid_t supervised;

static void forward_signal(int sig)
{
    if (supervised > 0) kill(supervised, sig);
}

/* The parent's end: the child's, and a message when a plug-in (or, with status 0, anything)
 * ended it without a word. */
static void supervisor_exit(const PlugGuard *g, pid_t child, int status)
{
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0 || !plugguard_was_said(g))
        outfile_remove_dirs_of(child); /* the empty folders it made and could not remove */
    if (WIFSIGNALED(status)) {         /* the child said what it could; end as it did */
        int sig = WTERMSIG(status);
        signal(sig, SIG_DFL);
        sigset_t set;
        sigemptyset(&set);
        sigaddset(&set, sig);
        sigprocmask(SIG_UNBLOCK, &set, NULL);
        raise(sig);
        _exit(128 + sig);
    }
    int code = WEXITSTATUS(status);
    char what[600];
    int plugin = plugguard_describe(g, what, sizeof what);
    if (!plugguard_was_said(g) && (plugin || code == 0)) {
        if (plugin)
            fprintf(stderr,
                    "bellows: %s, ended bellows (exit status %d: _exit() or os._exit(), which "
                    "no handler sees) before the run ended; no results\n",
                    what, code);
        else
            fprintf(stderr,
                    "bellows: the run ended (exit status 0) without finishing or saying why: a "
                    "library called _exit()?; no results\n");
        code = code ? code : 1;
    }
    fflush(stderr);
    _exit(code);
}

void runner_supervise(void)
{
    static int supervised_already; /* a command called again in its process (reproduce's sweeps) */
    if (supervised_already) return;
    supervised_already = 1;
    PlugGuard *g = plugguard_share();
    if (!g) return; /* unsupervised: _exit() goes unreported, as before */
    outfile_share_dirs();
    fflush(NULL);
    const pid_t parent = getpid();
    pid_t pid = fork();
    if (pid < 0) {
        plugguard_free(g);
        return;
    }
    if (pid == 0) {
        die_with_parent(parent);
        plugguard_use(g);
        outfile_main_process(); /* the command runs here: its Ctrl-C message too */
        return;
    }
    supervised = pid;
    /* a Ctrl-C reaches the child with the process group; a signal to this process alone is
     * passed on */
    signal(SIGINT, SIG_IGN);
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_handler = forward_signal;
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, NULL);
    sigaction(SIGHUP, &sa, NULL);
    int status;
    while (waitpid(pid, &status, 0) < 0)
        if (errno != EINTR) _exit(1);
    supervisor_exit(g, pid, status);
}
