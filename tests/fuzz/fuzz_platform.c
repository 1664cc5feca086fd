/* fuzz_platform.c: libFuzzer harness for user platform files (--platform; sim/net/engine.c).
 * Each input is written to a scratch file and checked as `bellows run --platform FILE` checks
 * it, before anything is simulated: engine_probe_platform (SimGrid loads it in a child process:
 * a file it cannot read is refused) and engine_check_routes (every rank's host speed, and each
 * link on the routes between ranks, in bellows' ranges; a route between every two ranks). The
 * property that matters: a platform both accept is one SimGrid simulates without crashing or
 * hanging and with finite times. So an accepted file is then loaded in a child process as a run
 * loads it (engine_load_cluster) and a ring of messages and computations runs over its ranks;
 * a child that aborts, dies, hangs (a 20 s alarm) or ends at a time that is not finite is a
 * finding (abort here). A refusal must be one line naming --platform. SimGrid allows one
 * engine per process, hence every load in a child. Built and run by tests/fuzz/run.sh. */
#include <math.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/comm.h>
#include <simgrid/engine.h>
#include <simgrid/host.h>
#include <simgrid/mailbox.h>

#include "cluster.h"
#include "engine.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static char path[64];
static int P; /* the ranks of the run in the child */

/* Rank r: a computation on its host, then a message to the next rank and one from the last. */
static void ring_actor(int argc, char **argv)
{
    int r = atoi(argv[argc - 1]);
    char next[32], mine[32];
    snprintf(next, sizeof next, "ring%d", (r + 1) % P);
    snprintf(mine, sizeof mine, "ring%d", r);
    sg_actor_execute(1e9);
    static char token;
    sg_comm_t sent = sg_mailbox_put_async(sg_mailbox_by_name(next), &token, 1e6);
    sg_mailbox_get(sg_mailbox_by_name(mine));
    sg_comm_wait(sent);
}

/* In a child: the platform loaded as a run loads it, a ring over its ranks, exit 0 at a finite
 * time. */
static void simulate(char **names, int n)
{
    alarm(20); /* a hang is a finding too */
    BwError err;
    Cluster c = cluster_default();
    c.platform_file = path;
    c.hosts = names;
    c.workers = P = n > 8 ? 8 : n;
    c.topology = TOPO_STAR;
    if (engine_init(0, NULL, "exact", &err) || engine_load_cluster(&c, &err)) _exit(3);
    for (int r = 0; r < P; r++) {
        char arg[16];
        snprintf(arg, sizeof arg, "%d", r);
        char *argv[] = {"ring", arg, NULL};
        sg_actor_t a = sg_actor_init("ring", engine_host(r));
        sg_actor_start(a, ring_actor, 2, argv);
    }
    simgrid_run();
    double t = simgrid_get_clock();
    _exit(isfinite(t) && t > 0 && t <= CLUSTER_MAX_SIM_S ? 0 : 4);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!path[0]) snprintf(path, sizeof path, "/dev/shm/bellows-fuzz-%d.xml", (int)getpid());
    FILE *f = fopen(path, "wb");
    if (!f) return 0;
    fwrite(data, 1, size, f);
    fclose(f);
    char **names = NULL;
    int n = 0;
    BwError err = {{0}};
    int rc = engine_probe_platform(path, &names, &n, &err);
    if (rc == BW_OK && n > 0) rc = engine_check_routes(path, names, n > 8 ? 8 : n, &err);
    if (rc) { /* a refusal: one line, naming the flag */
        if (strchr(err.msg, '\n') || strncmp(err.msg, "--platform", 10) != 0) abort();
    } else if (n > 0) {
        fflush(NULL);
        pid_t pid = fork();
        if (pid == 0) simulate(names, n);
        int st;
        if (pid < 0 || waitpid(pid, &st, 0) != pid) abort();
        if (!WIFEXITED(st) || WEXITSTATUS(st) != 0) {
            fprintf(stderr, "fuzz_platform: an accepted platform %s in the simulation\n",
                    WIFSIGNALED(st) ? "died of a signal" : "failed");
            abort();
        }
    }
    for (int i = 0; i < n; i++) free(names[i]);
    free(names);
    return 0;
}
