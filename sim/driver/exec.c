/* exec.c: the step executor's choice and its calls (exec_impl.h): the step loops of worker.c and
 * replay.c call these, and the run's executor does the pricing. */
#include "exec_impl.h"

const StepExec *exec_choose(const DriverRun *run)
{
    if (run->fast) return &exec_fast;
    if (driver_scheduled(run->cfg) && !run->periodic) return &exec_sched;
    return &exec_ddp;
}

static const StepExec *exec_of(const DriverRun *run)
{
    return run->cost ? run->cost->exec : NULL;
}

int exec_create(DriverRun *run, BwError *err)
{
    const StepExec *x = exec_of(run);
    return x && x->create ? x->create(run, err) : BW_OK;
}

void exec_free(DriverRun *run)
{
    const StepExec *x = exec_of(run);
    if (x && x->free) x->free(run);
}

void exec_decided(DriverRun *run, long step)
{
    const StepExec *x = exec_of(run);
    if (x && x->decided) x->decided(run, step);
}

void exec_start(DriverRun *run)
{
    const StepExec *x = exec_of(run);
    if (x && x->start) x->start(run);
}

void exec_step(Worker *me, const StepState *st, int averaged, int last)
{
    StepBooks b = {0};
    exec_of(me->run)->step(me, st, averaged, last, &b);
    /* stragglers: the step's compute took m times as long as this worker's own would have;
     * the extra is waiting for the slowest, in every executor alike (cost_step_multiplier) */
    double m = driver_straggler_factor(me->run->cfg, st->step);
    if (m > 1) {
        double own = b.compute / m;
        b.split[COST_WAIT] += b.compute - own;
        b.compute = own;
    }
    exec_books_add(me, &b, 1);
}

void exec_drain(Worker *me, const StepState *st)
{
    const StepExec *x = exec_of(me->run);
    if (!x || !x->drain) return;
    StepBooks b = {0};
    x->drain(me, st, &b);
    exec_books_add(me, &b, 0);
}

void exec_evaluated(DriverRun *run, long step, int set_tta)
{
    const StepExec *x = exec_of(run);
    if (x && x->evaluated) x->evaluated(run, step, set_tta);
}

void exec_stop(Worker *me)
{
    const StepExec *x = exec_of(me->run);
    if (x && x->stop) x->stop(me);
}

/* The time books: the step's own (the rendezvous' wait is in step_wait_s already) and the
 * worker's totals. */
void exec_books_add(Worker *me, const StepBooks *b, int step)
{
    if (step) {
        me->step_compute_s = b->compute;
        me->step_compress_s = b->split[COST_COMPRESS];
        me->step_comm_s = b->split[COST_COMM];
        me->step_wait_s += b->split[COST_WAIT];
    }
    me->compute_s += b->compute;
    me->compress_s += b->split[COST_COMPRESS];
    me->comm_s += b->split[COST_COMM];
    me->wait_s += b->split[COST_WAIT];
}
