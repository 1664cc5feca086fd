/* from_trace.c: a gradient trace's per-layer timing as a measured workload profile, so a user's
 * own model recorded with traces/pytorch/record_trace.py can stand in for a built-in profile
 * (`--workload run.jsonl.gz`). The trace's header gives the tensors (name, rows x cols; cols 1
 * is a vector) and, in its "timing", each tensor's measured forward and backward seconds per
 * step at the trace's batch, a module's time on its first tensor and 0 on the others
 * (traces/README.md). So each tensor with a time above 0 starts a layer, named after its module
 * (the tensor's name without its last ".part"), and the zero-time tensors after it join that
 * layer; zero-time tensors before the first timed one join the first layer. The times are taken
 * as measured (measured_gpu ""): a CPU's are not rescaled to any GPU. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "trace.h"
#include "xalloc.h"
#include "workload.h"

/* The module's name: the tensor's without its last ".part" ("layer1.0.conv1.weight" ->
 * "layer1.0.conv1"); a name without a dot is its own. */
static void module_name(char *out, size_t n, const char *tensor)
{
    const char *dot = strrchr(tensor, '.');
    int len = dot && dot != tensor ? (int)(dot - tensor) : (int)strlen(tensor);
    snprintf(out, n, "%.*s", len, tensor);
}

/* The layers and tensors of h into w (allocated to their counts). */
static int fill(Workload *w, const TraceHeader *h, const char *flag, const char *path, BwError *err)
{
    int n_layers = 0;
    for (int t = 0; t < h->n_layers; t++) n_layers += h->layers[t].fwd_s + h->layers[t].bwd_s > 0;
    if (n_layers == 0)
        return bw_fail(err, BW_EUSAGE, "%s %s: \"timing\": every layer's time is 0", flag, path);
    w->layers = bw_xcalloc((size_t)n_layers, sizeof *w->layers, "from_trace.c: w->layers");
    w->tensors = bw_xcalloc((size_t)h->n_layers, sizeof *w->tensors, "from_trace.c: w->tensors");
    if (!w->layers || !w->tensors)
        return bw_fail(err, BW_ERUNTIME, "%s %s: out of memory", flag, path);
    int untimed_first = 0; /* the first layer was opened by tensors without a time */
    for (int t = 0; t < h->n_layers; t++) {
        const TraceLayer *tl = &h->layers[t];
        int timed = tl->fwd_s + tl->bwd_s > 0;
        if (w->n_layers == 0 || (timed && !untimed_first)) {
            WorkloadLayer *l = &w->layers[w->n_layers++];
            module_name(l->name, sizeof l->name, tl->name);
            l->first_tensor = t;
            untimed_first = !timed;
        } else if (timed) { /* the first timed tensor names the layer its predecessors opened */
            module_name(w->layers[0].name, sizeof w->layers[0].name, tl->name);
            untimed_first = 0;
        }
        WorkloadLayer *l = &w->layers[w->n_layers - 1];
        l->fwd_s += tl->fwd_s;
        l->bwd_s += tl->bwd_s;
        l->n_tensors++;
        WorkloadTensor *x = &w->tensors[w->n_tensors++];
        snprintf(x->name, sizeof x->name, "%s", tl->name);
        x->layer = w->n_layers - 1;
        x->ndim = tl->cols == 1 ? 1 : 2;
        x->shape[0] = tl->rows;
        x->shape[1] = tl->cols;
        x->rows = tl->rows;
        x->cols = tl->cols;
        x->numel = (size_t)tl->rows * (size_t)tl->cols;
        w->n_params += x->numel;
    }
    return BW_OK;
}

int workload_from_trace(const char *path, const char *flag, Workload **out, BwError *err)
{
    *out = NULL;
    TraceHeader h;
    int rc = trace_read_header(path, flag, &h, err);
    if (rc) return rc;
    if (!h.has_timing) {
        trace_header_free(&h);
        return bw_fail(err, BW_EUSAGE,
                       "%s %s: the trace lacks per-layer times (no \"timing\" in its header); "
                       "record it with traces/pytorch/record_trace.py, or give a profile",
                       flag, path);
    }
    Workload *w = bw_xcalloc(1, sizeof *w, "from_trace.c: w");
    if (!w) {
        trace_header_free(&h);
        return bw_fail(err, BW_ERUNTIME, "%s %s: out of memory", flag, path);
    }
    snprintf(w->name, sizeof w->name, "%s", h.model);
    snprintf(w->spec, sizeof w->spec, "%s", path);
    char steps[48] = "";
    if (h.timing_steps > 0)
        snprintf(steps, sizeof steps, ", averaged over %d steps", h.timing_steps);
    snprintf(w->source, sizeof w->source, "trace %s (%s): times measured on %s at batch %d%s", path,
             h.source, h.timing_device, h.batch, steps);
    w->measured_batch = h.batch;
    snprintf(w->measured_precision, sizeof w->measured_precision, "fp32");
    rc = fill(w, &h, flag, path, err);
    trace_header_free(&h);
    if (rc) {
        workload_free(w);
        return rc;
    }
    *out = w;
    return BW_OK;
}
