/* timeline.c: the run's timeline in the Chrome trace event format (the JSON Object Format of
 * "Trace Event Format", Google,
 * docs.google.com/document/d/1CvAClvFfyA5R-PhYUmn5OOQtYMH4h6I0nSsKchNAySU):
 * {"traceEvents": [...]}, one event per line. Metadata events ("ph": "M") name each process
 * "worker N" and its threads "compute" (tid 0) and "communication" (tid 1); spans are complete
 * events ("ph": "X") and decisions thread-scoped instant events ("ph": "i", "s": "t"), with ts
 * and dur in microseconds of simulated time to the nanosecond. Both ends of a span are rounded
 * to the nanosecond before dur is taken, so spans that meet in simulated time meet exactly in
 * the file too (Perfetto flags slices of one thread that overlap without nesting).
 *
 * Events stream into a temporary file in the destination's folder (common/outfile.h), so the
 * memory stays bounded however long the run; close completes the JSON and renames the file into
 * place, abort removes it. The temporary file is created at open, so a bad path fails before
 * the run, not after it. Not thread-safe: the simulation's actors, which SimGrid runs one at a
 * time, are its callers. */
#include "timeline.h"
#include "xalloc.h"

#include <assert.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "outfile.h"

struct Timeline {
    OutFile of;
    long step_lo, step_hi; /* step_hi < 0: no upper bound */
    int workers;
    int lanes; /* communication lanes a worker has */
    int any;   /* an event was written (the next one needs a comma) */
};

/* Writes s as a JSON string: quotes, backslashes and control bytes escaped (RFC 8259 section
 * 7); other bytes as they are (names are UTF-8). */
static void put_string(FILE *f, const char *s)
{
    fputc('"', f);
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            fprintf(f, "\\%c", *p);
        else if (*p == '\n')
            fputs("\\n", f);
        else if (*p == '\t')
            fputs("\\t", f);
        else if (*p < 0x20)
            fprintf(f, "\\u%04x", *p);
        else
            fputc(*p, f);
    }
    fputc('"', f);
}

/* The separator before an event: the array's first element has none. */
static FILE *begin_event(Timeline *tl)
{
    FILE *f = tl->of.f;
    fputs(tl->any ? ",\n" : "\n", f);
    tl->any = 1;
    return f;
}

/* A metadata event: what = process_name or thread_name, naming (pid, tid) `name`. */
static void put_meta(Timeline *tl, const char *what, int pid, int tid, const char *name)
{
    FILE *f = begin_event(tl);
    fprintf(f, "{\"name\":\"%s\",\"ph\":\"M\",\"pid\":%d,\"tid\":%d,\"args\":{\"name\":", what, pid,
            tid);
    put_string(f, name);
    fputs("}}", f);
}

/* Simulated seconds to whole nanoseconds (simulated time is never negative). */
static long long to_ns(double t_s)
{
    assert(isfinite(t_s) && t_s >= 0 && t_s < 9e9);
    return llround(t_s * 1e9);
}

/* ns nanoseconds as microseconds, exactly: 1234567 -> 1234.567. */
static void put_us(FILE *f, long long ns)
{
    fprintf(f, "%lld.%03lld", ns / 1000, ns % 1000);
}

/* The event's args: "step" first, then the caller's members (raw JSON, without braces). */
static void put_args(FILE *f, long step, const char *args_json)
{
    fprintf(f, ",\"args\":{\"step\":%ld", step);
    if (args_json && *args_json) fprintf(f, ",%s", args_json);
    fputs("}}", f);
}

/* Splits path into its folder (".", "/" or the part before the last '/') and its file name, and
 * checks that the folder exists: a usage error naming the path otherwise. */
static int split_path(const char *path, char *dir, size_t dir_len, const char **name, BwError *err)
{
    const char *slash = strrchr(path, '/');
    *name = slash ? slash + 1 : path;
    if (!**name) return bw_fail(err, BW_EUSAGE, "timeline '%s': expected a file name", path);
    size_t len = slash ? (size_t)(slash - path) : 1;
    if (len == 0) len = 1; /* "/name": the root */
    /* the temporary name adds the folder, a dot, the name and ".tmp.XXXXXX" */
    if (len >= dir_len || strlen(path) + 16 >= sizeof(((OutFile *)0)->tmp))
        return bw_fail(err, BW_EUSAGE, "timeline '%s': path too long", path);
    memcpy(dir, slash ? path : ".", len);
    dir[len] = '\0';
    struct stat st;
    if (stat(dir, &st) != 0)
        return bw_fail(err, BW_EUSAGE, "timeline '%s': cannot use folder '%s': %s", path, dir,
                       strerror(errno));
    if (!S_ISDIR(st.st_mode))
        return bw_fail(err, BW_EUSAGE, "timeline '%s': '%s' is not a folder", path, dir);
    return BW_OK;
}

