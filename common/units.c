/* units.c: parsing and printing of bandwidths, durations and flop rates (see units.h). */
#include "units.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    const char *suffix;
    double factor;
} Unit;

/* Splits "<number><suffix>" and looks the suffix up (exact match, so "gbps" is refused rather
 * than guessed as bits or bytes). Returns 0 and the value in base units, or -1. */
static int parse_with_units(const char *text, const Unit *units, int n_units, double *out)
{
    char *end;
    errno = 0;
    double v = strtod(text, &end);
    if (end == text || errno == ERANGE || !isfinite(v)) return -1;
    for (int i = 0; i < n_units; i++)
        if (strcmp(end, units[i].suffix) == 0) {
            *out = v * units[i].factor;
            return isfinite(*out) ? 0 : -1;
        }
    return -1;
}

static const Unit BANDWIDTH[] = {
    {"bps", 1.0 / 8}, {"Kbps", 1e3 / 8}, {"Mbps", 1e6 / 8}, {"Gbps", 1e9 / 8}, {"Tbps", 1e12 / 8},
    {"Bps", 1.0},     {"KBps", 1e3},     {"MBps", 1e6},     {"GBps", 1e9},     {"TBps", 1e12},
};

static const Unit DURATION[] = {{"ns", 1e-9}, {"us", 1e-6}, {"ms", 1e-3}, {"s", 1.0}};

static const Unit FLOPS[] = {{"", 1},         {"k", 1e3},      {"M", 1e6},       {"G", 1e9},
                             {"T", 1e12},     {"P", 1e15},     {"flops", 1},     {"kflops", 1e3},
                             {"Mflops", 1e6}, {"Gflops", 1e9}, {"Tflops", 1e12}, {"Pflops", 1e15}};

#define COUNT(a) ((int)(sizeof(a) / sizeof *(a)))

int units_parse_bandwidth(const char *flag, const char *text, double *Bps, BwError *err)
{
    double v;
    if (parse_with_units(text, BANDWIDTH, COUNT(BANDWIDTH), &v) != 0)
        return bw_fail(err, BW_EUSAGE,
                       "--%s: expected a bandwidth such as 10Gbps, 100Mbps or 25GBps, got '%s'",
                       flag, text);
    if (!(v > 0))
        return bw_fail(err, BW_EUSAGE, "--%s: bandwidth must be positive, got '%s'", flag, text);
    *Bps = v;
    return BW_OK;
}

int units_parse_duration(const char *flag, const char *text, double *s, BwError *err)
{
    double v;
    if (parse_with_units(text, DURATION, COUNT(DURATION), &v) != 0)
        return bw_fail(err, BW_EUSAGE,
                       "--%s: expected a duration such as 5us, 1.5ms or 0s (units ns, us, ms, s), "
                       "got '%s'",
                       flag, text);
    if (v < 0)
        return bw_fail(err, BW_EUSAGE, "--%s: duration must not be negative, got '%s'", flag, text);
    *s = v;
    return BW_OK;
}

int units_parse_flops(const char *flag, const char *text, double *flops, BwError *err)
{
    double v;
    if (parse_with_units(text, FLOPS, COUNT(FLOPS), &v) != 0 || !(v > 0))
        return bw_fail(err, BW_EUSAGE,
                       "--%s: expected a positive flop rate such as 15.7T or 19.5e12, got '%s'",
                       flag, text);
    *flops = v;
    return BW_OK;
}

void units_format_bandwidth(double Bps, char *buf, size_t len)
{
    /* Bits per second with the largest prefix, as NICs are sold ("10Gbps", "2.4Tbps"), when
     * that reads with at most two decimals; otherwise bytes per second. */
    static const char *bits[] = {"bps", "Kbps", "Mbps", "Gbps", "Tbps"};
    static const char *bytes[] = {"Bps", "KBps", "MBps", "GBps", "TBps"};
    double b = Bps * 8;
    int i = 4;
    while (i > 0 && b < pow(1e3, i)) i--;
    double v = b / pow(1e3, i);
    if (fabs(v * 100 - round(v * 100)) <= 1e-6 * v * 100) {
        snprintf(buf, len, "%g%s", v, bits[i]);
        return;
    }
    i = 4;
    while (i > 0 && Bps < pow(1e3, i)) i--;
    snprintf(buf, len, "%g%s", Bps / pow(1e3, i), bytes[i]);
}

void units_format_duration(double s, char *buf, size_t len)
{
    if (s == 0)
        snprintf(buf, len, "0s");
    else if (s < 1e-6)
        snprintf(buf, len, "%gns", s * 1e9);
    else if (s < 1e-3)
        snprintf(buf, len, "%gus", s * 1e6);
    else if (s < 1)
        snprintf(buf, len, "%gms", s * 1e3);
    else
        snprintf(buf, len, "%gs", s);
}
