/* cl_file.c: a cluster file (sim/cluster/README.md) read with jansson and checked key by key:
 * the top level holds the cluster's flags of `bellows run` (hyphens as underscores), "placement",
 * "network_model" and "jobs"; each job its "name", the job's flags of `bellows run`, "start_s",
 * "hosts" and "placement". Every key is one flag, so a job's keys mean what the flags mean and
 * `bellows run --help` documents them; the values are checked when the flags are parsed
 * (cl_plan.c). An unknown key, a key in the wrong place or a value of the wrong JSON type is a
 * usage error naming the file, the job and the key. */
#include "cl_impl.h"
#include "xalloc.h"

#include <ctype.h>
#include <errno.h>
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cluster_args.h"
#include "infile.h"

/* Flags of `bellows run` a file does not take: where results go and what is printed belong to
 * the command (bellows cluster --out, --timeline), and the threads of one process are shared by
 * its jobs; network_model is the engine's, at the top. */
static const char *const NOT_IN_FILE[] = {"out",      "force",           "quiet",
                                          "timeline", "timeline-steps",  "record-trace",
                                          "threads",  "compute-threads", NULL};

static int listed(const char *const *list, const char *name)
{
    for (int i = 0; list[i]; i++)
        if (strcmp(list[i], name) == 0) return 1;
    return 0;
}

/* Whether flag is one of the cluster's (cluster_args.c), which a job may not set but for its
 * workers and hosts. */
static int cluster_flag(const char *flag)
{
    for (int i = 0; i < cluster_cli_n_opts; i++)
        if (strcmp(cluster_cli_opts[i].name, flag) == 0) return 1;
    return 0;
}

int cl_fail_keys(BwError *err, int status, const char *where, const char *msg)
{
    char out[512];
    size_t n = 0;
    const char *p = msg;
    if (strncmp(p, "--", 2) == 0) { /* "--epochs: expected ..." names the key first */
        n += (size_t)snprintf(out, sizeof out, "key ");
    }
    while (*p && n + 4 < sizeof out) {
        if (p[0] == '-' && p[1] == '-' && islower((unsigned char)p[2]) &&
            (p == msg || p[-1] == ' ' || p[-1] == '(' || p[-1] == '\'')) {
            out[n++] = '"';
            for (p += 2; (islower((unsigned char)*p) || isdigit((unsigned char)*p) || *p == '-') &&
                         n + 3 < sizeof out;
                 p++)
                out[n++] = *p == '-' ? '_' : *p;
            out[n++] = '"';
        } else {
            out[n++] = *p++;
        }
    }
    out[n] = '\0';
    return bw_fail(err, status, "%s%s", where, out);
}

/* Reading one object's keys: where the errors say they are. */
typedef struct {
    BwError *err;
    char where[320];  /* "FILE: job \"a\": " */
    const Flags *run; /* the run flags' table */
} Ctx;

#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
static int
bad(const Ctx *c, const char *fmt, ...)
{
    char msg[400];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    return bw_fail(c->err, BW_EUSAGE, "%s%s", c->where, msg);
}

static const CliOpt *run_opt(const Ctx *c, const char *flag)
{
    for (int i = 0; i < c->run->n; i++)
        if (strcmp(c->run->opts[i].name, flag) == 0) return &c->run->opts[i];
    return NULL;
}

/* A JSON number or string as a flag's text. */
static char *scalar_text(const json_t *v)
{
    char buf[64];
    if (json_is_string(v)) return bw_xstrdup(json_string_value(v), "cl_file.c: a copy");
    if (json_is_integer(v)) {
        snprintf(buf, sizeof buf, "%" JSON_INTEGER_FORMAT, json_integer_value(v));
        return bw_xstrdup(buf, "cl_file.c: a copy");
    }
    if (json_is_real(v)) {
        snprintf(buf, sizeof buf, "%.17g", json_real_value(v));
        return bw_xstrdup(buf, "cl_file.c: a copy");
    }
    return NULL;
}

