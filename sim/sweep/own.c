/* own.c: `bellows sweep --traces A,B,...`: each policy's own trace (compare --traces,
 * sim/cli/own_traces.h) priced in every scenario of the sweep. The traces are read and checked
 * by own_traces_load, as compare reads them; their policies and seeds are the sweep's; every run
 * replays its own trace following its recorded decisions, set up as compare --traces sets up its
 * run, so that each cell of sweep.csv is that of compare --traces at the cell's scenario. */
#include <string.h>

#include "cli.h"
#include "sweep_impl.h"

int sweep_own_load(Sweep *s, BwError *err)
{
    static const char *const alone[] = {"trace", "policies",      "seeds",
                                        "seed",  "record-traces", "train-each"};
    for (size_t i = 0; i < sizeof alone / sizeof *alone; i++)
        if (cli_given(s->f.opts, s->f.n, s->f.set, alone[i]))
            return bw_fail(err, BW_EUSAGE,
                           "--%s: sweep --traces takes the policies and seeds from the traces, "
                           "and prices each policy's own recorded run",
                           alone[i]);
    if (cli_given(s->f.opts, s->f.n, s->f.set, "compressor")) /* swept, it would repeat cells */
        return bw_fail(err, BW_EUSAGE,
                       "--compressor: sweep --traces takes each policy's compressor from its "
                       "trace (record one trace per compressor with train_policy.py)");
    int rc = own_traces_load(s->f.run.traces, &s->own, s->policies, s->own_policy,
                             s->own_compressor, SWEEP_MAX_POLICIES, err);
    if (rc) return rc;
    s->n_policies = s->own.n_pol;
    s->n_seeds = s->own.n_seeds;
    memcpy(s->seeds, s->own.seeds, sizeof(int) * (size_t)s->own.n_seeds);
    s->baseline = 0; /* the first trace's policy, as compare --traces has it */
    s->traces_list = s->f.run.traces;
    return BW_OK;
}

const Trace *sweep_trace_of(const Sweep *s, int seed_i, int policy_i)
{
    return s->own.n ? s->own.run[seed_i * s->own.n_pol + policy_i] : &s->trace;
}

int sweep_own_config(const Sweep *s, int seed_i, int policy_i, const Flags *f, RunConfig *cfg,
                     BwError *err)
{
    const Trace *t = sweep_trace_of(s, seed_i, policy_i);
    int rc = run_apply_trace(f, cfg, t, err);
    cfg->policy = s->own_policy[policy_i];
    cfg->compressor = s->own_compressor[policy_i];
    cfg->label = s->policies[policy_i];
    cfg->follow_decisions = 1;
    return rc;
}
