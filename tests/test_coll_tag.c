/* test_coll_tag.c: two communicators in one engine (the jobs of bellows cluster) keep their
 * messages apart when tagged (coll_comm_set_tag), and the wire callback (coll_comm_set_wire)
 * sees each message once, with its ranks and bytes. Job X's rank 0 broadcasts at time 0 and its
 * rank 1 asks only at 1 s, while job Y's rank 1 asks at time 0 and its root sends at 1.5 s: with
 * the same mailbox names, Y's rank 1 would take X's message. */
#include "testutil.h"

#include <sys/mman.h>
#include <sys/wait.h>
#include <unistd.h>

#include <simgrid/actor.h>
#include <simgrid/engine.h>

#include "coll.h"
#include "engine.h"

enum { BYTES = 4096 };

typedef struct {
    unsigned char got[2][2]; /* [job][rank]: the first byte each rank ends with */
    int wired[2];            /* messages the wire callback saw, per job */
    double wired_bytes[2];
} Result;

static Result *RES;
static Comm *COMM[2];
static int JOB_ID[2] = {0, 1};

static void wire(void *arg, int src, int dst, double bytes, double t0, double t1)
{
    const int job = *(const int *)arg;
    assert_true(src == 0 && dst == 1 && t1 >= t0);
    RES->wired[job]++;
    RES->wired_bytes[job] += bytes;
}

/* argv: job, rank */
static void actor(int argc, char **argv)
{
    (void)argc;
    const int job = atoi(argv[1]), rank = atoi(argv[2]);
    unsigned char buf[BYTES];
    memset(buf, rank == 0 ? (job ? 'Y' : 'X') : '?', sizeof buf);
    if (job == 0 && rank == 1) sg_actor_sleep_for(1.0);
    if (job == 1 && rank == 0) sg_actor_sleep_for(1.5);
    coll_broadcast(COMM[job], rank, 0, buf, sizeof buf);
    RES->got[job][rank] = buf[0];
}

/* Two jobs of 2 ranks on a 4-GPU star, tagged or not, in a child process. */
static Result simulate(int tagged)
{
    RES = mmap(NULL, sizeof *RES, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_ANONYMOUS, -1, 0);
    assert_true(RES != MAP_FAILED);
    memset(RES, 0, sizeof *RES);
    fflush(NULL);
    pid_t pid = fork();
    assert_true(pid >= 0);
    if (pid == 0) {
        BwError err;
        Cluster all = cluster_default(), job = cluster_default();
        all.workers = 4;
        job.workers = 2;
        if (cluster_resolve(&all, &err) || cluster_resolve(&job, &err) ||
            engine_init(0, NULL, "exact", &err) || engine_load_cluster(&all, &err))
            _exit(3);
        for (int j = 0; j < 2; j++) {
            COMM[j] = coll_comm_create(&job, COLL_RING, COLL_TRANSFER);
            if (tagged) coll_comm_set_tag(COMM[j], j + 1);
            coll_comm_set_wire(COMM[j], wire, &JOB_ID[j]);
            for (int r = 0; r < 2; r++) {
                char js[8], rs[8];
                snprintf(js, sizeof js, "%d", j);
                snprintf(rs, sizeof rs, "%d", r);
                char *av[] = {"actor", js, rs, NULL};
                sg_actor_create("actor", engine_host(2 * j + r), actor, 3, av);
            }
        }
        simgrid_run();
        _exit(0);
    }
    int st;
    assert_int_equal(waitpid(pid, &st, 0), pid);
    assert_true(WIFEXITED(st) && WEXITSTATUS(st) == 0);
    Result out = *RES;
    munmap(RES, sizeof *RES);
    return out;
}

static void test_tagged_jobs_keep_their_messages(void **state)
{
    (void)state;
    Result r = simulate(1);
    assert_int_equal(r.got[0][1], 'X');
    assert_int_equal(r.got[1][1], 'Y');
    for (int j = 0; j < 2; j++) {
        assert_int_equal(r.wired[j], 1);
        assert_true(r.wired_bytes[j] == BYTES);
    }
}

/* The check above can fail: untagged, Y's rank 1 takes X's message. */
static void test_untagged_jobs_mix_their_messages(void **state)
{
    (void)state;
    Result r = simulate(0);
    assert_int_equal(r.got[1][1], 'X');
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_tagged_jobs_keep_their_messages),
        cmocka_unit_test(test_untagged_jobs_mix_their_messages),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
