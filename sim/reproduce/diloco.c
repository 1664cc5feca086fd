/* diloco.c: `bellows reproduce diloco`, training across islands (DiLoCo, arXiv 2311.08105;
 * Streaming DiLoCo, arXiv 2501.18512) at the small model's scale: synchronous data-parallel
 * training, DiLoCo at H in {1, 10, 50, 100, 500} and Streaming DiLoCo, each on 2 islands of 2
 * GPUs (AdamW inside, as the paper), priced over WAN links of 100 Mbps, 1 Gbps and 10 Gbps.
 * Each run is a `bellows run` child (SimGrid's one engine per process); the report's tables are
 * read back from their summary.json and every verdict is computed from those rows. */
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "cli.h"
#include "xalloc.h"
#include "outfile.h"
#include "reproduce.h"
#include "reproduce_internal.h"
#include "status.h"
#include "wallclock.h"
#include "workload.h"

#define N_POL  7
#define N_BW   3
#define TARGET 0.85

static const char *const POL_NAME[N_POL] = {"sync",          "diloco-H1",   "diloco-H10",
                                            "diloco-H50",    "diloco-H100", "diloco-H500",
                                            "streaming-H100"};
static const char *const POL_SPEC[N_POL] = {"sync",
                                            "diloco:h=1",
                                            "diloco:h=10",
                                            "diloco:h=50",
                                            "diloco:h=100",
                                            "diloco:h=500",
                                            "streaming-diloco:h=100,fragments=4,bits=4,tau=5"};
static const char *const BW[N_BW] = {"100Mbps", "1Gbps", "10Gbps"};
enum { SYNC = 0, H100 = 4, H500 = 5, STREAM = 6, BW_1G = 1 };

/* The scenario every run shares: 1,000 steps (4 epochs of 16,000 samples, 4 workers x 16). */
static const char *const COMMON[] = {
    "--model",      "mlp",   "--train-samples", "16000", "--test-samples",    "2000",
    "--batch",      "16",    "--workers",       "4",     "--topology",        "islands",
    "--islands",    "2",     "--epochs",        "4",     "--optimizer",       "adamw",
    "--lr",         "0.001", "--compressor",    "none",  "--target-accuracy", "0.85",
    "--eval-every", "50",    "--seed",          "1"};
#define N_COMMON ((int)(sizeof COMMON / sizeof *COMMON))

typedef struct {
    const char *out;
    const char *workload; /* --workload: a real model's prices (diloco_wl.c), or "none" */
    int quick;            /* --quick, with --workload */
    int report_only;      /* --report-only: the runs are in out already */
    int resume;           /* --resume: the runs with a summary.json are kept, the others run */
    DilocoRow row[N_POL][N_BW];
} Dil;

static int exists(const char *path)
{
    struct stat sb;
    return stat(path, &sb) == 0;
}

/* DIR/runs/NAME-BW */
static void run_path(const Dil *d, int p, int b, char *buf, size_t n)
{
    snprintf(buf, n, "%s/runs/%s-%s", d->out, POL_NAME[p], BW[b]);
}

/* Runs one `bellows run` (this executable) into DIR/runs/NAME-BW, its output to a log there. */
static int run_one(const Dil *d, int p, int b, const char *self)
{
    char dir[4096], wan[64];
    run_path(d, p, b, dir, sizeof dir);
    snprintf(wan, sizeof wan, "%s", BW[b]);
    const char *argv[N_COMMON + 12];
    int n = 0;
    argv[n++] = self;
    argv[n++] = "run";
    for (int i = 0; i < N_COMMON; i++) argv[n++] = COMMON[i];
    argv[n++] = "--policy";
    argv[n++] = POL_SPEC[p];
    argv[n++] = "--wan-bandwidth";
    argv[n++] = wan;
    argv[n++] = "--out";
    argv[n++] = dir;
    return diloco_run_child(argv, n, dir);
}

static void read_row(const Dil *d, int p, int b, DilocoRow *r)
{
    char dir[4096];
    run_path(d, p, b, dir, sizeof dir);
    diloco_read_row(dir, r);
}

