/* engine.c: SimGrid initialisation and platform loading (see engine.h). SimGrid 3.32's C API
 * cannot build a platform in memory, hence the temporary XML file. */
#include "engine.h"
#include "xalloc.h"
#include "infile.h"

#include <assert.h>
#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/link.h>
#include <xbt/dynar.h>

static int initialised;

int engine_init(int argc, char **argv, const char *network_model, BwError *err)
{
    if (initialised) return BW_OK;
    int exact = strcmp(network_model, "exact") == 0;
    if (!exact && strcmp(network_model, "tcp") != 0)
        return bw_fail(err, BW_EUSAGE, "--network-model: expected exact or tcp, got '%s'",
                       network_model);
    enum { MAX_ARGS = 64 };
    static char *args[MAX_ARGS + 8]; /* static: SimGrid may keep its argv for the process */
    int n = 0;
    args[n++] = "bellows";
    args[n++] = "--log=root.thres:critical";
    if (exact) {
        args[n++] = "--cfg=network/model:CM02";
        args[n++] = "--cfg=network/crosstraffic:0";
        args[n++] = "--cfg=network/TCP-gamma:0";
    }
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "--cfg=", 6) != 0 && strncmp(argv[i], "--log=", 6) != 0)
            return bw_fail(err, BW_EUSAGE, "'%s': only --cfg= and --log= go to SimGrid", argv[i]);
        if (n >= MAX_ARGS) return bw_fail(err, BW_EUSAGE, "too many --cfg/--log options");
        args[n++] = argv[i];
    }
    args[n] = NULL;
    simgrid_init(&n, args);
    initialised = 1;
    return BW_OK;
}

static sg_host_t *rank_hosts; /* [n_rank_hosts]: the loaded cluster's, in rank order */
static int n_rank_hosts;

/* The host of rank r: the loaded cluster's r-th, or its gpus[r]-th when gpus is given. */
static sg_host_t host_of(const int *gpus, int r)
{
    return rank_hosts[gpus ? gpus[r] : r];
}

/* The platform's routes between ring neighbours, as one latency and bandwidth at their worst. */
static void measure_user_routes(Cluster *c, const int *gpus)
{
    double lat = 0, bw = INFINITY, bw_max = 0;
    for (int r = 0; r < c->workers && c->workers > 1; r++) {
        sg_host_t a = host_of(gpus, r), b = host_of(gpus, (r + 1) % c->workers);
        double l = sg_host_get_route_latency(a, b), w = sg_host_get_route_bandwidth(a, b);
        if (l > lat) lat = l;
        if (w < bw) bw = w;
        if (w > bw_max) bw_max = w;
    }
    c->latency_s = lat / 2;
    /* the links' own rates: scale_links reached only a share of them */
    c->bandwidth_Bps = isfinite(bw) ? bw / cluster_link_share(c) : 1e30;
    c->route_bandwidth_max_Bps = isfinite(bw) ? bw_max / cluster_link_share(c) : 1e30;
    c->gpu_flops = sg_host_get_speed(host_of(gpus, 0));
    c->gpu_flops_min = c->gpu_flops_max = c->gpu_flops;
    for (int r = 1; r < c->workers; r++) {
        double s = sg_host_get_speed(host_of(gpus, r));
        c->gpu_flops_min = s < c->gpu_flops_min ? s : c->gpu_flops_min;
        c->gpu_flops_max = s > c->gpu_flops_max ? s : c->gpu_flops_max;
    }
}

/* A --platform file's every link at the collective library's share of its bandwidth. */
static void scale_links(const Cluster *c)
{
    const double share = cluster_link_share(c);
    if (share == 1.0) return;
    sg_link_t *links = sg_link_list();
    for (size_t i = 0; i < sg_link_count(); i++)
        sg_link_set_bandwidth(links[i], sg_link_get_bandwidth(links[i]) * share);
    free(links);
}

