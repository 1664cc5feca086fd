/* fuzz_cluster.c: libFuzzer harness for the cluster-file reader of bellows cluster (sim/cluster/
 * cl_file.c): the file's JSON text, loaded as cl_file_read loads it (duplicate keys refused),
 * then read into a ClSpec as cmd_cluster reads it, every key checked against `bellows run`'s
 * flags. Besides no crash, leak or undefined behaviour, the properties a file the reader
 * accepts must have: 1 to CL_MAX_JOBS jobs, each named [A-Za-z0-9._-] (a folder's name) and
 * named once; every flag a name without control characters, its value too; a start in
 * [0, CLUSTER_MAX_SIM_S); hosts, when given, each a non-empty name; the placement packed or
 * spread. A refusal is one line (no newline) naming the file, a usage error or out of memory.
 * The plan's checks that load the data (cl_plan_build) are left to the tests. Built (linked
 * with the project's libraries of build/) and run by tests/fuzz/run.sh. */
#include <math.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "cl_impl.h"
#include "cluster.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static void check_text(const char *s, int may_be_empty)
{
    if (!s || (!may_be_empty && !*s)) abort();
    for (; *s; s++)
        if ((unsigned char)*s < 0x20 || *s == 0x7f) abort();
}

static void check_flags(const ClFlag *f, int n)
{
    for (int i = 0; i < n; i++) {
        check_text(f[i].flag, 0);
        if (f[i].value) check_text(f[i].value, 1);
    }
}

static void check_spec(const ClSpec *s)
{
    if (s->n_jobs < 1 || s->n_jobs > CL_MAX_JOBS) abort();
    if (strcmp(s->placement, "packed") != 0 && strcmp(s->placement, "spread") != 0) abort();
    check_flags(s->flags, s->n_flags);
    for (int j = 0; j < s->n_jobs; j++) {
        const ClJobSpec *job = &s->jobs[j];
        size_t n = strlen(job->name);
        if (n < 1 || n >= CL_NAME_MAX ||
            strspn(job->name, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghij"
                              "klmnopqrstuvwxyz0123456789._-") != n)
            abort();
        for (int k = 0; k < j; k++)
            if (strcmp(s->jobs[k].name, job->name) == 0) abort();
        if (!(job->start_s >= 0 && job->start_s < CLUSTER_MAX_SIM_S)) abort();
        check_flags(job->flags, job->n_flags);
        for (int h = 0; h < job->n_hosts; h++) check_text(job->hosts[h], 0);
        if (job->placement[0] && strcmp(job->placement, "packed") != 0 &&
            strcmp(job->placement, "spread") != 0)
            abort();
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    json_error_t jerr;
    json_t *root = json_loadb((const char *)data, size, JSON_REJECT_DUPLICATES, &jerr);
    if (!root) return 0; /* cl_file_read's own refusal: jansson's message */
    ClSpec spec;
    BwError err = {{0}};
    int rc = cl_spec_from_json("fuzz.json", root, &spec, &err);
    json_decref(root);
    if (rc) {
        if (rc != BW_EUSAGE && rc != BW_ERUNTIME) abort();
        if (strchr(err.msg, '\n') || strncmp(err.msg, "fuzz.json", 9) != 0) abort();
    } else {
        check_spec(&spec);
    }
    cl_spec_free(&spec);
    return 0;
}
