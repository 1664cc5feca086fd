/* bench_policy.c: wall time of one policy step (policy_step, observe and decide, as the driver
 * calls it at every step's rendezvous, then policy_describe) for built-in policies beside their
 * Python twins (the .py files of policies/examples/) and a minimal Python policy, on synthetic
 * observations of a model of N_LAYERS layers (matrices and vectors alternating, as real models
 * have them): norms that change every step, epochs of 50 steps with their epoch norms. Every
 * candidate is created once and stepped in blocks of STEPS, interleaved over ROUNDS rounds in
 * one process; medians of the per-step time, and each Python policy's time over its C twin's.
 *   bench_policy EXAMPLES_DIR [N_LAYERS] [STEPS] [ROUNDS]
 * (defaults 4 2000 5); tests/perf/run_python_policy.sh runs it for 4, 62 and 161 layers (the
 * mlp, ResNet-18, ResNet-50). */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "policy.h"
#include "wallclock.h"

typedef struct {
    const char *spec; /* a built-in, or a Python file's name and options */
    const char *dir;  /* the Python file's folder: "examples" (EXAMPLES_DIR) or "tmp"; NULL: C */
    const char *twin; /* the C candidate it is compared with (NULL: none) */
} Candidate;

static const Candidate CANDIDATES[] = {
    {"static:level=2", NULL, NULL},
    {"static.py", "tmp", "static:level=2"},
    {"accordion", NULL, NULL},
    {"accordion.py", "examples", "accordion"},
    {"accordion:mode=batch", NULL, NULL},
    {"accordion.py:mode=batch", "examples", "accordion:mode=batch"},
};
enum { NC = sizeof CANDIDATES / sizeof *CANDIDATES, MAX_ROUNDS = 64, EPOCH_STEPS = 50 };

/* The smallest Python policy, static:level=2's rule: the binding's own cost per step. */
static const char STATIC_PY[] = "import bellows_policy as bp\n"
                                "\n"
                                "class Static(bp.Policy):\n"
                                "    name = 'static'\n"
                                "    help = 'one level for every matrix'\n"
                                "\n"
                                "    def decide(self, obs, decision):\n"
                                "        for l, layer in enumerate(self.ctx.layers):\n"
                                "            if layer.ndim == 2:\n"
                                "                decision.level[l] = 2\n"
                                "\n"
                                "    def describe(self):\n"
                                "        return 'level=2'\n";

static PolicyContext context(PolicyLayer *layers, int n)
{
    PolicyContext c;
    memset(&c, 0, sizeof c);
    for (int l = 0; l < n; l++) {
        snprintf(layers[l].name, sizeof layers[l].name, "layer%d.%s", l / 2, l % 2 ? "b" : "w");
        layers[l].ndim = l % 2 ? 1 : 2;
        layers[l].rows = 64;
        layers[l].cols = l % 2 ? 1 : 64;
    }
    c.n_layers = n;
    c.layers = layers;
    c.workers = 8, c.epochs = 1000, c.batch = 512, c.steps_per_epoch = EPOCH_STEPS, c.lr0 = 0.1;
    snprintf(c.compressor, sizeof c.compressor, "powersgd");
    snprintf(c.compressor_spec, sizeof c.compressor_spec, "powersgd:ef=1,rank_change=warm");
    c.compressor_level = 2;
    c.bandwidth_Bps = 1.25e9, c.latency_s = 5e-6, c.gpus_per_node = 1, c.nodes = 8;
    c.lr_known = 1, c.lr_peak_scale = 1;
    return c;
}

