/* diloco_wl.c: `bellows reproduce diloco --workload W`, DiLoCo across islands priced as a real
 * model (default gpt2-small): synchronous data-parallel training (DDP's overlap, every step's
 * allreduce across the WAN), DiLoCo at H = 100 and 500 (Douillard et al., arXiv 2311.08105) and
 * Streaming DiLoCo (arXiv 2501.18512: H 100, 4 fragments of the workload's layers, 4-bit outer
 * gradients, tau 5), across 2 and 4 islands of 8 GPUs in all, over WAN links of 1 and 10 Gbps.
 * The dynamics are the small model's (an mlp on Fashion-MNIST: its steps to the target are the
 * mlp's), each step priced as W's: an inner step the workload's DDP step inside an island, an
 * outer exchange the real model's bytes over the WAN (sim/driver/islands.c). Each run is a
 * `bellows run` child; the table is read back from the runs' summary.json and every verdict is
 * computed from its rows. --quick: 10x fewer steps and H, analytic collectives. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <jansson.h>

#include "xalloc.h"
#include "reproduce.h"
#include "reproduce_internal.h"

#define W_POL 4
#define W_ISL 2
#define W_BW  2
enum { W_SYNC, W_H100, W_H500, W_STREAM };

/* [quick]: H and the steps scaled by 1/10 */
static const char *const W_NAME[2][W_POL] = {
    {"sync", "diloco-H100", "diloco-H500", "streaming-H100"},
    {"sync", "diloco-H10", "diloco-H50", "streaming-H10"}};
static const char *const W_SPEC[2][W_POL] = {
    {"sync", "diloco:h=100", "diloco:h=500", "streaming-diloco:h=100,fragments=4,bits=4,tau=5"},
    {"sync", "diloco:h=10", "diloco:h=50", "streaming-diloco:h=10,fragments=4,bits=4,tau=1"}};
static const int W_H[2][W_POL] = {{1, 100, 500, 100}, {1, 10, 50, 10}};
static const char *const W_ISLANDS[W_ISL] = {"2", "4"};
static const char *const W_WAN[W_BW] = {"1Gbps", "10Gbps"};

/* 1,000 steps (4 epochs of 16,000 samples, 8 workers x 8); quick: 100 (1 epoch of 6,400) */
static const char *const W_COMMON[] = {
    "--model",    "mlp",     "--test-samples", "2000",  "--batch", "8",     "--workers",    "8",
    "--topology", "islands", "--optimizer",    "adamw", "--lr",    "0.001", "--compressor", "none",
    "--overlap",  "ddp",     "--eval-every",   "20",    "--seed",  "1"};
#define W_N_COMMON ((int)(sizeof W_COMMON / sizeof *W_COMMON))
static const char *const W_SIZE[2][8] = {{"--train-samples", "16000", "--epochs", "4",
                                          "--target-accuracy", "0.85", "--collectives", "transfer"},
                                         {"--train-samples", "6400", "--epochs", "1",
                                          "--target-accuracy", "0.75", "--collectives",
                                          "analytic"}};

typedef struct {
    const char *out, *wl, *self;
    int quick;
    DilocoRow row[W_POL][W_ISL][W_BW];
} WDil;

static void run_dir(const WDil *d, int p, int k, int b, char *dir, size_t n)
{
    snprintf(dir, n, "%s/runs/%s-K%s-%s", d->out, W_NAME[d->quick][p], W_ISLANDS[k], W_WAN[b]);
}

static int wl_run_one(const WDil *d, int p, int k, int b)
{
    char dir[4096];
    run_dir(d, p, k, b, dir, sizeof dir);
    const char *argv[W_N_COMMON + 24];
    int n = 0;
    argv[n++] = d->self;
    argv[n++] = "run";
    for (int i = 0; i < W_N_COMMON; i++) argv[n++] = W_COMMON[i];
    for (int i = 0; i < 8; i++) argv[n++] = W_SIZE[d->quick][i];
    const char *more[] = {
        "--islands",  W_ISLANDS[k], "--wan-bandwidth", W_WAN[b], "--policy", W_SPEC[d->quick][p],
        "--workload", d->wl,        "--out",           dir};
    for (size_t i = 0; i < sizeof more / sizeof *more; i++) argv[n++] = more[i];
    return diloco_run_child(argv, n, dir); /* diloco.c's, with --resume's --force */
}

static void wl_read_row(const WDil *d, int p, int k, int b, DilocoRow *r)
{
    char dir[4096];
    run_dir(d, p, k, b, dir, sizeof dir);
    diloco_read_row(dir, r);
}