/* A list's items joined by commas ("1,2"): an array of numbers or strings, or one string. */
static int list_text(const Ctx *c, const char *key, const json_t *v, char **out)
{
    if (!json_is_array(v)) {
        if (!(*out = scalar_text(v))) return bad(c, "key \"%s\": expected a list", key);
        return BW_OK;
    }
    size_t cap = 16, len = 0;
    char *s = bw_xcalloc(cap, 1, "cl_file.c: s");
    size_t i;
    const json_t *item;
    json_array_foreach(v, i, item)
    {
        char *t = scalar_text(item);
        if (!t || !*t) {
            free(t);
            free(s);
            return bad(c, "key \"%s\": item %zu: expected a number or a string", key, i);
        }
        while (len + strlen(t) + 2 > cap) s = bw_xrealloc(s, cap *= 2, "cl_file.c: s");
        len += (size_t)sprintf(s + len, "%s%s", i ? "," : "", t);
        free(t);
    }
    if (len == 0) {
        free(s);
        return bad(c, "key \"%s\": expected at least one item", key);
    }
    *out = s;
    return BW_OK;
}

/* key's value v as the flag o's: out->value, or NULL for a flag given as true; *skip for false. */
static int flag_value(const Ctx *c, const char *key, const CliOpt *o, const json_t *v, ClFlag *out,
                      int *skip)
{
    *skip = 0;
    if (o->kind == CLI_FLAG) {
        if (!json_is_boolean(v)) return bad(c, "key \"%s\": expected true or false", key);
        *skip = json_is_false(v);
        return BW_OK;
    }
    int rc = BW_OK;
    if (o->kind == CLI_INT_LIST || o->kind == CLI_DOUBLE_LIST || strcmp(o->name, "hosts") == 0)
        rc = list_text(c, key, v, &out->value);
    else if (!(out->value = scalar_text(v)))
        return bad(c, "key \"%s\": expected a %s", key,
                   o->kind == CLI_STRING || o->kind == CLI_CHOICE ? "string" : "number or string");
    if (rc) return rc;
    /* a value is a command line's text, printed in messages and summaries: no control byte, and
     * no NUL inside a JSON string (it would cut the value short) */
    int control = json_is_string(v) && strlen(out->value) != json_string_length(v);
    for (const char *p = out->value; !control && *p; p++)
        control = (unsigned char)*p < 0x20 || *p == 0x7f;
    if (!control) return BW_OK;
    free(out->value);
    out->value = NULL;
    return bad(c, "key \"%s\": a control character in its value; expected printable text", key);
}

/* The flag a key names ("train_samples": "train-samples"), or a usage error saying why not. */
static int key_flag(const Ctx *c, const char *key, int top, char *flag, size_t n)
{
    if (strchr(key, '-')) return bad(c, "key \"%s\": write the flag's hyphens as underscores", key);
    snprintf(flag, n, "%s", key);
    for (char *p = flag; *p; p++)
        if (*p == '_') *p = '-';
    if (!run_opt(c, flag) || listed(NOT_IN_FILE, flag) || strcmp(flag, "network-model") == 0)
        return bad(c, "unknown key \"%s\" (%s; see sim/cluster/README.md)", key,
                   top ? "the top level takes the cluster flags of bellows run, placement, "
                         "network_model and jobs"
                       : "a job takes name, start_s, hosts, placement and the flags of bellows "
                         "run that are not the cluster's");
    int is_cluster = cluster_flag(flag);
    if (!top && is_cluster && strcmp(flag, "workers") != 0 && strcmp(flag, "hosts") != 0)
        return bad(c, "key \"%s\" belongs to the cluster: give it at the top level", key);
    if (top && !is_cluster) return bad(c, "key \"%s\" belongs to a job: give it in each job", key);
    return BW_OK;
}

