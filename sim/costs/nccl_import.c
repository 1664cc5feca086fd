/* nccl_import.c: `bellows costs import-nccl-tests`: reads the tables nccl-tests prints
 * (NVIDIA/nccl-tests src/util.cu: a "#  size  count  type  redop  root  time  algbw  busbw
 * #wrong  time  algbw  busbw  #wrong" header, older versions without root or redop, then one
 * row per size; "#  Rank N ... on HOST device D" lines name each rank's host; newer versions
 * name the program, "# Collective test starting: all_reduce_perf") and writes a
 * network's "busbw" tables (costs_busbw.c): per log, the out-of-place busbw at each size, for
 * the log's GPUs per node over the NICs per node. Every row is checked as it is read; a bad
 * one is a usage error naming the file and the line, and nothing is written. A log is taken only
 * as what its program measures (all_reduce_perf: the allreduce tables; all_gather_perf and
 * reduce_scatter_perf, the ring's other half at the same bus bandwidth, nccl-tests
 * doc/PERFORMANCE.md: the allgather tables); any other program's, a rooted row's (reduce,
 * broadcast), and a log of one host's ranks on a network between hosts are refused. */
#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "costs_impl.h"
#include "xalloc.h"
#include "nccl_import.h"
#include "outfile.h"

#define MAX_HOSTS 4096
#define MAX_TOK   32

typedef struct {
    const char *path;
    int op;           /* 0 allreduce, 1 allgather (reduce-scatter too); -1 unknown */
    int given, named; /* --collective's op, the program's name's (-1: none) */
    char program[64]; /* the program's name, its line */
    int program_line;
    int root_at;         /* the rows' root column (0-based), 0: none */
    int ranks, hosts;    /* from the "Rank" lines; 0 when there are none */
    int cols, has_redop; /* the header's columns; 0 before it */
    int n_rows;          /* rows kept (busbw > 0) */
    int first_row_line;  /* for errors about the table as a whole */
    double bytes[512], busbw[512];
    int row_at[512]; /* each kept row's line */
    char host[MAX_HOSTS][64];
    int per_host[MAX_HOSTS];
} Log;

static int split(char *line, char **tok)
{
    int n = 0;
    for (char *t = strtok(line, " \t\r\n"); t && n < MAX_TOK; t = strtok(NULL, " \t\r\n"))
        tok[n++] = t;
    return n;
}

static int number(const char *s, double *out)
{
    char *end;
    errno = 0;
    double x = strtod(s, &end);
    if (end == s || *end || errno || !isfinite(x)) return 0;
    *out = x;
    return 1;
}

/* "#  Rank  3 Group 0 Pid 12 on host device 3 [..] name": counts the rank on its host. */
static void rank_line(Log *g, char **tok, int n)
{
    for (int i = 0; i + 1 < n; i++)
        if (strcmp(tok[i], "on") == 0) {
            int h = 0;
            while (h < g->hosts && strcmp(g->host[h], tok[i + 1]) != 0) h++;
            if (h == g->hosts && g->hosts < MAX_HOSTS)
                snprintf(g->host[g->hosts++], sizeof g->host[0], "%s", tok[i + 1]);
            if (h < g->hosts) g->per_host[h]++;
            g->ranks++;
            return;
        }
}

/* The nccl-tests programs a comment names (each whole word ending in "_perf": the "Collective
 * test starting" line, or a command line): the op of the one program a log may have. */
static int program_names(Log *g, const char *raw, int line, BwError *err)
{
    for (const char *p = strstr(raw, "_perf"); p; p = strstr(p + 1, "_perf")) {
        if (isalnum((unsigned char)p[5]) || p[5] == '_') continue;
        const char *b = p;
        while (b > raw && (isalnum((unsigned char)b[-1]) || b[-1] == '_')) b--;
        char word[64];
        snprintf(word, sizeof word, "%.*s", (int)(p + 5 - b), b);
        int op = strcmp(word, "all_reduce_perf") == 0 ? 0
                 : strcmp(word, "all_gather_perf") == 0 || strcmp(word, "reduce_scatter_perf") == 0
                     ? 1
                     : -1;
        if (op < 0)
            return bw_fail(err, BW_EUSAGE,
                           "%s:%d: a %s log: the busbw tables take only all_reduce_perf's (the "
                           "allreduce) and all_gather_perf's or reduce_scatter_perf's (the "
                           "allgather)",
                           g->path, line, word);
        if (g->named >= 0 && strcmp(g->program, word) != 0)
            return bw_fail(err, BW_EUSAGE, "%s:%d: names %s, line %d names %s: one program a log",
                           g->path, line, word, g->program_line, g->program);
        snprintf(g->program, sizeof g->program, "%s", word);
        g->program_line = line;
        g->named = op;
    }
    if (g->given < 0 && g->named >= 0) g->op = g->named;
    return BW_OK;
}