int engine_load_cluster(Cluster *c, BwError *err)
{
    char path[4096];
    if (c->platform_file) {
        simgrid_load_platform(c->platform_file);
        scale_links(c);
    } else {
        int rc = cluster_write_xml_file(c, path, sizeof path, err);
        if (rc) return rc;
        simgrid_load_platform(path);
        unlink(path);
        const int hosts = c->workers + (c->ps_own_hosts ? c->ps_servers : 0);
        if (sg_host_count() != (size_t)hosts)
            return bw_fail(err, BW_ERUNTIME, "platform has %zu hosts, expected %d", sg_host_count(),
                           hosts);
    }
    free(rank_hosts);
    rank_hosts = bw_xmalloc(sizeof *rank_hosts * (size_t)c->workers, "engine.c: rank_hosts");
    if (!rank_hosts) return bw_fail(err, BW_ERUNTIME, "out of memory");
    for (int r = 0; r < c->workers; r++) {
        char name[32];
        snprintf(name, sizeof name, "gpu%d", r);
        rank_hosts[r] = sg_host_by_name(c->platform_file ? c->hosts[r] : name);
        if (!rank_hosts[r])
            return bw_fail(err, BW_EUSAGE, "--platform %s: no host '%s'",
                           c->platform_file ? c->platform_file : "(generated)",
                           c->platform_file ? c->hosts[r] : name);
    }
    if (c->platform_file) {
        /* SimGrid builds a file's Dijkstra or Floyd route tables when the simulation starts:
         * an empty run seals the platform (the actors come later) */
        simgrid_run();
        measure_user_routes(c, NULL);
    }
    n_rank_hosts = c->workers;
    return BW_OK;
}

sg_host_t engine_host(int rank)
{
    assert(rank >= 0 && rank < n_rank_hosts);
    return rank_hosts[rank];
}

void engine_measure_job(Cluster *job, const int *gpus)
{
    for (int r = 0; r < job->workers; r++) assert(gpus[r] >= 0 && gpus[r] < n_rank_hosts);
    if (job->platform_file) measure_user_routes(job, gpus);
}

/* Natural order: digit runs compare as numbers, so gpu2 < gpu10. */
static int natural_cmp(const void *pa, const void *pb)
{
    const char *a = *(const char *const *)pa, *b = *(const char *const *)pb;
    while (*a && *b) {
        if (isdigit((unsigned char)*a) && isdigit((unsigned char)*b)) {
            while (*a == '0') a++;
            while (*b == '0') b++;
            size_t la = strspn(a, "0123456789"), lb = strspn(b, "0123456789");
            if (la != lb) return la < lb ? -1 : 1;
            int d = strncmp(a, b, la);
            if (d) return d;
            a += la;
            b += lb;
        } else {
            if (*a != *b) return (unsigned char)*a < (unsigned char)*b ? -1 : 1;
            a++;
            b++;
        }
    }
    return (*a != 0) - (*b != 0);
}

static size_t read_all(int fd, char **buf)
{
    size_t cap = 4096, len = 0;
    *buf = bw_xmalloc(cap, "engine.c: buf");
    for (;;) {
        if (len + 1 == cap) *buf = bw_xrealloc(*buf, cap *= 2, "engine.c: buf");
        ssize_t got = read(fd, *buf + len, cap - len - 1);
        if (got <= 0) break;
        len += (size_t)got;
    }
    (*buf)[len] = '\0';
    return len;
}

/* What SimGrid said was wrong: its first CRITICAL message (without the location prefix), or
 * else its last meaningful line. */
static const char *simgrid_complaint(char *text)
{
    static const char *const marks[] = {"CRITICAL] ", "ERROR] "};
    for (int k = 0; k < 2; k++) {
        const char *at = strstr(text, marks[k]);
        if (at) {
            char *msg = (char *)at + strlen(marks[k]);
            msg[strcspn(msg, "\n")] = '\0';
            return msg;
        }
    }
    const char *last = "";
    for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n"))
        if (strspn(line, " \t") < strlen(line) && !strstr(line, "Backtrace") &&
            strcmp(line, "Aborted") != 0 && !strstr(line, "->"))
            last = line;
    return *last ? last : "(no message)";
}

/* The --cfg= options bellows vouches for: SimGrid's TCP model's own parameters (which change
 * simulated times as that model means them to, so only with --network-model tcp and messages
 * simulated one by one: the exact model fixes them, the analytic collectives ignore them), and
 * the actors' context factory (which changes no result). A choice list, or a numeric range. */
static const struct {
    const char *name, *choices;
    double min, max;
    int tcp; /* needs --network-model tcp and --collectives transfer */
} VOUCHED[] = {
    {"network/TCP-gamma", NULL, 0, 1e12, 1},
    {"network/crosstraffic", "0|1|yes|no", 0, 0, 1},
    {"network/latency-factor", NULL, 0.01, 100, 1},
    {"network/bandwidth-factor", NULL, 0.01, 100, 1},
    {"network/weight-S", NULL, 0, 1e9, 1},
    {"contexts/factory", "thread|raw|ucontext|boost", 0, 0, 0},
};
#define N_VOUCHED ((int)(sizeof VOUCHED / sizeof *VOUCHED))

