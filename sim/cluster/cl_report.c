/* cl_report.c: the cluster's results, from the jobs' own files: each job's summary.json in the
 * shared engine (DIR/jobs/NAME/) and alone on the same GPUs (DIR/alone/NAME/), the links' use
 * (DIR/links.csv), into DIR/cluster.json and the table bellows cluster prints; the jobs'
 * timelines into one. A job's slowdown is its time to accuracy shared over alone (of its whole
 * run's simulated time when either did not reach the target); what contention cost it is its
 * communication time shared less alone (the same collectives, each worker's mean: a policy that
 * cannot see the clock takes the same steps in both), and its share of the shared
 * communication time. */
#include "cl_impl.h"

#include <math.h>
#include <stdlib.h>
#include <string.h>

#include "csv.h"
#include "outfile.h"

static double num(const json_t *o, const char *key)
{
    const json_t *v = json_object_get(o, key);
    return json_is_number(v) ? json_number_value(v) : NAN;
}

int cl_report_read(const char *path, ClFigures *fig, BwError *err)
{
    memset(fig, 0, sizeof *fig);
    json_error_t jerr;
    json_t *s = json_load_file(path, 0, &jerr);
    if (!s) return bw_fail(err, BW_ERUNTIME, "%s: %s", path, jerr.text);
    const char *status = json_string_value(json_object_get(s, "status"));
    snprintf(fig->status, sizeof fig->status, "%s", status ? status : "?");
    fig->tta_s = num(s, "time_to_accuracy_s");
    fig->tta_res_s = num(s, "time_to_accuracy_resolution_s");
    fig->sim_time_s = num(s, "sim_time_s");
    fig->bytes = num(s, "bytes_per_worker");
    fig->comm_s = num(s, "communication_s");
    fig->final_acc = num(s, "final_test_accuracy");
    fig->steps = (long)num(s, "steps");
    const char *comp = json_string_value(json_object_get(s, "compressor"));
    snprintf(fig->compressor, sizeof fig->compressor, "%s", comp ? comp : "");
    fig->ok = 1;
    json_decref(s);
    return BW_OK;
}

double cl_slowdown(const ClRow *r, int *of_tta)
{
    *of_tta = isfinite(r->shared.tta_s) && isfinite(r->alone.tta_s) && r->alone.tta_s > 0;
    if (*of_tta) return r->shared.tta_s / r->alone.tta_s;
    return r->alone.sim_time_s > 0 ? r->shared.sim_time_s / r->alone.sim_time_s : NAN;
}

double cl_contention(const ClRow *r)
{
    return r->shared.comm_s > 0 ? (r->shared.comm_s - r->alone.comm_s) / r->shared.comm_s : 0;
}

static void figures_json(JsonW *w, const ClFigures *f)
{
    jsonw_string(w, "status", f->status);
    jsonw_double(w, "time_to_accuracy_s", f->tta_s);
    jsonw_double(w, "time_to_accuracy_resolution_s", f->tta_res_s);
    jsonw_double(w, "sim_time_s", f->sim_time_s);
    jsonw_double(w, "final_test_accuracy", f->final_acc);
    jsonw_double(w, "bytes_per_worker", f->bytes);
    jsonw_double(w, "communication_s", f->comm_s);
    jsonw_long(w, "steps", f->steps);
}

static void job_json(JsonW *w, const ClJob *job, const ClRow *r, int alone)
{
    jsonw_object(w, NULL);
    jsonw_string(w, "name", job->spec->name);
    jsonw_string(w, "folder", job->spec->name); /* jobs/NAME, alone/NAME */
    jsonw_long(w, "workers", job->P);
    if (job->cfg.price_workers) /* the GPUs it holds and is priced at; its ranks on the first */
        jsonw_long(w, "price_workers", job->N);
    if (job->layout) /* how its ring was priced: its hops as placed (coll_comm_set_layout) */
        jsonw_string(w, "ring_hops", cl_layout_name(job->layout));
    jsonw_array(w, "gpus");
    for (int g = 0; g < job->N; g++) jsonw_long(w, NULL, job->gpus[g]);
    jsonw_end_array(w);
    jsonw_string(w, "policy", job->cfg.policy);
    /* what ran, as the job's summary.json says (none under sync); the flag without one */
    jsonw_string(w, "compressor",
                 r->shared.compressor[0] ? r->shared.compressor : job->cfg.compressor);
    jsonw_double(w, "start_s", r->start_s);
    jsonw_double(w, "end_s", r->start_s + r->shared.sim_time_s); /* the engine's clock */
    figures_json(w, &r->shared);
    if (alone) {
        int of_tta;
        double x = cl_slowdown(r, &of_tta);
        jsonw_double(w, "slowdown", x);
        jsonw_string(w, "slowdown_of", of_tta ? "time_to_accuracy_s" : "sim_time_s");
        jsonw_double(w, "contention_s", r->shared.comm_s - r->alone.comm_s);
        jsonw_double(w, "contention_share",
                     r->shared.comm_s > 0 ? (r->shared.comm_s - r->alone.comm_s) / r->shared.comm_s
                                          : 0);
        jsonw_object(w, "alone");
        figures_json(w, &r->alone);
        jsonw_end_object(w);
    }
    jsonw_end_object(w);
}