static void fmt(char *buf, size_t n, double x, const char *f)
{
    if (isfinite(x))
        snprintf(buf, n, f, x);
    else
        snprintf(buf, n, "not reached");
}

/* The table: one row per run, and the same rows as DIR/diloco.csv. */
static void write_table(const Dil *d, FILE *md, FILE *csv)
{
    fprintf(md,
            "| run | WAN | steps | outer exchanges | WAN bytes | peak WAN bytes in a step | "
            "final accuracy | time to %.2f (s) | simulated time (s) |\n",
            TARGET);
    fputs("|---|---|---|---|---|---|---|---|---|\n", md);
    fputs("run,wan,steps,exchanges,wan_bytes,wan_peak_step_bytes,final_accuracy,"
          "time_to_accuracy_s,sim_time_s\n",
          csv);
    for (int p = 0; p < N_POL; p++)
        for (int b = 0; b < N_BW; b++) {
            const DilocoRow *r = &d->row[p][b];
            if (!r->ok) { /* a run that left a folder or a log failed; another never ran */
                const char *why = r->ran ? "failed" : "not run";
                fprintf(md, "| %s | %s | %s | | | | | | |\n", POL_NAME[p], BW[b], why);
                fprintf(csv, "%s,%s,%s,,,,,,\n", POL_NAME[p], BW[b], why);
                continue;
            }
            char tta[32];
            fmt(tta, sizeof tta, r->tta, "%.4g");
            fprintf(md, "| %s | %s | %ld | %ld | %.0f | %.0f | %.4f | %s | %.4g |\n", POL_NAME[p],
                    BW[b], r->steps, r->exchanges, r->wan, r->peak, r->final_acc, tta, r->sim_time);
            fprintf(csv, "%s,%s,%ld,%ld,%.0f,%.0f,%.4f,%s,%.6g\n", POL_NAME[p], BW[b], r->steps,
                    r->exchanges, r->wan, r->peak, r->final_acc, isfinite(r->tta) ? tta : "",
                    r->sim_time);
        }
}

/* Claim 1: DiLoCo at H=500 communicates ~500x less than synchronous training at a small loss of
 * accuracy at equal steps (the runs at 1 Gbps; training is the same at every bandwidth). */
static void verdict_h500(const Dil *d, FILE *md)
{
    const DilocoRow *s = &d->row[SYNC][BW_1G], *h = &d->row[H500][BW_1G];
    fputs("\n### \"DiLoCo at H=500 communicates ~500x less at a small loss of accuracy at equal "
          "steps\"\n\n",
          md);
    if (!s->ok || !h->ok || !(h->wan > 0)) {
        fputs("**Verdict: not determined** (a run failed or was not run).\n", md);
        return;
    }
    const double ratio = s->wan / h->wan, drop = s->final_acc - h->final_acc;
    const char *v = ratio >= 250 && drop <= 0.02 ? "holds"
                    : ratio >= 250               ? "holds for the bytes, not for the accuracy"
                                                 : "does not hold";
    fprintf(md,
            "Synchronous training put %.0f bytes on the WAN, DiLoCo H=500 %.0f: %.1fx less, over "
            "the same %ld steps. Final accuracy %.4f against %.4f (%+.4f; \"small\" read as at "
            "most 0.02).\n\n**Verdict: %s.**\n",
            s->wan, h->wan, ratio, h->steps, h->final_acc, s->final_acc, -drop, v);
}

/* Claim 2: Streaming DiLoCo needs far less peak bandwidth than DiLoCo (the same H) for the
 * same time to accuracy ("far" read as at least 4x; "the same" as within 10%). */
