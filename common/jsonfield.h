/* jsonfield.h: reading the fields of a JSON input file (a workload or cost profile) so that every
 * error says where it is: JsonAt holds the error to fill and the place, "FLAG FILE: " followed
 * by the path to the object being read, which each reader extends and cuts back as it goes. */
#ifndef BELLOWS_JSONFIELD_H
#define BELLOWS_JSONFIELD_H

#include <stddef.h>

#include <jansson.h>

#include "status.h"

typedef struct {
    BwError *err;
    char where[320];
} JsonAt;

/* A usage error: where, then the message. Returns BW_EUSAGE. */
#if defined(__GNUC__)
__attribute__((format(printf, 2, 3)))
#endif
int json_at_fail(const JsonAt *at, const char *fmt, ...);

/* o's string key, of 1 .. n-1 characters, no NUL and no control character, into out[n]. An absent
 * key is an error when required, else leaves out alone. */
int json_at_str(const JsonAt *at, const json_t *o, const char *key, int required, char *out,
                size_t n);

#endif