/* Steps p from step t0 for `steps` steps; returns wall seconds per step. */
static double run_block(Policy *p, int n, long t0, int steps, double *norms, double *epoch,
                        double *level)
{
    double w0 = wallclock_s();
    for (long t = t0; t < t0 + steps; t++) {
        for (int l = 0; l < n; l++) {
            norms[l] = 1.0 + 0.5 * sin(0.01 * (double)t + l);
            epoch[l] = 1.0 + 0.5 * cos(0.02 * (double)(t / EPOCH_STEPS) + l);
        }
        int end = (t + 1) % EPOCH_STEPS == 0;
        PolicyObs obs = {.step = t,
                         .epoch = (int)(t / EPOCH_STEPS),
                         .epoch_start = t % EPOCH_STEPS == 0,
                         .epoch_end = end,
                         .lr = 0.1,
                         .loss = 1.0 / (1.0 + 0.001 * (double)t),
                         .grad_norm_rank0 = norms,
                         .grad_norm_mean = norms,
                         .epoch_norm_rank0 = end ? epoch : NULL,
                         .epoch_norm_mean = end ? epoch : NULL,
                         .have = BELLOWS_HAS_GRAD_NORMS | BELLOWS_HAS_RANK0_NORMS |
                                 (end ? BELLOWS_HAS_EPOCH_NORMS : 0u)};
        PolicyDecision d = {.level = level};
        BwError err;
        char state[64];
        if (policy_step(p, &obs, &d, &err) != BW_OK) {
            fprintf(stderr, "bench_policy: %s\n", err.msg);
            exit(1);
        }
        policy_describe(p, state, sizeof state);
    }
    return (wallclock_s() - w0) / steps;
}

static int cmp_double(const void *a, const void *b)
{
    double x = *(const double *)a, y = *(const double *)b;
    return (x > y) - (x < y);
}

static int index_of(const char *spec)
{
    for (int i = 0; i < NC; i++)
        if (strcmp(CANDIDATES[i].spec, spec) == 0) return i;
    return -1;
}

int main(int argc, char **argv)
{
    if (argc < 2) {
        fprintf(stderr, "usage: bench_policy EXAMPLES_DIR [N_LAYERS] [STEPS] [ROUNDS]\n");
        return 2;
    }
    const char *dir = argv[1];
    int n = argc > 2 ? atoi(argv[2]) : 4, steps = argc > 3 ? atoi(argv[3]) : 2000;
    int rounds = argc > 4 ? atoi(argv[4]) : 5;
    if (n < 1 || steps < 1 || rounds < 1 || rounds > MAX_ROUNDS) return 2;
    char tmpdir[] = "/tmp/bench_policy.XXXXXX", static_py[64];
    if (!mkdtemp(tmpdir)) return 1;
    snprintf(static_py, sizeof static_py, "%s/static.py", tmpdir);
    FILE *f = fopen(static_py, "w");
    if (!f || fputs(STATIC_PY, f) < 0 || fclose(f) != 0) return 1;

    PolicyLayer *layers = calloc((size_t)n, sizeof *layers);
    double *norms = calloc((size_t)n, sizeof *norms), *epoch = calloc((size_t)n, sizeof *epoch);
    double *level = calloc((size_t)n, sizeof *level);
    PolicyContext ctx = context(layers, n);
    Policy *p[NC];
    for (int i = 0; i < NC; i++) {
        char spec[512];
        const Candidate *c = &CANDIDATES[i];
        if (c->dir)
            snprintf(spec, sizeof spec, "%s/%s", strcmp(c->dir, "tmp") ? dir : tmpdir, c->spec);
        else
            snprintf(spec, sizeof spec, "%s", c->spec);
        BwError err;
        if (policy_create(spec, "--policy", &ctx, &p[i], &err) != BW_OK) {
            fprintf(stderr, "bench_policy: %s\n", err.msg);
            return 1;
        }
    }
    static double t[NC][MAX_ROUNDS];
    long t0 = 0;
    run_block(p[0], n, 0, 10, norms, epoch, level); /* warm-up */
    for (int r = 0; r < rounds; r++, t0 += steps)
        for (int i = 0; i < NC; i++) t[i][r] = run_block(p[i], n, t0, steps, norms, epoch, level);
    printf("# %d layers, %d steps per block, %d rounds, medians; wall time per step "
           "(observe + decide + describe)\n",
           n, steps, rounds);
    printf("%-26s %12s %12s\n", "policy", "us/step", "x C twin");
    double med[NC];
    for (int i = 0; i < NC; i++) {
        qsort(t[i], (size_t)rounds, sizeof(double), cmp_double);
        med[i] = t[i][rounds / 2];
        int k = CANDIDATES[i].twin ? index_of(CANDIDATES[i].twin) : -1;
        printf("%-26s %12.2f", CANDIDATES[i].spec, med[i] * 1e6);
        if (k >= 0) printf(" %11.1fx", med[i] / med[k]);
        printf("\n");
    }
    for (int i = 0; i < NC; i++) policy_free(p[i]);
    remove(static_py);
    remove(tmpdir);
    free(layers);
    free(norms);
    free(epoch);
    free(level);
    return 0;
}