static void verdict_streaming(const Dil *d, FILE *md)
{
    fputs("\n### \"Streaming DiLoCo needs far less peak bandwidth than DiLoCo for the same time "
          "to accuracy\"\n\n",
          md);
    const DilocoRow *dl = &d->row[H100][BW_1G], *st = &d->row[STREAM][BW_1G];
    if (!dl->ok || !st->ok || !(st->peak > 0)) {
        fputs("**Verdict: not determined** (a run failed or was not run).\n", md);
        return;
    }
    const double ratio = dl->peak / st->peak;
    int same = 1;
    for (int b = 0; b < N_BW; b++) {
        const DilocoRow *x = &d->row[H100][b], *y = &d->row[STREAM][b];
        char a[32], c[32];
        fmt(a, sizeof a, x->tta, "%.4g s");
        fmt(c, sizeof c, y->tta, "%.4g s");
        fprintf(md, "- %s: time to %.2f, DiLoCo H=100 %s, Streaming DiLoCo %s\n", BW[b], TARGET, a,
                c);
        same &= isfinite(y->tta) && (!isfinite(x->tta) || y->tta <= 1.1 * x->tta);
    }
    fprintf(md,
            "\nThe most bytes one step put on the WAN: DiLoCo H=100 %.0f, Streaming DiLoCo (4 "
            "fragments, 4-bit outer gradients) %.0f, %.1fx less.\n\n**Verdict: %s.**\n",
            dl->peak, st->peak, ratio,
            ratio >= 4 && same ? "holds"
            : ratio >= 4       ? "holds for the peak bandwidth, not for the time to accuracy"
                               : "does not hold");
}

/* Claim 3: the time to accuracy against synchronous training at each WAN bandwidth. */
static void verdict_tta(const Dil *d, FILE *md)
{
    fprintf(md, "\n### Time to %.2f against synchronous data-parallel training\n\n", TARGET);
    for (int b = 0; b < N_BW; b++) {
        int best = -1;
        for (int p = 1; p < N_POL; p++)
            if (d->row[p][b].ok && isfinite(d->row[p][b].tta) &&
                (best < 0 || d->row[p][b].tta < d->row[best][b].tta))
                best = p;
        const DilocoRow *s = &d->row[SYNC][b];
        if (best < 0) {
            fprintf(md, "- %s: no DiLoCo run reached %.2f.\n", BW[b], TARGET);
        } else if (!isfinite(s->tta)) {
            fprintf(md, "- %s: synchronous training did not reach %.2f; %s did, in %.4g s.\n",
                    BW[b], TARGET, POL_NAME[best], d->row[best][b].tta);
        } else {
            fprintf(md, "- %s: synchronous %.4g s; fastest across islands %s, %.4g s (%.1fx %s).\n",
                    BW[b], s->tta, POL_NAME[best], d->row[best][b].tta,
                    s->tta > d->row[best][b].tta ? s->tta / d->row[best][b].tta
                                                 : d->row[best][b].tta / s->tta,
                    s->tta > d->row[best][b].tta ? "faster" : "slower");
        }
    }
}

static int write_report(const Dil *d, double wall_s, BwError *err)
{
    char path[4200], cpath[4200];
    snprintf(path, sizeof path, "%s/report.md", d->out);
    snprintf(cpath, sizeof cpath, "%s/diloco.csv", d->out);
    FILE *md = fopen(path, "w"), *csv = fopen(cpath, "w");
    if (!md || !csv) {
        if (md) fclose(md);
        if (csv) fclose(csv);
        return bw_fail(err, BW_ERUNTIME, "--out %s: cannot write report.md or diloco.csv", d->out);
    }
    fputs("# DiLoCo across islands (bellows reproduce diloco)\n\n", md);
    fputs("Douillard et al., DiLoCo, arXiv 2311.08105; Streaming DiLoCo, arXiv 2501.18512. The "
          "small model's scale: an mlp on 16,000 Fashion-MNIST samples, 1,000 steps (4 epochs, "
          "4 workers x 16), 2 islands of 2 GPUs (--topology islands, 30 ms between them), "
          "AdamW (lr 0.001) inside, synchronous every step within an island; the outer "
          "Nesterov step at lr 0.7, momentum 0.9. Streaming DiLoCo: H=100, 4 fragments, 4-bit "
          "outer gradients, tau 5 (each exchange overlaps the 5 steps after it; the step that "
          "applies it waits for what remains). Training does not depend on the WAN's bandwidth; "
          "only the "
          "times do.\n\n",
          md);
    write_table(d, md, csv);
    verdict_h500(d, md);
    verdict_streaming(d, md);
    verdict_tta(d, md);
    fputs("\nEach run: `bellows run", md);
    for (int i = 0; i < N_COMMON; i++) fprintf(md, " %s", COMMON[i]);
    fprintf(md,
            " --policy SPEC --wan-bandwidth BW --out runs/RUN-BW`, SPEC as above (runs/ "
            "holds each run's files and log). %d runs, %.1f wall minutes.\n",
            N_POL * N_BW, wall_s / 60);
    fputs("\n| run | --policy |\n|---|---|\n", md);
    for (int p = 0; p < N_POL; p++) fprintf(md, "| %s | `%s` |\n", POL_NAME[p], POL_SPEC[p]);
    int bad = ferror(md) || ferror(csv);
    bad |= fclose(md) != 0;
    bad |= fclose(csv) != 0;
    return bad ? bw_fail(err, BW_ERUNTIME, "--out %s: writing the report failed", d->out) : BW_OK;
}

