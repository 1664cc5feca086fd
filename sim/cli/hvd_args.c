/* hvd_args.c: --horovod RELEASE|off, --horovod-fusion BYTES, --horovod-cycle MS (issue 48 item
 * 7): a Horovod release's defaults as the "horovod" of whichever cost profile the run takes
 * (--costs), or none (off: DDP's buckets), and Horovod's own two knobs over them, the ones its
 * users tune (horovod/horovod docs/tensor-fusion.rst: the fusion buffer's size, horovodrun
 * --fusion-threshold-mb, 0 disabling Tensor Fusion, is the environment's HOROVOD_FUSION_THRESHOLD
 * in bytes; the time between cycles, horovodrun --cycle-time-ms, e.g. 3.5, is HOROVOD_CYCLE_TIME
 * in milliseconds: horovod/runner/common/util/config_parser.py sets them so, the threshold as
 * the megabytes x 1024 x 1024; docs/mpi.rst: HOROVOD_FUSION_THRESHOLD=33554432,
 * HOROVOD_CYCLE_TIME=3.5).
 * The releases and their defaults are the built-ins horovod-RELEASE-v100's (gen_costs.py's one
 * table, costs_horovod_release); the step plan is step_plan_hvd.c's. */
#include <string.h>

#include "run_args.h"

#define HVD_OPT(name, kind, field, ...)                                                            \
    {                                                                                              \
        name, kind, NULL, __VA_ARGS__, offsetof(RunOpts, field)                                    \
    }

const CliOpt hvd_cli_opts[] = {
    HVD_OPT("horovod", CLI_STRING, horovod, NULL, "RELEASE|off",
            "run the allreduces as Horovod RELEASE does (0.18: 64 MiB fused every 5 ms; 0.21: "
            "128 MiB every 1 ms, batched fusion copies; each release's defaults as its code sets "
            "them, bellows costs horovod-0.21-v100) over the --costs profile's rates and links; "
            "off: DDP's buckets (--costs horovod-0.21-v100 --horovod off is DDP at its rates). "
            "Default: the profile's own (none but the horovod-* profiles)",
            0, 0, NULL, 0),
    HVD_OPT("horovod-fusion", CLI_LONG, horovod_fusion, NULL, "bytes",
            "Horovod's HOROVOD_FUSION_THRESHOLD (horovodrun --fusion-threshold-mb x 1048576): "
            "ready tensors are fused into one allreduce up to this many bytes; 0 disables fusion "
            "(default: the release's)",
            0, (double)COSTS_HVD_MAX_THRESHOLD, NULL, 0),
    HVD_OPT("horovod-cycle", CLI_DOUBLE, horovod_cycle_ms, NULL, "ms",
            "Horovod's HOROVOD_CYCLE_TIME (horovodrun --cycle-time-ms): its background thread "
            "wakes this often to negotiate and fuse the ready tensors, 0.001 to 1000 (default: "
            "the release's)",
            1e-3, COSTS_HVD_MAX_CYCLE_MS, NULL, 0),
};
const int hvd_cli_n_opts = (int)(sizeof hvd_cli_opts / sizeof *hvd_cli_opts);
#undef HVD_OPT

static int given(const Flags *f, const char *name)
{
    return cli_given(f->opts, f->n, f->set, name);
}

/* --horovod's release (or off) on p. */
static int hvd_release(const Flags *f, CostProfile *p, BwError *err)
{
    const char *v = f->run.horovod;
    const int off = strcmp(v, "off") == 0;
    CostHorovod h;
    char key[24], known[128];
    if (!off && !costs_horovod_release(v, &h, key, sizeof key)) {
        costs_horovod_releases(known, sizeof known);
        return bw_fail(err, BW_EUSAGE,
                       "--horovod: expected a release whose defaults bellows has (%s) or off; "
                       "got '%s'",
                       known, v);
    }
    if (!p->horovod.present && p->cycle_s > 0) /* grace-tf: TensorFlow + Horovod, fitted whole */
        return bw_fail(err, BW_EUSAGE,
                       "--horovod: costs %s prices a background thread's cycle of its own "
                       "(\"fixed\": \"cycle_s\"), not a \"horovod\" to replace or remove; "
                       "choose a profile without one (--costs pytorch)",
                       p->name);
    if (!off && !p->ops[COST_OP_ELEMENTWISE].present)
        return bw_fail(err, BW_EUSAGE,
                       "--horovod: costs %s gives no \"elementwise\" rate, which prices the "
                       "fusion buffer's copies",
                       p->name);
    costs_set_horovod(p, off ? NULL : &h, off ? "off" : key);
    return BW_OK;
}

int hvd_args_apply(const Flags *f, CostProfile *p, BwError *err)
{
    const int gv = given(f, "horovod"), gf = given(f, "horovod-fusion"),
              gc = given(f, "horovod-cycle");
    if (!gv && !gf && !gc) return BW_OK;
    const char *flag = gv ? "--horovod" : gf ? "--horovod-fusion" : "--horovod-cycle";
    if (p->ideal)
        return bw_fail(err, BW_EUSAGE,
                       "%s: costs ideal is the roofline, with no framework's calls, cycle or "
                       "copies to price; choose a profile (--costs pytorch)",
                       flag);
    int rc = gv ? hvd_release(f, p, err) : BW_OK;
    if (rc || (!gf && !gc)) return rc;
    flag = gf ? "--horovod-fusion" : "--horovod-cycle";
    if (!p->horovod.present)
        return bw_fail(err, BW_EUSAGE,
                       "%s: costs %s runs DDP's buckets, not Horovod; add --horovod RELEASE "
                       "(bellows costs: the horovod-* profiles)",
                       flag, p->name);
    CostHorovod h = p->horovod;
    if (gf) h.fusion_bytes = (double)f->run.horovod_fusion;
    if (gc) h.cycle_s = f->run.horovod_cycle_ms / 1e3;
    if (h.fusion_bytes != p->horovod.fusion_bytes || h.cycle_s != p->horovod.cycle_s)
        p->validation[0] = '\0'; /* its rows ran the release's defaults */
    p->horovod = h;              /* the header and summary.json give the fusion and the cycle */
    p->cycle_s = h.cycle_s;
    return BW_OK;
}