/* One key as a flag, appended to (*flags)[*n]. */
static int add_flag(const Ctx *c, const char *key, const json_t *v, int top, ClFlag **flags, int *n)
{
    char flag[64];
    int rc = key_flag(c, key, top, flag, sizeof flag);
    if (rc) return rc;
    ClFlag f = {bw_xstrdup(flag, "cl_file.c: a copy"), NULL};
    int skip;
    if ((rc = flag_value(c, key, run_opt(c, flag), v, &f, &skip)) || skip) {
        free(f.flag);
        return rc;
    }
    *flags = bw_xrealloc(*flags, sizeof **flags * (size_t)(*n + 1), "cl_file.c: flags");
    (*flags)[(*n)++] = f;
    return BW_OK;
}

/* "placement": packed or spread, into out[16]. */
static int get_placement(const Ctx *c, const json_t *v, char *out)
{
    const char *s = json_string_value(v);
    if (!s || (strcmp(s, "packed") != 0 && strcmp(s, "spread") != 0))
        return bad(c, "key \"placement\": expected \"packed\" or \"spread\"");
    snprintf(out, 16, "%s", s);
    return BW_OK;
}

/* A job's "hosts": GPU indices (numbers, or one number) or host names (strings), or one
 * comma-separated string of names. */
static int get_hosts(const Ctx *c, const json_t *v, ClJobSpec *j)
{
    char *text = NULL;
    int rc = list_text(c, "hosts", v, &text);
    if (rc) return rc;
    j->hosts_indices = json_is_integer(v) || (json_is_array(v) && json_array_size(v) &&
                                              json_is_integer(json_array_get(v, 0)));
    for (char *tok = strtok(text, ","); tok; tok = strtok(NULL, ",")) {
        j->hosts = bw_xrealloc(j->hosts, sizeof *j->hosts * (size_t)(j->n_hosts + 1),
                               "cl_file.c: j->hosts");
        j->hosts[j->n_hosts++] = bw_xstrdup(tok, "cl_file.c: j->hosts[j->n_hosts++]");
    }
    free(text);
    for (size_t i = 0; json_is_real(v) || (json_is_array(v) && i < json_array_size(v)); i++) {
        const json_t *h = json_is_array(v) ? json_array_get(v, i) : v;
        const double x = json_real_value(h);
        char num[48];
        snprintf(num, sizeof num, x == floor(x) && fabs(x) < 1e15 ? "%.1f" : "%.17g", x);
        if (json_is_real(h)) /* 0.0 would read as the host name "0" */
            return bad(c,
                       "key \"hosts\": item %zu: expected an integer GPU index (0, 1, ...) or a "
                       "host name (\"gpu0\", or a platform file's), got %s",
                       i, num);
        if (!json_is_array(v)) break;
    }
    for (size_t i = 0; json_is_array(v) && i < json_array_size(v); i++)
        if (json_is_integer(json_array_get(v, i)) != j->hosts_indices)
            return bad(c, "key \"hosts\": expected all GPU indices or all host names");
    return j->n_hosts ? BW_OK : bad(c, "key \"hosts\": expected at least one host");
}

/* A job's "name": a folder's name, DIR/jobs/NAME. */
static int get_name(const Ctx *c, const json_t *job, char *name)
{
    const char *s = json_string_value(json_object_get(job, "name"));
    size_t n = s ? strlen(s) : 0;
    int ok = n > 0 && n < CL_NAME_MAX && strcmp(s, ".") != 0 && strcmp(s, "..") != 0;
    for (size_t i = 0; ok && i < n; i++) ok = isalnum((unsigned char)s[i]) || strchr("._-", s[i]);
    if (!ok)
        return bad(c,
                   "key \"name\": expected a string of 1 to %d letters, digits, '.', '_' "
                   "or '-' (it names the job's folder)",
                   CL_NAME_MAX - 1);
    snprintf(name, CL_NAME_MAX, "%s", s);
    return BW_OK;
}