int timeline_open(const char *path, long step_lo, long step_hi, int workers, int comm_lanes,
                  Timeline **out, BwError *err)
{
    assert(path && out && workers >= 1 && step_lo >= 0 && comm_lanes >= 1);
    *out = NULL;
    if (!*path) return bw_fail(err, BW_EUSAGE, "timeline: expected a file name, got ''");
    if (step_hi >= 0 && step_hi < step_lo)
        return bw_fail(err, BW_EUSAGE, "timeline '%s': steps %ld to %ld hold none", path, step_lo,
                       step_hi);
    char dir[4096];
    const char *name;
    int rc = split_path(path, dir, sizeof dir, &name, err);
    if (rc) return rc;
    Timeline *tl = bw_xcalloc(1, sizeof *tl, "timeline.c: tl");
    if (!tl) return bw_fail(err, BW_ERUNTIME, "timeline '%s': out of memory", path);
    rc = outfile_open(&tl->of, dir, name, err);
    if (rc) {
        free(tl);
        return rc;
    }
    tl->step_lo = step_lo;
    tl->step_hi = step_hi;
    tl->workers = workers;
    tl->lanes = comm_lanes;
    fputs("{\"traceEvents\":[", tl->of.f);
    for (int w = 0; w < workers; w++) {
        char label[32];
        snprintf(label, sizeof label, "worker %d", w);
        put_meta(tl, "process_name", w, 0, label);
        put_meta(tl, "thread_name", w, TL_LANE_COMPUTE, "compute");
        put_meta(tl, "thread_name", w, TL_LANE_COMM, "communication");
        for (int k = 1; k < comm_lanes; k++) {
            char lane[32];
            snprintf(lane, sizeof lane, "partitions in flight %d", k);
            put_meta(tl, "thread_name", w, TL_LANE_COMM + k, lane);
        }
    }
    *out = tl;
    return BW_OK;
}

int timeline_wants(const Timeline *tl, long step)
{
    return tl && step >= tl->step_lo && (tl->step_hi < 0 || step <= tl->step_hi);
}

void timeline_span(Timeline *tl, int worker, TimelineLane lane, const char *cat, const char *name,
                   double t0_s, double t1_s, long step, const char *args_json)
{
    if (!timeline_wants(tl, step)) return;
    assert(worker >= 0 && worker < tl->workers);
    assert((int)lane >= TL_LANE_COMPUTE && (int)lane < TL_LANE_COMM + tl->lanes);
    assert(cat && name && t1_s >= t0_s);
    const long long ns0 = to_ns(t0_s), ns1 = to_ns(t1_s);
    FILE *f = begin_event(tl);
    fputs("{\"name\":", f);
    put_string(f, name);
    fputs(",\"cat\":", f);
    put_string(f, cat);
    fprintf(f, ",\"ph\":\"X\",\"pid\":%d,\"tid\":%d,\"ts\":", worker, (int)lane);
    put_us(f, ns0);
    fputs(",\"dur\":", f);
    put_us(f, ns1 - ns0);
    put_args(f, step, args_json);
}

void timeline_instant(Timeline *tl, int worker, const char *name, double t_s, long step,
                      const char *args_json)
{
    if (!timeline_wants(tl, step)) return;
    assert(worker >= 0 && worker < tl->workers);
    assert(name);
    const long long ns = to_ns(t_s);
    FILE *f = begin_event(tl);
    fputs("{\"name\":", f);
    put_string(f, name);
    fprintf(f, ",\"cat\":\"policy\",\"ph\":\"i\",\"s\":\"t\",\"pid\":%d,\"tid\":%d,\"ts\":", worker,
            (int)TL_LANE_COMPUTE);
    put_us(f, ns);
    put_args(f, step, args_json);
}

int timeline_close(Timeline *tl, BwError *err)
{
    if (!tl) return BW_OK;
    fputs("\n]}\n", tl->of.f);
    int rc = outfile_commit(&tl->of, err); /* checks every write, then renames into place */
    free(tl);
    return rc;
}

void timeline_abort(Timeline *tl)
{
    if (!tl) return;
    outfile_abort(&tl->of);
    free(tl);
}