/* A "#" line: the program's name, a rank, or the table's header. */
static int comment_line(Log *g, const char *raw, int line, char **tok, int n, BwError *err)
{
    int i = n > 0 && strcmp(tok[0], "#") == 0 ? 1 : 0;
    if (i < n && strcmp(tok[i], "Rank") == 0) rank_line(g, tok, n);
    if (i < n && strcmp(tok[i], "size") == 0 && i + 2 < n && strcmp(tok[i + 1], "count") == 0) {
        int redop = 0, root = 0;
        for (int k = i; k < n; k++) {
            redop |= strcmp(tok[k], "redop") == 0;
            root |= strcmp(tok[k], "root") == 0;
        }
        g->has_redop = redop;
        g->root_at = root ? 3 + redop : 0;
        g->cols = 3 + redop + root + 8;
    }
    return program_names(g, raw, line, err);
}

static int row_line(Log *g, int line, char **tok, int n, BwError *err)
{
    static const char *const names[] = {"size", "count", "time", "algbw", "busbw"};
    if (n != g->cols)
        return bw_fail(err, BW_EUSAGE,
                       "%s:%d: a table row must have %d columns, as its header says (size, count, "
                       "type,%s time, algbw, busbw, #wrong, out of place and in place), got %d",
                       g->path, line, g->cols, g->cols > 12 ? " redop, root," : " redop,", n);
    const int at[5] = {0, 1, g->cols - 8, g->cols - 7, g->cols - 6};
    double v[5];
    for (int k = 0; k < 5; k++)
        if (!number(tok[at[k]], &v[k]) || v[k] < 0)
            return bw_fail(err, BW_EUSAGE, "%s:%d: column %d (%s) must be a number >= 0, got '%s'",
                           g->path, line, at[k] + 1, names[k], tok[at[k]]);
    if (!(v[0] >= 1) || v[0] != floor(v[0]))
        return bw_fail(err, BW_EUSAGE, "%s:%d: column 1 (size) must be a whole number of bytes",
                       g->path, line);
    if (g->root_at && strcmp(tok[g->root_at], "-1") != 0)
        return bw_fail(err, BW_EUSAGE,
                       "%s:%d: column %d (root) is %s: a rooted collective's row (reduce_perf, "
                       "broadcast_perf); the busbw tables take allreduce and allgather logs",
                       g->path, line, g->root_at + 1, tok[g->root_at]);
    if (g->n_rows > 0 && !(v[0] > g->bytes[g->n_rows - 1]))
        return bw_fail(err, BW_EUSAGE, "%s:%d: sizes must rise from row to row (%s after %.0f)",
                       g->path, line, tok[0], g->bytes[g->n_rows - 1]);
    if (!g->first_row_line) g->first_row_line = line;
    if (v[4] <= 0) return BW_OK; /* busbw printed as 0.00: below its resolution */
    if (g->n_rows == (int)(sizeof g->bytes / sizeof *g->bytes))
        return bw_fail(err, BW_EUSAGE, "%s:%d: more than %d rows", g->path, line, g->n_rows);
    g->row_at[g->n_rows] = line;
    g->bytes[g->n_rows] = v[0];
    g->busbw[g->n_rows++] = v[4];
    return BW_OK;
}

/* Whether a line after the table's header is one of its rows, to be read or refused: one that
 * starts like a number (a size of -1024 is a row, refused), or that has the header's columns
 * with a number for its count ("abc 256 float ..."). Other lines (NCCL's INFO lines between
 * the rows) are not the table's. */