void engine_vouched_options(char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int k = 0; k < N_VOUCHED && used < n; k++)
        used += (size_t)snprintf(buf + used, n - used, "%s%s", k ? ", " : "", VOUCHED[k].name);
}

/* Whether value is one of choices ("a|b|c") or a number in [min, max]. */
static int vouched_value(int k, const char *value)
{
    if (VOUCHED[k].choices) {
        size_t len = strlen(value);
        for (const char *p = VOUCHED[k].choices; *p;) {
            size_t m = strcspn(p, "|");
            if (m == len && len && strncmp(p, value, m) == 0) return 1;
            p += m + (p[m] == '|');
        }
        return 0;
    }
    char *end;
    double x = strtod(value, &end);
    return end != value && !*end && isfinite(x) && x >= VOUCHED[k].min && x <= VOUCHED[k].max;
}

int engine_check_cfg(int argc, char **argv, const char *network_model, int analytic, BwError *err)
{
    char names[256];
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "--cfg=", 6) != 0) continue;
        const char *opt = argv[i] + 6, *colon = strchr(opt, ':');
        size_t len = colon ? (size_t)(colon - opt) : strlen(opt);
        int k = 0;
        while (k < N_VOUCHED &&
               !(strlen(VOUCHED[k].name) == len && !strncmp(VOUCHED[k].name, opt, len)))
            k++;
        engine_vouched_options(names, sizeof names);
        if (k == N_VOUCHED)
            return bw_fail(err, BW_EUSAGE,
                           "%s: not an option bellows vouches for (its results may be wrong or it "
                           "may crash SimGrid); the options it takes: %s",
                           argv[i], names);
        if (!colon || !vouched_value(k, colon + 1)) {
            if (VOUCHED[k].choices)
                return bw_fail(err, BW_EUSAGE, "%s: expected %s:%s", argv[i], VOUCHED[k].name,
                               VOUCHED[k].choices);
            return bw_fail(err, BW_EUSAGE, "%s: expected %s:X with X a number in [%g, %g]", argv[i],
                           VOUCHED[k].name, VOUCHED[k].min, VOUCHED[k].max);
        }
        if (VOUCHED[k].tcp && (strcmp(network_model, "tcp") != 0 || analytic))
            return bw_fail(err, BW_EUSAGE,
                           "%s: tunes SimGrid's TCP model, which only --network-model tcp with "
                           "--collectives transfer simulates (the exact model fixes it; the "
                           "analytic collectives price messages without it)",
                           argv[i]);
    }
    return BW_OK;
}

#define MAX_PROBE_ARGS 64

int engine_check_options(int argc, char **argv, const char *network_model, BwError *err)
{
    if (argc == 0) return BW_OK;
    int errp[2];
    if (pipe(errp)) return bw_fail(err, BW_ERUNTIME, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return bw_fail(err, BW_ERUNTIME, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(errp[0]);
        dup2(errp[1], STDERR_FILENO);
        BwError e;
        Cluster c = cluster_default();
        c.workers = 1;
        char *args[MAX_PROBE_ARGS + 2];
        int n = 0;
        args[n++] = "--log=root.thres:error";
        for (int i = 0; i < argc && i < MAX_PROBE_ARGS; i++) args[n++] = argv[i];
        args[n] = NULL;
        if (engine_init(n, args, network_model, &e) || cluster_resolve(&c, &e) ||
            engine_load_cluster(&c, &e))
            _exit(3);
        _exit(0);
    }
    close(errp[1]);
    char *errtext;
    read_all(errp[0], &errtext);
    close(errp[0]);
    int status;
    waitpid(pid, &status, 0);
    int rc = BW_OK;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        char opts[256] = "";
        for (int i = 0, used = 0; i < argc && used < (int)sizeof opts; i++)
            used +=
                snprintf(opts + used, sizeof opts - (size_t)used, "%s%s", i ? " " : "", argv[i]);
        rc = bw_fail(err, BW_EUSAGE, "%s: SimGrid refused it: %.300s", opts,
                     simgrid_complaint(errtext));
    }
    free(errtext);
    return rc;
}

