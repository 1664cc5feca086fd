/* plots.c: runs gnuplot on result folders: a run, a compare, a sweep, a cluster (see plots.h). The
 * scripts are found in $BELLOWS_PLOTS_DIR or, by default, in the data folder beside the executable
 * (datadir.h): PREFIX/share/bellows/plots when installed, build/share/bellows/plots in a build
 * folder. */
#include "plots.h"

#include "datadir.h"
#include "outfile.h"

#include <dirent.h>
#include <jansson.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static void scripts_dir(char *out, size_t n)
{
    const char *env = getenv("BELLOWS_PLOTS_DIR");
    if (env && *env)
        snprintf(out, n, "%s", env);
    else if (!datadir_find("plots", out, n))
        snprintf(out, n, "plots"); /* not found: the message below names it */
}

int plots_available(void)
{
    int st = system("gnuplot --version >/dev/null 2>&1");
    /* a Ctrl-C meanwhile reached gnuplot's shell, not this process (system() ignores SIGINT
     * while it waits): passed on, so that the command stops as it would have */
    if (st != -1 && ((WIFSIGNALED(st) && WTERMSIG(st) == SIGINT) ||
                     (WIFEXITED(st) && WEXITSTATUS(st) == 128 + SIGINT))) {
        raise(SIGINT);
        return 0;
    }
    return st == 0;
}

int plots_find(void)
{
    if (plots_available()) return 1;
    if (outfile_interrupted()) return -1;
    printf("# gnuplot not found: no plots (scripts/setup.sh installs gnuplot-nox)\n");
    return 0;
}

/* The -e expression handed to gnuplot: assignments, the text values as gnuplot strings. */
typedef struct {
    char buf[32768];
    size_t len;
    int bad; /* a value gnuplot cannot take (a newline), or too long */
} Expr;

static void ex_add(Expr *e, const char *s, size_t n)
{
    if (e->bad || e->len + n + 1 > sizeof e->buf) {
        e->bad = 1;
        return;
    }
    memcpy(e->buf + e->len, s, n);
    e->len += n;
    e->buf[e->len] = '\0';
}

/* name='value'; in a single-quoted gnuplot string, where only a quote is special (doubled). */
static void ex_string(Expr *e, const char *name, const char *value)
{
    if (strpbrk(value, "\n\r")) e->bad = 1;
    ex_add(e, name, strlen(name));
    ex_add(e, "='", 2);
    for (const char *c = value; *c; c++) {
        ex_add(e, c, 1);
        if (*c == '\'') ex_add(e, c, 1);
    }
    ex_add(e, "'; ", 3);
}

/* name=x; for a number */
static void ex_number(Expr *e, const char *name, double x)
{
    char t[128];
    snprintf(t, sizeof t, "%s=%.9g; ", name, x);
    ex_add(e, t, strlen(t));
}

/* name1='...'; name2='...'; ... (the scripts read them as value(sprintf("name%d", i))) */
static void ex_list(Expr *e, const char *name, const char *const *v, int n)
{
    char var[64];
    for (int i = 0; i < n; i++) {
        snprintf(var, sizeof var, "%s%d", name, i + 1);
        ex_string(e, var, v[i]);
    }
}

/* Whether path, a plot gnuplot wrote, is whole: a PNG ends with its IEND chunk, an SVG with
 * its closing tag (a full disk or a file-size limit leaves them empty or cut off, and gnuplot
 * exits 0 all the same). */
static int plot_whole(const char *path, int png)
{
    static const unsigned char iend[12] = {0, 0, 0, 0, 'I', 'E', 'N', 'D', 0xae, 0x42, 0x60, 0x82};
    unsigned char tail[64];
    FILE *f = fopen(path, "rb");
    if (!f) return 0;
    long size = fseek(f, 0, SEEK_END) == 0 ? ftell(f) : -1;
    long from = size > (long)sizeof tail ? size - (long)sizeof tail : 0;
    size_t got = size > 0 && fseek(f, from, SEEK_SET) == 0 ? fread(tail, 1, sizeof tail, f) : 0;
    fclose(f);
    if (got == 0 || (long)got != size - from) return 0;
    if (png) return got >= sizeof iend && memcmp(tail + got - sizeof iend, iend, sizeof iend) == 0;
    while (got > 0 && (tail[got - 1] == '\n' || tail[got - 1] == ' ' || tail[got - 1] == '\r'))
        got--;
    return got >= 6 && memcmp(tail + got - 6, "</svg>", 6) == 0;
}