static int table_row(const Log *g, char **tok, int n)
{
    double x;
    const char c = tok[0][0];
    return isdigit((unsigned char)c) || c == '-' || c == '+' || c == '.' ||
           (n == g->cols && number(tok[1], &x));
}

static int read_log(Log *g, BwError *err)
{
    FILE *f = fopen(g->path, "r");
    if (!f) return bw_fail(err, BW_EUSAGE, "%s: cannot open: %s", g->path, strerror(errno));
    char raw[4096], copy[4096], *tok[MAX_TOK];
    int line = 0, rc = BW_OK;
    while (rc == BW_OK && fgets(raw, sizeof raw, f)) {
        line++;
        snprintf(copy, sizeof copy, "%s", raw);
        int n = split(copy, tok);
        if (n == 0) continue;
        if (tok[0][0] == '#')
            rc = comment_line(g, raw, line, tok, n, err);
        else if (g->cols && table_row(g, tok, n))
            rc = row_line(g, line, tok, n, err);
    }
    if (rc == BW_OK && ferror(f)) rc = bw_fail(err, BW_EUSAGE, "%s: read error", g->path);
    fclose(f);
    if (rc == BW_OK && !g->first_row_line)
        rc = bw_fail(err, BW_EUSAGE,
                     "%s:%d: no nccl-tests table (a '#  size  count  type ...' header, then a row "
                     "per size)",
                     g->path, line);
    else if (rc == BW_OK && g->n_rows == 0)
        rc = bw_fail(err, BW_EUSAGE, "%s:%d: every row's busbw is 0", g->path, g->first_row_line);
    return rc;
}

/* What the log measured against the flags: its program against --collective (one of them must
 * say it), its hosts against --transport (a network's table comes from 2 hosts or more; one
 * host's ranks measured its own links), each row's busbw against --link-gbps. */
static int log_checks(const Log *g, const NcclImport *a, BwError *err)
{
    if (g->given >= 0 && g->named >= 0 && g->given != g->named)
        return bw_fail(err, BW_EUSAGE, "%s:%d: the log is %s's, --collective says %s", g->path,
                       g->program_line, g->program, g->given ? "allgather" : "allreduce");
    if (g->op < 0)
        return bw_fail(err, BW_EUSAGE,
                       "%s: no line names the nccl-tests program (\"# Collective test starting: "
                       "all_reduce_perf\", or its command line in a comment): give --collective "
                       "allreduce|allgather",
                       g->path);
    if (g->hosts == 1 && a->net != COST_NET_NVLINK)
        return bw_fail(err, BW_EUSAGE,
                       "%s: its %d ranks are all on host %s: it measured that node's own links, "
                       "not a network between nodes; import it with --transport nvlink, or give "
                       "a log of 2 hosts or more",
                       g->path, g->ranks, g->host[0]);
    for (int i = 0; i < g->n_rows; i++) {
        const double share = g->busbw[i] * 1e9 / a->link_Bps;
        if (!(share >= BUSBW_MIN_SHARE && share <= 1 + 1e-9))
            return bw_fail(err, BW_EUSAGE,
                           "%s:%d: a busbw of %g GB/s is %g of --link-gbps %g (%g GB/s); expected "
                           "%g to 1 of it: give the rate of the NIC the log ran on",
                           g->path, g->row_at[i], g->busbw[i], share, a->link_Bps * 8 / 1e9,
                           a->link_Bps / 1e9, BUSBW_MIN_SHARE);
    }
    return BW_OK;
}

/* The GPUs behind each NIC of the log's nodes. */
static int log_gpus_per_nic(const Log *g, const NcclImport *a, double *out, BwError *err)
{
    int G = a->gpus_per_node;
    if (!G && g->hosts == 0)
        return bw_fail(err, BW_EUSAGE,
                       "%s: no '#  Rank N ... on HOST' lines tell the GPUs per node: give "
                       "--gpus-per-node",
                       g->path);
    if (!G) {
        G = g->per_host[0];
        for (int h = 1; h < g->hosts; h++)
            if (g->per_host[h] != G)
                return bw_fail(err, BW_EUSAGE,
                               "%s: the hosts hold different numbers of ranks (%d on %s, %d on "
                               "%s): give --gpus-per-node",
                               g->path, G, g->host[0], g->per_host[h], g->host[h]);
    }
    if (G < a->nics_per_node || G % a->nics_per_node != 0)
        return bw_fail(err, BW_EUSAGE,
                       "--nics-per-node %d: must divide the log's %d GPUs per node (%s)",
                       a->nics_per_node, G, g->path);
    *out = (double)(G / a->nics_per_node);
    return BW_OK;
}

