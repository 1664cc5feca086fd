/* clirun.h: what test_cli.c and test_cli_runs.c share: clitest.h's scratch folder and runner
 * under the names the suites use (setup, teardown, run, captured, write_fixture), and the
 * fixtures of a user platform (good.xml and broken ones) that both suites run on. Header-only;
 * every function is static inline so each suite takes what it uses. */
#ifndef BELLOWS_CLIRUN_H
#define BELLOWS_CLIRUN_H

#include "testutil.h"

#include "clitest.h"

/* The names the two suites were written with, on clitest.h's scratch folder and runner. */
static inline int setup(void **state)
{
    return clitest_setup(state);
}

static inline int teardown(void **state)
{
    return clitest_teardown(state);
}

/* Runs `bellows ARGS` (no "@" left in it); returns the exit status. */
static inline int run(const char *args)
{
    return bw("%s", args);
}

static inline char *captured(const char *which)
{
    return tmp_file(which);
}

static inline void write_fixture(const char *name, const char *text)
{
    write_tmp(name, text);
}

/* A user platform of three hosts (a, b, c on one shared switch) and a broken one. */
static inline void write_platforms(void)
{
    write_fixture("good.xml", "<?xml version='1.0'?>\n"
                              "<!DOCTYPE platform SYSTEM \"https://simgrid.org/simgrid.dtd\">\n"
                              "<platform version=\"4.1\">\n"
                              "  <zone id=\"z\" routing=\"Full\">\n"
                              "    <host id=\"c\" speed=\"1Tf\"/><host id=\"a\" speed=\"1Tf\"/>"
                              "<host id=\"b\" speed=\"1Tf\"/>\n"
                              "    <link id=\"l\" bandwidth=\"1GBps\" latency=\"10us\" "
                              "sharing_policy=\"FATPIPE\"/>\n"
                              "    <route src=\"a\" dst=\"b\"><link_ctn id=\"l\"/></route>\n"
                              "    <route src=\"b\" dst=\"c\"><link_ctn id=\"l\"/></route>\n"
                              "    <route src=\"a\" dst=\"c\"><link_ctn id=\"l\"/></route>\n"
                              "  </zone>\n</platform>\n");
    write_fixture("bad.xml", "<?xml version='1.0'?>\n<platform version=\"4.1\">\n  <zone id=\"z\" "
                             "routing=\"Full\">\n    <host id=\"a\" speed=\"fast\"/>\n");
    /* workload profiles: a negative compute, a GPU bellows does not know, one matrix for the
     * mlp's two */
    write_fixture("neg.json",
                  "{\"name\": \"neg\", \"source\": \"test\", \"compute\": \"flops\", \"layers\": "
                  "[{\"name\": \"fc\", \"fwd_flops\": -1, \"bwd_flops\": 2, \"tensors\": "
                  "[{\"name\": \"fc.weight\", \"shape\": [10, 20]}]}]}\n");
    write_fixture(
        "tpu.json",
        "{\"name\": \"m\", \"source\": \"test\", \"compute\": {\"measured\": {\"batch\": 32, "
        "\"gpu\": \"TPU\", \"precision\": \"fp32\"}}, \"layers\": [{\"name\": \"fc1\", "
        "\"fwd_s\": 0.001, \"bwd_s\": 0.002, \"tensors\": [{\"name\": \"w1\", \"shape\": [100, "
        "784]}]}, {\"name\": \"fc2\", \"fwd_s\": 0.001, \"bwd_s\": 0.002, \"tensors\": "
        "[{\"name\": \"w2\", \"shape\": [10, 100]}]}]}\n");
    write_fixture("one.json",
                  "{\"name\": \"one\", \"source\": \"test\", \"compute\": \"flops\", \"layers\": "
                  "[{\"name\": \"fc\", \"fwd_flops\": 1, \"bwd_flops\": 2, \"tensors\": "
                  "[{\"name\": \"fc.weight\", \"shape\": [10, 20]}, {\"name\": \"fc.bias\", "
                  "\"shape\": [10]}]}]}\n");
}

#endif
