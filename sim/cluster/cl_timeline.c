/* cl_timeline.c: the jobs' timelines as one (DIR/timeline.json, Chrome trace events as
 * sim/driver/timeline.c writes them). Each job's own file has a process per worker with a compute
 * and a communication thread, in the engine's clock; here each job is one process ("job NAME",
 * in the file's order) and each of its workers' lanes a thread of it ("worker 3 compute"), so
 * Perfetto shows a group per job whose collectives can be laid beside its neighbours'. */
#include "cl_impl.h"

#include <string.h>

#include "outfile.h"

static json_t *meta(const char *what, int pid, int tid, json_t *args)
{
    return json_pack("{s:s, s:s, s:i, s:i, s:o}", "name", what, "ph", "M", "pid", pid, "tid", tid,
                     "args", args);
}

/* The lanes a worker of the job has: its compute lane and its communication lanes (one, or a
 * schedule's parameter-server lanes), from the highest thread of any of its events. */
static int lanes_of(const json_t *events)
{
    int lanes = 2;
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        const int tid = (int)json_integer_value(json_object_get(e, "tid"));
        if (tid + 1 > lanes) lanes = tid + 1;
    }
    return lanes;
}

/* Job j's events, moved to process j: worker w's lane L becomes thread lanes w + L, so no two
 * workers share a thread. */
static void move_events(json_t *out, const json_t *events, int j)
{
    const int stride = lanes_of(events);
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        const int w = (int)json_integer_value(json_object_get(e, "pid"));
        const int lane = (int)json_integer_value(json_object_get(e, "tid"));
        const char *ph = json_string_value(json_object_get(e, "ph"));
        const char *name = json_string_value(json_object_get(e, "name"));
        if (ph && strcmp(ph, "M") == 0) {
            if (!name || strcmp(name, "thread_name") != 0) continue; /* "worker N" processes */
            const char *lane_name =
                json_string_value(json_object_get(json_object_get(e, "args"), "name"));
            char label[96];
            snprintf(label, sizeof label, "worker %d %s", w, lane_name ? lane_name : "");
            json_array_append_new(
                out, meta("thread_name", j, stride * w + lane, json_pack("{s:s}", "name", label)));
            json_array_append_new(out, meta("thread_sort_index", j, stride * w + lane,
                                            json_pack("{s:i}", "sort_index", stride * w + lane)));
            continue;
        }
        json_t *moved = json_deep_copy(e);
        json_object_set_new(moved, "pid", json_integer(j));
        json_object_set_new(moved, "tid", json_integer(stride * w + lane));
        json_array_append_new(out, moved);
    }
}

static int write_events(const json_t *events, const char *dir, BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "timeline.json", err);
    if (rc) return rc;
    fputs("{\"traceEvents\":[", of.f);
    size_t i;
    json_t *e;
    json_array_foreach(events, i, e)
    {
        fputs(i ? ",\n" : "\n", of.f);
        json_dumpf(e, of.f, JSON_COMPACT | JSON_REAL_PRECISION(15)); /* ns below 1e6 s */
    }
    fputs("\n]}\n", of.f);
    return outfile_commit(&of, err);
}

int cl_timeline_merge(const ClPlan *p, const char *dir, BwError *err)
{
    json_t *out = json_array();
    int rc = BW_OK;
    for (int j = 0; j < p->n_jobs && !rc; j++) {
        char path[4300], label[80];
        snprintf(path, sizeof path, "%s/jobs/%s/timeline.json", dir, p->jobs[j].spec->name);
        json_error_t jerr;
        json_t *root = json_load_file(path, 0, &jerr);
        if (!root) {
            rc = bw_fail(err, BW_ERUNTIME, "%s: %s", path, jerr.text);
            break;
        }
        snprintf(label, sizeof label, "job %s", p->jobs[j].spec->name);
        json_array_append_new(out, meta("process_name", j, 0, json_pack("{s:s}", "name", label)));
        json_array_append_new(
            out, meta("process_sort_index", j, 0, json_pack("{s:i}", "sort_index", j)));
        move_events(out, json_object_get(root, "traceEvents"), j);
        json_decref(root);
    }
    if (!rc) rc = write_events(out, dir, err);
    json_decref(out);
    return rc;
}