/* The PNG and SVG files of dir modified since t0 (gnuplot's, to the second: a plot of the same
 * second before is whole, or checked as well): at least one, each whole; those that are not are
 * removed. */
static int check_written(const char *dir, time_t t0, BwError *err)
{
    DIR *d = opendir(dir);
    if (!d) return bw_fail(err, BW_ERUNTIME, "plots: cannot read %s", dir);
    int written = 0, cut = 0;
    char first[4096] = "";
    struct dirent *e;
    while ((e = readdir(d))) {
        size_t n = strlen(e->d_name);
        int png = n > 4 && strcmp(e->d_name + n - 4, ".png") == 0;
        if (!png && !(n > 4 && strcmp(e->d_name + n - 4, ".svg") == 0)) continue;
        char path[4096];
        struct stat st;
        snprintf(path, sizeof path, "%s/%s", dir, e->d_name);
        if (stat(path, &st) != 0 || st.st_mtime < t0) continue; /* an earlier plot */
        written++;
        if (plot_whole(path, png)) continue;
        if (!cut++) snprintf(first, sizeof first, "%s", path);
        unlink(path); /* no half-written file stays */
    }
    closedir(d);
    if (cut)
        return bw_fail(err, BW_ERUNTIME,
                       "plots: gnuplot left %d plot(s) empty or cut off, %s the first (a full "
                       "disk or a file-size limit?); removed",
                       cut, first);
    if (!written) return bw_fail(err, BW_ERUNTIME, "plots: gnuplot wrote no plot into %s", dir);
    return BW_OK;
}

/* Runs gnuplot on plots/NAME with -e "scriptdir='...'; " and the expression e; then checks
 * what it wrote into dir. */
static int run_script(const char *name, Expr *e, const char *dir, BwError *err)
{
    static Expr full;
    memset(&full, 0, sizeof full);
    char dir_gp[4096];
    scripts_dir(dir_gp, sizeof dir_gp);
    ex_string(&full, "scriptdir", dir_gp);
    ex_add(&full, e->buf, e->len);
    if (e->bad || full.bad)
        return bw_fail(err, BW_ERUNTIME,
                       "plots: no plots of %s: a folder or policy name holds a newline, or the "
                       "names are too long for gnuplot's command line",
                       dir);
    char script[4200];
    snprintf(script, sizeof script, "%s/%s", dir_gp, name);
    if (access(script, R_OK) != 0)
        return bw_fail(err, BW_ERUNTIME,
                       "plots: %s not found (set BELLOWS_PLOTS_DIR to bellows' plots folder)",
                       script);
    /* gnuplot's chatter (warnings about flat ranges) is kept and shown only if it fails */
    FILE *log = tmpfile();
    if (!log) return bw_fail(err, BW_ERUNTIME, "plots: cannot create a temporary file");
    const time_t t0 = time(NULL);
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) {
        fclose(log);
        return bw_fail(err, BW_ERUNTIME, "plots: cannot fork");
    }
    if (pid == 0) {
        dup2(fileno(log), STDERR_FILENO);
        execlp("gnuplot", "gnuplot", "-e", full.buf, script, (char *)NULL);
        _exit(127);
    }
    int st;
    int failed = waitpid(pid, &st, 0) != pid || !WIFEXITED(st) || WEXITSTATUS(st) != 0;
    char last[512] = "", line[512];
    rewind(log);
    while (fgets(line, sizeof line, log))
        if (strspn(line, " \t\n") < strlen(line)) snprintf(last, sizeof last, "%s", line);
    fclose(log);
    last[strcspn(last, "\n")] = '\0';
    if (failed)
        return bw_fail(err, BW_ERUNTIME, "plots: gnuplot failed on %s: %s", dir,
                       last[0] ? last : "(no message)");
    return check_written(dir, t0, err);
}

/* accnote='...' when run folder dir/run replayed a trace (its summary.json's accuracy_source):
 * its accuracy is the trace's, the same under every policy, and the plots say so; or, for
 * compare --traces and sweep --traces ("own trace"), each policy's own recorded run's. */
static void ex_accuracy_note(Expr *e, const char *dir, const char *run)
{
    char path[8192];
    snprintf(path, sizeof path, "%s%s%s/summary.json", dir, run ? "/" : "", run ? run : "");
    FILE *f = fopen(path, "r");
    char line[512];
    int trace = 0; /* 1: one trace; 2: each policy's own */
    while (f && !trace && fgets(line, sizeof line, f)) {
        if (!strstr(line, "\"accuracy_source\"")) continue;
        trace = strstr(line, "\"own trace\"") ? 2 : strstr(line, "\"trace\"") ? 1 : 0;
    }
    if (f) fclose(f);
    if (trace == 1) ex_string(e, "accnote", "accuracy: the trace's, the same for every policy");
    if (trace == 2) ex_string(e, "accnote", "accuracy: each policy's own recorded run");
}