/* The table {"gpus_per_nic", "points", "source"} of one log: its COSTS_BUSBW_POINTS largest. */
static json_t *log_table(const Log *g, double gpn)
{
    json_t *pts = json_array();
    int from = g->n_rows > COSTS_BUSBW_POINTS ? g->n_rows - COSTS_BUSBW_POINTS : 0;
    for (int i = from; i < g->n_rows; i++)
        json_array_append_new(pts, json_pack("[I, f]", (json_int_t)g->bytes[i], g->busbw[i]));
    char src[512];
    if (g->ranks)
        snprintf(src, sizeof src, "%s: %d ranks on %d hosts, out-of-place busbw", g->path, g->ranks,
                 g->hosts);
    else
        snprintf(src, sizeof src, "%s: out-of-place busbw", g->path);
    return json_pack("{s:I, s:o, s:s}", "gpus_per_nic", (json_int_t)gpn, "points", pts, "source",
                     src);
}

/* Inserts table t (gpus_per_nic gpn) into arr, kept rising; a second one of gpn is an error. */
static int add_table(json_t *arr, json_t *t, double gpn, const char *op, const char *path,
                     BwError *err)
{
    size_t i = 0;
    for (; i < json_array_size(arr); i++) {
        double g = json_number_value(json_object_get(json_array_get(arr, i), "gpus_per_nic"));
        if (g == gpn) {
            json_decref(t);
            return bw_fail(err, BW_EUSAGE, "%s: a second %s log at %g GPUs per NIC", path, op, gpn);
        }
        if (g > gpn) break;
    }
    json_array_insert_new(arr, i, t);
    return BW_OK;
}

/* The network's {"busbw": {...}} from every log. */
static int build_busbw(const NcclImport *a, json_t **out, BwError *err)
{
    json_t *tabs[2] = {json_array(), json_array()};
    int rc = BW_OK;
    for (int i = 0; rc == BW_OK && i < a->n_logs; i++) {
        Log *g = bw_xcalloc(1, sizeof *g, "nccl_import.c: g");
        if (!g) {
            rc = bw_fail(err, BW_ERUNTIME, "out of memory");
            break;
        }
        g->path = a->logs[i];
        g->op = g->given = a->collective;
        g->named = -1;
        double gpn = 0;
        rc = read_log(g, err);
        if (rc == BW_OK) rc = log_checks(g, a, err);
        if (rc == BW_OK) rc = log_gpus_per_nic(g, a, &gpn, err);
        int op = g->op;
        if (rc == BW_OK)
            rc = add_table(tabs[op], log_table(g, gpn), gpn, op ? "allgather" : "allreduce",
                           g->path, err);
        free(g);
    }
    if (rc == BW_OK && json_array_size(tabs[0]) == 0)
        rc = bw_fail(err, BW_EUSAGE,
                     "%s: no all_reduce_perf log: a profile's busbw needs one (with an "
                     "all_gather_perf or reduce_scatter_perf log beside it for allgathers)",
                     a->logs[0]);
    if (rc != BW_OK) {
        json_decref(tabs[0]);
        json_decref(tabs[1]);
        return rc;
    }
    json_t *b = json_pack("{s:f, s:o}", "link_Gbps", a->link_Bps * 8 / 1e9, "allreduce", tabs[0]);
    if (json_array_size(tabs[1]))
        json_object_set_new(b, "allgather", tabs[1]);
    else
        json_decref(tabs[1]);
    json_object_set_new(b, "source",
                        json_string("nccl-tests logs read by bellows costs import-nccl-tests"));
    *out = json_pack("{s:o}", "busbw", b);
    return BW_OK;
}