static int job_key(Ctx *c, const char *key, const json_t *v, ClJobSpec *j)
{
    if (strcmp(key, "name") == 0) return BW_OK;
    if (strcmp(key, "placement") == 0) return get_placement(c, v, j->placement);
    if (strcmp(key, "hosts") == 0) return get_hosts(c, v, j);
    if (strcmp(key, "start_s") == 0) {
        j->start_s = json_number_value(v);
        if (!json_is_number(v) || !(j->start_s >= 0 && j->start_s < CLUSTER_MAX_SIM_S))
            return bad(c, "key \"start_s\": expected simulated seconds, a number in [0, %g)",
                       CLUSTER_MAX_SIM_S);
        return BW_OK;
    }
    return add_flag(c, key, v, 0, &j->flags, &j->n_flags);
}

static int read_job(Ctx *c, const char *path, const json_t *job, int index, ClJobSpec *j)
{
    snprintf(c->where, sizeof c->where, "%s: jobs[%d]: ", path, index);
    if (!json_is_object(job)) return bad(c, "expected an object with a \"name\"");
    int rc = get_name(c, job, j->name);
    if (rc) return rc;
    snprintf(c->where, sizeof c->where, "%s: job \"%s\": ", path, j->name);
    const char *key;
    const json_t *v;
    json_object_foreach((json_t *)job, key, v)
    {
        if ((rc = job_key(c, key, v, j))) return rc;
    }
    return BW_OK;
}

static int read_jobs(Ctx *c, const char *path, const json_t *jobs, ClSpec *s)
{
    size_t n = json_array_size(jobs);
    if (!json_is_array(jobs) || n == 0 || n > CL_MAX_JOBS)
        return bad(c, "key \"jobs\": expected a list of 1 to %d jobs", CL_MAX_JOBS);
    s->jobs = bw_xcalloc(n, sizeof *s->jobs, "cl_file.c: s->jobs");
    s->n_jobs = (int)n;
    for (size_t i = 0; i < n; i++) {
        int rc = read_job(c, path, json_array_get(jobs, i), (int)i, &s->jobs[i]);
        if (rc) return rc;
        for (size_t k = 0; k < i; k++)
            if (strcmp(s->jobs[k].name, s->jobs[i].name) == 0)
                return bad(c, "key \"name\": jobs %zu and %zu are both called \"%s\"", k, i,
                           s->jobs[i].name);
    }
    return BW_OK;
}

static int top_key(Ctx *c, const char *key, const json_t *v, ClSpec *s)
{
    if (strcmp(key, "jobs") == 0) return BW_OK;
    if (strcmp(key, "placement") == 0) return get_placement(c, v, s->placement);
    if (strcmp(key, "version") == 0) {
        if (!json_is_integer(v) || json_integer_value(v) != CL_FORMAT_VERSION)
            return bad(c, "key \"version\": this bellows reads version %d", CL_FORMAT_VERSION);
        return BW_OK;
    }
    if (strcmp(key, "network_model") == 0) {
        const char *m = json_string_value(v);
        if (!m || (strcmp(m, "exact") != 0 && strcmp(m, "tcp") != 0))
            return bad(c, "key \"network_model\": expected \"exact\" or \"tcp\"");
        snprintf(s->network_model, sizeof s->network_model, "%s", m);
        return BW_OK;
    }
    return add_flag(c, key, v, 1, &s->flags, &s->n_flags);
}

/* The fingerprint of a point's JSON: FNV-1a, 64 bits (Fowler, Noll and Vo,
 * http://www.isthe.com/chongo/tech/comp/fnv/; the offset basis and prime as record.c's), over
 * its compact text with sorted keys, so that the order of the file's keys does not matter. */
static void input_print(const json_t *root, char *out, size_t n)
{
    char *text = json_dumps(root, JSON_COMPACT | JSON_SORT_KEYS);
    uint64_t h = 14695981039346656037ull;
    for (const char *c = text ? text : ""; *c; c++) h = (h ^ (unsigned char)*c) * 1099511628211ull;
    free(text);
    snprintf(out, n, "fnv1a64:%016llx", (unsigned long long)h);
}

