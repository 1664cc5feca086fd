/* clirun.h: what test_cli.c and test_cli_runs.c share: a scratch folder per suite (TMP, made by
 * setup and removed by teardown), run("ARGS") runs `bellows ARGS` through the shell with stdout
 * and stderr captured in TMP, captured() reads them back, and the fixtures of a user platform
 * (good.xml and broken ones) that both suites run on. Header-only; every function is static
 * inline so each suite takes what it uses. */
#ifndef BELLOWS_CLIRUN_H
#define BELLOWS_CLIRUN_H

#include "testutil.h"

#include <sys/wait.h>

static char TMP[64];

static inline int setup(void **state)
{
    (void)state;
    make_tmpdir(TMP, sizeof TMP);
    return 0;
}

static inline int teardown(void **state)
{
    (void)state;
    rm_tree(TMP);
    return 0;
}

/* Runs `bellows ARGS` through the shell, with stdout and stderr to files in TMP. Returns the
 * exit status; a death by signal fails the test. */
static inline int run(const char *args)
{
    char cmd[2048];
    snprintf(cmd, sizeof cmd, "%s %s >%s/stdout 2>%s/stderr </dev/null", BELLOWS_BIN, args, TMP,
             TMP);
    int st = system(cmd);
    if (!WIFEXITED(st)) fail_msg("'%s' did not exit normally (status %d)", args, st);
    return WEXITSTATUS(st);
}

static inline char *captured(const char *which)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", TMP, which);
    return slurp(path, NULL);
}

/* TMP/name holding text. */
static inline void write_fixture(const char *name, const char *text)
{
    char path[128];
    snprintf(path, sizeof path, "%s/%s", TMP, name);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs(text, f);
    fclose(f);
}

/* A user platform of three hosts (a, b, c on one shared switch) and a broken one. */
static inline void write_platforms(void)
{
    char path[128];
    snprintf(path, sizeof path, "%s/good.xml", TMP);
    FILE *f = fopen(path, "w");
    assert_non_null(f);
    fputs("<?xml version='1.0'?>\n"
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
          "  </zone>\n</platform>\n",
          f);
    fclose(f);
    snprintf(path, sizeof path, "%s/bad.xml", TMP);
    f = fopen(path, "w");
    assert_non_null(f);
    fputs("<?xml version='1.0'?>\n<platform version=\"4.1\">\n  <zone id=\"z\" "
          "routing=\"Full\">\n    <host id=\"a\" speed=\"fast\"/>\n",
          f);
    fclose(f);
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
