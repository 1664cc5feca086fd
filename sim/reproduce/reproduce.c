/* reproduce.c: `bellows reproduce accordion|adpsgd|all`, the command: its flags, the checks on
 * --out (a reproduction is never overwritten: --resume finishes one, --report-only rebuilds its
 * report), running the jobs one after another, each a `bellows sweep` that resumes where it
 * stopped, and the report at the end. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cli.h"
#include "xalloc.h"
#include "costs.h"
#include "io_check.h"
#include "outfile.h"
#include "reproduce.h"
#include "runner.h"
#include "reproduce_internal.h"
#include "sweep.h"
#include "wallclock.h"

static const char *const SIZE_FLAG[3] = {"", " --quick", " --smoke"};

static int exists(const char *path)
{
    struct stat st;
    return stat(path, &st) == 0;
}

static int has_sweeps(const char *dir)
{
    char path[4096];
    snprintf(path, sizeof path, "%s/sweeps", dir);
    return exists(path);
}

/* Runs job `index`, resuming its sweep if --resume and it has started. Returns its status; a
 * failed sweep's message is printed here, since the reproduction goes on without it. */
static int run_job(Repro *r, int index)
{
    const Job *j = &r->job[index];
    char sweep_json[4096];
    snprintf(sweep_json, sizeof sweep_json, "%s/sweeps/%s/sweep.json", r->out, j->folder);
    int resume = r->resume && exists(sweep_json);
    char *argv[MAX_ARGV + 2];
    int argc = 0;
    for (int i = 0; i < j->argc; i++) argv[argc++] = j->argv[i];
    if (resume) argv[argc++] = jobs_keep(r, "--resume");
    argv[argc] = NULL;
    char cmd[8192];
    jobs_command(j, cmd, sizeof cmd);
    printf("\n## [%d/%d] %s %s: %s%s\n", index + 1, r->n_jobs, PAPERS_EXP_NAME[j->exp], j->folder,
           cmd, resume ? " --resume" : "");
    BwError err = {{0}};
    /* in this process: the sweep keeps no state of its own between calls, and its runs are
     * child processes (SimGrid's one engine per process lives there, not here) */
    fflush(stdout);
    int rc = cmd_sweep(argc, argv, &err);
    if (rc && rc != BW_EINTR && err.msg[0]) fprintf(stderr, "bellows: %s\n", err.msg);
    return rc;
}

/* Runs every job, going on after a failed one, but not after a Ctrl-C (BW_EINTR, err says
 * where it stopped). *failed: the number that failed. */
static int run_jobs(Repro *r, int *failed, BwError *err)
{
    printf("# bellows reproduce %s%s: %d sweeps, seeds", r->what, SIZE_FLAG[r->size], r->n_jobs);
    for (int k = 0; k < r->seeds.n; k++) printf("%s%d", k ? "," : " ", r->seeds.v[k]);
    printf(", %d runs at a time, into %s/\n", r->jobs, r->out);
    *failed = 0;
    outfile_interrupt_softly(); /* a first Ctrl-C stops the sweep in flight, then here */
    for (int i = 0; i < r->n_jobs; i++) {
        int rc = outfile_interrupted() ? BW_EINTR : run_job(r, i);
        if (rc == BW_EINTR || outfile_interrupted())
            return bw_fail(err, BW_EINTR,
                           "reproduce: interrupted in sweep %d of %d (%s); no report (--resume "
                           "finishes the reproduction)",
                           i + 1, r->n_jobs, r->job[i].folder);
        if (rc) {
            fprintf(stderr, "bellows: reproduce: sweep %s failed (status %d); going on\n",
                    r->job[i].folder, rc);
            (*failed)++;
        }
        /* the runs that finished, priced at every bandwidth (a failed run is not priced) */
        *failed += price_job(r, i);
    }
    if (outfile_interrupted())
        return bw_fail(err, BW_EINTR,
                       "reproduce: interrupted while pricing the last sweep; no report (--resume "
                       "finishes the reproduction)");
    return BW_OK;
}

/* The arguments without WHAT (the first one that is not a flag, into *what), with -j N and -jN
 * spelled --jobs=N (in jobs_arg). Returns their number. */
