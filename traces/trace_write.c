/* trace_write.c: the gradient-trace writer (see trace.h): the header, then one JSON object per
 * line, gzip when the name ends in .gz, under a temporary name beside the final one (on the
 * list of temporaries a signal removes, outfile.h) until trace_writer_close renames it. */
#include "trace.h"
#include "xalloc.h"
#include "outfile.h"

#include <errno.h>
#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

/* ---- writing ---- */

struct TraceWriter {
    gzFile f;
    char tmp[4096], path[4096];
    int n_layers;
    int failed;
    int sync_fd;   /* a second descriptor of the file, to sync it once gzip has closed its own */
    char why[128]; /* the first write error's reason */
};

/* The reason of a failed gz call: the system's error, or zlib's. */
static void failed(TraceWriter *w)
{
    if (w->failed) return;
    w->failed = 1;
    int zerr = 0;
    const char *msg = gzerror(w->f, &zerr);
    snprintf(w->why, sizeof w->why, "%s",
             zerr == Z_ERRNO ? strerror(errno)
             : msg && *msg   ? msg
                             : "I/O error");
}

static void put_line(TraceWriter *w, json_t *o)
{
    char *text = json_dumps(o, JSON_COMPACT | JSON_REAL_PRECISION(17) | JSON_PRESERVE_ORDER);
    json_decref(o);
    if (!text) {
        if (!w->failed) snprintf(w->why, sizeof w->why, "out of memory");
        w->failed = 1;
    } else if (gzputs(w->f, text) < 0 || gzputc(w->f, '\n') < 0) {
        failed(w);
    }
    free(text);
}

static json_t *norms_array(const double *x, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++) json_array_append_new(a, json_real(x[i]));
    return a;
}

int trace_writer_open(const char *path, const TraceHeader *h, TraceWriter **out, BwError *err)
{
    *out = NULL;
    TraceWriter *w = bw_xcalloc(1, sizeof *w, "trace_write.c: w");
    if (!w) return bw_fail(err, BW_ERUNTIME, "out of memory");
    snprintf(w->path, sizeof w->path, "%s", path);
    const char *slash = strrchr(path, '/');
    int dir_len = slash ? (int)(slash - path) : 1;
    snprintf(w->tmp, sizeof w->tmp, "%.*s/.%s.tmp.XXXXXX", dir_len, slash ? path : ".",
             slash ? slash + 1 : path);
    int fd = mkstemp(w->tmp);
    if (fd >= 0) outfile_track(w->tmp); /* a signal removes it */
    if (fd < 0) {
        int e = errno;
        free(w);
        return bw_fail(err, BW_EUSAGE, "--record-trace %s: cannot create: %s", path, strerror(e));
    }
    fchmod(fd, 0644);
    w->sync_fd = dup(fd);
    size_t len = strlen(path);
    int gz = len > 3 && strcmp(path + len - 3, ".gz") == 0;
    w->f = gzdopen(fd, gz ? "wb6" : "wbT");
    if (!w->f) {
        close(fd);
        if (w->sync_fd >= 0) close(w->sync_fd);
        outfile_untrack(w->tmp);
        unlink(w->tmp);
        free(w);
        return bw_fail(err, BW_ERUNTIME, "--record-trace %s: cannot open", path);
    }
    w->n_layers = h->n_layers;
    json_t *o = json_object();
    json_object_set_new(o, "format", json_string(TRACE_FORMAT));
    json_object_set_new(o, "version", json_integer(TRACE_VERSION));
    json_object_set_new(o, "source", json_string(h->source));
    json_object_set_new(o, "model", json_string(h->model));
    json_object_set_new(o, "dataset", json_string(h->dataset));
    json_object_set_new(o, "workers", json_integer(h->workers));
    json_object_set_new(o, "batch", json_integer(h->batch));
    if (h->flops_per_sample > 0)
        json_object_set_new(o, "flops_per_sample", json_real(h->flops_per_sample));
    if (h->compute_s_per_step > 0)
        json_object_set_new(o, "compute_s_per_step", json_real(h->compute_s_per_step));
    json_object_set_new(o, "epochs", json_integer(h->epochs));
    json_object_set_new(o, "steps_per_epoch", json_integer(h->steps_per_epoch));
    json_t *lr = json_object();
    json_object_set_new(lr, "schedule", json_string(h->lr_schedule));
    json_object_set_new(lr, "base", json_real(h->lr_base));
    json_object_set_new(o, "lr", lr);
    json_t *layers = json_array();
    for (int l = 0; l < h->n_layers; l++) {
        json_t *L = json_object();
        json_object_set_new(L, "name", json_string(h->layers[l].name));
        json_object_set_new(L, "rows", json_integer(h->layers[l].rows));
        json_object_set_new(L, "cols", json_integer(h->layers[l].cols));
        json_array_append_new(layers, L);
    }
    json_object_set_new(o, "layers", layers);
    if (h->has_timing) {
        json_t *tm = json_object(), *f = json_array(), *b = json_array();
        for (int l = 0; l < h->n_layers; l++) {
            json_array_append_new(f, json_real(h->layers[l].fwd_s));
            json_array_append_new(b, json_real(h->layers[l].bwd_s));
        }
        json_object_set_new(tm, "device", json_string(h->timing_device));
        if (h->timing_steps > 0) json_object_set_new(tm, "steps", json_integer(h->timing_steps));
        json_object_set_new(tm, "fwd_s", f);
        json_object_set_new(tm, "bwd_s", b);
        json_object_set_new(o, "timing", tm);
    }
    put_line(w, o);
    *out = w;
    return BW_OK;
}

