/* units.h: quantities with units on the command line. Bandwidth: a number followed by bps,
 * Kbps, Mbps, Gbps, Tbps (bits per second) or Bps, KBps, MBps, GBps, TBps (bytes per second);
 * prefixes are decimal (SI), as network vendors use them. Durations: ns, us, ms or s. Rates
 * of computation: flops with an optional k, M, G, T or P prefix ("15.7T" or "15.7Tflops").
 * Errors name the flag and show an example. */
#ifndef BELLOWS_UNITS_H
#define BELLOWS_UNITS_H

#include <stddef.h>

#include "status.h"

/* Bandwidth in bytes per second; must be > 0. */
int units_parse_bandwidth(const char *flag, const char *text, double *Bps, BwError *err);
/* Duration in seconds; must be >= 0. */
int units_parse_duration(const char *flag, const char *text, double *s, BwError *err);
/* Flops per second; must be > 0. */
int units_parse_flops(const char *flag, const char *text, double *flops, BwError *err);

/* "10Gbps", "900GBps", "1.5us": the shortest exact-looking form, for tables and file names. */
void units_format_bandwidth(double Bps, char *buf, size_t len);
void units_format_duration(double s, char *buf, size_t len);

#endif