int cl_spec_from_json(const char *path, const json_t *root, ClSpec *s, BwError *err)
{
    memset(s, 0, sizeof *s);
    input_print(root, s->input, sizeof s->input);
    snprintf(s->path, sizeof s->path, "%s", path);
    snprintf(s->placement, sizeof s->placement, "packed");
    snprintf(s->network_model, sizeof s->network_model, "exact");
    Flags run;
    int rc = run_parse_flags("bellows run", RUN_MODE_RUN, 0, NULL, &run, err); /* the table */
    if (rc) return rc;
    Ctx c = {.err = err, .run = &run};
    snprintf(c.where, sizeof c.where, "%s: ", path);
    if (!json_is_object(root)) {
        rc = bad(&c, "expected a JSON object (sim/cluster/README.md)");
    } else {
        const char *key;
        const json_t *v;
        json_object_foreach((json_t *)root, key, v)
        {
            if ((rc = top_key(&c, key, v, s))) break;
        }
        if (!rc && !json_object_get(root, "jobs")) rc = bad(&c, "key \"jobs\": missing");
        if (!rc) rc = read_jobs(&c, path, json_object_get(root, "jobs"), s);
    }
    run_flags_release(&run);
    return rc;
}

static void flags_free(ClFlag *f, int n)
{
    for (int i = 0; i < n; i++) {
        free(f[i].flag);
        free(f[i].value);
    }
    free(f);
}

void cl_spec_free(ClSpec *s)
{
    flags_free(s->flags, s->n_flags);
    for (int j = 0; j < s->n_jobs; j++) {
        flags_free(s->jobs[j].flags, s->jobs[j].n_flags);
        for (int h = 0; h < s->jobs[j].n_hosts; h++) free(s->jobs[j].hosts[h]);
        free(s->jobs[j].hosts);
    }
    free(s->jobs);
    memset(s, 0, sizeof *s);
}

int cl_file_read(const char *path, json_t **root, BwError *err)
{
    *root = NULL;
    int rc = infile_check("cluster file", path, err);
    if (rc) return rc;
    json_error_t jerr;
    *root = json_load_file(path, JSON_REJECT_DUPLICATES, &jerr);
    if (!*root) return bw_fail(err, BW_EUSAGE, "%s: line %d: %s", path, jerr.line, jerr.text);
    return BW_OK;
}

/* --set's VALUE as JSON: a number if it reads as one, true or false, else a string. */
static json_t *set_value(const char *value)
{
    char *end;
    errno = 0;
    double x = strtod(value, &end);
    if (*value && !*end && errno == 0 && isfinite(x)) {
        long long i = strtoll(value, &end, 10);
        if (!*end && errno == ERANGE) return json_string(value); /* its flag says it is too big */
        return !*end ? json_integer(i) : json_real(x);
    }
    if (strcmp(value, "true") == 0) return json_true();
    if (strcmp(value, "false") == 0) return json_false();
    return json_string(value);
}

int cl_file_set(json_t *root, const char *path, const char *key, const char *value, BwError *err)
{
    json_t *obj = root;
    const char *dot = strrchr(key, '.'); /* a job's name may hold dots, a key none */
    if (!json_is_object(root)) return bw_fail(err, BW_EUSAGE, "%s: expected a JSON object", path);
    if (dot) { /* JOB.KEY */
        json_t *jobs = json_object_get(root, "jobs"), *job;
        size_t i;
        obj = NULL;
        json_array_foreach(jobs, i, job)
        {
            const char *name = json_string_value(json_object_get(job, "name"));
            if (name && strlen(name) == (size_t)(dot - key) &&
                !strncmp(name, key, (size_t)(dot - key)))
                obj = job;
        }
        if (!obj)
            return bw_fail(err, BW_EUSAGE, "--set %s: %s has no job \"%.*s\"", key, path,
                           (int)(dot - key), key);
        key = dot + 1;
    }
    if (!*key || strcmp(key, "jobs") == 0 || strcmp(key, "name") == 0)
        return bw_fail(err, BW_EUSAGE,
                       "--set %s: expected KEY=V1,V2 or JOB.KEY=V1,V2 with a key "
                       "other than jobs and name",
                       key);
    json_object_set_new(obj, key, set_value(value));
    return BW_OK;
}
