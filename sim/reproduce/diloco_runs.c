/* diloco_runs.c: what the reproductions share below their commands: the --out rule of every
 * reproduction (accordion's and adpsgd's in reproduce.c, diloco's), and the runs of `bellows
 * reproduce diloco`, the mlp's (diloco.c) and a workload's (diloco_wl.c): each run's state from
 * its folder, a run as a child `bellows run` with its output to a log, and the soft stop after a
 * Ctrl-C; a file of their own so that no reproduction calls another back (scripts/callgraph.py:
 * no cycle). */
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "outfile.h"
#include "reproduce_internal.h"
#include "status.h"

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

int diloco_run_state(const char *dir)
{
    char path[4200];
    snprintf(path, sizeof path, "%s/summary.json", dir);
    if (exists(path)) return DILOCO_DONE;
    snprintf(path, sizeof path, "%s.log", dir);
    return exists(dir) || exists(path) ? DILOCO_FAILED : DILOCO_NOT_RUN;
}

int diloco_run_child(const char **argv, int n, const char *dir)
{
    char log[4200];
    snprintf(log, sizeof log, "%s.log", dir);
    if (exists(dir)) argv[n++] = "--force"; /* a stopped run's folder (--resume) */
    argv[n] = NULL;
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return -1;
    if (pid == 0) {
        if (!freopen(log, "w", stdout) || !freopen(log, "a", stderr)) _exit(1);
        execv(argv[0], (char *const *)argv);
        _exit(127);
    }
    outfile_track_child(pid); /* a fatal signal is passed on, and waited for */
    int st;
    pid_t got = waitpid(pid, &st, 0);
    outfile_untrack_child(pid);
    if (got != pid) return -1;
    return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

int diloco_stopped(const char *out, int k, int total, const char *what, BwError *err)
{
    if (!outfile_interrupted()) return 0;
    bw_fail(err, BW_EINTR,
            "reproduce diloco: interrupted in run %d of %d (%s); no report (--resume finishes the "
            "reproduction in %s)",
            k, total, what, out);
    return 1;
}

int repro_check_out(const char *out, int holds, int resume, int report_only, const char *lacks,
                    BwError *err)
{
    if (report_only && !holds)
        return bw_fail(err, BW_EUSAGE, "--report-only: %s holds no %s", out, lacks);
    if (!report_only && !resume && holds)
        return bw_fail(err, BW_EUSAGE,
                       "--out %s already holds a reproduction: finish it with --resume, rebuild "
                       "its report with --report-only, or choose another folder",
                       out);
    return BW_OK;
}

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

void diloco_read_row(const char *dir, DilocoRow *r)
{
    char path[4200];
    memset(r, 0, sizeof *r);
    r->ran = diloco_run_state(dir) != DILOCO_NOT_RUN;
    snprintf(path, sizeof path, "%s/summary.json", dir);
    json_t *o = json_load_file(path, 0, NULL);
    if (!o) return;
    const json_t *res = json_object_get(o, "results");
    if (!res) res = o;
    r->final_acc = num(res, "final_test_accuracy");
    r->tta = num(res, "time_to_accuracy_s");
    r->sim_time = num(res, "sim_time_s");
    r->wan = num(res, "wan_bytes");
    r->peak = num(res, "wan_peak_step_bytes");
    r->steps = (long)num(res, "steps");
    r->exchanges = (long)num(res, "averagings");
    r->ok = isfinite(r->final_acc) && isfinite(r->wan);
    json_decref(o);
}