static void wl_table(const WDil *d, FILE *md, FILE *csv)
{
    fprintf(md,
            "| run | islands | WAN | steps | outer exchanges | WAN bytes | peak WAN bytes in a "
            "step | final accuracy | time to %s (s) | simulated time (s) |\n"
            "|---|---|---|---|---|---|---|---|---|---|\n",
            W_SIZE[d->quick][5]);
    fputs("run,islands,wan,steps,exchanges,wan_bytes,wan_peak_step_bytes,final_accuracy,"
          "time_to_accuracy_s,sim_time_s\n",
          csv);
    for (int p = 0; p < W_POL; p++)
        for (int k = 0; k < W_ISL; k++)
            for (int b = 0; b < W_BW; b++) {
                const DilocoRow *r = &d->row[p][k][b];
                if (!r->ok) { /* a run that left a folder or a log failed; another never ran */
                    const char *why = r->ran ? "failed" : "not run";
                    fprintf(md, "| %s | %s | %s | %s | | | | | | |\n", W_NAME[d->quick][p],
                            W_ISLANDS[k], W_WAN[b], why);
                    fprintf(csv, "%s,%s,%s,%s,,,,,,\n", W_NAME[d->quick][p], W_ISLANDS[k], W_WAN[b],
                            why);
                    continue;
                }
                char tta[32] = "not reached";
                if (isfinite(r->tta)) snprintf(tta, sizeof tta, "%.4g", r->tta);
                fprintf(md, "| %s | %s | %s | %ld | %ld | %.0f | %.0f | %.4f | %s | %.4g |\n",
                        W_NAME[d->quick][p], W_ISLANDS[k], W_WAN[b], r->steps, r->exchanges, r->wan,
                        r->peak, r->final_acc, tta, r->sim_time);
                fprintf(csv, "%s,%s,%s,%ld,%ld,%.0f,%.0f,%.4f,%s,%.6g\n", W_NAME[d->quick][p],
                        W_ISLANDS[k], W_WAN[b], r->steps, r->exchanges, r->wan, r->peak,
                        r->final_acc, isfinite(r->tta) ? tta : "", r->sim_time);
            }
}

/* DiLoCo's claim: H times less communication at equal steps ("H times" read as within 10%). */
static void wl_verdict_bytes(const WDil *d, FILE *md)
{
    fputs("\n### \"DiLoCo communicates H times less than synchronous training\"\n\n", md);
    int holds = 1, seen = 0;
    for (int k = 0; k < W_ISL; k++)
        for (int p = W_H100; p <= W_H500; p++) {
            const DilocoRow *s = &d->row[W_SYNC][k][0], *x = &d->row[p][k][0];
            if (!s->ok || !x->ok || !(x->wan > 0)) continue;
            const double ratio = s->wan / x->wan, h = W_H[d->quick][p];
            fprintf(md,
                    "- %s islands, %s: %.0f WAN bytes against synchronous %.0f, %.1fx less "
                    "(H = %.0f)\n",
                    W_ISLANDS[k], W_NAME[d->quick][p], x->wan, s->wan, ratio, h);
            holds &= fabs(ratio - h) <= 0.1 * h;
            seen = 1;
        }
    fprintf(md, "\n**Verdict: %s.**\n",
            !seen   ? "not determined (a run failed or was not run)"
            : holds ? "holds"
                    : "does not hold");
}

/* Streaming DiLoCo's claim: the peak bandwidth cut ("cut" read as at least 4x less in a step). */
static void wl_verdict_peak(const WDil *d, FILE *md)
{
    fputs("\n### \"Streaming DiLoCo cuts the peak bandwidth\"\n\n", md);
    int holds = 1, seen = 0;
    for (int k = 0; k < W_ISL; k++) {
        const DilocoRow *x = &d->row[W_H100][k][0], *s = &d->row[W_STREAM][k][0];
        if (!x->ok || !s->ok || !(s->peak > 0)) continue;
        fprintf(md,
                "- %s islands: the most WAN bytes in a step, DiLoCo %.0f, Streaming DiLoCo "
                "%.0f, %.1fx less\n",
                W_ISLANDS[k], x->peak, s->peak, x->peak / s->peak);
        holds &= x->peak / s->peak >= 4;
        seen = 1;
    }
    fprintf(md, "\n**Verdict: %s.**\n",
            !seen   ? "not determined (a run failed or was not run)"
            : holds ? "holds"
                    : "does not hold");
}