static int split_args(int argc, char **argv, char **args, int max, char *jobs_arg, size_t n,
                      const char **what)
{
    int k = 0;
    for (int i = 0; i < argc && k < max; i++) {
        if (strcmp(argv[i], "-j") == 0 && i + 1 < argc) {
            snprintf(jobs_arg, n, "--jobs=%s", argv[++i]);
            args[k++] = jobs_arg;
        } else if (strncmp(argv[i], "-j", 2) == 0 && argv[i][2]) {
            snprintf(jobs_arg, n, "--jobs=%s", argv[i] + 2);
            args[k++] = jobs_arg;
        } else if (!*what && argv[i][0] != '-') {
            *what = argv[i];
        } else {
            args[k++] = argv[i];
        }
    }
    return k;
}

/* Parses the flags into r (WHAT into r->what). Returns BW_OK, CLI_HELP once --help is printed,
 * or an error. */
static int parse_flags(Repro *r, int argc, char **argv, BwError *err)
{
    static const char *const ABOUT =
        "Runs the headline experiments of a source paper as a fixed set of sweeps on "
        "Fashion-MNIST and\nwrites DIR/report.md (the simulator's figures beside the paper's "
        "claims, a verdict per claim,\nthe scenario and the sweeps' command lines), "
        "DIR/<paper>.csv and DIR/plots/. WHAT: accordion\n(Agarwal et al., MLSys 2021: static "
        "low/high compression and Accordion with PowerSGD, TopK and\nbatch sizes, the authors' "
        "settings (accordion:paper=1), on mlp, cnn and resnet, at 1 and 10\nGbps), adpsgd "
        "(Jiang & Agrawal 2020: sync, CPSGD and ADPSGD at equal budgets, post-local SGD,\n"
        "AdaComm and QSGD at 10 and 100 Gbps), or all; diloco has flags of its own (bellows\n"
        "reproduce diloco --help: DiLoCo across islands, a few minutes), and so has zeropp "
        "(bellows\nreproduce zeropp --help: ZeRO++'s claims on llama-2-7b, about a minute).\nThe "
        "runs charge a real "
        "ResNet-18's costs\n"
        "(--workload resnet18-cifar on V100s, 25 us links). Each policy and seed trains once, "
        "at the first\nbandwidth, and is priced at both by replaying its trace. Schedules are "
        "the papers' 300 epochs\nscaled to 60 (the mlp on 30,000 samples, the cnn on 6,400, "
        "the resnet on 2,048), seeds 1,2;\n--quick: the mlp only on 16,384 samples, seed 1; "
        "--smoke: a check of the machinery, 2 epochs.";
    CliOpt opts[] = {
        {"quick", CLI_FLAG, &r->quick, NULL, NULL,
         "the short version: mlp only, 60 epochs on 16,384 samples, seed 1 (unless --seeds)", 0, 0,
         NULL, 0, 0},
        {"smoke", CLI_FLAG, &r->smoke, NULL, NULL,
         "a check of the machinery, not of the papers: mlp, 2 epochs on 16,384 samples", 0, 0, NULL,
         0, 0},
        {"seeds", CLI_INT_LIST, &r->seeds, NULL, NULL,
         "seeds of every scenario (default 1,2; --quick: 1)", 0, 2147483647, NULL, 0, 0},
        {"jobs", CLI_INT, &r->jobs, "0", "runs", "runs at a time (0: one per core)", 0, 256, NULL,
         0, 0},
        {"out", CLI_STRING, &r->out, NULL, "DIR", "report folder (default: runs/reproduce-WHAT)", 0,
         0, NULL, 0, 0},
        {"resume", CLI_FLAG, &r->resume, NULL, NULL,
         "finish an interrupted reproduction in --out (each sweep resumes)", 0, 0, NULL, 0, 0},
        {"report-only", CLI_FLAG, &r->report_only, NULL, NULL,
         "rebuild the report from the sweeps already in --out, running nothing", 0, 0, NULL, 0, 0},
        {"no-plots", CLI_FLAG, &r->no_plots, NULL, NULL, "no gnuplot plots", 0, 0, NULL, 0, 0},
        {"costs", CLI_STRING, &r->costs, COSTS_DEFAULT, "NAME|FILE",
         "what the implementation pays beside the roofline, for every run (bellows costs; the "
         "papers' GPU and efficiency stay theirs)",
         0, 0, NULL, 0, 0},
    };
    const int n_opts = (int)(sizeof opts / sizeof *opts);
    char *args[256], jobs_arg[64];
    int n = split_args(argc, argv, args, 255, jobs_arg, sizeof jobs_arg, &r->what);
    int rc = cli_parse("bellows reproduce", opts, n_opts, NULL, n, args, NULL, err);
    if (rc == CLI_HELP)
        cli_print_help(stdout, "bellows reproduce accordion|adpsgd|all|diloco|zeropp [flags]",
                       ABOUT, opts, n_opts);
    return rc;
}

