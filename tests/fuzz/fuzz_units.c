/* fuzz_units.c: libFuzzer harness for the command-line number and unit parsers (sim/cli.c,
 * sim/units.c). The input is a list of arguments separated by newlines, parsed by cli_parse
 * against a table holding one flag of every kind (integer, long, float, choice, string, flag,
 * integer and float lists, bandwidth, duration, flop rate), so "--bw=10Gbps" or "--ints 1,,2"
 * reach every parser the commands use. Besides no crash and no undefined behaviour, two
 * properties: a value that parses is in its flag's range, and a bandwidth or duration printed
 * by units_format_* parses back to the same value (to the 6 digits %g keeps). */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "units.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

#define MAX_ARGS 16

static int close_to(double a, double b)
{
    return fabs(a - b) <= 1e-5 * fmax(fabs(a), fabs(b));
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (size > 1024) return 0;
    char text[1025];
    memcpy(text, data, size);
    text[size] = '\0';
    char *argv[MAX_ARGS];
    int argc = 0;
    for (char *p = text; argc < MAX_ARGS;) {
        argv[argc++] = p;
        char *nl = strchr(p, '\n');
        if (!nl) break;
        *nl = '\0';
        p = nl + 1;
    }

    int i = 0, flag = 0;
    long seed = 0;
    double x = 0, bw = 0, dur = 0, flops = 0;
    const char *s = NULL, *choice = NULL;
    CliIntList ints;
    CliDoubleList dbls;
    const CliOpt opts[] = {
        {"int", CLI_INT, &i, "4", NULL, "", 1, 1024, NULL, 0, 0},
        {"long", CLI_LONG, &seed, "1", NULL, "", 0, 4294967295.0, NULL, 0, 0},
        {"x", CLI_DOUBLE, &x, "0.5", NULL, "", -1e6, 1e6, NULL, 0, 0},
        {"s", CLI_STRING, &s, NULL, NULL, "", 0, 0, NULL, 0, 0},
        {"choice", CLI_CHOICE, &choice, "ring", NULL, "", 0, 0, "ring|tree|analytic", 0, 0},
        {"flag", CLI_FLAG, &flag, NULL, NULL, "", 0, 0, NULL, 0, 0},
        {"ints", CLI_INT_LIST, &ints, "1,2", NULL, "", 1, 100, NULL, 4, 0},
        {"dbls", CLI_DOUBLE_LIST, &dbls, NULL, NULL, "", 0, 1, NULL, 0, 0},
        {"bw", CLI_BANDWIDTH, &bw, "10Gbps", NULL, "", 0, 0, NULL, 0, 0},
        {"dur", CLI_DURATION, &dur, "5us", NULL, "", 0, 0, NULL, 0, 0},
        {"flops", CLI_FLOPS, &flops, "15.7T", NULL, "", 0, 0, NULL, 0, 0},
    };
    int set[sizeof opts / sizeof *opts];
    BwError err;
    int rc =
        cli_parse("fuzz", opts, (int)(sizeof opts / sizeof *opts), NULL, argc, argv, set, &err);
    if (rc == BW_OK) {
        if (i < 1 || i > 1024 || seed < 0 || seed > 4294967295L || !(x >= -1e6 && x <= 1e6))
            abort();
        if (ints.n < 1 || ints.n > 4 || dbls.n < 0 || dbls.n > CLI_LIST_MAX) abort();
        for (int k = 0; k < ints.n; k++)
            if (ints.v[k] < 1 || ints.v[k] > 100) abort();
        for (int k = 0; k < dbls.n; k++)
            if (!(dbls.v[k] >= 0 && dbls.v[k] <= 1)) abort();
        if (!(bw > 0) || !isfinite(bw) || !(dur >= 0) || !isfinite(dur) || !(flops > 0)) abort();
        /* printed forms parse back (normal numbers only: %g keeps 6 digits, subnormals fewer) */
        char buf[64];
        double back;
        units_format_bandwidth(bw, buf, sizeof buf);
        if (bw >= 1e-290 && bw <= 1e290 &&
            (units_parse_bandwidth("bw", buf, &back, &err) != BW_OK || !close_to(bw, back)))
            abort();
        units_format_duration(dur, buf, sizeof buf);
        if ((dur == 0 || (dur >= 1e-290 && dur <= 1e290)) &&
            (units_parse_duration("dur", buf, &back, &err) != BW_OK || !close_to(dur, back)))
            abort();
    } else if (rc != CLI_HELP) {
        /* a refusal is one line that names something */
        if (rc != BW_EUSAGE || !err.msg[0] || strchr(err.msg, '\n')) abort();
    }
    return 0;
}
