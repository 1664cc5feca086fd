/* cmd_validate.c: `bellows validate`, every published measurement the project holds
 * (sim/costs/validation/rows.csv, valrows.h) against bellows' prediction of it. Each row's
 * settings are checked here first (a bad one is a usage error naming the file, the line and the
 * field, before anything runs), then run in child processes (runner.h, --jobs at a time, no
 * result folders); the table, a summary per group and per cost profile are printed, and the
 * exit status is 1 when a row is outside its tolerance. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "xalloc.h"
#include "commands.h"
#include "driver.h"
#include "engine.h"
#include "infile.h"
#include "io_check.h"
#include "outfile.h"
#include "run_args.h"
#include "runner.h"
#include "valrows.h"
#include "validation_rows.h" /* generated: validation_rows[] (rows.csv) */
#include "wallclock.h"

#define BUILTIN_ROWS "sim/costs/validation/rows.csv"

typedef struct {
    ValRows rows;
    const char *name; /* the rows' file, for messages */
    double *pred;     /* per job, img/s */
    double *images;   /* per job: workers x images per GPU, a step (TFLOPS rows: the flops a
                       * GPU trains a step, in TFLOPs) */
    char (*profile)[64];
    CostSetting *setting; /* per job: what a run's nearest rows are found by */
    char (*error)[512];
    int failed;
} Validate;

/* A setting writes nothing: every flag that names a file written or the folder written into
 * (their class, flag_file in flag_class.c, as io_check.h reads them) is refused, so a row's
 * --record-trace or --timeline can never write, over the --rows file or anywhere else. */
static int writes_nothing(const Flags *f, BwError *err)
{
    IoFiles io = {0};
    run_io_files(f, &io);
    const char *label = io.out_dir ? io.out_label : NULL, *path = io.out_dir;
    for (int i = 0; !label && i < io.n; i++)
        if (io.f[i].out) label = io.f[i].label, path = io.f[i].path;
    int rc =
        label ? bw_fail(err, BW_EUSAGE, "%s %s: a setting writes nothing", label, path) : BW_OK;
    io_free(&io);
    return rc;
}

/* A row's setting k as a run's flags into f, with the cfg run_setup makes of them. */
static int setup_job(const ValRow *row, int k, Flags *f, TrainArgs *ta, RunConfig *cfg,
                     double *slowdown, char *buf, BwError *err)
{
    char *argv[VALROW_MAX_ARGS + 1];
    int argc = valrows_args(row, k, buf, sizeof row->setting, argv);
    argv[argc++] = "--quiet";
    int rc = run_parse_flags("bellows run", RUN_MODE_RUN, argc, argv, f, err);
    if (rc == CLI_HELP) rc = bw_fail(err, BW_EUSAGE, "--help is not a setting");
    if (rc == BW_OK) rc = run_setup("validate", f, ta, cfg, slowdown, err);
    if (rc == BW_OK) rc = writes_nothing(f, err);
    return rc;
}

/* Every setting checked in this process, each job's images a step and profile noted. */
static int check_settings(Validate *v, BwError *err)
{
    Flags *f = bw_xmalloc(sizeof *f, "cmd_validate.c: f");
    char *buf = bw_xmalloc(sizeof v->rows.rows[0].setting, "cmd_validate.c: buf");
    if (!f || !buf) {
        free(f);
        free(buf);
        return bw_fail(err, BW_ERUNTIME, "out of memory");
    }
    int rc = BW_OK;
    for (int i = 0; rc == BW_OK && i < v->rows.n; i++) {
        const ValRow *row = &v->rows.rows[i];
        for (int k = 0; rc == BW_OK && k < row->n_alts; k++) {
            TrainArgs ta;
            RunConfig cfg;
            double slowdown[DRIVER_MAX_WORKERS];
            BwError why = {{0}};
            memset(f, 0, sizeof *f);
            if (setup_job(row, k, f, &ta, &cfg, slowdown, buf, &why)) {
                rc = bw_fail(err, BW_EUSAGE, "%s:%d: field setting%s: %s", v->name, row->line,
                             row->n_alts > 1 ? " (one of its settings)" : "", why.msg);
            } else {
                int j = row->first_job + k;
                int per_gpu = cfg.price_batch > 0 ? cfg.price_batch : cfg.tc.batch;
                v->images[j] = (double)cfg.cluster.workers * per_gpu;
                if (row->unit == VALROW_TFLOPS &&
                    !(cfg.workload && workload_flops_per_sample(cfg.workload) > 0))
                    rc = bw_fail(err, BW_EUSAGE,
                                 "%s:%d: field setting: a TFLOPS row needs a --workload in flops",
                                 v->name, row->line);
                else if (row->unit == VALROW_TFLOPS)
                    v->images[j] = per_gpu * workload_flops_per_sample(cfg.workload) / 1e12;
                snprintf(v->profile[j], sizeof v->profile[j], "%s",
                         cfg.costs && !cfg.costs->ideal ? cfg.costs->name : "ideal");
                driver_cost_setting(&cfg, &v->setting[j]);
            }
            run_flags_release(f);
        }
    }
    free(f);
    free(buf);
    return rc;
}