/* Wall time: the fastest run across islands against synchronous training, per scenario. */
static void wl_verdict_time(const WDil *d, FILE *md)
{
    fprintf(md,
            "\n### Time to %s against synchronous data-parallel training (the mlp's steps, "
            "each priced as %s's)\n\n",
            W_SIZE[d->quick][5], d->wl);
    int faster = 1, seen = 0;
    for (int k = 0; k < W_ISL; k++)
        for (int b = 0; b < W_BW; b++) {
            const DilocoRow *s = &d->row[W_SYNC][k][b];
            int best = -1;
            for (int p = 1; p < W_POL; p++) {
                const DilocoRow *x = &d->row[p][k][b];
                if (x->ok && isfinite(x->tta) && (best < 0 || x->tta < d->row[best][k][b].tta))
                    best = p;
            }
            if (best < 0 || !s->ok || !isfinite(s->tta)) {
                fprintf(md, "- %s islands, %s: not determined (a run did not reach the target)\n",
                        W_ISLANDS[k], W_WAN[b]);
                faster = 0;
                continue;
            }
            const double t = d->row[best][k][b].tta;
            fprintf(md,
                    "- %s islands, %s: synchronous %.4g s; fastest across islands %s, %.4g s "
                    "(%.2fx)\n",
                    W_ISLANDS[k], W_WAN[b], s->tta, W_NAME[d->quick][best], t, s->tta / t);
            faster &= t < s->tta;
            seen = 1;
        }
    fprintf(md, "\n**Verdict: %s.**\n",
            !seen    ? "not determined"
            : faster ? "DiLoCo reaches the target sooner in every scenario"
                     : "DiLoCo does not reach the target sooner in every scenario");
}

static int wl_report(const WDil *d, BwError *err)
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
    fprintf(md,
            "# DiLoCo across islands, priced as %s (bellows reproduce diloco --workload %s%s)\n\n"
            "Douillard et al., DiLoCo, arXiv 2311.08105; Streaming DiLoCo, arXiv 2501.18512. "
            "8 GPUs in 2 or 4 islands; every step priced as %s's (an inner step its DDP step "
            "inside an island, an outer exchange its parameters over the WAN); the dynamics, and "
            "so the steps to the target, are the small model's: an mlp on Fashion-MNIST.\n\n",
            d->wl, d->wl, d->quick ? " --quick" : "", d->wl);
    wl_table(d, md, csv);
    wl_verdict_bytes(d, md);
    wl_verdict_peak(d, md);
    wl_verdict_time(d, md);
    fputs("\nEach run: `bellows run", md);
    for (int i = 0; i < W_N_COMMON; i++) fprintf(md, " %s", W_COMMON[i]);
    for (int i = 0; i < 8; i++) fprintf(md, " %s", W_SIZE[d->quick][i]);
    fprintf(md,
            " --islands K --wan-bandwidth BW --policy SPEC --workload %s`\n\n| run | --policy "
            "|\n|---|---|\n",
            d->wl);
    for (int p = 0; p < W_POL; p++)
        fprintf(md, "| %s | `%s` |\n", W_NAME[d->quick][p], W_SPEC[d->quick][p]);
    int bad = ferror(md) || ferror(csv);
    bad |= fclose(md) != 0;
    bad |= fclose(csv) != 0;
    return bad ? bw_fail(err, BW_ERUNTIME, "--out %s: writing the report failed", d->out) : BW_OK;
}

int reproduce_diloco_workload(const char *out, const char *wl, int quick, int report_only,
                              int resume, const char *self, BwError *err)
{
    WDil *d = bw_xcalloc(1, sizeof *d, "diloco_wl.c: d");
    d->out = out;
    d->wl = wl;
    d->self = self;
    d->quick = quick != 0;
    const int total = W_POL * W_ISL * W_BW;
    int i = 0, rc = BW_OK;
    for (int p = 0; p < W_POL; p++)
        for (int k = 0; k < W_ISL; k++)
            for (int b = 0; b < W_BW; b++) {
                char dir[4096], what[128];
                run_dir(d, p, k, b, dir, sizeof dir);
                snprintf(what, sizeof what, "%s on %s islands over %s", W_NAME[d->quick][p],
                         W_ISLANDS[k], W_WAN[b]);
                ++i;
                if (report_only || rc) continue;
                if (resume && diloco_run_state(dir) == DILOCO_DONE) {
                    printf("## [%d/%d] %s: done already (--resume)\n", i, total, what);
                    continue;
                }
                printf("## [%d/%d] %s\n", i, total, what);
                fflush(stdout);
                int st = wl_run_one(d, p, k, b);
                if (diloco_stopped(out, i, total, what, err))
                    rc = BW_EINTR;
                else if (st != 0)
                    printf("   failed (see its log)\n");
            }
    for (int p = 0; !rc && p < W_POL; p++)
        for (int k = 0; k < W_ISL; k++)
            for (int b = 0; b < W_BW; b++) wl_read_row(d, p, k, b, &d->row[p][k][b]);
    if (!rc) rc = wl_report(d, err);
    if (!rc) printf("# wrote %s/report.md and diloco.csv\n", out);
    free(d);
    return rc;
}