/* One link of links.csv, summed over its bins. */
typedef struct {
    char name[128];
    double bw, bytes, peak, t_end;
} LinkSum;

static void link_json(JsonW *w, const LinkSum *l)
{
    jsonw_object(w, NULL);
    jsonw_string(w, "link", l->name);
    jsonw_double(w, "bandwidth_Bps", l->bw);
    jsonw_double(w, "bytes", l->bytes);
    jsonw_double(w, "mean_utilisation", l->t_end > 0 ? l->bytes / (l->t_end * l->bw) : 0);
    jsonw_double(w, "peak_utilisation", l->peak);
    jsonw_end_object(w);
}

/* links.csv's links (the busiest first), summed over their bins, into l[CL_LINKS_TOP]. */
static int links_read(const char *dir, LinkSum *l)
{
    char path[4200], line[1024];
    snprintf(path, sizeof path, "%s/links.csv", dir);
    FILE *f = fopen(path, "r");
    int n = 0;
    for (int first = 1; f && fgets(line, sizeof line, f); first = 0) {
        char *fld[8];
        if (first || csv_split(line, fld, 8) != 6) continue;
        if (n == 0 || strcmp(fld[0], l[n - 1].name) != 0) {
            if (n == CL_LINKS_TOP) break;
            memset(&l[n++], 0, sizeof *l);
            snprintf(l[n - 1].name, sizeof l->name, "%s", fld[0]);
        }
        LinkSum *k = &l[n - 1];
        k->bw = csv_num(fld[1]);
        k->t_end = csv_num(fld[3]);
        k->bytes += csv_num(fld[4]);
        if (csv_num(fld[5]) > k->peak) k->peak = csv_num(fld[5]);
    }
    if (f) fclose(f);
    return n;
}

static void links_json(JsonW *w, const char *dir)
{
    LinkSum l[CL_LINKS_TOP];
    int n = links_read(dir, l);
    jsonw_array(w, "links");
    for (int i = 0; i < n; i++) link_json(w, &l[i]);
    jsonw_end_array(w);
}

void cl_report_links(FILE *out, const char *dir)
{
    LinkSum l[CL_LINKS_TOP];
    int n = links_read(dir, l);
    if (n == 0) return;
    fputs("busiest links (links.csv; mean and peak utilisation of their rate):", out);
    for (int i = 0; i < n && i < 4; i++)
        fprintf(out, "%s %s %.1f%% (%.1f%%)", i ? "," : "", l[i].name,
                100 * (l[i].t_end > 0 ? l[i].bytes / (l[i].t_end * l[i].bw) : 0), 100 * l[i].peak);
    fputc('\n', out);
}

int cl_report_write(const ClPlan *p, const ClRow *rows, const char *dir, double wall_s, int alone,
                    BwError *err)
{
    OutFile of;
    int rc = outfile_open(&of, dir, "cluster.json", err);
    if (rc) return rc;
    JsonW w;
    jsonw_begin(&w, of.f);
    jsonw_object(&w, NULL);
    jsonw_string(&w, "command", "cluster");
    jsonw_string(&w, "file", p->spec->path);
    jsonw_string(&w, "input", p->spec->input); /* what --resume compares */
    jsonw_long(&w, "gpus", p->gpus);
    jsonw_string(&w, "topology",
                 p->platform.platform_file ? NULL : cluster_topology_name(p->platform.topology));
    jsonw_string(&w, "platform_file", p->platform.platform_file);
    jsonw_string(&w, "placement", p->spec->placement);
    jsonw_string(&w, "network_model", p->spec->network_model);
    jsonw_bool(&w, "alone", alone);
    jsonw_array(&w, "jobs");
    for (int j = 0; j < p->n_jobs; j++) job_json(&w, &p->jobs[j], &rows[j], alone);
    jsonw_end_array(&w);
    links_json(&w, dir);
    jsonw_double(&w, "wall_s", wall_s);
    jsonw_end_object(&w);
    fputc('\n', of.f);
    return outfile_commit(&of, err);
}