static int parse(Dil *d, int argc, char **argv, BwError *err)
{
    static const char *const ABOUT =
        "Trains synchronous data-parallel training, DiLoCo at H = 1, 10, 50, 100, 500 and "
        "Streaming DiLoCo\n(4 fragments, 4-bit outer gradients) across 2 islands over WAN links "
        "of 100 Mbps, 1 Gbps and 10 Gbps,\nand writes DIR/report.md (the table and a verdict per "
        "claim, computed from its rows) and\nDIR/diloco.csv. About 21 runs of a few seconds.\n"
        "With --workload W (the default, gpt2-small): synchronous training, DiLoCo at H = 100 "
        "and 500\nand Streaming DiLoCo across 2 and 4 islands of 8 GPUs over 1 and 10 Gbps, "
        "every step priced\nas W's (16 runs; --quick: 10x fewer steps and H). --workload none: "
        "the mlp's own prices,\nthe 21 runs above.";
    CliOpt opts[] = {
        {"out", CLI_STRING, &d->out, "runs/reproduce-diloco", "DIR", "report folder (new)", 0, 0,
         NULL, 0, 0},
        {"resume", CLI_FLAG, &d->resume, NULL, NULL,
         "finish an interrupted reproduction in --out: the runs with a summary.json are kept, the "
         "others run",
         0, 0, NULL, 0, 0},
        {"report-only", CLI_FLAG, &d->report_only, NULL, NULL,
         "rebuild report.md and diloco.csv from the runs already in --out, running nothing (a run "
         "missing: \"not run\")",
         0, 0, NULL, 0, 0},
        {"workload", CLI_STRING, &d->workload, "gpt2-small", "W",
         "price every step as workload W's (bellows workloads), or none: the mlp's own", 0, 0, NULL,
         0, 0},
        {"quick", CLI_FLAG, &d->quick, NULL, NULL,
         "with --workload: 10x fewer steps and H, analytic collectives (a check, not the claims)",
         0, 0, NULL, 0, 0},
    };
    const int n_opts = (int)(sizeof opts / sizeof *opts);
    int rc = cli_parse("bellows reproduce diloco", opts, n_opts, NULL, argc, argv, NULL, err);
    if (rc == CLI_HELP)
        cli_print_help(stdout, "bellows reproduce diloco [flags]", ABOUT, opts, n_opts);
    if (!rc && d->resume && d->report_only)
        rc = bw_fail(err, BW_EUSAGE, "--resume: not with --report-only (which runs nothing)");
    if (!rc && d->quick && strcmp(d->workload, "none") == 0)
        rc = bw_fail(err, BW_EUSAGE, "--quick: only with --workload W, not none");
    return rc;
}

/* Whether --out holds a reproduction: anything in DIR/runs (a run's folder or log). */
static int holds_runs(const char *out)
{
    char runs[4200];
    snprintf(runs, sizeof runs, "%s/runs", out);
    DIR *dir = opendir(runs);
    int any = 0;
    for (struct dirent *e; dir && !any && (e = readdir(dir));) any = e->d_name[0] != '.';
    if (dir) closedir(dir);
    return any;
}

