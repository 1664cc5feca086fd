/* groups.c: train once, price the rest. Runs whose flags differ only in the price (flag_class.h)
 * and whose workers' gradients add in the same order (driver_sum_order) have the same dynamics
 * when their policy cannot see the price (bellows_policy.h's price_blind): the same steps,
 * losses, norms, decisions and evaluations. Such runs form a group. The group's first run in the
 * sweep's order trains, recording its gradient trace under DIR/traces/ (named after the run and
 * a hash of its command line, so a trace is only ever reused for the command that made it), and
 * every other run of the group is priced: it replays that trace on its own scenario
 * (RunConfig.priced), which writes the live run's files bit for bit at the cost of a pass over
 * the trace. A group whose training did not complete (it failed, diverged or stopped at the
 * target) has its other runs trained, as --train-each would. */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "flag_class.h"
#include "xalloc.h"
#include "policy.h"
#include "sweep_impl.h"

static void group_drop_trace(Group *g)
{
    if (!g->trace) return;
    trace_free(g->trace);
    free(g->trace);
    g->trace = NULL;
}

int sweep_groups_create(Sweep *s, BwError *err)
{
    s->sum_order = bw_xcalloc((size_t)s->n_points, sizeof *s->sum_order, "groups.c: s->sum_order");
    s->price_why = bw_xcalloc((size_t)s->n_points, sizeof *s->price_why, "groups.c: s->price_why");
    s->group_of = bw_xcalloc((size_t)s->n_runs, sizeof *s->group_of, "groups.c: s->group_of");
    s->groups = bw_xcalloc((size_t)s->n_runs, sizeof *s->groups, "groups.c: s->groups");
    s->phase_runs = bw_xmalloc(sizeof *s->phase_runs * 2 * (size_t)s->n_runs,
                               "groups.c: s->phase_runs"); /* a run twice */
    if (!s->sum_order || !s->price_why || !s->group_of || !s->groups || !s->phase_runs)
        return bw_fail(err, BW_ERUNTIME, "out of memory");
    return BW_OK;
}

void sweep_groups_free(Sweep *s)
{
    for (long g = 0; s->groups && g < s->n_groups; g++) group_drop_trace(&s->groups[g]);
    free(s->groups);
    free(s->group_of);
    free(s->sum_order);
    free(s->price_why);
    free(s->phase_runs);
}

void sweep_note_point(Sweep *s, long p, const RunConfig *cfg)
{
    driver_sum_order(cfg, s->sum_order[p], sizeof s->sum_order[p]);
    /* whether a priced run here takes the fast replay: its configuration with a trace */
    static const Trace stand_in;
    RunConfig priced = *cfg;
    priced.replay = &stand_in;
    priced.priced = 1;
    priced.replay_engine = REPLAY_AUTO;
    driver_replay_fast(&priced, s->price_why[p], sizeof s->price_why[p]);
}

/* Point p's dynamics: its values of every swept flag that is not a price, and its sum order. */
static void point_key(const Sweep *s, long p, char *buf, size_t n)
{
    size_t used = (size_t)snprintf(buf, n, "%s", s->sum_order[p]);
    long rest = p;
    for (int a = s->n_axes - 1; a >= 0 && used < n; a--) {
        long v = rest % s->axes[a].n;
        rest /= s->axes[a].n;
        if (flag_class(s->axes[a].name) != FLAG_PRICE)
            used += (size_t)snprintf(buf + used, n - used, "|%ld", v);
    }
}

typedef struct {
    char key[SWEEP_SUM_ORDER + 8 * SWEEP_MAX_AXES];
    long point;
} PointKey;

static int by_key_then_point(const void *a, const void *b)
{
    const PointKey *x = a, *y = b;
    int c = strcmp(x->key, y->key);
    return c ? c : (x->point > y->point) - (x->point < y->point);
}

