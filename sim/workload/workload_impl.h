/* workload_impl.h: what the files of sim/workload/ share and no other folder needs: the JSON
 * profile parser (workload_json.c), which workload.c calls on a file or a built-in. */
#ifndef BELLOWS_WORKLOAD_IMPL_H
#define BELLOWS_WORKLOAD_IMPL_H

#include <stddef.h>

#include "workload.h"

/* Parses a profile's JSON text, text[0..len) (not NUL-terminated), into a new Workload. A file
 * gives path (text NULL: the file is read); a built-in gives its text. Every error is BW_EUSAGE
 * with a message starting "FLAG LABEL: " and naming the layer, tensor and field; label is the
 * path or the built-in's name. */
int workload_parse(const char *path, const char *text, size_t len, const char *flag,
                   const char *label, Workload **out, BwError *err);

#endif
