/* engine.c: SimGrid initialisation and platform loading (see engine.h). SimGrid 3.32's C API
 * cannot build a platform in memory, hence the temporary XML file. */
#include "engine.h"

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <math.h>
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

static sg_host_t *rank_hosts; /* [workers] */

/* The platform's routes between ring neighbours, as one latency and bandwidth at their worst. */
static void measure_user_routes(Cluster *c)
{
    double lat = 0, bw = INFINITY, bw_max = 0;
    for (int r = 0; r < c->workers && c->workers > 1; r++) {
        sg_host_t a = rank_hosts[r], b = rank_hosts[(r + 1) % c->workers];
        double l = sg_host_get_route_latency(a, b), w = sg_host_get_route_bandwidth(a, b);
        if (l > lat) lat = l;
        if (w < bw) bw = w;
        if (w > bw_max) bw_max = w;
    }
    c->latency_s = lat / 2;
    /* the links' own rates: scale_links reached only a share of them */
    c->bandwidth_Bps = isfinite(bw) ? bw / cluster_link_share(c) : 1e30;
    c->route_bandwidth_max_Bps = isfinite(bw) ? bw_max / cluster_link_share(c) : 1e30;
    c->gpu_flops = sg_host_get_speed(rank_hosts[0]);
    c->gpu_flops_min = c->gpu_flops_max = c->gpu_flops;
    for (int r = 1; r < c->workers; r++) {
        double s = sg_host_get_speed(rank_hosts[r]);
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
        if (sg_host_count() != (size_t)c->workers)
            return bw_fail(err, BW_ERUNTIME, "platform has %zu hosts, expected %d", sg_host_count(),
                           c->workers);
    }
    free(rank_hosts);
    rank_hosts = malloc(sizeof *rank_hosts * (size_t)c->workers);
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
        measure_user_routes(c);
    }
    return BW_OK;
}

sg_host_t engine_host(int rank)
{
    return rank_hosts[rank];
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
    *buf = malloc(cap);
    for (;;) {
        if (len + 1 == cap) *buf = realloc(*buf, cap *= 2);
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
    if (access(path, R_OK) != 0)
        return bw_fail(err, BW_EUSAGE, "--platform %s: %s", path, strerror(errno));
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
    int rc = BW_OK;
    if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) {
        rc = bw_fail(err, BW_EUSAGE, "--platform %s: SimGrid cannot load it: %.300s", path,
                     simgrid_complaint(errtext));
    } else {
        int cap = 16;
        char **list = malloc(sizeof *list * (size_t)cap);
        for (char *line = strtok(text, "\n"); line; line = strtok(NULL, "\n")) {
            if (*n == cap) list = realloc(list, sizeof *list * (size_t)(cap *= 2));
            list[(*n)++] = strdup(line);
        }
        qsort(list, (size_t)*n, sizeof *list, natural_cmp);
        *names = list;
        if (*n == 0) rc = bw_fail(err, BW_EUSAGE, "--platform %s: has no hosts", path);
    }
    free(text);
    free(errtext);
    return rc;
}

/* Whether a route is missing between two of hosts[0..n) that the collectives may pair: every
 * ordered pair of up to 64 hosts; beyond, each host and those 1, 2, 4, 8, ... ranks away in
 * either direction (the partners of the ring, halving-doubling and binomial-tree algorithms).
 * SimGrid gives an empty route, not an error, where the file has none. */
static int missing_route(sg_host_t *hosts, int n, int *from, int *to)
{
    int found = 0;
    xbt_dynar_t links = xbt_dynar_new(sizeof(void *), NULL);
    for (int i = 0; i < n && !found; i++)
        for (int d = 1; d < n && !found; d = n <= 64 ? d + 1 : 2 * d)
            for (int dir = 0; dir < (n <= 64 ? 1 : 2) && !found; dir++) {
                int j = dir ? (i + n - d) % n : (i + d) % n;
                xbt_dynar_reset(links);
                sg_host_get_route(hosts[i], hosts[j], links);
                if (xbt_dynar_is_empty(links) &&
                    sg_host_get_route_latency(hosts[i], hosts[j]) == 0) {
                    *from = i;
                    *to = j;
                    found = 1;
                }
            }
    xbt_dynar_free(&links);
    return found;
}

int engine_check_routes(const char *path, char *const *names, int n, BwError *err)
{
    if (n < 2) return BW_OK;
    int out[2];
    if (pipe(out)) return bw_fail(err, BW_ERUNTIME, "pipe: %s", strerror(errno));
    fflush(NULL);
    pid_t pid = fork();
    if (pid < 0) return bw_fail(err, BW_ERUNTIME, "fork: %s", strerror(errno));
    if (pid == 0) {
        close(out[0]);
        int null = open("/dev/null", O_WRONLY); /* the parent says what was wrong, in one line */
        if (null >= 0) dup2(null, STDERR_FILENO);
        BwError e;
        if (engine_init(0, NULL, "exact", &e)) _exit(3);
        simgrid_load_platform(path);
        sg_host_t *hosts = malloc(sizeof *hosts * (size_t)n);
        if (!hosts) _exit(3);
        for (int i = 0; i < n; i++)
            if (!(hosts[i] = sg_host_by_name(names[i]))) _exit(3);
        simgrid_run(); /* seals the platform: Dijkstra and Floyd tables are built then */
        int from = 0, to = 0;
        if (missing_route(hosts, n, &from, &to)) {
            FILE *f = fdopen(out[1], "w");
            fprintf(f, "%d %d\n", from, to);
            fclose(f);
            _exit(4);
        }
        _exit(0);
    }
    close(out[1]);
    char *text;
    read_all(out[0], &text);
    close(out[0]);
    int status, from = -1, to = -1;
    waitpid(pid, &status, 0);
    int rc = BW_OK;
    if (WIFEXITED(status) && WEXITSTATUS(status) == 4 && sscanf(text, "%d %d", &from, &to) == 2 &&
        from >= 0 && from < n && to >= 0 && to < n)
        rc = bw_fail(err, BW_EUSAGE,
                     "--platform %s: no route from host '%s' to host '%s' (ranks %d and %d)", path,
                     names[from], names[to], from, to);
    else if (!WIFEXITED(status) || WEXITSTATUS(status) != 0)
        rc = bw_fail(err, BW_ERUNTIME, "--platform %s: checking its routes failed", path);
    free(text);
    return rc;
}
