/* flag_class.h: what each flag of the simulating commands (run, compare, sweep, replay) changes.
 * A run has two halves (docs/ARCHITECTURE.md): its dynamics (the training: gradients, losses,
 * accuracy, the policy's decisions) and its price (what each step costs on the simulated cluster).
 * A flag of the price leaves the dynamics of a price-blind policy bit for bit as they are, so one
 * training serves every scenario that differs only in price flags (bellows sweep prices them by
 * replaying its trace). Every flag is classed once, here; tests/test_sweep.c fails when a flag of
 * the tables has no class. */
#ifndef BELLOWS_FLAG_CLASS_H
#define BELLOWS_FLAG_CLASS_H

typedef enum {
    FLAG_UNCLASSED = 0, /* not in the list: a new flag someone must class */
    FLAG_DYNAMICS,      /* changes the training: model, data, optimiser, policy, compressor, ... */
    FLAG_PRICE,         /* changes only what steps cost: network, GPU, workload, overlap, ... */
    FLAG_RUN            /* neither: where results go, how many run at once, what is printed */
} FlagClass;

/* The class of flag `name` (without "--"); the model registry's options are dynamics. */
FlagClass flag_class(const char *name);
const char *flag_class_name(FlagClass c); /* "dynamics", "price", "run", "unclassed" */

#endif
