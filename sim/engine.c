/* engine.c: SimGrid initialisation and platform loading (see engine.h). SimGrid 3.32's C API
 * cannot build a platform in memory, hence the temporary XML file. */
#include "engine.h"

#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <simgrid/engine.h>
#include <simgrid/host.h>

static int initialised;

int engine_init(int argc, char **argv, const char *network_model, BwError *err)
{
    if (initialised) return BW_OK;
    int exact = strcmp(network_model, "exact") == 0;
    if (!exact && strcmp(network_model, "tcp") != 0)
        return bw_fail(err, BW_EUSAGE, "--network-model: expected exact or tcp, got '%s'",
                       network_model);
    enum { MAX_ARGS = 64 };
    static char *args[MAX_ARGS + 8];
    int n = 0;
    args[n++] = "bellows";
    args[n++] = "--log=root.thres:critical";
    if (exact) {
        args[n++] = "--cfg=network/model:CM02";
        args[n++] = "--cfg=network/crosstraffic:0";
        args[n++] = "--cfg=network/TCP-gamma:0";
    }
    for (int i = 0; i < argc; i++) {
        if (strncmp(argv[i], "--cfg=", 6) != 0 && strncmp(argv[i], "--log=", 6) != 0)
            return bw_fail(err, BW_EUSAGE, "'%s': only --cfg= and --log= go to SimGrid", argv[i]);
        if (n >= MAX_ARGS) return bw_fail(err, BW_EUSAGE, "too many --cfg/--log options");
        args[n++] = argv[i];
    }
    args[n] = NULL;
    simgrid_init(&n, args);
    initialised = 1;
    return BW_OK;
}

int engine_load_cluster(const Cluster *c, BwError *err)
{
    char path[4096];
    int rc = cluster_write_xml_file(c, path, sizeof path, err);
    if (rc) return rc;
    simgrid_load_platform(path);
    unlink(path);
    if (sg_host_count() != (size_t)c->workers)
        return bw_fail(err, BW_ERUNTIME, "platform has %zu hosts, expected %d", sg_host_count(),
                       c->workers);
    return BW_OK;
}

sg_host_t engine_host(int rank)
{
    char name[32];
    snprintf(name, sizeof name, "gpu%d", rank);
    return sg_host_by_name(name);
}