/* rep[p]: the first point with p's dynamics (p itself if none comes before it). */
static int first_points(const Sweep *s, long *rep, BwError *err)
{
    PointKey *k = bw_xmalloc(sizeof *k * (size_t)s->n_points, "groups.c: k");
    if (!k) return bw_fail(err, BW_ERUNTIME, "out of memory");
    for (long p = 0; p < s->n_points; p++) {
        point_key(s, p, k[p].key, sizeof k[p].key);
        k[p].point = p;
    }
    qsort(k, (size_t)s->n_points, sizeof *k, by_key_then_point);
    for (long i = 0; i < s->n_points; i++)
        rep[k[i].point] =
            i > 0 && strcmp(k[i].key, k[i - 1].key) == 0 ? rep[k[i - 1].point] : k[i].point;
    free(k);
    return BW_OK;
}

int sweep_plan_groups(Sweep *s, BwError *err)
{
    const RunOpts *o = &s->f.run;
    s->train_each = o->train_each || s->replay || o->record_traces;
    for (int k = 0; !s->own.n && k < s->n_policies; k++) { /* --traces: recorded decisions */
        int rc = policy_sees_price(s->policies[k], "--policies", &s->sees_price[k], err);
        if (rc) return rc;
    }
    long *rep = bw_xmalloc(sizeof *rep * (size_t)s->n_points, "groups.c: rep");
    int rc = rep ? first_points(s, rep, err) : bw_fail(err, BW_ERUNTIME, "out of memory");
    s->n_groups = 0;
    for (long r = 0; rc == BW_OK && r < s->n_runs; r++) {
        const Run *run = &s->runs[r];
        long t = r; /* the run that trains for r */
        if (!s->train_each && !s->sees_price[run->policy_i] && !s->overlaps[run->policy_i])
            t = (rep[run->point] * s->n_seeds + run->seed_i) * s->n_policies + run->policy_i;
        if (t == r) {
            s->groups[s->n_groups].trainer = r;
            s->group_of[r] = (int)s->n_groups++;
        } else {
            s->group_of[r] = s->group_of[t];
        }
        s->groups[s->group_of[r]].members++;
    }
    free(rep);
    return rc;
}

int sweep_is_trainer(const Sweep *s, long r)
{
    return s->groups[s->group_of[r]].trainer == r;
}

/* FNV-1a over the words of a command line. */
static uint64_t hash_argv(char *const *argv, int argc)
{
    uint64_t h = 14695981039346656037ULL;
    for (int i = 0; i < argc; i++)
        for (const char *p = argv[i];; p++) {
            h = (h ^ (unsigned char)*p) * 1099511628211ULL;
            if (!*p) break;
        }
    return h;
}

void sweep_trace_path(const Sweep *s, long r, char *buf, size_t n)
{
    char *argv[SWEEP_MAX_ARGS + 16], store[2 * SWEEP_MAX_AXES + 8][SPEC_MAX_TEXT];
    const Run *run = &s->runs[r];
    int argc = sweep_run_argv(s, run->point, run->seed_i, run->policy_i, argv, store);
    snprintf(buf, n, "%s/traces/run-%ld-%016llx.jsonl.gz", s->out, r,
             (unsigned long long)hash_argv(argv, argc));
}

/* Whether group g's trace is on disk already (an earlier invocation of this command made it). */
static int trace_made(const Sweep *s, const Group *g)
{
    char path[8192];
    sweep_trace_path(s, g->trainer, path, sizeof path);
    return access(path, R_OK) == 0;
}

/* With --stop-at-target a training that stops at the target leaves a trace that ends there,
 * which no other scenario can replay to its own target: a group of several runs trains to the
 * end for its trace only, and every run of it, the trainer's own included, is a replay cut at
 * its target (which writes what the live run stopped there writes). */
static int priced_self(const Sweep *s, const Group *g)
{
    return s->f.run.stop_at_target && g->members > 1;
}

int sweep_priced_run(const Sweep *s, long r)
{
    const Group *g = &s->groups[s->group_of[r]];
    return g->trainer != r || priced_self(s, g);
}