/* The 1-based column named name in the header of folder/file, 0 without it. */
static int header_column(const char *folder, const char *file, const char *name)
{
    char path[8400], line[1024];
    snprintf(path, sizeof path, "%s/%s", folder, file);
    FILE *f = fopen(path, "r");
    int col = 0;
    if (f && fgets(line, sizeof line, f)) {
        line[strcspn(line, "\r\n")] = '\0';
        int k = 1;
        for (char *tok = line; tok && !col; k++) {
            char *comma = strchr(tok, ',');
            if (comma) *comma = '\0';
            if (strcmp(tok, name) == 0) col = k;
            tok = comma ? comma + 1 : NULL;
        }
    }
    if (f) fclose(f);
    return col;
}

/* The 1-based column of wan_bytes in the header of folder/file (a run on islands writes it:
 * the WAN's bytes, sim/driver/results.c), 0 without it. */
static int wan_column(const char *folder, const char *file)
{
    return header_column(folder, file, "wan_bytes");
}

/* compare --cost-band (compare.csv's band columns, sim/cli/compare_table.c): the columns of the
 * speedup, its seed interval and its band over seeds and costs, for compare.gp's speedup plot;
 * nothing without the band (its plots as before). */
static void ex_band_columns(Expr *e, const char *dir)
{
    const char *names[] = {"speedup", "speedup_ci_low", "speedup_ci_high", "speedup_band_low",
                           "speedup_band_high"},
               *vars[] = {"spcol", "cilo", "cihi", "bandlo", "bandhi"};
    int col[5];
    for (int i = 0; i < 5; i++)
        if (!(col[i] = header_column(dir, "compare.csv", names[i]))) return;
    for (int i = 0; i < 5; i++) ex_number(e, vars[i], col[i]);
}

/* The bytes the plots draw: on islands (every run's steps.csv and evals.csv has wan_bytes)
 * wan=1 and the columns of each run, sbcI (steps.csv) and ebcI (evals.csv); otherwise rank 0's
 * bytes_rank0, which the scripts read by default. runs NULL: dir is the one run. */
static void ex_bytes_columns(Expr *e, const char *dir, const char *const *runs, int n)
{
    for (int pass = 0; pass < 2; pass++) /* 0: does every run have them; 1: say where */
        for (int i = 0; i < n; i++) {
            char folder[8300], var[32];
            snprintf(folder, sizeof folder, "%.4096s%s%.4096s", dir, runs ? "/" : "",
                     runs ? runs[i] : "");
            int sbc = wan_column(folder, "steps.csv"), ebc = wan_column(folder, "evals.csv");
            if (!pass && !(sbc > 0 && ebc > 0)) return;
            if (!pass) continue;
            snprintf(var, sizeof var, "sbc%d", i + 1);
            ex_number(e, var, sbc);
            snprintf(var, sizeof var, "ebc%d", i + 1);
            ex_number(e, var, ebc);
        }
    if (n > 0) ex_number(e, "wan", 1);
}

/* A script over several run folders of dir, labelled; a compare's (time_breakdown: 1) also
 * says whether dir holds time_breakdown.csv. */
static int runs_script(const char *script, const char *dir, const char *const *runs,
                       const char *const *labels, int n, double target, const char *scenario,
                       int time_breakdown, BwError *err)
{
    static Expr e;
    memset(&e, 0, sizeof e);
    ex_string(&e, "dir", dir);
    if (time_breakdown) {
        char path[4200];
        snprintf(path, sizeof path, "%.4096s/time_breakdown.csv", dir);
        ex_number(&e, "has_breakdown", access(path, R_OK) == 0);
        ex_band_columns(&e, dir);
    }
    ex_string(&e, "scenario", scenario ? scenario : "");
    ex_number(&e, "n", n);
    ex_list(&e, "run", runs, n);
    ex_list(&e, "label", labels, n);
    ex_number(&e, "target", target > 0 ? target : 0.0);
    if (n > 0) ex_accuracy_note(&e, dir, runs[0]);
    ex_bytes_columns(&e, dir, runs, n);
    return run_script(script, &e, dir, err);
}

int plots_compare(const char *dir, const char *const *runs, const char *const *labels, int n,
                  double target, BwError *err)
{
    return runs_script("compare.gp", dir, runs, labels, n, target, NULL, 1, err);
}