/* What the flags imply: the experiments, the size, the seeds, the runs at a time, the folder;
 * and whether --out fits --resume and --report-only. */
static int check_flags(Repro *r, BwError *err)
{
    if (!r->what)
        return bw_fail(err, BW_EUSAGE,
                       "reproduce: say what to reproduce: accordion, adpsgd or all");
    int all = strcmp(r->what, "all") == 0;
    r->exp_on[0] = all || strcmp(r->what, "accordion") == 0;
    r->exp_on[1] = all || strcmp(r->what, "adpsgd") == 0;
    if (!r->exp_on[0] && !r->exp_on[1])
        return bw_fail(err, BW_EUSAGE, "reproduce: '%s': expected accordion, adpsgd or all",
                       r->what);
    r->size = r->smoke ? 2 : r->quick ? 1 : 0;
    if (r->seeds.n == 0) {
        r->seeds.n = r->size == 1 ? 1 : 2; /* what the half hour and the 5 minutes allow */
        for (int k = 0; k < r->seeds.n; k++) r->seeds.v[k] = k + 1;
    }
    for (int i = 0; i < r->seeds.n; i++)
        for (int j = 0; j < i; j++)
            if (r->seeds.v[i] == r->seeds.v[j])
                return bw_fail(err, BW_EUSAGE, "--seeds: %d is listed twice", r->seeds.v[i]);
    if (r->jobs == 0) {
        long cores = sysconf(_SC_NPROCESSORS_ONLN);
        r->jobs = cores > 0 ? (int)cores : 1;
    }
    if (!r->out) {
        snprintf(r->out_default, sizeof r->out_default, "runs/reproduce-%s", r->what);
        r->out = r->out_default;
    }
    char lacks[4200];
    snprintf(lacks, sizeof lacks, "sweeps (no %s/sweeps)", r->out);
    return repro_check_out(r->out, has_sweeps(r->out), r->resume, r->report_only, lacks, err);
}

/* The real model's costs of each experiment (for the report), then the jobs that charge them. */
static int plan_jobs(Repro *r, BwError *err)
{
    for (int e = 0; e < N_EXPS; e++)
        if (r->exp_on[e]) {
            int rc = papers_profile_cost(papers_paper(e), r->costs, &r->cost[e], err);
            if (rc) return rc;
        }
    jobs_build(r);
    return BW_OK;
}

/* Inputs are never outputs (io_check.h): a --costs file is not inside --out. */
static int check_io(const Repro *r, BwError *err)
{
    IoFiles io = {0};
    io_input(&io, "costs", NULL, r->costs);
    io_out_dir(&io, "--out", r->out);
    int rc = io_check(&io, err);
    io_free(&io);
    return rc;
}

static int reproduce(Repro *r, int argc, char **argv, BwError *err)
{
    int rc = parse_flags(r, argc, argv, err);
    if (rc == CLI_HELP) return BW_OK;
    if (rc || (rc = check_flags(r, err)) || (rc = check_io(r, err)) || (rc = plan_jobs(r, err)) ||
        (rc = outdir_create(r->out, err)))
        return rc;
    double t0 = wallclock_s();
    int failed = 0;
    if (!r->report_only && (rc = run_jobs(r, &failed, err))) return rc;
    if ((rc = report_write(r, err))) return rc;
    printf("\n# wrote %s/report.md (%.1f wall min)\n", r->out, (wallclock_s() - t0) / 60);
    if (failed)
        return bw_fail(err, BW_ERUNTIME, "reproduce: %d sweep(s) failed; the report holds the rest",
                       failed);
    return BW_OK;
}

int cmd_reproduce(int argc, char **argv, BwError *err)
{
    runner_supervise(); /* before its folders, which its sweeps (supervised too) would not own */
    if (argc > 0 && strcmp(argv[0], "diloco") == 0)
        return reproduce_diloco(argc - 1, argv + 1, err);
    if (argc > 0 && strcmp(argv[0], "zeropp") == 0) /* zeropp_repro.c */
        return reproduce_zeropp(argc - 1, argv + 1, err);
    Repro *r = bw_xcalloc(1, sizeof *r, "reproduce.c: r"); /* large (the cells): not on the stack */
    if (!r) return bw_fail(err, BW_ERUNTIME, "reproduce: out of memory");
    int rc = reproduce(r, argc, argv, err);
    free(r);
    return rc;
}
