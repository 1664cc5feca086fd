/* trainer.c: the reference trainer loop (see trainer.h). Each epoch draws a fresh order from
 * dataset_epoch_order with one worker; the last partial batch is dropped. */
#include "trainer.h"
#include "xalloc.h"

#include <math.h>
#include <stdlib.h>

int train_single(Model *m, const Dataset *train, const Dataset *test, const TrainConfig *cfg,
                 const TrainHooks *hooks, BwError *err)
{
    if (cfg->batch <= 0 || cfg->batch > train->n)
        return bw_fail(err, BW_EUSAGE, "--batch: %d is larger than the training set (%d samples)",
                       cfg->batch, train->n);
    const int steps_per_epoch = train->n / cfg->batch;
    int *perm = bw_xmalloc((size_t)train->n * sizeof *perm, "trainer.c: perm");
    float *x = bw_xmalloc((size_t)cfg->batch * train->dim * sizeof *x, "trainer.c: x");
    uint8_t *y = bw_xmalloc((size_t)cfg->batch, "trainer.c: y");
    Sgd opt = {0};
    int rc = (!perm || !x || !y) ? bw_fail(err, BW_ERUNTIME, "trainer: out of memory")
                                 : sgd_init(&opt, m->n_params, cfg->sgd, err);
    long step = 0;
    for (int epoch = 0; rc == BW_OK && epoch < cfg->epochs; epoch++) {
        dataset_epoch_order(train->n, cfg->seed, epoch, perm);
        double loss_sum = 0.0, lr = 0.0;
        long correct = 0;
        for (int s = 0; s < steps_per_epoch; s++, step++) {
            dataset_gather(train, perm + (size_t)s * cfg->batch, cfg->batch, x, y);
            int c = 0;
            double loss = model_forward_backward_count(m, x, y, cfg->batch, &c);
            if (!isfinite(loss)) {
                rc =
                    bw_fail(err, BW_ERUNTIME,
                            "training diverged at epoch %d, step %ld (loss %g); try a smaller --lr",
                            epoch + 1, step, loss);
                break;
            }
            lr = lr_at(&cfg->lr, epoch + (double)s / steps_per_epoch, steps_per_epoch);
            sgd_step(&opt, m->params, m->grads, lr);
            loss_sum += loss;
            correct += c;
            if (hooks && hooks->on_step && (s % 20 == 0 || s + 1 == steps_per_epoch))
                hooks->on_step(epoch + 1, s + 1, steps_per_epoch, loss, hooks->ctx);
        }
        if (rc) break;
        EpochStats st = {.epoch = epoch + 1,
                         .step = step,
                         .lr = lr,
                         .train_loss = loss_sum / steps_per_epoch,
                         .train_accuracy =
                             (double)correct / ((double)steps_per_epoch * cfg->batch)};
        rc = model_evaluate(m, test->x, test->y, test->n, test->dim, &st.test_loss,
                            &st.test_accuracy, err);
        if (rc) break;
        if (hooks && hooks->on_epoch && hooks->on_epoch(&st, hooks->ctx)) break;
    }
    sgd_free(&opt);
    free(perm);
    free(x);
    free(y);
    return rc;
}