void cl_gpu_text(const ClJob *job, char *buf, size_t n)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int r = 0; r < job->N && used < n; r++) {
        int e = r;
        while (e + 1 < job->N && job->gpus[e + 1] == job->gpus[e] + 1) e++;
        if (e > r)
            used += (size_t)snprintf(buf + used, n - used, "%s%d-%d", r ? "," : "", job->gpus[r],
                                     job->gpus[e]);
        else
            used += (size_t)snprintf(buf + used, n - used, "%s%d", r ? "," : "", job->gpus[r]);
        r = e;
    }
    if (used >= n && n > 4) snprintf(buf + n - 4, 4, "...");
}

/* A job's tta resolution as a share of its tta, compare's res column: "1.2%", "44.1%!" above
 * 2%, "-" without a tta; returns 1 if marked. */
static int res_text(const ClFigures *f, char *buf, size_t n)
{
    snprintf(buf, n, "-");
    if (!isfinite(f->tta_s) || !(f->tta_s > 0) || !isfinite(f->tta_res_s)) return 0;
    int coarse = f->tta_res_s / f->tta_s > 0.02;
    snprintf(buf, n, "%.1f%%%s", 100 * f->tta_res_s / f->tta_s, coarse ? "!" : "");
    return coarse;
}

void cl_report_print(FILE *out, const ClPlan *p, const ClRow *rows, int alone)
{
    fprintf(out, "\n%-12s %5s %-16s %9s %-15s %9s %7s %9s %9s %10s %9s %10s\n", "job", "GPUs", "on",
            "start_s", "status", "tta_s", "res", "alone_s", "slowdown", "MB/worker", "comm_s",
            "contention");
    int coarse = 0, missed = 0;
    for (int j = 0; j < p->n_jobs; j++) {
        const ClRow *r = &rows[j];
        char on[17], sl[16] = "-", al[16] = "-", co[16] = "-", res[16], tta[16] = "-";
        cl_gpu_text(&p->jobs[j], on, sizeof on);
        coarse += res_text(&r->shared, res, sizeof res);
        if (isfinite(r->shared.tta_s))
            snprintf(tta, sizeof tta, "%.4f", r->shared.tta_s);
        else
            missed++;
        if (alone) {
            int of_tta;
            double x = cl_slowdown(r, &of_tta);
            /* ~: shared and alone lie within an evaluation interval of each other */
            double within = fmax(r->shared.tta_res_s, r->alone.tta_res_s);
            int ns = of_tta && fabs(r->shared.tta_s - r->alone.tta_s) <= within;
            snprintf(sl, sizeof sl, "%.3fx%s", x, of_tta ? (ns ? "~" : "") : "*");
            snprintf(al, sizeof al, "%.4f", of_tta ? r->alone.tta_s : r->alone.sim_time_s);
            snprintf(co, sizeof co, "%.1f%%", 100 * cl_contention(r));
        }
        fprintf(out, "%-12s %5d %-16s %9.4f %-15s %9s %7s %9s %9s %10.3f %9.4f %10s\n",
                p->jobs[j].spec->name, p->jobs[j].N, on, r->start_s, r->shared.status, tta, res, al,
                sl, r->shared.bytes / 1e6, r->shared.comm_s, co);
    }
    fputs("\ntta_s: simulated seconds from the job's start to the first evaluation at or above its "
          "target (-: never).\nres: the simulated time between that evaluation and the one "
          "before (the crossing lies in it),\nas a share of tta_s; ! above 2% (a job evaluates "
          "20 times an epoch unless its eval_every says\notherwise).\n",
          out);
    if (coarse)
        fprintf(out,
                "%d job(s) marked ! are coarser than 2%%: a smaller eval_every sharpens them.\n",
                coarse);
    if (missed)
        fprintf(out,
                "%d of %d job(s) never reached their target accuracy (tta_s and res -): their "
                "whole run's time\nis sim_time_s in cluster.json.\n",
                missed, p->n_jobs);
    if (!alone)
        fputs("alone_s, slowdown, contention: - (--alone none ran no job alone to compare "
              "with).\n",
              out);
    if (alone)
        fputs(
            "alone_s, slowdown: the same job alone on the same GPUs, its tta, and tta shared over "
            "alone (*: of the\nwhole run's simulated time, a tta missing; ~: the two lie within "
            "an evaluation interval, not\ntold apart). contention: the share of its communication "
            "time (comm_s, mean over its workers)\nthat the other jobs' traffic added (comm_s "
            "shared less alone).\n",
            out);
}