/* In the child: job j's run, its row sent back through fd. */
static void validate_start(int j, int fd, void *ctx)
{
    Validate *v = ctx;
    int i = 0;
    while (i + 1 < v->rows.n && (v->rows.rows[i].unit == VALROW_RATIO ||
                                 v->rows.rows[i].first_job + v->rows.rows[i].n_alts <= j))
        i++;
    const ValRow *row = &v->rows.rows[i];
    static Flags f;
    static char buf[sizeof row->setting];
    TrainArgs ta;
    RunConfig cfg;
    Dataset train = {0}, test = {0};
    double slowdown[DRIVER_MAX_WORKERS];
    BwError err = {{0}};
    int rc = setup_job(row, j - row->first_job, &f, &ta, &cfg, slowdown, buf, &err);
    if (rc == BW_OK) rc = run_load_data(&ta, &cfg, &train, &test, &err);
    if (rc == BW_OK) rc = driver_check(&cfg, &err);
    if (rc == BW_OK)
        rc = engine_check_options(f.n_simgrid, f.simgrid_args, f.run.network_model, &err);
    if (rc == BW_OK) {
        cfg.progress = 0;
        if (!f.run.compute_threads) cfg.compute_threads = 1; /* the runs share the cores */
        runner_child(&cfg, ta.model, "validate", &f, NULL, NULL, fd);
    }
    RunRow out;
    memset(&out, 0, sizeof out);
    out.rc = rc;
    snprintf(out.error, sizeof out.error, "%s", err.msg);
    ssize_t w = write(fd, &out, sizeof out);
    _exit(w == (ssize_t)sizeof out ? 0 : 1);
}

static void validate_done(int j, RunRow *row, void *ctx)
{
    Validate *v = ctx;
    if (row->rc || !(row->sim_time > 0) || row->steps <= 0) {
        v->pred[j] = NAN;
        v->failed++;
        snprintf(v->error[j], sizeof v->error[j], "%s",
                 row->rc ? row->error : "the run took no simulated time");
        return;
    }
    v->pred[j] = v->images[j] * (double)row->steps / row->sim_time;
}

/* A row's prediction: the mean of its settings' throughputs, or a quotient of two rows'. */
static double row_prediction(const Validate *v, int i)
{
    const ValRow *row = &v->rows.rows[i];
    if (row->unit == VALROW_RATIO)
        return row_prediction(v, row->ratio_of[0]) / row_prediction(v, row->ratio_of[1]);
    double sum = 0;
    for (int k = 0; k < row->n_alts; k++) sum += v->pred[row->first_job + k];
    return sum / row->n_alts;
}