void trace_write_step(TraceWriter *w, const TraceStep *s)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string("step"));
    json_object_set_new(o, "step", json_integer(s->step));
    json_object_set_new(o, "epoch", json_integer(s->epoch));
    json_object_set_new(o, "epoch_end", json_boolean(s->epoch_end));
    json_object_set_new(o, "batch", json_integer(s->batch));
    json_object_set_new(o, "lr", json_real(s->lr));
    json_object_set_new(o, "loss", json_real(s->loss));
    json_object_set_new(o, "grad_norms", norms_array(s->grad_norms, w->n_layers));
    if (s->has_rank0)
        json_object_set_new(o, "grad_norms_rank0", norms_array(s->grad_norms_rank0, w->n_layers));
    if (s->has_epoch_norms)
        json_object_set_new(o, "epoch_norms", norms_array(s->epoch_norms, w->n_layers));
    if (s->has_epoch_rank0)
        json_object_set_new(o, "epoch_norms_rank0", norms_array(s->epoch_norms_rank0, w->n_layers));
    if (s->has_variance) json_object_set_new(o, "param_variance", json_real(s->param_variance));
    if (s->stopped[0]) json_object_set_new(o, "stopped", json_string(s->stopped));
    if (s->decision[0]) json_object_set_new(o, "decision", json_string(s->decision));
    put_line(w, o);
}

void trace_write_eval(TraceWriter *w, const TraceEval *e)
{
    json_t *o = json_object();
    json_object_set_new(o, "type", json_string("eval"));
    json_object_set_new(o, "step", json_integer(e->step));
    json_object_set_new(o, "test_accuracy", json_real(e->test_accuracy));
    if (isfinite(e->test_loss)) json_object_set_new(o, "test_loss", json_real(e->test_loss));
    put_line(w, o);
}

int trace_writer_close(TraceWriter *w, BwError *err)
{
    int bad = w->failed;
    errno = 0;
    int zc = gzclose(w->f); /* flushes: a full disk may show only here */
    if (zc != Z_OK && !bad) {
        snprintf(w->why, sizeof w->why, "%s",
                 zc == Z_ERRNO && errno ? strerror(errno) : "I/O error while closing");
        bad = 1;
    }
    if (!bad && w->sync_fd >= 0 && fsync(w->sync_fd) != 0) {
        snprintf(w->why, sizeof w->why, "%s", strerror(errno));
        bad = 1;
    }
    if (w->sync_fd >= 0) close(w->sync_fd);
    int rc = BW_OK;
    if (bad) {
        unlink(w->tmp);
        rc = bw_fail(err, BW_ERUNTIME, "--record-trace %s: write failed: %s", w->path, w->why);
    } else if (rename(w->tmp, w->path) != 0) {
        int e = errno;
        unlink(w->tmp);
        rc = bw_fail(err, BW_ERUNTIME, "--record-trace %s: cannot put the trace there: %s", w->path,
                     strerror(e));
    }
    outfile_untrack(w->tmp);
    free(w);
    return rc;
}

void trace_writer_abort(TraceWriter *w)
{
    if (!w) return;
    gzclose(w->f);
    if (w->sync_fd >= 0) close(w->sync_fd);
    unlink(w->tmp);
    outfile_untrack(w->tmp);
    free(w);
}