int engine_probe_platform(const char *path, char ***names, int *n, BwError *err)
{
    *names = NULL;
    *n = 0;
    int rc = infile_check("--platform", path, err);
    if (rc) return rc;
    int out[2], errp[2];
    if (pipe(out) || pipe(errp)) return bw_fail(err, BW_ERUNTIME, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return bw_fail(err, BW_ERUNTIME, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(out[0]);
        close(errp[0]);
        dup2(errp[1], STDERR_FILENO);
        BwError e;
        char *loud[] = {"--log=root.thres:error", NULL}; /* parse errors are ERROR messages */
        if (engine_init(1, loud, "exact", &e)) _exit(3);
        simgrid_load_platform(path); /* aborts on a bad file */
        size_t count = sg_host_count();
        sg_host_t *hosts = sg_host_list();
        FILE *f = fdopen(out[1], "w");
        for (size_t i = 0; i < count; i++) fprintf(f, "%s\n", sg_host_get_name(hosts[i]));
        fclose(f);
        _exit(0);
    }
    close(out[1]);
    close(errp[1]);
    char *text, *errtext;
    read_all(out[0], &text);
    read_all(errp[0], &errtext);
    close(out[0]);
    close(errp[0]);
    int status;
    waitpid(pid, &status, 0);
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        rc = bw_fail(err, BW_EUSAGE, "--platform %s: SimGrid cannot load it: %.300s", path,
                     simgrid_complaint(errtext));
    } else {
        int cap = 16;
        char **list = bw_xmalloc(sizeof *list * (size_t)cap, "engine.c: list");
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            if (*n == cap)
                list = bw_xrealloc(list, sizeof *list * (size_t)(cap *= 2), "engine.c: list");
            list[(*n)++] = bw_xstrdup(line, "engine.c: list[(*n)++]");
        }
        qsort(list, (size_t)*n, sizeof *list, natural_cmp);
        *names = list;
        if (*n == 0) rc = bw_fail(err, BW_EUSAGE, "--platform %s: has no hosts", path);
    }
    free(text);
    free(errtext);
    return rc;
}

/* The child's report to the parent, one line each, written unbuffered so that the last one
 * survives an abort: "pair I J" before asking SimGrid for the route from rank I to rank J, then
 * at most one problem: "noroute I J", "host I SPEED", "link I J BANDWIDTH LATENCY NAME". */
static void report(int fd, const char *fmt, ...)
{
    char line[512];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n > 0 && write(fd, line, (size_t)n < sizeof line ? (size_t)n : sizeof line - 1) < 0)
        _exit(3);
}

static int speed_ok(double x)
{
    return x >= CLUSTER_MIN_FLOPS && x <= CLUSTER_MAX_FLOPS;
}

/* The route from hosts[i] to hosts[j] (ranks): missing (exit 4), or a link on it whose bandwidth
 * or latency bellows cannot simulate (exit 6). */
static void check_route(int fd, sg_host_t *hosts, int i, int j, xbt_dynar_t links)
{
    report(fd, "pair %d %d\n", i, j);
    xbt_dynar_reset(links);
    sg_host_get_route(hosts[i], hosts[j], links);
    if (xbt_dynar_is_empty(links) && sg_host_get_route_latency(hosts[i], hosts[j]) == 0) {
        report(fd, "noroute %d %d\n", i, j);
        _exit(4);
    }
    unsigned k;
    sg_link_t l;
    xbt_dynar_foreach(links, k, l)
    {
        double bw = sg_link_get_bandwidth(l), lat = sg_link_get_latency(l);
        if (!(bw >= CLUSTER_MIN_BANDWIDTH_BPS && bw <= CLUSTER_MAX_BANDWIDTH_BPS) ||
            !(lat >= 0 && lat <= CLUSTER_MAX_LATENCY_S)) {
            report(fd, "link %d %d %.17g %.17g %.200s\n", i, j, bw, lat, sg_link_get_name(l));
            _exit(6);
        }
    }
}

/* In the child: every rank's host speed (exit 5 on a bad one), then the routes the collectives
 * may pair: every ordered pair of up to 64 hosts; beyond, each host and those 1, 2, 4, 8, ...
 * ranks away in either direction (the partners of the ring, halving-doubling and binomial-tree
 * algorithms). SimGrid gives an empty route, not an error, where a zone has none. */