/* --out as the flags want it (reproduce.c's rule, as accordion's), and made for a new run. */
static int check_out(const Dil *d, BwError *err)
{
    char lacks[4200], runs[4200];
    snprintf(lacks, sizeof lacks, "runs (no run's folder or log in %s/runs)", d->out);
    int rc = repro_check_out(d->out, holds_runs(d->out), d->resume, d->report_only, lacks, err);
    if (!rc && !d->report_only && !d->resume && exists(d->out))
        rc = bw_fail(err, BW_EUSAGE, "--out %s: exists; give a new folder", d->out);
    if (rc || d->report_only) return rc;
    snprintf(runs, sizeof runs, "%s/runs", d->out);
    if ((!exists(d->out) && mkdir(d->out, 0777)) || (!exists(runs) && mkdir(runs, 0777)))
        return bw_fail(err, BW_ERUNTIME, "--out %s: %s", d->out, strerror(errno));
    return BW_OK;
}

/* The mlp's 21 runs not finished yet (--resume: those without a summary.json), one after
 * another; a Ctrl-C stops after the run in flight (BW_EINTR), the finished ones kept. */
static int run_all(Dil *d, const char *self, BwError *err)
{
    for (int p = 0; p < N_POL; p++)
        for (int b = 0; b < N_BW; b++) {
            const int k = p * N_BW + b + 1;
            char dir[4096], what[96];
            run_path(d, p, b, dir, sizeof dir);
            snprintf(what, sizeof what, "%s over %s", POL_NAME[p], BW[b]);
            if (d->resume && diloco_run_state(dir) == DILOCO_DONE) {
                printf("## [%d/%d] %s: done already (--resume)\n", k, N_POL * N_BW, what);
                continue;
            }
            printf("## [%d/%d] %s\n", k, N_POL * N_BW, what);
            fflush(stdout);
            int rc = run_one(d, p, b, self);
            if (diloco_stopped(d->out, k, N_POL * N_BW, what, err)) return BW_EINTR;
            if (rc != 0) printf("   failed (see its log in %s/runs)\n", d->out);
        }
    return BW_OK;
}

int reproduce_diloco(int argc, char **argv, BwError *err)
{
    Dil *d = bw_xcalloc(1, sizeof *d, "diloco.c: d");
    if (!d) return bw_fail(err, BW_ERUNTIME, "reproduce: out of memory");
    int rc = parse(d, argc, argv, err);
    char self[4096];
    ssize_t n = readlink("/proc/self/exe", self, sizeof self - 1);
    if (rc == CLI_HELP)
        rc = BW_OK, d->out = NULL;
    else if (!rc && n <= 0)
        rc = bw_fail(err, BW_ERUNTIME, "reproduce: cannot find this executable");
    Workload *wl = NULL; /* checked before anything is written */
    if (!rc && d->out && strcmp(d->workload, "none") != 0)
        rc = workload_load(d->workload, "--workload", &wl, err);
    workload_free(wl);
    if (!rc && d->out) rc = check_out(d, err);
    if (rc || !d->out) {
        free(d);
        return rc;
    }
    self[n] = 0;
    outfile_interrupt_softly();             /* a first Ctrl-C stops after the run in flight */
    if (strcmp(d->workload, "none") != 0) { /* diloco_wl.c */
        rc = reproduce_diloco_workload(d->out, d->workload, d->quick, d->report_only, d->resume,
                                       self, err);
        free(d);
        return rc;
    }
    const double t0 = wallclock_s();
    if (!d->report_only) rc = run_all(d, self, err);
    for (int p = 0; !rc && p < N_POL; p++)
        for (int b = 0; b < N_BW; b++) read_row(d, p, b, &d->row[p][b]);
    if (!rc) rc = write_report(d, wallclock_s() - t0, err);
    if (!rc) printf("# wrote %s/report.md and diloco.csv\n", d->out);
    free(d);
    return rc;
}