/* The profile to write: base's JSON with networks.KIND replaced, or the network alone. */
static int build_doc(const NcclImport *a, json_t *net, json_t **out, BwError *err)
{
    const char *kind = costs_net_name(a->net);
    if (!a->base) {
        *out = json_pack("{s:{s:O}}", "networks", kind, net);
        return BW_OK;
    }
    const char *text = NULL;
    size_t len = 0;
    json_error_t jerr;
    json_t *root = costs_builtin_text(a->base, &text, &len)
                       ? json_loadb(text, len, JSON_REJECT_DUPLICATES, &jerr)
                       : json_load_file(a->base, JSON_REJECT_DUPLICATES, &jerr);
    if (!json_is_object(root) || !json_is_object(json_object_get(root, "networks"))) {
        json_decref(root);
        return bw_fail(err, BW_EUSAGE,
                       "--base %s: not a built-in cost profile (bellows costs) nor a profile "
                       "file with \"networks\"",
                       a->base);
    }
    json_object_set(json_object_get(root, "networks"), kind, net);
    if (a->name) json_object_set_new(root, "name", json_string(a->name));
    *out = root;
    return BW_OK;
}

/* Checks the document by parsing it as a profile (with a base) or its network (without). */
static int check_doc(const NcclImport *a, const char *text, json_t *net, BwError *err)
{
    if (a->base) {
        CostProfile *p = NULL;
        int rc = costs_parse(NULL, text, strlen(text), "--out", a->out, &p, err);
        costs_free(p);
        return rc;
    }
    CostNetShare s = {0};
    JsonAt at = {.err = err};
    snprintf(at.where, sizeof at.where, "--out %s: networks: %s: ", a->out, costs_net_name(a->net));
    return costs_parse_busbw(&at, net, &s);
}

static int write_doc(const char *path, const char *text, BwError *err)
{
    char dir[4096];
    snprintf(dir, sizeof dir, "%s", path);
    char *slash = strrchr(dir, '/');
    const char *name = slash ? slash + 1 : path;
    if (slash)
        *slash = '\0';
    else
        snprintf(dir, sizeof dir, ".");
    if (!*name) return bw_fail(err, BW_EUSAGE, "--out %s: expected a file name", path);
    OutFile of = {0};
    int rc = outfile_open(&of, dir, name, err);
    if (rc == BW_OK && fprintf(of.f, "%s\n", text) < 0) {
        outfile_abort(&of);
        return bw_fail(err, BW_ERUNTIME, "--out %s: write failed", path);
    }
    return rc == BW_OK ? outfile_commit(&of, err) : rc;
}

/* --name, as a profile's "name" is checked (costs_json.c), blamed on the flag. */
static int check_name(const NcclImport *a, BwError *err)
{
    if (!a->name) return BW_OK;
    char buf[sizeof((CostProfile *)0)->name];
    JsonAt at = {.err = err};
    snprintf(at.where, sizeof at.where, "--name %s: ", a->name);
    json_t *o = json_pack("{s:s}", "name", a->name);
    int rc = o ? json_at_str(&at, o, "name", 1, buf, sizeof buf)
               : bw_fail(err, BW_EUSAGE, "--name: expected UTF-8 text");
    json_decref(o);
    return rc;
}

int costs_import_nccl_tests(const NcclImport *a, BwError *err)
{
    json_t *net = NULL, *doc = NULL;
    if (a->name && !a->base) /* nothing of the fragment could carry it */
        return bw_fail(err, BW_EUSAGE,
                       "--name %s: names the whole profile written with --base; without --base, "
                       "--out holds the networks fragment alone, which has no name",
                       a->name);
    int rc = check_name(a, err);
    if (rc == BW_OK) rc = build_busbw(a, &net, err);
    if (rc == BW_OK) rc = build_doc(a, net, &doc, err);
    char *text =
        doc ? json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER | JSON_REAL_PRECISION(10))
            : NULL;
    if (rc == BW_OK && !text) rc = bw_fail(err, BW_ERUNTIME, "out of memory");
    if (rc == BW_OK) rc = check_doc(a, text, net, err);
    if (rc == BW_OK) rc = write_doc(a->out, text, err);
    free(text);
    json_decref(doc);
    json_decref(net);
    return rc;
}