static void check_hosts_and_routes(int fd, sg_host_t *hosts, int n)
{
    for (int i = 0; i < n; i++)
        if (!speed_ok(sg_host_get_speed(hosts[i]))) {
            report(fd, "host %d %.17g\n", i, sg_host_get_speed(hosts[i]));
            _exit(5);
        }
    xbt_dynar_t links = xbt_dynar_new(sizeof(sg_link_t), NULL);
    for (int i = 0; i < n; i++)
        for (int d = 1; d < n; d = n <= 64 ? d + 1 : 2 * d)
            for (int dir = 0; dir < (n <= 64 ? 1 : 2); dir++)
                check_route(fd, hosts, i, dir ? (i + n - d) % n : (i + d) % n, links);
    xbt_dynar_free(&links);
}

/* The last line the child reported, and the two ranks or the rank it names. */
static const char *last_report(char *text)
{
    size_t len = strlen(text);
    while (len && text[len - 1] == '\n') text[--len] = '\0';
    char *nl = strrchr(text, '\n');
    return nl ? nl + 1 : text;
}

/* The parent's one line for what the child found. */
static int platform_problem(const char *path, char *const *names, int n, int status, char *text,
                            char *errtext, BwError *err)
{
    const char *last = last_report(text);
    int i = -1, j = -1;
    double bw = 0, lat = 0, speed = 0;
    char link[256] = "";
    int code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
    if (code == 4 && sscanf(last, "noroute %d %d", &i, &j) == 2 && i >= 0 && i < n && j >= 0 &&
        j < n)
        return bw_fail(err, BW_EUSAGE,
                       "--platform %s: no route from host '%s' to host '%s' (ranks %d and %d)",
                       path, names[i], names[j], i, j);
    if (code == 5 && sscanf(last, "host %d %lf", &i, &speed) == 2 && i >= 0 && i < n)
        return bw_fail(err, BW_EUSAGE,
                       "--platform %s: host '%s' (rank %d) has speed %g flop/s; expected %g to %g",
                       path, names[i], i, speed, CLUSTER_MIN_FLOPS, CLUSTER_MAX_FLOPS);
    if (code == 6 && sscanf(last, "link %d %d %lf %lf %255s", &i, &j, &bw, &lat, link) == 5 &&
        i >= 0 && i < n && j >= 0 && j < n)
        return bw_fail(err, BW_EUSAGE,
                       "--platform %s: link '%s' (on the route from host '%s' to host '%s') has "
                       "bandwidth %g bytes/s and latency %g s; expected a bandwidth of %g to %g "
                       "bytes/s and a latency of 0 to %g s",
                       path, link, names[i], names[j], bw, lat, CLUSTER_MIN_BANDWIDTH_BPS,
                       CLUSTER_MAX_BANDWIDTH_BPS, CLUSTER_MAX_LATENCY_S);
    if (sscanf(last, "pair %d %d", &i, &j) == 2 && i >= 0 && i < n && j >= 0 && j < n)
        return bw_fail(err, BW_EUSAGE,
                       "--platform %s: SimGrid failed on the route from host '%s' to host '%s' "
                       "(ranks %d and %d; zones without a route between them?): %.200s",
                       path, names[i], names[j], i, j, simgrid_complaint(errtext));
    return bw_fail(err, BW_EUSAGE, "--platform %s: SimGrid failed checking it: %.300s", path,
                   simgrid_complaint(errtext));
}

int engine_check_routes(const char *path, char *const *names, int n, BwError *err)
{
    int out[2], errp[2];
    if (pipe(out) || pipe(errp)) return bw_fail(err, BW_ERUNTIME, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return bw_fail(err, BW_ERUNTIME, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(out[0]);
        close(errp[0]);
        dup2(errp[1], STDERR_FILENO); /* the parent says what was wrong, in one line */
        BwError e;
        char *loud[] = {"--log=root.thres:critical", NULL};
        if (engine_init(1, loud, "exact", &e)) _exit(3);
        simgrid_load_platform(path);
        sg_host_t *hosts = bw_xmalloc(sizeof *hosts * (size_t)n, "engine.c: hosts");
        if (!hosts) _exit(3);
        for (int i = 0; i < n; i++)
            if (!(hosts[i] = sg_host_by_name(names[i]))) _exit(3);
        simgrid_run(); /* seals the platform: Dijkstra and Floyd tables are built then */
        check_hosts_and_routes(out[1], hosts, n);
        _exit(0);
    }
    close(out[1]);
    close(errp[1]);
    char *text, *errtext;
    read_all(out[0], &text);
    read_all(errp[0], &errtext);
    close(out[0]);
    close(errp[0]);
    int status;
    waitpid(pid, &status, 0);
    int rc = BW_OK;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        rc = platform_problem(path, names, n, status, text, errtext, err);
    free(text);
    free(errtext);
    return rc;
}