void sweep_plan_phases(Sweep *s)
{
    for (long g = 0; g < s->n_groups; g++) {
        Group *gr = &s->groups[g];
        gr->record = gr->trace_only = gr->priced = 0;
        group_drop_trace(gr);
    }
    s->n_train = s->n_price = 0;
    for (long i = 0; i < s->n_todo; i++) { /* the trainings that are results of this invocation */
        long r = s->todo[i];
        Group *g = &s->groups[s->group_of[r]];
        if (g->trainer != r) continue;
        g->record = g->members > 1;
        g->trace_only = priced_self(s, g);
        s->phase_runs[s->n_train++] = r;
    }
    for (long i = 0; i < s->n_todo; i++) { /* the priced runs, and the traces they need */
        long r = s->todo[i];
        Group *g = &s->groups[s->group_of[r]];
        if (!sweep_priced_run(s, r)) continue;
        s->n_price++;
        if (g->record || g->trace_only || trace_made(s, g)) continue;
        g->trace_only = g->record = 1; /* another shard's run, or one done without its trace */
        s->phase_runs[s->n_train++] = g->trainer;
    }
    for (long i = 0, k = s->n_train; i < s->n_todo; i++)
        if (sweep_priced_run(s, s->todo[i])) s->phase_runs[k++] = s->todo[i];
}

long sweep_load_traces(Sweep *s)
{
    long trained = 0;
    for (long i = s->n_train; i < s->n_train + s->n_price; i++) {
        Group *g = &s->groups[s->group_of[s->phase_runs[i]]];
        trained += g->load_failed;
        if (g->priced || g->load_failed) continue;
        char path[8192];
        sweep_trace_path(s, g->trainer, path, sizeof path);
        BwError err;
        /* no trace: the training failed (and said so); one that stopped early did not complete */
        g->trace = bw_xcalloc(1, sizeof *g->trace, "groups.c: g->trace");
        g->priced = g->trace && access(path, R_OK) == 0 &&
                    trace_read(path, g->trace, &err) == BW_OK &&
                    !g->trace->steps[g->trace->n_steps - 1].stopped[0];
        if (!g->priced) group_drop_trace(g);
        g->load_failed = !g->priced;
        trained += g->load_failed;
    }
    return trained;
}

void sweep_print_groups(const Sweep *s)
{
    if (s->replay) return; /* a replay sweep prices its one trace everywhere already */
    if (s->train_each) {
        printf("# %ld trainings, no scenario priced (%s)\n", s->n_runs,
               s->f.run.record_traces ? "--record-traces: every run records its own trace"
                                      : "--train-each");
        return;
    }
    long fast = 0, actors = 0;
    const char *why = NULL;
    for (long r = 0; r < s->n_runs; r++) {
        if (!sweep_priced_run(s, r)) continue;
        const char *w = s->price_why[s->runs[r].point];
        if (!w[0]) {
            fast++;
        } else {
            actors++;
            why = why ? why : w;
        }
    }
    long priced = s->n_runs - s->n_groups;
    for (long g = 0; g < s->n_groups; g++) priced += priced_self(s, &s->groups[g]);
    printf("# %ld training%s, %ld scenario%s priced", s->n_groups, s->n_groups == 1 ? "" : "s",
           priced, priced == 1 ? "" : "s");
    if (fast && !actors) printf(" by replaying their training's trace (the fast replay)");
    if (!fast && actors) printf(" by replaying their training's trace (the actors: %s)", why);
    if (fast && actors)
        printf(" by replaying their training's trace (the fast replay for %ld; the actors for %ld: "
               "%s)",
               fast, actors, why);
    printf("; --train-each trains every run\n");
    if (s->f.run.stop_at_target && priced)
        printf("# --stop-at-target: each such training runs to the end for its trace, and every "
               "scenario of its\n# dynamics, its own included, is a replay cut at its target\n");
    for (int k = 0; k < s->n_policies; k++)
        if (s->sees_price[k] && s->n_points > 1)
            printf("# %s may see the price (its ops do not say price_blind): trained in every "
                   "scenario\n",
                   s->policies[k]);
        else if (s->overlaps[k] && !s->train_each && s->n_points > 1)
            printf("# %s overlaps its outer exchanges with inner steps (tau > 0 or eager), which "
                   "a replay does not price: trained in every scenario\n",
                   s->policies[k]);
    if (s->n_todo == s->n_runs) return;
    long own = 0;
    for (long i = 0; i < s->n_train; i++)
        own += !s->groups[s->group_of[s->phase_runs[i]]].trace_only;
    printf("# this invocation: %ld training%s (and %ld more for the traces of its priced runs), "
           "%ld priced\n",
           own, own == 1 ? "" : "s", s->n_train - own, s->n_price);
}
