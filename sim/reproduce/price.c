/* price.c: a job's runs priced at every bandwidth. A job's sweep trains each policy and seed once,
 * at the experiment's first bandwidth, and every run records its gradient trace; here each
 * finished run's trace is replayed with its own policy at every bandwidth of the experiment
 * (`bellows sweep --trace`, the fast replay: no actors, the analytic collectives' closed form).
 * The replay takes the same decisions on the same norms, variances and losses, so it gives the
 * live run's times and bytes (tests/test_reproduce.c checks it at the training bandwidth) at the
 * cost of a pass over the trace instead of a training per bandwidth. */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "csv.h"
#include "reproduce_internal.h"
#include "sweep.h"

/* The policy index of `policy` in job j, or -1. */
static int policy_index(const Job *j, const char *policy)
{
    for (int k = 0; k < j->n_pol; k++)
        if (strcmp(j->policy[k], policy) == 0) return k;
    return -1;
}

/* Runs cmd_sweep with argv, its tables and progress kept off the terminal (the reproduction
 * prints one line per run priced). */
static int quiet_sweep(int argc, char **argv, BwError *err)
{
    fflush(stdout);
    int saved = dup(STDOUT_FILENO), null = open("/dev/null", O_WRONLY);
    if (saved >= 0 && null >= 0) dup2(null, STDOUT_FILENO);
    int rc = cmd_sweep(argc, argv, err);
    fflush(stdout);
    if (saved >= 0) {
        dup2(saved, STDOUT_FILENO);
        close(saved);
    }
    if (null >= 0) close(null);
    return rc;
}

/* Prices one training run (seed, policy k, its folder under the job's sweep). Its own flags are
 * kept here, not in the reproduction's pool, which holds only the jobs' fixed lists. */
static int price_run(const Repro *r, const Job *j, int seed, int k, const char *run_folder)
{
    char out[256], json[4400];
    char trace[4400], policy[96], seeds[32], out_arg[4400];
    char jobs[] = "--jobs=1", quiet[] = "--quiet", no_plots[] = "--no-plots", resume[] = "--resume";
    jobs_price_folder(j, seed, k, out, sizeof out);
    snprintf(trace, sizeof trace, "--trace=%s/sweeps/%s/%s/trace.jsonl.gz", r->out, j->folder,
             run_folder);
    snprintf(policy, sizeof policy, "--policies=%s", j->policy[k]);
    snprintf(seeds, sizeof seeds, "--seeds=%d", seed);
    snprintf(out_arg, sizeof out_arg, "--out=%s/%s", r->out, out);
    char *argv[MAX_ARGV + 8];
    int argc = 0;
    for (int i = 0; i < j->n_price; i++) argv[argc++] = j->price[i];
    char *own[] = {trace, policy, seeds, jobs, quiet, no_plots, out_arg};
    for (size_t i = 0; i < sizeof own / sizeof *own; i++) argv[argc++] = own[i];
    snprintf(json, sizeof json, "%s/%s/sweep.json", r->out, out);
    struct stat st;
    if (stat(json, &st) == 0) argv[argc++] = resume;
    argv[argc] = NULL;
    BwError err = {{0}};
    int rc = quiet_sweep(argc, argv, &err);
    if (rc && rc != BW_EINTR) fprintf(stderr, "bellows: reproduce: pricing %s: %s\n", out, err.msg);
    return rc;
}

int price_job(const Repro *r, int index)
{
    const Job *j = &r->job[index];
    if (!j->priced) return 0;
    char path[4096], line[8192];
    snprintf(path, sizeof path, "%s/sweeps/%s/sweep.csv", r->out, j->folder);
    FILE *f = fopen(path, "r");
    if (!f) return 1;
    char *h[32], *x[32], head[8192];
    int failed = 0, priced = 0;
    if (fgets(head, sizeof head, f)) {
        int nh = csv_split(head, h, 32);
        int c_seed = csv_column(h, nh, "seed"), c_pol = csv_column(h, nh, "policy");
        int c_dir = csv_column(h, nh, "folder");
        while (c_seed >= 0 && c_pol >= 0 && c_dir >= 0 && fgets(line, sizeof line, f)) {
            int n = csv_split(line, x, 32), k;
            if (n < nh || (k = policy_index(j, x[c_pol])) < 0) continue;
            failed += price_run(r, j, atoi(x[c_seed]), k, x[c_dir]) != 0;
            priced++;
        }
    }
    fclose(f);
    printf("# priced %d run(s) of %s at %s and %s\n", priced, j->folder, PAPERS_BW[j->exp][0],
           PAPERS_BW[j->exp][1]);
    return failed;
}