int plots_curves(const char *dir, const char *const *runs, const char *const *labels, int n,
                 double target, const char *scenario, BwError *err)
{
    return runs_script("curves.gp", dir, runs, labels, n, target, scenario, 0, err);
}

/* The baseline and the policies of dir/speedup_grid.dat, from its "# baseline" and "# policy"
 * lines, as gnuplot assignments; returns the number of policies, -1 if it cannot be read. */
static int grid_policies(const char *dir, Expr *e)
{
    char path[4096], line[1024], var[64];
    snprintf(path, sizeof path, "%s/speedup_grid.dat", dir);
    FILE *f = fopen(path, "r");
    if (!f) return -1;
    int n = 0;
    while (fgets(line, sizeof line, f)) {
        line[strcspn(line, "\n")] = '\0';
        if (strncmp(line, "# baseline ", 11) == 0) ex_string(e, "baseline", line + 11);
        if (strncmp(line, "# seeds ", 8) == 0) ex_number(e, "seeds", atoi(line + 8));
        if (strncmp(line, "# policy ", 9) != 0) continue;
        snprintf(var, sizeof var, "label%d", ++n);
        ex_string(e, var, line + 9);
    }
    fclose(f);
    return n;
}

int plots_sweep(const char *dir, BwError *err)
{
    static Expr e;
    memset(&e, 0, sizeof e);
    ex_string(&e, "dir", dir);
    int n = grid_policies(dir, &e);
    if (n < 0) return bw_fail(err, BW_ERUNTIME, "plots: cannot read %s/speedup_grid.dat", dir);
    if (n == 0)
        return bw_fail(err, BW_ERUNTIME,
                       "plots: %s/speedup_grid.dat has no policy but the baseline: no heatmap",
                       dir);
    ex_number(&e, "n", n);
    return run_script("sweep.gp", &e, dir, err);
}

int plots_run(const char *dir, double target, BwError *err)
{
    static Expr e;
    memset(&e, 0, sizeof e);
    char epochs[4096];
    snprintf(epochs, sizeof epochs, "%s/epochs.csv", dir);
    struct stat sb;
    ex_string(&e, "dir", dir);
    ex_number(&e, "target", target > 0 ? target : 0.0);
    ex_number(&e, "has_epochs", stat(epochs, &sb) == 0 && sb.st_size > 0);
    ex_accuracy_note(&e, dir, NULL);
    ex_bytes_columns(&e, dir, NULL, 1);
    return run_script("run.gp", &e, dir, err);
}

/* The jobs of dir/cluster.json (names, starts, whether they also ran alone) and its busiest
 * links' names, as gnuplot assignments. */
static int cluster_vars(const char *dir, Expr *e, BwError *err)
{
    char path[4096], var[64];
    snprintf(path, sizeof path, "%s/cluster.json", dir);
    json_error_t je;
    json_t *root = json_load_file(path, 0, &je);
    const json_t *jobs = json_object_get(root, "jobs"), *links = json_object_get(root, "links");
    if (!root || !json_is_array(jobs) || json_array_size(jobs) == 0) {
        json_decref(root);
        return bw_fail(err, BW_EUSAGE, "plot: %s: not a bellows cluster file (%s)", path,
                       root ? "no jobs" : je.text);
    }
    size_t n = json_array_size(jobs), nl = json_array_size(links);
    for (size_t i = 0; i < n; i++) {
        const json_t *job = json_array_get(jobs, i);
        const char *name = json_string_value(json_object_get(job, "name"));
        snprintf(var, sizeof var, "job%zu", i + 1);
        ex_string(e, var, name ? name : "");
        snprintf(var, sizeof var, "start%zu", i + 1);
        ex_number(e, var, json_number_value(json_object_get(job, "start_s")));
    }
    for (size_t i = 0; i < nl; i++) {
        const char *name = json_string_value(json_object_get(json_array_get(links, i), "link"));
        snprintf(var, sizeof var, "link%zu", i + 1);
        ex_string(e, var, name ? name : "");
    }
    ex_number(e, "n", (double)n);
    ex_number(e, "nl", (double)nl);
    ex_number(e, "alone", json_is_true(json_object_get(root, "alone")));
    json_decref(root);
    return BW_OK;
}

int plots_cluster(const char *dir, BwError *err)
{
    static Expr e;
    memset(&e, 0, sizeof e);
    ex_string(&e, "dir", dir);
    int rc = cluster_vars(dir, &e, err);
    return rc ? rc : run_script("cluster.gp", &e, dir, err);
}