static const char *row_profile(const Validate *v, int i)
{
    const ValRow *row = &v->rows.rows[i];
    if (row->unit == VALROW_RATIO) return row_profile(v, row->ratio_of[0]);
    return v->profile[row->first_job];
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

/* The median and the largest of x[0..n) (sorted in place). */
static void median_worst(double *x, int n, double *median, double *worst)
{
    qsort(x, (size_t)n, sizeof *x, cmp_double);
    *median = n % 2 ? x[n / 2] : (x[n / 2 - 1] + x[n / 2]) / 2;
    *worst = x[n - 1];
}

/* The |errors| of the predicted rows whose group (or profile, by_profile) is key. */
static int errors_of(const Validate *v, const double *err, const char *key, int by_profile,
                     double *out)
{
    int n = 0;
    for (int i = 0; i < v->rows.n; i++) {
        const char *k = by_profile ? row_profile(v, i) : v->rows.rows[i].group;
        if (!v->rows.rows[i].fit && strcmp(k, key) == 0 && isfinite(err[i]))
            out[n++] = fabs(err[i]);
    }
    return n;
}

static int seen_before(const Validate *v, int i, int by_profile)
{
    for (int k = 0; k < i; k++)
        if (strcmp(by_profile ? row_profile(v, k) : v->rows.rows[k].group,
                   by_profile ? row_profile(v, i) : v->rows.rows[i].group) == 0)
            return 1;
    return 0;
}

/* One line per group (or profile): its predicted rows' median and worst |error|. */
static void print_summaries(const Validate *v, const double *err, int by_profile, double *tmp)
{
    printf("\n%s\n", by_profile ? "per cost profile (predicted rows):"
                                : "per group (predicted rows; fitted rows apart):");
    for (int i = 0; i < v->rows.n; i++) {
        if (seen_before(v, i, by_profile)) continue;
        const char *key = by_profile ? row_profile(v, i) : v->rows.rows[i].group;
        int n = errors_of(v, err, key, by_profile, tmp), fitted = 0;
        for (int k = 0; k < v->rows.n; k++)
            fitted += v->rows.rows[k].fit &&
                      strcmp(by_profile ? row_profile(v, k) : v->rows.rows[k].group, key) == 0;
        printf("  %-20s ", key);
        if (n) {
            double med, worst;
            median_worst(tmp, n, &med, &worst);
            printf("median error %4.1f%%, worst %5.1f%% over %d predicted rows", 100 * med,
                   100 * worst, n);
        } else {
            printf("no predicted rows");
        }
        printf("%s", fitted ? "" : "\n");
        if (fitted) printf("; %d fitted\n", fitted);
    }
}

/* The table; returns how many rows are outside their tolerance. */
static int print_table(const Validate *v, const double *pred, const double *err)
{
    printf("%-26s %-19s %-13s %10s %10s %8s %-7s %s\n", "row", "group", "profile", "measured",
           "bellows", "error", "fit", "tolerance");
    int outside = 0;
    for (int i = 0; i < v->rows.n; i++) {
        const ValRow *r = &v->rows.rows[i];
        char tol[32] = "none (reported)";
        int bad = r->tolerance >= 0 && !(fabs(err[i]) <= r->tolerance);
        if (r->tolerance >= 0)
            snprintf(tol, sizeof tol, "%g%%%s", 100 * r->tolerance, bad ? "  OUTSIDE" : "");
        outside += bad;
        const char *fmt = r->unit == VALROW_RATIO ? "%-26s %-19s %-13s %9.2fx %9.2fx %+7.1f%% "
                                                    "%-7s %s\n"
                          : r->unit == VALROW_TFLOPS
                              ? "%-26s %-19s %-13s %6.1f TF %6.1f TF %+7.1f%% "
                                "%-7s %s\n"
                              : "%-26s %-19s %-13s %10.0f %10.0f %+7.1f%% "
                                "%-7s %s\n";
        if (isnan(r->figure)) /* not published: a ratio's operand */
            printf("%-26s %-19s %-13s %10s %10.0f %8s %-7s %s\n", r->id, r->group,
                   row_profile(v, i), "-", pred[i], "-", r->fit ? "fit" : "predict", tol);
        else
            printf(fmt, r->id, r->group, row_profile(v, i), r->figure, pred[i], 100 * err[i],
                   r->fit ? "fit" : "predict", tol);
    }
    return outside;
}

/* path (a file, in a folder or not) opened as an OutFile: written whole or not at all. */
static int open_path(OutFile *of, const char *path, BwError *err)
{
    char dir[4096];
    const char *slash = strrchr(path, '/');
    snprintf(dir, sizeof dir, "%.*s", slash ? (int)(slash - path) : 1, slash ? path : ".");
    return outfile_open(of, dir, slash ? slash + 1 : path, err);
}

/* --csv FILE: the table as CSV, written whole or not at all. */
static int write_csv(const char *path, const Validate *v, const double *pred, const double *err,
                     BwError *ferr)
{
    OutFile of;
    int rc = open_path(&of, path, ferr);
    if (rc) return rc;
    fputs("id,group,profile,unit,measured,bellows,error,fit,tolerance,within\n", of.f);
    for (int i = 0; i < v->rows.n; i++) {
        const ValRow *r = &v->rows.rows[i];
        fprintf(of.f, "%s,%s,%s,%s,%.6g,%.6g,%.4f,%s,", r->id, r->group, row_profile(v, i),
                r->unit == VALROW_RATIO    ? "ratio"
                : r->unit == VALROW_TFLOPS ? "TFLOPS"
                                           : "img/s",
                r->figure, pred[i], err[i], r->fit ? "fit" : "predict");
        if (r->tolerance >= 0)
            fprintf(of.f, "%g,%d\n", r->tolerance, fabs(err[i]) <= r->tolerance);
        else
            fputs("none,\n", of.f);
    }
    return outfile_commit(&of, ferr);
}

/* summary.json's "rows": each predicted row's setting (driver_cost_setting, its first
 * setting's where it averages several; a ratio's, its first operand's) and signed error, from
 * which every run names the rows near it (costs_validation_near) without running any. A row
 * with no error (an operand with no published figure) is left out: it says nothing of how near
 * bellows came. */
static void write_rows(FILE *f, const Validate *v, const double *err)
{
    fputs("  \"rows\": [", f);
    int first = 1;
    for (int i = 0; i < v->rows.n; i++) {
        const ValRow *r = &v->rows.rows[i];
        if (r->fit || !isfinite(err[i])) continue;
        const ValRow *a = r->unit == VALROW_RATIO ? &v->rows.rows[r->ratio_of[0]] : r;
        if (a->unit == VALROW_RATIO) continue;
        const CostSetting *s = &v->setting[a->first_job];
        fprintf(f,
                "%s\n    {\"id\": \"%s\", \"error\": %.4f, \"family\": \"%s\", "
                "\"framework\": \"%s\", \"transport\": \"%s\", \"sockets\": %d, \"gbps\": %.6g, "
                "\"gpus_per_nic\": %.6g, \"gpu\": \"%s\"",
                first ? "" : ",", r->id, err[i], s->family, s->framework,
                costs_net_name((CostNet)s->transport), s->sockets, s->gbps, s->gpus_per_nic,
                s->gpu);
        /* only where given (costs_validation.c reads a row without them as DDP) */
        if (s->sharding[0]) fprintf(f, ", \"sharding\": \"%s\"", s->sharding);
        if (s->zeropp[0]) fprintf(f, ", \"zeropp\": \"%s\"", s->zeropp);
        fputc('}', f);
        first = 0;
    }
    fputs("\n  ]\n", f);
}

/* --write-summary FILE: per profile, its predicted rows' median and worst |error| (the JSON that
 * sim/costs/validation/summary.json holds and runs print). */
static int write_summary(const char *path, const Validate *v, const double *err, double *tmp,
                         BwError *ferr)
{
    OutFile of;
    int rc = open_path(&of, path, ferr);
    if (rc) return rc;
    fputs("{\n  \"source\": \"bellows validate --write-summary: each cost profile's predicted "
          "rows of sim/costs/validation/rows.csv, |bellows / measured - 1|\",\n"
          "  \"profiles\": {",
          of.f);
    int first = 1;
    for (int i = 0; i < v->rows.n; i++) {
        const char *key = row_profile(v, i);
        if (seen_before(v, i, 1) || strcmp(key, "ideal") == 0) continue;
        int n = errors_of(v, err, key, 1, tmp);
        if (!n) continue;
        double med, worst;
        median_worst(tmp, n, &med, &worst);
        fprintf(of.f,
                "%s\n    \"%s\": {\"rows\": %d, \"median_error\": %.4f, \"worst_error\": "
                "%.4f}",
                first ? "" : ",", key, n, med, worst);
        first = 0;
    }
    fputs("\n  },\n", of.f);
    write_rows(of.f, v, err);
    fputs("}\n", of.f);
    return outfile_commit(&of, ferr);
}

typedef struct {
    const char *rows, *csv, *summary;
    int jobs;
} ValidateFlags;

/* --rows FILE's text, NUL-terminated (a NUL inside it ends it). */
static int read_text(const char *path, char **out, BwError *err)
{
    int rc = infile_check("--rows", path, err);
    if (rc) return rc;
    FILE *fp = fopen(path, "rb");
    if (!fp) return bw_fail(err, BW_EUSAGE, "--rows %s: cannot open it", path);
    size_t cap = 1 << 16, len = 0;
    char *text = bw_xmalloc(cap, "cmd_validate.c: text");
    for (size_t got = 1; text && got;) {
        if (len + 1 == cap) {
            char *grown =
                cap < (64u << 20) ? bw_xrealloc(text, cap *= 2, "cmd_validate.c: memory") : NULL;
            if (!grown) free(text);
            text = grown;
            if (!text) break;
        }
        got = fread(text + len, 1, cap - len - 1, fp);
        len += got;
    }
    int bad = ferror(fp);
    fclose(fp);
    if (!text || bad) {
        free(text);
        return bw_fail(err, BW_EUSAGE, "--rows %s: cannot read it (or over 64 MiB)", path);
    }
    text[len] = '\0';
    *out = text;
    return BW_OK;
}

/* The rows' text: --rows FILE, or the embedded rows.csv. */
static int read_rows(const ValidateFlags *vf, Validate *v, BwError *err)
{
    if (vf->rows) {
        char *text = NULL;
        int rc = read_text(vf->rows, &text, err);
        if (rc) return rc;
        v->name = vf->rows;
        rc = valrows_parse(vf->rows, text, &v->rows, err);
        free(text);
        return rc;
    }
    size_t len = validation_rows[0].len;
    char *text = bw_xmalloc(len + 1, "cmd_validate.c: text");
    if (!text) return bw_fail(err, BW_ERUNTIME, "out of memory");
    memcpy(text, validation_rows[0].json, len);
    text[len] = '\0';
    v->name = BUILTIN_ROWS;
    int rc = valrows_parse(BUILTIN_ROWS, text, &v->rows, err);
    free(text);
    return rc;
}

static const char *const VALIDATE_ABOUT =
    "Runs every published measurement the project holds (sim/costs/validation/rows.csv, or "
    "--rows FILE)\nand prints, for each row, the measurement, bellows' prediction, the error "
    "and whether the row\nwas used to fit, then a summary per group and per cost profile. Exit "
    "status 1 when a row is\noutside its tolerance (or a run fails); a malformed row is refused "
    "(2) before anything runs.";

static int validate_run(const ValidateFlags *vf, Validate *v, BwError *err);

/* Inputs are never outputs (io_check.h): --rows is read, --csv and --write-summary written. */
static int validate_io(const ValidateFlags *vf, BwError *err)
{
    IoFiles io = {0};
    if (vf->rows) io_input_file(&io, "--rows", vf->rows);
    if (vf->csv) io_output(&io, "--csv", vf->csv);
    if (vf->summary) io_output(&io, "--write-summary", vf->summary);
    int rc = io_check(&io, err);
    io_free(&io);
    return rc;
}

int cmd_validate(int argc, char **argv, BwError *err)
{
    ValidateFlags vf = {0};
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    char jobs_def[16];
    snprintf(jobs_def, sizeof jobs_def, "%ld", cores > 0 ? (cores < 64 ? cores : 64) : 1);
    const CliOpt opts[] = {
        {.name = "rows",
         .kind = CLI_STRING,
         .dest = &vf.rows,
         .unit = "FILE",
         .help = "the rows to run (the format: sim/costs/README.md); default the built-in "
                 "sim/costs/validation/rows.csv"},
        {.name = "jobs",
         .kind = CLI_INT,
         .dest = &vf.jobs,
         .def = jobs_def,
         .unit = "processes",
         .help = "runs at a time",
         .min = 1,
         .max = 64},
        {.name = "csv",
         .kind = CLI_STRING,
         .dest = &vf.csv,
         .unit = "FILE",
         .help = "also write the table as CSV"},
        {.name = "write-summary",
         .kind = CLI_STRING,
         .dest = &vf.summary,
         .unit = "FILE",
         .help = "write each cost profile's validation, as sim/costs/validation/summary.json "
                 "holds it"},
    };
    const int n_opts = (int)(sizeof opts / sizeof *opts);
    int rc = cli_parse("bellows validate", opts, n_opts, NULL, argc, argv, NULL, err);
    if (rc == CLI_HELP) {
        cli_print_help(stdout, "bellows validate [flags]", VALIDATE_ABOUT, opts, n_opts);
        return BW_OK;
    }
    if (rc || (rc = validate_io(&vf, err))) return rc;
    Validate v = {0};
    rc = read_rows(&vf, &v, err);
    if (rc == BW_OK) rc = validate_run(&vf, &v, err);
    free(v.pred);
    free(v.images);
    free(v.profile);
    free(v.setting);
    free(v.error);
    valrows_free(&v.rows);
    return rc;
}

static int validate_run(const ValidateFlags *vf, Validate *v, BwError *err)
{
    int nj = v->rows.n_jobs > 0 ? v->rows.n_jobs : 1, n = v->rows.n;
    v->pred = bw_xcalloc((size_t)nj, sizeof *v->pred, "cmd_validate.c: v->pred");
    v->images = bw_xcalloc((size_t)nj, sizeof *v->images, "cmd_validate.c: v->images");
    v->profile = bw_xcalloc((size_t)nj, sizeof *v->profile, "cmd_validate.c: v->profile");
    v->setting = bw_xcalloc((size_t)nj, sizeof *v->setting, "cmd_validate.c: v->setting");
    v->error = bw_xcalloc((size_t)nj, sizeof *v->error, "cmd_validate.c: v->error");
    double *pred = bw_xcalloc((size_t)n, sizeof *pred, "cmd_validate.c: pred"),
           *e = bw_xcalloc((size_t)n, sizeof *e, "cmd_validate.c: e");
    double *tmp = bw_xcalloc((size_t)n, sizeof *tmp, "cmd_validate.c: tmp");
    int rc =
        !v->pred || !v->images || !v->profile || !v->setting || !v->error || !pred || !e || !tmp
            ? bw_fail(err, BW_ERUNTIME, "out of memory")
            : check_settings(v, err);
    double t0 = wallclock_s();
    if (rc == BW_OK) {
        printf("# bellows validate: %d published rows from %s, %d runs, %d at a time\n", n, v->name,
               v->rows.n_jobs, vf->jobs);
        fflush(stdout);
        rc = runner_pool(v->rows.n_jobs, vf->jobs, validate_start, validate_done, v, err);
    }
    if (rc == BW_OK && v->failed) {
        for (int j = 0; j < v->rows.n_jobs; j++)
            if (v->error[j][0])
                fprintf(stderr, "bellows: validate: run %d: %s\n", j + 1, v->error[j]);
        rc = bw_fail(err, BW_ERUNTIME, "validate: %d of %d runs failed (see above)", v->failed,
                     v->rows.n_jobs);
    }
    if (rc == BW_OK) {
        for (int i = 0; i < n; i++) {
            pred[i] = row_prediction(v, i);
            e[i] = pred[i] / v->rows.rows[i].figure - 1;
        }
        int outside = print_table(v, pred, e);
        print_summaries(v, e, 0, tmp);
        print_summaries(v, e, 1, tmp);
        printf("# %d of %d rows outside their tolerance (%.1f wall s)\n", outside, n,
               wallclock_s() - t0);
        if (vf->csv) rc = write_csv(vf->csv, v, pred, e, err);
        if (rc == BW_OK && vf->summary) rc = write_summary(vf->summary, v, e, tmp, err);
        if (rc == BW_OK && outside)
            rc = bw_fail(err, BW_ERUNTIME, "validate: %d row%s outside %s tolerance", outside,
                         outside > 1 ? "s" : "", outside > 1 ? "their" : "its");
    }
    free(pred);
    free(e);
    free(tmp);
    return rc;
}
